"""The routes that take a drawing: POST /animate (and POST /, the route the Android app
calls) answers one URL per motion; POST /annotate answers what the service sees in the
drawing (box, joints, outline, warnings) in the upload's pixels, for an app or the page to
show and let a person fix. Both have the same admission, limits and errors.

Admission order, cheapest refusal first: the API key; a full house (every render slot and
the queue taken; gateway/admission.py) refused before a byte of the body is read; the body
received within its size and time limits (no slot held meanwhile); the options and the
image's header checked; then the pipeline (gateway/rendering/pipeline.py): storage asked
(an answer from storage takes no slot), and only then a render slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import Blueprint, Response, g, jsonify, request

from animation.images import read_header
from gateway.errors import Unauthorized
from gateway.rendering.figures import FIGURE_WARNINGS_HEADER
from gateway.services import current_services
from gateway.web.requests import AnimateRequest, parse_animate_request, parse_annotate_request
from gateway.web.security import matching_key
from gateway.web.upload import Upload, body_limit, read_body, read_upload

bp = Blueprint("drawings", __name__)
T = TypeVar("T")


def caller_key() -> str | None:
    """The API key the request carries (None when API_KEY is unset)."""
    keys = current_services().config.api_keys
    return matching_key(request.headers.get("Authorization", ""), keys) if keys else None


@bp.before_request
def require_api_key() -> None:
    if current_services().config.api_keys and caller_key() is None:
        raise Unauthorized(
            "this route needs 'Authorization: Bearer <API key>'",
            headers={"WWW-Authenticate": 'Bearer realm="animate"'},
        )


@bp.before_request
def refuse_when_full() -> None:
    """After the key: nothing could start rendering soon, so refuse now, before the body
    is read (the gunicorn worker refuses most such requests before they get here)."""
    admission = current_services().admission
    client = request.environ.get("gunicorn.socket")
    if admission.at_head(request.method, request.path, request.headers, client):
        raise admission.refusal()


def receive_body() -> bytes:
    """The request's body, received whole within its size and time limits."""
    config = current_services().config
    with g.timer.stage("receive"):
        limit = body_limit(request.mimetype, config.max_upload_bytes)
        return read_body(request, limit, config.read_timeout_s, config.max_upload_bytes)


def parse_body(body: bytes, parse: Callable[[Upload, dict], T]) -> T:
    """`parse(upload, query)` of a received body, and the image's header checked."""
    config = current_services().config
    with g.timer.stage("decode"):
        upload = read_upload(
            body, request.mimetype, request.mimetype_params, config.max_upload_bytes
        )
        job = parse(upload, request.args.to_dict())
        read_header(job.image, config.max_pixels)  # refuses bombs and odd shapes undecoded
    return job


def receive(parse: Callable[[Upload, dict], T]) -> T:
    """The request's body received whole within its limits, then `parse(upload, query)`
    and the image's header checked: what every route taking a drawing does first."""
    return parse_body(receive_body(), parse)


def parse_animate(upload: Upload, query: dict) -> AnimateRequest:
    catalogue = current_services().catalogue
    return parse_animate_request(upload, query, catalogue.names, catalogue.defaults)


@bp.post("/animate")
@bp.post("/")
def animate() -> Response:
    services = current_services()
    job = receive(parse_animate)
    client = request.environ.get("gunicorn.socket")
    answer = services.pipeline.run(job, g.timer, request.host_url, client)
    response = jsonify(answer.urls)
    if answer.figure_warnings:  # the body stays keyed by motion
        response.headers[FIGURE_WARNINGS_HEADER] = ",".join(answer.figure_warnings)
    for motion, url in answer.layouts.items():  # format=sprites: each sheet's layout
        response.headers.add("Link", f'<{url}>; rel="describedby"; type="application/json"; '
                                     f'title="{motion}"')  # fmt: skip
    return response


@bp.post("/annotate")
def annotate() -> Response:
    job = receive(parse_annotate_request)
    client = request.environ.get("gunicorn.socket")
    return jsonify(current_services().pipeline.annotate(job, g.timer, client))
