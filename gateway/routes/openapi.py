"""GET /openapi.json: the API as OpenAPI 3.1, generated from the app's routes, the request
options and the error classes (gateway/openapi.py)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from gateway import openapi

bp = Blueprint("openapi", __name__)


@bp.get("/openapi.json")
def openapi_document() -> Response:
    return jsonify(openapi.document(current_app._get_current_object()))
