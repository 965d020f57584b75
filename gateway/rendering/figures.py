"""The figure stage: where the drawn figure is, its joints and its outline, from the upload.

The steps are the library's figure pipeline (`animation.figure`); this module asks the
models for what they find and runs the CPU work in the render workers (rendering/tasks.py):
decode (render worker) -> bbox (given, else the detector) -> crop (`crop_for`) -> keypoints
(given, else the pose model on the crop) and the segmenter's mask (when TorchServe serves
it), side by side -> mask (given; else OpenCV's, and with the segmenter's answer the
better of the two, the two finished side by side in two render workers) -> where a
detected figure's mask runs off the crop into a drawing that goes on past it (`grown_box`:
a body the detector left out), the same again on a crop around the whole drawing ->
quality warnings. /annotate answers what it found (in the upload's pixels); /animate rigs
and renders it. Each thing the client gives skips the model that would find it; a given
mask also fixes the crop (its box), so it skips the detector and the segmenter.

The stage's own CPU work (decoding, the masks) has a budget, FIGURE_BUDGET_S of CPU time
per request: past it the stage takes the cheapest sound path left (the segmenter's mask as
it is, no second crop) and says so with the warning `over_budget`. Every step's cost is
bounded by the image's size, so the budget is a guard, not a routine path.

The segmenter is optional: a failing call (TorchServe's 5xx, a timeout, a reply that is no
mask of the crop) costs the request its learned mask, never its answer: the OpenCV path is
the fallback, with a log line and `gateway_segmenter_fallbacks_total`. Every mask made is
counted by source, and its warnings by code, and logged when there are any.
"""

from __future__ import annotations

import base64
import logging
import time
from dataclasses import dataclass, replace

import numpy as np
import requests

from animation.crop import runs_off
from animation.figure import BadBox, Crop, crop_for
from animation.mask_warnings import WARNINGS
from gateway.backends.torchserve_client import TorchServeClient
from gateway.config import Config
from gateway.errors import ApiError, BadRequest, ModelUnavailable, PoseNotFound, from_library
from gateway.greenlets import run_all
from gateway.ops import metrics
from gateway.ops.stage_timer import StageTimer
from gateway.rendering import tasks
from gateway.rendering.geometry import Scale, pixels_holding
from gateway.rendering.pool import CpuPool
from gateway.web.requests import FigureOptions

log = logging.getLogger("gateway.figure")
# What looked wrong with the figure's mask (animation.mask_warnings codes, comma-separated)
# on a /animate answer; the request animated with the best mask all the same. Absent when
# nothing did.
FIGURE_WARNINGS_HEADER = "X-Figure-Warnings"


@dataclass(frozen=True)
class Figure:
    """What the stage found, in model pixels (the upload shrunk to MODEL_INPUT_PX)."""

    scale: Scale
    where: Crop  # the crop's place in the model image
    crop: np.ndarray  # (h, w, 3) uint8
    keypoints: np.ndarray  # (17, 3) COCO x, y (crop px) and score (NaN where given)
    bbox: tuple[float, float, float, float] | None  # None: a given mask fixed the crop
    bbox_score: float | None  # None: the box was given (or not needed)
    mask: tasks.FigureMask

    def annotation(self) -> dict:
        """/annotate's answer: everything in the upright upload's pixels."""
        left, top = self.where.box[:2]
        points = self.scale.points_to_upload(self.keypoints[:, :2] + (left, top))
        scores = [None if np.isnan(s) else float(s) for s in self.keypoints[:, 2]]
        width, height = self.scale.upload
        return {
            "image": {"width": width, "height": height},
            "bbox": [float(v) for v in self.scale.points_to_upload(self._box()).ravel()],
            "bbox_score": self.bbox_score,
            "keypoints": [
                [float(x), float(y), s] for (x, y), s in zip(points, scores, strict=True)
            ],
            "mask": {
                "box": list(self.mask.upload_box),
                "png": base64.b64encode(self.mask.upload_png).decode(),
            },
            "quality": {
                "ok": not self.mask.warnings,
                "warnings": [{"code": c, "message": WARNINGS[c]} for c in self.mask.warnings],
            },
        }

    def _box(self) -> np.ndarray:
        """(2, 2) model px: the box found or given, else the mask's own extent, else the crop."""
        if self.bbox is not None:
            return np.reshape(self.bbox, (2, 2))
        left, top, right, bottom = self.where.box
        rows, cols = np.nonzero(self.mask.mask)
        if rows.size:
            left, top = left + cols.min(), top + rows.min()
            right, bottom = left + cols.max() - cols.min() + 1, top + rows.max() - rows.min() + 1
        return np.array([[left, top], [right, bottom]], np.float64)


