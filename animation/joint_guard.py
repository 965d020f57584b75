"""Joints checked against the drawing before it is rigged.

A joint estimate can miss the ink it should drive: a hand placed on the paper beside a
tiny figure, an elbow on long hair, a "leg" inside a Christmas tree's crown. Rigged as it
is, such a limb swings a piece of the drawing that is no limb, or turns about a point off
the figure. So, before rigging:

- a joint off the figure is moved onto it (the nearest point of the mask), and
- a limb whose bone runs mostly over paper, or inside a blob as wide as the bone is long,
  is kept still: it moves with the part it hangs from.

`mask_warnings` reports both (`joints_outside`, `limb_kept_still`), so the answer says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from animation.parts import DRIVER, HANGS_FROM, limb_half_width, sample
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX

# A joint this far (px) off the mask or less counts as on it: it lies on the outline.
ON_MASK_PX = 1.5
# A limb whose bone has less than this share of its length on the mask, or near it (within
# `NEAR_INK` of the bone's length: a drawn stroke bends where the bone runs straight), runs
# over paper.
LEAST_ON_INK, NEAR_INK = 0.7, 0.2
# A limb whose half-width is more than this share of its bone's length is not a drawn limb.
BLOB_WIDTH = 1.0
_LIMBS = tuple(part for part in HANGS_FROM if part != "head")


@dataclass(frozen=True)
class GuardedJoints:
    """The skeleton as rigged, and what was changed to get it."""

    rest: np.ndarray  # (16, 2) joints, those off the figure moved onto it
    moved: tuple[str, ...]  # joints moved (names from skeleton.JOINTS)
    still: tuple[str, ...]  # limbs kept still (names from parts.PARTS)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The `mask_warnings.WARNINGS` codes that say what was changed."""
        return ("joint_moved",) * bool(self.moved) + ("limb_kept_still",) * bool(self.still)


def guard_joints(mask: np.ndarray, joints: np.ndarray) -> GuardedJoints:
    """Check (16, 2) skeleton `joints` against the (H, W) bool figure `mask` (same px)."""
    joints = np.asarray(joints, np.float64).copy()
    outside = cv2.distanceTransform((~mask).astype(np.uint8), cv2.DIST_L2, 5)
    far = float(sum(mask.shape))  # off the image: off the figure
    moved = []
    if mask.any():
        ys, xs = np.nonzero(mask)
        for j, name in enumerate(JOINTS):
            if sample(outside, joints[j][None], far)[0] > ON_MASK_PX:
                nearest = np.argmin((xs - joints[j, 0]) ** 2 + (ys - joints[j, 1]) ** 2)
                joints[j] = xs[nearest], ys[nearest]
                moved.append(name)
    inside = cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, 5)
    lengths = np.linalg.norm(joints - joints[np.maximum(PARENT_INDEX, 0)], axis=1)
    still = set()
    for part in _LIMBS:
        bone = JOINT_INDEX[DRIVER[part]]
        start, end = joints[PARENT_INDEX[bone]], joints[bone]
        steps = max(2, int(np.ceil(lengths[bone])) + 1)
        off = sample(outside, start + np.linspace(0, 1, steps)[:, None] * (end - start), far)
        on_ink = off <= max(ON_MASK_PX, NEAR_INK * lengths[bone])
        if on_ink.mean() < LEAST_ON_INK:
            still.add(part)
        elif limb_half_width(joints, inside, part) > BLOB_WIDTH * max(lengths[bone], 1e-6):
            still.add(part)
    for part, (parent, _) in HANGS_FROM.items():  # parents come first in HANGS_FROM
        if parent in still:
            still.add(part)
    return GuardedJoints(joints, tuple(moved), tuple(p for p in _LIMBS if p in still))
