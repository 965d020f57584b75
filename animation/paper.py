"""Where the paper is and how much darker than it each pixel is: the ink of a photographed drawing.

A phone photo of a page is lit unevenly: a shadow across it, light falling off towards a
corner, grey or beige paper, a whiteboard's glare. A fixed or crop-wide threshold then
takes a dim part of the page for ink (and a faint figure for paper). So the page's own
colour under the local light is estimated first and divided out:

* paper: a grey-level closing (max then min filter) per channel at a scale wider than a
  stroke, on a downscaled copy. A closing removes dark things narrower than its kernel
  (strokes, small fills) but keeps a shadow's edge where it is, which a blur would smear;
* darkness: how much darker than that paper a pixel is, as a fraction of the paper's
  brightness, in its darkest-relative channel (`max_c (paper_c - pixel_c) / paper_c`), so
  that coloured crayon on beige paper and yellow marker on white (almost no blue) count;
* noise: the spread of the page's own darkness (paper grain, JPEG, sensor noise), taken
  from the bright half of the distribution, which ink never reaches; thresholds are in
  units of it, so a clean scan keeps faint pencil and a grainy photo does not turn to ink.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np

WORK_SIDE = 96  # px: short side of the copy the paper is estimated on (it varies slowly)
PAPER_SCALE = 1 / 6  # closing kernel, of the short side: wider than any stroke
SMOOTH_SIGMA = 1.0  # px: the blur that averages paper grain out before thresholding
STRONG_SIGMAS, WEAK_SIGMAS = 6.0, 3.0  # ink thresholds, in units of the page's noise
RATIO_ONE = 200  # pixel / paper = 1 in the fixed-point ratio (up to 1.27: a glint on the page)
MIN_NOISE = 0.01  # darkness fraction: the noise level assumed at least (a clean scan's JPEG)
# A page whose rim is darker than DARK_PAGE (0-255 luminance) is a dark page when what is
# drawn on it is lighter than it: more of the crop is LIGHTER than the page by that much
# than is DARKER by that much, and at least DRAWN_SHARE of it (black card, a sheet coloured
# dark, with chalk or a paper cut-out on it). A light page photographed in dim light is as
# dark at its rim, but its ink is darker than it, and little is lighter.
DARK_PAGE, LIGHTER, DARKER, DRAWN_SHARE = 80, 50, 30, 0.02
RIM_SHARE = 0.03  # of the crop's shorter side: the rim the page's colour is read from


@dataclass(frozen=True)
class InkMap:
    """Ink measured against the local paper colour of one (H, W, 3) crop."""

    paper: np.ndarray  # (H, W, 3) uint8: the page's colour under the local light
    contrast: np.ndarray  # (H, W) float32: darker than the paper by this many noise levels
    smooth_contrast: np.ndarray  # (H, W) float32: the same, measured after a SMOOTH_SIGMA blur

    @cached_property
    def ink(self) -> np.ndarray:
        """(H, W) bool: the drawn lines and fills.

        Found by hysteresis on the smoothed contrast, where paper grain averages out: weak
        pixels (3 noise levels) are kept where they touch strong ones (6 levels), so the
        faint run-out of a pencil line stays and isolated grain does not. Their extent is
        then cut back to the pixels measurably dark before smoothing, which a blur spreads.
        """
        strong = self.smooth_contrast > STRONG_SIGMAS
        weak = self.smooth_contrast > WEAK_SIGMAS
        count, labels = cv2.connectedComponents(weak.astype(np.uint8), connectivity=8)
        has_strong = np.zeros(count, bool)
        has_strong[labels[strong]] = True
        has_strong[0] = False
        return has_strong[labels] & (self.contrast > WEAK_SIGMAS)

    @cached_property
    def stroke_width(self) -> float:
        """The drawn lines' typical width, px (1 if there are none)."""
        return max(1.0, 2 * stroke_half_width(self.ink))


def stroke_half_width(mask: np.ndarray) -> float:
    """Median distance to the background along the ridges of an (H, W) bool `mask`: half
    a stroke's width for lines, half a limb's for filled shapes (0.5 at least)."""
    dist = cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, 3)
    ridge = (dist > 0) & (dist >= cv2.dilate(dist, np.ones((3, 3), np.uint8)))
    return float(np.median(dist[ridge])) if ridge.any() else 0.5


