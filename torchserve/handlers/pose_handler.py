"""TorchServe handler for `drawn_humanoid_pose_estimator`: cropped figure -> 17 joints.

Answers ``[{"keypoints": [[x, y, score] x 17]}]`` in the crop's pixels, COCO order, the
format of AnimatedDrawings' pose estimator, so either archive serves the gateway.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from torchserve.handlers.base import ImageModelHandler
from torchserve.model import Letterbox, decode_keypoints, load_pose, pose_input


class PoseHandler(ImageModelHandler):
    def load_model(self, weights: Path, device: torch.device) -> torch.nn.Module:
        return load_pose(str(weights), device)

    def prepare(self, image: np.ndarray) -> tuple[torch.Tensor, Letterbox]:
        model_input, letterbox = pose_input(image, self.model.size)
        return model_input[0], letterbox

    def describe(self, outputs: torch.Tensor, metas: list[Letterbox]) -> list[list[dict]]:
        return [
            [{"keypoints": decode_keypoints(output, letterbox)}]
            for output, letterbox in zip(outputs, metas, strict=True)
        ]
