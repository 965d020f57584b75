"""The CPU-heavy work of a request, run inside render worker processes (see cpu_pool).

Module-level functions only: the pool pickles them by reference. Nothing here touches
Flask, the network or storage.
"""

from __future__ import annotations

import base64
import binascii
import io
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image

from animation.bvh import UPLOAD_LIMITS, BVHError, BVHLimitError, parse_bvh_bytes
from animation.character import Character, for_output
from animation.crop import whole_drawing, without_paper
from animation.figure_mask import FigureJoints
from animation.mask_warnings import mask_warnings
from animation.motions import Motion, MotionError, MotionSpec, load_motion, motion_from_bvh
from animation.paper import ink_map
from animation.render import RenderOptions, build_rig, render_motion
from animation.segment import figure_mask
from animation.skeleton import Skeleton
from gateway.catalogue import motion_table
from gateway.errors import BadRequest, InvalidMotion, MotionTooLarge, NoCharacterDetected
from gateway.geometry import Box, Scale
from gateway.parsing import MotionUpload
from gateway.preprocess import ModelImage, decode_for_models

MIN_FIGURE_FRACTION = 0.01  # of the crop; less is a speck, not a figure
MAX_MESSAGE_CHARS = 2000  # of an error about an uploaded motion


@dataclass(frozen=True)
class RenderResult:
    files: dict[str, bytes]  # motion -> the file's bytes, in the requested format
    rig_s: float  # mesh + ARAP set-up
    render_s: float  # all motions of this task


MASK_SOURCES = ("given", "learned", "opencv")  # who made a mask: the client, the segmenter, OpenCV


@dataclass(frozen=True)
class FigureMask:
    """The figure's mask over the crop, its warnings, who made it, and (for /annotate) the
    same mask in the upload's pixels as a PNG with its box."""

    mask: np.ndarray  # (h, w) bool, the crop's size
    warnings: tuple[str, ...]  # animation.mask_warnings codes, most serious first
    upload_box: Box | None = None
    upload_png: bytes | None = None
    source: str = "opencv"  # one of MASK_SOURCES: who made the mask used
    # Why the segmenter's answer was not used though it came ("bad_mask"), else None.
    unusable: str | None = None
    consulted: bool = False  # a segmenter's mask took part in the choice (whichever won)


@cache
def _table(motions_dir: Path | None) -> dict[str, MotionSpec]:
    return motion_table(motions_dir)


@cache
def _motion(name: str, motions_dir: Path | None) -> Motion:
    return load_motion(name, table=_table(motions_dir))


def warm_up(motions_dir: Path | None = None) -> None:
    """Load every motion of the table (with MOTIONS_DIR's) once, with its joints' positions
    in every frame, so no request pays for parsing or forward kinematics: each render
    worker's set-up (see services.Services.build)."""
    for name in _table(motions_dir):
        _motion(name, motions_dir).bvh.positions  # noqa: B018  its forward kinematics, kept


def read_motion(upload: MotionUpload) -> Motion:
    """An uploaded BVH, parsed within the upload limits and configured from itself (plus
    the request's `map`, `up`, `start`, `end`). 413 MotionTooLarge past a limit (bytes,
    joints, frames); 400 InvalidMotion for a malformed file (naming the line) or a motion
    whose joints cannot be found (naming what is missing)."""
    try:
        bvh = parse_bvh_bytes(upload.data, upload.source, UPLOAD_LIMITS)
        return motion_from_bvh(
            bvh,
            upload.name,
            joint_map=dict(upload.joint_map),
            up=upload.up,
            start_s=upload.start_s,
            end_s=upload.end_s,
        )
    except BVHLimitError as exc:
        raise MotionTooLarge(f"{exc} (limit on {exc.limit})") from None
    except (BVHError, MotionError) as exc:
        # The message may list the file's joint names: the client's own, of any length.
        message = str(exc)
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + "..."
        raise InvalidMotion(message) from None


def decode(data: bytes, max_pixels: int, max_side: int) -> ModelImage:
    return decode_for_models(data, max_pixels, max_side)


