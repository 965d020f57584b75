"""The CPU-heavy work of a request, run in the render worker processes (rendering/pool.py).

Each task takes one typed job and returns one typed result: the pool pickles the task by
reference, the job and the result by value. The work itself is the animation library's
(`animation.figure`, `animation.render`); nothing here touches Flask, the network,
storage or the API's errors. A task raises the library's own errors
(`animation.figure.FigureError`, `animation.images.ImageRejected`, `animation.bvh.BVHError`,
`animation.motions.MotionError`), which the gateway maps to its answers where it awaits
the task (`gateway.errors.from_library`).
"""

from __future__ import annotations

import base64
import binascii
import io
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np
from PIL import Image

from animation.bvh import UPLOAD_LIMITS, parse_bvh_bytes
from animation.character import load_character
from animation.figure import Crop, character_of, choose_mask, grown_box, rig_for
from animation.figure_mask import FigureJoints, FinishedMask, finish_mask
from animation.images import InvalidImage, decode_image, decode_mask
from animation.mask_warnings import joint_warnings, mask_warnings
from animation.motions import Motion, MotionSpec, load_motion, motion_from_bvh, motion_table
from animation.paper import ink_map, light_page
from animation.render import RenderOptions, Rig, render_motion
from animation.segment import opencv_mask, settled
from gateway.rendering.geometry import Box, Scale

if TYPE_CHECKING:  # the request's type, read by attribute: the workers never import web/
    from gateway.web.requests import MotionUpload

MASK_SOURCES = ("given", "learned", "opencv")  # who made a mask: the client, the segmenter, OpenCV


# ---- decode: the upload as the models see it -------------------------------------------
@dataclass(frozen=True)
class DecodeJob:
    data: bytes  # the upload, as it came
    max_pixels: int
    max_side: int  # the longest side the models see (MODEL_INPUT_PX)


@dataclass(frozen=True)
class ModelImage:
    """The upload, upright, RGB, scaled so its longest side is at most the model input size."""

    rgb: np.ndarray  # (H, W, 3) uint8
    scale: float  # rgb pixels per pixel of the upright upload
    jpeg: bytes  # `rgb` encoded for the detector
    upload_size: tuple[int, int] = (0, 0)  # (width, height) of the upright upload
    cpu_s: float = 0.0  # CPU time the decoding took (the figure stage's budget counts it)


def encode_jpeg(rgb: np.ndarray, quality: int = 92) -> bytes:
    """An (H, W, 3) uint8 RGB image as the models are sent it."""
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])  # fmt: skip
    if not ok:
        raise InvalidImage("image could not be re-encoded")
    return buf.tobytes()


def decode(job: DecodeJob) -> ModelImage:
    """The upload decoded upright (the decoding policy of `animation.images`) into RGB at
    most `max_side` px long, and its JPEG."""
    start = time.process_time()
    decoded = decode_image(job.data, job.max_pixels, job.max_side)
    jpeg = encode_jpeg(decoded.rgb)
    return ModelImage(rgb=decoded.rgb, scale=decoded.scale, jpeg=jpeg, upload_size=decoded.size,
                      cpu_s=time.process_time() - start)  # fmt: skip


# ---- the figure's mask ------------------------------------------------------------------
@dataclass(frozen=True)
class GivenMaskJob:
    """A mask a person fixed: a PNG over `box` (left, top, right, bottom) of the upload."""

    png: bytes
    box: Box


@dataclass(frozen=True)
class MaskJob:
    crop: np.ndarray  # (h, w, 3) uint8: the crop of the model image
    keypoints: np.ndarray  # (17, 2) COCO x, y in crop px
    where: Crop  # the crop's place in the model image and the paper its margin lacks
    scale: Scale  # between the upload's pixels and the model image's
    given: GivenMaskJob | None = None  # the client's mask: used as it is
    annotate: bool = False  # also the mask in the upload's pixels, and a given one's warnings


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
    cpu_s: float = 0.0  # CPU time making it took
    # (h, w) bool: strokes cut off where they left the figure for the crop's edge (the
    # second crop looks at them: `FinishedMask.lines`); None when none.
    lines: np.ndarray | None = None

    @property
    def reaching(self) -> np.ndarray:
        """(h, w) bool: the mask with the lines cut off it: what runs on to the crop's edge."""
        return self.mask if self.lines is None else self.mask | self.lines


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


def _learned_on_crop(answer: str, crop: np.ndarray, where: Crop) -> np.ndarray | None:
    """`learned_mask` of the crop the segmenter saw (the crop with `where.pads` round it),
    cut back to the crop."""
    left, top, right, bottom = where.pads
    height, width = crop.shape[:2]
    seen = learned_mask(answer, (height + top + bottom, width + left + right))
    return None if seen is None else where.mask_from_seen(seen)


