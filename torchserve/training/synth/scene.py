"""The page: paper, and the other things a child draws around the person."""

from __future__ import annotations

import cv2
import numpy as np

from .ink import BRIGHT, Ink, pick_colour

PAPER_BASE = {
    "white": [(250, 250, 248), (244, 245, 247), (252, 251, 246)],
    "cream": [(245, 236, 212), (240, 232, 205), (248, 240, 220)],
    "coloured": [
        (250, 200, 210),
        (190, 215, 240),
        (250, 235, 140),
        (190, 230, 190),
        (245, 190, 140),
        (215, 200, 235),
        (200, 200, 200),
        (180, 230, 230),
    ],
    # Recycled grey and brown kraft paper: dim, and little contrast with a pencil.
    "grey": [(190, 190, 186), (172, 174, 172), (204, 201, 194), (160, 160, 158)],
    "kraft": [(205, 176, 132), (188, 158, 114), (216, 192, 152), (196, 170, 128)],
    "whiteboard": [(238, 240, 242), (228, 233, 237), (242, 242, 238)],
}


def paper(
    rng: np.random.Generator, kind: str, h: int, w: int, scale: float
) -> tuple[np.ndarray, float]:
    """A sheet filling the frame (float32 RGB 0..1), ruled or squared if asked, and how
    much fibre texture it shows (applied later, with the light, in one pass)."""
    base_kind = kind
    if kind in ("lined", "squared"):
        base_kind = "white" if rng.random() < 0.75 else "cream"
    options = PAPER_BASE[base_kind]
    colour = np.array(options[int(rng.integers(len(options)))], np.float32)
    colour = np.clip(colour + rng.normal(0, 4, 3), 0, 255) / 255.0
    # The light's colour cast, folded into the paper (everything drawn multiplies it).
    colour *= 1.0 + rng.normal(0, 0.03, 3)
    if rng.random() < 0.25:  # lamp light (warm) or shade (cool)
        warm = rng.random() < 0.7
        colour *= (
            (1.0, rng.uniform(0.93, 0.98), rng.uniform(0.78, 0.9)) if warm else (0.92, 0.96, 1.0)
        )
    img = np.empty((h, w, 3), np.float32)
    img[:] = colour
    ruling = np.array(
        [(0.6, 0.72, 0.92), (0.55, 0.66, 0.85), (0.65, 0.65, 0.68)][int(rng.integers(3))]
    )
    # Printed rules are faint next to a child's strokes; some papers barely show them.
    ruling = colour + (ruling + rng.normal(0, 0.03, 3) - colour) * rng.uniform(0.35, 0.95)
    line_colour = np.clip(ruling, 0, 1).astype(np.float32)
    # Printed rules as whole pixel rows and columns: the camera's resampling softens them.
    thick = 1 if scale < 1.4 else 2
    if kind == "lined":
        gap = rng.uniform(16, 30) * scale
        first = rng.uniform(0, gap) + (rng.uniform(20, 60) * scale if rng.random() < 0.4 else 0)
        rows = np.arange(first, h, gap).astype(int)
        img[np.clip(np.concatenate([rows + i for i in range(thick)]), 0, h - 1)] = line_colour
        if rng.random() < 0.6:  # the red margin
            x = int(rng.uniform(0.05, 0.15) * w)
            img[:, x : x + thick] = (0.88, 0.47, 0.5)
    elif kind == "squared":
        gap = rng.uniform(10, 22) * scale
        img[:, np.arange(rng.uniform(0, gap), w, gap).astype(int)] = line_colour
        img[np.arange(rng.uniform(0, gap), h, gap).astype(int)] = line_colour
    elif kind == "whiteboard":
        _whiteboard_frame(rng, img, scale)
    # Fibre shows most on coloured construction paper and recycled paper; a board has none.
    if kind in ("coloured", "grey", "kraft"):
        fibre = rng.uniform(0.01, 0.05)
    else:
        fibre = 0.0 if kind == "whiteboard" else rng.uniform(0.0, 0.025)
    return img, float(fibre)


