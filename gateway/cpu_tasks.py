"""The CPU-heavy work of a request, run inside render worker processes (see cpu_pool).

Module-level functions only: the pool pickles them by reference. Nothing here touches
Flask, the network or storage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

import numpy as np

from animation.character import Character
from animation.motions import load_motion, load_motion_table
from animation.render import RenderOptions, build_rig, render_motion
from animation.segment import figure_mask
from animation.skeleton import Skeleton
from gateway.errors import NoCharacterDetected
from gateway.preprocess import ModelImage, decode_for_models

MIN_FIGURE_FRACTION = 0.01  # of the crop; less is a speck, not a figure


@dataclass(frozen=True)
class RenderResult:
    gifs: dict[str, bytes]
    rig_s: float  # segmentation + mesh + ARAP set-up
    render_s: float  # all motions of this task


@cache
def _motion(name: str):
    return load_motion(name)


def warm_up() -> None:
    """Load every motion of the table once, so the first request does not pay for parsing."""
    for name in load_motion_table():
        _motion(name)


def decode(data: bytes, max_pixels: int, max_side: int) -> ModelImage:
    return decode_for_models(data, max_pixels, max_side)


def build_character(crop: np.ndarray, keypoints: np.ndarray) -> Character:
    """The character in memory: texture = the crop, mask from segmentation, rig from keypoints."""
    skeleton = Skeleton.from_coco(keypoints)
    # figure_mask(...).warnings name what looks implausible; they reach the response later.
    mask = figure_mask(crop, skeleton).mask
    if mask.sum() < MIN_FIGURE_FRACTION * mask.size:
        raise NoCharacterDetected("no drawn figure could be separated from the paper")
    texture = np.dstack([crop, np.full(crop.shape[:2], 255, np.uint8)])
    return Character(texture=texture, mask=mask, skeleton=skeleton)


def animate(
    crop: np.ndarray, keypoints: np.ndarray, motions: list[str], size: int, fps: int
) -> RenderResult:
    """Rig the drawing once and render each motion to GIF bytes."""
    start = time.perf_counter()
    character = build_character(crop, keypoints)
    try:
        rig = build_rig(character)
    except ValueError as exc:
        raise NoCharacterDetected(f"the drawing could not be rigged: {exc}") from exc
    rigged = time.perf_counter()
    options = RenderOptions(size=size, fps=fps)
    gifs = {name: render_motion(rig, _motion(name), options) for name in motions}
    return RenderResult(gifs, rigged - start, time.perf_counter() - rigged)
