"""17-keypoint pose network for a cropped drawn figure: one heatmap per COCO joint.

The crop is letterboxed to ``size`` x ``size`` RGB. Each joint's heatmap (stride 4) is a
spatial softmax: a probability map of where that joint is. The decoded position is the
peak refined by the probability-weighted mean of its 5x5 neighbourhood (sub-cell accuracy),
and the score is the probability mass of the 3x3 cells around the peak.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .layers import Backbone, SquareInputNet, TopDown, load_network
from .transforms import Letterbox, letterbox, to_tensor

POSE_FORMAT = "drawn-humanoid-pose/1"

KEYPOINT_NAMES = (
    "nose",
    "left_eye",
    "right_eye",
    "left_ear",
    "right_ear",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
)
# Index of each joint's mirror image, for flip augmentation.
FLIP_INDEX = (0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15)


class PoseNet(SquareInputNet):
    """Input (N, 3, S, S) normalised RGB -> (N, 17, S/4, S/4) heatmap logits."""

    stride = 4

    def __init__(self, size: int = 128, widths: tuple[int, ...] = (32, 64, 128, 128)) -> None:
        super().__init__(size, widths)
        self.backbone = Backbone(list(widths), [0, 1, 2, 1])
        self.neck = TopDown(list(widths), 48)
        self.head = nn.Conv2d(48, len(KEYPOINT_NAMES), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.neck(self.backbone(x)))


def pose_input(crop: np.ndarray, size: int) -> tuple[torch.Tensor, Letterbox]:
    """RGB uint8 (H, W, 3) crop of one figure -> the pose input tensor (1, 3, size, size) and
    the letterbox that maps its coordinates back to the crop's pixels."""
    square, box = letterbox(crop, size)
    return to_tensor(square), box


def heatmap_coordinates(logits: torch.Tensor, stride: int) -> torch.Tensor:
    """Heatmap logits (..., K, h, w) -> (..., K, 3): x, y in input pixels, score in [0, 1]."""
    h, w = logits.shape[-2:]
    prob = torch.softmax(logits.flatten(-2).float(), dim=-1).unflatten(-1, (h, w))
    flat = prob.flatten(0, -3) if prob.ndim > 2 else prob[None]
    n = flat.shape[0]
    peak = flat.flatten(1).argmax(dim=1)
    py, px = peak // w, peak % w
    # The 5x5 window around each peak (zero beyond the border), probability-weighted.
    padded = F.pad(flat, (2, 2, 2, 2))
    offsets = torch.arange(-2, 3)
    rows = (py[:, None] + 2 + offsets)[:, :, None].expand(n, 5, 5)
    cols = (px[:, None] + 2 + offsets)[:, None, :].expand(n, 5, 5)
    window = padded[torch.arange(n)[:, None, None], rows, cols]
    mass = window.sum(dim=(1, 2)).clamp_min(1e-12)
    dy = (window.sum(dim=2) * offsets).sum(dim=1) / mass
    dx = (window.sum(dim=1) * offsets).sum(dim=1) / mass
    score = window[:, 1:4, 1:4].sum(dim=(1, 2))
    x = (px + dx + 0.5) * stride - 0.5
    y = (py + dy + 0.5) * stride - 0.5
    return torch.stack([x, y, score], dim=-1).reshape(*logits.shape[:-2], 3)


def decode_keypoints(logits: torch.Tensor, box: Letterbox) -> list[list[float]]:
    """One crop's pose output (17, h, w) -> ``[[x, y, score] x 17]`` in the crop's pixels."""
    stride = box.size // logits.shape[-1]
    points = heatmap_coordinates(logits.detach().cpu(), stride).numpy()
    points = box.to_source(points)
    return [[round(float(x), 1), round(float(y), 1), round(float(s), 4)] for x, y, s in points]


def load_pose(path: str, device: str | torch.device = "cpu") -> PoseNet:
    """The pose network saved by ``torchserve.training pose``, in eval mode on ``device``."""
    return load_network(path, POSE_FORMAT, PoseNet, device)
