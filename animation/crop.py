"""The figure's crop: the detected box grown by a margin, in whole pixels of the image.

The gateway crops every upload this way before posing and segmenting; the benchmarks build a
character from a photo the same way, without importing the gateway.
"""

from __future__ import annotations

import math

CROP_MARGIN = 0.1  # of the box's size, on each side: keeps strokes the detector clipped
MIN_CROP_PX = 8  # a narrower crop holds no drawable figure


def crop_box(
    bbox: tuple[float, float, float, float], size: tuple[int, int], margin: float = CROP_MARGIN
) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of `bbox` (same order, image px) grown by `margin` of its
    width and height on each side, rounded outwards and clipped to an image of `size`
    (width, height). ValueError when less than `MIN_CROP_PX` is left on a side."""
    left, top, right, bottom = bbox
    width, height = size
    dx, dy = (right - left) * margin, (bottom - top) * margin
    box = (
        max(0, math.floor(left - dx)),
        max(0, math.floor(top - dy)),
        min(width, math.ceil(right + dx)),
        min(height, math.ceil(bottom + dy)),
    )
    if box[2] - box[0] < MIN_CROP_PX or box[3] - box[1] < MIN_CROP_PX:
        raise ValueError(f"the figure's box {list(bbox)} is too small or outside the image")
    return box
