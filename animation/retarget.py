"""Retargeting: a 3D BVH motion drives a flat character's 16 joints in its own pixels.

Per output frame:
1. BVH joint positions (forward kinematics) are put in the performer's own frame
   (`orientation.py`: lateral, up, forward), so the axes, the unit and the way the
   performer faces in the file change nothing.
2. Each limb group is seen from its own side (`Views`): the front (the figure faces the
   viewer, so the BVH's left side lands on the image's right), the side (the figure's
   forward is the image's right, for every group so seen), or the vertical plane that
   best fits the group's bones over the clip. With projection `auto` (any BVH without a
   table entry) the motion decides: a group whose bones reach out sideways is seen from
   the front (a jumping jack opens out), one whose bones reach forward and back from the
   side (a zombie's arms reach forward, a walk strides), one in between in its best-fit
   plane. Both arms (both legs) are seen the same way, the right mirrored. The shoulder
   and hip lines are always seen from the front.
3. Each character bone points where its driving BVH bone points in 2D and keeps the
   character's own length, so the drawing never stretches.
4. The root moves with the BVH hips' sideways travel (in the performer's frame), scaled by
   character leg length / BVH leg length; vertically the lowest foot stays on the ground
   line (the lowest foot of the rest drawing) whenever the BVH's feet are on its floor,
   and rises when the BVH leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from animation.motions import LIMB_GROUPS, Motion
from animation.orientation import BodyAxes, body_axes
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX, Skeleton

# A bone whose projection is short against its 3D length points nearly at the camera and
# its 2D direction is noise (it flips as the bone passes the view axis). Below _FORESHORTENED
# of its length it keeps the drawing's direction; up to _CLEAR it blends into the BVH's.
_FORESHORTENED, _CLEAR = 0.05, 0.25
_CHARACTER_LEGS = [
    (JOINT_INDEX[f"{side}_hip"], JOINT_INDEX[f"{side}_knee"], JOINT_INDEX[f"{side}_foot"])
    for side in ("left", "right")
]
# Bones along the shoulder and hip lines: seen from the front whatever their group's view.
_GIRDLE = ("left_shoulder", "right_shoulder", "left_hip", "right_hip")
# Limb pairs that `auto` sees the same way (the right limb mirrored).
_PAIRS = {"arms": ("left_arm", "right_arm"), "legs": ("left_leg", "right_leg"), "torso": ("torso",)}
# `auto`: below this mean squared horizontal part (of unit bone directions) a group only
# points up and down and the front view shows it as well as any; a principal horizontal
# direction within _FRONT_DEG of the performer's left is seen from the front, beyond
# _SIDE_DEG from the side, in between in its own plane; with a second principal
# direction above _ISOTROPIC of the first (the group points every way) the front wins.
_VERTICAL, _FRONT_DEG, _SIDE_DEG, _ISOTROPIC = 0.02, 30.0, 60.0, 0.5
# The most a drawn head turns from the way it sits on the drawn torso, whatever the motion
# file says (the README's rules for drawn-figure motions).
MAX_HEAD_TILT_DEG = 25.0

LATERAL = np.array([1.0, 0.0, 0.0])  # body coordinates: (lateral, up, forward)
FORWARD = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class View:
    """How a limb group is seen: image x = `horizontal` (a unit body-frame direction with no
    up part), image y = down."""

    kind: str  # 'front' | 'side' | 'plane'
    horizontal: np.ndarray  # (3,) in body coordinates (lateral, up, forward)

    def basis(self) -> np.ndarray:
        """(2, 3) rows mapping a body-frame vector to picture (x right, y down)."""
        return np.stack([self.horizontal, [0.0, -1.0, 0.0]])


FRONT = View("front", LATERAL)
SIDE = View("side", FORWARD)


def _bone_vectors(motion: Motion, axes: BodyAxes, joints: tuple[str, ...]) -> np.ndarray:
    """Unit body-frame directions (F * len(joints), 3) of the BVH bones driving `joints`."""
    pos = motion.bvh.positions
    vectors = np.concatenate(
        [axes.body_coords(pos[:, b] - pos[:, a]) for a, b in (motion.bones[j] for j in joints)]
    )
    norm = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors[norm[:, 0] > 1e-12] / norm[norm[:, 0] > 1e-12]


def _plane_axis(vectors: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Principal horizontal direction (3,) of unit body-frame vectors (N, 3), its share of
    the vectors' length (mean squared horizontal part) and the second direction's ratio."""
    horizontal = vectors[:, [0, 2]]
    moment = horizontal.T @ horizontal / max(len(vectors), 1)
    values, directions = np.linalg.eigh(moment)
    main = directions[:, 1]
    ratio = float(values[0] / values[1]) if values[1] > 1e-12 else 1.0
    return np.array([main[0], 0.0, main[1]]), float(np.trace(moment)), ratio


