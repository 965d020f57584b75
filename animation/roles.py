"""Which BVH joint is which point of the body, from joint names and the hierarchy's shape.

A role is a point of the body that retargeting needs, named like the character joint it
drives (DESIGN.md's 16 joints):

    hips, chest, neck, head,
    left_shoulder, left_elbow, left_hand, right_shoulder, right_elbow, right_hand,
    left_hip, left_knee, left_foot, right_hip, right_knee, right_foot

`chest` is where the arms branch off the spine, `neck` the base of the neck, `head` the top
of the head, `shoulder` the shoulder joint (where the upper arm starts, never the
clavicle), `hand` the wrist, `hip` the hip joint (where the thigh starts), `foot` the ankle.

Names alone are ambiguous across the conventions people have: Mixamo's and Rokoko's
`LeftShoulder` is the clavicle and `LeftArm` the upper arm, while in CMU-style files
`LeftCollar` is the clavicle and `LeftShoulder` the upper arm; Mixamo's `LeftLeg` is the
shin. So a name only says what kind of part a joint is (`_classify`: side and kind), and
the hierarchy decides which joint is the point: walking up a limb from its hand (or foot),
the elbow is the nearest forearm-like ancestor, the shoulder the nearest upper-arm-like
one above that, skipping helpers (twist and roll joints), clavicles and CMU's `LHipJoint`.
The chest is where the two shoulders' chains meet, the hips the pelvis above both legs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from animation.bvh import BVH, rest_positions

SIDES = ("left", "right")
LIMB_ROLES = ("shoulder", "elbow", "hand", "hip", "knee", "foot")
ROLES: tuple[str, ...] = ("hips", "chest", "neck", "head") + tuple(
    f"{side}_{part}" for side in SIDES for part in LIMB_ROLES
)
ROLE_HELP: dict[str, str] = {
    "hips": "the pelvis, above both legs",
    "chest": "where the arms branch off the spine",
    "neck": "the base of the neck",
    "head": "the top of the head (or the head joint)",
    "shoulder": "the shoulder joint, where the upper arm starts (not the clavicle)",
    "elbow": "the elbow",
    "hand": "the wrist",
    "hip": "the hip joint, where the thigh starts",
    "knee": "the knee",
    "foot": "the ankle",
}


class RoleError(ValueError):
    """Roles that cannot be found or were given wrongly; says what was found and what not."""

    def __init__(self, message: str, found: dict[str, str], missing: list[str]) -> None:
        super().__init__(message)
        self.found = found
        self.missing = missing


# ---- names --------------------------------------------------------------------------------

# What a sided joint is, by the names tools give it (lower case, no separators).
_SIDED_KINDS: dict[str, tuple[str, ...]] = {
    "collar": ("collar", "clavicle", "clav"),
    "shoulder": ("shoulder",),  # Mixamo: the clavicle; CMU-style: the shoulder joint
    "arm": ("arm", "uparm", "upperarm", "humerus", "shldr", "shoulderjoint"),
    "forearm": ("forearm", "lowerarm", "loarm", "elbow", "radius", "forarm"),
    "hand": ("hand", "wrist"),
    "hipjoint": ("hipjoint",),  # CMU's pelvis-to-hip bone
    "upleg": ("upleg", "upperleg", "thigh", "femur", "hip", "leg1"),
    "leg": ("leg", "lowerleg", "loleg", "knee", "shin", "tibia", "calf", "leg2"),
    "foot": ("foot", "ankle"),
    "toe": ("toe", "toes", "toebase", "toe0", "ball"),
}
_UNSIDED_KINDS: dict[str, tuple[str, ...]] = {
    "hips": ("hips", "hip", "pelvis", "root"),
    "neck": ("neck", "neck1", "neck01", "lowerneck"),
    "head": ("head",),
    "headtop": ("headtop", "headend", "headnub", "headtip", "headtopend", "headsite"),
}
_SPINE = re.compile(
    r"^(spine|chest|upperchest|abdomen|torso|back|lowerback|upperback|thorax|waist)\d*$"
)
_SIDE_WORDS = {"left": "left", "l": "left", "right": "right", "r": "right"}
# Prefixes tools put before every name: Mixamo, 3ds Max Biped, Blender's Rigify, others.
_PREFIX = re.compile(r"^(mixamorig\d*[_.]?|bip\d+[ _]|def[-_]|jnt[_]|cc_base_)")
# What joint_role reports for each kind (the names of the first version of this module).
_ROLE_OF_KIND = {
    "collar": "shoulder", "shoulder": "shoulder", "arm": "arm", "forearm": "forearm",
    "hand": "hand", "upleg": "upleg", "leg": "leg", "foot": "foot",
}  # fmt: skip


def _classify(name: str) -> tuple[str | None, str | None]:
    """(side, kind) of a joint name: ('left', 'forearm'), (None, 'spine'), (None, None)."""
    n = re.split(r"[:|]", name)[-1].lower()  # mixamorig:LeftArm, Armature|Hips
    n = _PREFIX.sub("", n)
    n = re.sub(r"[^a-z0-9]+", "_", n).strip("_")
    flat = n.replace("_", "")
    candidates: list[tuple[str | None, str]] = []
    for word, side in _SIDE_WORDS.items():
        if flat.startswith(word):  # LeftArm, l_arm, lShldr, lhand, Bip01 L Thigh
            candidates.append((side, flat[len(word) :]))
        if n.endswith("_" + word):  # arm_l, Arm.R, hand_left
            candidates.append((side, n[: -len(word) - 1].replace("_", "")))
        elif len(word) > 1 and flat.endswith(word):  # ArmLeft
            candidates.append((side, flat[: -len(word)]))
    for side, part in candidates:
        # DAZ Genesis 3/8 split each limb bone: lShldrBend is the upper arm, lShldrTwist a
        # helper partway down it (no kind, like HumanIK's roll joints).
        part = part.removesuffix("bend")
        for kind, aliases in _SIDED_KINDS.items():
            if part in aliases:
                return side, kind
    for kind, aliases in _UNSIDED_KINDS.items():
        if flat in aliases:
            return None, kind
    if _SPINE.match(flat):
        return None, "spine"
    return None, None


def joint_role(name: str) -> str | None:
    """What a joint name says it is: 'hips', 'spine', 'neck', 'head', 'left_arm' (upper
    arm), 'left_forearm', 'left_hand', 'left_shoulder' (clavicle or shoulder: the hierarchy
    decides), 'left_upleg', 'left_leg' (shin), 'left_foot', ...; None for anything else
    (fingers, toes, head tips, CMU's hip joints, helpers)."""
    side, kind = _classify(name)
    if side is None:
        return kind if kind in ("hips", "spine", "neck", "head") else None
    role = _ROLE_OF_KIND.get(kind or "")
    return f"{side}_{role}" if role else None


# ---- the hierarchy ------------------------------------------------------------------------


class _Skeleton:
    """A BVH's hierarchy with each joint's name classified."""

    def __init__(self, bvh: BVH) -> None:
        self.bvh = bvh
        self.kinds = [_classify(n) for n in bvh.names]
        self.rest = rest_positions(bvh)

    def ancestors(self, j: int) -> list[int]:
        """Parent, grandparent, ... up to the root (j itself not included)."""
        out = []
        while self.bvh.parents[j] >= 0:
            j = int(self.bvh.parents[j])
            out.append(j)
        return out

    def is_below(self, j: int, ancestor: int) -> bool:
        return j == ancestor or ancestor in self.ancestors(j)

    def first(self, side: str | None, kind: str) -> int | None:
        """The shallowest joint (file order: parents come first) of this side and kind."""
        return next(
            (j for j, k in enumerate(self.kinds) if k == (side, kind) and self.bvh.channels[j]),
            None,
        )

    def nearest_above(self, j: int, side: str | None, kinds: tuple[str, ...]) -> int | None:
        """The nearest ancestor of j whose kind is one of `kinds` on this side."""
        wanted = {(side, k) for k in kinds}
        return next((a for a in self.ancestors(j) if self.kinds[a] in wanted), None)

    def moving_parent(self, j: int) -> int | None:
        """j's nearest ancestor not at j's own rest position (a zero-length helper is not a bone)."""
        return next((a for a in self.ancestors(j) if self._apart(a, j)), None)

    def distance(self, a: int, b: int) -> float:
        """Rest-pose distance between two joints."""
        return float(np.linalg.norm(self.rest[a] - self.rest[b]))

    def _apart(self, a: int, b: int) -> bool:
        return self.distance(a, b) > 1e-4 * max(float(np.ptp(self.rest, axis=0).max()), 1e-9)

    def farthest_below(self, j: int) -> int:
        """The descendant of j farthest from it in the rest pose (j itself if it has none)."""
        below = [c for c in range(len(self.bvh.names)) if c != j and self.is_below(c, j)]
        return max(below, key=lambda c: self.distance(c, j)) if below else j

    def main_child(self, j: int) -> int | None:
        """The child whose branch reaches farthest from j: the next joint of a limb chain."""
        children = self.bvh.children(j)
        if not children:
            return None
        return max(children, key=lambda c: self.distance(self.farthest_below(c), j))

    def common_ancestor(self, a: int, b: int) -> int:
        up_b = {b, *self.ancestors(b)}
        return next(j for j in [a, *self.ancestors(a)] if j in up_b)


def _limb(
    skel: _Skeleton,
    roles: dict[str, int],
    side: str,
    points: tuple[str, str, str],
    kinds: tuple[str, str, tuple[str, ...], str],
) -> None:
    """Fill the three points of one limb (shoulder, elbow, hand or hip, knee, foot).

    kinds: the end's kind (hand/foot), the middle's (forearm/leg), the root's (arm or
    shoulder / upleg) and the girdle joint above the root (collar / hipjoint).
    """
    root_role, mid_role, end_role = (f"{side}_{p}" for p in points)
    end_kind, mid_kind, root_kinds, girdle_kind = kinds
    end, mid = roles.get(end_role), roles.get(mid_role)
    if end is None:
        end = skel.first(side, end_kind)
    if mid is None and end is not None:
        mid = skel.nearest_above(end, side, (mid_kind,))
        if mid is None:
            mid = skel.moving_parent(end)  # unnamed: the bone above the hand is the forearm
    if mid is None:
        mid = skel.first(side, mid_kind)
    if mid is None and end is None:
        # Only the upper arm (thigh) says what it is: the chain goes on below it.
        upper = roles.get(root_role, skel.first(side, root_kinds[0]))
        mid = None if upper is None else skel.main_child(upper)
    if end is None and mid is not None:
        end = skel.main_child(mid)
    root = roles.get(root_role)
    if root is None and mid is not None:
        above = skel.nearest_above(mid, side, (*root_kinds, girdle_kind))
        kind = None if above is None else skel.kinds[above][1]
        if kind == girdle_kind or (kind == "shoulder" and skel.moving_parent(mid) != above):
            # The clavicle (or CMU's hip joint) came first, or a "shoulder" with a bone
            # between it and the elbow (Mixamo's clavicle, its upper arm oddly named):
            # the shoulder joint is just below it.
            path = [mid, *skel.ancestors(mid)]
            below_girdle = path[path.index(above) - 1]
            above = below_girdle if below_girdle != mid else None
        root = above if above is not None else skel.moving_parent(mid)
    for role, joint in ((end_role, end), (mid_role, mid), (root_role, root)):
        if joint is not None:
            roles.setdefault(role, joint)


def _torso(skel: _Skeleton, roles: dict[str, int]) -> None:
    if "chest" not in roles and "left_shoulder" in roles and "right_shoulder" in roles:
        roles["chest"] = skel.common_ancestor(roles["left_shoulder"], roles["right_shoulder"])
    if "hips" not in roles and "left_hip" in roles and "right_hip" in roles:
        legs = skel.common_ancestor(roles["left_hip"], roles["right_hip"])
        pelvis = [j for j in [legs, *skel.ancestors(legs)] if skel.kinds[j] == (None, "hips")]
        roles["hips"] = pelvis[0] if pelvis else legs
    chest = roles.get("chest")
    head = roles.get("head")
    if head is None:
        head = skel.first(None, "head")
        if head is None and chest is not None:
            head = _farthest_non_arm(skel, roles, chest)
        if head is not None:
            tips = [
                c for c in range(len(skel.bvh.names))
                if c != head and skel.is_below(c, head) and skel.kinds[c] == (None, "headtop")
            ]  # fmt: skip
            roles["head"] = tips[0] if tips else skel.farthest_below(head)
    if "neck" not in roles and head is not None:
        path = [head, *skel.ancestors(head)]
        necks = [j for j in path if skel.kinds[j] == (None, "neck")]
        if necks:
            roles["neck"] = necks[-1]  # the neck joint nearest the chest: its base
        elif chest is not None and chest in path:
            below_chest = path[max(path.index(chest) - 1, 0)]
            roles["neck"] = below_chest if below_chest != roles["head"] else chest


def _farthest_non_arm(skel: _Skeleton, roles: dict[str, int], chest: int) -> int | None:
    """No head by name: the farthest point of the chest's branches that are not arms."""
    arms = [roles[r] for r in ("left_shoulder", "right_shoulder") if r in roles]
    others = [
        c for c in range(len(skel.bvh.names))
        if c != chest and skel.is_below(c, chest) and not any(skel.is_below(c, a) for a in arms)
    ]  # fmt: skip
    if not others:
        return None
    return max(others, key=lambda c: skel.distance(c, chest))


def _resolve_given(bvh: BVH, given: Mapping[str, str]) -> dict[str, int]:
    index = {n: i for i, n in enumerate(bvh.names)}
    lower = {n.lower(): i for i, n in enumerate(bvh.names)}
    out = {}
    for role, joint in given.items():
        if role not in ROLES:
            raise RoleError(
                f"{bvh.source}: unknown role {role!r} in the joint map; roles: {', '.join(ROLES)}",
                {}, [],
            )  # fmt: skip
        j = index.get(joint, lower.get(str(joint).lower()))
        if j is None:
            raise RoleError(
                f"{bvh.source}: the joint map gives {role}={joint}, but the file has no joint "
                f"{joint!r}; its joints: {_listing(bvh.names)}",
                {}, [role],
            )  # fmt: skip
        out[role] = j
    return out


def _listing(names: tuple[str, ...], limit: int = 60) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


_DERIVED_FROM = {
    "chest": ("left_shoulder", "right_shoulder"),
    "hips": ("left_hip", "right_hip"),
    "neck": ("head",),
}
_ARM = ("shoulder", "elbow", "hand")
_LEG = ("hip", "knee", "foot")


def find_roles(bvh: BVH, given: Mapping[str, str] | None = None) -> dict[str, int]:
    """The BVH joint index of every role in ROLES.

    `given` (role -> joint name, from --map or a motion table's `map`) wins over what the
    names say, and the rest is found around it (give `left_elbow` and the shoulder is
    searched above it). A role that cannot be found raises RoleError listing what was
    found, what is missing and how to give it.
    """
    skel = _Skeleton(bvh)
    roles = _resolve_given(bvh, given or {})
    for side in SIDES:
        _limb(skel, roles, side, _ARM, ("hand", "forearm", ("arm", "shoulder"), "collar"))
        _limb(skel, roles, side, _LEG, ("foot", "leg", ("upleg",), "hipjoint"))
    _torso(skel, roles)
    missing = [r for r in ROLES if r not in roles]
    # A role worked out from others (the chest from the shoulders, ...) is not worth naming
    # while those are missing: it follows once they are given.
    missing = [r for r in missing if not set(_DERIVED_FROM.get(r, ())) & set(missing)]
    problems = _shape_problems(skel, roles) if not missing else []
    if missing or problems:
        found = {r: bvh.names[roles[r]] for r in ROLES if r in roles}
        what = (
            f"cannot find the joints for {', '.join(missing)}" if missing else "; ".join(problems)
        )
        raise RoleError(
            f"{bvh.source}: {what}. Found: "
            + (", ".join(f"{r}={n}" for r, n in found.items()) or "nothing")
            + f". The file's joints: {_listing(bvh.names)}. Give the right joint with "
            "--map ROLE=JOINT (in the motion table: map: {ROLE: JOINT}); roles: "
            + ", ".join(ROLES),
            found,
            missing,
        )
    return {r: roles[r] for r in ROLES}


def _shape_problems(skel: _Skeleton, roles: dict[str, int]) -> list[str]:
    """What is wrong with a complete assignment: chains that are not chains."""
    names = skel.bvh.names
    problems = []
    for side in SIDES:
        for chain in (("chest", "shoulder", "elbow", "hand"), ("hips", "hip", "knee", "foot")):
            points = [roles[c if c in ("chest", "hips") else f"{side}_{c}"] for c in chain]
            for upper, lower, up_role, low_role in zip(
                points, points[1:], chain, chain[1:], strict=False
            ):
                if upper == lower or not skel.is_below(lower, upper):
                    problems.append(
                        f"{side} {low_role} {names[lower]!r} is not below {up_role} {names[upper]!r}"
                    )
    if roles["left_hand"] == roles["right_hand"] or roles["left_foot"] == roles["right_foot"]:
        problems.append("left and right limbs are the same joints")
    return problems


def bone_map(roles: Mapping[str, int], names: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Character joint -> (from, to) BVH joint names: the character bone ending at that joint
    points the way from -> to does. Shoulders and hips point along the shoulder and hip
    lines, as drawings have them."""

    def n(role: str) -> str:
        return names[roles[role]]

    neck = roles["neck"] if roles["neck"] != roles["head"] else roles["chest"]
    bones = {
        "hip": (n("hips"), n("chest")),
        "torso": (n("hips"), n("chest")),
        "neck": (names[neck], n("head")),
    }
    for side, other in (("left", "right"), ("right", "left")):
        bones[f"{side}_shoulder"] = (n(f"{other}_shoulder"), n(f"{side}_shoulder"))
        bones[f"{side}_elbow"] = (n(f"{side}_shoulder"), n(f"{side}_elbow"))
        bones[f"{side}_hand"] = (n(f"{side}_elbow"), n(f"{side}_hand"))
        bones[f"{side}_hip"] = (n(f"{other}_hip"), n(f"{side}_hip"))
        bones[f"{side}_knee"] = (n(f"{side}_hip"), n(f"{side}_knee"))
        bones[f"{side}_foot"] = (n(f"{side}_knee"), n(f"{side}_foot"))
    return bones