def _whiteboard_frame(rng, img: np.ndarray, scale: float) -> None:
    """The board's aluminium frame along the edges of the frame, in place."""
    h, w = img.shape[:2]
    band = max(2, int(rng.uniform(6, 16) * scale))
    metal = np.float32(rng.uniform(0.6, 0.8)) * np.float32([1.0, 1.0, 1.02])
    for side in rng.permutation(4)[: int(rng.integers(1, 4))]:
        edge = (
            np.s_[:band, :],
            np.s_[h - band :, :],
            np.s_[:, :band],
            np.s_[:, w - band :],
        )[int(side)]
        img[edge] = metal


def whiteboard_light(rng, sheet: np.ndarray) -> None:
    """Glare on a glossy board: a broad, soft highlight that washes out ink and board
    alike, in place (float32 RGB 0..1)."""
    h, w = sheet.shape[:2]
    gh, gw = 32, 32
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32) / np.float32(gh - 1)
    a = rng.uniform(0, np.pi)
    along = np.cos(a) * xx + np.sin(a) * yy
    glare = np.exp(-((along - rng.uniform(0.2, 0.8)) ** 2) / rng.uniform(0.005, 0.03))
    glare *= np.float32(rng.uniform(0.15, 0.55))
    g = cv2.resize(glare.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)[..., None]
    sheet *= 1.0 - g
    sheet += g


def ghosts(rng, shape: tuple[int, int], scale: float) -> Ink:
    """The smudged traces of drawings wiped off a whiteboard."""
    ink = Ink(
        rng, shape, "marker", np.float32([150, 150, 155]), scale, width=rng.uniform(8, 25) * scale
    )
    ink.opacity = rng.uniform(0.05, 0.18)
    h, w = shape
    for _ in range(int(rng.integers(1, 5))):
        n = int(rng.integers(3, 8))
        ink.stroke(np.stack([rng.uniform(0, w, n), rng.uniform(0, h, n)], 1))
    return ink


def colour_in_page(
    rng, shape: tuple[int, int], medium: str, scale: float, figure: np.ndarray
) -> list[Ink]:
    """The page coloured in all over (a sky and grass, or one colour), usually around the
    figure (`figure`: its filled silhouette, bool), sometimes over it."""
    h, w = shape
    if medium not in ("crayon", "marker", "coloured_pencil", "felt_tip"):
        medium = "crayon"  # nobody colours a page in with a graphite pencil
    horizon = rng.uniform(0.45, 0.85) * h
    edge = np.stack([np.linspace(-5, w + 5, 9), horizon + rng.normal(0, 0.02 * h, 9)], 1)
    sky = np.concatenate([[(-5, -5)], edge, [(w + 5, -5)]])
    grass = np.concatenate([[(-5, h + 5)], edge, [(w + 5, h + 5)]])
    whole = np.array([(-5, -5), (w + 5, -5), (w + 5, h + 5), (-5, h + 5)], float)
    kind = int(rng.integers(3))
    regions = [(sky, (70, 130, 230)), (grass, (50, 150, 50))] if kind == 0 else []
    if kind == 1:
        regions = [(sky, (70, 130, 230))]
    if kind == 2:
        regions = [(whole, tuple(int(v) for v in BRIGHT[int(rng.integers(len(BRIGHT)))]))]
    inks = []
    for polygon, rgb in regions:
        colour = np.clip(np.float32(rgb) * rng.uniform(0.85, 1.15, 3), 0, 255).astype(np.float32)
        ink = Ink(rng, shape, medium, colour, scale, width=rng.uniform(6, 16) * scale)
        ink.opacity *= rng.uniform(0.5, 1.0)
        ink.fill(polygon)
        inks.append(ink)
    if rng.random() < 0.75:  # coloured around the figure, leaving a margin of paper or not
        halo = int(rng.uniform(0, 10) * scale)
        around = figure.astype(np.uint8)
        if halo:
            around = cv2.dilate(
                around, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * halo + 1,) * 2)
            )
        for ink in inks:
            ink.layer[around > 0] = 0
    return inks


