"""Things against the figure that are not the figure: what it holds, a caption, a pen.

A child draws a ball at a hand or a foot, a balloon on a string, a name right beside the
body; a parent photographs the sheet with the felt-tip still lying on it. They touch the
figure, so a segmentation that keeps "everything connected to the drawing" glues them to
it; they are never part of the figure's mask label.
"""

from __future__ import annotations

import cv2
import numpy as np

from .figure import L_ANKLE, L_ELBOW, L_KNEE, L_WRIST, R_ANKLE, R_ELBOW, R_KNEE, R_WRIST
from .ink import Ink, pick_colour
from .scene import _heart, _text

# (end joint, the joint before it): where a held or kicked thing touches the figure.
HANDS = ((L_WRIST, L_ELBOW), (R_WRIST, R_ELBOW))
FEET = ((L_ANKLE, L_KNEE), (R_ANKLE, R_KNEE))
PENS = [(30, 60, 190), (200, 40, 40), (20, 20, 25), (30, 140, 60), (240, 200, 40), (245, 245, 245)]


def _outward(keypoints: np.ndarray, end: int, before: int) -> tuple[np.ndarray, np.ndarray]:
    """A limb's end point and the unit vector pointing on past it."""
    tip = keypoints[end]
    d = tip - keypoints[before]
    return tip, d / (np.linalg.norm(d) + 1e-9)


def _ball(rng, ink: Ink, keypoints, size: float) -> None:
    end, before = (HANDS + FEET)[int(rng.integers(4))]
    tip, d = _outward(keypoints, end, before)
    r = rng.uniform(0.05, 0.1) * size
    centre = tip + d * r * rng.uniform(0.5, 1.0)
    t = np.linspace(0, 2 * np.pi, 28, endpoint=False)
    circle = centre + np.stack([np.cos(t), np.sin(t)], 1) * r
    if rng.random() < 0.5:
        ink.fill(circle)
    ink.stroke(circle, closed=True)
    if rng.random() < 0.4:  # a stripe round a beach ball
        ink.stroke(centre + np.array([(-r, 0.0), (0.0, -0.3 * r), (r, 0.0)]))


def _balloon(rng, inks: list[Ink], keypoints, size: float) -> None:
    end, before = HANDS[int(rng.integers(2))]
    hand = keypoints[end]
    up = np.array([rng.uniform(-0.6, 0.6), -1.0])
    top = hand + up / np.linalg.norm(up) * rng.uniform(0.2, 0.45) * size
    bend = (hand + top) / 2 + rng.normal(0, 0.03 * size, 2)
    string = np.stack(
        [
            np.interp(np.linspace(0, 1, 8), [0, 0.5, 1], v)
            for v in zip(hand, bend, top, strict=True)
        ],
        1,
    )
    inks[1].stroke(string, width=max(1.0, inks[1].width * 0.5))
    rx = rng.uniform(0.06, 0.1) * size
    t = np.linspace(0, 2 * np.pi, 28, endpoint=False)
    balloon = top + np.stack([np.cos(t) * rx, np.sin(t) * rx * 1.25 - rx * 1.2], 1)
    if rng.random() < 0.6:
        inks[0].fill(balloon)
    inks[0].stroke(balloon, closed=True)


def _held(rng, ink: Ink, keypoints, size: float) -> None:
    """A small thing in a hand: a heart, a flower head, a lollipop."""
    end, before = HANDS[int(rng.integers(2))]
    tip, d = _outward(keypoints, end, before)
    s = rng.uniform(0.05, 0.1) * size
    c = tip + d * s * 0.5
    _heart(rng, ink, (c[0] - s / 2, c[1] - s / 2, c[0] + s / 2, c[1] + s / 2))


def _caption(rng, ink: Ink, figure: np.ndarray, box, img_shape) -> None:
    """A name written against the figure: beside the body or under the feet, touching it."""
    x0, y0, x1, y1 = box
    fh, fw = y1 - y0, x1 - x0
    th = rng.uniform(0.07, 0.14) * fh
    tw = rng.uniform(2.0, 4.0) * th
    side = int(rng.integers(3))
    if side == 2:  # under the feet, overlapping them a little
        cx = rng.uniform(x0, x1)
        ty = y1 - th * rng.uniform(0.1, 0.5)
        text_box = (cx - tw / 2, ty, cx + tw / 2, ty + th)
    else:  # level with some row of the figure, starting where its outline ends
        row = int(np.clip(rng.uniform(y0 + 0.2 * fh, y1 - 0.2 * fh), 0, figure.shape[0] - 1))
        xs = np.flatnonzero(figure[row])
        if len(xs) == 0:
            return
        overlap = rng.uniform(-0.02, 0.1) * fw
        if side == 0:
            edge = xs.min() + overlap
            text_box = (edge - tw, row - th / 2, edge, row + th / 2)
        else:
            edge = xs.max() - overlap
            text_box = (edge, row - th / 2, edge + tw, row + th / 2)
    _text(rng, ink, text_box, *img_shape)


