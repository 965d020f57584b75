"""BVH parsing (channel orders, End Site, malformed files) and forward kinematics."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from animation.bvh import (
    BVHError,
    BVHLimitError,
    BVHLimits,
    format_bvh,
    forward_kinematics,
    load_bvh,
    parse_bvh,
    parse_bvh_bytes,
    world_transforms,
)

BVH_DIR = Path(__file__).resolve().parents[2] / "bvh"

# A root with XYZ rotations, a joint with ZXY, one with a position channel, End Sites.
MIXED = """\
HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation
  JOINT Chest
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    JOINT Head {
      OFFSET 0 5 0
      CHANNELS 4 Yposition yrotation xrotation zrotation
      End Site
      {
        OFFSET 0 3 0
      }
    }
  }
  JOINT LeftLeg
  {
    OFFSET 2 -1 0
    CHANNELS 1 Xrotation
    End Site { OFFSET 0 -4 0 }
  }
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 0 0 0 0 0  0 0 0  5 0 0 0  0
1 2 3 0 90 0  0 0 0  5 0 0 0  90
0 0 0 0 0 0  90 0 0  7 90 0 0  0
"""


def test_parses_channel_orders_and_end_sites():
    bvh = parse_bvh(MIXED, source="mixed.bvh")
    assert bvh.names == ("Hips", "Chest", "Head", "Head_End", "LeftLeg", "LeftLeg_End")
    assert bvh.parents.tolist() == [-1, 0, 1, 2, 0, 4]
    assert bvh.channels[0] == (
        "Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"
    )  # fmt: skip
    assert bvh.channels[1] == ("Zrotation", "Xrotation", "Yrotation")
    assert bvh.channels[2] == ("Yposition", "Yrotation", "Xrotation", "Zrotation")
    assert bvh.channels[3] == () and bvh.is_end_site(3)
    assert bvh.channels[4] == ("Xrotation",)
    np.testing.assert_allclose(bvh.offsets[5], [0, -4, 0])
    assert bvh.motion.shape == (3, 14)
    assert bvh.frame_time == pytest.approx(1 / 30, rel=1e-5)
    assert bvh.n_frames == 3


def test_forward_kinematics_matches_hand_computed_pose():
    pos = forward_kinematics(parse_bvh(MIXED))
    # Frame 0: rest pose with the Head's Yposition channel 5 (= its offset).
    np.testing.assert_allclose(pos[0, :4], [[0, 0, 0], [0, 10, 0], [0, 15, 0], [0, 18, 0]])
    np.testing.assert_allclose(pos[0, 5], [2, -5, 0])
    # Frame 1: root at (1, 2, 3) turned 90 degrees about Y; the leg turned 90 about X.
    # Ry(90) leaves the vertical chain alone and takes the leg offset (2, -1, 0) to
    # (0, -1, -2); Rx(90) takes the foot offset (0, -4, 0) to (0, 0, -4), Ry(90) to (-4, 0, 0).
    np.testing.assert_allclose(pos[1, 2], [1, 17, 3], atol=1e-9)
    np.testing.assert_allclose(pos[1, 4], [1, 1, 1], atol=1e-9)
    np.testing.assert_allclose(pos[1, 5], [-3, 1, 1], atol=1e-9)
    # Frame 2: chest pitched 90 about Z (its children swing to -X); the head, moved up to
    # 7 by its position channel, turned 90 about Y, which leaves its vertical tip alone.
    np.testing.assert_allclose(pos[2, 2], [-7, 10, 0], atol=1e-9)
    np.testing.assert_allclose(pos[2, 3], [-10, 10, 0], atol=1e-9)


@pytest.mark.parametrize("order", ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])
def test_forward_kinematics_agrees_with_scipy_for_every_rotation_order(order):
    rng = np.random.default_rng(len(order) + ord(order[0]) * 7 + ord(order[1]))
    chans = " ".join(f"{a}rotation" for a in order)
    text = f"""HIERARCHY