class Layout:
    """Free space on the page: rectangles already taken, so drawings do not overlap."""

    def __init__(self, h: int, w: int):
        self.h, self.w = h, w
        self.taken: list[tuple[float, float, float, float]] = []

    def take(self, box) -> None:
        self.taken.append(tuple(box))

    def find(self, rng, bw: float, bh: float, tries: int = 12, region=None):
        """A free box of size bw x bh (inside `region` if given), or None."""
        x_lo, y_lo, x_hi, y_hi = region or (0, 0, self.w, self.h)
        for _ in range(tries):
            if x_hi - x_lo <= bw or y_hi - y_lo <= bh:
                return None
            x = rng.uniform(x_lo, x_hi - bw)
            y = rng.uniform(y_lo, y_hi - bh)
            box = (x, y, x + bw, y + bh)
            if all(
                box[2] < t[0] or box[0] > t[2] or box[3] < t[1] or box[1] > t[3] for t in self.taken
            ):
                self.take(box)
                return box
        return None


def _sun(rng, ink: Ink, box) -> None:
    x0, y0, x1, y1 = box
    c = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    r = (x1 - x0) / 2 * 0.55
    t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    circle = c + np.stack([np.cos(t), np.sin(t)], 1) * r
    if rng.random() < 0.5:
        ink.fill(circle)
    ink.stroke(circle, closed=True)
    for a in np.linspace(0, 2 * np.pi, int(rng.integers(6, 13)), endpoint=False) + rng.uniform(
        0, 1
    ):
        d = np.array([np.cos(a), np.sin(a)])
        ink.stroke(np.array([c + d * r * 1.25, c + d * r * rng.uniform(1.6, 1.8)]))


def _house(rng, inks, box) -> None:
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    roof_y = y0 + h * rng.uniform(0.3, 0.45)
    wall = np.array(
        [(x0 + w * 0.1, roof_y), (x1 - w * 0.1, roof_y), (x1 - w * 0.1, y1), (x0 + w * 0.1, y1)]
    )
    roof = np.array([(x0, roof_y), ((x0 + x1) / 2, y0), (x1, roof_y)])
    if rng.random() < 0.5:
        inks[1].fill(roof)
    inks[0].stroke(wall, closed=True)
    inks[1].stroke(roof, closed=True)
    dw = w * 0.18
    door = np.array(
        [
            (x0 + w * 0.45, y1),
            (x0 + w * 0.45, y1 - h * 0.3),
            (x0 + w * 0.45 + dw, y1 - h * 0.3),
            (x0 + w * 0.45 + dw, y1),
        ]
    )
    inks[0].stroke(door)
    wx, wy, s = x0 + w * 0.2, roof_y + h * 0.1, w * 0.16
    inks[0].stroke(np.array([(wx, wy), (wx + s, wy), (wx + s, wy + s), (wx, wy + s)]), closed=True)


def _tree(rng, inks, box) -> None:
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    cx = (x0 + x1) / 2
    tw = w * rng.uniform(0.1, 0.2)
    crown_y = y0 + h * 0.35
    trunk = np.array(
        [(cx - tw, y1), (cx - tw, crown_y + h * 0.1), (cx + tw, crown_y + h * 0.1), (cx + tw, y1)]
    )
    inks[1].stroke(trunk)
    if rng.random() < 0.5:
        inks[1].fill(trunk)
    t = np.linspace(0, 2 * np.pi, 40)
    bump = 1 + 0.12 * np.sin(t * rng.integers(5, 9))
    crown = np.stack([cx + np.cos(t) * w * 0.48 * bump, crown_y + np.sin(t) * h * 0.33 * bump], 1)
    if rng.random() < 0.6:
        inks[0].fill(crown)
    inks[0].stroke(crown, closed=True)


def _scribble(rng, ink: Ink, box) -> None:
    x0, y0, x1, y1 = box
    n = int(rng.integers(6, 20))
    pts = np.stack([rng.uniform(x0, x1, n), rng.uniform(y0, y1, n)], 1)
    ink.stroke(pts)


def _flower(rng, inks, box) -> None:
    x0, y0, x1, y1 = box
    cx, w = (x0 + x1) / 2, x1 - x0
    head_y = y0 + w * 0.35
    inks[1].stroke(np.array([(cx, y1), (cx, head_y)]))
    for a in np.linspace(0, 2 * np.pi, int(rng.integers(5, 8)), endpoint=False):
        c = np.array([cx + np.cos(a) * w * 0.22, head_y + np.sin(a) * w * 0.22])
        t = np.linspace(0, 2 * np.pi, 10, endpoint=False)
        inks[0].stroke(c + np.stack([np.cos(t), np.sin(t)], 1) * w * 0.14, closed=True)


