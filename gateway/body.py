"""Receiving a request's body: all of it, within a size limit and a time limit, or an error.

Runs before the request takes a render slot, so a slow or endless upload costs a greenlet
and a socket, never a slot: past `timeout_s` it is answered 408 `request_timeout`, past
`limit` bytes (declared or streamed) 413 `payload_too_large`, without reading the rest.
"""

from __future__ import annotations

import math

import gevent
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

from gateway.errors import PayloadTooLarge, RequestTimeout

READ_CHUNK = 64 * 1024
RAW_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/webp"})
FORM_ALLOWANCE = 64 * 1024  # room for the options beside the image in a form or JSON body


def body_limit(mimetype: str, max_upload_bytes: int) -> int:
    """Largest body accepted: the image itself when raw, else base64-encoded plus the options."""
    if mimetype in RAW_IMAGE_TYPES:
        return max_upload_bytes
    return math.ceil(max_upload_bytes * 4 / 3) + FORM_ALLOWANCE


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the upload is larger than {limit} bytes")


def read_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """Every byte of the request's body, or raise 413 / 408 without reading the rest."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)  # declared: refused before a byte is read
    deadline = gevent.Timeout(timeout_s)
    deadline.start()
    chunks, total = [], 0
    try:
        while chunk := request.stream.read(READ_CHUNK):
            total += len(chunk)
            if total > limit:
                raise too_large(limit)
            chunks.append(chunk)
    except gevent.Timeout as expired:
        if expired is not deadline:
            raise
        raise RequestTimeout(
            f"the body did not arrive within {timeout_s:g} s ({total} bytes received)"
        ) from None
    except RequestEntityTooLarge:  # Werkzeug's own check of MAX_CONTENT_LENGTH
        raise too_large(limit) from None
    finally:
        deadline.close()
    return b"".join(chunks)
