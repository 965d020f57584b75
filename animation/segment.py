"""The figure's mask from a cropped drawing, with OpenCV: pen strokes and what they enclose.

A drawing on paper is dark strokes on a bright, unevenly lit page. The steps:
adaptive threshold of the darkest channel (ink of any colour, whatever the lighting) -> morphological closing (joins sketchy,
broken strokes and the small gaps children leave, e.g. where a head meets its neck) ->
flood fill of the paper from the crop's border (what the fill cannot reach lies inside the
outline, so holes are filled) -> one connected component: the one holding the most
skeleton joints (a sun or a house beside the figure can be bigger), else the largest.
The result hugs the drawing's outline, which is what the mesh is built from.
"""

from __future__ import annotations

import cv2
import numpy as np

BLOCK_FRACTION = 1 / 4  # threshold neighbourhood, of the crop's short side
INK_CONTRAST = 10  # grey levels darker than the neighbourhood's mean to count as ink
GAP_FRACTION = 1 / 40  # closing kernel, of the crop's short side


def odd_size(n: float) -> int:
    n = max(3, int(n))
    return n if n % 2 else n + 1


def fill_holes(binary: np.ndarray) -> np.ndarray:
    """`binary` plus every region the border cannot reach through non-set pixels."""
    padded = cv2.copyMakeBorder(binary.astype(np.uint8) * 255, 1, 1, 1, 1,
                                cv2.BORDER_CONSTANT, value=0)  # fmt: skip
    # A ring of paper around the crop, so one fill from a corner reaches the whole border.
    fill_mask = np.zeros((padded.shape[0] + 2, padded.shape[1] + 2), np.uint8)
    cv2.floodFill(padded, fill_mask, (0, 0), 128)
    return padded[1:-1, 1:-1] != 128


def segment_figure(rgb: np.ndarray, keypoints: np.ndarray | None = None) -> np.ndarray:
    """(H, W) bool mask of the figure in an (H, W, 3) uint8 crop; all False if none is found.

    `keypoints` (N, 2) in the crop's pixels pick the figure's component among several.
    """
    # The darkest channel, not luminance: yellow marker on white paper is bright but has
    # almost no blue, so it still stands out as ink.
    gray = np.ascontiguousarray(rgb.min(axis=2))
    side = min(gray.shape)
    ink = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV,
                                odd_size(side * BLOCK_FRACTION), INK_CONTRAST)  # fmt: skip
    k = odd_size(side * GAP_FRACTION)
    ink = cv2.morphologyEx(
        ink, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    )
    figure = fill_holes(ink > 0).astype(np.uint8)

    count, labels, stats, _ = cv2.connectedComponentsWithStats(figure, connectivity=8)
    if count < 2:
        return np.zeros(gray.shape, bool)
    score = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
    if keypoints is not None and len(keypoints):
        height, width = labels.shape
        xy = np.clip(np.round(np.asarray(keypoints)[:, :2]).astype(int), 0, (width - 1, height - 1))
        joints_inside = np.bincount(labels[xy[:, 1], xy[:, 0]], minlength=count)
        score += joints_inside * float(labels.size)  # joints first, area breaks ties
    score[0] = -1  # the paper
    return labels == int(np.argmax(score))
