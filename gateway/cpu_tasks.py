"""The CPU-heavy work of a request, run inside render worker processes (see cpu_pool).

Module-level functions only: the pool pickles them by reference. Nothing here touches
Flask, the network or storage.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from functools import cache

import numpy as np
from PIL import Image

from animation.character import Character
from animation.figure_mask import FigureJoints
from animation.mask_warnings import mask_warnings
from animation.motions import load_motion, load_motion_table
from animation.paper import ink_map
from animation.render import RenderOptions, build_rig, render_motion
from animation.segment import figure_mask
from animation.skeleton import Skeleton
from gateway.errors import BadRequest, NoCharacterDetected
from gateway.geometry import Box, Scale
from gateway.preprocess import ModelImage, decode_for_models

MIN_FIGURE_FRACTION = 0.01  # of the crop; less is a speck, not a figure


@dataclass(frozen=True)
class RenderResult:
    gifs: dict[str, bytes]
    rig_s: float  # mesh + ARAP set-up
    render_s: float  # all motions of this task


@dataclass(frozen=True)
class FigureMask:
    """The figure's mask over the crop, its warnings, and (for /annotate) the same mask in
    the upload's pixels as a PNG with its box."""

    mask: np.ndarray  # (h, w) bool, the crop's size
    warnings: tuple[str, ...]  # animation.mask_warnings codes, most serious first
    upload_box: Box | None = None
    upload_png: bytes | None = None


@cache
def _motion(name: str):
    return load_motion(name)


def warm_up() -> None:
    """Load every motion of the table once, so the first request does not pay for parsing."""
    for name in load_motion_table():
        _motion(name)


def decode(data: bytes, max_pixels: int, max_side: int) -> ModelImage:
    return decode_for_models(data, max_pixels, max_side)


def _given_mask(png: bytes, box: Box, crop_box: Box, scale: Scale) -> np.ndarray:
    """(h, w) bool over the crop: the client's mask (upload px) laid on the model pixels,
    nothing changed but the sampling; what lies outside its box is not the figure."""
    try:
        with Image.open(io.BytesIO(png)) as image:
            pixels = np.asarray(image.convert("L")) > 0
    except (OSError, ValueError, SyntaxError) as exc:
        raise BadRequest(f"mask 'png' cannot be decoded: {exc}") from None
    (left, top, _, _), sampled = scale.mask_to_model(pixels, box)
    out = np.zeros((crop_box[3] - crop_box[1], crop_box[2] - crop_box[0]), bool)
    # The crop holds the mask's box (and more where a joint lies outside it).
    x0, y0 = left - crop_box[0], top - crop_box[1]
    out[y0 : y0 + sampled.shape[0], x0 : x0 + sampled.shape[1]] = sampled
    return out


def find_mask(
    crop: np.ndarray,
    keypoints: np.ndarray,
    given: tuple[bytes, Box] | None,
    crop_box: Box,
    scale: Scale,
    annotate: bool,
) -> FigureMask:
    """The figure's mask in the (h, w, 3) crop with its 17 (x, y) `keypoints` (crop px):
    the `given` (PNG, upload box) as it is, else segmented. With `annotate`, also the
    warnings of a given mask and the mask in upload pixels as a PNG."""
    figure = FigureJoints.of(Skeleton.from_coco(keypoints))
    if given is None:
        found = figure_mask(crop, figure)
        mask, warnings = found.mask, found.warnings
    else:
        mask = _given_mask(*given, crop_box, scale)
        warnings = mask_warnings(mask, ink_map(crop).ink, figure) if annotate else ()
    if not annotate:
        return FigureMask(mask, warnings)
    upload_box, upload_mask = scale.mask_to_upload(mask, crop_box)
    png = io.BytesIO()
    Image.fromarray(upload_mask.astype(np.uint8) * 255).save(png, format="PNG", optimize=True)
    return FigureMask(mask, warnings, upload_box, png.getvalue())


def build_character(crop: np.ndarray, keypoints: np.ndarray, mask: np.ndarray) -> Character:
    """The character in memory: texture = the crop, the figure's mask, rig from keypoints."""
    if mask.sum() < MIN_FIGURE_FRACTION * mask.size:
        raise NoCharacterDetected("no drawn figure could be separated from the paper")
    texture = np.dstack([crop, np.full(crop.shape[:2], 255, np.uint8)])
    return Character(texture=texture, mask=mask, skeleton=Skeleton.from_coco(keypoints))


def animate(
    crop: np.ndarray,
    keypoints: np.ndarray,
    mask: np.ndarray,
    motions: list[str],
    size: int,
    fps: int,
) -> RenderResult:
    """Rig the drawing once and render each motion to GIF bytes."""
    start = time.perf_counter()
    character = build_character(crop, keypoints, mask)
    try:
        rig = build_rig(character)
    except ValueError as exc:
        raise NoCharacterDetected(f"the drawing could not be rigged: {exc}") from exc
    rigged = time.perf_counter()
    options = RenderOptions(size=size, fps=fps)
    gifs = {name: render_motion(rig, _motion(name), options) for name in motions}
    return RenderResult(gifs, rigged - start, time.perf_counter() - rigged)