def _pen(rng, sheet: np.ndarray, figure: np.ndarray, size: float) -> np.ndarray:
    """A pen lying on the sheet with its tip against the figure's outline, painted opaque
    (with its shadow) into `sheet` in place; returns where it covers the sheet (bool)."""
    h, w = figure.shape
    hidden = np.zeros((h, w), bool)
    outline = figure & ~cv2.erode(figure.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    ys, xs = np.nonzero(outline)
    if len(xs) == 0:
        return hidden
    i = int(rng.integers(len(xs)))
    tip = np.array([xs[i], ys[i]], float)
    away = tip - np.array([(xs.min() + xs.max()) / 2, (ys.min() + ys.max()) / 2])
    a = np.arctan2(away[1], away[0]) + rng.uniform(-0.8, 0.8)
    d = np.array([np.cos(a), np.sin(a)])
    n = np.array([-d[1], d[0]])
    length, half = rng.uniform(0.35, 0.7) * size, rng.uniform(0.018, 0.03) * size
    start = tip + d * half * 2.5  # the cone from the tip to the barrel
    end = start + d * length
    barrel = np.array([start + n * half, end + n * half, end - n * half, start - n * half])
    cone = np.array([tip, start + n * half * 0.8, start - n * half * 0.8])
    offset = rng.normal(0, 1, 2) * half * 0.6
    # Everything happens in the window around the pen and its shadow.
    corners = np.concatenate([barrel, barrel + offset, cone])
    blur = max(1.0, half * 0.5)
    x0, y0 = np.maximum(np.floor(corners.min(axis=0) - 3 * blur).astype(int), 0)
    x1, y1 = np.minimum(np.ceil(corners.max(axis=0) + 3 * blur).astype(int), (w, h))
    if x1 <= x0 or y1 <= y0:
        return hidden
    origin = np.array([x0, y0])
    window = sheet[y0:y1, x0:x1]

    def layer(polygon: np.ndarray) -> np.ndarray:
        out = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.fillConvexPoly(
            out, np.round((polygon - origin) * 4).astype(np.int32), 255, cv2.LINE_AA, 2
        )
        return out

    shade = cv2.GaussianBlur(layer(barrel + offset), (0, 0), blur * 0.8)
    window *= 1.0 - (0.35 / 255) * shade[..., None].astype(np.float32)
    barrel_cover, cone_cover = layer(barrel), layer(cone)
    body = np.float32(PENS[int(rng.integers(len(PENS)))]) / 255 * rng.uniform(0.85, 1.05)
    # A cylinder: brighter along its middle than at its sides.
    rounded = cv2.GaussianBlur(barrel_cover, (0, 0), blur).astype(np.float32)[..., None] / 255
    wood = np.float32([0.85, 0.72, 0.55]) if rng.random() < 0.5 else body * 0.4
    for cover, colour in (
        (barrel_cover, np.clip(body * (0.75 + 0.4 * rounded), 0, 1)),
        (cone_cover, wood),
    ):
        alpha = cover.astype(np.float32)[..., None] / 255
        window[:] = window * (1 - alpha) + colour * alpha
    hidden[y0:y1, x0:x1] = (barrel_cover > 127) | (cone_cover > 127)
    return hidden


def add_props(
    rng: np.random.Generator,
    sheet: np.ndarray,
    figure: np.ndarray,
    keypoints: np.ndarray,
    box,
    medium: str,
    scale: float,
) -> np.ndarray:
    """Draw 1-3 things touching the figure onto `sheet` (float32 RGB 0..1, in place).

    figure: the figure's filled silhouette (bool); keypoints (17, 2) and box (x0, y0, x1,
    y1) in page pixels. Returns the pixels an opaque object now hides (bool): the label
    must leave those out."""
    h, w = figure.shape
    size = box[3] - box[1]
    hidden = np.zeros((h, w), bool)
    for kind in rng.choice(5, size=int(rng.integers(1, 4)), p=[0.25, 0.2, 0.15, 0.25, 0.15]):
        inks = [Ink(rng, (h, w), medium, pick_colour(rng, medium), scale) for _ in range(2)]
        if kind == 0:
            _ball(rng, inks[0], keypoints, size)
        elif kind == 1:
            _balloon(rng, inks, keypoints, size)
        elif kind == 2:
            _held(rng, inks[0], keypoints, size)
        elif kind == 3:
            _caption(rng, inks[0], figure, box, (h, w))
        for ink in inks:
            ink.composite(sheet)
        if kind == 4:
            hidden |= _pen(rng, sheet, figure & ~hidden, size)
    return hidden
