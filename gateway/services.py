"""The services one worker process shares between its requests, and how a route reaches them.

`create_app` builds a `Services` and keeps it in `app.extensions`; a route, hook or error
handler asks `current_services()` (Flask's application context, as in Flask's tutorial),
so nothing imports the app module and the app module imports no route before it wires it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gevent
from flask import Flask, current_app

from animation.motions import MotionError
from gateway.admission import Admission
from gateway.backends.model_table import read_model_table
from gateway.backends.storage import Storage, open_storage
from gateway.backends.torchserve_client import TorchServeClient
from gateway.config import Config, ConfigError
from gateway.jobs.queue import EmbeddedQueue, JobQueue, open_queue
from gateway.jobs.runner import JobRunner
from gateway.ops import metrics
from gateway.rendering import tasks
from gateway.rendering.catalogue import MotionCatalogue
from gateway.rendering.pipeline import AnimationPipeline
from gateway.rendering.pool import CpuPool

EXTENSION = "gateway"
log = logging.getLogger("gateway.services")


@dataclass
class Services:
    config: Config
    models: TorchServeClient
    storage: Storage
    pool: CpuPool
    admission: Admission
    catalogue: MotionCatalogue
    pipeline: AnimationPipeline
    queue: JobQueue
    runner: JobRunner | None = None  # the embedded queue's: this process runs its jobs

    @classmethod
    def build(cls, config: Config) -> Services:
        """Every service, wired; cheap: no process, connection or file is opened yet."""
        models = TorchServeClient(
            read_model_table(config),
            config.model_timeout_s,
            on_error=lambda role, kind: metrics.TORCHSERVE_ERRORS.labels(role, kind).inc(),
        )
        storage = open_storage(
            config.storage_url,
            endpoint_url=config.s3_endpoint_url,
            public_base_url=config.public_base_url,
            presign_expiry_s=config.presign_expiry_s,
            timeout_s=config.storage_timeout_s,
            min_free_bytes=config.storage_min_free_bytes,
        )
        # The pool waits for a worker no longer than admission lets a request queue. Each
        # worker loads the motion table (MOTIONS_DIR's motions too) before its first task.
        pool = CpuPool(
            config.render_workers,
            wait_s=config.queue_timeout_s,
            setup=(tasks.warm_up, (config.motions_dir,)),
        )
        admission = Admission(
            config.max_inflight, config.max_queue, config.queue_timeout_s, config.retry_after_s,
            api_keys=config.api_keys,
        )  # fmt: skip
        catalogue = MotionCatalogue(config.default_motions, config.motions_dir)
        pipeline = AnimationPipeline(config, models, storage, pool, admission, catalogue)
        queue = open_queue(config)
        services = cls(config, models, storage, pool, admission, catalogue, pipeline, queue)
        if isinstance(queue, EmbeddedQueue):
            services.runner = JobRunner(services, queue)
        return services

    def start(self) -> None:
        """Start the render workers, load the motion table and learn the models' versions
        (in the background: TorchServe may still be loading) before the first request.

        A MOTIONS_DIR that cannot be loaded (a malformed BVH, a motion whose joints cannot be
        found, a bad sidecar) raises ConfigError: the gateway does not start."""
        if self.config.motions_dir is not None:  # checked before any worker reads it too
            try:
                self.catalogue.table  # noqa: B018 - parses every file, finds its joints
            except (MotionError, OSError) as exc:
                raise ConfigError(f"MOTIONS_DIR {self.config.motions_dir}: {exc}") from exc
        self.pool.start()  # the workers warm up while this process reads the table
        problem = self.catalogue.missing()
        if problem:
            log.error("motion table unusable: %s", problem)
        gevent.spawn(self.models.missing_models)
        if self.runner is not None:
            self.runner.start()

    def close(self) -> None:
        if self.runner is not None:  # its jobs are lost with this process anyway
            self.runner.stop(grace_s=0)
        self.pool.close()
        self.queue.close()


def install(app: Flask, services: Services) -> None:
    app.extensions[EXTENSION] = services


def services_of(app: Flask) -> Services:
    return app.extensions[EXTENSION]


def current_services() -> Services:
    """The services of the app handling the current request (needs an app context)."""
    return services_of(current_app)
