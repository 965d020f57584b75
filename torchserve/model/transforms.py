"""Letterboxing: the image <-> model-input geometry shared by training, evaluation and serving.

A letterbox scales an image so its longer side fits a square of ``size`` pixels, centres it
and fills the rest with a neutral grey. The same function prepares images for training and
for serving, so the model never sees a resize it was not trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

PAD_VALUE = 128  # neutral grey: normalises to ~0, unlike white paper or black ink
MEAN = 0.5
STD = 0.25


@dataclass(frozen=True)
class Letterbox:
    """Maps points between an image (source pixels) and its letterboxed square (input pixels)."""

    scale: float  # input pixels per source pixel
    pad_x: float  # left offset of the scaled image inside the square
    pad_y: float
    size: int  # side of the square

    # Coordinates follow OpenCV: pixel i has its centre at i. A resize by s maps x to
    # (x + 0.5) * s - 0.5, so the offsets below fold in that half-pixel shift.

    def to_input(self, points: np.ndarray) -> np.ndarray:
        """Source pixel coordinates (..., 2+) -> input coordinates; extra columns kept."""
        out = np.array(points, dtype=np.float64, copy=True)
        m = self.matrix()
        out[..., 0] = out[..., 0] * m[0, 0] + m[0, 2]
        out[..., 1] = out[..., 1] * m[1, 1] + m[1, 2]
        return out

    def to_source(self, points: np.ndarray) -> np.ndarray:
        """Input coordinates (..., 2+) -> source pixel coordinates; extra columns kept."""
        out = np.array(points, dtype=np.float64, copy=True)
        m = self.matrix()
        out[..., 0] = (out[..., 0] - m[0, 2]) / m[0, 0]
        out[..., 1] = (out[..., 1] - m[1, 2]) / m[1, 1]
        return out

    def matrix(self) -> np.ndarray:
        """The 2x3 affine matrix source -> input (for cv2.warpAffine)."""
        shift = 0.5 * self.scale - 0.5
        return np.array(
            [[self.scale, 0.0, self.pad_x + shift], [0.0, self.scale, self.pad_y + shift]]
        )


def _scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    # At least one pixel: a very thin image would otherwise round a side to nothing.
    return max(1, round(width * scale)), max(1, round(height * scale))


def fit_letterbox(width: int, height: int, size: int) -> Letterbox:
    """The letterbox that fits a ``width`` x ``height`` image into a ``size`` square."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image must be non-empty, got {width}x{height}")
    scale = size / max(width, height)
    new_w, new_h = _scaled_size(width, height, scale)
    return Letterbox(scale, (size - new_w) // 2, (size - new_h) // 2, size)


def letterbox(image: np.ndarray, size: int) -> tuple[np.ndarray, Letterbox]:
    """RGB uint8 (H, W, 3) -> letterboxed RGB uint8 (size, size, 3) and its transform."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 image (H, W, 3), got {image.dtype} {image.shape}")
    height, width = image.shape[:2]
    box = fit_letterbox(width, height, size)
    new_w, new_h = _scaled_size(width, height, box.scale)
    # INTER_AREA averages when shrinking, so thin pencil lines fade instead of vanishing.
    interp = cv2.INTER_AREA if box.scale < 1 else cv2.INTER_LINEAR
    resized = cv2.resize(image, (new_w, new_h), interpolation=interp)
    out = np.full((size, size, 3), PAD_VALUE, dtype=np.uint8)
    x0, y0 = int(box.pad_x), int(box.pad_y)
    out[y0 : y0 + new_h, x0 : x0 + new_w] = resized
    return out, box


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 RGB (H, W, 3) or (N, H, W, 3) -> normalised float tensor (N, 3, H, W)."""
    batch = torch.from_numpy(np.array(images, dtype=np.uint8))  # a copy: inputs may be read-only
    if batch.ndim == 3:
        batch = batch[None]
    return (batch.permute(0, 3, 1, 2).float() / 255.0 - MEAN) / STD
