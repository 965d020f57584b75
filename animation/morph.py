"""Binary morphology with a disc of any radius, in time independent of the radius.

OpenCV's `dilate` with a 51-pixel disc costs ~50x one with a 3-pixel square; a distance
transform costs the same for any radius. A pixel is within `r` of the set iff its
distance to it is at most `r`, so dilation, erosion, opening and closing by a disc are
thresholded distance transforms (to within the transform's small metric error).
"""

from __future__ import annotations

import cv2
import numpy as np


def _distance_to(mask: np.ndarray) -> np.ndarray:
    """(H, W) float32: each pixel's distance to the nearest set pixel of `mask` (0 on it)."""
    outside = np.ascontiguousarray(~mask, dtype=np.uint8)
    return cv2.distanceTransform(outside, cv2.DIST_L2, cv2.DIST_MASK_5)


def dilate(mask: np.ndarray, radius: float) -> np.ndarray:
    """(H, W) bool: pixels within `radius` of `mask` (all False if `mask` is empty)."""
    if not mask.any():
        return np.zeros(mask.shape, bool)
    return _distance_to(mask) <= radius


def erode(mask: np.ndarray, radius: float) -> np.ndarray:
    """(H, W) bool: pixels of `mask` farther than `radius` from its outside.

    The image's border counts as inside: what the crop cut off is not known to end there.
    """
    if mask.all():
        return mask.copy()
    return _distance_to(~mask) > radius


def opening(mask: np.ndarray, radius: float) -> np.ndarray:
    """`mask` less every part a disc of `radius` cannot reach inside it (thin strokes, necks)."""
    return dilate(erode(mask, radius), radius) & mask


def closing(mask: np.ndarray, radius: float) -> np.ndarray:
    """`mask` plus every gap narrower than a disc of `radius` across."""
    return erode(dilate(mask, radius), radius) | mask
