"""The shipped motions follow the rules for drawn figures (README, "Motions for drawn
figures") and are what their names say, read from `--joints-out` on real drawings."""

import json

import numpy as np
import pytest

from animation.__main__ import main
from animation.character import load_character
from animation.joint_guard import guard_joints
from animation.motions import motion_table
from animation.retarget import MAX_HEAD_TILT_DEG
from animation.skeleton import JOINT_INDEX as J
from tests.support.real_photos import real_dev

DRAWINGS = ["char1", "char2", "char3", "char4"]
BENDING = {"bow"}  # bending is the point of these: the body leaves the upright rule
# How high each of these leaves the ground at least, of the figure's height.
LEAVING_THE_GROUND = {"jumping": 0.1, "hop": 0.03, "skip": 0.03, "jump_rope": 0.02,
                      "star_jump": 0.02}  # fmt: skip


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """(drawing, motion) -> (F, 16, 2) joints in the GIF's pixels."""
    folder = tmp_path_factory.mktemp("clips")
    out = {}
    for drawing in DRAWINGS:
        for motion in motion_table():
            gif, joints = folder / f"{drawing}-{motion}.gif", folder / f"{drawing}-{motion}.json"
            argv = ["render", "--character", str(real_dev(drawing)), "--motion", motion]
            assert main([*argv, "--out", str(gif), "--joints-out", str(joints)]) == 0
            out[drawing, motion] = np.array(json.loads(joints.read_text())["frames"])
    return out


def _angle(v: np.ndarray) -> np.ndarray:
    return np.degrees(np.arctan2(v[..., 1], v[..., 0]))


def _height(f: np.ndarray) -> float:
    return float(np.ptp(f[0, :, 1]))


def _lean(f: np.ndarray) -> np.ndarray:
    """(F,) degrees the hips-to-chest line leans from vertical, either way."""
    spine = f[:, J["torso"]] - f[:, J["hip"]]
    return np.degrees(np.arctan2(np.abs(spine[:, 0]), -spine[:, 1]))


def _times(condition: np.ndarray) -> int:
    """How many separate runs of frames `condition` (F,) holds in."""
    return int(np.count_nonzero(np.diff(condition.astype(int)) == 1) + condition[0])


