"""The figure's mask from a cropped drawing with OpenCV: drawn lines and what they enclose.

The steps: ink measured against the page's own colour under the local light
(`paper.ink_map`: a shadow, grey or beige paper and faint pencil are handled there) ->
a closing about one stroke wide (joins a crayon's skips and a sketchy line's breaks, but
not a caption or a ball a few strokes away) -> holes filled (what the paper cannot reach
from the crop's border lies inside an outline) -> `figure_mask.finish_mask`, which keeps
the pieces the joints say are the figure and joins them into one.

With a learned segmenter's mask as well, both are finished and `choose` picks one: where
they agree, OpenCV's, which follows the ink to the pixel (on real-dev it scores better than
the segmenter's; docs/BENCHMARKS.md, section tight-crops), less its rim where the
segmenter's mask does not reach (a blurred photo's soft edges fatten OpenCV's mask by a
pixel or two; the segmenter learned the line as drawn), with the blobs its rules cut at a
narrow neck that the segmenter's mask holds (a stub arm) and the insides of its outlines
round the skeleton that the segmenter saw filled (an arm drawn open at the hand); where
they disagree, one of them failed, and on synthetic drawings of the hard kinds (a
coloured-in page, a faint figure, props touching it) that is nearly always OpenCV
(docs/BENCHMARKS.md, section from-readme), so the segmenter's, unless it looks the worse by
its warnings (an OpenCV mask that is an outline's line alone, `hollow`, is the worse even
against a joint off the segmenter's).
"""

from __future__ import annotations

import time
from dataclasses import replace

import cv2
import numpy as np

from animation import morph
from animation.figure_mask import (
    ALL_EDGES,
    Edges,
    FigureJoints,
    FinishedMask,
    edge_on_ink,
    fill_holes,
    finish_mask,
    outline_gap,
    outlines_around_joints,
    piece_count,
    points_on,
)
from animation.mask_warnings import WARNINGS, several_figures
from animation.paper import InkMap, ink_map
from animation.skeleton import Skeleton

MAX_CLOSING = 1 / 40  # the closing's kernel never grows past this share of the short side
CLOSING_STROKES = 0.5  # the closing kernel, in stroke widths
# Two masks of the same figure this close (IoU) agree. On real-dev the two paths agree
# above it; on held-out synthetic drawings, picking by this threshold scored best of the
# thresholds tried, and far better than always taking OpenCV's.
AGREE_IOU = 0.8
# Where they agree, OpenCV's mask loses the pixels of its rim this deep that the segmenter's
# mask does not come within REACH_PX of. A deeper trim or the two masks' intersection would
# take the segmenter's misses with it (char3's yellow shoe, which it reads as a ball).
TRIM_PX = 2
REACH_PX = 1
# Where they agree, a blob OpenCV's mask cut off at a narrow neck (`FinishedMask.cut`) is
# given back when the segmenter's finished mask covers this share of it: the segmenter's
# mask, broader at the neck, kept it as part of the figure (real photo 08's stub arm). So
# is an outline's inside round the skeleton that OpenCV's closing left open (photo 20's
# arms: `_filled_as_learned`).
GIVEN_BACK = 0.5


def drawn_regions(ink: InkMap, figure: FigureJoints | None = None) -> np.ndarray:
    """(H, W) bool: every drawn thing in the crop (lines closed, outlines filled).

    With the `figure`'s joints, an outline that holds a joint or a bone is filled even
    where it has a gap (a pencil head with a skip in its circle, an arm left open at the
    hand).
    """
    inked = ink.ink
    if not inked.any():
        return inked
    side = min(inked.shape)
    k = int(np.clip(round(CLOSING_STROKES * ink.stroke_width), 3, max(3, side * MAX_CLOSING))) | 1
    closed = _close(inked, k)
    if figure is not None:
        closed |= outlines_around_joints(inked, figure, max(k, side * MAX_CLOSING))
    return fill_holes(closed)


def _close(binary: np.ndarray, k: int) -> np.ndarray:
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    return cv2.morphologyEx(binary.astype(np.uint8), cv2.MORPH_CLOSE, kernel) > 0


