"""TorchServe handler for `drawn_humanoid_detector`: photo -> figures' boxes, best first.

Answers ``[{"bbox": [x1, y1, x2, y2], "score": s}, ...]`` in the posted image's pixels, the
format of AnimatedDrawings' detector, so either archive serves the gateway. The archive
carries the person detector beside the figure detector; the best box is narrowed to one
person where the figure detector boxed a group or a scene (`torchserve.model.detector`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from torchserve.handlers.base import ImageModelHandler
from torchserve.model import decode_figures, detector_input, load_detectors


class DetectorHandler(ImageModelHandler):
    def load_model(self, weights: Path, device: torch.device) -> torch.nn.Module:
        return load_detectors(str(weights), device)

    def prepare(self, image: np.ndarray) -> tuple[torch.Tensor, tuple]:
        model_input, letterbox = detector_input(image, self.model.size)
        height, width = image.shape[:2]
        return model_input[0], (letterbox, (width, height))

    def describe(self, outputs: torch.Tensor, metas: list[tuple]) -> list[list[dict]]:
        return [
            decode_figures(output, letterbox, image_size)
            for output, (letterbox, image_size) in zip(outputs, metas, strict=True)
        ]
