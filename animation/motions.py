"""The motion table (`bvh/motions.yaml`) and motions loaded from it or from any BVH file.

A motion is a BVH clip plus how to retarget it: which BVH joints drive each character bone
(`bones`: character joint -> [from BVH joint, to BVH joint]; the bone ending at that joint
points like from -> to), which axis is up, and how each limb group is projected onto the
picture plane. A BVH file that is not in the table gets all of that worked out from its
joint names (Hips, LeftUpLeg, mixamorig:LeftArm, lShldr, ...).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from animation.bvh import BVH, BVHError, load_bvh, rest_positions

# The shipped motions: `bvh/` in the checkout, installed as this package (see setup.py).
BVH_DIR = Path(str(resources.files("animation.shipped_motions")))
MOTION_TABLE = BVH_DIR / "motions.yaml"

UP_AXES = ("x", "y", "z")
PROJECTIONS = ("front", "best_fit", "sagittal")
# Character joints grouped into limbs; a limb group shares one projection.
LIMB_GROUPS: dict[str, tuple[str, ...]] = {
    "torso": ("hip", "torso", "neck", "left_shoulder", "right_shoulder", "left_hip", "right_hip"),
    "left_arm": ("left_elbow", "left_hand"),
    "right_arm": ("right_elbow", "right_hand"),
    "left_leg": ("left_knee", "left_foot"),
    "right_leg": ("right_knee", "right_foot"),
}
DRIVEN_JOINTS: tuple[str, ...] = tuple(j for group in LIMB_GROUPS.values() for j in group)


class MotionError(ValueError):
    """An unknown motion name, a bad table entry, or a BVH the retargeter cannot use."""


@dataclass(frozen=True)
class MotionSpec:
    """One entry of the motion table: which file, which frames, how to retarget it."""

    name: str
    file: Path
    start_frame: int = 0
    end_frame: int | None = None  # exclusive; None = to the last frame
    up: str | None = None  # 'x' | 'y' | 'z' (optionally '-y'...), None = detect from rest pose
    bones: dict[str, tuple[str, str]] = field(default_factory=dict)  # empty = from joint names
    projection: str = "front"  # default for every limb group
    limb_projection: dict[str, str] = field(default_factory=dict)  # limb group -> projection
    description: str = ""

    def projection_of(self, group: str) -> str:
        return self.limb_projection.get(group, self.projection)


@dataclass(frozen=True)
class Motion:
    """A spec with its BVH trimmed to the spec's frames and a complete bone map."""

    spec: MotionSpec
    bvh: BVH
    up: str  # resolved: one of 'x', 'y', 'z', '-x', '-y', '-z'
    bones: dict[str, tuple[int, int]]  # character joint -> (from, to) BVH joint indices

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def duration_s(self) -> float:
        """Length of one loop: first frame to last frame."""
        return max(self.bvh.n_frames - 1, 1) * self.bvh.frame_time

    @property
    def leg_joints(self) -> dict[str, tuple[int, int, int]]:
        """BVH (up-leg, knee, ankle) indices of each leg, from the bone map."""
        out = {}
        for side in ("left", "right"):
            hip_from, knee = self.bones[f"{side}_knee"]
            _, ankle = self.bones[f"{side}_foot"]
            out[side] = (hip_from, knee, ankle)
        return out


# ---- motion table -----------------------------------------------------------------------


def _parse_spec(name: str, entry: object, base: Path, source: Path) -> MotionSpec:
    if not isinstance(entry, dict) or "file" not in entry:
        raise MotionError(f"{source}: motion {name!r} needs a mapping with 'file'")
    try:
        bones = {str(k): (str(v[0]), str(v[1])) for k, v in (entry.get("bones") or {}).items()}
        spec = MotionSpec(
            name=name,
            file=(base / str(entry["file"])).resolve(),
            start_frame=int(entry.get("start_frame", 0)),
            end_frame=None if entry.get("end_frame") is None else int(entry["end_frame"]),
            up=None if entry.get("up") is None else str(entry["up"]).lower(),
            bones=bones,
            projection=str(entry.get("projection", "front")),
            limb_projection={
                str(k): str(v) for k, v in (entry.get("limb_projection") or {}).items()
            },
            description=str(entry.get("description", "")),
        )
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MotionError(f"{source}: motion {name!r}: {exc}") from exc
    _check_spec(spec, source)
    return spec


