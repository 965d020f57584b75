"""Turn one request body into an RGB uint8 array, or say precisely why it is not an image.

TorchServe hands a handler each request as a dict: a raw body arrives under "body", a
multipart form field under its own name ("data" is the field AnimatedDrawings' clients use).
What is accepted, and how it is decoded, is the project's one decoding policy
(`animation/images.py`, which each model archive carries beside this package).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animation import images

BODY_FIELDS = ("data", "body")


@dataclass
class RequestError(Exception):
    """One request's failure, answered alone with `status`: the rest of its batch goes on."""

    status: int
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message

    def as_response(self) -> dict:
        # TorchServe's own error bodies have this shape, so clients parse one format.
        return {"code": self.status, "type": self.kind, "message": self.message}


def request_body(request: dict) -> bytes:
    """The image bytes of one request: multipart field `data` or the raw body."""
    for field in BODY_FIELDS:
        value = request.get(field)
        if value is None:
            continue
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        # TorchServe already parsed a JSON or text body: that is not an image.
        raise RequestError(
            415, "UnsupportedMediaType", "expected PNG, JPEG or WebP bytes, got a text or JSON body"
        )
    raise RequestError(
        400, "BadRequest", "no image: send it as the raw body or multipart field 'data'"
    )


def decode_image(body: bytes, max_pixels: int = images.MAX_PIXELS) -> np.ndarray:
    """PNG/JPEG/WebP bytes -> upright RGB uint8 (H, W, 3), by the shared decoding policy."""
    try:
        return images.decode_image(body, max_pixels).rgb
    except images.ImageRejected as rejected:
        raise RequestError(rejected.status, type(rejected).__name__, str(rejected)) from None
