"""GET /health (liveness), /ready (readiness) and /metrics (Prometheus)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from gateway.ops import metrics, readiness
from gateway.services import current_services

bp = Blueprint("health", __name__)


@bp.get("/health")
def health() -> Response:
    """Alive: touches no dependency, so a busy pod is never mistaken for a dead one."""
    return jsonify(status="ok")


@bp.get("/ready")
def ready() -> Response:
    """200 when every dependency can serve (gateway/ops/readiness.py); else 503 naming each."""
    missing = readiness.missing(current_services())
    response = jsonify(ready=not missing, missing=missing)
    response.status_code = 503 if missing else 200
    return response


@bp.get("/metrics")
def prometheus() -> Response:
    body, content_type = metrics.exposition(metrics.JobMetrics(current_services().queue))
    return Response(body, content_type=content_type)
