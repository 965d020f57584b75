"""Which BVH joint is which point of the body, from names and the hierarchy together."""

from __future__ import annotations

from pathlib import Path

import pytest

from animation.bvh import load_bvh, parse_bvh
from animation.roles import ROLES, RoleError, bone_map, find_roles

CONVENTIONS = Path(__file__).parent / "data" / "conventions"


def _names(path: Path, **given) -> dict[str, str]:
    bvh = load_bvh(path)
    return {r: bvh.names[j] for r, j in find_roles(bvh, given).items()}


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        # CMU-style: LeftCollar is the clavicle, LeftShoulder the upper arm, LHipJoint the
        # pelvis-to-hip bone; two chest joints, two neck joints; lhand and fingers below
        # the wrist.
        ("cmu_walk.bvh", {
            "hips": "Hips", "chest": "Chest2", "neck": "Neck", "head": "Head_End",
            "left_shoulder": "LeftShoulder", "left_elbow": "LeftElbow", "left_hand": "LeftWrist",
            "right_shoulder": "RightShoulder", "right_hand": "RightWrist",
            "left_hip": "LeftHip", "left_knee": "LeftKnee", "left_foot": "LeftAnkle",
            "right_hip": "RightHip", "right_foot": "RightAnkle",
        }),
        # Mixamo: LeftShoulder is the clavicle, LeftArm the upper arm, LeftLeg the shin;
        # the head's top is the HeadTop_End joint, not its End Site.
        ("mixamo_walk.bvh", {
            "hips": "mixamorig:Hips", "chest": "mixamorig:Spine2", "neck": "mixamorig:Neck",
            "head": "mixamorig:HeadTop_End", "left_shoulder": "mixamorig:LeftArm",
            "left_elbow": "mixamorig:LeftForeArm", "left_hand": "mixamorig:LeftHand",
            "left_hip": "mixamorig:LeftUpLeg", "left_knee": "mixamorig:LeftLeg",
            "left_foot": "mixamorig:LeftFoot", "right_knee": "mixamorig:RightLeg",
        }),
        # Rokoko: Spine..Spine3, no End Sites (the head joint is the top there is).
        ("rokoko_dance.bvh", {
            "hips": "Hips", "chest": "Spine3", "neck": "Neck", "head": "Head",
            "left_shoulder": "LeftArm", "right_elbow": "RightForeArm", "left_foot": "LeftFoot",
        }),
        # 3ds Max Biped: the thighs hang from Bip01 Spine and the clavicles from Bip01 Neck,
        # the pelvis is Bip01 Pelvis, the head's top its Nub.
        ("biped_dance.bvh", {
            "hips": "Bip01 Pelvis", "chest": "Bip01 Neck", "neck": "Bip01 Neck",
            "head": "Bip01 HeadNub", "left_shoulder": "Bip01 L UpperArm",
            "left_elbow": "Bip01 L Forearm", "left_hand": "Bip01 L Hand",
            "right_hip": "Bip01 R Thigh", "right_knee": "Bip01 R Calf", "right_foot": "Bip01 R Foot",
        }),
        ("own_zombie.bvh", {
            "hips": "Hips", "chest": "Spine1", "neck": "Neck", "head": "Head",
            "left_shoulder": "LeftArm", "left_hip": "LeftUpLeg",
        }),
    ],
)  # fmt: skip
def test_roles_of_each_convention(file, expected):
    found = _names(CONVENTIONS / file)
    assert set(found) == set(ROLES)
    assert {r: found[r] for r in expected} == expected


def _skeleton(spec: str) -> str:
    """A one-frame BVH from lines 'name parent x y z' (parent '-' for the root)."""
    rows = [line.split() for line in spec.strip().splitlines()]
    children: dict[str, list] = {}
    for name, parent, *offset in rows:
        children.setdefault(parent, []).append((name, offset))

    def write(name: str, offset: list[str], depth: int, root: bool) -> list[str]:
        pad = "  " * depth
        chans = (
            "6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"
            if root
            else "3 Zrotation Xrotation Yrotation"
        )
        out = [f"{pad}{'ROOT' if root else 'JOINT'} {name.replace('_', ' ') if name.startswith('Bip') else name}", f"{pad}{{",
               f"{pad}  OFFSET {' '.join(offset)}", f"{pad}  CHANNELS {chans}"]  # fmt: skip
        kids = children.get(name, [])
        for child, child_offset in kids:
            out += write(child, child_offset, depth + 1, False)
        if not kids:
            out += [f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET 0 1 0", f"{pad}  }}"]
        return out + [f"{pad}}}"]

    ((root, offset),) = children["-"]
    lines = ["HIERARCHY", *write(root, offset, 0, True), "MOTION", "Frames: 1", "Frame Time: 0.1"]
    return "\n".join(lines) + "\n" + " ".join(["0"] * (3 + 3 * len(rows))) + "\n"


