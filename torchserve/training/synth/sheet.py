"""A contact sheet: samples side by side with their box, joints, skeleton and mask drawn on.

The mask shows as a magenta tint with its outline, so a look tells whether the label
covers the whole figure (fills, enclosed areas, separate limbs) and nothing else (props,
paper)."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from .generator import Sample

# COCO skeleton as pairs of keypoint indices.
SKELETON = [
    (15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12), (5, 6),
    (5, 7), (6, 8), (7, 9), (8, 10), (1, 2), (0, 1), (0, 2), (1, 3), (2, 4),
]  # fmt: skip
LEFT, RIGHT, CENTRE = (255, 140, 0), (0, 120, 255), (0, 200, 0)  # RGB: figure's left is orange
MASK = np.array([255, 0, 220], np.float32)


def _side(i: int) -> tuple[int, int, int]:
    return CENTRE if i == 0 else (LEFT if i % 2 == 1 else RIGHT)


def annotate(sample: Sample, cell: int) -> np.ndarray:
    """The sample scaled to fit a cell x cell tile, with its labels drawn on."""
    h, w = sample.image.shape[:2]
    k = cell / max(h, w)
    size = (max(1, round(w * k)), max(1, round(h * k)))
    img = cv2.resize(sample.image, size, interpolation=cv2.INTER_AREA)
    mask = cv2.resize(sample.mask.astype(np.uint8), size, interpolation=cv2.INTER_AREA) > 0
    img[mask] = (img[mask] * 0.6 + MASK * 0.4).astype(np.uint8)
    edge = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    img[edge > 0] = MASK.astype(np.uint8)
    tile = np.full((cell, cell, 3), 40, np.uint8)
    tile[: img.shape[0], : img.shape[1]] = img
    x1, y1, x2, y2 = (sample.bbox * k).round().astype(int)
    cv2.rectangle(tile, (x1, y1), (x2, y2), (0, 230, 0), 1)
    pts = sample.keypoints[:, :2] * k
    for a, b in SKELETON:
        colour = _side(a) if _side(a) == _side(b) else (230, 230, 0)
        pa, pb = tuple(np.round(pts[a]).astype(int)), tuple(np.round(pts[b]).astype(int))
        cv2.line(tile, pa, pb, colour, 1, cv2.LINE_AA)
    for i, p in enumerate(pts):
        if sample.keypoints[i, 2] > 0:
            cv2.circle(tile, tuple(np.round(p).astype(int)), 2, _side(i), -1, cv2.LINE_AA)
    label = f"{sample.style['body']}/{sample.style['medium']}/{sample.style['paper']}"
    (tw, th), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_PLAIN, 0.9, 1)
    cv2.rectangle(tile, (0, cell - th - 8), (tw + 6, cell), (0, 0, 0), -1)
    cv2.putText(
        tile, label, (3, cell - 5), cv2.FONT_HERSHEY_PLAIN, 0.9, (255, 255, 255), 1, cv2.LINE_AA
    )
    return tile


def contact_sheet(samples: Sequence[Sample], cell: int = 256, columns: int = 6) -> np.ndarray:
    """RGB image of the samples in a grid."""
    rows = (len(samples) + columns - 1) // columns
    cols = min(columns, len(samples))
    sheet = np.full((rows * (cell + 4) + 4, cols * (cell + 4) + 4, 3), 20, np.uint8)
    for i, sample in enumerate(samples):
        r, c = divmod(i, columns)
        y, x = 4 + r * (cell + 4), 4 + c * (cell + 4)
        sheet[y : y + cell, x : x + cell] = annotate(sample, cell)
    return sheet
