"""GET /motions: the motion table (name, group, duration, frames at the default fps); GET
/motions/<name>/preview.gif: a small animated preview of each, on a generated figure."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from animation.version import renderer_version
from gateway.errors import NotFound
from gateway.services import current_services

bp = Blueprint("motions", __name__)
PREVIEW_MAX_AGE_S = 24 * 3600


@bp.get("/motions")
def motions() -> Response:
    catalogue = current_services().catalogue
    return jsonify(motions=catalogue.summary, defaults=list(catalogue.defaults))


@bp.get("/motions/<name>/preview.gif")
def preview(name: str) -> Response:
    services = current_services()
    try:
        gif = services.catalogue.preview(name, services.pool)
    except KeyError:
        raise NotFound(f"no motion named {name!r}") from None
    response = Response(gif, mimetype="image/gif")
    response.headers["Cache-Control"] = f"public, max-age={PREVIEW_MAX_AGE_S}"
    response.set_etag(f"{services.catalogue.versions[name]}-{renderer_version()}")
    return response.make_conditional(request)
