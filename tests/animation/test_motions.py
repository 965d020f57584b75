"""The motion table, the shipped motions, joint-name matching and the authoring script."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from animation.bvh import forward_kinematics, parse_bvh_bytes
from animation.motions import (
    MOTION_TABLE,
    MotionError,
    default_motions,
    joint_role,
    load_motion,
    load_motion_folder,
    load_motion_table,
    motion_from_bvh,
    motion_from_spec,
    motion_summary,
)

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
EXTERNAL = DATA / "bvh_external_zup_30fps.bvh"
SHIPPED = ("dab", "jumping", "wave_hello", "zombie")


def test_table_lists_the_shipped_motions_in_order():
    table = load_motion_table()
    assert MOTION_TABLE == REPO / "bvh" / "motions.yaml"
    assert list(table)[:4] == list(SHIPPED)
    # Today's four stay the defaults: the app's answer does not grow with the library.
    assert default_motions(table) == default_motions() == list(SHIPPED)
    assert len(table) >= 24 and {s.group for s in table.values()} == {
        "dance",
        "everyday",
        "sport",
        "silly",
    }
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
    assert written == sorted([f"{n}.bvh" for n in load_motion_table()] + ["motions.yaml"])
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
    table.write_text("motions:\n  spin:\n    file: spin.bvh\n    default: yes please\n")
    with pytest.raises(MotionError, match="default must be true or false"):
        load_motion_table(table)
    table.write_text(
        "motions:\n  spin:\n    file: spin.bvh\n    group: silly\n    default: false\n"
    )
    spin = load_motion_table(table)["spin"]
    assert spin.group == "silly" and spin.default is False
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
    with pytest.raises(MotionError, match="cannot find the joints for .*left_shoulder") as err:
        load_motion(path)
    message = str(err.value)
    assert "Found: " in message and "Base, Boom" in message  # what the file has
    assert "--map ROLE=JOINT" in message and "map: {ROLE: JOINT}" in message


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
    assert motion.spec.projection_of("right_arm") == "auto"  # the motion decides


CONVENTIONS = DATA / "conventions"


def test_a_motions_folder_with_sidecar_overrides(tmp_path):
    (tmp_path / "walk.bvh").write_bytes((CONVENTIONS / "mixamo_walk.bvh").read_bytes())
    (tmp_path / "jack.bvh").write_bytes((CONVENTIONS / "biped_jumping_jack.bvh").read_bytes())
    (tmp_path / "jack.yaml").write_text(
        'description: "two jumping jacks"\nstart_s: 1.4\nup: z\n'
        "map: {left_hand: Bip01 L Hand}\nlimb_projection: {left_leg: front}\n"
    )
    (tmp_path / "notes.txt").write_text("not a motion")
    specs = load_motion_folder(tmp_path)
    assert list(specs) == ["jack", "walk"]
    assert specs["walk"].file == (tmp_path / "walk.bvh").resolve()
    jack = specs["jack"]
    assert jack.description == "two jumping jacks" and jack.start_s == 1.4 and jack.up == "z"
    assert jack.joint_map == {"left_hand": "Bip01 L Hand"}
    # Merged with the shipped table, a folder motion loads by name like a shipped one.
    table = {**load_motion_table(), **specs}
    motion = load_motion("jack", table=table)
    assert motion.duration_s == pytest.approx(1.4, abs=0.04)  # the second jack only
    assert motion.up == "z" and motion.spec.projection_of("left_leg") == "front"
    assert load_motion("dab", table=table).name == "dab"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"bad.bvh": "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 zero 0\n}\nMOTION\nFrames: 1\n"
                     "Frame Time: 0.1\n\n"}, r"bad\.bvh:4: OFFSET is not a number"),
        ({"crane.bvh": "HIERARCHY\nROOT Base\n{\nOFFSET 0 0 0\nCHANNELS 1 Xposition\n}\n"
                       "MOTION\nFrames: 1\nFrame Time: 0.1\n0\n"}, r"crane\.bvh: cannot find the joints"),
        ({"walk.bvh": None, "walk.yaml": "map: {left_wing: Hips}\n"}, "unknown roles in map"),
        ({"walk.bvh": None, "walk.yaml": "speed: 2\n"}, r"unknown keys \['speed'\]"),
        ({"walk.bvh": None, "walk.yaml": "- a list\n"}, "needs a mapping"),
        ({"walk.bvh": None, "walk.yaml": "start_s: 99\n"}, "the segment starts at 99 s"),
        ({"my walk.bvh": None}, "a motion name is letters, digits"),
    ],
)  # fmt: skip
def test_a_bad_file_in_a_motions_folder_fails_at_load_naming_it(tmp_path, files, message):
    for name, text in files.items():
        if text is None:
            (tmp_path / name).write_bytes((CONVENTIONS / "mixamo_walk.bvh").read_bytes())
        else:
            (tmp_path / name).write_text(text)
    with pytest.raises(MotionError, match=message):
        load_motion_folder(tmp_path)
    with pytest.raises(MotionError, match="not a directory"):
        load_motion_folder(tmp_path / "missing")


def test_a_table_entry_maps_roles_and_picks_a_segment_in_seconds(tmp_path):
    text = (CONVENTIONS / "mixamo_walk.bvh").read_text()
    for name, odd in (("LeftArm", "Upper"), ("LeftForeArm", "Lower"), ("LeftHand\n", "Paw\n")):
        text = text.replace(f"mixamorig:{name}", f"mixamorig:{odd}")  # no name says arm
    (tmp_path / "odd.bvh").write_text(text)
    table = tmp_path / "motions.yaml"
    table.write_text("motions:\n  odd:\n    file: odd.bvh\n")
    with pytest.raises(MotionError, match="cannot find the joints for left_shoulder"):
        load_motion("odd", table=load_motion_table(table))
    table.write_text(
        "motions:\n  odd:\n    file: odd.bvh\n    map: {left_hand: 'mixamorig:Paw'}\n"
        "    start_s: 0.5\n    end_s: 1.5\n"
    )
    motion = load_motion("odd", table=load_motion_table(table))
    assert motion.bvh.names[motion.roles["left_hand"]] == "mixamorig:Paw"
    assert motion.duration_s == pytest.approx(1.0, abs=1e-3)  # 30 frame times of 0.033333 s
    full = load_motion(CONVENTIONS / "mixamo_walk.bvh")
    np.testing.assert_array_equal(motion.bvh.motion[0], full.bvh.motion[15])  # 0.5 s at 30 fps
    # The CLI's --start/--end does the same on any file.
    same = load_motion(CONVENTIONS / "mixamo_walk.bvh", start_s=0.5, end_s=1.5)
    np.testing.assert_array_equal(same.bvh.motion, motion.bvh.motion)
    with pytest.raises(MotionError, match="bad segment"):
        load_motion(CONVENTIONS / "mixamo_walk.bvh", start_s=1.0, end_s=0.5)


def test_an_upload_becomes_a_motion_with_no_configuration():
    data = (CONVENTIONS / "cmu_walk.bvh").read_bytes()
    motion = motion_from_bvh(parse_bvh_bytes(data, source="my walk.bvh"), name="my_walk")
    assert motion.name == "my_walk" and motion.up == "y"
    assert motion.bvh.names[motion.roles["left_shoulder"]] == "LeftShoulder"
    assert motion_from_bvh(parse_bvh_bytes(data), start_s=1.0).duration_s == pytest.approx(
        motion.duration_s - 1.0, abs=0.01
    )


def test_motion_summary_says_what_a_long_clip_loses():
    walk = load_motion(CONVENTIONS / "cmu_walk.bvh")  # 2.2 s
    assert motion_summary(walk, 15, 150) == {
        "name": "cmu_walk", "duration_s": 2.2, "fps": 15, "frames": 33, "rendered_s": 2.2,
        "cut_s": 0.0, "description": "", "group": "", "default": True,
    }  # fmt: skip
    short = motion_summary(walk, 30, 30)
    assert short["frames"] == 30 and short["rendered_s"] == 1.0 and short["cut_s"] == 1.2