def segment_figure(
    rgb: np.ndarray, joints: Skeleton | np.ndarray | FigureJoints | None = None
) -> np.ndarray:
    """(H, W) bool mask of the figure in an (H, W, 3) uint8 crop; all False if none is found.

    `joints` (a `Skeleton`, 17 COCO keypoints or (N, 2) points, crop pixels) say which
    drawn things are the figure; without them the largest one is.
    """
    return figure_mask(rgb, joints).mask


def figure_mask(
    rgb: np.ndarray,
    joints: Skeleton | np.ndarray | FigureJoints | None,
    learned: np.ndarray | None = None,
    budget_s: float | None = None,
    open_edges: Edges = ALL_EDGES,
) -> FinishedMask:
    """The mask the rig gets, with its warnings and its source: OpenCV's from the (H, W, 3)
    uint8 crop, or, given the segmenter's `learned` (H, W) bool mask, the one `choose`
    picks of the two; finished either way, with its big feet (`FinishedMask.feet`) and
    its edge on the ink (`edge_on_ink`).

    `budget_s`: the CPU seconds this may spend (None: no limit). The segmenter's mask is
    finished first; past the budget it is the answer, with the warning `over_budget`,
    and OpenCV's is never made. Without a segmenter's mask OpenCV's is the only one.
    `open_edges`: the crop's edges the image goes on past (`finish_mask`).
    """
    start = time.process_time()
    ink = ink_map(rgb)
    figure = None if joints is None else FigureJoints.of(joints)
    model = None
    if learned is not None:
        model = finish_mask(np.asarray(learned, bool), rgb, figure, ink, True, open_edges)
        if budget_s is not None and time.process_time() - start > budget_s:
            return settled(None, model, ink.ink, figure, over_budget=True)
    return settled(opencv_mask(rgb, figure, ink, open_edges), model, ink.ink, figure)


def opencv_mask(
    rgb: np.ndarray, figure: FigureJoints | None, ink: InkMap, open_edges: Edges = ALL_EDGES
) -> FinishedMask:
    """OpenCV's mask of the (H, W, 3) uint8 crop whose `ink_map` is `ink`, finished
    (`open_edges`: see `finish_mask`)."""
    return finish_mask(drawn_regions(ink, figure), rgb, figure, ink, False, open_edges)


def settled(
    drawn: FinishedMask | None,
    learned: FinishedMask | None,
    inked: np.ndarray,
    figure: FigureJoints | None = None,
    over_budget: bool = False,
) -> FinishedMask:
    """The mask the rig gets, from the finished masks made (OpenCV's `drawn`, the
    segmenter's `learned`; at least one): the one `choose` picks of two, with its big feet
    and its edge on the crop's ink (`inked`, (H, W) bool: `edge_on_ink`). `over_budget`:
    the segmenter's was made alone, the budget spent; its warnings say so."""
    if drawn is None and learned is None:
        raise ValueError("settled needs a finished mask")
    if drawn is None or learned is None:
        chosen = drawn if learned is None else learned
    else:
        chosen = choose(drawn, learned, figure, inked)
    edged = edge_on_ink(chosen.with_feet, inked, figure)
    several = ("several_figures",) if several_figures(edged, inked) else ()
    warnings = (*chosen.warnings, *several, *(("over_budget",) if over_budget else ()))
    lines = None if chosen.lines is None else chosen.lines & ~edged
    return replace(chosen, mask=edged, warnings=warnings, feet=None, lines=lines)


def choose(
    drawn: FinishedMask,
    learned: FinishedMask,
    figure: FigureJoints | None = None,
    inked: np.ndarray | None = None,
) -> FinishedMask:
    """OpenCV's finished mask (`drawn`), trimmed to the segmenter's (`learned`), where the
    two agree (with `figure` and the crop's `inked` strokes, the outlines' insides the
    segmenter saw filled added: `_filled_as_learned`); else the segmenter's unless its
    warnings are more serious (see the module's doc). `figure`: the joints the trimmed mask
    must still hold."""
    both = np.count_nonzero(drawn.mask & learned.mask)
    either = np.count_nonzero(drawn.mask | learned.mask)
    if either and both / either >= AGREE_IOU:
        drawn = _given_back(drawn, learned.mask)
        if inked is not None and figure is not None:
            drawn = _filled_as_learned(drawn, learned.mask, inked, figure)
        return _trimmed(drawn, learned.mask, figure)
    return drawn if _severity(learned.warnings) > _severity(drawn.warnings) else learned