def paper_colour(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: the page's colour under the local light, for an (H, W, 3) uint8 crop
    (at least 8, so that it can be divided by)."""
    height, width = rgb.shape[:2]
    scale = min(1.0, WORK_SIDE / min(height, width))
    small = cv2.resize(
        rgb,
        (max(1, round(width * scale)), max(1, round(height * scale))),
        interpolation=cv2.INTER_AREA,
    )
    k = max(3, int(min(small.shape[:2]) * PAPER_SCALE)) | 1
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    # Past the crop's edge the light is taken to go on changing as it does at the edge (a
    # point reflection, of a blurred copy so that grain is not mirrored into bright
    # specks): with the edge value repeated instead, a closing brightens a page that
    # darkens towards the edge, and the darker strip there would read as ink.
    pad = k // 2 + 1
    small = small.astype(np.float32)
    trend = cv2.GaussianBlur(small, (0, 0), k / 4)
    padded = np.pad(trend, ((pad, pad), (pad, pad), (0, 0)), "reflect", reflect_type="odd")
    padded[pad:-pad, pad:-pad] = small
    page = cv2.morphologyEx(np.clip(padded, 0, 255), cv2.MORPH_CLOSE, kernel)[pad:-pad, pad:-pad]
    # A little smoothing: the closing's flat plateaus would print as blocks once upsampled.
    page = np.clip(cv2.GaussianBlur(page, (0, 0), 1.0), 8, 255).astype(np.uint8)
    return cv2.resize(page, (width, height), interpolation=cv2.INTER_LINEAR)


def light_page(rgb: np.ndarray) -> np.ndarray:
    """The (H, W, 3) uint8 crop as a light page shows it: itself, or negated when its page
    is dark and what is drawn on it lighter (see DARK_PAGE).

    Everything that finds the figure (the models, the ink map) knows ink darker than
    paper, and a figure on black card is lighter than its page: negated, it is a dark
    figure on a light page. Only finding uses this; the texture keeps the photo's colours.
    """
    height, width = rgb.shape[:2]
    rim = max(1, int(round(RIM_SHARE * min(height, width))))
    weights = np.array([0.299, 0.587, 0.114], np.float32)
    edges = np.concatenate(
        [rgb[:rim].reshape(-1, 3), rgb[-rim:].reshape(-1, 3),
         rgb[:, :rim].reshape(-1, 3), rgb[:, -rim:].reshape(-1, 3)]
    )  # fmt: skip
    page = float(np.median(edges.astype(np.float32) @ weights))
    if page >= DARK_PAGE:
        return rgb
    step = max(1, int(np.sqrt(height * width / 40_000)))  # a sample of about 40 000 pixels
    luminance = rgb[::step, ::step].reshape(-1, 3).astype(np.float32) @ weights
    lighter = float(np.mean(luminance >= page + LIGHTER))
    darker = float(np.mean(luminance <= page - DARKER))
    return 255 - rgb if lighter >= DRAWN_SHARE and lighter > darker else rgb


def ink_map(rgb: np.ndarray) -> InkMap:
    """Measure an (H, W, 3) uint8 crop's ink against its paper (see the module's docstring)."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"need an (H, W, 3) uint8 image, got {rgb.shape} {rgb.dtype}")
    paper = paper_colour(rgb)
    # pixel / paper in 8-bit fixed point (1.0 = RATIO_ONE), much faster than in floats; the
    # step (1/200) is below any page's noise. Darkness = 1 - ratio, in the darkest channel.
    ratio = cv2.divide(rgb, paper, scale=RATIO_ONE)
    r, g, b = cv2.split(ratio)
    darkest = 1 - cv2.min(cv2.min(r, g), b).astype(np.float32) * np.float32(1 / RATIO_ONE)
    smooth = cv2.GaussianBlur(darkest, (0, 0), SMOOTH_SIGMA)
    # The page's level and noise are measured in floats on a sample: in steps of 1/200
    # the quartiles, and so the raw noise, would come out in steps of 0.007.
    h, w = darkest.shape
    grid = (slice(None, None, max(1, h // 120)), slice(None, None, max(1, w // 120)))
    sampled = (paper[grid] - rgb[grid].astype(np.float32)) / paper[grid]
    raw_stats = _page_spread(sampled.max(axis=2))
    return InkMap(paper, _in_noise_levels(darkest, *raw_stats),
                  _in_noise_levels(smooth, *_page_spread(smooth[grid])))  # fmt: skip


def _page_spread(darkness: np.ndarray) -> tuple[float, float]:
    """(level, noise) of the page in a darkness map (a sample of one will do).

    The page is most of the crop: its darkness is the median, and its noise is read off
    the lower half (lighter than the median), where no ink lies.
    """
    level, quartile = np.percentile(darkness, [50, 25])
    return float(level), max(float(level - quartile) / 0.6745, MIN_NOISE)


def _in_noise_levels(darkness: np.ndarray, level: float, noise: float) -> np.ndarray:
    """(H, W) float32: how many noise levels darker than the page."""
    return (darkness - np.float32(level)) * np.float32(1 / noise)
