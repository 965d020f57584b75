"""Retargeting: a 3D BVH motion drives a flat character's 16 joints in its own pixels.

Per output frame:
1. BVH joint positions (forward kinematics) are interpolated at the wanted time.
2. Each limb group is projected onto a picture plane: the front view (the figure faces
   the viewer, so the BVH's left side lands on the image's right), the vertical plane
   that best fits that limb's motion (arms reaching forward would vanish in a front
   view; in their own plane they read as reaching out, each to its own side), or the
   side view (sagittal: the figure's forward is the image's right for every group so
   projected, so two arms reaching forward both point that way, as in a profile).
3. Each character bone points where its driving BVH bone points in 2D and keeps the
   character's own length, so the drawing never stretches.
4. The root moves with the BVH hips, scaled by character leg length / BVH leg length;
   vertically the lowest foot stays on the ground line (the lowest foot of the rest
   drawing) whenever the BVH's feet are on its floor, and rises when the BVH leaves it.
"""

from __future__ import annotations

import numpy as np

from animation.bvh import rest_positions
from animation.motions import LIMB_GROUPS, Motion
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX, Skeleton

_UNIT = {"x": 0, "y": 1, "z": 2}
_SIDE = {"left": 1.0, "right": -1.0}
# A bone whose projection is short against its 3D length points nearly at the camera and
# its 2D direction is noise (it flips as the bone passes the view axis). Below _FORESHORTENED
# of its length it keeps the drawing's direction; up to _CLEAR it blends into the BVH's.
_FORESHORTENED, _CLEAR = 0.05, 0.25
_CHARACTER_LEGS = [
    (JOINT_INDEX[f"{side}_hip"], JOINT_INDEX[f"{side}_knee"], JOINT_INDEX[f"{side}_foot"])
    for side in ("left", "right")
]


def _axis_vector(up: str) -> np.ndarray:
    v = np.zeros(3)
    v[_UNIT[up[-1]]] = -1.0 if up.startswith("-") else 1.0
    return v


def body_frame(motion: Motion, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit `up` and `lateral` (the BVH figure's left) vectors from the first frame."""
    up = _axis_vector(motion.up)
    left_hip, right_hip = motion.bones["left_hip"][1], motion.bones["right_hip"][1]
    left_arm, right_arm = motion.bones["left_elbow"][0], motion.bones["right_elbow"][0]
    across = (positions[0, left_hip] - positions[0, right_hip]) + (
        positions[0, left_arm] - positions[0, right_arm]
    )
    across = across - up * (across @ up)
    norm = np.linalg.norm(across)
    if norm < 1e-9:  # left and right coincide: fall back to the usual BVH convention
        across = np.array([1.0, 0.0, 0.0]) if up[0] == 0 else np.array([0.0, 1.0, 0.0])
        across = across - up * (across @ up)
        norm = np.linalg.norm(across)
    return up, across / norm


def _group_basis(
    motion: Motion, positions: np.ndarray, group: str, up: np.ndarray, lateral: np.ndarray
) -> np.ndarray:
    """(2, 3) rows mapping a 3D vector to picture (x right, y down) for one limb group."""
    projection = motion.spec.projection_of(group)
    if projection == "front":
        return np.stack([lateral, -up])
    if projection == "sagittal":
        # BVH is right-handed, so left x up is the way the figure faces, whatever its axes.
        return np.stack([np.cross(lateral, up), -up])
    # Best-fit vertical plane: its horizontal axis is the main horizontal direction the
    # limb's bones take over the clip.
    vectors = np.concatenate(
        [
            positions[:, b] - positions[:, a]
            for a, b in (motion.bones[j] for j in LIMB_GROUPS[group])
        ]
    )
    horizontal = vectors - np.outer(vectors @ up, up)
    _, spread, vt = np.linalg.svd(horizontal, full_matrices=False)
    axis = vt[0] - up * (vt[0] @ up)
    scale = np.linalg.norm(vectors, axis=1).mean()
    if spread[0] < 1e-3 * scale * np.sqrt(len(vectors)) or np.linalg.norm(axis) < 0.5:
        return np.stack([lateral, -up])  # the limb only ever points up or down: any plane will do
    axis /= np.linalg.norm(axis)
    # Orient it so the limb reaches out to its own side of the picture (the BVH's left
    # arm to the image's right), keeping the mirror of the front view.
    side = _SIDE.get(group.split("_")[0], 0.0)
    reach = horizontal.mean(axis=0) @ axis if side else axis @ lateral
    if (side or 1.0) * reach < 0:
        axis = -axis
    return np.stack([axis, -up])


def _interpolate(positions: np.ndarray, frame_time: float, times_s: np.ndarray) -> np.ndarray:
    """Positions at arbitrary times, linear between neighbouring source frames."""
    t = np.clip(np.asarray(times_s, dtype=np.float64) / frame_time, 0, positions.shape[0] - 1)
    i0 = np.minimum(np.floor(t).astype(np.int64), positions.shape[0] - 1)
    i1 = np.minimum(i0 + 1, positions.shape[0] - 1)
    w = (t - i0)[:, None, None]
    return positions[i0] * (1 - w) + positions[i1] * w


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


def retarget(skeleton: Skeleton, motion: Motion, times_s: np.ndarray) -> np.ndarray:
    """Character joint positions (F, 16, 2) in the texture's pixels at each time."""
    all_pos = motion.bvh.positions
    up, lateral = body_frame(motion, all_pos)
    pos = _interpolate(all_pos, motion.bvh.frame_time, times_s)
    n_frames = pos.shape[0]
    rest = skeleton.rest
    lengths = skeleton.bone_lengths()

    # 2D direction of every character bone, each limb group in its own picture plane.
    direction = np.zeros((n_frames, len(JOINTS), 2))
    for group, joints in LIMB_GROUPS.items():
        basis = _group_basis(motion, all_pos, group, up, lateral)
        for joint in joints:
            a, b = motion.bones[joint]
            v3 = pos[:, b] - pos[:, a]
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

    # Chain the bones from the root: the character keeps its own bone lengths.
    pose = np.zeros((n_frames, len(JOINTS), 2))
    for j, p in enumerate(PARENT_INDEX):
        if p >= 0:
            pose[:, j] = pose[:, p] + lengths[j] * direction[:, j]

    # Root: horizontal hips displacement scaled by the leg-length ratio; vertical from the
    # feet, so that grounded BVH feet mean grounded character feet.
    legs = list(motion.leg_joints.values())
    bvh_leg = _leg_length(rest_positions(motion.bvh), legs)
    char_leg = _leg_length(rest, _CHARACTER_LEGS)
    scale = char_leg / max(bvh_leg, 1e-12)
    hips = motion.bones["torso"][0]
    dx = (pos[:, hips] - all_pos[0, hips]) @ lateral * scale
    feet_3d = _descendants(motion.bvh.parents, [c for _, _, c in legs])  # ankles, toes, tips
    floor = (all_pos[:, feet_3d] @ up).min()
    lift = (pos[:, feet_3d] @ up).min(axis=1) - floor
    feet = [JOINT_INDEX["left_foot"], JOINT_INDEX["right_foot"]]
    ground = rest[feet, 1].max()
    lowest = pose[:, feet, 1].max(axis=1)
    root = np.stack([rest[0, 0] + dx, ground - lowest - lift * scale], axis=1)
    return pose + root[:, None, :]
