"""Image preprocessing: limits, decoding, orientation, colour normalisation, scaling, cropping.

Pure functions over bytes and numpy arrays. `probe_image` only reads the header, so the
pixel limit is enforced before any pixel is decoded; `decode_for_models` is the CPU-heavy
part and runs in a render worker process, off the gevent hub.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from animation.crop import CROP_MARGIN
from animation.crop import crop_box as animation_crop_box
from gateway.errors import ImageTooLarge, InvalidImage

# Decoders we let untrusted bytes reach. Phones send JPEG (MPO is a multi-picture JPEG).
ALLOWED_FORMATS = frozenset({"PNG", "JPEG", "MPO", "WEBP"})
PAPER_WHITE = (255, 255, 255)


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int
    height: int


@dataclass(frozen=True)
class ModelImage:
    """The upload, upright, RGB, scaled so its longest side is at most the model input size."""

    rgb: np.ndarray  # (H, W, 3) uint8
    scale: float  # rgb pixels per pixel of the upright upload
    jpeg: bytes  # `rgb` encoded for the detector


def _open(data: bytes, max_pixels: int) -> Image.Image:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ImageTooLarge(f"image has more than {max_pixels} pixels") from exc
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise InvalidImage("the body is not a PNG, JPEG or WebP image") from exc
    if image.format not in ALLOWED_FORMATS:
        raise InvalidImage(f"{image.format} images are not accepted; send PNG, JPEG or WebP")
    width, height = image.size
    if width < 1 or height < 1:
        raise InvalidImage("image has no pixels")
    if width * height > max_pixels:
        raise ImageTooLarge(f"image is {width}x{height}, more than {max_pixels} pixels")
    return image


def probe_image(data: bytes, max_pixels: int) -> ImageInfo:
    """Format and size from the header alone; raises before any pixel is decoded."""
    image = _open(data, max_pixels)
    return ImageInfo(image.format, image.width, image.height)


def to_rgb(image: Image.Image) -> Image.Image:
    """Any mode Pillow decodes -> 8-bit RGB; transparency becomes white paper."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        # 16-bit (or wider) grayscale: Pillow's own convert("L") clips instead of scaling.
        values = np.asarray(image, dtype=np.float64)
        top = 65535.0 if values.max(initial=0) > 255 else 255.0
        gray = np.clip(values * (255.0 / top), 0, 255).astype(np.uint8)
        return Image.fromarray(gray, "L").convert("RGB")
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        image = image.convert("RGBA")
        paper = Image.new("RGBA", image.size, PAPER_WHITE + (255,))
        return Image.alpha_composite(paper, image).convert("RGB")
    return image.convert("RGB")


def decode_for_models(data: bytes, max_pixels: int, max_side: int) -> ModelImage:
    """Decode the upload upright into RGB at most `max_side` px long, plus its JPEG."""
    image = _open(data, max_pixels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            orientation = image.getexif().get(ExifTags.Base.Orientation, 1)
            upright_w, upright_h = image.size
            if orientation in (5, 6, 7, 8):  # a quarter turn: the upright image is transposed
                upright_w, upright_h = upright_h, upright_w
            if image.format in ("JPEG", "MPO"):
                # libjpeg can decode at 1/2, 1/4 or 1/8 scale: a 12 MP photo costs ~1/10th.
                scale = min(1.0, max_side / max(image.size))
                image.draft(image.mode, (int(image.width * scale), int(image.height * scale)))
            image.load()
            image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InvalidImage(f"image could not be decoded: {exc}") from exc
    rgb = to_rgb(image)
    scale = min(1.0, max_side / max(upright_w, upright_h))
    target = (max(1, round(upright_w * scale)), max(1, round(upright_h * scale)))
    if rgb.size != target:
        rgb = rgb.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    pixels = np.asarray(rgb)
    return ModelImage(rgb=pixels, scale=target[0] / upright_w, jpeg=encode_jpeg(pixels))


def encode_jpeg(rgb: np.ndarray, quality: int = 92) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])  # fmt: skip
    if not ok:
        raise InvalidImage("image could not be re-encoded")
    return buf.tobytes()


def crop_box(
    bbox: tuple[float, float, float, float], size: tuple[int, int], margin: float = CROP_MARGIN
) -> tuple[int, int, int, int]:
    """The detected box grown by `margin` on each side, in whole pixels inside the image
    (`animation.crop.crop_box`); a box with nothing left to crop is an InvalidImage."""
    try:
        return animation_crop_box(bbox, size, margin)
    except ValueError as exc:
        raise InvalidImage(str(exc)) from exc