def _given_mask(given: GivenMaskJob, crop_box: Box, scale: Scale) -> np.ndarray:
    """(h, w) bool over the crop: the client's mask (upload px) laid on the model pixels,
    nothing changed but the sampling; what lies outside its box is not the figure."""
    (left, top, _, _), sampled = scale.mask_to_model(decode_mask(given.png), given.box)
    out = np.zeros((crop_box[3] - crop_box[1], crop_box[2] - crop_box[0]), bool)
    # The crop holds the mask's box (and more where a joint lies outside it).
    x0, y0 = left - crop_box[0], top - crop_box[1]
    out[y0 : y0 + sampled.shape[0], x0 : x0 + sampled.shape[1]] = sampled
    return out


def find_mask(job: MaskJob) -> FigureMask:
    """The figure's mask in the crop without the segmenter: the given one as it is, else
    OpenCV's (`animation.figure.choose_mask`). With `annotate`, also the warnings of a
    given mask and the mask in upload pixels as a PNG."""
    start = time.process_time()
    figure = FigureJoints.of(job.keypoints)
    if job.given is None:
        found = choose_mask(job.crop, job.keypoints, open_edges=job.where.open_edges)
        mask, warnings, source, lines = found.mask, found.warnings, found.source, found.lines
        if job.annotate:  # what rigging will do about the joints, for the person to fix
            warnings += joint_warnings(mask, figure)
    else:
        mask = _given_mask(job.given, job.where.box, job.scale)
        warnings = (
            mask_warnings(mask, ink_map(light_page(job.crop)).ink, figure)
            + joint_warnings(mask, figure)
            if job.annotate
            else ()
        )
        source, lines = "given", None
    cpu_s = time.process_time() - start
    return _figure_mask(job, mask, warnings, source, None, False, cpu_s, lines)


def _figure_mask(job, mask, warnings, source, unusable, consulted, cpu_s, lines) -> FigureMask:
    """The task's answer; with `job.annotate`, with the mask in the upload's pixels."""
    upload_box, png = None, None
    if job.annotate:
        upload_box, upload_mask = job.scale.mask_to_upload(mask, job.where.box)
        buf = io.BytesIO()
        Image.fromarray(upload_mask.astype(np.uint8) * 255).save(buf, format="PNG", optimize=True)
        png = buf.getvalue()
    return FigureMask(mask, warnings, upload_box, png, source, unusable, consulted, cpu_s, lines)


# ---- with the segmenter's answer: the two masks side by side -----------------------------
# OpenCV's mask and the segmenter's are finished at once, each in its own render worker
# (`finish_one`), and `settle_mask` chooses (`animation.segment.settled`): the request
# waits for the slower of the two, not for both one after the other (docs/BENCHMARKS.md,
# section one-rig).
@dataclass(frozen=True)
class FinishJob:
    crop: np.ndarray  # (h, w, 3) uint8: the crop of the model image
    keypoints: np.ndarray  # (17, 2) COCO x, y in crop px
    where: Crop  # the crop's place in the model image and the paper its margin lacks
    # The segmenter's answer (base64 PNG over `where.seen`; "" when it saw no figure), or
    # None: OpenCV's mask.
    learned: str | None = None
    budget_s: float | None = None  # CPU seconds the segmenter's may spend (None: no limit)


@dataclass(frozen=True)
class Finished:
    """One raw mask of the crop finished (`animation.figure_mask.finish_mask`)."""

    mask: FinishedMask | None  # None: the segmenter's answer held no mask to finish
    inked: np.ndarray  # (h, w) bool: the crop's ink, which settling the mask needs
    unusable: str | None = None  # "bad_mask": the segmenter's answer is no mask of the crop
    over_budget: bool = False  # finishing it spent the budget: it is the answer alone
    cpu_s: float = 0.0


def finish_one(job: FinishJob) -> Finished:
    """OpenCV's mask of the crop, or the segmenter's answer, finished against the joints."""
    start = time.process_time()
    page = light_page(job.crop)
    ink = ink_map(page)
    figure = FigureJoints.of(job.keypoints)
    unusable, mask = None, None
    if job.learned is None:
        mask = opencv_mask(page, figure, ink, job.where.open_edges)
    elif job.learned:
        raw = _learned_on_crop(job.learned, job.crop, job.where)
        if raw is None:
            unusable = "bad_mask"
        else:
            mask = finish_mask(raw, page, figure, ink, True, job.where.open_edges)
    spent = time.process_time() - start
    over = mask is not None and job.budget_s is not None and spent > job.budget_s
    return Finished(mask, ink.ink, unusable, over, spent)


