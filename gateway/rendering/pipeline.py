"""One /animate request from bytes to URLs (and one /annotate request, its first half):
the stages, in order, and their timings.

lookup (storage) -> queue (admission) -> motion (an uploaded BVH read, in a worker process)
-> the figure stage (figures.py: decode -> detect -> pose -> segment) -> rig (one worker
process) -> render (the motions shared out over the idle worker processes) -> upload.
Motions already in storage for this image, these options and these versions (renderer,
motion, models) are not rendered again, and an answer wholly from storage takes no render
slot. The detector, the pose estimator and the rig run once per request, whatever the
number of motions.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from animation.bvh import BVHError
from animation.figure import FigureError
from animation.motions import Motion, MotionError
from animation.render import RenderOptions, Rig
from animation.sprites import layout_of
from animation.version import renderer_version
from gateway.admission import Admission
from gateway.backends.storage import Storage, animation_key, layout_key
from gateway.backends.torchserve_client import TorchServeClient
from gateway.config import Config
from gateway.errors import StorageUnavailable, from_library
from gateway.greenlets import client_address, run_all
from gateway.ops import metrics
from gateway.ops.stage_timer import StageTimer
from gateway.rendering import tasks
from gateway.rendering.catalogue import MotionCatalogue
from gateway.rendering.figures import Figure, FigureStage
from gateway.rendering.pool import CpuPool
from gateway.web.requests import AnimateOptions, AnimateRequest, AnnotateRequest, MotionUpload

log = logging.getLogger("gateway.pipeline")
# Bump when the gateway's own preparation changes what a GIF looks like (the crop margin,
# the second crop around the whole drawing, the joints kept on the crop, the texture and
# mask built in the render tasks, the resolution the rig is built at). Library, motion and model
# versions are read.
PREPARATION_VERSION = 5
JOB_ROUND_PER_WORKER = 2  # motions per render worker a job renders and stores at a time


def _split(names: list, parts: int) -> list[list]:
    """Motions dealt round-robin into `parts` non-empty chunks, one per idle render worker."""
    parts = max(1, min(parts, len(names)))
    return [names[i::parts] for i in range(parts)]


def model_roles(options: AnimateOptions, segmenter: bool = False) -> tuple[str, ...]:
    """The models whose answers shape this request's GIFs: a given bbox or mask skips the
    detector, given keypoints the pose model; the segmenter counts when it made the mask
    (`segmenter`), which a given mask rules out."""
    skipped = {"detector": options.bbox or options.mask, "pose": options.keypoints}
    roles = tuple(role for role, given in skipped.items() if given is None)
    return roles + ("segmenter",) if segmenter and options.mask is None else roles


@dataclass(frozen=True)
class Animations:
    """What /animate answers: a URL per motion, and the figure mask's warnings (empty when
    the mask looked right, or when storage answered and no figure was looked at)."""

    urls: dict[str, str]
    figure_warnings: tuple[str, ...] = ()
    # format=sprites: each sheet's layout (JSON), stored at the sheet's key with .json.
    layouts: dict[str, str] = field(default_factory=dict)


class AnimationPipeline:
    def __init__(
        self,
        config: Config,
        models: TorchServeClient,
        storage: Storage,
        pool: CpuPool,
        admission: Admission,
        catalogue: MotionCatalogue,
    ) -> None:
        self.config = config
        self.models = models
        self.storage = storage
        self.pool = pool
        self.admission = admission
        self.catalogue = catalogue
        self.figures = FigureStage(config, models, pool)

    def keys(self, job: AnimateRequest, segmenter: bool = False) -> dict[str, str]:
        """motion -> storage key: the image, the options and every version that shapes it
        (the segmenter's when it made the mask)."""
        options = job.options
        fields = {
            **options.render_fields(),
            "renderer": renderer_version(),
            "preparation": PREPARATION_VERSION,
            "model_input_px": self.config.model_input_px,
            "models": self.models.versions(model_roles(options, segmenter)),
        }
        image_sha = hashlib.sha256(job.image).hexdigest()
        versions = dict(self.catalogue.versions)
        if job.motion_upload is not None:  # its file's content and retarget options
            versions[job.motion_upload.name] = job.motion_upload.version()
        return {m: animation_key(image_sha, fields, m, versions[m], options.suffix)
                for m in job.motions}  # fmt: skip

    def _storage_call(self, operation: str, fn, *args):
        try:
            return fn(*args)
        except StorageUnavailable:
            metrics.STORAGE_ERRORS.labels(operation).inc()
            raise

    def run(
        self, job: AnimateRequest, timer: StageTimer, host_url: str, client=None,
        on_stored: Callable[[list[str], bool], None] | None = None,
    ) -> Animations:  # fmt: skip
        """A URL for every requested motion (an uploaded one last), rendering only what
        storage lacks, and the figure's warnings when it was looked at.

        The GIFs are looked up under the keys of the mask the request should get (the
        segmenter's version among them when TorchServe serves it); when the segmenter
        failed and OpenCV made the mask alone, they are stored under OpenCV's keys, so a
        working segmenter later renders them again rather than serving the fallback's.

        With `on_stored` (a job: gateway/jobs/), the motions are rendered and stored a few
        at a time (JOB_ROUND_PER_WORKER per render worker), and `on_stored(motions, True)` is told of each few
        as they are stored (`on_stored(motions, False)` of those storage already had):
        progress that survives the worker, since a job tried again finds them stored."""
        segmenter = job.options.mask is None and self.models.serves("segmenter")
        warnings: tuple[str, ...] = ()
        with timer.stage("lookup"):
            keys = self.keys(job, segmenter)
            found = run_all(
                self._storage_call, [("lookup", self.storage.exists, k) for k in keys.values()]
            )
        missing = [m for m, hit in zip(keys, found, strict=True) if not hit]
        if on_stored is not None and len(missing) < len(keys):
            on_stored([m for m in keys if m not in missing], False)
        if not missing:
            metrics.CACHE_HITS.inc()
        else:
            with self.admission.admit(client, client_address(client)) as waited_s:
                timer.add("queue", waited_s)
                todo, figure = self._prepare(job, missing, segmenter, timer, client)
                if segmenter and not figure.mask.consulted:
                    fallback = self.keys(job, segmenter=False)
                    keys |= {m: fallback[m] for m in missing}
                # A job's round: two motions per render worker, so a job at the defaults is
                # one round, as fast as /animate, and a long one still reports progress
                # every round (docs/BENCHMARKS.md, section jobs); the rig serves every round.
                size = len(todo) if on_stored is None else JOB_ROUND_PER_WORKER * self.pool.size
                rig = self._rig(figure, job.options, timer, client)
                for start in range(0, len(todo), size):
                    batch = missing[start : start + size]
                    files = self._render(rig, todo[start : start + size], job.options, timer,
                                         client)  # fmt: skip
                    self._store(job, {m: keys[m] for m in batch}, files, timer)
                    if on_stored is not None:
                        on_stored(batch, True)
                rigged = rig.warnings
                warnings = figure.mask.warnings + rigged
                for code in rigged:
                    metrics.FIGURE_WARNINGS.labels(code).inc()
                if rigged:
                    log.warning("figure's joints changed to rig it: %s", ",".join(rigged),
                                extra={"warnings": list(rigged)})  # fmt: skip
        # Only now, with every object stored, are URLs handed out.
        urls = {m: self.storage.url(keys[m], host_url) for m in job.motions}
        layouts = {}
        if job.options.format == "sprites":
            layouts = {m: self.storage.url(layout_key(keys[m]), host_url) for m in job.motions}
        return Animations(urls, warnings, layouts)

    def _store(self, job: AnimateRequest, keys: dict[str, str], files: dict, timer) -> None:
        """Each motion's file at its key (and a sprite sheet's layout beside it)."""
        content_type = job.options.content_type
        with timer.stage("upload"):
            if job.options.format == "sprites":  # a stored sheet has its layout
                run_all(
                    self._storage_call,
                    [("upload", self.storage.put, layout_key(key),
                      json.dumps(layout_of(files[m])).encode(), "application/json")
                     for m, key in keys.items()],
                )  # fmt: skip
            run_all(
                self._storage_call,
                [("upload", self.storage.put, key, files[m], content_type)
                 for m, key in keys.items()],
            )  # fmt: skip

    def annotate(self, job: AnnotateRequest, timer: StageTimer, client=None) -> dict:
        """/annotate: the figure stage alone, under the same admission as a render."""
        with self.admission.admit(caller=client_address(client)) as waited_s:
            timer.add("queue", waited_s)
            figure = self.figures.find(job.image, job.figure, timer, client, annotate=True)
        return figure.annotation()

    def _prepare(
        self, job: AnimateRequest, motions: list[str], segmenter: bool, timer: StageTimer, client
    ) -> tuple[list[str | Motion], Figure]:
        """What to render for `motions` (an uploaded motion read, in a worker) and the figure."""
        upload = job.motion_upload
        todo: list[str | Motion] = list(motions)
        if upload is not None and upload.name in motions:
            # Read before any model is asked: a malformed file is the client's error, fast.
            with timer.stage("motion"):
                todo[motions.index(upload.name)] = self.read_motion(upload, client)
        figure = self.figures.find(job.image, job.options.figure, timer, client,
                                   segmenter=segmenter)  # fmt: skip
        return todo, figure

    def read_motion(self, upload: MotionUpload, client=None) -> Motion:
        """An uploaded motion read and retargeted in a render worker; 4xx when it cannot be."""
        try:
            return self.pool.map(tasks.read_motion, [(upload,)], client)[0]
        except (BVHError, MotionError) as exc:
            raise from_library(exc) from None

    def _rig(self, figure: Figure, options: AnimateOptions, timer: StageTimer, client) -> Rig:
        """The figure rigged once, in a render worker (`tasks.rig`), for every motion."""
        job = tasks.RigJob(figure.crop, figure.keypoints[:, :2], figure.mask.mask, options.size)
        metrics.RENDER_WORKERS_BUSY.inc()
        try:
            with timer.stage("rig"):
                return self.pool.map(tasks.rig, [(job,)], client)[0]
        except FigureError as exc:
            raise from_library(exc) from None
        finally:
            metrics.RENDER_WORKERS_BUSY.dec()

    def _render(
        self, rig: Rig, motions: list[str | Motion], options, timer: StageTimer, client
    ) -> dict[str, bytes]:
        """A file's bytes per motion, the motions shared out over the idle render workers."""
        chunks = _split(motions, max(1, self.pool.idle))
        render = RenderOptions(
            size=options.size, fps=options.fps, format=options.format,
            background=options.background,
        )  # fmt: skip
        jobs = [tasks.RenderJob(rig, chunk, render, self.config.motions_dir) for chunk in chunks]
        metrics.RENDER_WORKERS_BUSY.inc(len(chunks))
        try:
            with timer.stage("render"):
                results = self.pool.map(tasks.render, [(job,) for job in jobs], client)
        finally:
            metrics.RENDER_WORKERS_BUSY.dec(len(chunks))
        return {name: data for files in results for name, data in files.items()}
