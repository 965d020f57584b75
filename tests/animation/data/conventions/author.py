"""Author the test BVH files: four motions in the conventions people's files come in.

Run `python tests/animation/data/conventions/author.py` from the repository root; it
rewrites every `*.bvh` in this folder (no randomness, fixed formatting). The files are the
project's own work: the motions are key poses (in `bvh/author.py`'s form: limb directions
and joint turns, splined), the skeletons are written the way each source lays out its
hierarchy, names and channels, as far as we know those sources:

| convention | names | layout |
|---|---|---|
| cmu | Hips, LHipJoint/LeftHip/LeftKnee/LeftAnkle/LeftToe, lowerback, Chest, Chest2, LeftCollar/LeftShoulder/LeftElbow/LeftWrist, lhand, LFingers, LThumb, Neck, Neck1, Head | LeftShoulder is the upper arm; root and joints ZYX; End Sites |
| mixamo | mixamorig:Hips, Spine, Spine1, Spine2, LeftShoulder/LeftArm/LeftForeArm/LeftHand, LeftHandThumb1-4, LeftHandIndex1-4, LeftUpLeg/LeftLeg/LeftFoot/LeftToeBase/LeftToe_End, HeadTop_End | LeftShoulder is the clavicle, LeftLeg the shin; ZXY; End Sites |
| rokoko | Hips, Spine..Spine3, LeftShoulder/LeftArm/LeftForeArm/LeftHand, LeftFinger1Proximal.., LeftUpLeg/LeftLeg/LeftFoot/LeftToe | position channels on every joint, YXZ; the rest pose is Z-up and the root carries a constant rotation that makes the motion Y-up; no End Sites |
| biped | Bip01, Bip01 Pelvis, Bip01 Spine (the thighs hang from it), Bip01 Spine1/2, Bip01 Neck (the clavicles hang from it), Bip01 L Clavicle/UpperArm/Forearm/Hand/Finger0, Bip01 L Thigh/Calf/Foot/Toe0, the Nubs | Z-up; ZXY; End Sites after the Nubs |
| own | bvh/author.py's rig: Hips, Spine, Spine1, Neck, Head, LeftShoulder/LeftArm/.. | per-joint Euler order; no End Sites |

How a convention's file is made from a motion: the motion is first rendered on
`bvh/author.py`'s rig (cm, Y up, facing +Z, T-pose rest) at the file's frame rate; every
joint of the convention sits at a point of that rig's rest pose and turns with one of its
joints (`Joint.at`, `Joint.turns_with`), which gives its offsets and its rotations; then
the whole thing is turned to the file's up axis and facing and scaled to its unit.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(REPO))

from animation.bvh import BVH, format_bvh, parse_bvh, world_transforms  # noqa: E402


def _shipped_author():
    spec = importlib.util.spec_from_file_location("bvh_author", REPO / "bvh" / "author.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bvh_author", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return sys.modules["bvh_author"]


shipped = _shipped_author()
Pose, v, symmetric, mirror, mirror_pose = (
    shipped.Pose, shipped.v, shipped.symmetric, shipped.mirror, shipped.mirror_pose
)  # fmt: skip

# ---- the motions (bvh/author.py's rig: cm, Y up, facing +Z, left on +X) -------------------


def jumping_jack() -> tuple[float, list[tuple[float, Pose]]]:
    """Two jumping jacks: feet together and arms down, jump to feet apart and arms over
    the head, jump back."""
    together = Pose(
        arms=symmetric((0.12, -1, 0.02), (0.1, -1, 0.06)),
        legs=symmetric((0.02, -1, 0), (0.02, -1, 0)),
    )
    opening = Pose(
        hips=(0.0, 8.0, 0.0),
        arms=symmetric((1, -0.45, 0.05), (1, -0.2, 0.05)),
        legs=symmetric((0.25, -1, 0.02), (0.25, -1, 0.0)),
    )
    apart = Pose(
        arms=symmetric((0.45, 1, 0.05), (0.22, 1, 0.05)),
        legs=symmetric((0.4, -1, 0.02), (0.38, -1, 0.0)),
    )
    landed = Pose(  # knees give a little as the feet land apart
        turn={"Spine": (4, 0, 0)},
        arms=symmetric((0.5, 1, 0.05), (0.3, 1, 0.08)),
        legs=symmetric((0.4, -1, 0.15), (0.38, -1, -0.12)),
    )
    closing = Pose(
        hips=(0.0, 8.0, 0.0),
        arms=symmetric((1, 0.05, 0.05), (1, 0.2, 0.05)),
        legs=symmetric((0.22, -1, 0.02), (0.22, -1, 0.0)),
    )
    rep = [(0.0, together), (0.2, opening), (0.4, apart), (0.6, landed), (0.85, closing),
           (1.05, together)]  # fmt: skip
    return 2.8, rep + [(1.4 + t, p) for t, p in rep]


def walk() -> tuple[float, list[tuple[float, Pose]]]:
    """Two strides of a brisk walk: heel strike, mid-stance, the other heel, arms swinging
    against the legs and the shoulders against the hips (the root travels forward)."""
    strike = Pose(
        turn={"Hips": (0, -6, 0), "Spine1": (0, 10, 0)},
        arms={"left": (v(0.12, -1, -0.32), v(0.1, -1, -0.12)),
              "right": (mirror(v(0.12, -1, 0.32)), mirror(v(0.08, -1, 0.6)))},
        legs={"left": (v(0, -1, 0.45), v(0, -1, 0.22), v(0, -0.35, 1)),
              "right": (v(0, -1, -0.32), v(0, -1, -0.8), v(0, -0.9, 0.55))},
    )  # fmt: skip
    passing = Pose(
        turn={"Hips": (0, -1, 0), "Spine1": (0, 2, 0)},
        arms={"left": (v(0.12, -1, 0.0), v(0.1, -1, 0.15)),
              "right": (mirror(v(0.12, -1, 0.05)), mirror(v(0.1, -1, 0.25)))},
        legs={"left": (v(0, -1, 0.04), v(0, -1, 0.02)),
              "right": (v(0, -1, 0.3), v(0, -1, -0.5), v(0, -0.4, 1))},
    )  # fmt: skip
    stride = [(0.0, strike), (0.275, passing), (0.55, mirror_pose(strike)),
              (0.825, mirror_pose(passing))]  # fmt: skip
    return 2.2, stride + [(1.1 + t, p) for t, p in stride]


def dance() -> tuple[float, list[tuple[float, Pose]]]:
    """Step-touch to each side with the arm of that side thrown over the head, the knees
    bouncing between, the hips swinging round (a party dance)."""
    step_right = Pose(
        hips=(-10.0, 0.0, 0.0),
        turn={"Spine": (0, 0, 6), "Spine1": (0, -8, 3), "Neck": (0, 0, -4)},
        arms={"right": (mirror(v(0.35, 1, 0.12)), mirror(v(0.2, 1, 0.05))),
              "left": (v(0.55, -1, 0.2), v(0.7, -0.7, 0.5))},
        legs={"right": (mirror(v(0.18, -1, 0)), mirror(v(0.16, -1, 0))),
              "left": (v(-0.08, -1, 0.25), v(0.02, -1, -0.3), v(0, -0.8, 1))},
    )  # fmt: skip
    bounce = Pose(
        turn={"Hips": (0, 15, 0), "Spine": (8, -6, 0)},
        arms=symmetric((0.45, -0.35, 0.85), (-0.25, 0.6, 1)),
        legs=symmetric((0.08, -1, 0.3), (0.06, -1, -0.3)),
    )
    spread = Pose(
        turn={"Hips": (0, -15, 0), "Spine": (6, 6, 0)},
        arms=symmetric((1, 0.12, 0.05), (1, 0.35, 0.1)),
        legs=symmetric((0.1, -1, 0.3), (0.08, -1, -0.3)),
    )
    return 4.0, [(0.0, step_right), (1.0, bounce), (2.0, mirror_pose(step_right)), (3.0, spread)]


MOTIONS = {
    "jumping_jack": jumping_jack,
    "walk": walk,
    "zombie": shipped.zombie,
    "dance": dance,
}
TRAVEL_CM_S = {"walk": 120.0, "zombie": 20.0}  # forward speed of the root

# ---- the conventions ----------------------------------------------------------------------


@dataclass(frozen=True)
class Joint:
    """One joint of a convention's skeleton.

    at: a joint of bvh/author.py's rig whose rest position this joint has, plus an offset
    in cm there; turns_with: the rig joint whose rotation it takes (the rig joint whose
    bone this joint's children hang from). end: an End Site, at a rig joint + offset.
    """

    name: str
    parent: str | None
    at: tuple[str, tuple[float, float, float]]
    turns_with: str
    end: tuple[str, tuple[float, float, float]] | None = None


def J(name, parent, at, turns_with=None, end=None, off=(0.0, 0.0, 0.0), end_off=(0.0, 0.0, 0.0)):
    return Joint(name, parent, (at, off), turns_with or at, None if end is None else (end, end_off))


def _mirror(joints: list[Joint], rename) -> list[Joint]:
    """The other side's joints: names through `rename`, rig joints Left <-> Right, x flipped."""

    def rig(name: str) -> str:
        return name.replace("Left", "Right") if "Left" in name else name

    def flip(p):
        return (rig(p[0]), (-p[1][0], p[1][1], p[1][2]))

    return [
        Joint(rename(j.name), rename(j.parent), flip(j.at), rig(j.turns_with),
              None if j.end is None else flip(j.end))
        for j in joints
    ]  # fmt: skip


def _cmu() -> list[Joint]:
    left_leg = [
        J("LHipJoint", "Hips", "Hips"),
        J("LeftHip", "LHipJoint", "LeftUpLeg"),
        J("LeftKnee", "LeftHip", "LeftLeg"),
        J("LeftAnkle", "LeftKnee", "LeftFoot"),
        J("LeftToe", "LeftAnkle", "LeftToeBase", end="LeftToeBase_End"),
    ]
    left_arm = [
        J("LeftCollar", "Chest2", "LeftShoulder"),
        J("LeftShoulder", "LeftCollar", "LeftArm"),  # CMU's shoulder is the upper arm
        J("LeftElbow", "LeftShoulder", "LeftForeArm"),
        J("LeftWrist", "LeftElbow", "LeftHand"),
        J("lhand", "LeftWrist", "LeftHand", off=(5, 0, 0)),
        J("LFingers", "lhand", "LeftHand", off=(11, 0, 0), end="LeftHand", end_off=(16, 0, 0)),
        J("LThumb", "lhand", "LeftHand", off=(3, -1, 3), end="LeftHand", end_off=(6, -1, 6)),
    ]

    def right(n):
        return n if n in (None, "Hips", "Chest2") else (
            n.replace("Left", "Right").replace("LHip", "RHip").replace("lhand", "rhand")
            .replace("LFing", "RFing").replace("LThumb", "RThumb")
        )  # fmt: skip

    return [
        J("Hips", None, "Hips"),
        *left_leg, *_mirror(left_leg, right),
        J("lowerback", "Hips", "Hips", off=(0, 5, 0)),
        J("Chest", "lowerback", "Spine"),
        J("Chest2", "Chest", "Spine1"),
        *left_arm, *_mirror(left_arm, right),
        J("Neck", "Chest2", "Neck"),
        J("Neck1", "Neck", "Neck", off=(0, 4.5, 0.5)),
        J("Head", "Neck1", "Head", end="Head_End"),
    ]  # fmt: skip


def _limbs(chest: str) -> tuple[list[Joint], list[Joint]]:
    """The left arm and leg as Mixamo and Rokoko (and MotionBuilder) name them: the
    clavicle is LeftShoulder, the upper arm LeftArm, the shin LeftLeg."""
    arm = [
        J("LeftShoulder", chest, "LeftShoulder"),
        J("LeftArm", "LeftShoulder", "LeftArm"),
        J("LeftForeArm", "LeftArm", "LeftForeArm"),
        J("LeftHand", "LeftForeArm", "LeftHand"),
    ]
    leg = [
        J("LeftUpLeg", "Hips", "LeftUpLeg"),
        J("LeftLeg", "LeftUpLeg", "LeftLeg"),
        J("LeftFoot", "LeftLeg", "LeftFoot"),
    ]
    return arm, leg


def _fingers(hand: str, chains: dict[str, list[tuple[float, float, float]]], tip: bool):
    """Finger chains below `hand`: name -> joint positions (cm from the wrist); `tip`: the
    last joint of each chain carries an End Site at its own position (Mixamo's 4th joints)."""
    out = []
    for name, points in chains.items():
        parent = hand
        for k, point in enumerate(points, start=1):
            last = tip and k == len(points)
            out.append(J(f"{name}{k}", parent, "LeftHand", off=point,
                         end="LeftHand" if last else None, end_off=point))  # fmt: skip
            parent = f"{name}{k}"
    return out


def _mixamo() -> list[Joint]:
    arm, leg = _limbs("Spine2")
    arm += _fingers("LeftHand", {
        "LeftHandThumb": [(2, -1, 3), (4.5, -1, 5), (6.5, -1, 6), (8, -1, 6.5)],
        "LeftHandIndex": [(9, 0, 2), (12, 0, 2), (14, 0, 2), (16, 0, 2)],
    }, tip=True)  # fmt: skip
    leg += [
        J("LeftToeBase", "LeftFoot", "LeftToeBase"),
        J("LeftToe_End", "LeftToeBase", "LeftToeBase_End", "LeftToeBase", end="LeftToeBase_End"),
    ]

    def right(n):
        return n if n in (None, "Hips", "Spine2") else n.replace("Left", "Right")

    joints = [
        J("Hips", None, "Hips"),
        J("Spine", "Hips", "Spine"),
        J("Spine1", "Spine", "Spine", off=(0, 8, 0)),
        J("Spine2", "Spine1", "Spine1"),
        J("Neck", "Spine2", "Neck"),
        J("Head", "Neck", "Head"),
        J("HeadTop_End", "Head", "Head_End", "Head", end="Head_End", end_off=(0, 1, 0)),
        *arm, *_mirror(arm, right),
        *leg, *_mirror(leg, right),
    ]  # fmt: skip
    return [_prefixed(j, "mixamorig:") for j in joints]


def _prefixed(j: Joint, prefix: str) -> Joint:
    return Joint(prefix + j.name, None if j.parent is None else prefix + j.parent, j.at,
                 j.turns_with, j.end)  # fmt: skip


def _rokoko() -> list[Joint]:
    arm, leg = _limbs("Spine3")
    arm += [
        J("LeftFinger1Metacarpal", "LeftHand", "LeftHand", off=(2, -1, 2)),
        J("LeftFinger1Proximal", "LeftFinger1Metacarpal", "LeftHand", off=(5, -1, 4)),
        J("LeftFinger1Distal", "LeftFinger1Proximal", "LeftHand", off=(7, -1, 5)),
        J("LeftFinger2Proximal", "LeftHand", "LeftHand", off=(10, 0, 2)),
        J("LeftFinger2Medial", "LeftFinger2Proximal", "LeftHand", off=(13, 0, 2)),
        J("LeftFinger2Distal", "LeftFinger2Medial", "LeftHand", off=(15, 0, 2)),
    ]
    leg += [J("LeftToe", "LeftFoot", "LeftToeBase")]

    def right(n):
        return n if n in (None, "Hips", "Spine3") else n.replace("Left", "Right")

    return [
        J("Hips", None, "Hips"),
        J("Spine", "Hips", "Hips", off=(0, 4, 0)),
        J("Spine1", "Spine", "Spine"),
        J("Spine2", "Spine1", "Spine", off=(0, 8, 0)),
        J("Spine3", "Spine2", "Spine1"),
        J("Neck", "Spine3", "Neck"),
        J("Head", "Neck", "Head"),
        *arm, *_mirror(arm, right),
        *leg, *_mirror(leg, right),
    ]  # fmt: skip


def _biped() -> list[Joint]:
    hand = "LeftHand"
    left_leg = [
        J("Bip01 L Thigh", "Bip01 Spine", "LeftUpLeg"),
        J("Bip01 L Calf", "Bip01 L Thigh", "LeftLeg"),
        J("Bip01 L Foot", "Bip01 L Calf", "LeftFoot"),
        J("Bip01 L Toe0", "Bip01 L Foot", "LeftToeBase"),
        J("Bip01 L Toe0Nub", "Bip01 L Toe0", "LeftToeBase_End", "LeftToeBase",
          end="LeftToeBase_End"),
    ]  # fmt: skip
    left_arm = [
        J("Bip01 L Clavicle", "Bip01 Neck", "LeftShoulder"),
        J("Bip01 L UpperArm", "Bip01 L Clavicle", "LeftArm"),
        J("Bip01 L Forearm", "Bip01 L UpperArm", "LeftForeArm"),
        J("Bip01 L Hand", "Bip01 L Forearm", hand),
        J("Bip01 L Finger0", "Bip01 L Hand", hand, off=(2, -1, 3)),
        J("Bip01 L Finger0Nub", "Bip01 L Finger0", hand, off=(7, -1, 6), end=hand,
          end_off=(7, -1, 6)),
        J("Bip01 L Finger1", "Bip01 L Hand", hand, off=(9, 0, 1)),
        J("Bip01 L Finger1Nub", "Bip01 L Finger1", hand, off=(16, 0, 1), end=hand,
          end_off=(16, 0, 1)),
    ]  # fmt: skip

    def right(n):
        return n.replace(" L ", " R ") if n and " L " in n else n

    return [
        J("Bip01", None, "Hips"),
        J("Bip01 Pelvis", "Bip01", "Hips"),
        J("Bip01 Spine", "Bip01 Pelvis", "Hips", off=(0, 3, 0)),
        *left_leg, *_mirror(left_leg, right),
        J("Bip01 Spine1", "Bip01 Spine", "Spine"),
        J("Bip01 Spine2", "Bip01 Spine1", "Spine", off=(0, 8, 0)),
        J("Bip01 Neck", "Bip01 Spine2", "Spine1", off=(0, 18, 0)),
        *left_arm, *_mirror(left_arm, right),
        J("Bip01 Head", "Bip01 Neck", "Head"),
        J("Bip01 HeadNub", "Bip01 Head", "Head_End", "Head", end="Head_End"),
    ]  # fmt: skip


def _own() -> list[Joint]:
    return [J(name, parent, name) for name, parent, _ in shipped.RIG if not name.endswith("_End")]


@dataclass(frozen=True)
class Convention:
    joints: tuple[Joint, ...]
    rotation: str | None  # Euler order of every joint, e.g. "ZYX"; None: the best per joint
    positions_everywhere: bool = False  # position channels on every joint (Rokoko)
    end_sites: bool = True
    rest_z_up: bool = False  # offsets Z-up, the root's rotation makes the motion Y-up


CONVENTIONS = {
    "cmu": Convention(tuple(_cmu()), "ZYX"),
    "mixamo": Convention(tuple(_mixamo()), "ZXY"),
    "rokoko": Convention(tuple(_rokoko()), "YXZ", positions_everywhere=True, end_sites=False,
                         rest_z_up=True),
    "biped": Convention(tuple(_biped()), "ZXY"),
    "own": Convention(tuple(_own()), None, end_sites=False),
}  # fmt: skip

UNITS = {"cm": 1.0, "m": 0.01, "inch": 1 / 2.54}


@dataclass(frozen=True)
class TestFile:
    convention: str
    motion: str
    up: str  # 'y' or 'z'
    facing: str  # '+x', '-x', '+z', '-z' (or +y, -y for Z up)
    unit: str
    fps: int

    @property
    def name(self) -> str:
        return f"{self.convention}_{self.motion}.bvh"


FILES = (
    TestFile("cmu", "jumping_jack", "y", "-z", "inch", 60),
    TestFile("cmu", "walk", "y", "+x", "inch", 120),
    TestFile("mixamo", "walk", "y", "+z", "cm", 30),
    TestFile("mixamo", "jumping_jack", "y", "-x", "cm", 30),
    TestFile("mixamo", "dance", "y", "+z", "cm", 30),
    TestFile("cmu", "dance", "y", "-x", "inch", 120),
    TestFile("rokoko", "dance", "y", "-x", "m", 30),
    TestFile("rokoko", "zombie", "y", "+z", "m", 30),
    TestFile("biped", "jumping_jack", "z", "+x", "cm", 30),
    TestFile("biped", "dance", "z", "-y", "cm", 30),
    TestFile("own", "walk", "y", "-z", "m", 60),
    TestFile("own", "zombie", "y", "+x", "m", 60),
)


def _rotation(axis: int, degrees: float) -> np.ndarray:
    return shipped.axis_rotations(axis, np.array([degrees]))[0]


def world_turn(up: str, facing: str) -> np.ndarray:
    """(3, 3) rotation taking the rig's frame (Y up, facing +Z) to the file's."""
    to_up = np.eye(3) if up == "y" else _rotation(0, 90.0)  # Z up: +Y -> +Z, +Z -> -Y
    up_axis = 1 if up == "y" else 2
    faces = to_up @ np.array([0.0, 0.0, 1.0])
    want = np.zeros(3)
    want["xyz".index(facing[1])] = 1.0 if facing[0] == "+" else -1.0
    if abs(want @ to_up @ np.array([0.0, 1.0, 0.0])) > 0.5:
        raise ValueError(f"cannot face {facing} with {up} up")
    angle = np.degrees(np.arctan2(np.cross(faces, want)[up_axis], faces @ want))
    return _rotation(up_axis, angle) @ to_up


def _rig_rest() -> dict[str, np.ndarray]:
    rest = {}
    for name, parent, offset in shipped.RIG:
        rest[name] = np.array(offset) + (rest[parent] if parent else 0.0)
    return rest


def build(file: TestFile) -> tuple[BVH, dict[str, np.ndarray]]:
    """The file's BVH and the world rotation (F, 3, 3) each joint is meant to have."""
    conv = CONVENTIONS[file.convention]
    duration, keys = MOTIONS[file.motion]()
    rig = shipped.clip_to_bvh(duration, keys, fps=file.fps)
    rig_rot, rig_pos = world_transforms(rig)
    rig_index = {n: i for i, n in enumerate(rig.names)}
    n_frames = rig.n_frames
    root_path = rig_pos[:, 0].copy()
    root_path[:, 2] += TRAVEL_CM_S.get(file.motion, 0.0) * np.arange(n_frames) / file.fps

    turn = world_turn(file.up, file.facing)
    rest_turn = _rotation(0, 90.0) if conv.rest_z_up else np.eye(3)
    scale = UNITS[file.unit]
    rest = _rig_rest()
    at = {j.name: rest[j.at[0]] + np.array(j.at[1], dtype=float) for j in conv.joints}

    names, parents, offsets, channels, columns = [], [], [], [], []
    world: dict[str, np.ndarray] = {}
    for joint in conv.joints:
        index = len(names)
        parent = -1 if joint.parent is None else names.index(joint.parent)
        offset = (
            np.zeros(3) if parent < 0 else scale * rest_turn @ turn @ (at[joint.name] - at[joint.parent])
        )  # fmt: skip
        names.append(joint.name)
        parents.append(parent)
        offsets.append(offset)
        # World rotation in the file: the rig joint's, seen in the file's axes; a Z-up rest
        # pose needs the rotation that turns it upright on top (it lands on the root).
        turned = turn @ rig_rot[:, rig_index[joint.turns_with]] @ turn.T @ rest_turn.T
        world[joint.name] = turned
        local = turned if parent < 0 else np.einsum("fba,fbc->fac", world[joint.parent], turned)
        order = conv.rotation or shipped.best_order(local)
        angles = shipped._unwrap(shipped.to_euler(local, order))
        chans = tuple(f"{c}rotation" for c in order)
        if parent < 0:
            chans = ("Xposition", "Yposition", "Zposition", *chans)
            columns.append(scale * root_path @ turn.T)
        elif conv.positions_everywhere:
            chans = ("Xposition", "Yposition", "Zposition", *chans)
            columns.append(np.broadcast_to(offset, (n_frames, 3)))
        channels.append(chans)
        columns.append(angles)
        if joint.end is not None and conv.end_sites:
            tip = rest[joint.end[0]] + np.array(joint.end[1], dtype=float)
            names.append(f"{joint.name}_End")
            parents.append(index)
            offsets.append(scale * rest_turn @ turn @ (tip - at[joint.name]))
            channels.append(())
    bvh = BVH(
        names=tuple(names),
        parents=np.array(parents),
        offsets=np.array(offsets),
        channels=tuple(channels),
        frame_time=1.0 / file.fps,
        motion=np.concatenate(columns, axis=1),
        source=file.name,
    )
    return bvh, world


def main(out_dir: Path = HERE) -> None:
    """Write every test file into out_dir, checking that each turns its joints as meant."""
    for file in FILES:
        bvh, world = build(file)
        text = format_bvh(bvh, decimals=4)
        check(file, parse_bvh(text, source=file.name), world)
        (Path(out_dir) / file.name).write_text(text)


def check(file: TestFile, written: BVH, world: dict[str, np.ndarray]) -> None:
    """The written file's joints turn as meant (to the 4 decimals written): an Euler order
    near gimbal lock, or any slip in the axes, would show here."""
    rot, _ = world_transforms(written)
    error = max(np.abs(rot[:, written.index(n)] - r).max() for n, r in world.items())
    if not error < 1e-3:
        raise AssertionError(f"{file.name}: a joint's rotation is off by {error:.3g}")


if __name__ == "__main__":
    main()
