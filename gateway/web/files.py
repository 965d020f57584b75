"""GET /files/<key>: the stored animations, when the local-folder storage is in use.

Each is served with the content type of its format, read from the key's suffix (`.gif`,
`.webp`, `.mp4`); Range requests work (a phone's video player asks for them).
"""

from __future__ import annotations

from flask import Blueprint, Response, send_from_directory

from animation.formats import FORMATS, format_for_path
from gateway.backends.storage import FileStorage
from gateway.errors import NotFound
from gateway.services import current_services

bp = Blueprint("files", __name__)


@bp.get("/files/<path:key>")
def stored_file(key: str) -> Response:
    storage = current_services().storage
    fmt = FORMATS.get(format_for_path(key) or "")
    if not isinstance(storage, FileStorage) or fmt is None or not key.endswith(fmt.suffix):
        raise NotFound("no such file")  # only what the gateway stored: no other name is served
    # send_from_directory joins safely: '..', absolute paths and the like give a 404.
    return send_from_directory(storage.root, key, mimetype=fmt.content_type, max_age=31536000)
