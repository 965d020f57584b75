"""GET /health (liveness), /ready (readiness) and /metrics (Prometheus)."""

from __future__ import annotations

import gevent
from flask import Blueprint, Response, jsonify

from gateway import metrics
from gateway.app import gateway

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> Response:
    """Alive: touches no dependency, so a busy pod is never mistaken for a dead one."""
    return jsonify(status="ok")


@bp.get("/ready")
def ready() -> Response:
    """200 when TorchServe has READY workers for both models, storage answers and the
    render workers are up; else 503 naming what is missing."""
    gw = gateway()
    checks = [gevent.spawn(gw.models.missing_models), gevent.spawn(gw.storage.missing)]
    gevent.joinall(checks)
    missing = [f"model {name}" for name in checks[0].value or []]
    if checks[1].value:
        missing.append(f"storage: {checks[1].value}")
    if gw.pool.ready == 0:
        missing.append("render workers: none warmed up yet")
    if problem := gw.catalogue.missing():
        missing.append(problem)
    response = jsonify(ready=not missing, missing=missing)
    response.status_code = 503 if missing else 200
    return response


@bp.get("/metrics")
def prometheus() -> Response:
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)
