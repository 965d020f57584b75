"""Prometheus metrics, correct across gunicorn workers (prometheus_client multiprocess mode).

gunicorn.conf.py sets PROMETHEUS_MULTIPROC_DIR before any worker imports this module;
each worker then writes its samples to files there and /metrics sums them. Without that
variable (tests using Flask's test client, a notebook) the process's own registry is used.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from gateway.errors import QueueUnavailable
from gateway.jobs.queue import LATENCY_BUCKETS, JobQueue

STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)

REQUESTS = Counter(
    "gateway_requests_total", "HTTP requests answered", ["route", "method", "status"]
)
REQUEST_SECONDS = Histogram(
    "gateway_request_seconds", "Whole request latency", ["route"], buckets=STAGE_BUCKETS
)
STAGE_SECONDS = Histogram(
    "gateway_stage_seconds",
    "Latency of each /animate stage (lookup, decode, detect, pose, rig, render, upload)",
    ["stage"],
    buckets=STAGE_BUCKETS,
)
IN_FLIGHT = Gauge(
    "gateway_inflight_requests", "Animate requests being processed", multiprocess_mode="livesum"
)
QUEUE_DEPTH = Gauge(
    "gateway_queue_depth", "Animate requests waiting for a slot", multiprocess_mode="livesum"
)
RENDER_WORKERS_BUSY = Gauge(
    "gateway_render_workers_busy", "Render worker processes running a task",
    multiprocess_mode="livesum",
)  # fmt: skip
TORCHSERVE_ERRORS = Counter(
    "gateway_torchserve_errors_total", "Failed TorchServe calls", ["role", "kind"]
)
STORAGE_ERRORS = Counter("gateway_storage_errors_total", "Failed storage calls", ["operation"])
CACHE_HITS = Counter("gateway_cache_hits_total", "Animate requests answered from storage")
FIGURE_MASKS = Counter(
    "gateway_figure_masks_total",
    "Figure masks made (/animate and /annotate), by the source of the one used: learned (the "
    "segmenter), opencv (no segmenter served, it failed, or the two agreed), given (the client's)",
    ["source"],
)
FIGURE_WARNINGS = Counter(
    "gateway_figure_warnings_total",
    "Figure masks that looked implausible, and figures whose joints rigging changed, by "
    "warning code",
    ["code"],
)  # fmt: skip
CROPS_GROWN = Counter(
    "gateway_crops_grown_total",
    "Figures cropped again around the whole drawing: the detector had boxed a part of it "
    "(animation.crop.whole_drawing)",
)
SEGMENTER_FALLBACKS = Counter(
    "gateway_segmenter_fallbacks_total",
    "Requests whose segmenter call failed and that went on with the OpenCV mask, by reason "
    "(the error code of the call, or bad_mask for an answer that is no mask of the crop)",
    ["reason"],
)


class JobMetrics:
    """The job queue's figures, read from the queue at each scrape (Redis holds those of
    every worker; the embedded queue, this process's): jobs queued and running, dead
    letters, jobs ended by status, retries, and the submit-to-end latency."""

    def __init__(self, queue: JobQueue) -> None:
        self.queue = queue

    def collect(self) -> Iterator:
        try:
            depth, stats = self.queue.depth(), self.queue.stats()
        except QueueUnavailable:  # /ready says so; the rest of /metrics still answers
            return
        jobs = GaugeMetricFamily("gateway_jobs", "Jobs accepted and not ended", labels=["state"])
        jobs.add_metric(["queued"], depth.queued)
        jobs.add_metric(["running"], depth.running)
        yield jobs
        yield GaugeMetricFamily(
            "gateway_jobs_dead_letters", "Jobs in the dead-letter stream", value=depth.dead
        )
        ended = CounterMetricFamily("gateway_jobs_ended", "Jobs that ended", labels=["status"])
        for status in ("done", "failed"):
            ended.add_metric([status], stats.get(status, 0.0))
        yield ended
        yield CounterMetricFamily(
            "gateway_job_retries", "Tries of jobs that failed and were queued again",
            value=stats.get("retries", 0.0),
        )  # fmt: skip
        buckets = [(f"{b:g}", stats.get(f"le:{b:g}", 0.0)) for b in LATENCY_BUCKETS]
        count = stats.get("latency_count", 0.0)
        yield HistogramMetricFamily(
            "gateway_job_seconds", "Jobs' time from submission to their end",
            buckets=[*buckets, ("+Inf", count)], sum_value=stats.get("latency_sum", 0.0),
        )  # fmt: skip


def exposition(*collectors: JobMetrics) -> tuple[bytes, str]:
    """The text format of every metric, summed over all gunicorn workers, and those the
    `collectors` read at this scrape."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    extra = CollectorRegistry()
    for collector in collectors:
        extra.register(collector)
    return generate_latest(registry) + generate_latest(extra), CONTENT_TYPE_LATEST
