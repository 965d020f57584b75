"""animation.segment.choose: which of two finished masks the rig gets."""

from __future__ import annotations

import cv2
import numpy as np

from animation.figure_mask import (
    FigureJoints,
    FinishedMask,
    edge_on_ink,
    finish_mask,
    with_ad_margin,
)
from animation.mask_warnings import mask_warnings
from animation.morph import fill_holes
from animation.paper import ink_map
from animation.segment import AGREE_IOU, choose, figure_mask


def box_mask(x0: int, x1: int, shape=(100, 100)) -> np.ndarray:
    mask = np.zeros(shape, bool)
    mask[20:80, x0:x1] = True
    return mask


def test_where_the_two_agree_the_opencv_mask_is_kept_less_its_rim_the_segmenter_leaves():
    drawn = FinishedMask(box_mask(30, 70), ("figure_huge",))
    learned = FinishedMask(box_mask(32, 72), (), "learned")  # IoU 38/42 = 0.90
    chosen = choose(drawn, learned)
    # Column 30 lies in OpenCV's rim and 2 px from the segmenter's mask: trimmed. Column 31
    # is within a pixel of it, and the right side is the segmenter's too: kept.
    assert (chosen.mask == box_mask(31, 70)).all()
    assert chosen.source == "opencv" and chosen.warnings == ("figure_huge",)
    assert choose(drawn, FinishedMask(box_mask(29, 71), (), "learned")) is drawn  # all reached


def test_the_trim_never_splits_the_mask_nor_leaves_a_joint_out():
    # Two blocks joined by a bar 5 px thick that the segmenter left out: its rim trimmed, the
    # bar's 1 px core would still join them; at 3 px thick it would not, so nothing is cut.
    for bar, split in ((5, False), (3, True)):
        drawn = np.zeros((100, 100), bool)
        drawn[20:80, 10:40] = drawn[20:80, 60:90] = True
        drawn[48 : 48 + bar, 40:60] = True
        learned = drawn.copy()
        learned[40:60, 40:60] = False
        chosen = choose(FinishedMask(drawn, ()), FinishedMask(learned, (), "learned"))
        assert (chosen.mask == drawn).all() == split
    # A joint on the trimmed edge: OpenCV's mask is kept as it is.
    drawn = FinishedMask(box_mask(30, 70), ())
    learned = FinishedMask(box_mask(32, 72), (), "learned")
    figure = FigureJoints.of(np.array([[30.0, 50.0], [50.0, 50.0]]))
    assert choose(drawn, learned, figure) is drawn


def test_an_arm_drawn_open_at_the_hand_is_filled_where_the_segmenter_saw_it_filled():
    # Real photo 20's arms and real-dev char5's: an arm drawn as two lines, open at the hand
    # by 6 px, more than OpenCV's closing bridges round the joints (under the crop's short
    # side / 80 = 3.75 px), so OpenCV's mask is the lines alone; the segmenter's is the arm
    # filled, and its path bridges up to twice that. Beside it, paper between the legs,
    # open by as much at the bottom, holds no joint: it stays out.
    inked = np.zeros((300, 300), bool)
    cv2.rectangle(inked.view(np.uint8), (40, 20), (200, 200), 1, 2)  # the body
    inked[60:62, 200:272] = inked[80:82, 200:272] = True  # the arm's two lines
    inked[62:74, 270:272] = True  # the hand's end, 6 px short of the lower line
    inked[200:261, 80:82] = inked[200:261, 160:162] = inked[259:261, 80:154] = True  # legs
    drawn = fill_holes(inked)  # OpenCV's: the body filled, the arm and the legs lines
    arm = np.zeros_like(inked)
    arm[62:80, 202:270] = True
    between = np.zeros_like(inked)
    between[202:259, 82:160] = True
    points = np.array([[120.0, 100.0], [120.0, 180.0], [230.0, 70.0], [260.0, 70.0]])
    figure = FigureJoints.of(points)
    for filled in (True, False):
        learned = FinishedMask(drawn | between | (arm & filled), (), "learned")
        chosen = choose(FinishedMask(drawn, ()), learned, figure, inked)
        assert chosen.mask[arm].mean() > 0.95 if filled else not chosen.mask[arm].any()
        assert not chosen.mask[between].any()
    # Without the crop's strokes, OpenCV's mask as before.
    learned = FinishedMask(drawn | arm, (), "learned")
    assert not choose(FinishedMask(drawn, ()), learned, figure).mask[arm].any()


def test_where_they_disagree_the_segmenters_is_kept_unless_its_warnings_are_worse():
    drawn = FinishedMask(box_mask(0, 100), ("figure_huge",))  # a page-sized blob
    learned = FinishedMask(box_mask(40, 60), (), "learned")
    assert (learned.mask & drawn.mask).sum() / (learned.mask | drawn.mask).sum() < AGREE_IOU
    assert choose(drawn, learned) is learned
    lost = FinishedMask(box_mask(40, 60), ("joints_outside",), "learned")
    assert choose(drawn, lost) is drawn  # joints_outside is more serious than figure_huge
    same = FinishedMask(box_mask(40, 60), ("figure_huge",), "learned")
    assert choose(drawn, same) is same  # as serious: the segmenter's


