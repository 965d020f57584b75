"""Every setting of the gateway, read from the environment in this one place (12-factor).

Each variable has a default that works for `make run` on one machine: TorchServe on
127.0.0.1:8080/8081 and GIFs stored under ./var/animations, served by the gateway itself.
The model table the MODEL_TABLE setting names is read by gateway/backends/model_table.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL_TABLE = PACKAGE_DIR / "models.yaml"


class ConfigError(ValueError):
    """A setting that cannot be used; raised at start-up, never per request."""


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Config:
    torchserve_url: str = "http://127.0.0.1:8080"
    torchserve_management_url: str = "http://127.0.0.1:8081"
    model_table: Path = DEFAULT_MODEL_TABLE
    storage_url: str = "file://./var/animations"
    s3_endpoint_url: str | None = None
    public_base_url: str | None = None
    presign_expiry_s: int = 24 * 3600
    max_upload_bytes: int = 10 * 1024 * 1024
    max_pixels: int = 40_000_000
    read_timeout_s: float = 60.0  # the whole body must arrive within this, else 408
    storage_min_free_bytes: int = 100 * 1024 * 1024  # file:// storage: /ready fails below
    max_inflight: int = 0  # 0: twice the render workers
    max_queue: int = 0  # 0: twice max_inflight
    queue_timeout_s: float = 30.0
    retry_after_s: int = 2
    refusal_hold_s: float = 0.04  # a full house's 503 is sent this long after the request came
    render_workers: int = 0  # 0: one per core
    model_timeout_s: float = 10.0
    # CPU seconds the figure stage's own work (decoding, the mask) may take per request;
    # past it the cheapest sound path is taken (see rendering/figures.py).
    figure_budget_s: float = 1.0
    storage_timeout_s: float = 10.0
    default_motions: tuple[str, ...] = ()  # empty: the motion table's defaults
    motions_dir: Path | None = None  # every *.bvh in it joins the motion table at start
    api_key: str | None = field(default=None, repr=False)
    model_input_px: int = 1000
    log_level: str = "INFO"
    # Jobs (gateway/jobs/): Redis Streams when REDIS_URL is set, else a queue in the process.
    redis_url: str | None = field(default=None, repr=False)  # may carry a password
    job_visibility_s: float = 60.0  # a claimed job idle this long is taken over
    job_max_tries: int = 3  # then the job fails and goes to the dead-letter stream
    job_ttl_s: int = 7 * 24 * 3600  # a finished job's record is kept this long
    job_concurrency: int = 0  # jobs at once per worker; 0: one per render worker
    max_queued_jobs: int = 1000  # accepted and not finished; past it POST /jobs gets 503
    worker_grace_s: float = 30.0  # SIGTERM: finish the current jobs this long, then hand back
    callback_secret: str | None = field(default=None, repr=False)  # HMAC key; None: no callbacks
    callback_allow_hosts: tuple[str, ...] = ()  # hosts/IPs/CIDRs allowed over http or private
    callback_tries: int = 5
    callback_backoff_s: float = 1.0  # doubled after each failed try

    @property
    def api_keys(self) -> tuple[str, ...]:
        """API_KEY's keys (comma-separated: one per client, or an old and a new)."""
        return tuple(k.strip() for k in (self.api_key or "").split(",") if k.strip())

    def __post_init__(self) -> None:
        workers = self.render_workers or _cpu_count()
        inflight = self.max_inflight or 2 * workers
        object.__setattr__(self, "render_workers", workers)
        object.__setattr__(self, "max_inflight", inflight)
        object.__setattr__(self, "max_queue", self.max_queue or 2 * inflight)
        object.__setattr__(self, "job_concurrency", self.job_concurrency or workers)
        for name in ("max_upload_bytes", "max_pixels", "read_timeout_s", "model_timeout_s",
                     "storage_timeout_s", "queue_timeout_s", "figure_budget_s",
                     "job_visibility_s", "job_max_tries", "job_ttl_s", "max_queued_jobs",
                     "callback_tries", "callback_backoff_s"):  # fmt: skip
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name.upper()} must be positive")
        if not 0 <= self.refusal_hold_s <= 1:
            raise ConfigError("REFUSAL_HOLD_S must be between 0 and 1")
        if self.storage_min_free_bytes < 0:
            raise ConfigError("STORAGE_MIN_FREE_BYTES must not be negative")
        if self.motions_dir is not None and not self.motions_dir.is_dir():
            raise ConfigError(f"MOTIONS_DIR {str(self.motions_dir)!r} is not a directory")
        if self.worker_grace_s < 0:
            raise ConfigError("WORKER_GRACE_S must not be negative")
        if self.redis_url is not None and not self.redis_url.startswith(
            ("redis://", "rediss://", "unix://")
        ):
            raise ConfigError("REDIS_URL must be redis://, rediss:// or unix://")
        if not self.storage_url.startswith(("file://", "s3://")):
            raise ConfigError(
                f"STORAGE_URL must be file://PATH or s3://bucket/prefix, got {self.storage_url!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Build the configuration from environment variables (unset or empty: default)."""
        env = {k: v for k, v in (os.environ if environ is None else environ).items() if v != ""}

        def number(name: str, kind: type, default: float) -> float:
            try:
                return kind(env.get(name, default))
            except ValueError as exc:
                raise ConfigError(f"{name} must be a number, got {env[name]!r}") from exc

        d = cls.__dataclass_fields__
        motions = env.get("DEFAULT_MOTIONS", "")
        return cls(
            torchserve_url=env.get("TORCHSERVE_URL", d["torchserve_url"].default).rstrip("/"),
            torchserve_management_url=env.get(
                "TORCHSERVE_MANAGEMENT_URL", d["torchserve_management_url"].default
            ).rstrip("/"),
            model_table=Path(env.get("MODEL_TABLE", DEFAULT_MODEL_TABLE)),
            storage_url=env.get("STORAGE_URL", d["storage_url"].default),
            s3_endpoint_url=env.get("S3_ENDPOINT_URL"),
            public_base_url=env.get("PUBLIC_BASE_URL", "").rstrip("/") or None,
            presign_expiry_s=int(number("PRESIGN_EXPIRY_S", int, d["presign_expiry_s"].default)),
            max_upload_bytes=int(number("MAX_UPLOAD_BYTES", int, d["max_upload_bytes"].default)),
            max_pixels=int(number("MAX_PIXELS", int, d["max_pixels"].default)),
            read_timeout_s=number("READ_TIMEOUT_S", float, d["read_timeout_s"].default),
            storage_min_free_bytes=int(
                number("STORAGE_MIN_FREE_BYTES", int, d["storage_min_free_bytes"].default)
            ),
            max_inflight=int(number("MAX_INFLIGHT", int, 0)),
            max_queue=int(number("MAX_QUEUE", int, 0)),
            queue_timeout_s=number("QUEUE_TIMEOUT_S", float, d["queue_timeout_s"].default),
            retry_after_s=int(number("RETRY_AFTER_S", int, d["retry_after_s"].default)),
            refusal_hold_s=number("REFUSAL_HOLD_S", float, d["refusal_hold_s"].default),
            render_workers=int(number("RENDER_WORKERS", int, 0)),
            model_timeout_s=number("MODEL_TIMEOUT_S", float, d["model_timeout_s"].default),
            figure_budget_s=number("FIGURE_BUDGET_S", float, d["figure_budget_s"].default),
            storage_timeout_s=number("STORAGE_TIMEOUT_S", float, d["storage_timeout_s"].default),
            default_motions=tuple(m.strip() for m in motions.split(",") if m.strip()),
            motions_dir=Path(env["MOTIONS_DIR"]).resolve() if "MOTIONS_DIR" in env else None,
            api_key=env.get("API_KEY"),
            model_input_px=int(number("MODEL_INPUT_PX", int, d["model_input_px"].default)),
            log_level=env.get("LOG_LEVEL", d["log_level"].default).upper(),
            redis_url=env.get("REDIS_URL"),
            job_visibility_s=number("JOB_VISIBILITY_S", float, d["job_visibility_s"].default),
            job_max_tries=int(number("JOB_MAX_TRIES", int, d["job_max_tries"].default)),
            job_ttl_s=int(number("JOB_TTL_S", int, d["job_ttl_s"].default)),
            job_concurrency=int(number("JOB_CONCURRENCY", int, 0)),
            max_queued_jobs=int(number("MAX_QUEUED_JOBS", int, d["max_queued_jobs"].default)),
            worker_grace_s=number("WORKER_GRACE_S", float, d["worker_grace_s"].default),
            callback_secret=env.get("CALLBACK_SECRET"),
            callback_allow_hosts=tuple(
                h.strip().lower()
                for h in env.get("CALLBACK_ALLOW_HOSTS", "").split(",")
                if h.strip()
            ),
            callback_tries=int(number("CALLBACK_TRIES", int, d["callback_tries"].default)),
            callback_backoff_s=number("CALLBACK_BACKOFF_S", float, d["callback_backoff_s"].default),
        )
