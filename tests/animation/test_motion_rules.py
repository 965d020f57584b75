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
    spine = f[:, J["torso"]] - f[:, J["hip"]]
    lean = np.degrees(np.arctan2(np.abs(spine[:, 0]), -spine[:, 1]))
    assert np.mean(lean <= 20) >= 0.95, lean.max()


@pytest.mark.parametrize("drawing", DRAWINGS)
def test_feet_stay_on_the_ground_except_in_the_jump(clips, drawing):
    for motion in motion_table():
        f = clips[drawing, motion]
        lowest = f[:, [J["left_foot"], J["right_foot"]], 1].max(axis=1)  # y grows down
        rise = (lowest.max() - lowest) / _height(f)
        if motion == "jumping":
            assert rise.max() > 0.1  # it leaves the ground
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
