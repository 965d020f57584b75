"""The served mask on real photographed drawings, against their hand-made truth
(`torchserve/training/real_photos/`, issue 26): each photo posted whole to /annotate, as
the app sends it. Real gunicorn and gevent, real TorchServe with the segmenter."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image, ImageOps

from animation import morph
from animation.character import load_character
from animation.distortion import measure
from animation.figure import rig_for
from animation.parts import PART_INDEX, PARTS, torso_half_width
from animation.skeleton import COCO_KEYPOINTS, JOINT_INDEX
from gateway.tools.characters import character_folder
from tests.support.real_photos import REAL_PHOTOS, real_photo
from tests.support.rigs import motion_clip
from torchserve.training.evaluate_photos import annotate, load_truth, score, score_photos, summary
from torchserve.training.photo_variants import score_shifted

pytestmark = pytest.mark.integration
TRUTH = {t.name: t for t in load_truth()}
# Measured with `python -m torchserve.training.evaluate_photos` against `make run`
# (torchserve/weights/EVAL.md): 37 of 39 animated (17 and 30 refused), mean IoU 0.892,
# 7 below 0.85 (before a trim that split the figure gave back only the paper between its
# pieces: 0.889, 8 below; before bridges to grain crumbs were left out and open outline arms the
# segmenter filled were taken: 0.8875; before the person detector narrowed a group's or a
# scene's box to one person: 0.875; before the segmenter saw the crop mirrored too:
# 0.878, but 0.843-0.870 with the box moved 2%, 0.851-0.878 now; before a balloon's string from a drawn hand
# was held: 0.877; before a
# hollow OpenCV mask lost to the segmenter's: 0.873; before a
# neighbour's head against the figure's was cut: 0.866; before
# lines running off the crop were cut: 9 below; before a learned
# mask's strokes were taken whole: 0.855, 10 below; before a stick figure's bays and big
# feet: 0.836, 13 below; before the edge was put on the ink: 0.796, 16 below; at 84b56e3,
# before the dark-page, spilled-paper and outline rules: 0.766, 17 below). Issue 26's
# target is 0.92 with at most three below 0.85: these hold today's level, not it.
MIN_ANIMATED, MIN_MEAN_IOU, MAX_BELOW = 37, 0.88, 7


def _scored(url: str, name: str):
    truth = TRUTH[name]
    answer = annotate(url, real_photo(truth.photo))
    return answer, score(name, truth.labels, truth.joints, answer)


def _beyond(url: str, name: str, px: float) -> float:
    """The served mask more than `px` outside photo `name`'s figure, as a share of the
    figure's area."""
    answer, _ = _scored(url, name)
    truth = TRUTH[name].figure(1)
    return float((answer.mask & ~morph.dilate(truth, px)).sum() / truth.sum())


def test_the_served_masks_of_all_real_photos_keep_their_measured_level(gateway):
    real_photo("01_blue-crayon-figure.png")  # skipped without ../shared
    got = summary(score_photos(gateway.url, REAL_PHOTOS, list(TRUTH.values()), None))
    assert got["animated"] >= MIN_ANIMATED, got
    assert got["mean_iou"] >= MIN_MEAN_IOU, got
    assert got["below"] <= MAX_BELOW, got


def test_a_pencil_figure_photographed_in_dim_light_comes_out_filled(gateway, tmp_path):
    # Real photo 31 (a pen figure on blue paper) as a dim, warm room would give it. OpenCV
    # finds only its lines there (the outline has skips), the segmenter the figure with a
    # joint just off it: the line alone was chosen, a hollow ring, IoU 0.26. Hollow is now
    # the more serious of the two: 0.90, and 0.72 since the segmenter sees the crop mirrored
    # too (the two views' mean leaves out part of the dress: filled still, not a ring).
    truth = TRUTH["31"]
    with Image.open(real_photo(truth.photo)) as image:
        rgb = np.asarray(ImageOps.exif_transpose(image).convert("RGB"), np.float32)
    dim = tmp_path / "31_dim.png"
    Image.fromarray((rgb * (0.7, 0.66, 0.58)).astype(np.uint8)).save(dim)
    got = score("31", truth.labels, truth.joints, annotate(gateway.url, dim))
    assert got.iou >= 0.65, got


