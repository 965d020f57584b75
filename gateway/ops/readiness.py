"""What /ready checks: each dependency a request needs, asked side by side.

Not ready (503, each problem named) while a model has no READY worker, storage cannot take
a write (a `file://` folder below STORAGE_MIN_FREE_BYTES free, an S3 bucket that refuses a
PUT), no render worker has warmed up, or the motion table cannot be read.
"""

from __future__ import annotations

from gateway.greenlets import run_all
from gateway.services import Services


def _models(services: Services) -> list[str]:
    return [f"model {name}" for name in services.models.missing_models()]


def _storage(services: Services) -> list[str]:
    problem = services.storage.missing()
    return [f"storage: {problem}"] if problem else []


def _render_workers(services: Services) -> list[str]:
    return [] if services.pool.ready else ["render workers: none warmed up yet"]


def _motions(services: Services) -> list[str]:
    problem = services.catalogue.missing()
    return [problem] if problem else []


def _queue(services: Services) -> list[str]:
    problem = services.queue.missing()  # Redis, when REDIS_URL is set
    return [problem] if problem else []


CHECKS = (_models, _storage, _render_workers, _motions, _queue)


def missing(services: Services) -> list[str]:
    """Everything that keeps this worker from serving; [] when ready."""
    return [problem for found in run_all(lambda check: check(services), [(c,) for c in CHECKS])
            for problem in found]  # fmt: skip
