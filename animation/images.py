"""The one image decoding policy: which uploads are accepted and how they become RGB pixels.

Used by the gateway (on the upload) and by the TorchServe handlers (on what they are sent),
so both refuse the same images with the same words. numpy and Pillow only: a model archive
carries this file to a model server that has nothing else of the project.

Policy:
- formats: PNG, JPEG (MPO, a phone's multi-picture JPEG, is one) and WebP; anything else,
  even an image Pillow could read, is refused;
- limits, from the header before any pixel is decoded: at most `max_pixels` pixels and
  sides at most `MAX_ASPECT`:1 apart (beyond that a letterboxed model input would be a few
  pixels thick);
- the picture is turned upright by its EXIF orientation;
- colour: any mode becomes 8-bit RGB; 16-bit grey is scaled (65535 -> 255), never clipped;
  transparency is composited onto white paper.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

ACCEPTED_FORMATS = frozenset({"PNG", "JPEG", "MPO", "WEBP"})
MAX_PIXELS = 40_000_000  # the gateway's MAX_PIXELS default
MAX_ASPECT = 50  # longer side / shorter side
PAPER_WHITE = (255, 255, 255)
_QUARTER_TURNS = (5, 6, 7, 8)  # EXIF orientations whose upright picture is transposed
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L")


class ImageRejected(ValueError):
    """An upload the policy refuses; `status` and `code` say how an HTTP API answers it."""

    status = 400
    code = "invalid_image"


class InvalidImage(ImageRejected):
    """Not an image, or a truncated or corrupt one, or one of unusable shape."""


class ImageTooLarge(ImageRejected):
    status = 413
    code = "image_too_large"


class UnreadableMask(ImageRejected):
    """A figure's mask (a PNG a person fixed) whose pixels cannot be decoded."""

    code = "bad_request"


class UnsupportedImage(ImageRejected):
    """An image, but in a format we do not let untrusted bytes reach (GIF, TIFF, BMP...)."""

    status = 415
    code = "unsupported_media_type"


@dataclass(frozen=True)
class ImageHeader:
    """What the header says: the format and the size as stored (before any EXIF turn)."""

    format: str
    width: int
    height: int


@dataclass(frozen=True)
class DecodedImage:
    rgb: np.ndarray  # (H, W, 3) uint8, upright
    scale: float  # rgb pixels per pixel of the upright upload (< 1 when shrunk to max_side)
    size: tuple[int, int]  # (width, height) of the upright upload, before any shrinking


def _open(data: bytes, max_pixels: int) -> tuple[Image.Image, ImageHeader]:
    """Pillow's lazy image (nothing decoded yet) and its header, after every header check."""
    if not data:
        raise InvalidImage("the image is empty")
    try:
        with warnings.catch_warnings():
            # The pixel limit below replaces Pillow's decompression-bomb warning.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:  # Pillow's own hard limit, far above ours
        raise ImageTooLarge(f"image has more than {max_pixels} pixels") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise InvalidImage("not a PNG, JPEG or WebP image") from None
    if image.format not in ACCEPTED_FORMATS:
        raise UnsupportedImage(f"{image.format} images are not accepted; send PNG, JPEG or WebP")
    width, height = image.size
    if width < 1 or height < 1:
        raise InvalidImage("image has no pixels")
    if width * height > max_pixels:
        raise ImageTooLarge(f"image is {width}x{height}, more than {max_pixels} pixels")
    if max(width, height) > MAX_ASPECT * min(width, height):
        raise InvalidImage(f"image is {width}x{height}: sides further apart than {MAX_ASPECT}:1")
    return image, ImageHeader(image.format, width, height)


def read_header(data: bytes, max_pixels: int = MAX_PIXELS) -> ImageHeader:
    """Format and upright size from the header alone; raises before any pixel is decoded."""
    return _open(data, max_pixels)[1]


def decode_image(
    data: bytes, max_pixels: int = MAX_PIXELS, max_side: int | None = None
) -> DecodedImage:
    """The upload upright as RGB uint8 (H, W, 3), shrunk so its longest side is <= `max_side`."""
    image, header = _open(data, max_pixels)
    width, height = header.width, header.height
    scale = 1.0 if max_side is None else min(1.0, max_side / max(width, height))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # odd EXIF blocks warn; the orientation is enough
            if scale < 1.0 and image.format in ("JPEG", "MPO"):
                # libjpeg decodes at 1/2, 1/4 or 1/8 scale: a big photo costs a fraction.
                image.draft(image.mode, (int(width * scale), int(height * scale)))
            image.load()
            # Read once loaded: a PNG's getexif() before load() would decode it all.
            if image.getexif().get(ExifTags.Base.Orientation, 1) in _QUARTER_TURNS:
                width, height = height, width
            image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError, EOFError):
        raise InvalidImage("truncated or corrupt image data") from None
    rgb = to_rgb(image)
    if scale == 1.0:
        return DecodedImage(np.asarray(rgb, dtype=np.uint8), 1.0, (width, height))
    target = (max(1, round(width * scale)), max(1, round(height * scale)))
    if rgb.size != target:
        rgb = rgb.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return DecodedImage(np.asarray(rgb, dtype=np.uint8), target[0] / width, (width, height))


def decode_mask(png: bytes) -> np.ndarray:
    """(H, W) bool: the non-zero pixels of a mask PNG (its size was checked with its box)."""
    try:
        with Image.open(io.BytesIO(png)) as image:
            return np.asarray(image.convert("L")) > 0
    except (OSError, ValueError, SyntaxError) as exc:
        raise UnreadableMask(f"mask 'png' cannot be decoded: {exc}") from None


def to_rgb(image: Image.Image) -> Image.Image:
    """Any mode Pillow decodes -> 8-bit RGB: 16-bit scaled down, transparency on white paper."""
    if image.mode in (*_SIXTEEN_BIT, "I", "F"):
        # Pillow's own convert("L") clips wide values instead of scaling them. A 16-bit mode
        # spans 0..65535; a 32-bit one ("I", "F") says nothing, so its values tell.
        values = np.asarray(image, dtype=np.float64)
        wide = image.mode in _SIXTEEN_BIT or values.max(initial=0) > 255
        gray = np.clip(values * (255.0 / (65535.0 if wide else 255.0)), 0, 255)
        image = Image.fromarray(np.round(gray).astype(np.uint8), "L")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, PAPER_WHITE + (255,))
        return Image.alpha_composite(paper, rgba).convert("RGB")
    return image.convert("RGB")