# HumanIK/MotionBuilder: roll (twist) joints inside the limb chains, halfway down the bone.
HUMANIK = """
Hips - 0 100 0
Spine Hips 0 10 0
Spine1 Spine 0 15 0
Neck Spine1 0 20 0
Head Neck 0 10 0
LeftShoulder Spine1 5 15 0
LeftArm LeftShoulder 12 0 0
LeftArmRoll LeftArm 14 0 0
LeftForeArm LeftArmRoll 14 0 0
LeftForeArmRoll LeftForeArm 12 0 0
LeftHand LeftForeArmRoll 12 0 0
RightShoulder Spine1 -5 15 0
RightArm RightShoulder -12 0 0
RightArmRoll RightArm -14 0 0
RightForeArm RightArmRoll -14 0 0
RightForeArmRoll RightForeArm -12 0 0
RightHand RightForeArmRoll -12 0 0
LeftUpLeg Hips 10 0 0
LeftUpLegRoll LeftUpLeg 0 -20 0
LeftLeg LeftUpLegRoll 0 -20 0
LeftFoot LeftLeg 0 -40 0
RightUpLeg Hips -10 0 0
RightUpLegRoll RightUpLeg 0 -20 0
RightLeg RightUpLegRoll 0 -20 0
RightFoot RightLeg 0 -40 0
"""

# The CMU ASF skeleton's own names (amc2bvh): humerus/radius/wrist, femur/tibia, thorax.
ASF = """
root - 0 100 0
lhipjoint root 0 0 0
lfemur lhipjoint 8 -5 0
ltibia lfemur 0 -40 0
lfoot ltibia 0 -40 0
rhipjoint root 0 0 0
rfemur rhipjoint -8 -5 0
rtibia rfemur 0 -40 0
rfoot rtibia 0 -40 0
lowerback root 0 5 0
upperback lowerback 0 10 0
thorax upperback 0 10 0
lowerneck thorax 0 12 0
upperneck lowerneck 0 5 0
head upperneck 0 5 0
lclavicle thorax 2 10 0
lhumerus lclavicle 14 0 0
lradius lhumerus 27 0 0
lwrist lradius 24 0 0
lhand lwrist 5 0 0
rclavicle thorax -2 10 0
rhumerus rclavicle -14 0 0
rradius rhumerus -27 0 0
rwrist rradius -24 0 0
rhand rwrist -5 0 0
"""

# Poser / DAZ: lShldr is the upper arm, lCollar the clavicle, lThigh, lShin, abdomen, chest.
POSER = """
hip - 0 100 0
abdomen hip 0 8 0
chest abdomen 0 16 0
neck chest 0 20 0
head neck 0 10 0
lCollar chest 4 16 0
lShldr lCollar 12 0 0
lForeArm lShldr 27 0 0
lHand lForeArm 24 0 0
rCollar chest -4 16 0
rShldr rCollar -12 0 0
rForeArm rShldr -27 0 0
rHand rForeArm -24 0 0
lThigh hip 9 -4 0
lShin lThigh 0 -42 0
lFoot lShin 0 -42 0
rThigh hip -9 -4 0
rShin rThigh 0 -42 0
rFoot rShin 0 -42 0
"""


# DAZ Genesis 3 and 8: each limb bone in two, a "Bend" joint where the bone starts and a
# "Twist" joint partway down it; abdomenLower..chestUpper, neckLower/neckUpper.
GENESIS = """
hip - 0 100 0
pelvis hip 0 0 0
abdomenLower hip 0 8 0
abdomenUpper abdomenLower 0 8 0
chestLower abdomenUpper 0 8 0
chestUpper chestLower 0 8 0
neckLower chestUpper 0 20 0
neckUpper neckLower 0 4 0
head neckUpper 0 6 0
lCollar chestUpper 4 16 0
lShldrBend lCollar 12 0 0
lShldrTwist lShldrBend 13 0 0
lForearmBend lShldrTwist 14 0 0
lForearmTwist lForearmBend 12 0 0
lHand lForearmTwist 12 0 0
lThighBend pelvis 9 -4 0
lThighTwist lThighBend 0 -20 0
lShin lThighTwist 0 -22 0
lFoot lShin 0 -42 0
lToe lFoot 0 -4 6
rCollar chestUpper -4 16 0
rShldrBend rCollar -12 0 0
rShldrTwist rShldrBend -13 0 0
rForearmBend rShldrTwist -14 0 0
rForearmTwist rForearmBend -12 0 0
rHand rForearmTwist -12 0 0
rThighBend pelvis -9 -4 0
rThighTwist rThighBend 0 -20 0
rShin rThighTwist 0 -22 0
rFoot rShin 0 -42 0
rToe rFoot 0 -4 6
"""


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (HUMANIK, {"left_shoulder": "LeftArm", "left_elbow": "LeftForeArm", "left_hand": "LeftHand",
                   "left_hip": "LeftUpLeg", "left_knee": "LeftLeg", "chest": "Spine1"}),
        (ASF, {"hips": "root", "chest": "thorax", "neck": "lowerneck", "left_shoulder": "lhumerus",
               "left_elbow": "lradius", "left_hand": "lwrist", "left_hip": "lfemur",
               "left_knee": "ltibia", "left_foot": "lfoot", "right_hand": "rwrist"}),
        (GENESIS, {"chest": "chestUpper", "neck": "neckLower",
                   "left_shoulder": "lShldrBend", "left_elbow": "lForearmBend", "left_hand": "lHand",
                   "right_elbow": "rForearmBend", "left_hip": "lThighBend", "left_knee": "lShin",
                   "right_hip": "rThighBend", "right_foot": "rFoot"}),
        (POSER, {"hips": "hip", "chest": "chest", "left_shoulder": "lShldr", "left_elbow": "lForeArm",
                 "left_hip": "lThigh", "left_knee": "lShin", "right_foot": "rFoot"}),
    ],
)  # fmt: skip
def test_helpers_and_other_namings(spec, expected):
    bvh = parse_bvh(_skeleton(spec))
    roles = find_roles(bvh)
    assert {r: bvh.names[roles[r]] for r in expected} == expected