def _auto_view(vectors: np.ndarray) -> View:
    """The view that shows unit body-frame bone directions (N, 3) best."""
    axis, spread, ratio = _plane_axis(vectors)
    if spread < _VERTICAL or ratio > _ISOTROPIC:
        return FRONT
    angle = np.degrees(np.arctan2(abs(axis[2]), abs(axis[0])))  # 0: sideways, 90: forward
    if angle <= _FRONT_DEG:
        return FRONT
    if angle >= _SIDE_DEG:
        return SIDE
    return View("plane", axis if axis[0] > 0 else -axis)  # outward goes outward, as in front


def _best_fit_view(vectors: np.ndarray, outward: float) -> View:
    """The table's `best_fit`: the group's own vertical plane, oriented so that the limb
    reaches out to its own side of the picture (`outward` +1 left limb, -1 right, 0 torso:
    the performer's left to the image's right)."""
    axis, spread, _ = _plane_axis(vectors)
    if spread < 1e-6:  # the limb only ever points up or down: any plane will do
        return FRONT
    reach = vectors.mean(axis=0) @ axis if outward else axis[0]
    if (outward or 1.0) * reach < 0:
        axis = -axis
    return View("plane", axis)


def choose_views(motion: Motion, axes: BodyAxes | None = None) -> dict[str, View]:
    """The view of every limb group (LIMB_GROUPS), from the table or from the motion."""
    axes = axes or motion_axes(motion)
    views: dict[str, View] = {}
    for groups in _PAIRS.values():
        auto = [g for g in groups if motion.spec.projection_of(g) == "auto"]
        if auto:
            pooled = []
            for g in auto:
                v = _bone_vectors(motion, axes, _group_bones(g))
                pooled.append(v * [-1.0, 1.0, 1.0] if g.startswith("right") else v)
            view = _auto_view(np.concatenate(pooled))
            for g in auto:
                mirrored = g.startswith("right") and view.kind == "plane"
                views[g] = View(view.kind, view.horizontal * [-1.0, 1.0, 1.0]) if mirrored else view
        for g in groups:
            projection = motion.spec.projection_of(g)
            if projection == "front":
                views[g] = FRONT
            elif projection == "sagittal":
                views[g] = SIDE
            elif projection == "best_fit":
                outward = {"left": 1.0, "right": -1.0}.get(g.split("_")[0], 0.0)
                views[g] = _best_fit_view(_bone_vectors(motion, axes, _group_bones(g)), outward)
    return views


def _group_bones(group: str) -> tuple[str, ...]:
    return tuple(j for j in LIMB_GROUPS[group] if j not in _GIRDLE)


def motion_axes(motion: Motion) -> BodyAxes:
    """The performer's frame in every source frame of the motion."""
    return body_axes(motion.bvh.positions, motion.roles, motion.up, motion.bvh.frame_time)


def _interpolate(values: np.ndarray, frame_time: float, times_s: np.ndarray) -> np.ndarray:
    """Per-source-frame values (F, ...) at arbitrary times, linear between neighbours."""
    t = np.clip(np.asarray(times_s, dtype=np.float64) / frame_time, 0, values.shape[0] - 1)
    i0 = np.minimum(np.floor(t).astype(np.int64), values.shape[0] - 1)
    i1 = np.minimum(i0 + 1, values.shape[0] - 1)
    w = (t - i0).reshape((-1,) + (1,) * (values.ndim - 1))
    return values[i0] * (1 - w) + values[i1] * w


