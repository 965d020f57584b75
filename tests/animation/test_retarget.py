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


def _forearm_at_the_viewer():
    """The external Z-up file with its left forearm turned from +X to -Y: at the viewer."""
    bvh = load_bvh(EXTERNAL)
    fore = bvh.index("LeftForeArm")
    column = bvh.channel_start[fore] + bvh.channels[fore].index("Zrotation")
    motion_values = bvh.motion.copy()
    motion_values[:, column] = -90.0
    return motion_from_spec(load_motion(EXTERNAL).spec, bvh=replace(bvh, motion=motion_values))


def test_bone_pointing_at_the_camera_keeps_its_drawn_direction():
    poses = retarget(CHARACTER, _forearm_at_the_viewer(), np.array([0.0]))
    drawn = CHARACTER["left_hand"] - CHARACTER["left_elbow"]
    now = poses[0, J["left_hand"]] - poses[0, J["left_elbow"]]
    np.testing.assert_allclose(now, drawn, atol=1e-6)


def _with_projection(motion, **limb_projection):
    return replace(motion, spec=replace(motion.spec, limb_projection=limb_projection))


def _elevation_3d(motion, frames: np.ndarray, upper: str, lower: str) -> np.ndarray:
    pos = forward_kinematics(motion.bvh)[frames]
    names = motion.bvh.names
    bone = pos[:, names.index(lower)] - pos[:, names.index(upper)]
    return np.degrees(np.arcsin(bone[:, 1] / np.linalg.norm(bone, axis=1)))


def _elevation_2d(poses: np.ndarray, shoulder: str, elbow: str) -> np.ndarray:
    v = poses[:, J[elbow]] - poses[:, J[shoulder]]
    return np.degrees(np.arctan2(-v[:, 1], np.abs(v[:, 0])))


def test_best_fit_plane_keeps_the_elevation_of_arms_that_reach_forward(shipped):
    # The zombie's arms reach forward. Seen from the front their small sideways component
    # decides their 2D direction and the up-down bob is exaggerated; in the arm's own
    # vertical best-fit plane the drawn arm rises and falls as much as the 3D arm does.
    zombie = _with_projection(shipped["zombie"], left_arm="best_fit", right_arm="best_fit")
    front = _with_projection(zombie)
    frames = np.arange(0, zombie.bvh.n_frames, 7)
    times = frames * zombie.bvh.frame_time
    elevation_3d = _elevation_3d(zombie, frames, "LeftArm", "LeftForeArm")

    def elevation_2d(motion):
        return _elevation_2d(retarget(CHARACTER, motion, times), "left_shoulder", "left_elbow")

    np.testing.assert_allclose(elevation_2d(zombie), elevation_3d, atol=2.0)
    assert np.abs(elevation_2d(front) - elevation_3d).max() > 10
    # Each arm's plane is oriented so that it reaches out to its own side: left hand
    # right, right hand left (a scarecrow, for arms that both reach forward).
    poses = retarget(CHARACTER, zombie, times)
    assert np.all(poses[:, J["left_hand"], 0] > poses[:, J["left_shoulder"], 0])
    assert np.all(poses[:, J["right_hand"], 0] < poses[:, J["right_shoulder"], 0])


