"""The motion table (`bvh/motions.yaml`), folders of BVH files, and motions loaded from them.

A motion is a BVH clip plus how to retarget it. With no configuration at all, which BVH
joint is which point of the body is found from the joint names and the hierarchy
(`roles.py`), which way is up and which way the performer faces from the motion
(`orientation.py`), and how each limb group is seen from the motion too (`retarget.py`).
A table entry (or the sidecar YAML of a file in a motions folder) may say any of it:

    file: walk.bvh          # relative to the table
    description: "..."
    start_frame: 0          # frame range, end exclusive; or start_s / end_s in seconds
    end_frame: null
    up: z                   # x | y | z, optionally signed; default: from the motion
    map: {left_elbow: LeftForeArm}   # role -> BVH joint, where the names mislead
    projection: auto        # auto | front | sagittal | best_fit, for every limb group
    limb_projection: {left_arm: sagittal}   # per limb group
    bones: {left_elbow: [LeftArm, LeftForeArm]}   # character joint -> [from, to] joints

`bones` is the older, lower-level form of `map`: the character bone ending at that joint
points the way from -> to does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from animation.bvh import BVH, FILE_LIMITS, BVHError, BVHLimits, load_bvh, rest_positions
from animation.orientation import detect_up
from animation.roles import ROLES, RoleError, bone_map, find_roles
from animation.roles import joint_role as joint_role  # re-exported: a motion's joint names
from animation.timing import ClipPlan, plan_clip

# The shipped motions: `bvh/` in the checkout, installed as this package (see setup.py).
BVH_DIR = Path(str(resources.files("animation.shipped_motions")))
MOTION_TABLE = BVH_DIR / "motions.yaml"

UP_AXES = ("x", "y", "z")
PROJECTIONS = ("auto", "front", "best_fit", "sagittal")
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
    """An unknown motion name, a bad table entry, or a BVH the retargeter cannot use.

    Reading a malformed BVH raises animation.bvh.BVHError instead (it names the line),
    except through load_motion, which turns it into a MotionError with the same message.
    """


@dataclass(frozen=True)
class MotionSpec:
    """One entry of the motion table: which file, which frames, how to retarget it."""

    name: str
    file: Path
    start_frame: int = 0
    end_frame: int | None = None  # exclusive; None = to the last frame
    up: str | None = None  # 'x' | 'y' | 'z' (optionally '-y'...), None = detect from the motion
    bones: dict[str, tuple[str, str]] = field(default_factory=dict)  # empty = from the roles
    projection: str = "auto"  # default for every limb group
    limb_projection: dict[str, str] = field(default_factory=dict)  # limb group -> projection
    description: str = ""
    joint_map: dict[str, str] = field(default_factory=dict)  # role -> BVH joint (`map:`)
    start_s: float | None = None  # a segment in seconds, after the frame range
    end_s: float | None = None
    group: str = ""  # dance, everyday, sport, silly...: how a listing groups it
    default: bool = True  # rendered when a request names no motion

    def projection_of(self, group: str) -> str:
        return self.limb_projection.get(group, self.projection)


@dataclass(frozen=True)
class Motion:
    """A spec with its BVH trimmed to the spec's frames and a complete bone map."""

    spec: MotionSpec
    bvh: BVH
    up: str  # resolved: one of 'x', 'y', 'z', '-x', '-y', '-z'
    bones: dict[str, tuple[int, int]]  # character joint -> (from, to) BVH joint indices
    roles: dict[str, int]  # every role in ROLES -> BVH joint index

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def duration_s(self) -> float:
        """Length of one loop: first frame to last frame."""
        return max(self.bvh.n_frames - 1, 1) * self.bvh.frame_time

    def plan(self, fps: float, max_frames: int) -> ClipPlan:
        """When to sample this motion for a render at `fps`, and what is cut."""
        return plan_clip(self.duration_s, fps, max_frames)


