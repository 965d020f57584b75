"""Receiving a request's body and reading its form: the image, the option fields, other files.

The body is received whole, within a size limit and a time limit, before the request takes
a render slot, so a slow or endless upload costs a greenlet and a socket, never a slot:
past `timeout_s` it is answered 408 `request_timeout`, past `limit` bytes (declared or
streamed) 413 `payload_too_large`, without reading the rest.

Its forms: multipart (the image in field `image`, `file` or `data`), JSON `{"file":
"<base64>"}` (or `"image"`), or a raw `image/png|jpeg|webp` body. What the options mean is
web/options.py's and web/requests.py's business.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
from dataclasses import dataclass, field

import gevent
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser
from werkzeug.wrappers import Request

from gateway.errors import BadRequest, PayloadTooLarge, RequestTimeout, UnsupportedMediaType

READ_CHUNK = 64 * 1024
RAW_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/webp"})
FORM_ALLOWANCE = 64 * 1024  # room for the options beside the image in a form or JSON body


def body_limit(mimetype: str, max_upload_bytes: int) -> int:
    """Largest body accepted: the image itself when raw, else base64-encoded plus the options."""
    if mimetype in RAW_IMAGE_TYPES:
        return max_upload_bytes
    return math.ceil(max_upload_bytes * 4 / 3) + FORM_ALLOWANCE


def too_large(limit: int, max_upload_bytes: int | None = None) -> PayloadTooLarge:
    """413 for a body or an image past `limit` bytes. A form or JSON body's limit is derived
    from the image's (`max_upload_bytes`, the setting a client hears of): both are named."""
    if max_upload_bytes is None or limit == max_upload_bytes:
        return PayloadTooLarge(f"the upload is larger than {limit} bytes")
    return PayloadTooLarge(
        f"the upload is larger than {limit} bytes, the most a form or JSON body may be: "
        f"an image of at most {max_upload_bytes} bytes, base64-encoded, with its options"
    )


def read_body(
    request: Request, limit: int, timeout_s: float, max_upload_bytes: int | None = None
) -> bytes:
    """Every byte of the request's body, or raise 413 / 408 without reading the rest.
    `limit`: `body_limit` of the body's type for images of `max_upload_bytes`."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit, max_upload_bytes)  # declared: refused before a byte is read
    deadline = gevent.Timeout(timeout_s)
    deadline.start()
    chunks, total = [], 0
    try:
        while chunk := request.stream.read(READ_CHUNK):
            total += len(chunk)
            if total > limit:
                raise too_large(limit, max_upload_bytes)
            chunks.append(chunk)
    except gevent.Timeout as expired:
        if expired is not deadline:
            raise
        # What a chunk read still waiting holds is not known here: only the declared size.
        declared = request.content_length
        whole = f" of its {declared} bytes" if declared is not None else ""
        raise RequestTimeout(
            f"the body did not arrive whole{whole} within {timeout_s:g} s"
        ) from None
    except RequestEntityTooLarge:  # Werkzeug's own check of MAX_CONTENT_LENGTH
        raise too_large(limit, max_upload_bytes) from None
    finally:
        deadline.close()
    return b"".join(chunks)


IMAGE_FIELDS = ("image", "file", "data")  # a multipart body's image, the first found
JSON_IMAGE_FIELDS = ("file", "image")  # a JSON body's base64 image, the first found


@dataclass(frozen=True)
class Upload:
    """What a body carried, whatever its form: the image, the option fields, other files."""

    image: bytes
    fields: dict
    files: dict[str, bytes] = field(default_factory=dict)  # other multipart file parts
    filenames: dict[str, str] = field(default_factory=dict)  # the file name each part gave


def _decode_base64(text: object, limit: int) -> bytes:
    if not isinstance(text, str):
        raise BadRequest("JSON field 'file' must be a base64 string")
    if text.startswith("data:") and "," in text:  # a data: URL, as browsers produce
        text = text.split(",", 1)[1]
    if len(text) * 3 // 4 > limit + 3:
        raise too_large(limit)
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("JSON field 'file' is not valid base64") from exc


def _multipart(body: bytes, params: dict, limit: int) -> Upload:
    parser = FormDataParser(stream_factory=lambda *args, **kwargs: io.BytesIO(), silent=False)
    try:
        _, form, files = parser.parse(io.BytesIO(body), "multipart/form-data", len(body), params)
    except RequestEntityTooLarge as exc:
        raise too_large(limit) from exc
    except ValueError as exc:  # no boundary, a broken part
        raise BadRequest(f"the multipart body cannot be read: {exc}") from exc
    parts = {name: files[name].stream.getvalue() for name in files}
    filenames = {name: files[name].filename or "" for name in files}
    image_field = next((f for f in IMAGE_FIELDS if f in parts), None)
    if image_field is None:
        raise BadRequest(f"multipart body needs the image in field {IMAGE_FIELDS[0]!r}")
    image = parts.pop(image_field)
    filenames.pop(image_field)
    if len(image) > limit:
        raise too_large(limit)
    return Upload(image, form.to_dict(), parts, filenames)


def _json(body: bytes, limit: int) -> Upload:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("the body is not valid JSON") from exc
    if not isinstance(document, dict):
        raise BadRequest("the JSON body must be an object")
    image_key = next((f for f in JSON_IMAGE_FIELDS if f in document), None)
    if image_key is None:
        raise BadRequest("the JSON body needs the base64 image in 'file'")
    fields = {k: v for k, v in document.items() if k not in JSON_IMAGE_FIELDS}
    return Upload(_decode_base64(document[image_key], limit), fields)


def read_upload(body: bytes, mimetype: str, params: dict, max_upload_bytes: int) -> Upload:
    """The image and fields of a received body of type `mimetype` (with its `params`)."""
    if mimetype == "multipart/form-data":
        upload = _multipart(body, params, max_upload_bytes)
    elif mimetype == "application/json":
        upload = _json(body, max_upload_bytes)
    elif mimetype in RAW_IMAGE_TYPES:
        if len(body) > max_upload_bytes:
            raise too_large(max_upload_bytes)
        upload = Upload(body, {})
    else:
        raise UnsupportedMediaType(
            f"Content-Type {mimetype or 'none'!r} is not accepted: send multipart/form-data, "
            "application/json or image/png, image/jpeg, image/webp"
        )
    if not upload.image:
        raise BadRequest("the image is empty")
    return upload
