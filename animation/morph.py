"""Binary morphology with a disc of any radius, in time that stays low for any radius;
holes filled.

OpenCV's `dilate` costs grow steeply with the disc's size; a distance transform costs the
same for any radius (about a dilation by a disc of KERNEL_MAX_RADIUS). A pixel is
within `r` of the set iff its distance to it is at most `r`, so past KERNEL_MAX_RADIUS
dilation and erosion by a disc are thresholded distance transforms (to within the
transform's small metric error); below it, OpenCV's own with an elliptic kernel.
"""

from __future__ import annotations

import cv2
import numpy as np

KERNEL_MAX_RADIUS = 8  # px: up to here a kernel is cheaper than a distance transform


def _disc(radius: float) -> np.ndarray:
    d = 2 * int(round(radius)) + 1
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (d, d))


def distance_to(mask: np.ndarray) -> np.ndarray:
    """(H, W) float32: each pixel's distance to the nearest set pixel of `mask` (0 on it)."""
    outside = np.ascontiguousarray(~mask, dtype=np.uint8)
    return cv2.distanceTransform(outside, cv2.DIST_L2, cv2.DIST_MASK_5)


def dilate(mask: np.ndarray, radius: float) -> np.ndarray:
    """(H, W) bool: pixels within `radius` of `mask` (all False if `mask` is empty)."""
    if not mask.any():
        return np.zeros(mask.shape, bool)
    if radius <= KERNEL_MAX_RADIUS:
        return cv2.dilate(mask.astype(np.uint8), _disc(radius)) > 0
    return distance_to(mask) <= radius


def erode(mask: np.ndarray, radius: float) -> np.ndarray:
    """(H, W) bool: pixels of `mask` farther than `radius` from its outside.

    The image's border counts as inside: what the crop cut off is not known to end there.
    """
    if mask.all():
        return mask.copy()
    if radius <= KERNEL_MAX_RADIUS:
        # Past the image's edge counts as inside, as for the distance transform below.
        kernel = _disc(radius)
        return cv2.erode(mask.astype(np.uint8), kernel, borderType=cv2.BORDER_REPLICATE) > 0
    return distance_to(~mask) > radius


def opening(mask: np.ndarray, radius: float) -> np.ndarray:
    """`mask` less every part a disc of `radius` cannot reach inside it (thin strokes, necks)."""
    return dilate(erode(mask, radius), radius) & mask


def closing(mask: np.ndarray, radius: float) -> np.ndarray:
    """`mask` plus every gap narrower than a disc of `radius` across."""
    return erode(dilate(mask, radius), radius) | mask


def fill_holes(binary: np.ndarray) -> np.ndarray:
    """`binary` plus every region the border cannot reach through non-set pixels."""
    padded = cv2.copyMakeBorder(binary.astype(np.uint8) * 255, 1, 1, 1, 1,
                                cv2.BORDER_CONSTANT, value=0)  # fmt: skip
    # A ring of paper around the crop, so one fill from a corner reaches the whole border.
    fill_mask = np.zeros((padded.shape[0] + 2, padded.shape[1] + 2), np.uint8)
    cv2.floodFill(padded, fill_mask, (0, 0), 128)
    return padded[1:-1, 1:-1] != 128