# ---- motion table -----------------------------------------------------------------------


def _parse_spec(name: str, entry: object, base: Path, source: object) -> MotionSpec:
    if not isinstance(entry, dict) or "file" not in entry:
        raise MotionError(f"{source}: motion {name!r} needs a mapping with 'file'")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise MotionError(f"{source}: motion {name!r}: unknown keys {sorted(unknown)}")

    def seconds(key: str) -> float | None:
        return None if entry.get(key) is None else float(entry[key])

    try:
        bones = {str(k): (str(v[0]), str(v[1])) for k, v in (entry.get("bones") or {}).items()}
        spec = MotionSpec(
            name=name,
            file=(base / str(entry["file"])).resolve(),
            start_frame=int(entry.get("start_frame") or 0),
            end_frame=None if entry.get("end_frame") is None else int(entry["end_frame"]),
            up=None if entry.get("up") is None else str(entry["up"]).lower(),
            bones=bones,
            projection=str(entry.get("projection", "auto")),
            limb_projection={
                str(k): str(v) for k, v in (entry.get("limb_projection") or {}).items()
            },
            description=str(entry.get("description", "")),
            joint_map={str(k): str(v) for k, v in (entry.get("map") or {}).items()},
            start_s=seconds("start_s"),
            end_s=seconds("end_s"),
            group=str(entry.get("group") or ""),
            default=_flag(entry.get("default", True)),
        )
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise MotionError(f"{source}: motion {name!r}: {exc}") from exc
    _check_spec(spec, source)
    return spec


_ENTRY_KEYS = {
    "file", "description", "start_frame", "end_frame", "start_s", "end_s", "up", "map",
    "projection", "limb_projection", "bones", "group", "default",
}  # fmt: skip


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"default must be true or false, got {value!r}")
    return value


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
    unknown = set(spec.joint_map) - set(ROLES)
    if unknown:
        raise MotionError(f"{where}: unknown roles in map: {sorted(unknown)}; roles: {ROLES}")
    if spec.start_frame < 0 or (spec.end_frame is not None and spec.end_frame <= spec.start_frame):
        raise MotionError(f"{where}: bad frame range [{spec.start_frame}, {spec.end_frame})")
    start, end = spec.start_s, spec.end_s
    if (start is not None and start < 0) or (end is not None and end <= (start or 0.0)):
        raise MotionError(f"{where}: bad segment start_s={start}, end_s={end}")


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is much faster


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


def motion_table(folder: str | Path | None = None) -> dict[str, MotionSpec]:
    """The shipped motion table, with every motion of `folder` (when given) added: a folder
    motion named like a shipped one replaces it. Parses every file of the folder: a bad one
    raises MotionError naming it (and its line)."""
    table = load_motion_table()
    return {**table, **load_motion_folder(folder)} if folder is not None else table


def default_motions(table: dict[str, MotionSpec] | None = None) -> list[str]:
    """The motions rendered when a request names none: those of the table not marked
    `default: false`."""
    table = table if table is not None else load_motion_table()
    return [name for name, spec in table.items() if spec.default]


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


def _check_bone_lengths(bvh: BVH, bones: dict[str, tuple[int, int]]) -> None:
    """MotionError when a driven bone has no length in the rest pose: it gives the character's
    bone no direction (a file whose OFFSETs are all zero, say)."""
    rest = rest_positions(bvh)
    lengths = {j: float(np.linalg.norm(rest[b] - rest[a])) for j, (a, b) in bones.items()}
    longest = max(lengths.values(), default=0.0)
    short = [j for j, length in lengths.items() if not length > 1e-9 * longest]
    if short:
        raise MotionError(
            f"{bvh.source}: the bones for {', '.join(short)} have no length in the rest pose "
            "(their joints' OFFSETs are zero)"
        )