def test_a_stub_arm_cut_at_its_root_comes_back_when_the_segmenter_kept_it(gateway):
    # Real photo 08, a pencil bunny: its left arm is a short open stroke off the body.
    # OpenCV's mask cut it at its narrow root as a blob no joint holds (the pose put the
    # arms up the ears); the segmenter's, broader there, kept it. The two masks agree, and
    # OpenCV's was served without the arm: IoU 0.957, the hand-placed elbow and wrist
    # outside. Given back: 0.978 and every joint inside.
    _, got = _scored(gateway.url, "08")
    assert got.joints_inside == 1.0, got
    assert got.iou >= 0.97, got


def test_a_girl_cut_out_on_black_card_is_found_whole(gateway):
    # Real photo 26: light paper cut-out on black. Seen as it is, the models and the ink map
    # took the black for ink: a black slab round the girl, IoU 0.54 and 41% of her joints
    # inside it; seen negated, 0.86 and all of them.
    _, got = _scored(gateway.url, "26")
    assert got.iou >= 0.8, got
    assert got.joints_inside == 1.0, got


@pytest.mark.parametrize("name", ["32", "33"])
def test_paper_between_a_stick_arm_and_the_leg_stays_behind(gateway, name):
    # Real photo 32: the segmenter filled the bay between the left arm, the body and the
    # left leg; in motion that paper moved with the arm as a slab. The mask beyond the
    # figure (3 px off its outline): 17% of the figure's area before, 3.5% now. Photo 33,
    # a stick monster: the bays under its arms, held by a wrist placed a little off the
    # stick hand and crossed by the bones from its spine to its shoulders: 67% before,
    # under 1% now.
    assert _beyond(gateway.url, name, 3) < 0.06


def test_the_inside_of_a_pencil_outline_with_skips_is_the_figure(gateway):
    # Real photo 13, a winged squirrel in pencil: its tail and back are outlines with
    # skips, which the segmenter left open: IoU 0.77 (the tail's inside and the back
    # missing). Closed round the skeleton as OpenCV's mask is: 0.96.
    _, got = _scored(gateway.url, "13")
    assert got.iou >= 0.9, got


@pytest.mark.parametrize(
    ("name", "by", "iou"),
    [("33", (0.02, 0), 0.95), ("33", (-0.02, 0), 0.95), ("33", (0, -0.02), 0.95),
     ("14", (0.02, 0), 0.85)],
)  # fmt: skip
def test_a_box_a_few_pixels_off_gives_about_the_same_mask(gateway, name, by, iou):
    # The next shot of the same drawing puts the detector's box a few pixels elsewhere
    # (`photo_variants --shift`). Seen once, the segmenter filled the bays under photo 33's
    # arms and its shadow with the box 2% right, left or up (IoU 0.988 as taken, 0.69-0.72
    # moved); photo 14, the bird, fell from 0.881 to 0.705 with its box 2% right. Seen as it
    # is and mirrored, the logits averaged: 0.99 and 0.89.
    truth = TRUTH[name]
    path = real_photo(truth.photo)
    [got] = score_shifted(gateway.url, path.parent, [truth], [annotate(gateway.url, path)], by)
    assert got.iou >= iou, got


@pytest.mark.parametrize(("name", "iou"), [("38", 0.7), ("02", 0.85)])
def test_an_outline_the_segmenter_stops_short_of_is_filled_whole(gateway, name, iou):
    # Real photo 38: the segmenter read the lower half of a pencil dress as legs with paper
    # between, and the dress's outline, cut off 15 px from its mask, was open at the hem:
    # IoU 0.488, the dress's inside missing (the balloon beyond the crop is missing still).
    # Photo 02: a body drawn as one outline, open at its back for the same reason: 0.718.
    # With the strokes the mask comes near taken whole: 0.712 and 0.888.
    _, got = _scored(gateway.url, name)
    assert got.iou >= iou, got


