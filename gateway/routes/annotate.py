"""POST /annotate: a drawing in, what the service sees in it out (box, joints, outline,
warnings), in the upload's pixels, for an app or the page to show and let a person fix.

The same admission, limits and errors as /animate (its hooks and its `receive`), no render.
"""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request

from gateway.parsing import parse_annotate_request
from gateway.routes.animate import receive, require_api_key
from gateway.services import current_services
from gateway.shedding import refuse_when_full

bp = Blueprint("annotate", __name__)
bp.before_request(require_api_key)
bp.before_request(refuse_when_full)


@bp.post("/annotate")
def annotate() -> Response:
    job = receive(parse_annotate_request)
    client = request.environ.get("gunicorn.socket")
    return jsonify(current_services().pipeline.annotate(job, g.timer, client))
