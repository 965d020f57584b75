"""POST /animate (and POST /, the route the Android app calls): a drawing in, GIF URLs out."""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, g, jsonify, request

from gateway.app import gateway
from gateway.errors import Unauthorized
from gateway.parsing import parse_animate_request
from gateway.preprocess import probe_image

bp = Blueprint("animate", __name__)


@bp.before_request
def require_api_key() -> None:
    key = gateway().config.api_key
    if not key:
        return
    given = request.headers.get("Authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), key.encode()):
        raise Unauthorized(
            "this route needs 'Authorization: Bearer <API key>'",
            headers={"WWW-Authenticate": 'Bearer realm="animate"'},
        )


@bp.post("/animate")
@bp.post("/")
def animate() -> Response:
    gw = gateway()
    with gw.admission.admit():
        with g.timer.stage("decode"):
            job = parse_animate_request(
                request, gw.config.max_upload_bytes, gw.catalogue.names, gw.catalogue.defaults
            )
            probe_image(job.image, gw.config.max_pixels)  # header only: refuse bombs undecoded
        client = request.environ.get("gunicorn.socket")
        urls = gw.pipeline.run(job, g.timer, request.host_url, client)
    return jsonify(urls)