def test_a_ruled_line_is_cut_where_it_leaves_the_figure(gateway):
    # Real photo 27, a footballer on lined paper: a page's line and a stroke from the right
    # foot ran on to the crop's edge with the figure, 4.3% of its area more than 10 px
    # outside it (IoU 0.840); cut where they leave it: 2.1% (0.858). The poles it holds
    # up stay.
    assert _beyond(gateway.url, "27", 10) < 0.03


def test_arms_drawn_open_at_the_hand_are_filled(gateway):
    # Real photo 20: pencil arms drawn as outlines, open at the hand by more than OpenCV's
    # closing round the joints bridges: its mask, chosen, held their lines only (IoU 0.895,
    # 76% of the joints inside). The segmenter saw them filled; where the two masks agree,
    # an outline's inside round a bone that it covers is now taken: 0.925, every joint.
    _, got = _scored(gateway.url, "20")
    assert got.iou >= 0.91 and got.joints_inside == 1.0, got


@pytest.mark.parametrize("name", ["02", "32"])
def test_no_sliver_of_paper_runs_out_to_a_crumb_of_grain(gateway, name):
    # Real photos 02 (pencil on grainy paper) and 32 (felt tip): crumbs of the page's
    # grain a few tens of px off the figure were each joined to it by a bridge longer than
    # themselves, slivers of paper sticking out of the outline: 1.5% and 1.7% of the
    # figure's area more than 5 px outside it. A bridge now reaches only what spans at
    # least its length (`figure_mask.GAP_SPAN`): 0.7% and 0.5%.
    assert _beyond(gateway.url, name, 5) < 0.01


@pytest.mark.parametrize("name", ["04", "11", "18", "37", "39"])
def test_the_mask_ends_where_the_strokes_do(gateway, name):
    # Issue 26's rule: the figure's ink to its outer edge, no rim of paper round it. The
    # segmenter's margin of a pixel or two at its input grew with the photo: the paper more
    # than 1 px outside these figures was 4-13% of their area (11: 12.5%); now under 2%.
    assert _beyond(gateway.url, name, 1) < 0.025


@pytest.mark.parametrize("name, share", [("14", 0.02), ("35", 0.12)])
def test_pieces_joined_by_paper_leave_no_rim_of_paper_round_the_figure(gateway, name, share):
    # Real photo 14's wing stops short of the bird's body, and on 35 the paper round a
    # butterfly's scrap holds a wrist: the mask joins them across paper. Taking the paper
    # off the rim split them, so all of it was kept, round the whole figure: 2.7% and
    # 15.8% of the figure's area more than 1 px outside it. Only the paper between the
    # pieces stays now (`figure_mask._rejoined`): 1.5% and 9.5%.
    assert _beyond(gateway.url, name, 1) < share


def test_the_table_below_the_page_stays_behind(gateway):
    # Real photo 01: the crayon figure's foot touches the bottom of the page, where a band
    # of table runs the photo's whole width; it came along as a slab that swung with the
    # leg. IoU 0.920 with it, 0.967 without.
    answer, got = _scored(gateway.url, "01")
    assert answer.mask[-8:].mean() < 0.05
    assert got.iou >= 0.95, got


@pytest.mark.parametrize("name", ["09", "14", "32"])
def test_a_big_foot_at_the_end_of_a_leg_stays(gateway, name):
    # Real photos 09 (a coloured-in shoe), 14 (a bird's spread claws) and 32 (a stick
    # figure's splayed toes): the foot hung off the shin through a narrow neck, bigger than
    # a hand, and was cut off as a thing glued on. The figure within a tenth of its size of
    # the left ankle: 31%, 61% and 82% of it in the mask before, over 96% now.
    answer, _ = _scored(gateway.url, name)
    truth = TRUTH[name]
    figure = truth.figure(1)
    rows, cols = np.nonzero(figure)
    side = max(np.ptp(rows), np.ptp(cols))
    x, y = truth.joints[1][COCO_KEYPOINTS.index("left_ankle")]
    yy, xx = np.mgrid[: figure.shape[0], : figure.shape[1]]
    foot = figure & ((xx - x) ** 2 + (yy - y) ** 2 <= (0.1 * side) ** 2)
    assert (answer.mask & foot).sum() > 0.93 * foot.sum()