def _cloud(rng, ink: Ink, box) -> None:
    x0, y0, x1, y1 = box
    t = np.linspace(0, 2 * np.pi, 40)
    bump = 1 + 0.15 * np.abs(np.sin(t * rng.integers(3, 6)))
    pts = np.stack(
        [
            (x0 + x1) / 2 + np.cos(t) * (x1 - x0) / 2 * bump * 0.85,
            (y0 + y1) / 2 + np.sin(t) * (y1 - y0) / 2 * bump * 0.85,
        ],
        1,
    )
    ink.stroke(pts, closed=True)


def _heart(rng, ink: Ink, box) -> None:
    x0, y0, x1, y1 = box
    t = np.linspace(0, 2 * np.pi, 30)
    x = 16 * np.sin(t) ** 3
    y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
    pts = np.stack([(x + 17) / 34 * (x1 - x0) + x0, (y + 17) / 34 * (y1 - y0) + y0], 1)
    if rng.random() < 0.6:
        ink.fill(pts)
    ink.stroke(pts, closed=True)


LETTERS = "ABCDEFGHIJKLMNOPRSTUVWYZ"
WORDS = [
    "MUM",
    "DAD",
    "ME",
    "LILY",
    "TOM",
    "MIA",
    "SAM",
    "MOM",
    "I LOVE YOU",
    "EMMA",
    "LEO",
    "ZOE",
    "NOAH",
]