def test_a_missing_role_lists_what_was_found_and_a_map_fixes_it():
    # Hands and forearms named like nothing we know: the arms cannot be found.
    text = (CONVENTIONS / "mixamo_walk.bvh").read_text()
    for side in ("Left", "Right"):
        text = text.replace(f"mixamorig:{side}Arm\n", f"mixamorig:{side}Bone0\n")
        text = text.replace(f"mixamorig:{side}ForeArm", f"mixamorig:{side}Bone1")
        text = text.replace(f"mixamorig:{side}Hand\n", f"mixamorig:{side}Bone2\n")
    bvh = parse_bvh(text, source="renamed.bvh")
    with pytest.raises(RoleError) as err:
        find_roles(bvh)
    message = str(err.value)
    assert message.startswith(
        "renamed.bvh: cannot find the joints for left_shoulder, left_elbow, left_hand, "
        "right_shoulder, right_elbow, right_hand. Found: hips=mixamorig:Hips, "
    )
    assert "left_knee=mixamorig:LeftLeg" in message  # what was found
    assert "mixamorig:LeftBone1" in message  # the file's joints, to pick from
    assert "--map ROLE=JOINT" in message
    assert set(err.value.missing) == {f"{s}_{p}" for s in ("left", "right")
                                      for p in ("shoulder", "elbow", "hand")}  # fmt: skip
    # Naming the wrists is enough: the elbow is the joint above, the shoulder the one above
    # that, below the clavicle (Mixamo's "LeftShoulder").
    roles = find_roles(
        bvh, {"left_hand": "mixamorig:LeftBone2", "right_hand": "mixamorig:RightBone2"}
    )
    assert bvh.names[roles["left_elbow"]] == "mixamorig:LeftBone1"
    assert bvh.names[roles["left_shoulder"]] == "mixamorig:LeftBone0"
    assert bvh.names[roles["chest"]] == "mixamorig:Spine2"


def test_a_limb_named_only_at_its_root_is_followed_down_its_chain():
    text = (CONVENTIONS / "mixamo_walk.bvh").read_text()
    text = text.replace("mixamorig:LeftForeArm", "mixamorig:Bone1")
    text = text.replace("mixamorig:LeftHand\n", "mixamorig:Bone2\n")
    bvh = parse_bvh(text)
    roles = {r: bvh.names[j] for r, j in find_roles(bvh).items()}
    assert roles["left_shoulder"] == "mixamorig:LeftArm"
    assert roles["left_elbow"] == "mixamorig:Bone1" and roles["left_hand"] == "mixamorig:Bone2"


def test_a_wrong_map_is_refused_clearly():
    bvh = load_bvh(CONVENTIONS / "cmu_walk.bvh")
    with pytest.raises(RoleError, match="unknown role 'left_wing'"):
        find_roles(bvh, {"left_wing": "LeftShoulder"})
    with pytest.raises(RoleError, match="has no joint 'LeftArm'"):
        find_roles(bvh, {"left_shoulder": "LeftArm"})
    # A map that breaks the chain (an elbow above its shoulder) is named as such.
    with pytest.raises(RoleError, match="left elbow 'LeftCollar' is not below shoulder"):
        find_roles(bvh, {"left_elbow": "LeftCollar", "left_shoulder": "LeftShoulder"})


def test_bone_map_points_girdles_along_their_lines():
    bvh = load_bvh(CONVENTIONS / "cmu_walk.bvh")
    bones = bone_map(find_roles(bvh), bvh.names)
    assert bones["left_shoulder"] == ("RightShoulder", "LeftShoulder")
    assert bones["left_elbow"] == ("LeftShoulder", "LeftElbow")
    assert bones["left_hand"] == ("LeftElbow", "LeftWrist")
    assert bones["right_hip"] == ("LeftHip", "RightHip")
    assert bones["torso"] == ("Hips", "Chest2") and bones["neck"] == ("Neck", "Head_End")