class FigureStage:
    def __init__(self, config: Config, models: TorchServeClient, pool: CpuPool) -> None:
        self.config = config
        self.models = models
        self.pool = pool

    def _run(self, task, job, client):
        """One task in a render worker, the caller's greenlet waiting (see rendering/pool.py)."""
        return self.pool.map(task, [(job,)], client)[0]

    def find(
        self,
        image: bytes,
        given: FigureOptions,
        timer: StageTimer,
        client=None,
        annotate: bool = False,
        segmenter: bool | None = None,
    ) -> Figure:
        """The figure in the upload `image`; `annotate` also readies /annotate's answer
        (the mask in upload pixels, a given mask's warnings). `segmenter`: whether to ask
        the segmenter (None: when TorchServe serves it); never with a given mask."""
        cfg = self.config
        with timer.stage("decode"):
            decoded: tasks.ModelImage = self._run(
                tasks.decode, tasks.DecodeJob(image, cfg.max_pixels, cfg.model_input_px), client
            )
        budget = _Budget(cfg.figure_budget_s, spent=decoded.cpu_s)
        height, width = decoded.rgb.shape[:2]
        scale = Scale(decoded.upload_size, (width, height))
        points = None
        if given.keypoints is not None:
            points = scale.points_to_model(given.keypoints)
            if not ((points >= -1).all() and (points <= (width + 1, height + 1)).all()):
                raise BadRequest("option 'keypoints' has points outside the image")
        bbox, score = None, None
        if given.bbox is not None:
            bbox = tuple(scale.points_to_model(np.reshape(given.bbox, (2, 2))).ravel())
        elif given.mask is None:
            with timer.stage("detect"):
                bbox, score = self.models.detect_scored(decoded.jpeg)
        if segmenter is None:
            segmenter = self.models.serves("segmenter")
        segmenter = segmenter and given.mask is None

        def figure_in(where: Crop) -> tuple[np.ndarray, np.ndarray, tasks.FigureMask]:
            """The crop, its keypoints and its mask; the models see the crop with the paper
            its margin lacks (`where.seen`)."""
            crop = where.pixels(decoded.rgb)
            keypoints, learned = self._crop_models(where.seen(crop), points, segmenter, timer)
            if keypoints is None:  # the client's joints, in the crop
                keypoints = np.column_stack([points - where.box[:2], np.full(17, np.nan)])
            else:
                keypoints = where.joints_from_seen(keypoints)
            mask = self._mask(crop, keypoints, where, given, learned, scale, annotate, timer,
                              client, budget.left())  # fmt: skip
            budget.spent += mask.cpu_s
            return crop, keypoints, mask

        where = self._crop(scale, bbox, points, given)
        crop, keypoints, mask = figure_in(where)
        regrow = score is not None and runs_off(mask.reaching, where.box, (width, height))
        if regrow and budget.left() <= 0:
            mask = _over_budget(mask)
        elif regrow:
            with timer.stage("whole_drawing"):
                grown = self._run(
                    tasks.whole_drawing,
                    tasks.WholeDrawingJob(decoded.rgb, where, mask.reaching, bbox),
                    client,
                )
            if grown is not None:  # the detector boxed a part of the drawing: crop again
                grown_where = self._crop(scale, grown, points, given)
                try:
                    crop, keypoints, mask = figure_in(grown_where)
                except PoseNotFound as exc:  # the first crop's figure is still an answer
                    log.info("no pose on the whole drawing, the first crop is kept: %s", exc)
                else:
                    self._cropped_again(where.box, grown)
                    bbox, where = grown, grown_where
        self._report(mask)
        return Figure(scale, where, crop, keypoints, bbox, score, mask)

    @staticmethod
    def _cropped_again(box: tuple[int, int, int, int], grown: tuple[float, ...]) -> None:
        metrics.CROPS_GROWN.inc()
        log.info("the figure runs off the detector's box into the drawing around it: "
                 "cropped again", extra={"box": list(box),
                                         "drawing": [round(float(v), 1) for v in grown]})  # fmt: skip

    def _crop_models(
        self, crop: np.ndarray, points: np.ndarray | None, segmenter: bool, timer: StageTimer
    ) -> tuple[np.ndarray | None, str | None]:
        """The pose model (unless the joints were given) and the segmenter (when asked) on
        the crop, side by side, so the segmenter's cost hides behind the pose model's: the
        keypoints (or None) and the segmenter's mask (base64 PNG; None when not asked or
        when its call failed, which is logged and counted here, never raised)."""
        calls = ([("pose", self.models.pose)] if points is None else []) + (
            [("segmenter", self._segment)] if segmenter else []
        )
        if not calls:
            return None, None
        jpeg = tasks.encode_jpeg(crop)

        seconds: dict[str, float] = {}

        def call(name: str, fn):
            start = time.perf_counter()
            try:
                return fn(jpeg)
            finally:
                seconds[name] = time.perf_counter() - start

        try:
            answers = dict(zip([n for n, _ in calls], run_all(call, calls), strict=True))
        finally:  # each call's own time, in a fixed order: they overlap
            for name in (n for n, _ in calls if n in seconds):
                timer.add(name, seconds[name])
        learned = answers.get("segmenter")
        if isinstance(learned, ApiError):
            self._fell_back(learned.code, learned.message)
            learned = None
        return answers.get("pose"), learned

    def _segment(self, jpeg: bytes) -> str | ApiError:
        """The segmenter's answer, or the error of a failing call (returned, not raised:
        run_all would abandon the pose model's call for it)."""
        try:
            return self.models.segment(jpeg)
        except ApiError as exc:
            return exc
        except requests.RequestException as exc:  # a reply broken off mid-body, and the like
            return ModelUnavailable(f"segmenter: {exc}")

    @staticmethod
    def _fell_back(reason: str, message: str) -> None:
        metrics.SEGMENTER_FALLBACKS.labels(reason).inc()
        log.warning("segmenter failed, the OpenCV mask is used instead: %s", message,
                    extra={"reason": reason})  # fmt: skip

    def _report(self, mask: tasks.FigureMask) -> None:
        """Count the mask by source and its warnings by code; log the warnings."""
        if mask.unusable:
            self._fell_back(mask.unusable, "its answer is not a mask of the crop")
        metrics.FIGURE_MASKS.labels(mask.source).inc()
        for code in mask.warnings:
            metrics.FIGURE_WARNINGS.labels(code).inc()
        if mask.warnings:
            log.warning(
                "figure mask looks implausible: %s", ",".join(mask.warnings),
                extra={"warnings": list(mask.warnings), "mask_source": mask.source},
            )  # fmt: skip

    def _crop(self, scale: Scale, bbox, points: np.ndarray | None, given) -> Crop:
        """Model px: a given mask's box, else the box grown by the crop margin
        (`animation.figure.crop_for`, with the paper the image's edges cut off its margin);
        either way grown to hold every joint the client placed."""
        width, height = scale.model
        if given.mask is None:
            try:
                return crop_for(bbox, (width, height), hold=points)
            except BadBox as exc:
                raise from_library(exc) from None
        mask_box = given.mask.box
        if mask_box[2] > scale.upload[0] or mask_box[3] > scale.upload[1]:
            raise BadRequest(f"mask 'box' {list(mask_box)} reaches outside the image "
                             f"({scale.upload[0]}x{scale.upload[1]})")  # fmt: skip
        left, top, right, bottom = scale.box_to_model(mask_box)
        if points is not None:
            held = pixels_holding(points)
            left, top = min(left, held[0]), min(top, held[1])
            right, bottom = max(right, held[2]), max(bottom, held[3])
        box = (max(0, left), max(0, top), min(width, right), min(height, bottom))
        if box[2] - box[0] < 2 or box[3] - box[1] < 2:
            raise BadRequest(f"mask 'box' {list(mask_box)} is too small to hold a figure")
        return Crop(tuple(int(v) for v in box))

    def _mask(self, crop, keypoints, where, given, learned, scale, annotate, timer, client,
              budget_s):  # fmt: skip
        """The one place a mask is made: the given one as it is; else OpenCV's, and with
        the segmenter's answer (`learned`, of `where.seen`) the better of the two, each
        finished in its own render worker at once (the segmenter's within `budget_s` CPU
        seconds), then compared (`tasks.settle_mask`)."""
        joints = keypoints[:, :2]
        with timer.stage("segment"):
            if learned is None:
                fixed = None if given.mask is None else tasks.GivenMaskJob(given.mask.png,
                                                                           given.mask.box)  # fmt: skip
                job = tasks.MaskJob(crop, joints, where, scale, fixed, annotate)
                return self._run(tasks.find_mask, job, client)
            opencv = tasks.FinishJob(crop, joints, where)
            segmenter = tasks.FinishJob(crop, joints, where, learned, budget_s)
            drawn, model = self.pool.map(tasks.finish_one, [(opencv,), (segmenter,)], client)
            settle = tasks.SettleJob(joints, where, scale, drawn, model, annotate)
            return self._run(tasks.settle_mask, settle, client)


@dataclass
class _Budget:
    """The figure stage's CPU budget for one request (FIGURE_BUDGET_S) and what is spent."""

    seconds: float
    spent: float = 0.0

    def left(self) -> float:
        return self.seconds - self.spent


def _over_budget(mask: tasks.FigureMask) -> tasks.FigureMask:
    """`mask` with the warning `over_budget` (once)."""
    if "over_budget" in mask.warnings:
        return mask
    return replace(mask, warnings=(*mask.warnings, "over_budget"))
