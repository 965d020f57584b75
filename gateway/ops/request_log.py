"""Around every request: its id, its stage timer, and afterwards its headers, metrics and
one JSON access-log line (id, method, path, status, duration, stage timings)."""

from __future__ import annotations

import logging
import re
import time
import uuid

from flask import Flask, Response, g, request

from gateway.ops import metrics
from gateway.ops.stage_timer import StageTimer

access_log = logging.getLogger("gateway.access")
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def request_id(given: str) -> str:
    """The client's X-Request-ID when it is a sane one, else a new id."""
    return given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def register_request_hooks(app: Flask) -> None:
    @app.before_request
    def start_request() -> None:
        g.request_id = request_id(request.headers.get("X-Request-ID", ""))
        g.timer = StageTimer()
        g.started = time.perf_counter()

    @app.after_request
    def finish_request(response: Response) -> Response:
        elapsed = time.perf_counter() - g.get("started", time.perf_counter())
        response.headers["X-Request-ID"] = g.get("request_id", "")
        timer: StageTimer | None = g.get("timer")
        if timer and timer.stages:
            response.headers["Server-Timing"] = timer.server_timing()
        route = request.url_rule.rule if request.url_rule else "unmatched"
        metrics.REQUESTS.labels(route, request.method, str(response.status_code)).inc()
        metrics.REQUEST_SECONDS.labels(route).observe(elapsed)
        access_log.info(
            "%s %s %s", request.method, request.path, response.status_code,
            extra={
                "request_id": g.get("request_id"), "method": request.method,
                "path": request.path, "status": response.status_code,
                "duration_ms": round(elapsed * 1000, 1),
                "stages_ms": timer.as_ms() if timer else {},
            },
        )  # fmt: skip
        return response
