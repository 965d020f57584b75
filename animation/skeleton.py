"""The 16-joint character skeleton of AnimatedDrawings and its mapping from COCO keypoints."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

JOINTS: tuple[str, ...] = (
    "root", "hip", "torso", "neck",
    "right_shoulder", "right_elbow", "right_hand",
    "left_shoulder", "left_elbow", "left_hand",
    "right_hip", "right_knee", "right_foot",
    "left_hip", "left_knee", "left_foot",
)  # fmt: skip

PARENT: dict[str, str | None] = {
    "root": None, "hip": "root", "torso": "hip", "neck": "torso",
    "right_shoulder": "torso", "right_elbow": "right_shoulder", "right_hand": "right_elbow",
    "left_shoulder": "torso", "left_elbow": "left_shoulder", "left_hand": "left_elbow",
    "right_hip": "root", "right_knee": "right_hip", "right_foot": "right_knee",
    "left_hip": "root", "left_knee": "left_hip", "left_foot": "left_knee",
}  # fmt: skip

JOINT_INDEX: dict[str, int] = {name: i for i, name in enumerate(JOINTS)}
PARENT_INDEX: np.ndarray = np.array(
    [-1 if PARENT[n] is None else JOINT_INDEX[PARENT[n]] for n in JOINTS], dtype=np.int64
)

COCO_KEYPOINTS: tuple[str, ...] = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
    "left_wrist", "right_wrist", "left_hip", "right_hip",
    "left_knee", "right_knee", "left_ankle", "right_ankle",
)  # fmt: skip

# Limb joints taken straight from one COCO keypoint; root, hip and torso are midpoints.
_FROM_COCO = {
    "neck": "nose",
    "right_shoulder": "right_shoulder", "right_elbow": "right_elbow", "right_hand": "right_wrist",
    "left_shoulder": "left_shoulder", "left_elbow": "left_elbow", "left_hand": "left_wrist",
    "right_hip": "right_hip", "right_knee": "right_knee", "right_foot": "right_ankle",
    "left_hip": "left_hip", "left_knee": "left_knee", "left_foot": "left_ankle",
}  # fmt: skip


@dataclass(frozen=True)
class Skeleton:
    """Joint locations of one character in its texture's pixels (x right, y down).

    `rest[i]` is the location of `JOINTS[i]`; the hierarchy is fixed (`PARENT_INDEX`).
    """

    rest: np.ndarray  # (16, 2) float64

    def __post_init__(self) -> None:
        rest = np.asarray(self.rest, dtype=np.float64)
        if rest.shape != (len(JOINTS), 2) or not np.all(np.isfinite(rest)):
            raise ValueError(f"skeleton needs {len(JOINTS)} finite [x, y] joints, got {rest.shape}")
        object.__setattr__(self, "rest", rest)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.rest[JOINT_INDEX[name]]

    def bone_lengths(self) -> np.ndarray:
        """Length of the bone ending at each joint (0 for the root)."""
        parent = np.where(PARENT_INDEX < 0, np.arange(len(JOINTS)), PARENT_INDEX)
        return np.linalg.norm(self.rest - self.rest[parent], axis=1)

    def to_char_cfg(self) -> list[dict]:
        """The `skeleton` list of an AnimatedDrawings `char_cfg.yaml`."""
        return [
            {"name": n, "loc": [round(float(x), 2), round(float(y), 2)], "parent": PARENT[n]}
            for n, (x, y) in zip(JOINTS, self.rest, strict=True)
        ]

    @classmethod
    def from_char_cfg(cls, joints: list[dict]) -> Skeleton:
        """Read the `skeleton` list of a `char_cfg.yaml`; extra joints are ignored."""
        by_name = {}
        for j in joints:
            if not isinstance(j, dict) or "name" not in j or "loc" not in j:
                raise ValueError(f"skeleton entry needs 'name' and 'loc': {j!r}")
            by_name[str(j["name"])] = j["loc"]
        missing = [n for n in JOINTS if n not in by_name]
        if missing:
            raise ValueError(f"skeleton lacks joints: {', '.join(missing)}")
        return cls(np.array([[float(v) for v in by_name[n][:2]] for n in JOINTS]))

    @classmethod
    def from_coco(cls, keypoints: np.ndarray) -> Skeleton:
        """Build the rig from 17 COCO keypoints `[x, y(, score)]` as AnimatedDrawings does."""
        kp = np.asarray(keypoints, dtype=np.float64)
        if kp.ndim != 2 or kp.shape[0] != len(COCO_KEYPOINTS) or kp.shape[1] < 2:
            raise ValueError(f"need 17 COCO keypoints [x, y], got shape {kp.shape}")
        coco = {n: kp[i, :2] for i, n in enumerate(COCO_KEYPOINTS)}
        mid_hips = (coco["left_hip"] + coco["right_hip"]) / 2
        loc = {"root": mid_hips, "hip": mid_hips,
               "torso": (coco["left_shoulder"] + coco["right_shoulder"]) / 2}  # fmt: skip
        loc.update({joint: coco[kp_name] for joint, kp_name in _FROM_COCO.items()})
        return cls(np.stack([loc[n] for n in JOINTS]))