def _filled_as_learned(
    drawn: FinishedMask, learned: np.ndarray, inked: np.ndarray, figure: FigureJoints
) -> FinishedMask:
    """`drawn` with the paper inside its own strokes' outlines round the skeleton, closed
    over the learned path's gaps (`outlines_around_joints` at `outline_gap`), where that
    paper holds a joint or a bone and `learned` covers GIVEN_BACK of it: an arm drawn as
    an outline left open at the hand wider than OpenCV's closing (real photo 20, real-dev
    char5), which the segmenter saw filled. Paper between the legs holds no bone."""
    # Nothing the segmenter added holds the skeleton: no wide closing to pay for.
    if not points_on(learned & ~drawn.mask, figure.skeleton_samples):
        return drawn
    insides = outlines_around_joints(inked & drawn.mask, figure, outline_gap(inked.shape))
    insides &= ~drawn.mask
    if not insides.any():
        return drawn
    count, labels = cv2.connectedComponents(insides.astype(np.uint8), connectivity=8)
    area = np.bincount(labels.ravel(), minlength=count)
    covered = np.bincount(labels[learned], minlength=count)
    filled = (covered >= GIVEN_BACK * area) & figure.labels_touched(labels, count)
    filled[0] = False
    if not filled.any():
        return drawn
    return replace(drawn, mask=fill_holes(drawn.mask | filled[labels]))


def _given_back(drawn: FinishedMask, learned: np.ndarray) -> FinishedMask:
    """`drawn` with the blobs it cut (`FinishedMask.cut`) that `learned` covers for at least
    GIVEN_BACK of their area and that touch `drawn`'s mask."""
    if drawn.cut is None:
        return drawn
    count, labels = cv2.connectedComponents(drawn.cut.astype(np.uint8), connectivity=8)
    area = np.bincount(labels.ravel(), minlength=count)
    covered = np.bincount(labels[learned], minlength=count)
    touching = np.bincount(labels[morph.dilate(drawn.mask, 1.5)], minlength=count)
    back = (covered >= GIVEN_BACK * area) & (touching > 0)
    back[0] = False
    if not back.any():
        return drawn
    blobs = back[labels]
    return replace(drawn, mask=drawn.mask | blobs, cut=drawn.cut & ~blobs)


def _trimmed(drawn: FinishedMask, learned: np.ndarray, figure: FigureJoints | None) -> FinishedMask:
    """`drawn` less the pixels of its rim (TRIM_PX deep) farther than REACH_PX from
    `learned`; `drawn` itself where that would split it or leave out a joint it holds."""
    mask = drawn.mask
    rim = mask & ~morph.erode(mask, TRIM_PX)
    trimmed = mask & ~(rim & ~morph.dilate(learned, REACH_PX))
    if np.count_nonzero(trimmed) == np.count_nonzero(mask):
        return drawn
    if piece_count(trimmed) > piece_count(mask):
        return drawn
    if figure is not None and points_on(trimmed, figure.points) < points_on(mask, figure.points):
        return drawn
    return replace(drawn, mask=trimmed)


def _severity(warnings: tuple[str, ...]) -> tuple[int, bool]:
    """How serious `warnings` are, to compare: the most serious code's rank (0 for none,
    higher for a more serious one; WARNINGS is in that order), then whether the figure is
    tiny. Where both masks share their most serious warning, a speck is the worse (joints
    dragged off the figure: OpenCV keeps the figure, the segmenter's mask finished against
    those joints keeps a sliver, and the rig refuses a sliver). The other warnings do not
    break ties: on the held-out synthetic sets that chose OpenCV's mask where the
    segmenter's was the better (the gateway's masks got worse on the held-out styles)."""
    order = list(WARNINGS)
    rank = max((len(order) - order.index(code) for code in warnings), default=0)
    return rank, "figure_tiny" in warnings
