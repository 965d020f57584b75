"""The figure's mask from a cropped drawing, with OpenCV: pen strokes and what they enclose.

A drawing on paper is dark strokes on a bright, unevenly lit page. The steps:
adaptive threshold (ink, whatever the lighting) -> closing and a small dilation (join
sketchy, broken strokes) -> flood fill the paper from the crop's border (what the fill
cannot reach is inside the outline, so holes are filled) -> keep the largest component.
The result hugs the drawing's outline, which is what the mesh is built from.
"""

from __future__ import annotations

import cv2
import numpy as np


def _odd(n: float) -> int:
    n = max(3, int(n))
    return n if n % 2 else n + 1


def segment_figure(rgb: np.ndarray) -> np.ndarray:
    """(H, W) bool mask of the figure in an (H, W, 3) uint8 crop; all False if none is found."""
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    side = min(gray.shape)
    # The neighbourhood must be wider than a stroke yet local enough to follow shadows.
    ink = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV,
                                _odd(side / 6), 8)  # fmt: skip
    k = _odd(side / 150)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    ink = cv2.morphologyEx(ink, cv2.MORPH_CLOSE, kernel, iterations=2)
    ink = cv2.dilate(ink, kernel, iterations=1)

    # Pad with a ring of paper so one fill from a corner reaches the whole border.
    padded = cv2.copyMakeBorder(ink, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    fill_mask = np.zeros((padded.shape[0] + 2, padded.shape[1] + 2), np.uint8)
    cv2.floodFill(padded, fill_mask, (0, 0), 128)
    figure = (padded[1:-1, 1:-1] != 128).astype(np.uint8)

    count, labels, stats, _ = cv2.connectedComponentsWithStats(figure, connectivity=8)
    if count < 2:
        return np.zeros(gray.shape, bool)
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    return labels == largest
