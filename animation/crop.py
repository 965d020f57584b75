"""The figure's crop: the detected box grown by a margin, in whole pixels of the image; and
the whole drawing, when the figure found in that crop runs off it.

The gateway crops every upload this way before posing and segmenting; the benchmarks build a
character from a photo the same way, without importing the gateway.

A detector trained on people boxes the part of a drawing it knows: a pig's head and front
legs without its body, a head above a huge round body. The figure's mask then runs off the
crop into an outline that goes on past it; `whole_drawing` finds that outline's extent,
so the gateway can crop again around all of it.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from animation import morph
from animation.morph import fill_holes
from animation.paper import ink_map, stroke_half_width

CROP_MARGIN = 0.1  # of the box's size, on each side: keeps strokes the detector clipped
MIN_CROP_PX = 8  # a narrower crop holds no drawable figure
MIN_CONTACT_PX = 3  # mask pixels on a crop edge inside the image; fewer: a stroke's tip
MAX_DRAWING_SHARE = 0.4  # of the image: a bigger shape is the page, or a background
BROAD_STROKES = 1.5  # ink this many strokes deep is a patch (a shadow, a table), not a line
MIN_GROWTH = 0.05  # of the crop's longer side: a drawing past it by less is not cropped again


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


def margin_lost(
    bbox: tuple[float, float, float, float], size: tuple[int, int], margin: float = CROP_MARGIN
) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) px of `crop_box`'s margin that the image's edges cut off:
    0 where the image goes on, up to `margin` of `bbox`'s (clipped to the image) width and
    height where the box lies against an edge (an upload cropped tight round the figure)."""
    width, height = size
    left, top = max(0.0, bbox[0]), max(0.0, bbox[1])
    right, bottom = min(float(width), bbox[2]), min(float(height), bbox[3])
    dx, dy = (right - left) * margin, (bottom - top) * margin
    return (
        max(0, -math.floor(left - dx)),
        max(0, -math.floor(top - dy)),
        max(0, math.ceil(right + dx) - width),
        max(0, math.ceil(bottom + dy) - height),
    )


def paper_beyond(crop: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """The (h, w, 3) crop with `pads` (left, top, right, bottom) px of plain paper added
    round it: (h + top + bottom, w + left + right, 3). The paper is the median colour of the
    crop's rim, so a figure touching the rim does not colour it."""
    left, top, right, bottom = pads
    if not any(pads):
        return crop
    height, width = crop.shape[:2]
    rim = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
    out = np.empty((height + top + bottom, width + left + right, 3), np.uint8)
    out[:] = np.median(rim, axis=0).astype(np.uint8)
    out[top : top + height, left : left + width] = crop
    return out


def without_paper(seen: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """The crop's own pixels of `seen` (an array over `paper_beyond(crop, pads)`, first two
    axes rows and columns): `paper_beyond` undone."""
    left, top, right, bottom = pads
    return seen[top : seen.shape[0] - bottom, left : seen.shape[1] - right]


def edge_contact(
    mask: np.ndarray, box: tuple[int, int, int, int], size: tuple[int, int]
) -> np.ndarray:
    """(h, w) bool: the pixels of `mask` (over the crop `box`, (left, top, right, bottom) in
    an image of `size` (width, height)) on the crop's edges that are not the image's."""
    left, top, right, bottom = box
    width, height = size
    edge = np.zeros(mask.shape, bool)
    if left > 0:
        edge[:, 0] = True
    if right < width:
        edge[:, -1] = True
    if top > 0:
        edge[0, :] = True
    if bottom < height:
        edge[-1, :] = True
    return edge & mask


def runs_off(mask: np.ndarray, box: tuple[int, int, int, int], size: tuple[int, int]) -> bool:
    """Whether the figure's `mask` reaches the crop's edge inside the image (see
    `edge_contact`) in at least MIN_CONTACT_PX pixels."""
    return int(np.count_nonzero(edge_contact(mask, box, size))) >= MIN_CONTACT_PX


def whole_drawing(
    rgb: np.ndarray, box: tuple[int, int, int, int], mask: np.ndarray
) -> tuple[int, int, int, int] | None:
    """(left, top, right, bottom), image px: the extent of the figure's `mask` (h, w bool over
    the crop `box` of the (H, W, 3) uint8 image `rgb`) and of the drawn shapes it runs into
    past the crop's edge; None when it runs into none (see `runs_off`), or into none that
    goes on past the crop by MIN_GROWTH of its size.

    The image's strokes (its ink less the broad patches: a shadow, the table past the
    page's edge), closed over the figure's stroke width, fall into connected drawings.
    Those the mask reaches at the crop's edge are the figure's when they go on past the
    crop, stay off the image's border, cover less than MAX_DRAWING_SHARE of it with what
    they enclose, and enclose one region bigger than their own ink (an outline around a
    body). A ruled or a ground line, the lattice of squared paper, the page's edge (the
    figure lies inside it, not on it) or a page coloured all over is none of these.
    """
    height, width = rgb.shape[:2]
    contact = edge_contact(mask, box, (width, height))
    if np.count_nonzero(contact) < MIN_CONTACT_PX:
        return None
    left, top, right, bottom = box
    ink = ink_map(np.ascontiguousarray(rgb)).ink
    # The figure's own stroke width: the whole image's may be a dark table's.
    stroke = 2 * stroke_half_width(ink[top:bottom, left:right])
    # Strokes only: what is darker than the paper over a broad patch (a shadow, the table
    # past the page's edge) would join the drawing to the image's border.
    strokes = ink & ~morph.opening(ink, BROAD_STROKES * stroke)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (max(3, int(round(stroke))) | 1,) * 2)
    inked = cv2.morphologyEx(strokes.astype(np.uint8), cv2.MORPH_CLOSE, kernel)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(inked, connectivity=8)
    seeds = np.zeros((height, width), np.uint8)
    seeds[top:bottom, left:right] = contact
    # The mask's edge may lie a stroke's soft edge off the ink that continues it.
    touched = np.unique(labels[cv2.dilate(seeds, np.ones((5, 5), np.uint8)) > 0])
    rows, cols = np.nonzero(mask)
    extents = [(left + cols.min(), top + rows.min(), left + cols.max() + 1, top + rows.max() + 1)]
    reach = MIN_GROWTH * max(right - left, bottom - top)
    for label in touched[touched > 0]:
        x, y, w, h, ink_px = stats[label]
        if x == 0 or y == 0 or x + w == width or y + h == height:
            continue
        if max(left - x, top - y, x + w - right, y + h - bottom) < reach:
            continue  # inside the crop, or past it by a few pixels: not worth cropping again
        drawn = labels[y : y + h, x : x + w] == label
        shape = fill_holes(drawn)
        if np.count_nonzero(shape) > MAX_DRAWING_SHARE * width * height:
            continue  # the page, or a background
        if _largest_area(shape & ~drawn) < ink_px:
            continue  # lines, or a lattice of them (squared paper): no outline around a body
        extents.append((x, y, x + w, y + h))
    if len(extents) == 1:
        return None
    corners = np.array(extents)
    return (*corners[:, :2].min(axis=0).tolist(), *corners[:, 2:].max(axis=0).tolist())


def _largest_area(mask: np.ndarray) -> int:
    """Pixels in the largest 4-connected piece of an (H, W) bool `mask` (0 if empty)."""
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=4)
    return int(stats[1:, cv2.CC_STAT_AREA].max()) if count > 1 else 0
