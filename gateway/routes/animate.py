"""POST /animate (and POST /, the route the Android app calls): a drawing in, GIF URLs out.

Admission order, cheapest refusal first: the API key; a full house (every render slot and
the queue taken) refused before a byte of the body is read; the body received within its
size and time limits (no slot held meanwhile); the options and the image's header checked;
storage asked (an answer from storage takes no slot); only then a render slot.
"""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request

from animation.images import read_header
from gateway.api_key import bearer_matches
from gateway.body import body_limit, read_body
from gateway.errors import Unauthorized
from gateway.parsing import parse_animate_request, read_upload
from gateway.services import current_services
from gateway.shedding import refuse_when_full

bp = Blueprint("animate", __name__)


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


@bp.post("/animate")
@bp.post("/")
def animate() -> Response:
    services = current_services()
    config, catalogue = services.config, services.catalogue
    with g.timer.stage("receive"):
        limit = body_limit(request.mimetype, config.max_upload_bytes)
        body = read_body(request, limit, config.read_timeout_s)
    with g.timer.stage("decode"):
        upload = read_upload(
            body, request.mimetype, request.mimetype_params, config.max_upload_bytes
        )
        job = parse_animate_request(
            upload, request.args.to_dict(), catalogue.names, catalogue.defaults
        )
        read_header(job.image, config.max_pixels)  # refuses bombs and odd shapes undecoded
    client = request.environ.get("gunicorn.socket")
    return jsonify(services.pipeline.run(job, g.timer, request.host_url, client))
