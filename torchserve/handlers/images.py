"""Turn one request body into an RGB uint8 array, or say precisely why it is not an image.

TorchServe hands a handler each request as a dict: a raw body arrives under "body", a
multipart form field under its own name ("data" is the field AnimatedDrawings' clients use).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP")
# Same default as the gateway's MAX_PIXELS; checked from the header, before any pixel is decoded.
MAX_PIXELS = 40_000_000
# Longer side / shorter side: beyond this a letterboxed input would be under 3 pixels thick.
MAX_ASPECT = 50
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


def decode_image(body: bytes, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Decode PNG/JPEG/WebP bytes to an upright (EXIF-applied) RGB uint8 array of shape (H, W, 3)."""
    if not body:
        raise RequestError(400, "InvalidImage", "empty body: expected PNG, JPEG or WebP bytes")
    try:
        with warnings.catch_warnings():
            # Our own pixel limit below replaces Pillow's decompression-bomb warning.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(body))
    except Image.DecompressionBombError:  # Pillow's own hard limit, far above ours
        raise RequestError(
            413, "ImageTooLarge", f"image has more than {max_pixels} pixels"
        ) from None
    except UnidentifiedImageError:
        raise RequestError(400, "InvalidImage", "not a PNG, JPEG or WebP image") from None
    if image.format not in ACCEPTED_FORMATS:
        raise RequestError(
            415,
            "UnsupportedMediaType",
            f"{image.format} images are not accepted: send PNG, JPEG or WebP",
        )
    width, height = image.size
    if width * height > max_pixels:
        raise RequestError(
            413, "ImageTooLarge", f"image is {width}x{height}, more than {max_pixels} pixels"
        )
    if max(width, height) > MAX_ASPECT * min(width, height):
        raise RequestError(
            400,
            "InvalidImage",
            f"image is {width}x{height}: sides further apart than {MAX_ASPECT}:1",
        )
    try:
        image.load()
        image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError):
        raise RequestError(400, "InvalidImage", "truncated or corrupt image data") from None
    return to_rgb(image)


def to_rgb(image: Image.Image) -> np.ndarray:
    """RGB uint8 for any Pillow mode: transparency goes onto white paper, 16-bit scales down."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        wide = np.asarray(image, dtype=np.uint32)
        peak = 65535 if image.mode.startswith("I;16") or wide.max() > 255 else 255
        image = Image.fromarray((wide * 255 // peak).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(paper, rgba)
    return np.asarray(image.convert("RGB"), dtype=np.uint8)
