"""The motion table, the shipped motions, joint-name matching and the authoring script."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from animation.bvh import forward_kinematics
from animation.motions import (
    MOTION_TABLE,
    MotionError,
    default_motions,
    joint_role,
    load_motion,
    load_motion_table,
    motion_from_spec,
)

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
EXTERNAL = DATA / "bvh_external_zup_30fps.bvh"
SHIPPED = ("dab", "jumping", "wave_hello", "zombie")


def test_table_lists_the_shipped_motions_in_order():
    table = load_motion_table()
    assert MOTION_TABLE == REPO / "bvh" / "motions.yaml"
    assert list(table)[:4] == list(SHIPPED)
    assert default_motions(table)[:4] == list(SHIPPED)
    assert default_motions() == list(table)
    for spec in table.values():
        assert spec.file.is_file(), spec.file


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_motion_loads_and_loops(name):
    motion = load_motion(name)
    assert motion.name == name
    assert motion.up == "y"
    assert 60 <= motion.bvh.fps <= 120
    assert 2.0 <= motion.duration_s <= 6.0
    pos = forward_kinematics(motion.bvh)
    # A loop: the last frame is the first pose again, and the motion really moves.
    np.testing.assert_allclose(pos[-1], pos[0], atol=1e-2)
    assert np.abs(pos - pos[0]).max() > 20  # cm
    # The rig stands on the floor (y = 0) and never goes through it.
    feet = [i for i, n in enumerate(motion.bvh.names) if "Foot" in n or "Toe" in n]
    lowest = pos[:, feet, 1].min(axis=1)
    assert lowest.min() == pytest.approx(0, abs=0.01)
    assert lowest[0] == pytest.approx(0, abs=0.01)


def test_jumping_leaves_the_floor_and_the_others_do_not():
    def air_time(name):
        motion = load_motion(name)
        pos = forward_kinematics(motion.bvh)
        feet = [i for i, n in enumerate(motion.bvh.names) if "Foot" in n or "Toe" in n]
        return (pos[:, feet, 1].min(axis=1) > 5).mean()

    assert air_time("jumping") > 0.1
    assert air_time("wave_hello") == 0 and air_time("dab") == 0


def test_authoring_script_reproduces_the_files_byte_for_byte(tmp_path):
    spec = importlib.util.spec_from_file_location("bvh_author", REPO / "bvh" / "author.py")
    author = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = author  # dataclasses look their module up
    spec.loader.exec_module(author)
    author.main(tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted([f"{n}.bvh" for n in SHIPPED] + ["motions.yaml"])
    for name in written:
        assert (tmp_path / name).read_bytes() == (REPO / "bvh" / name).read_bytes(), name


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("Hips", "hips"), ("pelvis", "hips"), ("mixamorig:Hips", "hips"),
        ("LeftArm", "left_arm"), ("mixamorig:LeftArm", "left_arm"), ("lShldr", "left_arm"),
        ("l_upperarm", "left_arm"), ("upperarm_l", "left_arm"), ("Arm.R", "right_arm"),
        ("RightForeArm", "right_forearm"), ("RightElbow", "right_forearm"),
        ("LeftHand", "left_hand"), ("hand_r", "right_hand"), ("LeftWrist", "left_hand"),
        ("RightUpLeg", "right_upleg"), ("RightHip", "right_upleg"), ("lThigh", "left_upleg"),
        ("LeftLeg", "left_leg"), ("LeftKnee", "left_leg"), ("rShin", "right_leg"),
        ("RightFoot", "right_foot"), ("LeftAnkle", "left_foot"),
        ("Neck", "neck"), ("Head", "head"), ("Spine", "spine"), ("Spine3", "spine"),
        ("Chest", "spine"), ("LeftShoulder", "left_shoulder"), ("lCollar", "left_shoulder"),
        ("HeadEnd", None), ("LeftHandEnd", None), ("LeftHandThumb1", None), ("LeftToe", None),
        ("LowerBack", "spine"), ("LHipJoint", None), ("Bip01 L Thigh", "left_upleg"),
        ("Bip01 Pelvis", "hips"), ("Bip01 R Forearm", "right_forearm"), ("calf_l", "left_leg"),
        ("spine_01", "spine"), ("neck_01", "neck"), ("clavicle_r", "right_shoulder"),
    ],
)  # fmt: skip
def test_joint_names_from_common_sources(name, role):
    assert joint_role(name) == role


def test_external_bvh_is_configured_from_its_names():
    motion = load_motion(EXTERNAL)
    assert motion.up == "z"
    assert motion.bvh.fps == pytest.approx(30, rel=1e-4)
    assert motion.spec.bones["torso"] == ("Hips", "Spine3")  # the chest the arms hang from
    assert motion.spec.bones["neck"] == ("Neck", "HeadEnd")
    assert motion.spec.bones["left_elbow"] == ("LeftArm", "LeftForeArm")
    assert motion.spec.bones["right_foot"] == ("RightLeg", "RightFoot")
    assert motion.duration_s == pytest.approx(30 * 0.0333333)


def test_up_axis_is_detected_or_given(tmp_path):
    text = EXTERNAL.read_text()
    assert load_motion(EXTERNAL, up="y").up == "y"
    assert load_motion("wave_hello").up == "y"
    # Upside-down file: the head hangs below the hips in the rest pose.
    flipped = text.replace("OFFSET 0.00 0.00 10.00", "OFFSET 0.00 0.00 -10.00")
    path = tmp_path / "flipped.bvh"
    path.write_text(flipped)
    assert load_motion(path).up == "-z"
    with pytest.raises(MotionError, match="up must be"):
        load_motion(EXTERNAL, up="w")


def test_frame_range_trims_the_clip():
    spec = load_motion_table()["dab"]
    trimmed = motion_from_spec(replace(spec, start_frame=10, end_frame=90))
    full = load_motion("dab")
    assert trimmed.bvh.n_frames == 80
    np.testing.assert_array_equal(trimmed.bvh.motion, full.bvh.motion[10:90])


def test_unknown_motion_and_bad_tables(tmp_path):
    with pytest.raises(MotionError, match="unknown motion 'moonwalk'; known: dab"):
        load_motion("moonwalk")
    # A name that is a readable file but not a .bvh is still just an unknown name.
    with pytest.raises(MotionError, match="unknown motion"):
        load_motion(str(MOTION_TABLE))
    table = tmp_path / "motions.yaml"
    table.write_text("motions:\n  spin:\n    file: spin.bvh\n    projection: sideways\n")
    with pytest.raises(MotionError, match="projection"):
        load_motion_table(table)
    table.write_text("motions:\n  spin:\n    file: spin.bvh\n    bones: {elbow: [A, B]}\n")
    with pytest.raises(MotionError, match="unknown character joints"):
        load_motion_table(table)
    table.write_text("motions: [1, 2]\n")
    with pytest.raises(MotionError, match="non-empty 'motions' mapping"):
        load_motion_table(table)
    with pytest.raises(MotionError, match="cannot read"):
        load_motion_table(tmp_path / "none.yaml")


def test_bvh_without_humanoid_names_is_refused(tmp_path):
    path = tmp_path / "crane.bvh"
    path.write_text(
        "HIERARCHY\nROOT Base\n{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\n"
        "JOINT Boom\n{\nOFFSET 0 5 0\nCHANNELS 1 Zrotation\nEnd Site\n{\nOFFSET 3 0 0\n}\n}\n}\n"
        "MOTION\nFrames: 1\nFrame Time: 0.1\n0 0 0 0\n"
    )
    with pytest.raises(MotionError, match="cannot find joints for .*left_arm"):
        load_motion(path)


def test_table_entry_with_its_own_bone_map_and_frame_range(tmp_path):
    (tmp_path / "ext.bvh").write_text(EXTERNAL.read_text())
    table = tmp_path / "motions.yaml"
    table.write_text(
        "motions:\n  reach:\n    file: ext.bvh\n    start_frame: 5\n    up: z\n"
        "    limb_projection: {left_arm: best_fit}\n"
        "    bones: {neck: [Spine3, Head]}\n"
    )
    specs = load_motion_table(table)
    motion = load_motion("reach", table=specs)
    assert motion.bvh.n_frames == 26
    assert motion.spec.bones["neck"] == ("Spine3", "Head")  # given
    assert motion.spec.bones["left_hand"] == ("LeftForeArm", "LeftHand")  # worked out
    assert motion.spec.projection_of("left_arm") == "best_fit"
    assert motion.spec.projection_of("right_arm") == "front"