ROOT A
{{
OFFSET 0 0 0
CHANNELS 6 Xposition Yposition Zposition {chans}
JOINT B
{{
OFFSET 1 2 3
CHANNELS 3 {chans}
End Site
{{
OFFSET -2 1 0.5
}}
}}
}}
MOTION
Frames: 5
Frame Time: 0.01
"""
    motion = rng.uniform(-180, 180, size=(5, 9))
    text += "\n".join(" ".join(f"{v:.6f}" for v in row) for row in motion) + "\n"
    pos = forward_kinematics(parse_bvh(text))
    for f in range(5):
        ra = Rotation.from_euler(order, motion[f, 3:6], degrees=True)  # upper case: intrinsic
        rb = Rotation.from_euler(order, motion[f, 6:9], degrees=True)
        b = motion[f, :3] + ra.apply([1, 2, 3])
        tip = b + (ra * rb).apply([-2, 1, 0.5])
        np.testing.assert_allclose(pos[f, 1], b, atol=1e-5)
        np.testing.assert_allclose(pos[f, 2], tip, atol=1e-5)


def test_format_round_trips():
    bvh = parse_bvh(MIXED)
    again = parse_bvh(format_bvh(bvh))
    assert again.names == bvh.names and again.channels == bvh.channels
    np.testing.assert_allclose(again.motion, bvh.motion)
    np.testing.assert_allclose(forward_kinematics(again), forward_kinematics(bvh), atol=1e-6)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, s in enumerate(text.splitlines(), 1) if needle in s)


@pytest.mark.parametrize(
    ("mutate", "line_of", "what"),
    [
        # a frame row with one value too few
        (lambda t: t.replace("1 2 3 0 90 0", "1 2 3 0 90"), "1 2 3 0 90", "values, expected 14"),
        # a frame row with a word in it
        (lambda t: t.replace("1 2 3 0 90 0", "1 2 x 0 90 0"), "1 2 x 0 90", "not a number"),
        # a bad OFFSET
        (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 ten 0"), "OFFSET 0 ten 0", "not a number"),
        # an unknown channel name
        (lambda t: t.replace("Zrotation Xrotation Yrotation", "Zrotation Wrotation Yrotation"),
         "Wrotation", "unknown channel"),
        # a wrong channel count
        (lambda t: t.replace("CHANNELS 1 Xrotation", "CHANNELS 2 Xrotation"),
         "End Site { OFFSET 0 -4 0 }", "unknown channel"),
        # a missing closing brace: the hierarchy runs into MOTION
        (lambda t: t.replace("    }\n  }\n  JOINT LeftLeg", "    }\n  JOINT LeftLeg"),
         "MOTION", "unbalanced"),
        # an extra closing brace
        (lambda t: t.replace("MOTION", "}\nMOTION"), "}\nMOTION", "after the root"),
        # rows missing: a truncated file
        (lambda t: t.rsplit("\n", 2)[0] + "\n", "1 2 3 0 90 0", "truncated"),
        # header lies about the frame count
        (lambda t: t.replace("Frames: 3", "Frames: 2"), "0 0 0 0 0 0  90", "more frame rows"),
        (lambda t: t.replace("Frame Time: 0.0333333", "Frame Time: 0"), "Frame Time", "positive"),
        (lambda t: t.replace("Frame Time:", "Frame Tme:"), "Frame Tme", "Frame Time"),
    ],
)  # fmt: skip
def test_malformed_files_name_the_line(mutate, line_of, what):
    text = mutate(MIXED)
    assert text != MIXED
    expected = _line_of(text, line_of.split("\n")[-1]) if "\n" not in line_of else None
    with pytest.raises(BVHError) as err:
        parse_bvh(text, source="bad.bvh")
    message = str(err.value)
    match = re.match(r"bad\.bvh:(\d+): ", message)
    assert match, message
    assert what.lower() in message.lower(), message
    if expected is not None:
        assert int(match.group(1)) == expected, message


def test_missing_motion_section_and_garbage():
    with pytest.raises(BVHError, match=r"^x\.bvh:\d+: no MOTION"):
        parse_bvh(MIXED.split("MOTION")[0], source="x.bvh")
    with pytest.raises(BVHError, match=r"^x\.bvh:1: expected 'HIERARCHY'"):
        parse_bvh("\x89PNG\r\n\x1a\n", source="x.bvh")
    with pytest.raises(BVHError, match=r"^x\.bvh:1: "):
        parse_bvh("", source="x.bvh")


def test_load_bvh_names_the_file(tmp_path):
    path = tmp_path / "walk.bvh"
    path.write_text(MIXED.replace("1 2 3 0 90 0", "1 2 3 0 nan 0"))
    with pytest.raises(BVHError, match=rf"^{re.escape(str(path))}:\d+: "):
        load_bvh(path)
    with pytest.raises(BVHError, match="cannot read"):
        load_bvh(tmp_path / "missing.bvh")
    path.write_text(MIXED)
    assert load_bvh(path).n_frames == 3


def test_bytes_within_limits_parse_like_text():
    bvh = parse_bvh_bytes(MIXED.encode(), source="up.bvh")
    assert bvh.names == parse_bvh(MIXED).names and bvh.source == "up.bvh"
    np.testing.assert_array_equal(bvh.motion, parse_bvh(MIXED).motion)
    # A byte-order mark and a Latin-1 joint name (not UTF-8) are no reason to refuse a file.
    assert parse_bvh_bytes(b"\xef\xbb\xbf" + MIXED.encode()).n_frames == 3
    latin = MIXED.replace("JOINT Chest", "JOINT Br\xfcst").encode("latin-1")
    assert "Br\xfcst" in parse_bvh_bytes(latin).names


def test_limits_refuse_before_reading_everything():
    data = MIXED.encode()
    with pytest.raises(BVHLimitError) as err:
        parse_bvh_bytes(data, limits=BVHLimits(max_bytes=len(data) - 1))
    assert err.value.limit == "bytes" and err.value.line is None
    assert str(len(data)) in str(err.value)
    # Joints: counted while the hierarchy is read (End Sites too), the line is the joint's.
    with pytest.raises(BVHLimitError, match=r"^x\.bvh:\d+: more than 3 joints") as err:
        parse_bvh_bytes(data, source="x.bvh", limits=BVHLimits(max_joints=3))
    assert err.value.limit == "joints" and err.value.line == _line_of(MIXED, "End Site") + 1
    # Frames: the header's count is checked before any row is read.
    huge = MIXED.replace("Frames: 3", "Frames: 999999999999")
    with pytest.raises(BVHLimitError, match="999999999999 frames") as err:
        parse_bvh_bytes(huge.encode(), limits=BVHLimits(max_frames=1000))
    assert err.value.limit == "frames" and err.value.line == _line_of(huge, "Frames:")
    assert isinstance(err.value, BVHError)  # a caller catching BVHError catches these too


def test_errors_carry_their_line_number():
    bad = MIXED.replace("1 2 3 0 90 0", "1 2 3 0 90")
    with pytest.raises(BVHError) as err:
        parse_bvh_bytes(bad.encode(), source="up.bvh")
    assert err.value.line == _line_of(bad, "1 2 3 0 90")
    assert str(err.value).startswith(f"up.bvh:{err.value.line}: ")


def test_deep_nesting_is_refused_as_too_many_joints_not_a_crash():
    depth = 5000
    text = "HIERARCHY\nROOT A\n{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\n"
    text += "JOINT B\n{\nOFFSET 0 1 0\nCHANNELS 1 Xrotation\n" * depth + "}\n" * depth
    text += "}\nMOTION\nFrames: 1\nFrame Time: 0.1\n" + " ".join(["0"] * (3 + depth)) + "\n"
    with pytest.raises(BVHLimitError, match="joints"):
        parse_bvh(text)


def test_world_transforms_rotate_children_as_their_parents():
    rot, pos = world_transforms(parse_bvh(MIXED))
    np.testing.assert_allclose(pos, forward_kinematics(parse_bvh(MIXED)))
    # Frame 1: the root turned 90 degrees about Y, the chest inherits that turn.
    np.testing.assert_allclose(rot[1, 1] @ [1, 0, 0], [0, 0, -1], atol=1e-12)
    np.testing.assert_allclose(
        np.einsum("...ij,...kj->...ik", rot, rot), np.broadcast_to(np.eye(3), rot.shape), atol=1e-12
    )


def test_a_trimmed_motion_reuses_the_positions_already_computed():
    """A render trims the motion to the frames it shows; the table's motions have their
    forward kinematics computed once (render workers' warm-up), and a trim slices them."""
    bvh = load_bvh(BVH_DIR / "dab.bvh")
    fresh = bvh.trimmed(3, 20)
    assert "positions" not in fresh.__dict__  # nothing computed that nobody asked for
    full = bvh.positions
    kept = bvh.trimmed(3, 20)
    assert np.shares_memory(kept.positions, full)
    np.testing.assert_allclose(kept.positions, forward_kinematics(fresh), atol=1e-9)
    assert not kept.positions.flags.writeable