def _roles_of_bones(bones: dict[str, tuple[int, int]]) -> dict[str, int]:
    """The body points a complete bone map drives from (its older, lower-level form)."""
    roles = {"hips": bones["torso"][0], "chest": bones["torso"][1]}
    roles["neck"], roles["head"] = bones["neck"]
    for side in ("left", "right"):
        roles[f"{side}_shoulder"], roles[f"{side}_elbow"] = bones[f"{side}_elbow"]
        roles[f"{side}_hand"] = bones[f"{side}_hand"][1]
        roles[f"{side}_hip"], roles[f"{side}_knee"] = bones[f"{side}_knee"]
        roles[f"{side}_foot"] = bones[f"{side}_foot"][1]
    return roles


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


def _segment(bvh: BVH, spec: MotionSpec) -> BVH:
    """The spec's frame range, then its segment in seconds (both ends included)."""
    if spec.start_frame >= bvh.n_frames:
        raise MotionError(f"{bvh.source}: start frame {spec.start_frame} >= {bvh.n_frames} frames")
    bvh = bvh.trimmed(spec.start_frame, spec.end_frame)
    if spec.start_s is None and spec.end_s is None:
        return bvh
    length_s = (bvh.n_frames - 1) * bvh.frame_time
    start = round((spec.start_s or 0.0) / bvh.frame_time)
    if start > bvh.n_frames - 2:
        raise MotionError(
            f"{bvh.source}: the segment starts at {spec.start_s:g} s, but the clip is "
            f"{length_s:.3f} s long"
        )
    end = bvh.n_frames if spec.end_s is None else round(spec.end_s / bvh.frame_time) + 1
    return bvh.trimmed(start, max(end, start + 2))


