"""TorchServe handler for `drawn_humanoid_segmenter`: cropped figure -> the figure's mask.

Answers ``{"mask": "<base64 PNG, 0/255, the crop's size>", "score": s}``: the figure's filled
silhouette at the crop's own pixels, from the crop seen as it is and mirrored (see
`torchserve.model.segmenter`), and the network's mean confidence over it. AnimatedDrawings
has no such model; the gateway falls back to its OpenCV segmentation when TorchServe does
not serve this one.
"""

from __future__ import annotations

import base64
from pathlib import Path

import cv2
import numpy as np
import torch

from torchserve.handlers.base import Batch, ImageModelHandler, to_cpu
from torchserve.model import View, decode_views, load_segmenter, segmenter_views


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

    def prepare(
        self, image: np.ndarray
    ) -> tuple[torch.Tensor, tuple[tuple[View, ...], tuple[int, int]]]:
        model_input, views = segmenter_views(image, self.model.size)
        return model_input, (views, image.shape[:2])

    def inference(self, batch: Batch) -> torch.Tensor | None:
        if not batch.inputs:
            return None
        # (N, V, 5, S, S): every view of every crop in one forward pass.
        inputs = torch.stack(batch.inputs)
        with torch.inference_mode():
            logits = self.model(inputs.flatten(0, 1).to(self.device))
        return to_cpu(logits.unflatten(0, inputs.shape[:2]))

    def describe(self, outputs: torch.Tensor, metas: list[tuple]) -> list[dict]:
        answers = []
        for output, (views, shape) in zip(outputs, metas, strict=True):
            mask, score = decode_views(output, views, shape)
            answers.append({"mask": encode_mask(mask), "score": score})
        return answers