def whole_drawing_box(rgb: np.ndarray, crop_box: Box, mask: np.ndarray) -> Box | None:
    """`animation.crop.whole_drawing` over the model image: the box of the whole drawing the
    crop's figure `mask` runs into past the crop's edge, or None."""
    return whole_drawing(rgb, crop_box, mask)


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


def learned_mask(answer: str, shape: tuple[int, int]) -> np.ndarray | None:
    """The segmenter's mask (base64 text of a 0/255 PNG) as an (h, w) bool array of the
    crop's `shape`; None when it is not that (undecodable, another size)."""
    try:
        png = base64.b64decode(answer, validate=True)
        with Image.open(io.BytesIO(png)) as image:
            if image.size != shape[::-1]:  # checked before any pixel is decoded
                return None
            return np.asarray(image.convert("L")) > 127
    except (binascii.Error, OSError, ValueError, SyntaxError):
        return None


def _learned_on_crop(answer: str, shape: tuple[int, int], pads: Box) -> np.ndarray | None:
    """`learned_mask` of the crop the segmenter saw (`shape` (h, w) with `pads` round it),
    cut back to the crop."""
    left, top, right, bottom = pads
    height, width = shape
    seen = learned_mask(answer, (height + top + bottom, width + left + right))
    return None if seen is None else without_paper(seen, pads)


def find_mask(
    crop: np.ndarray,
    keypoints: np.ndarray,
    given: tuple[bytes, Box] | None,
    crop_box: Box,
    scale: Scale,
    annotate: bool,
    learned: str | None = None,
    pads: Box = (0, 0, 0, 0),
) -> FigureMask:
    """The figure's mask in the (h, w, 3) crop with its 17 (x, y) `keypoints` (crop px):
    the `given` (PNG, upload box) as it is; else OpenCV's or, with the segmenter's answer
    `learned` (base64 PNG of the crop with `pads` (left, top, right, bottom px) of paper
    round it; "" when it saw no figure), the better of the two as `figure_mask` chooses.
    With `annotate`, also the warnings of a given mask and the mask in upload pixels as a
    PNG."""
    figure = FigureJoints.of(Skeleton.from_coco(keypoints))
    unusable, consulted = None, False
    if given is None:
        raw = _learned_on_crop(learned, crop.shape[:2], pads) if learned else None
        if learned and raw is None:
            unusable = "bad_mask"
        found = figure_mask(crop, figure, learned=raw)
        mask, warnings, source = found.mask, found.warnings, found.source
        consulted = learned is not None and unusable is None  # "": it saw no figure
    else:
        mask = _given_mask(*given, crop_box, scale)
        warnings = mask_warnings(mask, ink_map(crop).ink, figure) if annotate else ()
        source = "given"
    if not annotate:
        return FigureMask(mask, warnings, source=source, unusable=unusable, consulted=consulted)
    upload_box, upload_mask = scale.mask_to_upload(mask, crop_box)
    png = io.BytesIO()
    Image.fromarray(upload_mask.astype(np.uint8) * 255).save(png, format="PNG", optimize=True)
    return FigureMask(mask, warnings, upload_box, png.getvalue(), source, unusable, consulted)


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
    motions: list[str | Motion],
    options: RenderOptions,
    motions_dir: Path | None = None,
) -> RenderResult:
    """Rig the drawing once, at the resolution the output can show, and render each motion
    (a table name, or a Motion read from an upload) to the bytes of a file in
    `options.format`."""
    start = time.perf_counter()
    character = build_character(crop, keypoints, mask)
    try:
        rig = build_rig(for_output(character, options.size))
    except ValueError as exc:
        raise NoCharacterDetected(f"the drawing could not be rigged: {exc}") from exc
    rigged = time.perf_counter()
    loaded = [m if isinstance(m, Motion) else _motion(m, motions_dir) for m in motions]
    files = {motion.name: render_motion(rig, motion, options) for motion in loaded}
    return RenderResult(files, rigged - start, time.perf_counter() - rigged)
