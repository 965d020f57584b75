"""TorchServe handler for `drawn_humanoid_segmenter`: cropped figure -> the figure's mask.

Answers ``{"mask": "<base64 PNG, 0/255, the crop's size>", "score": s}``: the figure's filled
silhouette at the crop's own pixels (see `torchserve.model.segmenter`), and the network's
mean confidence over it. AnimatedDrawings has no such model; the gateway falls back to its
OpenCV segmentation when TorchServe does not serve this one.
"""

from __future__ import annotations

import base64
from pathlib import Path

import cv2
import numpy as np
import torch

from torchserve.handlers.base import ImageModelHandler
from torchserve.model import Letterbox, decode_mask, load_segmenter, segmenter_input


def encode_mask(mask: np.ndarray) -> str:
    """(H, W) bool -> base64 of a one-channel PNG, 0 and 255 (1-bit masks compress to
    a few kB at any crop size)."""
    ok, png = cv2.imencode(".png", mask.astype(np.uint8) * np.uint8(255))
    if not ok:  # cv2 fails only on an empty array, which decode_image never produces
        raise ValueError(f"could not encode a {mask.shape} mask as PNG")
    return base64.b64encode(png.tobytes()).decode("ascii")


class SegmenterHandler(ImageModelHandler):
    def load_model(self, weights: Path, device: torch.device) -> torch.nn.Module:
        return load_segmenter(str(weights), device)

    def prepare(self, image: np.ndarray) -> tuple[torch.Tensor, tuple[Letterbox, tuple]]:
        model_input, letterbox = segmenter_input(image, self.model.size)
        return model_input[0], (letterbox, image.shape[:2])

    def describe(self, outputs: torch.Tensor, metas: list[tuple]) -> list[dict]:
        answers = []
        for output, (letterbox, shape) in zip(outputs, metas, strict=True):
            mask, score = decode_mask(output, letterbox, shape)
            answers.append({"mask": encode_mask(mask), "score": score})
        return answers