@pytest.mark.parametrize("drawing", DRAWINGS)
@pytest.mark.parametrize("motion", list(motion_table()))
def test_the_head_stays_on_its_torso_and_the_body_upright(clips, drawing, motion):
    f = clips[drawing, motion]
    c = load_character(real_dev(drawing))
    rest = guard_joints(c.mask, c.skeleton.rest).rest[None]

    def head_on_torso(j: np.ndarray) -> np.ndarray:
        return _angle(j[:, J["neck"]] - j[:, J["torso"]]) - _angle(
            j[:, J["torso"]] - j[:, J["hip"]]
        )

    # Against the drawing: its own head sits on its torso at some angle.
    tilt = (head_on_torso(f) - head_on_torso(rest) + 180) % 360 - 180
    assert np.abs(tilt).max() <= MAX_HEAD_TILT_DEG + 0.5
    if motion not in BENDING:
        assert np.mean(_lean(f) <= 20) >= 0.95, _lean(f).max()


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_feet_stay_on_the_ground_except_in_the_jump(clips, drawing):
    for motion in motion_table():
        f = clips[drawing, motion]
        lowest = f[:, [J["left_foot"], J["right_foot"]], 1].max(axis=1)  # y grows down
        rise = (lowest.max() - lowest) / _height(f)
        if motion in LEAVING_THE_GROUND:
            assert rise.max() > LEAVING_THE_GROUND[motion]  # it leaves the ground
            assert rise[0] < 0.02 and rise[-1] < 0.02  # and lands
        else:
            assert rise.max() < 0.03, motion


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_dab_crosses_an_arm_in_front_and_raises_the_other_each_way(clips, drawing):
    f = clips[drawing, "dab"]
    mid = f[:, J["torso"], 0]
    neck_y = f[:, J["neck"], 1]
    shoulders_y = f[:, [J["left_shoulder"], J["right_shoulder"]], 1].min(axis=1)
    # The figure's right is the image's left: a right hand crossing goes right of the middle
    # while the left arm is up and out (its hand above the shoulders).
    right_across = (f[:, J["right_hand"], 0] > mid) & (f[:, J["left_hand"], 1] < shoulders_y)
    left_across = (f[:, J["left_hand"], 0] < mid) & (f[:, J["right_hand"], 1] < shoulders_y)
    assert right_across.sum() >= 5 and left_across.sum() >= 5
    assert np.flatnonzero(right_across).mean() < np.flatnonzero(left_across).mean()
    # The crossing hand stays clear of the face: below the nose in every frame.
    crossing = np.where(right_across, f[:, J["right_hand"], 1], f[:, J["left_hand"], 1])
    assert (crossing[right_across | left_across] > neck_y[right_across | left_across]).all()


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_wave_raises_the_right_hand_and_swings_it(clips, drawing):
    f = clips[drawing, "wave_hello"]
    hand, shoulder = f[:, J["right_hand"]], f[:, J["right_shoulder"]]
    raised = hand[:, 1] < shoulder[:, 1]
    assert raised.mean() > 0.6
    assert np.ptp(hand[raised, 0]) > 0.1 * _height(f)


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_zombie_reaches_both_arms_forward(clips, drawing):
    f = clips[drawing, "zombie"]
    height = _height(f)
    for side in ("left", "right"):
        hand, shoulder = f[:, J[f"{side}_hand"]], f[:, J[f"{side}_shoulder"]]
        level = np.abs(hand[:, 1] - shoulder[:, 1]) < 0.15 * height
        assert level.mean() > 0.8, side
    # Seen half in profile, both arms reach the same way, each from its own shoulder.
    hands = f[:, [J["left_hand"], J["right_hand"]], 0]
    reach = hands - f[:, [J["left_shoulder"], J["right_shoulder"]], 0]
    assert (np.sign(reach[:, 0]) == np.sign(reach[:, 1])).mean() > 0.8
    assert (np.abs(reach) > 0.15 * height).all(axis=1).mean() > 0.8


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_clap_brings_the_hands_together_again_and_again(clips, drawing):
    f = clips[drawing, "clap"]
    # Whether the hands touch depends on the drawing: arms shorter than the shoulders are
    # wide (char1, char3) close the gap to a quarter of its widest, not to nothing.
    apart = np.linalg.norm(f[:, J["left_hand"]] - f[:, J["right_hand"]], axis=1)
    together = apart < 0.35 * apart.max()
    assert _times(together) >= 3


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_cheer_throws_both_hands_up(clips, drawing):
    f = clips[drawing, "cheer"]
    hands, shoulders = (
        f[:, [J["left_hand"], J["right_hand"]], 1],
        f[:, [J["left_shoulder"], J["right_shoulder"]], 1],
    )
    assert (hands < shoulders).all(axis=1).mean() > 0.8


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_waving_both_arms_swings_both_raised_hands_together(clips, drawing):
    f = clips[drawing, "wave_both"]
    hands, shoulders = (
        f[:, [J["left_hand"], J["right_hand"]]],
        f[:, [J["left_shoulder"], J["right_shoulder"]]],
    )
    assert (hands[..., 1] < shoulders[..., 1]).all(axis=1).mean() > 0.6
    x = hands[..., 0] - f[:, [J["torso"]], 0]
    assert np.ptp(x, axis=0).min() > 0.1 * _height(f)
    assert np.corrcoef(x[:, 0], x[:, 1])[0, 1] > 0.5  # the same way at once


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_bow_bends_the_body_forward_and_straightens(clips, drawing):
    f = clips[drawing, "bow"]
    spine = f[:, J["torso"]] - f[:, J["hip"]]
    forward = np.degrees(np.arctan2(spine[:, 0], -spine[:, 1]))  # side view: forward = right
    assert forward.max() > 30
    assert abs(forward[0]) < 10 and abs(forward[-1]) < 10


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_kick_raises_each_foot_above_the_other_knee(clips, drawing):
    f = clips[drawing, "kick"]
    for side, other in (("left", "right"), ("right", "left")):
        assert (f[:, J[f"{side}_foot"], 1] < f[:, J[f"{other}_knee"], 1]).sum() >= 3, side


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_hop_holds_one_foot_up_and_leaves_the_ground_on_the_other(clips, drawing):
    f = clips[drawing, "hop"]
    height = _height(f)
    held = (f[:, J["right_foot"], 1] - f[:, J["left_foot"], 1]) / height
    assert (held > 0.08).mean() > 0.8
    standing = f[:, J["right_foot"], 1]
    assert _times((standing.max() - standing) / height > 0.03) >= 3  # three hops


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_stomp_lifts_each_knee_in_turn(clips, drawing):
    f = clips[drawing, "stomp"]
    rise = (
        f[:, [J["left_knee"], J["right_knee"]], 1].max(axis=0)
        - f[:, [J["left_knee"], J["right_knee"]], 1]
    ) / _height(f)
    for k, side in enumerate(("left", "right")):
        assert rise[:, k].max() > 0.05, side
    assert np.argmax(rise[:, 0]) != np.argmax(rise[:, 1])  # not both at once


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_boxing_punches_each_fist_out_to_its_side_in_turn(clips, drawing):
    f = clips[drawing, "box"]
    height = _height(f)
    reach = np.abs(f[:, [J["left_hand"], J["right_hand"]], 0] - f[:, [J["torso"]], 0]) / height
    for k, side in enumerate(("left", "right")):
        punched = (reach[:, k] > 0.3) & (reach[:, k] > reach[:, 1 - k] + 0.1)
        assert punched.sum() >= 2, side


