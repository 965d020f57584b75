"""The CPU-heavy work of a request, run inside render worker processes (see cpu_pool).

Module-level functions only: the pool pickles them by reference. Nothing here touches
Flask, the network or storage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from animation.bvh import UPLOAD_LIMITS, BVHError, BVHLimitError, parse_bvh_bytes
from animation.character import Character
from animation.motions import Motion, MotionError, MotionSpec, load_motion, motion_from_bvh
from animation.render import RenderOptions, build_rig, render_motion
from animation.segment import figure_mask
from animation.skeleton import Skeleton
from gateway.catalogue import motion_table
from gateway.errors import InvalidMotion, MotionTooLarge, NoCharacterDetected
from gateway.parsing import MotionUpload
from gateway.preprocess import ModelImage, decode_for_models

MIN_FIGURE_FRACTION = 0.01  # of the crop; less is a speck, not a figure
MAX_MESSAGE_CHARS = 2000  # of an error about an uploaded motion


@dataclass(frozen=True)
class RenderResult:
    files: dict[str, bytes]  # motion -> the file's bytes, in the requested format
    rig_s: float  # segmentation + mesh + ARAP set-up
    render_s: float  # all motions of this task


@cache
def _table(motions_dir: Path | None) -> dict[str, MotionSpec]:
    return motion_table(motions_dir)


@cache
def _motion(name: str, motions_dir: Path | None) -> Motion:
    return load_motion(name, table=_table(motions_dir))


def warm_up(motions_dir: Path | None = None) -> None:
    """Load every motion of the table (with MOTIONS_DIR's) once, so the first request does
    not pay for parsing: each render worker's set-up (see services.Services.build)."""
    for name in _table(motions_dir):
        _motion(name, motions_dir)


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
    crop: np.ndarray,
    keypoints: np.ndarray,
    motions: list[str | Motion],
    options: RenderOptions,
    motions_dir: Path | None = None,
) -> RenderResult:
    """Rig the drawing once and render each motion (a table name, or a Motion read from an
    upload) to the bytes of a file in `options.format`."""
    start = time.perf_counter()
    character = build_character(crop, keypoints)
    try:
        rig = build_rig(character)
    except ValueError as exc:
        raise NoCharacterDetected(f"the drawing could not be rigged: {exc}") from exc
    rigged = time.perf_counter()
    loaded = [m if isinstance(m, Motion) else _motion(m, motions_dir) for m in motions]
    files = {motion.name: render_motion(rig, motion, options) for motion in loaded}
    return RenderResult(files, rigged - start, time.perf_counter() - rigged)
