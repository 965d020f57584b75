"""Hand-drawn strokes: wobbly paths, drawing media, and inks composited onto paper.

An `Ink` is one colour of one medium. Strokes and fills are drawn into its own coverage
layer (uint8), then the layer is multiplied onto the paper once, so overlapping strokes of
one pen do not darken each other while different pens do, as on real paper.

An ink of the main figure also keeps a silhouette layer: what the child meant to draw
rather than what the tool left on the paper (a stroke's skipped chunks drawn, a scribbled
fill's whole region, the inside of a closed outline or of a limb's two lines). The
figure's mask label is made from it, so it follows AnimatedDrawings' convention: the
figure's filled silhouette, not its ink pixels.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numpy as np

GRAIN_SIZE = 1024


@dataclass(frozen=True)
class Medium:
    """How a drawing tool lays down colour (widths are px at a 512 px image)."""

    name: str
    width: tuple[float, float]  # stroke width range
    opacity: tuple[float, float]
    grain: str | None  # texture the stroke picks up from the paper
    pressure: float  # how much the width varies along a stroke (0..1)
    gaps: float  # chance per stroke chunk that the tool skips
    wobble: float  # hand tremor amplitude, px


MEDIA: dict[str, Medium] = {
    "crayon": Medium("crayon", (3.0, 7.5), (0.75, 0.95), "coarse", 0.45, 0.04, 1.4),
    "marker": Medium("marker", (4.0, 9.0), (0.85, 0.97), None, 0.1, 0.0, 1.0),
    "pencil": Medium("pencil", (1.2, 2.6), (0.45, 0.8), "fine", 0.35, 0.05, 0.9),
    "felt_tip": Medium("felt_tip", (2.0, 4.5), (0.85, 0.97), None, 0.2, 0.01, 0.9),
    # Thin, grainy and often faint, in any colour: a pencil's look in the training styles.
    "coloured_pencil": Medium("coloured_pencil", (1.3, 3.2), (0.35, 0.8), "fine", 0.35, 0.04, 0.9),
}
# Media whose strokes can be faint (a light hand): some drawings are barely there.
FAINT_MEDIA = ("pencil", "coloured_pencil")

# Colours children reach for (RGB 0..255).
BRIGHT = np.array(
    [
        (220, 30, 35),
        (235, 110, 20),
        (245, 200, 20),
        (40, 160, 50),
        (20, 110, 60),
        (30, 80, 200),
        (40, 170, 220),
        (130, 50, 170),
        (230, 80, 160),
        (120, 70, 30),
        (20, 20, 25),
        (60, 60, 70),
        (180, 120, 70),
        (250, 150, 170),
    ],
    dtype=np.float32,
)
DARK = np.array(
    [(20, 20, 25), (35, 35, 60), (20, 40, 120), (90, 20, 20), (25, 70, 30), (70, 40, 20)],
    dtype=np.float32,
)
GRAPHITE = np.array([(70, 70, 75), (95, 95, 100), (55, 55, 60)], dtype=np.float32)


@functools.cache
def grain_texture(kind: str) -> np.ndarray:
    """A fixed tileable-enough texture (float32 0..1) a crayon or pencil stroke picks up."""
    rng = np.random.default_rng(12345 if kind == "coarse" else 54321)
    noise = rng.random((GRAIN_SIZE, GRAIN_SIZE), dtype=np.float32)
    if kind == "coarse":
        # Wax catches the paper's tooth: blotchy, streaky coverage with bare specks.
        tex = cv2.GaussianBlur(noise, (0, 0), 1.2)
        streak = cv2.blur(rng.random((GRAIN_SIZE, GRAIN_SIZE), dtype=np.float32), (9, 2))
        tex = 0.6 * tex + 0.4 * streak
        tex = np.clip((tex - tex.mean()) * 9.0 + 0.7, 0.0, 1.0)
    else:
        tex = cv2.GaussianBlur(noise, (0, 0), 0.6)
        tex = np.clip((tex - tex.mean()) * 7.0 + 0.75, 0.15, 1.0)
    return tex.astype(np.float32)


def texture_crop(rng: np.random.Generator, tex: np.ndarray, h: int, w: int) -> np.ndarray:
    """A random h x w window of a texture (repeated if the window is larger)."""
    th, tw = tex.shape[:2]
    if h > th or w > tw:
        tex = np.tile(tex, (h // th + 1, w // tw + 1) + (1,) * (tex.ndim - 2))
        th, tw = tex.shape[:2]
    oy, ox = int(rng.integers(0, th - h + 1)), int(rng.integers(0, tw - w + 1))
    return tex[oy : oy + h, ox : ox + w]


SKIN = np.array(
    [
        (250, 215, 185),
        (240, 195, 160),
        (210, 160, 115),
        (165, 115, 75),
        (115, 80, 55),
        (255, 200, 190),
    ],
    dtype=np.float32,
)


def pick_colour(
    rng: np.random.Generator, medium: str, dark: bool = False, skin: bool = False
) -> np.ndarray:
    if skin:
        palette = SKIN
    elif medium == "pencil" and (dark or rng.random() < 0.7):
        palette = GRAPHITE
    else:
        palette = DARK if dark else BRIGHT
    colour = palette[rng.integers(len(palette))] + rng.normal(0, 8, 3)
    return np.clip(colour, 0, 255).astype(np.float32)


def resample(points: np.ndarray, step: float) -> np.ndarray:
    """Points every `step` px along a polyline (ends kept)."""
    d = np.diff(points, axis=0)
    length = np.concatenate([[0.0], np.cumsum(np.hypot(d[:, 0], d[:, 1]))])
    total = length[-1]
    if total < 1e-6:
        return points[:1].repeat(2, axis=0)
    n = max(2, int(np.ceil(total / step)) + 1)
    t = np.arange(n) * (total / (n - 1))
    out = np.empty((n, 2))
    out[:, 0] = np.interp(t, length, points[:, 0])
    out[:, 1] = np.interp(t, length, points[:, 1])
    return out


def wobble(rng: np.random.Generator, points: np.ndarray, amp: float, step: float = 4.0):
    """Resample a path and bend it sideways with smooth low-frequency tremor."""
    pts = resample(points, step)
    n = len(pts)
    if amp <= 0 or n < 3:
        return pts
    d = np.empty_like(pts)
    d[1:-1] = pts[2:] - pts[:-2]
    d[0], d[-1] = pts[1] - pts[0], pts[-1] - pts[-2]
    norm = np.hypot(d[:, 0], d[:, 1]) + 1e-9
    # Two sine waves along the path: a slow drift of the hand and a faster tremor.
    r = rng.random(4)
    s = np.arange(n) * (2 * np.pi * step)
    offset = np.sin(s / (40 + 80 * r[0]) + 6.3 * r[1]) + np.sin(s / (12 + 18 * r[2]) + 6.3 * r[3])
    offset = (offset * (amp / 2) + rng.normal(0, amp * 0.15, n)) / norm
    pts[:, 0] -= d[:, 1] * offset
    pts[:, 1] += d[:, 0] * offset
    return pts


class Ink:
    """One colour of one medium: a coverage layer that strokes and fills draw into."""

    def __init__(
        self,
        rng: np.random.Generator,
        shape: tuple[int, int],
        medium: str,
        colour: np.ndarray,
        scale: float,
        width: float | None = None,
        silhouette: bool = False,
    ):
        self.rng = rng
        self.medium = MEDIA[medium]
        self.colour = colour / 255.0
        self.scale = scale  # px per "512 px image" px: widths and tremor follow image size
        self.width = width if width is not None else rng.uniform(*self.medium.width) * scale
        self.opacity = rng.uniform(*self.medium.opacity)
        self.layer = np.zeros(shape, np.uint8)
        # What was meant to be drawn (see the module's docstring); only the figure needs it.
        self.solid = np.zeros(shape, np.uint8) if silhouette else None
        self.box = [shape[1], shape[0], 0, 0]  # drawn extent x0, y0, x1, y1

    def _grow(self, pts: np.ndarray, pad: float) -> None:
        lo = pts.min(axis=0) - pad
        hi = pts.max(axis=0) + pad
        b = self.box
        b[0], b[1] = min(b[0], int(lo[0])), min(b[1], int(lo[1]))
        b[2], b[3] = max(b[2], int(np.ceil(hi[0]))), max(b[3], int(np.ceil(hi[1])))

    def stroke(
        self,
        points: np.ndarray,
        closed: bool = False,
        width: float | None = None,
        tremor=1.0,
        encloses: bool = False,
    ) -> None:
        """A hand-drawn line along `points` (px): tremor, pressure and skips.

        `encloses`: what the line goes round belongs to the drawing (a head, a limb's two
        lines): the silhouette gets the inside too, even where the line does not close."""
        width = max(1.0, (width or self.width) * self.rng.uniform(0.85, 1.15))
        pts = np.asarray(points, np.float64)
        if closed:
            # A child's closed loop rarely meets itself exactly: overshoot or fall short.
            over = self.rng.uniform(-0.04, 0.12)
            n = len(pts)
            extra = int(abs(over) * n)
            pts = np.concatenate([pts, pts[: extra + 1]]) if over > 0 else pts[: max(2, n - extra)]
        step = max(3.5, width * 0.9)
        amp = self.medium.wobble * self.scale * tremor * self.rng.uniform(0.5, 1.5)
        pts = wobble(self.rng, pts, amp, step)
        self._grow(pts, width + 2)
        med = self.medium
        # Chunks of a few points, each with its own pressure; some chunks skipped (gaps).
        chunk = int(self.rng.integers(3, 8))
        starts = np.arange(0, len(pts) - 1, chunk)
        pressure = 1 + med.pressure * np.sin(
            starts * self.rng.uniform(0.2, 0.9) + self.rng.uniform(0, 6)
        )
        widths = np.maximum(1, np.round(width * pressure)).astype(int)
        skip = self.rng.random(len(starts)) < med.gaps
        skip[0] = skip[-1] = False  # the ends are where the joints are: always drawn
        ipts = np.round(pts * 4).astype(np.int32)
        by_width: dict[int, list[np.ndarray]] = {}
        meant: dict[int, list[np.ndarray]] = {}
        for start, w, gap in zip(starts.tolist(), widths.tolist(), skip.tolist(), strict=True):
            seg = ipts[start : start + chunk + 1]
            meant.setdefault(w, []).append(seg)
            if not gap:
                by_width.setdefault(w, []).append(seg)
        for w, segs in by_width.items():
            cv2.polylines(self.layer, segs, False, 255, w, cv2.LINE_AA, shift=2)
        if self.solid is not None:
            for w, segs in meant.items():
                cv2.polylines(self.solid, segs, False, 255, w, cv2.LINE_AA, shift=2)
            if encloses:
                cv2.fillPoly(self.solid, [ipts], 255, cv2.LINE_AA, shift=2)

    def fill(self, polygon: np.ndarray, hatched: bool | None = None) -> None:
        """Colour in a region: solid for markers, back-and-forth scribble for wax and lead."""
        poly = np.asarray(polygon, np.float64)
        poly = wobble(self.rng, np.concatenate([poly, poly[:1]]), self.scale * 0.8, 6.0)
        self._grow(poly, 3)
        ipoly = np.round(poly * 4).astype(np.int32)
        if self.solid is not None:
            cv2.fillPoly(self.solid, [ipoly], 255, cv2.LINE_AA, shift=2)
        if hatched is None:
            hatched = self.medium.grain is not None or self.rng.random() < 0.3
        if not hatched:
            cv2.fillPoly(self.layer, [ipoly], 255, cv2.LINE_AA, shift=2)
            return
        # A hasty hand scribbles past the outline, and leaves paper between the zig-zags.
        spill = int(self.rng.uniform(1, 1.5 * self.width + 2)) if self.rng.random() < 0.4 else 1
        sparse = self.rng.random() < 0.3
        pad = spill + 2
        x0, y0 = np.floor(poly.min(axis=0)).astype(int) - pad
        x1, y1 = np.ceil(poly.max(axis=0)).astype(int) + pad
        h, w = y1 - y0 + 1, x1 - x0 + 1
        region = np.zeros((h, w), np.uint8)
        cv2.fillPoly(region, [ipoly - np.int32([x0 * 4, y0 * 4])], 255, cv2.LINE_8, shift=2)
        # Zig-zag scribble across the region at a slant, spilling past the edge.
        spacing = max(2.0, self.width * self.rng.uniform(*((1.4, 2.6) if sparse else (0.6, 1.3))))
        angle = self.rng.uniform(-0.6, 0.6) + (np.pi / 2 if self.rng.random() < 0.5 else 0)
        diag = float(np.hypot(h, w))
        n = int(diag / spacing) + 2
        u = np.linspace(-diag / 2, diag / 2, n)
        ends = np.where(np.arange(n) % 2 == 0, -diag / 2, diag / 2)
        c, s = np.cos(angle), np.sin(angle)
        zig = np.stack([u * c - ends * s + w / 2, u * s + ends * c + h / 2], 1)
        zig += self.rng.normal(0, spacing * 0.25, zig.shape)
        scribble = np.zeros_like(region)
        cv2.polylines(
            scribble,
            [np.round(zig * 4).astype(np.int32)],
            False,
            255,
            max(1, int(self.width * 1.1)),
            cv2.LINE_AA,
            shift=2,
        )
        region = cv2.dilate(region, np.ones((2 * spill + 1, 2 * spill + 1), np.uint8))
        covered = cv2.min(scribble, region)
        self.paste(covered, x0, y0)  # the spill is ink on the figure: in its silhouette too

    def paste(self, patch: np.ndarray, x0: int, y0: int) -> None:
        """Add a coverage patch (uint8) whose top-left corner is at (x0, y0)."""
        self._grow(np.array([[x0, y0], [x0 + patch.shape[1], y0 + patch.shape[0]]]), 1)
        self._paste_into(self.layer, patch, x0, y0)
        if self.solid is not None:
            self._paste_into(self.solid, patch, x0, y0)

    @staticmethod
    def _paste_into(layer: np.ndarray, patch: np.ndarray, x0: int, y0: int) -> None:
        H, W = layer.shape
        ph, pw = patch.shape
        ax0, ay0 = max(0, x0), max(0, y0)
        ax1, ay1 = min(W, x0 + pw), min(H, y0 + ph)
        if ax1 <= ax0 or ay1 <= ay0:
            return
        sub = patch[ay0 - y0 : ay1 - y0, ax0 - x0 : ax1 - x0]
        dst = layer[ay0:ay1, ax0:ax1]
        np.maximum(dst, sub, out=dst)

    def roi(self) -> tuple[slice, slice] | None:
        H, W = self.layer.shape
        x0, y0 = max(0, self.box[0]), max(0, self.box[1])
        x1, y1 = min(W, self.box[2] + 1), min(H, self.box[3] + 1)
        if x1 <= x0 or y1 <= y0:
            return None
        return slice(y0, y1), slice(x0, x1)

    def silhouette(self, mask: np.ndarray) -> None:
        """Mark in `mask` (uint8) what this ink meant to draw (its ink where it keeps none)."""
        roi = self.roi()
        if roi is not None:
            layer = self.layer if self.solid is None else self.solid
            mask[roi] |= layer[roi] > 96

    def composite(self, paper: np.ndarray) -> None:
        """Multiply this ink onto `paper` (float32 RGB 0..1)."""
        roi = self.roi()
        if roi is None:
            return
        cover = self.layer[roi]
        alpha = cover.astype(np.float32) * (self.opacity / 255.0)
        if self.medium.grain:
            tex = grain_texture(self.medium.grain)
            if self.rng.random() < 0.5:  # wax streaks run the way the hand moved
                tex = tex.T
            alpha *= texture_crop(self.rng, tex, *cover.shape)
        # Per channel, paper *= 1 - alpha * (1 - colour). cv2 builds the 3-channel factor:
        # numpy broadcasting over a last axis of 3 is several times slower.
        factor = cv2.merge(
            [cv2.addWeighted(alpha, float(c) - 1.0, alpha, 0.0, 1.0) for c in self.colour]
        )
        region = paper[roi]
        np.multiply(region, factor, out=region)