def _descendants(parents: np.ndarray, roots: list[int]) -> list[int]:
    """The given joints and every joint below them (parents precede children in a BVH)."""
    inside = set(roots)
    for j, p in enumerate(parents):
        if p in inside:
            inside.add(j)
    return sorted(inside)


def _leg_length(points: np.ndarray, legs: list[tuple[int, int, int]]) -> float:
    return float(
        np.mean(
            [np.linalg.norm(points[a] - points[b]) + np.linalg.norm(points[b] - points[c])
             for a, b, c in legs]
        )
    )  # fmt: skip


def _directions(
    skeleton: Skeleton, motion: Motion, axes: BodyAxes, times_s: np.ndarray
) -> np.ndarray:
    """Unit 2D direction (F, 16, 2) of every character bone, each group in its own view."""
    # Every joint in the performer's frame at the output times (both steps are linear, so
    # bone vectors can be taken after them).
    body = _interpolate(axes.body_coords(motion.bvh.positions), motion.bvh.frame_time, times_s)
    rest = skeleton.rest
    views = choose_views(motion, axes)
    direction = np.zeros((len(times_s), len(JOINTS), 2))
    for group, joints in LIMB_GROUPS.items():
        for joint in joints:
            basis = (FRONT if joint in _GIRDLE else views[group]).basis()
            a, b = motion.bones[joint]
            v3 = body[:, b] - body[:, a]
            v2 = v3 @ basis.T
            n2 = np.linalg.norm(v2, axis=1)
            n3 = np.linalg.norm(v3, axis=1)
            j = JOINT_INDEX[joint]
            rest_dir = rest[j] - rest[PARENT_INDEX[j]]
            rest_dir = rest_dir / max(np.linalg.norm(rest_dir), 1e-12)
            w = np.clip(
                (n2 / np.maximum(n3, 1e-12) - _FORESHORTENED) / (_CLEAR - _FORESHORTENED), 0, 1
            )
            w = (w * w * (3 - 2 * w))[:, None]  # smoothstep: no jolt where blending starts
            d = w * v2 / np.maximum(n2, 1e-12)[:, None] + (1 - w) * rest_dir
            norm = np.linalg.norm(d, axis=1, keepdims=True)
            direction[:, j] = np.where(norm > 1e-6, d / np.maximum(norm, 1e-12), rest_dir)
    return direction


def _upright_head(skeleton: Skeleton, direction: np.ndarray) -> np.ndarray:
    """`direction` (F, 16, 2) with the head turned at most `MAX_HEAD_TILT_DEG` from the
    way it sits on the torso in the drawing: a drawn head is big and flat, and tilted
    further it folds into a shoulder or an elbow."""
    neck, torso = JOINT_INDEX["neck"], JOINT_INDEX["torso"]
    rest = skeleton.rest
    rest_head, rest_torso = rest[neck] - rest[torso], rest[torso] - rest[PARENT_INDEX[torso]]
    if min(np.linalg.norm(rest_head), np.linalg.norm(rest_torso)) < 1e-9:
        return direction

    def angle(v: np.ndarray) -> np.ndarray:
        return np.arctan2(v[..., 1], v[..., 0])

    sits = angle(rest_head) - angle(rest_torso)
    tilt = np.angle(np.exp(1j * (angle(direction[:, neck]) - angle(direction[:, torso]) - sits)))
    limit = np.radians(MAX_HEAD_TILT_DEG)
    kept = angle(direction[:, torso]) + sits + np.clip(tilt, -limit, limit)
    out = direction.copy()
    out[:, neck] = np.stack([np.cos(kept), np.sin(kept)], axis=1)
    return out