def _check_spec(spec: MotionSpec, source: object) -> None:
    where = f"{source}: motion {spec.name!r}"
    if spec.up is not None and spec.up.lstrip("+-") not in UP_AXES:
        raise MotionError(f"{where}: up must be one of x, y, z, got {spec.up!r}")
    for group, proj in [("*", spec.projection), *spec.limb_projection.items()]:
        if proj not in PROJECTIONS:
            raise MotionError(f"{where}: projection must be one of {PROJECTIONS}, got {proj!r}")
        if group != "*" and group not in LIMB_GROUPS:
            raise MotionError(f"{where}: unknown limb group {group!r}")
    unknown = set(spec.bones) - set(DRIVEN_JOINTS)
    if unknown:
        raise MotionError(f"{where}: unknown character joints in bones: {sorted(unknown)}")
    if spec.start_frame < 0 or (spec.end_frame is not None and spec.end_frame <= spec.start_frame):
        raise MotionError(f"{where}: bad frame range [{spec.start_frame}, {spec.end_frame})")


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is 10x faster


def _file_stamp(path: Path) -> tuple[str, int, int]:
    """Identity of a file's current content for caches: path, mtime, size."""
    st = path.stat()
    return str(path.resolve()), st.st_mtime_ns, st.st_size


def load_motion_table(path: str | Path | None = None) -> dict[str, MotionSpec]:
    """Read the motion table; names keep the file's order. Cached until the file changes."""
    path = Path(path) if path is not None else MOTION_TABLE
    try:
        stamp = _file_stamp(path)
    except OSError as exc:
        raise MotionError(f"{path}: cannot read motion table: {exc}") from exc
    return dict(_read_table(stamp))


