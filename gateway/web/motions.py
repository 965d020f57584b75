"""GET /motions: the motion table (name, duration, frames at the default fps)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from gateway.services import current_services

bp = Blueprint("motions", __name__)


@bp.get("/motions")
def motions() -> Response:
    catalogue = current_services().catalogue
    return jsonify(motions=catalogue.summary, defaults=list(catalogue.defaults))