def test_sagittal_view_sends_forward_to_the_image_right_for_both_arms(shipped):
    zombie = shipped["zombie"]
    frames = np.arange(0, zombie.bvh.n_frames, 7)
    poses = retarget(CHARACTER, zombie, frames * zombie.bvh.frame_time)
    for side, bvh_side in (("left", "Left"), ("right", "Right")):
        # Both arms reach forward in 3D, so both reach right in the picture, and a side
        # view keeps their elevation exactly.
        assert np.all(poses[:, J[f"{side}_elbow"], 0] > poses[:, J[f"{side}_shoulder"], 0])
        assert np.all(poses[:, J[f"{side}_hand"], 0] > poses[:, J[f"{side}_elbow"], 0])
        np.testing.assert_allclose(
            _elevation_2d(poses, f"{side}_shoulder", f"{side}_elbow"),
            _elevation_3d(zombie, frames, f"{bvh_side}Arm", f"{bvh_side}ForeArm"),
            atol=0.5,
        )
    # Up axis and facing come from the BVH itself: in the Z-up external file the figure
    # faces -Y; a forearm turned to point that way (at the viewer) points right.
    motion = _with_projection(_forearm_at_the_viewer(), left_arm="sagittal")
    pose = retarget(CHARACTER, motion, np.zeros(1))[0]
    forearm = pose[J["left_hand"]] - pose[J["left_elbow"]]
    np.testing.assert_allclose(forearm / np.linalg.norm(forearm), [1.0, 0.0], atol=1e-6)


def test_zombie_reaches_both_arms_the_same_way_and_leans_into_it(shipped):
    # What makes the zombie read as one and not as a scarecrow: in the picture, at the
    # table's projection, both hands are on the same side of the body, the arms about
    # level, the body and the head leaning that way.
    zombie = shipped["zombie"]
    times, _ = frame_schedule(zombie.duration_s, 15)
    poses = retarget(CHARACTER, zombie, times)
    spine = poses[:, J["torso"], 0]
    assert np.all(poses[:, J["left_hand"], 0] > spine + 60)
    assert np.all(poses[:, J["right_hand"], 0] > spine + 20)
    for side in ("left", "right"):
        for upper, lower in (("shoulder", "elbow"), ("elbow", "hand")):
            bone = poses[:, J[f"{side}_{lower}"]] - poses[:, J[f"{side}_{upper}"]]
            tilt = np.degrees(np.arctan2(-bone[:, 1], bone[:, 0]))
            assert np.all(np.abs(tilt) < 25)  # level-ish, not hanging
            assert np.ptp(tilt) > 4  # and bobbing
    lean = poses[:, J["neck"], 0] - poses[:, J["hip"], 0]
    assert np.all(lean > 0) and np.ptp(lean) > 3  # leaning the same way, lurching
    # Steps: the feet part and close again.
    stride = poses[:, J["left_foot"], 0] - poses[:, J["right_foot"], 0]
    assert np.ptp(stride) > 0.3 * 160


def test_best_fit_of_a_limb_that_only_hangs_is_the_front_view():
    motion = load_motion(EXTERNAL)  # legs straight down in every frame
    fitted = replace(motion, spec=replace(motion.spec, projection="best_fit"))
    times = _all_frames(motion)
    expected, poses = retarget(CHARACTER, motion, times), retarget(CHARACTER, fitted, times)
    assert np.all(np.isfinite(poses))
    legs = [J[j] for j in ("left_knee", "left_foot", "right_knee", "right_foot")]
    np.testing.assert_allclose(poses[:, legs], expected[:, legs], atol=1e-6)


def test_a_cut_clip_is_seen_as_what_is_shown():
    # Ten seconds of a walk, then something else entirely (the performer lies down): the
    # rendered first seconds are retargeted from themselves alone, and fast.
    walk = load_motion(Path(__file__).parent / "data" / "conventions" / "mixamo_walk.bvh")
    loop = walk.bvh.motion[:-1]
    standing = np.concatenate([loop] * 5)
    lying = standing.copy()
    lying[:, 3:6] = [0.0, 90.0, 0.0]  # the root's ZXY: turned onto its side
    both = replace(walk, bvh=replace(walk.bvh, motion=np.concatenate([standing, lying])))
    alone = replace(walk, bvh=replace(walk.bvh, motion=standing))
    times = np.arange(150) / 15
    assert times[-1] < standing.shape[0] * walk.bvh.frame_time
    np.testing.assert_allclose(
        retarget(CHARACTER, both, times), retarget(CHARACTER, alone, times), atol=1e-9
    )