def _text(rng, ink: Ink, box, img_h: int, img_w: int) -> None:
    """Large shaky capitals, as a child writes a name."""
    x0, y0, x1, y1 = box
    word = (
        WORDS[int(rng.integers(len(WORDS)))]
        if rng.random() < 0.6
        else "".join(rng.choice(list(LETTERS), int(rng.integers(2, 6))))
    )
    font = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_PLAIN)[
        int(rng.integers(3))
    ]
    (tw, th), _ = cv2.getTextSize(word, font, 1.0, 2)
    fs = min((x1 - x0) / max(tw, 1) / 1.3, (y1 - y0) / max(th, 1))  # 1.3: loose spacing
    thick = max(1, int(ink.width * 0.8))
    size = int(th * fs * 1.8) + 2 * thick + 4
    x = x0
    for letter in word:
        (lw, _), _ = cv2.getTextSize(letter, font, fs, thick)
        if letter != " ":
            # Each letter on its own: tilted, resized, now and then back to front.
            patch = np.zeros((size, size), np.uint8)
            cv2.putText(
                patch,
                letter,
                ((size - lw) // 2, (size + int(th * fs)) // 2),
                font,
                fs,
                255,
                thick,
                cv2.LINE_AA,
            )
            m = cv2.getRotationMatrix2D(
                (size / 2, size / 2), rng.uniform(-18, 18), rng.uniform(0.8, 1.2)
            )
            patch = cv2.warpAffine(patch, m, (size, size))
            if rng.random() < 0.08:
                patch = patch[:, ::-1]
            px, py = (
                int(x + lw / 2 - size / 2),
                int((y0 + y1) / 2 - size / 2 + rng.normal(0, th * fs * 0.1)),
            )
            ink.paste(patch, px, py)
        x += lw * rng.uniform(0.95, 1.3)


def decorate(
    rng,
    canvas,
    layout: Layout,
    medium: str,
    scale: float,
    count: int,
    fig_box,
    margin,
    extra_figure,
):
    """Draw `count` page objects in the free space around the main figure: `fig_box` is
    its outline's box, `margin` how far its strokes may reach past it."""
    h, w = canvas.shape[:2]
    fig_h = fig_box[3] - fig_box[1]  # a second figure stays smaller than this
    fx0, fy0, fx1, fy1 = np.add(fig_box, (-margin, -margin, margin, margin))
    kinds = ["sun", "house", "tree", "text", "scribble", "flower", "cloud", "heart", "figure"]
    kinds += ["ground", "grass", "sky"]
    weights = np.array([2, 1.5, 1.5, 1.5, 1.5, 1, 1, 0.7, 1.5, 1.2, 0.8, 0.8])
    picks = rng.choice(len(kinds), size=count, p=weights / weights.sum())
    for k in picks:
        kind = kinds[int(k)]
        inks = [Ink(rng, (h, w), medium, pick_colour(rng, medium), scale) for _ in range(2)]
        if kind == "ground":
            # A ground line just under the feet, across the page.
            y = fy1 + rng.uniform(0.0, 0.08) * fig_h
            if y >= h - 3:
                continue
            xs = np.linspace(0, w, 12)
            inks[0].stroke(np.stack([xs, y + rng.normal(0, 2 * scale, 12)], 1))
            layout.take((0, y - 4, w, y + 4))
        elif kind in ("grass", "sky") and not (
            fy1 < h * 0.85 if kind == "grass" else fy0 > h * 0.15
        ):
            continue  # no room between the figure and the page's edge
        elif kind == "grass":
            # Green along the bottom of the page: blades, sometimes coloured in below.
            blade = rng.uniform(4, 14) * scale
            y = rng.uniform(fy1 + blade * 1.3, max(fy1 + blade * 1.3, min(h * 0.97, fy1 + 0.3 * h)))
            n = int(w / (rng.uniform(6, 14) * scale)) | 1
            xs = np.linspace(-5, w + 5, n)
            ys = y + np.where(np.arange(n) % 2 == 0, 0, -blade) + rng.normal(0, blade * 0.2, n)
            ys = np.minimum(ys, h)
            inks[0].colour = np.array([0.15, 0.55, 0.15]) * rng.uniform(0.8, 1.2)
            inks[0].stroke(np.stack([xs, ys], 1))
            if rng.random() < 0.5:
                inks[0].fill(np.array([(0, y), (w, y), (w, h + 5), (0, h + 5)]))
            layout.take((0, y - blade - 4, w, h))
        elif kind == "sky":
            y = rng.uniform(0.05 * h, min(fy0, 0.3 * h))
            xs = np.linspace(-5, w + 5, 9)
            edge = np.stack([xs, y + rng.normal(0, 0.02 * h, 9)], 1)
            inks[0].colour = np.array([0.25, 0.5, 0.9]) * rng.uniform(0.8, 1.1)
            inks[0].fill(np.concatenate([[(-5, -5)], edge, [(w + 5, -5)]]))
            layout.take((0, 0, w, y + 0.02 * h))
        elif kind == "sun":
            size = rng.uniform(0.1, 0.25) * min(h, w)
            corner_x = (0, w * 0.35) if rng.random() < 0.5 else (w * 0.65, w)
            box = layout.find(rng, size, size, region=(corner_x[0], 0, corner_x[1], h * 0.4))
            if box:
                inks[0].colour = (
                    np.array([0.96, 0.8, 0.1]) if rng.random() < 0.8 else inks[0].colour
                )
                _sun(rng, inks[0], box)
        elif kind in ("house", "tree"):
            size = rng.uniform(0.3, 0.85) * fig_h
            box = layout.find(rng, size * rng.uniform(0.7, 1.0), size)
            if box:
                if kind == "tree":
                    inks[0].colour = np.array([0.2, 0.6, 0.2])
                    inks[1].colour = np.array([0.45, 0.28, 0.12])
                    _tree(rng, inks, box)
                else:
                    _house(rng, inks, box)
        elif kind == "figure":
            size = rng.uniform(0.3, 0.8) * fig_h
            box = layout.find(rng, size * 0.75, size)
            if box:
                extra_figure(box)
        elif kind == "text":
            tw, th = rng.uniform(0.15, 0.5) * w, rng.uniform(0.04, 0.1) * h
            box = layout.find(rng, tw, th)
            if box:
                _text(rng, inks[0], box, h, w)
        else:
            size = rng.uniform(0.06, 0.2) * min(h, w)
            aspect = 2.0 if kind == "cloud" else 1.0
            box = layout.find(rng, size * aspect, size * (1.6 if kind == "flower" else 1.0))
            if box and kind == "flower":
                _flower(rng, inks, box)
            elif box:
                {"scribble": _scribble, "cloud": _cloud, "heart": _heart}[kind](rng, inks[0], box)
        for ink in inks:
            ink.composite(canvas)
