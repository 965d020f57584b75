"""GET /files/<key>: the stored GIFs, when the local-folder storage is in use."""

from __future__ import annotations

from flask import Blueprint, Response, send_from_directory

from gateway.errors import NotFound
from gateway.services import current_services
from gateway.storage import FileStorage

bp = Blueprint("files", __name__)


@bp.get("/files/<path:key>")
def stored_file(key: str) -> Response:
    storage = current_services().storage
    if not isinstance(storage, FileStorage) or not key.endswith(".gif"):
        raise NotFound("no such file")
    # send_from_directory joins safely: '..', absolute paths and the like give a 404.
    return send_from_directory(storage.root, key, mimetype="image/gif", max_age=31536000)