def _ground_rise(f: np.ndarray) -> np.ndarray:
    """(F,) how far the lower foot is above its lowest, of the figure's height."""
    lowest = f[:, [J["left_foot"], J["right_foot"]], 1].max(axis=1)
    return (lowest.max() - lowest) / _height(f)


def _rest(drawing: str) -> np.ndarray:
    c = load_character(real_dev(drawing))
    return guard_joints(c.mask, c.skeleton.rest).rest


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_walk_strides_each_foot_forward_in_turn(clips, drawing):
    f = clips[drawing, "walk"]
    # Side view: each foot ahead of its own hip (the drawing's stance cancels out).
    reach = f[:, [J["left_foot"], J["right_foot"]], 0] - f[:, [J["left_hip"], J["right_hip"]], 0]
    ahead = (reach[:, 0] - reach[:, 1]) / _height(f)
    assert ahead.max() > 0.1 and ahead.min() < -0.1


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_run_drives_each_knee_up_in_turn(clips, drawing):
    f = clips[drawing, "run"]
    knees = f[:, [J["left_knee"], J["right_knee"]], 1]
    rise = (knees.max(axis=0) - knees) / _height(f)
    assert (rise.max(axis=0) > 0.1).all()
    assert np.argmax(rise[:, 0]) != np.argmax(rise[:, 1])


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_skipping_a_rope_hops_with_the_hands_low(clips, drawing):
    f = clips[drawing, "jump_rope"]
    assert _times(_ground_rise(f) > 0.02) >= 3
    hands, shoulders = (
        f[:, [J["left_hand"], J["right_hand"]], 1],
        f[:, [J["left_shoulder"], J["right_shoulder"]], 1],
    )
    assert (hands > shoulders).all(axis=1).mean() > 0.8


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_shrug_turns_both_forearms_out(clips, drawing):
    f = clips[drawing, "shrug"]
    mid = f[:, [J["torso"]], 0]
    out = np.abs(f[:, [J["left_hand"], J["right_hand"]], 0] - mid) > np.abs(
        f[:, [J["left_elbow"], J["right_elbow"]], 0] - mid
    )
    up = f[:, [J["left_hand"], J["right_hand"]], 1] < f[:, [J["left_elbow"], J["right_elbow"]], 1]
    assert (out & up).all(axis=1).sum() >= 5


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_the_robot_holds_one_forearm_up_and_one_down_then_swaps(clips, drawing):
    f = clips[drawing, "robot"]
    up = f[:, [J["left_hand"], J["right_hand"]], 1] < f[:, [J["left_elbow"], J["right_elbow"]], 1]
    assert (up[:, 0] & ~up[:, 1]).sum() >= 3 and (up[:, 1] & ~up[:, 0]).sum() >= 3


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_swimming_windmills_each_arm_over_and_under_in_turn(clips, drawing):
    f = clips[drawing, "swim"]
    over = (
        f[:, [J["left_hand"], J["right_hand"]], 1]
        < f[:, [J["left_shoulder"], J["right_shoulder"]], 1]
    )
    assert over.any(axis=0).all() and (~over).any(axis=0).all()
    assert (over[:, 0] != over[:, 1]).mean() > 0.5  # mostly one up while the other is down


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_dizzy_wobbles_the_body_from_side_to_side(clips, drawing):
    f = clips[drawing, "dizzy"]
    assert np.ptp(f[:, J["hip"], 0]) > 0.04 * _height(f)
    assert np.ptp(_angle(f[:, J["torso"]] - f[:, J["hip"]])) > 5


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_sneaking_crouches_with_the_hands_up(clips, drawing):
    f, rest = clips[drawing, "sneak"], _rest(drawing)

    def legs_to_back(j: np.ndarray) -> np.ndarray:  # leg height against the back's length
        feet = j[..., [J["left_foot"], J["right_foot"]], 1].max(axis=-1)
        back = np.linalg.norm(j[..., J["torso"], :] - j[..., J["hip"], :], axis=-1)
        return (feet - j[..., J["hip"], 1]) / back

    assert (legs_to_back(f) < 0.95 * legs_to_back(rest)).mean() > 0.8
    hands_up = f[:, [J["left_hand"], J["right_hand"]], 1] < f[:, [J["hip"]], 1]
    assert hands_up.all(axis=1).mean() > 0.8


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_star_jump_opens_into_a_star_and_closes(clips, drawing):
    f = clips[drawing, "star_jump"]
    feet = np.abs(f[:, J["left_foot"], 0] - f[:, J["right_foot"], 0])
    shoulders = f[:, [J["left_shoulder"], J["right_shoulder"]], 1]
    hands_up = (f[:, [J["left_hand"], J["right_hand"]], 1] < shoulders).all(axis=1)
    star = hands_up & (feet > 1.3 * feet.min())
    assert _times(star) >= 3 and _times(_ground_rise(f) > 0.02) >= 3


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_disco_points_each_arm_up_across_in_turn(clips, drawing):
    f = clips[drawing, "disco"]
    shoulders = f[:, [J["left_shoulder"], J["right_shoulder"]], 1].min(axis=1)
    for hand, other in (("left_hand", "right_hand"), ("right_hand", "left_hand")):
        pointing = (f[:, J[hand], 1] < shoulders) & (f[:, J[other], 1] > shoulders)
        assert _times(pointing) >= 2, hand


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_skipping_hops_with_each_knee_up_in_turn(clips, drawing):
    f = clips[drawing, "skip"]
    assert _times(_ground_rise(f) > 0.03) >= 2
    knees = f[:, [J["left_knee"], J["right_knee"]], 1]
    rise = (knees.max(axis=0) - knees) / _height(f)
    assert (rise.max(axis=0) > 0.05).all() and np.argmax(rise[:, 0]) != np.argmax(rise[:, 1])


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_a_stretch_reaches_both_hands_high_then_wide(clips, drawing):
    f = clips[drawing, "stretch"]
    hands = f[:, [J["left_hand"], J["right_hand"]], 1]
    high = (hands < f[:, [J["neck"]], 1]).all(axis=1)
    shoulders = f[:, [J["left_shoulder"], J["right_shoulder"]], 1]
    level = (np.abs(hands - shoulders) < 0.15 * _height(f)).all(axis=1)  # opened out wide
    assert high.sum() >= 5 and level.sum() >= 3
    assert np.flatnonzero(high).mean() < np.flatnonzero(level & ~high).mean()  # high, then wide
