"""The texture cleaned once per character: the paper flattened, the drawing's colours reduced
to a palette chosen by measured error.

A photographed drawing is strokes and fills on an unevenly lit, grainy page. Drawn as it
is, the grain and the light gradient become hundreds of near-equal colours that LZW cannot
pack and that shimmer as the figure moves. The steps, all on the (H, W) crop:

1. light: the paper's colour across the crop, from the paper around the figure (outside
   the mask), smoothed over an eighth of the crop and extended under the figure;
   dividing by it removes shading and a coloured cast (what is left is how much each
   pixel darkens the paper);
2. paper: inside the figure, a pixel whose darkest channel and whose hue are both within
   the photo's own paper grain of the paper (measured on the paper around it) becomes one
   colour, so an uncoloured belly is as flat as the page around it, while a pastel crayon
   fill (a pink skirt darkens the page little) stays ink. That colour is white where the
   page has little colour of its own (`page_colour`: white paper, photographed grey or
   cream under a lamp), else the page's median colour (coloured card);
3. ink: strokes and fills keep their colour on that page: how much each darkens the paper,
   times the page's colour (on white paper, the colour drawn, not dimmed and tinted by the
   photo's light); an edge-preserving (bilateral) filter evens the grain of marker and
   crayon without moving a stroke's edge. A faint drawing is drawn bolder (`_bolder`):
   each ink darkens the page that many times more, so that its strongest strokes do as
   much as a pencil pressed firmly;
4. palette: the fewest colours, from a ladder, whose mean CIELAB error over the ink is at
   most `MAX_DELTA_E`, each ink pixel weighted by how far it stands out from the paper (a
   stroke's core counts more than its pale fringe, as it does to the eye); a marker or
   pencil drawing gets a few colours, a crayon one more, and paper is always one of them.
   Ink that stands out from the paper may not be drawn as paper (`STROKE_DELTA_E`): a
   face's thin lines beside a big yellow dress are few pixels, and the mean error alone
   let them vanish. Each pixel takes its nearest palette colour (no dithering: a dithered
   pattern shimmers under motion and packs badly).

On a dark page (`paper.light_page`) steps 1-3 run on the negated crop and their colours
are negated back. A texture with no paper around the figure (a drawing app's export with
a transparent background, the generated test character) skips steps 1-3.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from animation.paper import light_page

# Mean CIELAB error the palette may add over the ink. 2.3 is a just-noticeable difference
# between two flat patches side by side; at 6 every stroke and fill of the real drawings
# keeps its own hue (looked at, 4x zoom), a crayon fill keeps a few tones of its colour
# instead of its grain, and the photo's frames stay close to the photo's own colours
# (tests/support/quality.py). At 5 a crayon drawing needed many more colours for grain
# no one sees at 256 px, and its GIFs many more bytes (docs/BENCHMARKS.md, section
# palette-strokes).
MAX_DELTA_E = 6.0
MAX_COLOURS = 255  # with one more index for the transparent background
PAPER_GAP = 5  # px kept between the mask and the paper that measures the light
MIN_PAPER_PIXELS = 500  # fewer and the light is not measured: no paper step
MIN_INK_CONTRAST = 0.04  # darkest-channel ratio below the paper's that is always ink
# CIELAB distance in hue and saturation (a*, b*) from the paper that is always ink: a
# colour a little past a just-noticeable difference.
MIN_INK_CHROMA = 5.0
GRAIN_SIGMAS = 4.0  # robust standard deviations of the paper's grain that are still paper
# Ink standing out from the paper by this much (CIELAB) is a stroke one sees; at most
# LOST_INK of the ink may be drawn in the paper's colour.
STROKE_DELTA_E = 2 * MAX_DELTA_E
LOST_INK = 0.01
_LIGHT_SCALE = 8  # the light is smooth: measure it at 1/8 of the crop's size
# The bilateral filter over the ink: window (px), colour range (RGB units: grain is under
# it, a stroke's edge against paper far over it) and passes.
SMOOTH_WINDOW, SMOOTH_RANGE, SMOOTH_PASSES = 9, 40.0, 2
_COLOUR_LADDER = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 254)
_PALETTE_SAMPLE = 3_000  # ink pixels the palette is fitted and scored on
_GRAIN_SAMPLE = 20_000  # pixels of the paper around the figure its grain in hue is measured on
_PALETTE_PRESAMPLE = 10  # times as many, evenly spaced, that sample is drawn from
_FIRST_RUNG = 3  # the palette search's first try: _COLOUR_LADDER[3] = 4 colours
# A page within this CIELAB chroma of grey is white paper, whatever its shade in the photo:
# the real photos' pages lie at lightness 40-100 and chroma 0-15 (a lamp's cream, a dim
# room's grey), and drawn in that colour a girl on a grey page was a grey silhouette and
# red buttons came out brown. Coloured card lies far beyond (real photo 31's blue: 24).
NEUTRAL_PAGE_CHROMA = 18.0
WHITE_PAGE = np.array([255.0, 255.0, 255.0])
# A faint drawing's strokes darken the page so little that, shrunk to an animation's size,
# they vanish into it (real photos 33 and 22, pencil; 38, coloured pencil: their strongest
# strokes, the FAINT_SHARE darkest of the ink, darken the page by 0.29-0.37 of its light).
# Such ink is drawn up to MAX_BOLDER times darker against the page, until those strokes
# darken it by FAINT_TARGET, about a firmly pressed pencil's (real photo 02's: 0.57). A
# marker or crayon drawing is past it and stays as it is (30 of the 42 real drawings).
FAINT_SHARE, FAINT_TARGET, MAX_BOLDER = 0.1, 0.6, 2.5


@dataclass(frozen=True)
class PalettedTexture:
    """The cleaned texture as palette indices."""

    palette: np.ndarray  # (K, 3) uint8, K <= 255
    index: np.ndarray  # (H, W) uint8: a palette index on the region, `transparent` elsewhere
    paper: np.ndarray  # (H, W) bool: region pixels that were flattened to the paper colour
    bolder: float = 1.0  # how many times the ink darkens the page more than photographed

    @property
    def transparent(self) -> int:
        """The index of the background: the first one after the palette."""
        return len(self.palette)

    def within(self, region: np.ndarray) -> PalettedTexture:
        """The same texture drawn only on `region` (H, W) bool, background elsewhere."""
        index = np.where(region, self.index, np.uint8(self.transparent))
        return PalettedTexture(self.palette, index, self.paper & region, self.bolder)


def clean_texture(
    texture: np.ndarray, region: np.ndarray, max_delta_e: float = MAX_DELTA_E
) -> PalettedTexture:
    """(H, W, 4) uint8 RGBA texture and (H, W) bool region to draw -> the paletted texture."""
    rgb = texture[..., :3]
    paper_known = paper_around(region, texture[..., 3] > 0)
    if paper_known.sum() >= MIN_PAPER_PIXELS:
        # On a dark page the drawing is lighter than its paper: measured negated, as the
        # mask was found (`paper.light_page`), else all of it reads as paper.
        seen = light_page(rgb)
        paper_colour = page_colour(np.median(seen[paper_known], axis=0))
        colours, paper = _flatten_paper(seen, region, paper_known, paper_colour)
        colours, bolder = _bolder(colours, region & ~paper, paper_colour)
        if seen is not rgb:
            colours, paper_colour = 255 - colours, 255 - paper_colour
    else:
        colours, paper, paper_colour = rgb.astype(np.float32), np.zeros_like(region), None
        bolder = 1.0
    ink = region & ~paper
    fixed = np.zeros((0, 3)) if paper_colour is None else paper_colour[None]
    palette = choose_palette(colours[ink], fixed, max_delta_e)
    index = np.full(region.shape, len(palette), np.uint8)
    index[paper] = 0
    index[ink] = nearest_colour(colours[ink], palette)
    return PalettedTexture(palette=palette, index=index, paper=paper, bolder=bolder)


def page_colour(median: np.ndarray) -> np.ndarray:
    """(3,) float RGB the paper is drawn in, from the (3,) median colour of the page as
    photographed (on a dark page, negated): white for a page of little colour (within
    NEUTRAL_PAGE_CHROMA of grey), else that median."""
    lab = _lab(np.clip(np.round(median), 0, 255).astype(np.uint8)[None])[0]
    if np.hypot(lab[1], lab[2]) <= NEUTRAL_PAGE_CHROMA:
        return WHITE_PAGE.copy()
    return np.asarray(median, np.float64)


def paper_around(region: np.ndarray, opaque: np.ndarray) -> np.ndarray:
    """Pixels that are surely paper: opaque, and `PAPER_GAP` px clear of the figure."""
    size = 2 * PAPER_GAP + 1
    near = cv2.dilate(region.astype(np.uint8), np.ones((size, size), np.uint8)).astype(bool)
    return opaque & ~near


def _flatten_paper(
    rgb: np.ndarray, region: np.ndarray, paper_known: np.ndarray, page: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(the crop with the light flattened and the ink smoothed, as (H, W, 3) float32, and
    the region's pixels that are paper); `page` (3,): the colour the paper is drawn in
    (`page_colour`)."""
    light = _paper_light(rgb, paper_known)
    ratio = rgb.astype(np.float32) / light  # 1 on paper, lower where something darkens it
    # The darkest channel (np.minimum over the planes: far faster than a min over the last axis).
    darkest = np.minimum(np.minimum(ratio[..., 0], ratio[..., 1]), ratio[..., 2])
    level, spread = _grain(darkest[paper_known])
    paper = region & (darkest >= level - max(spread, MIN_INK_CONTRAST))
    paper_colour = page.astype(np.float32)
    # Lighter than the paper (grain, a white crayon) is at most white.
    colours = np.minimum(ratio * paper_colour, np.float32(255.0))
    # Of those, the ones of another hue than the paper's are ink (pastel crayon). The
    # paper's grain in hue is measured on an even sample of the paper around the figure.
    known = colours[paper_known]
    level, spread = _grain(
        _chroma_from(known[:: max(1, len(known) // _GRAIN_SAMPLE)], paper_colour)
    )
    paper[paper] = _chroma_from(colours[paper], paper_colour) <= level + max(spread, MIN_INK_CHROMA)
    colours[~region] = paper_colour  # nothing outside the figure bleeds into its edge
    colours[paper] = paper_colour
    # Even out the grain of the ink: the range term keeps a stroke's edge where it is.
    # Only around the ink: beyond it all is paper colour, which the filter leaves as it is
    # (a margin of the passes' reach keeps every pixel's neighbourhood the same).
    ink = region & ~paper
    if ink.any():
        x, y, w, h = cv2.boundingRect(ink.astype(np.uint8))
        reach = SMOOTH_PASSES * (SMOOTH_WINDOW // 2 + 1)
        rows = slice(max(0, y - reach), min(ink.shape[0], y + h + reach))
        cols = slice(max(0, x - reach), min(ink.shape[1], x + w + reach))
        window, flat = colours[rows, cols], paper[rows, cols]
        for _ in range(SMOOTH_PASSES):
            window = cv2.bilateralFilter(window, SMOOTH_WINDOW, SMOOTH_RANGE, SMOOTH_WINDOW / 2)
            window[flat] = paper_colour
        colours[rows, cols] = window
    return colours, paper


def _bolder(colours: np.ndarray, ink: np.ndarray, page: np.ndarray) -> tuple[np.ndarray, float]:
    """(`colours`, (H, W, 3) float32 on the `page` (3,) colour, with the `ink` (H, W) bool
    drawn bolder where the drawing is faint; the factor, 1 for none). A pixel's darkness
    is how much its darkest channel darkens the page (0 paper, 1 black); the FAINT_SHARE
    darkest of the ink are brought to FAINT_TARGET, every ink pixel by the same factor (at
    most MAX_BOLDER), so the strokes' hues and their order of darkness stay."""
    if not ink.any():
        return colours, 1.0
    page = page.astype(np.float32)
    drawn = colours[ink]
    darkness = 1.0 - (drawn / np.maximum(page, 1.0)).min(axis=1)
    strongest = float(np.quantile(darkness, 1.0 - FAINT_SHARE))
    bolder = float(np.clip(FAINT_TARGET / max(strongest, 1e-3), 1.0, MAX_BOLDER))
    if bolder > 1.0:
        colours[ink] = np.clip(page - bolder * (page - drawn), 0.0, 255.0)
    return colours, bolder


def _grain(values: np.ndarray) -> tuple[float, float]:
    """(N,) measures of the paper around the figure -> their median and GRAIN_SIGMAS robust
    standard deviations (specks of dirt do not widen it)."""
    level = float(np.median(values))
    return level, GRAIN_SIGMAS * 1.4826 * float(np.median(np.abs(values - level)))


def _chroma_from(colours: np.ndarray, paper: np.ndarray) -> np.ndarray:
    """(N,) CIELAB distance in a* and b* of (N, 3) float RGB `colours` from `paper` (3,)."""
    lab = _lab(np.clip(np.round(colours), 0, 255).astype(np.uint8))
    ref = _lab(np.clip(np.round(paper), 0, 255).astype(np.uint8)[None])[0]
    return np.hypot(lab[:, 1] - ref[1], lab[:, 2] - ref[2])


def _paper_light(rgb: np.ndarray, paper_known: np.ndarray) -> np.ndarray:
    """(H, W, 3) float32: the paper's colour at every pixel, from the known paper pixels.

    At 1/8 scale, over the cells that are all paper: a quadratic surface per channel
    (a photo's light is a gradient with some vignetting; a fit has no bias at the crop's
    edges), then what the quadratic misses (a soft shadow) by a normalised convolution of
    the ratio: the cells' ratios and their count blurred alike and divided, which also
    fills the figure's area from the paper around it.
    """
    h, w = paper_known.shape
    small = (max(1, w // _LIGHT_SCALE), max(1, h // _LIGHT_SCALE))
    weight = cv2.resize(paper_known.astype(np.float32), small, interpolation=cv2.INTER_AREA)
    weight = (weight > 0.99).astype(np.float32)  # cells with no ink in them at all
    colour = cv2.resize(rgb.astype(np.float32), small, interpolation=cv2.INTER_AREA)
    if weight.sum() < 6:  # too little paper for a surface: one colour
        known = paper_known if paper_known.any() else np.ones_like(paper_known)
        return np.broadcast_to(np.median(rgb[known], axis=0), rgb.shape).astype(np.float32)
    gy, gx = np.mgrid[-1 : 1 : small[1] * 1j, -1 : 1 : small[0] * 1j]
    terms = np.stack([np.ones_like(gx), gx, gy, gx * gx, gx * gy, gy * gy], axis=-1)
    cells = weight > 0
    coef, *_ = np.linalg.lstsq(terms[cells], colour[cells], rcond=None)
    surface = np.maximum(terms @ coef, 1.0).astype(np.float32)  # (h', w', 3)
    ratio = np.where(cells[..., None], colour / surface, 0).astype(np.float32)
    sigma = max(small) / 8
    num = cv2.GaussianBlur(ratio * weight[..., None], (0, 0), sigma)
    den = cv2.GaussianBlur(weight, (0, 0), sigma)
    residual = np.where(den[..., None] > 1e-3, num / np.maximum(den, 1e-6)[..., None], 1.0)
    light = cv2.resize(surface * residual, (w, h), interpolation=cv2.INTER_LINEAR)
    return np.maximum(light, 1.0)


def choose_palette(
    colours: np.ndarray, fixed: np.ndarray, max_delta_e: float = MAX_DELTA_E
) -> np.ndarray:
    """(K, 3) uint8: `fixed` (F, 3) colours first, then the fewest quantised colours of
    `colours` (N, 3) that meet the bounds (`palette_meets`: a mean CIELAB error of at most
    `max_delta_e`, no stroke drawn as paper), fitted and measured on `palette_sample` (a
    pixel counts by how far it stands out from the paper).

    The count is searched on a ladder (1, 2, 3, 4, 6, ..., 254): the error falls as
    colours are added, steeply while they still split real inks apart, slowly once they
    only split grain. A child's drawing needs few, and a quantisation costs more the more
    colours it makes, so the search climbs from ``_FIRST_RUNG`` in growing strides (4, 6,
    12, 32, 128 colours) while the error is too high, then bisects the last stride.
    """
    fixed = np.round(np.asarray(fixed, np.float64)).astype(np.uint8).reshape(-1, 3)
    if len(colours) == 0:
        return fixed if len(fixed) else np.zeros((1, 3), np.uint8)
    sample = palette_sample(colours, fixed)
    ladder = [k for k in _COLOUR_LADDER if k + len(fixed) <= MAX_COLOURS]

    def meets(rung: int) -> np.ndarray | None:
        """The palette of ladder[rung] colours, if its error meets the bound."""
        palette = np.vstack([fixed, _quantise(sample, ladder[rung])])
        return palette if palette_meets(sample, palette, len(fixed), max_delta_e) else None

    # Climb: rungs lo..hi hold the first that meets the bound (the last rung, quantised
    # only when no earlier one does, if none).
    lo, hi, best = 0, len(ladder) - 1, None
    rung, stride = min(_FIRST_RUNG, hi), 1
    while rung < hi:
        best = meets(rung)
        if best is not None:
            hi = rung
            break
        lo, rung, stride = rung + 1, min(rung + stride, hi), stride + 1
    hi -= 1  # ladder[hi + 1] is `best` (or the last rung)
    while lo <= hi:  # bisect for the first rung that meets it
        mid = (lo + hi) // 2
        palette = meets(mid)
        if palette is not None:
            best, hi = palette, mid - 1
        else:
            lo = mid + 1
    return np.vstack([fixed, _quantise(sample, ladder[-1])]) if best is None else best


def palette_meets(
    sample: np.ndarray, palette: np.ndarray, fixed: int, max_delta_e: float = MAX_DELTA_E
) -> bool:
    """Whether `palette` (K, 3) uint8, its first `fixed` entries the paper's (if any), draws
    the (N, 3) uint8 `sample` well enough: a mean CIELAB error of at most `max_delta_e`, and
    at most LOST_INK of it standing out from the paper by STROKE_DELTA_E but drawn in the
    paper's colour."""
    nearest = nearest_colour(sample, palette)
    sample_lab = _lab(sample)
    if np.linalg.norm(_lab(palette[nearest]) - sample_lab, axis=1).mean() > max_delta_e:
        return False
    if not fixed:
        return True
    stand_out = np.linalg.norm(sample_lab - _lab(palette[:1]), axis=1)
    return bool(((nearest == 0) & (stand_out > STROKE_DELTA_E)).mean() <= LOST_INK)


def palette_sample(colours: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """(N, 3) uint8: the pixels of `colours` (M, 3) a palette is fitted and scored on.

    With a paper colour (`fixed[0]`), each is drawn with a chance in proportion to its
    CIELAB distance from the paper: how much it stands out. A faint drawing's ink is mostly
    the pale fringe of its strokes; counted alike, the fringe outweighs the strokes' cores,
    whose colour the palette then washes out (a biro drawing's blue lines came out grey-blue,
    13 delta E lighter). Seeded, so that a drawing always gets the same palette."""
    step = max(1, len(colours) // (_PALETTE_SAMPLE * _PALETTE_PRESAMPLE))
    pixels = np.clip(np.round(colours[::step]), 0, 255).astype(np.uint8)
    stand_out = np.linalg.norm(_lab(pixels) - _lab(fixed[:1]), axis=1) if len(fixed) else None
    if stand_out is None or stand_out.sum() <= 0:  # no paper, or nothing but paper: evenly
        return pixels[:: max(1, len(pixels) // _PALETTE_SAMPLE)]
    chosen = np.random.default_rng(0).choice(
        len(pixels), size=_PALETTE_SAMPLE, p=stand_out / stand_out.sum()
    )
    return pixels[chosen]


QUANTISER = (Image.Quantize.MEDIANCUT, 2)


def _quantise(pixels: np.ndarray, colours: int) -> np.ndarray:
    """(<= colours, 3) uint8: median cut of (N, 3) uint8 pixels, refined by k-means."""
    quantised = Image.fromarray(pixels[None]).quantize(
        colors=colours, method=QUANTISER[0], kmeans=QUANTISER[1], dither=Image.Dither.NONE
    )
    used = np.unique(np.asarray(quantised))
    palette = np.frombuffer(bytes(quantised.getpalette()[: 3 * (int(used.max()) + 1)]), np.uint8)
    return palette.reshape(-1, 3)[used]


def nearest_colour(colours: np.ndarray, palette: np.ndarray) -> np.ndarray:
    """(N,) uint8: the index of the nearest `palette` (K, 3) entry to each (N, 3) colour.

    Through a lookup table over RGB at 6 bits a channel: 2**18 cells, each resolved once.
    """
    pal = palette.astype(np.float32)
    cells = np.clip(np.asarray(colours, np.float32), 0, 255).astype(np.int32) >> 2
    key = (cells[:, 0] << 12) | (cells[:, 1] << 6) | cells[:, 2]
    used = np.flatnonzero(np.bincount(key, minlength=1 << 18))  # no sort: a drawing uses few
    centres = np.column_stack([used >> 12, (used >> 6) & 63, used & 63]).astype(np.float32)
    centres = centres * 4 + 1.5
    table = np.zeros(1 << 18, np.uint8)
    for start in range(0, len(used), 4096):  # bounds the (cells, K) distance block
        block = centres[start : start + 4096]
        d = ((block[:, None, :] - pal[None]) ** 2).sum(axis=2)
        table[used[start : start + 4096]] = d.argmin(axis=1)
    return table[key]


# sRGB (D65) -> XYZ, rows scaled by the white point so that white is (1, 1, 1).
_RGB_TO_XYZ = np.array(
    [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
) / np.array([[0.95047], [1.0], [1.08883]])
_CODES = np.arange(256) / 255.0
_LINEAR = np.where(_CODES <= 0.04045, _CODES / 12.92, ((_CODES + 0.055) / 1.055) ** 2.4)


def _lab(rgb: np.ndarray) -> np.ndarray:
    """(N, 3) uint8 sRGB -> (N, 3) float64 CIELAB (D65). In numpy: OpenCV's float Lab
    conversion builds its tables on first use, which slows a run's start-up."""
    xyz = _LINEAR[np.asarray(rgb, np.uint8).reshape(-1, 3)] @ _RGB_TO_XYZ.T
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.column_stack(
        [116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])]
    )


def delta_e(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N,) CIELAB delta E 1976 between (N, 3) uint8 sRGB colours `a` and `b`."""
    return np.linalg.norm(_lab(a) - _lab(b), axis=1)