@functools.lru_cache(maxsize=8)
def _read_table(stamp: tuple[str, int, int]) -> dict[str, MotionSpec]:
    path = Path(stamp[0])
    try:
        doc = yaml.load(path.read_text(), Loader=_YAML_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise MotionError(f"{path}: cannot read motion table: {exc}") from exc
    motions = doc.get("motions") if isinstance(doc, dict) else None
    if not isinstance(motions, dict) or not motions:
        raise MotionError(f"{path}: needs a non-empty 'motions' mapping")
    return {str(n): _parse_spec(str(n), e, path.parent, path) for n, e in motions.items()}


def default_motions(table: dict[str, MotionSpec] | None = None) -> list[str]:
    """The motions rendered when a request names none: every motion in the table."""
    return list((table if table is not None else load_motion_table()).keys())


# ---- joint names --------------------------------------------------------------------------

# Canonical body parts and the names different tools give them (lower case, no separators).
_PART_ALIASES: dict[str, tuple[str, ...]] = {
    "hips": ("hips", "hip", "pelvis", "root"),
    "neck": ("neck", "neck1", "neck01"),
    "head": ("head",),
    "shoulder": ("shoulder", "collar", "clavicle"),
    "arm": ("arm", "uparm", "upperarm", "humerus", "shldr", "shoulderjoint"),
    "forearm": ("forearm", "lowerarm", "elbow", "radius", "forarm"),
    "hand": ("hand", "wrist"),
    "upleg": ("upleg", "upperleg", "thigh", "femur", "hip", "leg1"),
    "leg": ("leg", "lowerleg", "knee", "shin", "tibia", "calf", "leg2"),
    "foot": ("foot", "ankle"),
}
_SIDES = {"left": "left", "l": "left", "right": "right", "r": "right"}
_SPINE = re.compile(r"^(spine|chest|upperchest|abdomen|torso|back|lowerback)\d*$")


def joint_role(name: str) -> str | None:
    """Canonical role of a BVH joint name ('hips', 'left_arm', 'spine', ...) or None."""
    n = name.split(":")[-1].lower()  # mixamorig:LeftArm -> leftarm
    n = re.sub(r"^(mixamorig|bip\d*[ _]|def[-_])", "", n)  # Mixamo, 3ds Max Biped, Rigify
    n = re.sub(r"[^a-z0-9]+", "_", n).strip("_")
    flat = n.replace("_", "")
    candidates: list[tuple[str | None, str]] = []
    for prefix, side in _SIDES.items():  # LeftArm, l_arm, lShldr
        if flat.startswith(prefix):
            candidates.append((side, flat[len(prefix) :]))
    for suffix, side in _SIDES.items():  # arm_l, Arm.L, hand_left
        if n.endswith("_" + suffix):
            candidates.append((side, n[: -len(suffix) - 1].replace("_", "")))
    candidates.append((None, flat))
    for side, part in candidates:
        for canon, aliases in _PART_ALIASES.items():
            if part not in aliases:
                continue
            sided = canon not in ("hips", "neck", "head")
            if sided and side is not None:
                return f"{side}_{canon}"
            if not sided and side is None:
                return canon
    if _SPINE.match(flat):
        return "spine"
    return None


def _roles(bvh: BVH) -> dict[str, int]:
    """First joint (closest to the root) of each role."""
    roles: dict[str, int] = {}
    for j, name in enumerate(bvh.names):
        if bvh.is_end_site(j):
            continue
        role = joint_role(name)
        if role is not None and role not in roles:
            roles[role] = j
    if "hips" not in roles and bvh.names:
        roles["hips"] = 0  # the root is the pelvis in every humanoid BVH
    return roles


def _ancestors(bvh: BVH, j: int) -> list[int]:
    out = [j]
    while bvh.parents[out[-1]] >= 0:
        out.append(int(bvh.parents[out[-1]]))
    return out


def _common_ancestor(bvh: BVH, a: int, b: int) -> int:
    up_b = set(_ancestors(bvh, b))
    return next(j for j in _ancestors(bvh, a) if j in up_b)


def auto_bones(bvh: BVH) -> dict[str, tuple[str, str]]:
    """Bone map worked out from joint names; MotionError lists what is missing."""
    roles = _roles(bvh)
    need = ["hips"] + [f"{s}_{p}" for s in ("left", "right")
                       for p in ("arm", "forearm", "hand", "upleg", "leg", "foot")]  # fmt: skip
    missing = [r for r in need if r not in roles]
    if "head" not in roles and "neck" not in roles:
        missing.append("head")
    if missing:
        raise MotionError(
            f"{bvh.source}: cannot find joints for {', '.join(missing)} among "
            f"{', '.join(bvh.names[:40])}; name them like Hips, LeftArm, LeftUpLeg, ..."
        )
    name = bvh.names
    hips = roles["hips"]
    chest = _common_ancestor(bvh, roles["left_arm"], roles["right_arm"])
    head = roles.get("head", roles.get("neck"))
    if head == chest:  # no joint above the shoulders but the chest: use its tip
        tips = [c for c in bvh.children(head) if c not in _ancestors(bvh, roles["left_arm"])]
        head = tips[0] if tips else head
    # The character's neck bone runs from the shoulders to the nose: take the BVH neck to
    # the top of the head, so that a head tilt shows.
    neck = roles.get("neck", chest)
    tips = bvh.children(head)
    head_top = tips[0] if len(tips) == 1 and neck != head else head
    bones = {
        "hip": (name[hips], name[chest]),
        "torso": (name[hips], name[chest]),
        "neck": (name[neck], name[head_top]),
    }
    other = {"left": "right", "right": "left"}
    for side in ("left", "right"):
        r = {
            p: name[roles[f"{side}_{p}"]]
            for p in ("arm", "forearm", "hand", "upleg", "leg", "foot")
        }
        # Shoulders and hips point along the shoulder and hip lines, as drawings have them.
        bones[f"{side}_shoulder"] = (name[roles[f"{other[side]}_arm"]], r["arm"])
        bones[f"{side}_elbow"] = (r["arm"], r["forearm"])
        bones[f"{side}_hand"] = (r["forearm"], r["hand"])
        bones[f"{side}_hip"] = (name[roles[f"{other[side]}_upleg"]], r["upleg"])
        bones[f"{side}_knee"] = (r["upleg"], r["leg"])
        bones[f"{side}_foot"] = (r["leg"], r["foot"])
    return bones


def detect_up(bvh: BVH, bones: dict[str, tuple[int, int]]) -> str:
    """The axis pointing from the hips to the head in the rest pose, e.g. 'y' or '-z'."""
    rest = rest_positions(bvh)
    head = bones["neck"][1]
    hips = bones["torso"][0]
    v = rest[head] - rest[hips]
    if np.linalg.norm(v) < 1e-9:
        raise MotionError(f"{bvh.source}: head and hips coincide in the rest pose; give 'up'")
    axis = int(np.argmax(np.abs(v)))
    return ("" if v[axis] > 0 else "-") + UP_AXES[axis]


# ---- loading ------------------------------------------------------------------------------


def _resolve_bones(bvh: BVH, bones: dict[str, tuple[str, str]]) -> dict[str, tuple[int, int]]:
    index = {n: i for i, n in enumerate(bvh.names)}
    lower = {n.lower(): i for i, n in enumerate(bvh.names)}
    out = {}
    for joint, (a, b) in bones.items():
        ia = index.get(a, lower.get(a.lower()))
        ib = index.get(b, lower.get(b.lower()))
        if ia is None or ib is None:
            missing = a if ia is None else b
            raise MotionError(f"{bvh.source}: bone {joint!r} names unknown BVH joint {missing!r}")
        out[joint] = (ia, ib)
    return out


def _read_bvh(path: Path) -> BVH:
    """load_bvh, cached until the file changes (the motions are read on every request)."""
    try:
        stamp = _file_stamp(Path(path))
    except OSError:
        return load_bvh(path)  # raises the BVHError that names the file
    return _read_bvh_cached(stamp, str(path))


@functools.lru_cache(maxsize=32)
def _read_bvh_cached(stamp: tuple[str, int, int], shown_as: str) -> BVH:
    return load_bvh(shown_as)


def motion_from_spec(spec: MotionSpec, bvh: BVH | None = None, up: str | None = None) -> Motion:
    """Load (or take) the spec's BVH, trim it and complete its bone map and up axis."""
    if bvh is None:
        bvh = _read_bvh(spec.file)
    if spec.start_frame >= bvh.n_frames:
        raise MotionError(f"{bvh.source}: start frame {spec.start_frame} >= {bvh.n_frames} frames")
    bvh = bvh.trimmed(spec.start_frame, spec.end_frame)
    names = dict(spec.bones)
    if set(names) != set(DRIVEN_JOINTS):
        names = {**auto_bones(bvh), **names}
    bones = _resolve_bones(bvh, names)
    up = up or spec.up
    if up is not None and up.lstrip("+-") not in UP_AXES:
        raise MotionError(f"up must be one of x, y, z, got {up!r}")
    resolved_up = up.lstrip("+") if up else detect_up(bvh, bones)
    return Motion(spec=replace(spec, bones=names), bvh=bvh, up=resolved_up, bones=bones)


def load_motion(
    name_or_path: str | Path,
    *,
    up: str | None = None,
    table: dict[str, MotionSpec] | None = None,
) -> Motion:
    """A motion from the table by name, or a `.bvh` file by path (configured from its names).

    Only names ending in `.bvh` are read as paths, so a name taken from a request can never
    open another file; a service should still accept table names only.
    """
    key = str(name_or_path)
    if table is None and not key.lower().endswith(".bvh"):
        table = load_motion_table()
    if table is not None and key in table:
        return motion_from_spec(table[key], up=up)
    path = Path(key)
    if path.suffix.lower() == ".bvh":
        try:
            bvh = _read_bvh(path)
        except BVHError as exc:
            raise MotionError(str(exc)) from exc
        spec = MotionSpec(name=path.stem, file=path.resolve())
        return motion_from_spec(spec, bvh=bvh, up=up)
    known = ", ".join(table) if table else "none"
    raise MotionError(f"unknown motion {key!r}; known: {known}")