# The figure detector's box of real photo 36: the two girls on the right, as one figure.
TWO_GIRLS = (346.0, 33.0, 640.0, 481.0)


def test_a_neighbours_head_against_the_figures_stays_behind(gateway):
    # Real photo 36, a family side by side, with the figure detector's box of two girls as
    # one (given): the pose finds the black-haired one (figure 3), and her hair touches her
    # sister's face. The heads were one blob on the head, so the sister's face, hair, arms
    # and the top of her dress came along: 79% of her in the mask, IoU 0.555. Cut at her
    # face: 0.5% of her, IoU 0.82.
    truth = TRUTH["36"]
    answer = annotate(gateway.url, real_photo(truth.photo), bbox=TWO_GIRLS)
    got = score("36", truth.labels, truth.joints, answer)
    sister = truth.figure(4)
    assert got.figure == 3, got
    assert (answer.mask & sister).sum() < 0.1 * sister.sum()
    assert got.iou >= 0.78, got


def test_one_girl_of_a_family_side_by_side_is_boxed_alone(gateway):
    # Real photo 36 as taken: the person detector boxes one girl (figure 4) inside the
    # figure detector's box of two. A strand of her sister's hair at her side comes along
    # (8% of the sister), nothing more.
    answer, got = _scored(gateway.url, "36")
    sister = TRUTH["36"].figure(3)
    assert got.figure == 4, got
    assert (answer.mask & sister).sum() < 0.15 * sister.sum()
    assert got.iou >= 0.8, got


def test_two_figures_boxed_as_one_are_warned_of(gateway):
    # Real photo 15, a comic cover: one figure leaping above another, boxed as one by both
    # detectors and animated as one figure (IoU 0.545 against the bigger). The answer says
    # so, for the person to box the one to animate; the figures beside others that the
    # person detector boxed alone (36, 39) and a single figure (04) are not warned of.
    answer, _ = _scored(gateway.url, "15")
    assert "several_figures" in answer.warnings, answer.warnings
    for name in ("04", "36", "39"):
        answer, _ = _scored(gateway.url, name)
        assert "several_figures" not in answer.warnings, (name, answer.warnings)


def test_a_girl_among_butterflies_is_boxed_alone(gateway):
    # Real photo 35: a girl among butterflies, clouds and grass. The figure detector boxed
    # the scene, the pose put her wrists on butterflies and her ankles in the grass, and
    # the mask followed them: IoU 0.376, and 1.49 of her area more than 10 px off her. The
    # person detector boxes her alone, well inside: 0.83, and 0.11 off her (the rays drawn
    # round her hair, the lines to two butterflies).
    _, got = _scored(gateway.url, "35")
    assert got.iou >= 0.78, got
    assert _beyond(gateway.url, "35", 10) < 0.2


@pytest.fixture(scope="module")
def served_rig(gateway, tmp_path_factory):
    """Real photo NAME annotated by the service and rigged as it rigs it for 256 px, once
    for the module."""
    rigs = {}

    def rig_of(name: str):
        if name not in rigs:
            folder = tmp_path_factory.mktemp(f"photo{name}")
            made = character_folder(gateway.url, real_photo(TRUTH[name].photo), folder)
            rigs[name] = rig_for(load_character(made), 256)
        return rigs[name]

    return rig_of


def _torn_frames(r, motion: str) -> int:
    return int((measure(r, motion_clip(r, motion)).torn > 0).sum())