@dataclass(frozen=True)
class SettleJob:
    keypoints: np.ndarray  # (17, 2) COCO x, y in crop px
    where: Crop
    scale: Scale
    drawn: Finished  # OpenCV's
    learned: Finished  # the segmenter's
    annotate: bool = False  # also the mask in the upload's pixels


def settle_mask(job: SettleJob) -> FigureMask:
    """The figure's mask from the two finished in `finish_one`, as one worker would settle
    them (`animation.segment.settled`): the better of the two, or the segmenter's alone
    when finishing it spent the budget. With `annotate`, the mask in upload pixels too."""
    start = time.process_time()
    figure = FigureJoints.of(job.keypoints)
    learned, drawn = job.learned, job.drawn
    if learned.over_budget:
        found = settled(None, learned.mask, learned.inked, figure, over_budget=True)
    else:
        found = settled(drawn.mask, learned.mask, drawn.inked, figure)
    warnings = found.warnings
    if job.annotate:
        warnings += joint_warnings(found.mask, figure)
    cpu_s = time.process_time() - start + drawn.cpu_s + learned.cpu_s
    return _figure_mask(job, found.mask, warnings, found.source, learned.unusable,
                        learned.unusable is None, cpu_s, found.lines)  # fmt: skip


# ---- the second crop --------------------------------------------------------------------
@dataclass(frozen=True)
class WholeDrawingJob:
    rgb: np.ndarray  # (H, W, 3) uint8: the model image
    where: Crop  # the detector's crop
    mask: np.ndarray  # (h, w) bool: the figure found in it, with its lines (`reaching`)
    bbox: tuple[float, float, float, float]  # the detector's box


def whole_drawing(job: WholeDrawingJob) -> tuple[float, float, float, float] | None:
    """The detector's box grown to the whole drawing the figure runs into past the crop's
    edge (`animation.figure.grown_box`), or None."""
    return grown_box(job.rgb, job.where, job.mask, job.bbox)


# ---- motions ----------------------------------------------------------------------------
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
    the request's `map`, `up`, `start`, `end`). Raises BVHLimitError past a limit (bytes,
    joints, frames), BVHError for a malformed file (naming the line), MotionError for a
    motion whose joints cannot be found (naming what is missing)."""
    bvh = parse_bvh_bytes(upload.data, upload.source, UPLOAD_LIMITS)
    return motion_from_bvh(
        bvh,
        upload.name,
        joint_map=dict(upload.joint_map),
        up=upload.up,
        start_s=upload.start_s,
        end_s=upload.end_s,
    )


# ---- previews ---------------------------------------------------------------------------
# A motion's preview: the generated test character (drawn by animation.tools.testchar, as in
# docs/character; shipped with the gateway), small and short, the same for every motion, so
# the motions can be told apart at a glance.
PREVIEW_OPTIONS = RenderOptions(size=96, fps=10, max_frames=40)
PREVIEW_CHARACTER = Path(__file__).resolve().parents[1] / "preview_character"


@dataclass(frozen=True)
class PreviewJob:
    motion: str
    motions_dir: Path | None = None


@cache
def _preview_rig():
    return rig_for(load_character(PREVIEW_CHARACTER), PREVIEW_OPTIONS.size)


def preview(job: PreviewJob) -> bytes:
    """The GIF of `job.motion` (a table name) on the generated test character."""
    return render_motion(_preview_rig(), _motion(job.motion, job.motions_dir), PREVIEW_OPTIONS)


# ---- rig and render ---------------------------------------------------------------------
# The rig's two halves, the mesh cut into parts and the texture cleaned, run on two threads
# of one worker (`animation.render.build_rig`): the other workers wait for the rig anyway.
RIG_THREADS = 2


@dataclass(frozen=True)
class RigJob:
    crop: np.ndarray  # (h, w, 3) uint8
    keypoints: np.ndarray  # (17, 2) COCO x, y in crop px
    mask: np.ndarray  # (h, w) bool
    size: int  # the output's longest side, px: the finest resolution the rig needs


def rig(job: RigJob) -> Rig:
    """The drawing rigged once per request, at the resolution an output `size` px long can
    show; every render task draws from it. NoFigure when the drawing gives no figure to
    rig."""
    character = character_of(job.crop, job.keypoints, job.mask)
    return rig_for(character, job.size, workers=RIG_THREADS)


@dataclass(frozen=True)
class RenderJob:
    rig: Rig
    motions: list[str | Motion]  # table names, or a Motion read from an upload
    options: RenderOptions
    motions_dir: Path | None = None


def render(job: RenderJob) -> dict[str, bytes]:
    """Each motion rendered to the bytes of a file in `options.format`, by its name."""
    loaded = [m if isinstance(m, Motion) else _motion(m, job.motions_dir) for m in job.motions]
    return {motion.name: render_motion(job.rig, motion, job.options) for motion in loaded}
