"""One /animate request from bytes to URLs: the stages, in order, and their timings.

lookup (storage) -> queue (admission) -> decode -> detect -> pose -> rig + render (worker
processes) -> upload. Motions already in storage for this image, these options and these
versions (renderer, motion, models) are not rendered again, and an answer wholly from
storage takes no render slot. The detector and the pose estimator run once per request,
whatever the number of motions.
"""

from __future__ import annotations

import hashlib
import logging
import time

import numpy as np

from animation.version import renderer_version
from gateway import cpu_tasks, metrics
from gateway.admission import Admission
from gateway.catalogue import MotionCatalogue
from gateway.config import Config
from gateway.cpu_pool import CpuPool
from gateway.errors import BadRequest, StorageUnavailable
from gateway.greenlets import run_all
from gateway.parsing import AnimateOptions, AnimateRequest
from gateway.preprocess import crop_box, encode_jpeg
from gateway.stage_timer import StageTimer
from gateway.storage import Storage, animation_key
from gateway.torchserve_client import TorchServeClient

log = logging.getLogger("gateway.pipeline")
# Bump when the gateway's own preparation changes what a GIF looks like (the crop margin,
# the texture and mask built in cpu_tasks). Library, motion and model versions are read.
PREPARATION_VERSION = 2


def _split(names: list[str], parts: int) -> list[list[str]]:
    """Motions dealt round-robin into `parts` non-empty chunks, one per idle render worker."""
    parts = max(1, min(parts, len(names)))
    return [names[i::parts] for i in range(parts)]


def model_roles(options: AnimateOptions) -> tuple[str, ...]:
    """The models whose answers shape this request's GIFs (a given bbox or keypoints skip one)."""
    return tuple(role for role, given in (("detector", options.bbox), ("pose", options.keypoints))
                 if given is None)  # fmt: skip


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

    def keys(self, job: AnimateRequest) -> dict[str, str]:
        """motion -> storage key: the image, the options and every version that shapes it."""
        options = job.options
        fields = {
            **options.render_fields(),
            "renderer": renderer_version(),
            "preparation": PREPARATION_VERSION,
            "model_input_px": self.config.model_input_px,
            "models": self.models.versions(model_roles(options)),
        }
        image_sha = hashlib.sha256(job.image).hexdigest()
        motions = self.catalogue.versions
        return {m: animation_key(image_sha, fields, m, motions[m]) for m in options.motions}

    def _storage_call(self, operation: str, fn, *args):
        try:
            return fn(*args)
        except StorageUnavailable:
            metrics.STORAGE_ERRORS.labels(operation).inc()
            raise

    def run(self, job: AnimateRequest, timer: StageTimer, host_url: str, client=None) -> dict:
        """{motion: URL} for every requested motion, rendering only what storage lacks."""
        with timer.stage("lookup"):
            keys = self.keys(job)
            found = run_all(
                self._storage_call, [("lookup", self.storage.exists, k) for k in keys.values()]
            )
        missing = [m for m, hit in zip(keys, found, strict=True) if not hit]
        if not missing:
            metrics.CACHE_HITS.inc()
        else:
            with self.admission.admit(client) as waited_s:
                timer.add("queue", waited_s)
                gifs = self._render(job, missing, timer, client)
                with timer.stage("upload"):
                    run_all(
                        self._storage_call,
                        [("upload", self.storage.put, keys[m], gifs[m]) for m in missing],
                    )
        # Only now, with every object stored, are URLs handed out.
        return {m: self.storage.url(keys[m], host_url) for m in job.options.motions}

    def _render(self, job: AnimateRequest, motions: list[str], timer: StageTimer, client) -> dict:
        crop, keypoints = self._figure(job, timer, client)
        return self._animate(crop, keypoints, motions, job.options, timer, client)

    def _figure(
        self, job: AnimateRequest, timer: StageTimer, client
    ) -> tuple[np.ndarray, np.ndarray]:
        """The figure's crop (RGB, model scale) and its 17 keypoints in the crop's pixels."""
        cfg, options = self.config, job.options
        with timer.stage("decode"):
            image = self.pool.map(
                cpu_tasks.decode, [(job.image, cfg.max_pixels, cfg.model_input_px)], client
            )[0]
        height, width = image.rgb.shape[:2]
        given_keypoints = None
        if options.keypoints is not None:
            given_keypoints = np.asarray(options.keypoints) * image.scale
            if not (
                (given_keypoints >= -1).all() and (given_keypoints <= (width + 1, height + 1)).all()
            ):
                raise BadRequest("option 'keypoints' has points outside the image")
        if options.bbox is not None:
            bbox = tuple(v * image.scale for v in options.bbox)
        else:
            with timer.stage("detect"):
                bbox = self.models.detect(image.jpeg)
        if given_keypoints is not None:  # the crop must hold every joint the user placed
            bbox = (
                *np.minimum(bbox[:2], given_keypoints.min(0)),
                *np.maximum(bbox[2:], given_keypoints.max(0)),
            )
        left, top, right, bottom = crop_box(bbox, (width, height))
        crop = np.ascontiguousarray(image.rgb[top:bottom, left:right])
        if given_keypoints is not None:
            keypoints = given_keypoints - (left, top)
        else:
            with timer.stage("pose"):
                keypoints = self.models.pose(encode_jpeg(crop))[:, :2]
        return crop, keypoints

    def _animate(
        self, crop, keypoints, motions: list[str], options, timer: StageTimer, client
    ) -> dict:
        """GIF bytes per motion, the motions shared out over the idle render workers."""
        chunks = _split(motions, max(1, self.pool.idle))
        start = time.perf_counter()
        metrics.RENDER_WORKERS_BUSY.inc(len(chunks))
        try:
            results = self.pool.map(
                cpu_tasks.animate,
                [(crop, keypoints, chunk, options.size, options.fps) for chunk in chunks],
                client,
            )
        finally:
            metrics.RENDER_WORKERS_BUSY.dec(len(chunks))
        wall = time.perf_counter() - start
        # Chunks run side by side: the rig stage is the slowest chunk's set-up, render the rest.
        rig = min(wall, max(r.rig_s for r in results))
        timer.add("rig", rig)
        timer.add("render", wall - rig)
        return {name: gif for r in results for name, gif in r.gifs.items()}