def _limb_depths(motion: Motion, axes: BodyAxes, times_s: np.ndarray) -> np.ndarray:
    """(F, 4): how far in front of the chest (+) or behind it (-) each limb's end is, per
    frame, for the left and right hand, then the left and right foot, in leg lengths.
    Depth is along the way the performer faces, whatever view a group is drawn in: a hand
    behind the back is behind the body however the arms are seen."""
    pos = motion.bvh.positions
    roles = motion.roles
    ends = [roles[f"{side}_{end}"] for end in ("hand", "foot") for side in ("left", "right")]
    forward = axes.body_coords(pos[:, ends] - pos[:, [roles["chest"]]])[..., 2]  # (S, 4)
    legs = [(roles[f"{s}_hip"], roles[f"{s}_knee"], roles[f"{s}_foot"]) for s in ("left", "right")]
    depth = _interpolate(forward, motion.bvh.frame_time, times_s)
    return depth / max(_leg_length(pos[0], legs), 1e-12)


def _frames_used(motion: Motion, times_s: np.ndarray) -> Motion:
    """The motion up to its last frame the times need: a long clip that is cut costs only
    what is shown, and is seen (views, facing) as what is shown."""
    needed = int(np.ceil(times_s.max(initial=0.0) / motion.bvh.frame_time)) + 2
    if needed >= motion.bvh.n_frames:
        return motion
    return replace(motion, bvh=motion.bvh.trimmed(0, needed))


def retarget(skeleton: Skeleton, motion: Motion, times_s: np.ndarray) -> np.ndarray:
    """Character joint positions (F, 16, 2) in the texture's pixels at each time (s)."""
    return retarget_with_depths(skeleton, motion, times_s)[0]


def retarget_with_depths(
    skeleton: Skeleton, motion: Motion, times_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`retarget`'s joints (F, 16, 2), and how far each limb's end is in front of the
    chest (F, 4: hands then feet, left first, in leg lengths; + in front): what the
    painter's order per frame is taken from (`parts.layer_ranks`)."""
    times_s = np.asarray(times_s, dtype=np.float64)
    motion = _frames_used(motion, times_s)
    pos = motion.bvh.positions
    axes = motion_axes(motion)
    direction = _upright_head(skeleton, _directions(skeleton, motion, axes, times_s))

    # Chain the bones from the root: the character keeps its own bone lengths.
    rest = skeleton.rest
    lengths = skeleton.bone_lengths()
    pose = np.zeros((len(times_s), len(JOINTS), 2))
    for j, p in enumerate(PARENT_INDEX):
        if p >= 0:
            pose[:, j] = pose[:, p] + lengths[j] * direction[:, j]

    # Root: the hips' sideways travel in the performer's own frame (frame by frame, so a
    # turn does not swing it) scaled by the leg-length ratio; vertical from the feet, so
    # that grounded BVH feet mean grounded character feet.
    roles = motion.roles
    legs = [(roles[f"{s}_hip"], roles[f"{s}_knee"], roles[f"{s}_foot"]) for s in ("left", "right")]
    scale = _leg_length(rest, _CHARACTER_LEGS) / max(_leg_length(pos[0], legs), 1e-12)
    hips = pos[:, roles["hips"]]
    step = ((hips[1:] - hips[:-1]) * axes.lateral[:-1]).sum(axis=1)
    sideways = np.concatenate([[0.0], np.cumsum(step)])
    feet_3d = _descendants(motion.bvh.parents, [c for _, _, c in legs])  # ankles, toes, tips
    height = (pos[:, feet_3d] @ axes.up).min(axis=1)
    lift = _interpolate(height - height.min(), motion.bvh.frame_time, times_s)
    dx = _interpolate(sideways, motion.bvh.frame_time, times_s) * scale
    feet = [JOINT_INDEX["left_foot"], JOINT_INDEX["right_foot"]]
    ground = rest[feet, 1].max()
    lowest = pose[:, feet, 1].max(axis=1)
    root = np.stack([rest[0, 0] + dx, ground - lowest - lift * scale], axis=1)
    return pose + root[:, None, :], _limb_depths(motion, axes, times_s)
