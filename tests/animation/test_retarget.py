"""Retargeting a 3D BVH onto a drawn character's 16 joints."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from animation.bvh import forward_kinematics, load_bvh, parse_bvh
from animation.motions import load_motion, motion_from_spec
from animation.retarget import retarget
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX, Skeleton
from animation.timing import frame_schedule

EXTERNAL = Path(__file__).parent / "data" / "bvh_external_zup_30fps.bvh"
SHIPPED = ("dab", "jumping", "wave_hello", "zombie")

# A child's drawing: big head, short arms, legs of unequal length (the right foot drawn
# lower, so the ground line is the right foot's).
DRAWING = {
    "root": (200, 300), "hip": (200, 300), "torso": (202, 190), "neck": (205, 120),
    "right_shoulder": (160, 195), "right_elbow": (130, 250), "right_hand": (120, 300),
    "left_shoulder": (245, 192), "left_elbow": (275, 240), "left_hand": (290, 290),
    "right_hip": (178, 305), "right_knee": (172, 380), "right_foot": (170, 462),
    "left_hip": (222, 303), "left_knee": (228, 375), "left_foot": (232, 450),
}  # fmt: skip
CHARACTER = Skeleton(np.array([DRAWING[j] for j in JOINTS], dtype=float))
GROUND = 462.0
J = JOINT_INDEX


def _bone_lengths(poses: np.ndarray) -> np.ndarray:
    parent = np.where(PARENT_INDEX < 0, np.arange(len(JOINTS)), PARENT_INDEX)
    return np.linalg.norm(poses - poses[:, parent], axis=2)


def _lowest_foot(poses: np.ndarray) -> np.ndarray:
    return poses[:, [J["left_foot"], J["right_foot"]], 1].max(axis=1)


def _all_frames(motion) -> np.ndarray:
    return np.arange(motion.bvh.n_frames) * motion.bvh.frame_time


@pytest.fixture(scope="module")
def shipped():
    return {name: load_motion(name) for name in SHIPPED}


@pytest.mark.parametrize("name", [*SHIPPED, "external"])
def test_keeps_every_bone_length(shipped, name):
    motion = shipped[name] if name != "external" else load_motion(EXTERNAL)
    poses = retarget(CHARACTER, motion, _all_frames(motion))
    assert poses.shape == (motion.bvh.n_frames, 16, 2)
    rest = CHARACTER.bone_lengths()
    lengths = _bone_lengths(poses)
    np.testing.assert_allclose(lengths, np.broadcast_to(rest, lengths.shape), rtol=0.01, atol=1e-6)
    assert np.ptp(poses, axis=0).max() > 20  # and the figure moves


@pytest.mark.parametrize("name", SHIPPED)
def test_feet_stay_on_the_ground_line(shipped, name):
    motion = shipped[name]
    poses = retarget(CHARACTER, motion, _all_frames(motion))
    lowest = _lowest_foot(poses)
    assert lowest[0] == pytest.approx(GROUND, abs=0.5)  # the clip starts standing
    assert lowest.max() <= GROUND + 0.5  # never below the ground line
    leg = 160.0
    if name == "jumping":
        assert lowest.min() < GROUND - 0.15 * leg  # airborne
    else:
        assert lowest.min() > GROUND - 0.05 * leg  # a foot always down


def test_loops_and_samples_between_source_frames(shipped):
    motion = shipped["wave_hello"]
    times, _ = frame_schedule(motion.duration_s, 15)
    poses = retarget(CHARACTER, motion, np.concatenate([times, [motion.duration_s]]))
    np.testing.assert_allclose(poses[-1], poses[0], atol=0.5)
    dt = motion.bvh.frame_time
    three = retarget(CHARACTER, motion, np.array([10 * dt, 10.5 * dt, 11 * dt]))
    np.testing.assert_allclose(three[1], (three[0] + three[2]) / 2, atol=0.5)
    assert np.abs(three[2] - three[0]).max() > 0.01


def test_mirroring_the_bvh_left_arm_moves_the_characters_left_hand(shipped):
    # dab, held at 1 s: the BVH's left arm points up and out to its left, which for a
    # figure facing the viewer is the image's right.
    pose = retarget(CHARACTER, shipped["dab"], np.array([1.0]))[0]
    arm = np.linalg.norm(pose[J["left_hand"]] - pose[J["left_shoulder"]])
    assert pose[J["left_hand"], 1] < pose[J["left_shoulder"], 1] - 0.4 * arm  # up
    assert pose[J["left_hand"], 0] > pose[J["left_shoulder"], 0] + 0.4 * arm  # and out
    # wave_hello waves the BVH's right hand: the character's right hand, image left.
    poses = retarget(CHARACTER, shipped["wave_hello"], np.linspace(0, 2.3, 24))
    assert np.all(poses[:, J["right_hand"], 1] < poses[:, J["right_shoulder"], 1])
    assert np.all(poses[:, J["right_hand"], 0] < poses[:, J["torso"], 0])
    assert np.all(poses[:, J["left_hand"], 1] > poses[:, J["left_shoulder"], 1])  # hangs
    # The waving forearm swings side to side at the elbow.
    forearm = poses[:, J["right_hand"]] - poses[:, J["right_elbow"]]
    angle = np.degrees(np.arctan2(forearm[:, 0], -forearm[:, 1]))
    assert np.ptp(angle) > 45


def test_external_zup_bvh_retargets_with_no_config():
    motion = load_motion(EXTERNAL)
    poses = retarget(CHARACTER, motion, _all_frames(motion))
    first, last = poses[0], poses[-1]
    # T-pose at the start: the left arm straight out to the image's right.
    arm = first[J["left_hand"]] - first[J["left_shoulder"]]
    assert arm[0] > 0 and abs(arm[1]) < 0.05 * np.linalg.norm(arm)
    # Raised by 80 degrees at the end, still on the image's right.
    arm = np.linalg.norm(last[J["left_hand"]] - last[J["left_shoulder"]])
    assert last[J["left_hand"], 1] < last[J["left_shoulder"], 1] - 0.5 * arm
    assert last[J["left_hand"], 0] > last[J["left_shoulder"], 0]
    # The right arm keeps its T-pose.
    right_arm = poses[:, J["right_hand"]] - poses[:, J["right_shoulder"]]
    np.testing.assert_allclose(right_arm, np.broadcast_to(right_arm[0], right_arm.shape), atol=1e-6)
    # Hips moved 10 cm to the BVH's left: the root moves right by 10 cm x leg ratio.
    char_leg = np.mean([
        np.linalg.norm(CHARACTER[f"{s}_hip"] - CHARACTER[f"{s}_knee"])
        + np.linalg.norm(CHARACTER[f"{s}_knee"] - CHARACTER[f"{s}_foot"]) for s in ("left", "right")
    ])  # fmt: skip
    expected = 10.0 * char_leg / (44 + 42)
    assert last[J["root"], 0] - first[J["root"], 0] == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(_lowest_foot(poses), GROUND, atol=1e-6)


def test_mixamo_prefix_metres_and_given_up_axis_change_nothing():
    text = EXTERNAL.read_text()
    reference = load_motion(EXTERNAL)
    times = _all_frames(reference)
    expected = retarget(CHARACTER, reference, times)

    prefixed = re.sub(r"(ROOT|JOINT) (\w+)", r"\1 mixamorig:\2", text)
    assert "JOINT mixamorig:LeftForeArm" in prefixed
    bvh = parse_bvh(prefixed, source="mixamo.bvh")
    motion = motion_from_spec(replace(reference.spec, bones={}), bvh=bvh)
    np.testing.assert_allclose(retarget(CHARACTER, motion, times), expected, atol=1e-6)

    bvh = load_bvh(EXTERNAL)
    metres = replace(bvh, offsets=bvh.offsets / 100, motion=bvh.motion.copy())
    metres.motion[:, :3] /= 100
    motion = motion_from_spec(replace(reference.spec, bones={}), bvh=metres)
    np.testing.assert_allclose(retarget(CHARACTER, motion, times), expected, atol=1e-6)

    assert load_motion(EXTERNAL, up="z").up == "z"
    np.testing.assert_allclose(retarget(CHARACTER, load_motion(EXTERNAL, up="z"), times), expected)
    # A wrong up axis gives a different (lying down) figure: the axis is really used.
    sideways = retarget(CHARACTER, load_motion(EXTERNAL, up="x"), times)
    assert np.abs(sideways - expected).max() > 50


def test_bone_pointing_at_the_camera_keeps_its_drawn_direction():
    bvh = load_bvh(EXTERNAL)
    fore = bvh.index("LeftForeArm")
    column = bvh.channel_start[fore] + bvh.channels[fore].index("Zrotation")
    motion_values = bvh.motion.copy()
    motion_values[:, column] = -90.0  # the forearm turns from +X to -Y: at the viewer
    motion = motion_from_spec(load_motion(EXTERNAL).spec, bvh=replace(bvh, motion=motion_values))
    poses = retarget(CHARACTER, motion, np.array([0.0]))
    drawn = CHARACTER["left_hand"] - CHARACTER["left_elbow"]
    now = poses[0, J["left_hand"]] - poses[0, J["left_elbow"]]
    np.testing.assert_allclose(now, drawn, atol=1e-6)


def test_best_fit_plane_keeps_the_elevation_of_arms_that_reach_forward(shipped):
    # The zombie's arms reach forward. Seen from the front their small sideways component
    # decides their 2D direction and the up-down bob is exaggerated; in the arm's own
    # vertical best-fit plane the drawn arm rises and falls as much as the 3D arm does.
    zombie = shipped["zombie"]
    assert zombie.spec.projection_of("left_arm") == "best_fit"
    front = replace(zombie, spec=replace(zombie.spec, limb_projection={}))
    times = np.arange(0, zombie.bvh.n_frames, 7) * zombie.bvh.frame_time
    pos = forward_kinematics(zombie.bvh)[np.arange(0, zombie.bvh.n_frames, 7)]
    names = zombie.bvh.names
    upper = pos[:, names.index("LeftForeArm")] - pos[:, names.index("LeftArm")]
    elevation_3d = np.degrees(np.arcsin(upper[:, 1] / np.linalg.norm(upper, axis=1)))

    def elevation_2d(motion):
        poses = retarget(CHARACTER, motion, times)
        v = poses[:, J["left_elbow"]] - poses[:, J["left_shoulder"]]
        return np.degrees(np.arctan2(-v[:, 1], np.abs(v[:, 0])))

    np.testing.assert_allclose(elevation_2d(zombie), elevation_3d, atol=2.0)
    assert np.abs(elevation_2d(front) - elevation_3d).max() > 10
    # The arms still reach out to their own sides: left hand right, right hand left.
    poses = retarget(CHARACTER, zombie, times)
    assert np.all(poses[:, J["left_hand"], 0] > poses[:, J["left_shoulder"], 0])
    assert np.all(poses[:, J["right_hand"], 0] < poses[:, J["right_shoulder"], 0])


def test_best_fit_of_a_limb_that_only_hangs_is_the_front_view():
    motion = load_motion(EXTERNAL)  # legs straight down in every frame
    fitted = replace(motion, spec=replace(motion.spec, projection="best_fit"))
    times = _all_frames(motion)
    expected, poses = retarget(CHARACTER, motion, times), retarget(CHARACTER, fitted, times)
    assert np.all(np.isfinite(poses))
    legs = [J[j] for j in ("left_knee", "left_foot", "right_knee", "right_foot")]
    np.testing.assert_allclose(poses[:, legs], expected[:, legs], atol=1e-6)
