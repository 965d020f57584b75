"""Is a finished figure mask plausible? Short warning codes for what looks wrong.

The gateway animates with the best mask it has whatever these say, and sends the codes
in an `X-Figure-Warnings` header, logs and counts them: they tell a person (or the app)
to check the outline, and tell the team which drawings fail and how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np

from animation import morph
from animation.joint_guard import guard_joints
from animation.skeleton import JOINT_INDEX, JOINTS

if TYPE_CHECKING:
    from animation.figure_mask import FigureJoints

# Every code, most serious first (the order warnings are returned in).
WARNINGS: dict[str, str] = {
    "no_figure": "no figure could be separated from the paper",
    "hollow": "the figure's outline is there but not the paper it encloses (its line has gaps)",
    "joints_outside": "a joint lies outside the figure's outline, too far to join",
    "mostly_paper": "most of the outline runs over blank paper, not along drawn lines",
    "figure_tiny": "the figure covers a tiny share of its box",
    "figure_huge": "the figure covers almost all of its box (paper taken in?)",
    "touches_border": "the figure runs into the edge of its box along a long stretch",
    # Said of the mask chosen (`segment.settled`), so it never weighs in the choice.
    "several_figures": "the box seems to hold more than one drawing (one beside or above "
    "another), animated as one figure: if so, box the one to animate (or erase the others "
    "and drag the joints onto it)",
    # What rigging does about the joints (animation.joint_guard); not about the mask.
    "joint_moved": "a joint lay off the figure; it was moved onto the figure's outline",
    "limb_kept_still": "a limb's joints do not lie along a drawn limb; it is kept still",
    # The figure stage ran past its CPU budget (the gateway's FIGURE_BUDGET_S).
    "over_budget": "finding the figure took longer than allowed: its last checks were skipped "
    "(the segmenter's mask used without OpenCV's, no second crop)",
}
TINY_SHARE, HUGE_SHARE = 0.02, 0.90  # of the crop's area
OUTLINE_ON_INK = 0.5  # least share of the outline that lies on or next to ink
BORDER_SHARE = 0.25  # most share of the crop's border the figure may run along
ON_INK_PX = 3  # "next to ink": within this many pixels
# Hollow: closing the mask's gaps up to HOLLOW_GAP of the crop's shorter side encloses paper
# of at least HOLLOW_SHARE of the mask's own area: an outline drawn with skips whose inside
# was left out. On 1500 synthetic drawings an OpenCV mask that hollow was the worse of the
# two masks 98% of the time (docs/BENCHMARKS.md, section variants-hollow); a stick figure's
# bays, closed as well, stay under it (real photo 33: 0.17).
HOLLOW_GAP, HOLLOW_SHARE = 0.03, 0.25
# Several figures: the drawn parts of the mask (its ink and the paper that ink encloses; the
# bridges the mask drew between pieces are paper) fall into at least two pieces that each
# hold SEVERAL_SHARE of the drawn area and span SEVERAL_SPAN of the mask's longer side. On
# the 42 real drawings only photo 15 (a comic cover, one figure leaping above another)
# has two such pieces; a figure whose head is drawn apart from its body can (about 1 in
# 100 synthetic drawings), and is warned of for nothing worse than a needless check.
SEVERAL_SHARE, SEVERAL_SPAN = 0.25, 0.5


def mask_warnings(
    mask: np.ndarray, inked: np.ndarray, figure: FigureJoints | None
) -> tuple[str, ...]:
    """Warning codes (keys of WARNINGS) for a finished (H, W) bool `mask`.

    `inked`: the crop's (H, W) bool ink (`InkMap.ink`); `figure`: the joints, or None.
    """
    if not mask.any():
        return ("no_figure",)
    found: set[str] = set()
    if _hollow_share(mask) >= HOLLOW_SHARE:
        found.add("hollow")
    if figure is not None and _joints_outside(mask, figure.points):
        found.add("joints_outside")
    if _outline_on_ink(mask, inked) < OUTLINE_ON_INK:
        found.add("mostly_paper")
    share = float(mask.mean())
    if share < TINY_SHARE:
        found.add("figure_tiny")
    if share > HUGE_SHARE:
        found.add("figure_huge")
    border = np.concatenate([mask[0], mask[-1], mask[1:-1, 0], mask[1:-1, -1]])
    if border.mean() > BORDER_SHARE:
        found.add("touches_border")
    return tuple(code for code in WARNINGS if code in found)


def several_figures(mask: np.ndarray, inked: np.ndarray) -> bool:
    """Whether the finished (H, W) bool `mask` seems to join several drawings (see
    SEVERAL_SHARE): `inked` is the crop's (H, W) bool ink."""
    drawn = (morph.fill_holes(inked) & mask).view(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(drawn, connectivity=8)
    if count < 3:
        return False
    area = stats[1:, cv2.CC_STAT_AREA]
    span = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT])
    side = max(cv2.boundingRect(mask.view(np.uint8))[2:])
    big = (area >= SEVERAL_SHARE * area.sum()) & (span >= SEVERAL_SPAN * side)
    return int(np.count_nonzero(big)) >= 2


def _hollow_share(mask: np.ndarray) -> float:
    """The paper that closing `mask`'s gaps (up to HOLLOW_GAP of its shorter side) encloses,
    as a share of the mask's area."""
    gap = max(1.0, HOLLOW_GAP * min(mask.shape))
    enclosed = morph.fill_holes(morph.closing(mask, gap)) & ~mask
    return np.count_nonzero(enclosed) / np.count_nonzero(mask)


def _joints_outside(mask: np.ndarray, points: np.ndarray) -> bool:
    height, width = mask.shape
    xy = np.round(points).astype(np.int64)
    inside = (xy[:, 0] >= 0) & (xy[:, 0] < width) & (xy[:, 1] >= 0) & (xy[:, 1] < height)
    if not inside.all():
        return True
    return not mask[xy[:, 1], xy[:, 0]].all()


def _outline_on_ink(mask: np.ndarray, inked: np.ndarray) -> float:
    """Share of the mask's outline pixels (inside the crop) within ON_INK_PX of ink."""
    m = mask.astype(np.uint8)
    outline = (m - cv2.erode(m, np.ones((3, 3), np.uint8))) > 0
    outline[[0, -1], :] = False  # the crop's edge is not an outline anybody drew
    outline[:, [0, -1]] = False
    if not outline.any():
        return 1.0
    d = 2 * ON_INK_PX + 1
    near_ink = cv2.dilate(inked.astype(np.uint8), np.ones((d, d), np.uint8)) > 0
    return float(near_ink[outline].mean())


def joint_warnings(mask: np.ndarray, figure: FigureJoints | None) -> tuple[str, ...]:
    """What rigging will do about the joints (`joint_guard`) on the finished (H, W) bool
    `mask`: `joint_moved`, `limb_kept_still`. Not about the mask: choosing between two masks
    does not weigh them. A rig says the same of its own joints (`render.Rig.warnings`), at
    the output's resolution."""
    if figure is None or len(figure.points) != len(JOINTS) or figure.head != JOINT_INDEX["neck"]:
        return ()
    return guard_joints(mask, figure.points).warnings
