"""POST /animate (and POST /, the route the Android app calls): a drawing in, GIF URLs out.

Admission order, cheapest refusal first: the API key; a full house (every render slot and
the queue taken) refused before a byte of the body is read; the body received within its
size and time limits (no slot held meanwhile); the options and the image's header checked;
storage asked (an answer from storage takes no slot); only then a render slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import Blueprint, Response, g, jsonify, request

from animation.images import read_header
from gateway.api_key import bearer_matches
from gateway.body import body_limit, read_body
from gateway.errors import Unauthorized
from gateway.figure_stage import FIGURE_WARNINGS_HEADER
from gateway.parsing import Upload, parse_animate_request, read_upload
from gateway.services import current_services
from gateway.shedding import refuse_when_full

bp = Blueprint("animate", __name__)
T = TypeVar("T")


@bp.before_request
def require_api_key() -> None:
    key = current_services().config.api_key
    if not key:
        return
    if not bearer_matches(request.headers.get("Authorization", ""), key):
        raise Unauthorized(
            "this route needs 'Authorization: Bearer <API key>'",
            headers={"WWW-Authenticate": 'Bearer realm="animate"'},
        )


# After the key: a full house is refused before the body is read (gateway/shedding.py).
bp.before_request(refuse_when_full)


def receive(parse: Callable[[Upload, dict], T]) -> T:
    """The request's body received whole within its limits, then `parse(upload, query)`
    and the image's header checked: what every route taking a drawing does first."""
    config = current_services().config
    with g.timer.stage("receive"):
        limit = body_limit(request.mimetype, config.max_upload_bytes)
        body = read_body(request, limit, config.read_timeout_s)
    with g.timer.stage("decode"):
        upload = read_upload(
            body, request.mimetype, request.mimetype_params, config.max_upload_bytes
        )
        job = parse(upload, request.args.to_dict())
        read_header(job.image, config.max_pixels)  # refuses bombs and odd shapes undecoded
    return job


@bp.post("/animate")
@bp.post("/")
def animate() -> Response:
    services = current_services()
    catalogue = services.catalogue
    job = receive(
        lambda upload, query: parse_animate_request(
            upload, query, catalogue.names, catalogue.defaults
        )
    )
    client = request.environ.get("gunicorn.socket")
    answer = services.pipeline.run(job, g.timer, request.host_url, client)
    response = jsonify(answer.urls)
    if answer.figure_warnings:  # the body stays keyed by motion
        response.headers[FIGURE_WARNINGS_HEADER] = ",".join(answer.figure_warnings)
    return response
