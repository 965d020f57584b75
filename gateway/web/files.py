"""GET /files/<key>: the stored animations, when the local-folder storage is in use.

Each is served with the content type of its format, read from the key's suffix (`.gif`,
`.webp`, `.mp4`, `.png`, `.zip`, and a sprite sheet's layout `.json`); Range requests work
(a phone's video player asks for them).
"""

from __future__ import annotations

from flask import Blueprint, Response, send_from_directory

from animation.formats import FORMATS, LAYOUT_SUFFIX, format_for_path
from gateway.backends.storage import FileStorage
from gateway.errors import NotFound
from gateway.services import current_services

bp = Blueprint("files", __name__)


@bp.get("/files/<path:key>")
def stored_file(key: str) -> Response:
    storage = current_services().storage
    fmt = FORMATS.get(format_for_path(key) or "")
    if key.endswith(LAYOUT_SUFFIX):  # a sprite sheet's layout
        mimetype = "application/json"
    elif fmt is not None and key.endswith(fmt.suffix):
        mimetype = fmt.content_type
    else:
        mimetype = None
    if not isinstance(storage, FileStorage) or mimetype is None:
        raise NotFound("no such file")  # only what the gateway stored: no other name is served
    # send_from_directory joins safely: '..', absolute paths and the like give a 404.
    return send_from_directory(storage.root, key, mimetype=mimetype, max_age=31536000)