def motion_from_spec(
    spec: MotionSpec,
    bvh: BVH | None = None,
    up: str | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> Motion:
    """Load (or take) the spec's BVH, trim it and complete its roles, bones and up axis.

    `up` and `joint_map` (role -> BVH joint) add to the spec's own. Raises MotionError
    (a role that cannot be found says what was found and what is missing).
    """
    if bvh is None:
        bvh = _read_bvh(spec.file)
    bvh = _segment(bvh, spec)
    names = dict(spec.bones)
    given = {**spec.joint_map, **(joint_map or {})}
    unknown = set(given) - set(ROLES)
    if unknown:
        raise MotionError(
            f"unknown roles {sorted(unknown)} in the joint map; roles: {', '.join(ROLES)}"
        )
    if set(names) != set(DRIVEN_JOINTS) or given:
        try:
            auto = bone_map(find_roles(bvh, given), bvh.names)
        except RoleError as exc:
            raise MotionError(str(exc)) from exc
        names = {**auto, **names}
    bones = _resolve_bones(bvh, names)
    _check_bone_lengths(bvh, bones)
    roles = _roles_of_bones(bones)
    up = up or spec.up
    if up is not None and up.lstrip("+-") not in UP_AXES:
        raise MotionError(f"up must be one of x, y, z, got {up!r}")
    resolved_up = up.lstrip("+") if up else detect_up(bvh, roles)
    spec = replace(spec, bones=names, joint_map=given)
    return Motion(spec=spec, bvh=bvh, up=resolved_up, bones=bones, roles=roles)


def motion_from_bvh(
    bvh: BVH,
    name: str = "custom",
    *,
    joint_map: Mapping[str, str] | None = None,
    up: str | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
) -> Motion:
    """A motion from a parsed BVH (an upload: see animation.bvh.parse_bvh_bytes), with no
    configuration beyond what is given. Raises MotionError."""
    spec = MotionSpec(name=name, file=Path(bvh.source), start_s=start_s, end_s=end_s)
    _check_spec(spec, bvh.source)
    return motion_from_spec(spec, bvh=bvh, up=up, joint_map=joint_map)


def load_motion(
    name_or_path: str | Path,
    *,
    up: str | None = None,
    table: dict[str, MotionSpec] | None = None,
    joint_map: Mapping[str, str] | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
) -> Motion:
    """A motion from the table by name, or a `.bvh` file by path (configured from itself).

    `start_s`/`end_s` pick a segment (seconds into the table's frame range). Only names
    ending in `.bvh` are read as paths, so a name taken from a request can never open
    another file; a service should still accept table names only.
    """
    key = str(name_or_path)
    if table is None and not key.lower().endswith(".bvh"):
        table = load_motion_table()
    if table is not None and key in table:
        spec = table[key]
        bvh = None
    elif Path(key).suffix.lower() == ".bvh":
        try:
            bvh = _read_bvh(Path(key))
        except BVHError as exc:
            raise MotionError(str(exc)) from exc
        spec = MotionSpec(name=Path(key).stem, file=Path(key).resolve())
    else:
        known = ", ".join(table) if table else "none"
        raise MotionError(f"unknown motion {key!r}; known: {known}")
    if start_s is not None or end_s is not None:
        spec = replace(
            spec,
            start_s=start_s if start_s is not None else spec.start_s,
            end_s=end_s if end_s is not None else spec.end_s,
        )
        _check_spec(spec, "segment")
    return motion_from_spec(spec, bvh=bvh, up=up, joint_map=joint_map)


# ---- a folder of motions ------------------------------------------------------------------

MOTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def load_motion_folder(
    folder: str | Path, limits: BVHLimits = FILE_LIMITS
) -> dict[str, MotionSpec]:
    """Every `NAME.bvh` in `folder` as motion NAME, sorted by name, each checked now.

    A sidecar `NAME.yaml` beside the file may hold any key of a motion-table entry (`map`,
    `up`, `start_s`, `end_s`, `description`, `projection`, ...; `file` defaults to
    NAME.bvh). Every file is parsed and its roles found here, so that a bad file fails at
    start with a MotionError naming it (and the line, for a malformed BVH), not on the
    first request. Merge with the shipped table as `{**load_motion_table(), **folder}`:
    a folder motion with a shipped motion's name replaces it.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MotionError(f"{folder}: motions folder is not a directory")
    specs: dict[str, MotionSpec] = {}
    for path in sorted(folder.glob("*.bvh")) + sorted(folder.glob("*.BVH")):
        name = path.stem
        if not MOTION_NAME.match(name):
            raise MotionError(f"{path}: a motion name is letters, digits, '_' and '-' (1-64)")
        entry: dict = {"file": path.name}
        sidecar = path.with_suffix(".yaml")
        if sidecar.is_file():
            try:
                extra = yaml.load(sidecar.read_text(), Loader=_YAML_LOADER) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise MotionError(f"{sidecar}: cannot read: {exc}") from exc
            if not isinstance(extra, dict):
                raise MotionError(f"{sidecar}: needs a mapping of motion-table keys")
            entry = {**entry, **extra}
        spec = _parse_spec(name, entry, folder, sidecar if sidecar.is_file() else path)
        try:
            bvh = load_bvh(spec.file, limits)
        except BVHError as exc:
            raise MotionError(str(exc)) from exc
        motion_from_spec(spec, bvh=bvh)  # roles, up axis, segment: fail now, not later
        specs[name] = spec
    return specs


def motion_summary(motion: Motion, fps: float, max_frames: int) -> dict:
    """What a listing (the CLI's `motions`, the gateway's /motions) shows of a motion at
    `fps`: name, group, duration_s, fps, frames, rendered_s and cut_s (0 when nothing is
    cut), description and whether it is a default."""
    plan = motion.plan(fps, max_frames)
    return {
        "name": motion.name,
        "duration_s": round(motion.duration_s, 3),
        "fps": fps,
        "frames": plan.frames,
        "rendered_s": round(plan.rendered_s, 3),
        "cut_s": round(plan.cut_s, 3),
        "description": motion.spec.description,
        "group": motion.spec.group,
        "default": motion.spec.default,
    }