def test_an_opencv_outline_left_hollow_loses_to_a_segmenters_mask_with_a_joint_out():
    # A body outlined with skips: OpenCV's mask is the line alone, the segmenter's the body
    # with a joint just off it. Hollow is the more serious: the rig would get a ring.
    outline = np.zeros((200, 160), np.uint8)
    cv2.ellipse(outline, (80, 100), (50, 80), 0, 0, 360, 1, 4)
    outline[97:103, :] = 0
    ring = outline > 0
    drawn = FinishedMask(ring, mask_warnings(ring, ring, None))
    assert drawn.warnings == ("hollow",)
    body = np.zeros_like(outline)
    cv2.ellipse(body, (80, 100), (52, 82), 0, 0, 360, 1, -1)
    learned = FinishedMask(body > 0, ("joints_outside",), "learned")
    assert choose(drawn, learned) is learned


def test_where_they_agree_a_blob_opencv_cut_at_a_neck_is_given_back_if_the_segmenter_kept_it():
    # OpenCV's mask cut a stub arm off at its narrow root (`FinishedMask.cut`); the
    # segmenter's mask, broader there, holds it: the two agree on the figure, so the arm
    # is the figure's. A blob the segmenter left out, or one apart from the figure, is not.
    body = box_mask(30, 70)
    arm = np.zeros_like(body)
    arm[40:50, 70:78] = True
    sun = np.zeros_like(body)
    sun[2:10, 2:10] = True
    drawn = FinishedMask(body, (), cut=arm | sun)
    learned = FinishedMask(body | arm | sun, (), "learned")
    chosen = choose(drawn, learned)
    assert (chosen.mask == (body | arm)).all()
    assert (chosen.cut == sun).all()
    assert (choose(drawn, FinishedMask(body, (), "learned")).mask == body).all()


def test_a_learned_mask_is_finished_without_the_paper_and_margin_steps():
    rgb = np.full((100, 100, 3), 245, np.uint8)
    rgb[20:80, 45:55] = 30  # a drawn bar; the learned mask also holds the paper beside it
    joints = np.array([[50.0, 25.0], [50.0, 75.0]])
    learned = box_mask(35, 65)
    as_learned = finish_mask(learned, rgb, joints, learned=True)
    as_opencv = finish_mask(learned, rgb, joints)
    assert as_learned.source == "learned" and as_opencv.source == "opencv"
    assert (as_learned.mask == learned).all()  # kept as the model drew it
    assert as_opencv.mask.sum() != learned.sum()  # paper dropped and/or a margin added


def test_figure_mask_says_which_source_it_used():
    rgb = np.full((120, 120, 3), 240, np.uint8)
    rgb[20:100, 50:70] = 20
    joints = np.array([[60.0, 30.0], [60.0, 90.0]])
    alone = figure_mask(rgb, joints)
    assert alone.source == "opencv"
    # A segmenter's mask carries the margin AnimatedDrawings' masks have round the ink.
    agreeing = figure_mask(rgb, joints, learned=with_ad_margin(alone.mask))
    assert agreeing.source == "opencv" and (agreeing.mask == alone.mask).all()
    elsewhere = np.zeros_like(alone.mask)
    elsewhere[10:110, 5:115] = True  # most of the crop: disagrees, and warns figure_huge
    assert figure_mask(rgb, joints, learned=elsewhere).source == "opencv"


def test_past_its_budget_the_segmenters_mask_is_taken_as_it_is_and_said_so():
    rgb = np.full((120, 120, 3), 240, np.uint8)
    rgb[20:100, 50:70] = 20
    joints = np.array([[60.0, 30.0], [60.0, 90.0]])
    learned = np.zeros((120, 120), bool)
    learned[10:110, 5:115] = True  # the worse of the two (figure_huge): chosen only past the budget
    assert figure_mask(rgb, joints, learned=learned, budget_s=10.0).source == "opencv"
    spent = figure_mask(rgb, joints, learned=learned, budget_s=0.0)
    assert spent.source == "learned" and spent.warnings[-1] == "over_budget"
    finished = finish_mask(learned, rgb, joints, learned=True).mask
    assert (spent.mask == edge_on_ink(finished, ink_map(rgb).ink, FigureJoints.of(joints))).all()
    # Without the segmenter's mask OpenCV's is the only sound one: made whatever the budget.
    alone = figure_mask(rgb, joints, budget_s=0.0)
    assert alone.source == "opencv" and "over_budget" not in alone.warnings


def test_where_both_share_the_most_serious_warning_a_speck_is_the_worse():
    # Joints dragged off the figure: OpenCV keeps the figure; the segmenter's mask, finished
    # against those joints, keeps a sliver.
    drawn = FinishedMask(box_mask(30, 70), ("joints_outside",))
    sliver = FinishedMask(box_mask(48, 50), ("joints_outside", "figure_tiny"), "learned")
    assert choose(drawn, sliver) is drawn
    assert (
        choose(
            FinishedMask(box_mask(48, 50), ("joints_outside", "figure_tiny")),
            FinishedMask(box_mask(30, 70), ("joints_outside",), "learned"),
        ).source
        == "learned"
    )
