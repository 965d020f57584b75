"""What the models are sent: the upload decoded at model scale, its JPEG, the figure's crop.

Decoding follows the project's one policy (`animation/images.py`, shared with the
TorchServe handlers). `decode_for_models` is the CPU-heavy part and runs in a render
worker process, off the gevent hub.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from animation.crop import CROP_MARGIN
from animation.crop import crop_box as animation_crop_box
from animation.images import decode_image
from gateway.errors import InvalidImage


@dataclass(frozen=True)
class ModelImage:
    """The upload, upright, RGB, scaled so its longest side is at most the model input size."""

    rgb: np.ndarray  # (H, W, 3) uint8
    scale: float  # rgb pixels per pixel of the upright upload
    jpeg: bytes  # `rgb` encoded for the detector
    upload_size: tuple[int, int] = (0, 0)  # (width, height) of the upright upload


def decode_for_models(data: bytes, max_pixels: int, max_side: int) -> ModelImage:
    """Decode the upload upright into RGB at most `max_side` px long, plus its JPEG."""
    decoded = decode_image(data, max_pixels, max_side)
    return ModelImage(rgb=decoded.rgb, scale=decoded.scale, jpeg=encode_jpeg(decoded.rgb),
                      upload_size=decoded.size)  # fmt: skip


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