def _deep(r) -> np.ndarray:
    """(T,) bool: the rig's drawn, moving triangles at least half the torso's median
    half-width inside the figure."""
    inside = cv2.distanceTransform(r.mesh.region.astype(np.uint8), cv2.DIST_L2, 5)
    torso_width = torso_half_width(r.character.skeleton.rest, inside)
    centres = np.round(r.mesh.vertices[r.mesh.triangles].mean(axis=1)).astype(int)
    moving = ~np.isin(r.mesh.part, list(r.mesh.binding.still)) & (r.mesh.layer > 0)
    return moving & (inside[centres[:, 1], centres[:, 0]] >= 0.5 * torso_width)


def test_arms_placed_across_a_round_body_leave_the_body_whole(served_rig):
    # Real photo 10, an ice cream: the pose ran its arms' bones up into the scoop, the arm
    # parts took the scoop between them (72 triangles half the torso's width deep or more),
    # and in a dab the scoop was torn apart with the arms. No arm may now move a triangle
    # that deep inside the figure.
    r = served_rig("10")
    assert not (_arms(r) & _deep(r)).any()
    assert _torn_frames(r, "dab") == 0


def test_legs_placed_in_a_trees_broad_base_leave_the_tree_whole(served_rig):
    # Real photo 12: the pose put the hips and knees inside the tree's base, and the legs
    # took 28 triangles of it half the torso's width deep or more: walking, the tree opened
    # white slits. Legs give up the body's mass where it is far thicker than the trunk.
    r = served_rig("12")
    legs = np.isin(r.mesh.part, [PART_INDEX[p] for p in PARTS if p.endswith("leg")])
    assert not (legs & _deep(r)).any()


def test_a_star_on_a_trees_top_moves_with_its_head_not_as_an_arm(served_rig):
    # Real photo 12, a Christmas tree: the pose ran the left arm up into the star on top,
    # and the star's right half (36 triangles above the face) swung as the arm, tearing the
    # star apart. An "arm" joined to the head along far more than to the body is the head's.
    r = served_rig("12")
    face = r.character.skeleton.rest[JOINT_INDEX["neck"]]
    above = r.mesh.vertices[r.mesh.triangles].mean(axis=1)[:, 1] < face[1]
    drawn_above = above & (r.mesh.layer > 0)
    assert drawn_above.sum() > 20 and not (drawn_above & _arms(r)).any()


def test_a_face_drawn_on_the_dress_turns_whole_and_opens_no_wedge(served_rig):
    # Real photo 31: a round face drawn straight on the dress, the face joint low in it;
    # the arms' bones run up its sides. The face's upper sides went with the body, and as
    # the head turned (zombie) a wedge of paper opened across the top of the head.
    r = served_rig("31")
    face = r.character.skeleton.rest[JOINT_INDEX["neck"]]
    inside = cv2.distanceTransform(r.character.mask.astype(np.uint8), cv2.DIST_L2, 5)
    width = float(inside[int(round(face[1])), int(round(face[0]))])
    centres = r.mesh.vertices[r.mesh.triangles].mean(axis=1)
    head = np.linalg.norm(centres - face, axis=1) < 0.9 * width
    head &= (centres[:, 1] <= face[1] + 0.25 * width) & (r.mesh.layer > 0)
    assert head.sum() > 20 and (r.mesh.part[head] == PART_INDEX["head"]).all()
    assert not measure(r, motion_clip(r, "zombie")).torn.any()


def test_a_sleeve_drawn_against_a_jacket_never_tears_off_it(served_rig):
    # Real photo 18: the sleeves lie against the jacket, whose shoulders are body mass. With
    # the forearm swinging about its elbow while its whole length lay against the body, it
    # came off the jacket: 9 torn frames in `hop`, 2 in `box`, 4 in `dizzy`. Such an arm is
    # kept still.
    r = served_rig("18")
    assert {PART_INDEX["right_upper_arm"], PART_INDEX["right_lower_arm"]} <= set(
        r.mesh.binding.still
    )
    assert {motion: _torn_frames(r, motion) for motion in ("hop", "box", "dizzy")} == {
        "hop": 0,
        "box": 0,
        "dizzy": 0,
    }


def _arms(r) -> np.ndarray:
    return np.isin(r.mesh.part, [PART_INDEX[p] for p in PARTS if p.endswith("arm")])
