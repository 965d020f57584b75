"""Procedural photos of drawn figures on paper, for the segmentation tests.

Each page knows what it drew: the figure's own pixels (strokes and what they enclose), the
pixels of each thing that is not the figure (a ball, a caption), and the 16 joints. The
light is what a phone photo of a page gets: paper of any colour, a shadow with a soft
edge, light falling off across the page, grain and camera blur. Ink darkens the paper
multiplicatively (a pencil line on grey paper in a shadow is darker still, but by less).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from animation.skeleton import JOINTS, Skeleton

SIZE = 400  # px, square crop

# A figure standing with arms out, in a SIZE x SIZE crop (x right, y down).
POSE = {
    "root": (200, 230), "hip": (200, 230), "torso": (200, 140), "neck": (200, 80),
    "right_shoulder": (165, 140), "right_elbow": (115, 165), "right_hand": (70, 190),
    "left_shoulder": (235, 140), "left_elbow": (285, 165), "left_hand": (330, 190),
    "right_hip": (180, 235), "right_knee": (165, 295), "right_foot": (150, 355),
    "left_hip": (220, 235), "left_knee": (235, 295), "left_foot": (250, 355),
}  # fmt: skip
HEAD_RADIUS = 36
LIMBS = [
    ("right_shoulder", "right_elbow"), ("right_elbow", "right_hand"),
    ("left_shoulder", "left_elbow"), ("left_elbow", "left_hand"),
    ("right_hip", "right_knee"), ("right_knee", "right_foot"),
    ("left_hip", "left_knee"), ("left_knee", "left_foot"),
]  # fmt: skip


@dataclass
class Page:
    rgb: np.ndarray  # (H, W, 3) uint8: the photo
    figure: np.ndarray  # (H, W) bool: the figure's pixels, strokes and what they enclose
    skeleton: Skeleton
    limbs: np.ndarray  # (H, W) bool: the pixels of the arms' and legs' strokes
    others: dict[str, np.ndarray] = field(default_factory=dict)  # (H, W) bool per thing


def skeleton() -> Skeleton:
    return Skeleton(np.array([POSE[n] for n in JOINTS], np.float64))


def _pt(name: str) -> tuple[int, int]:
    return POSE[name]


def _line_cover(shape, lines, width: int, dashed: float, rng) -> np.ndarray:
    """(H, W) float32 ink cover of straight strokes; `dashed` = share of the length skipped."""
    cover = np.zeros(shape, np.float32)
    for p, q in lines:
        p, q = np.array(p, float), np.array(q, float)
        n = max(2, int(np.linalg.norm(q - p) / 6))
        for k in range(n):
            if rng.random() < dashed:
                continue  # a pencil skipping on the grain
            a, b = p + (q - p) * k / n, p + (q - p) * (k + 1) / n
            cv2.line(cover, _i(a), _i(b), 1.0, width, cv2.LINE_AA)
    return cover


def _i(p) -> tuple[int, int]:
    return int(round(p[0])), int(round(p[1]))


def _filled(cover: np.ndarray) -> np.ndarray:
    """Stroke pixels plus what they enclose."""
    strokes = (cover > 0.5).astype(np.uint8)
    flood = np.pad(strokes, 1)
    cv2.floodFill(flood, None, (0, 0), 2)
    return flood[1:-1, 1:-1] != 2


def photograph(
    cover: np.ndarray,
    ink_rgb: tuple[int, int, int],
    paper_rgb: tuple[int, int, int],
    seed: int,
    shadow: float = 0.0,
    falloff: float = 0.0,
    grain: float = 3.0,
) -> np.ndarray:
    """(H, W, 3) uint8: ink `cover` (H, W) in 0..1 laid on paper and photographed.

    `shadow`: how much light a soft-edged shadow over the left part of the page takes
    away (0..1); `falloff`: light lost from the top-right to the bottom-left corner.
    """
    rng = np.random.default_rng(seed)
    h, w = cover.shape
    paper = np.broadcast_to(np.array(paper_rgb, np.float32), (h, w, 3)).copy()
    ink = np.array(ink_rgb, np.float32) / np.maximum(np.array(paper_rgb, np.float32), 1)
    page = paper * (1 - cover[..., None] * (1 - np.minimum(ink, 1)))
    yy, xx = np.mgrid[:h, :w].astype(np.float32)
    light = 1 - falloff * ((yy / h) + (1 - xx / w)) / 2
    if shadow:
        # A shadow of a phone or a hand: a slanted edge, blurred like a real penumbra.
        edge = 0.45 * w + 0.25 * (yy - h / 2)
        dark = cv2.GaussianBlur((xx < edge).astype(np.float32), (0, 0), 6)
        light = light * (1 - shadow * dark)
    photo = cv2.GaussianBlur(page * light[..., None], (0, 0), 0.8)
    photo += rng.normal(0, grain, photo.shape)
    return np.clip(photo, 0, 255).astype(np.uint8)


def stick_figure(
    seed: int = 0,
    width: int = 2,
    ink_rgb=(70, 70, 80),
    paper_rgb=(235, 232, 225),
    dashed: float = 0.0,
    **light,
) -> Page:
    """A stick figure: an outlined head, a line body, one thin stroke per limb bone."""
    rng = np.random.default_rng(seed)
    shape = (SIZE, SIZE)
    cover = np.zeros(shape, np.float32)
    cv2.circle(cover, _pt("neck"), HEAD_RADIUS, 1.0, width + 1, cv2.LINE_AA)
    body = [(( 200, 80 + HEAD_RADIUS), _pt("root"))]  # fmt: skip
    cv2.line(cover, *[_i(p) for p in body[0]], 1.0, width + 1, cv2.LINE_AA)
    arms_legs = [(_pt(a), _pt(b)) for a, b in LIMBS]
    shoulders = [(_pt("right_shoulder"), _pt("left_shoulder")), (_pt("right_hip"), _pt("left_hip"))]
    limbs = _line_cover(shape, arms_legs, width, dashed, rng)
    cover = np.maximum(cover, np.maximum(limbs, _line_cover(shape, shoulders, width + 1, 0, rng)))
    return Page(
        photograph(cover, ink_rgb, paper_rgb, seed, **light),
        _filled(cover),
        skeleton(),
        limbs > 0.5,
    )


def block_figure(seed: int = 0, gap: int = 8, fill_gaps: float = 0.0, **light) -> Page:
    """A crayon figure of separate blocks: a head, a body, and a bar per limb bone, each
    `gap` px from the next, the way children draw arms beside a body."""
    rng = np.random.default_rng(seed)
    shape = (SIZE, SIZE)
    trunk = np.zeros(shape, np.float32)
    cv2.circle(trunk, _pt("neck"), HEAD_RADIUS, 1.0, -1, cv2.LINE_AA)
    cv2.rectangle(trunk, (172, 80 + HEAD_RADIUS + gap), (228, 240), 1.0, -1, cv2.LINE_AA)
    limbs = np.zeros(shape, np.float32)
    half = 7  # a bar's half width: its rounded cap reaches this far past its end
    for a, b in LIMBS:
        p, q = np.array(_pt(a), float), np.array(_pt(b), float)
        u = (q - p) / np.linalg.norm(q - p)
        cv2.line(
            limbs,
            _i(p + u * (gap / 2 + half)),
            _i(q - u * (gap / 2 + half)),
            1.0,
            2 * half,
            cv2.LINE_AA,
        )
    apart = cv2.dilate((trunk > 0).astype(np.uint8), _disc(gap)) > 0
    limbs[apart] = 0
    cover = np.maximum(trunk, limbs)
    if fill_gaps:
        # Crayon scribble: streaks of paper left between strokes of the fill.
        streaks = rng.random(shape) < fill_gaps
        streaks = cv2.dilate(streaks.astype(np.uint8), np.ones((1, 5), np.uint8)) > 0
        cover[streaks & (cover > 0.5)] *= 0.15
    return Page(
        photograph(cover, (200, 60, 40), (240, 238, 232), seed, **light),
        cover > 0.5,
        skeleton(),
        limbs > 0.5,
    )


def _disc(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


def with_things(page: Page, seed: int = 0, ball_gap: int = 6, caption_gap: int = 8) -> Page:
    """`page` with a ball beside the right hand and a caption under the feet, `*_gap` px
    from the figure (0: touching it)."""
    shape = page.figure.shape
    cover = np.zeros(shape, np.float32)
    hx, hy = _pt("right_hand")
    radius = 22
    ball_centre = (hx - radius - ball_gap - 4, hy)
    cv2.circle(cover, ball_centre, radius, 1.0, 3, cv2.LINE_AA)
    ball = _filled(cover)
    caption = np.zeros(shape, np.uint8)  # putText draws on 8-bit images only
    baseline = _pt("right_foot")[1] + caption_gap + 30  # letters about 26 px tall
    cv2.putText(caption, "TOM", (150, baseline), cv2.FONT_HERSHEY_SIMPLEX, 1.2, 255, 3, cv2.LINE_AA)
    cover = np.maximum(cover, caption / np.float32(255))
    things = photograph(cover, (40, 40, 50), (255, 255, 255), seed + 1, grain=0)
    # Lay the things' ink over the page's photo (multiplied: both are ink on the same paper).
    rgb = (page.rgb.astype(np.float32) * things / 255).astype(np.uint8)
    others = dict(page.others, ball=ball, caption=caption > 127)
    return Page(rgb, page.figure, page.skeleton, page.limbs, others)
