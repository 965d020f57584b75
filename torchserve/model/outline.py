"""Two hint channels for the segmenter, computed from the image it sees: where the ink is,
and what the ink shuts off from the edge of the crop.

Whether bare paper belongs to the figure is a question of topology (is it inside the
outline?), which a small network answers badly for a large region and a flood fill answers
at once. So the network gets the flood fill's answer as input and learns when to trust it
(an outline with a gap, a ruled line or a caption touching the figure make it wrong):

- ink: pixels whose darkest channel lies clearly below their neighbourhood's mean (ink of
  any colour, under any lighting);
- enclosed: the ink with small gaps closed, plus every region it shuts off from the
  border, i.e. the filled silhouette the ink alone would give.

On squared paper the grid's squares are all "enclosed": the network has to learn to
distrust that hint there (lined paper teaches it something of the kind; squared paper
itself is one of the held-out styles).

Only the crop's own pixels count: the letterbox's padding is neither ink nor enclosed.
"""

from __future__ import annotations

import cv2
import numpy as np

HINT_CHANNELS = 2
NEIGHBOURHOOD = 1 / 4  # of the input's side: the mean the ink is compared with
CONTRAST = 10  # grey levels below that mean
GAP = 1 / 40  # of the input's side: gaps in an outline this wide are closed


def _odd(n: float) -> int:
    return max(3, int(n) | 1)


def outline_hints(square: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(S, S, 3) uint8 model input and (S, S) bool where the crop is -> (2, S, S) float32,
    1 where a hint holds, -1 where not: ink, then the enclosed silhouette."""
    side = square.shape[0]
    darkest = square.min(axis=2)
    # The padding takes the crop's typical colour, so the crop's edge is not taken for ink.
    darkest = np.where(valid, darkest, np.uint8(np.median(darkest[valid]) if valid.any() else 255))
    local = cv2.blur(darkest.astype(np.float32), (_odd(side * NEIGHBOURHOOD),) * 2)
    ink = (darkest.astype(np.float32) < local - CONTRAST) & valid
    k = _odd(side * GAP)
    closed = cv2.morphologyEx(
        ink.astype(np.uint8), cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    )
    filled = enclosed(closed > 0) & valid
    return np.where(np.stack([ink, filled]), np.float32(1), np.float32(-1))


def enclosed(binary: np.ndarray) -> np.ndarray:
    """(H, W) bool -> bool: the set pixels plus every region they shut off from the border
    (4-connected background that cannot reach the image's edge)."""
    count, labels = cv2.connectedComponents(
        np.pad(~binary, 1, constant_values=True).astype(np.uint8), connectivity=4
    )
    outside = np.zeros(count, bool)
    outside[np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))] = True
    return ~outside[labels[1:-1, 1:-1]]
