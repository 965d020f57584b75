"""Drawn-figure detector: a CenterNet-style heatmap of figure centres plus box edges.

The network sees the photo letterboxed to ``size`` x ``size`` RGB and predicts, on a grid
of stride 8, a centre logit and the distances (left, top, right, bottom) from each cell's
centre to the figure's box edges, in cells. A figure is a local maximum of the centre
heatmap; its box is the heat-weighted mean of the boxes its neighbouring cells predict.

Two such networks are served together (`Detectors`): the figure detector, trained on pages
with one labelled figure, boxes a figure with all that is drawn joined to it (a tail, a
wing), but a group or a scene as one figure too; the person detector, the same network
trained further on pages with other people beside the figure (``--crowd``), boxes people
apart, but sometimes a tail or a title letter as one. The figure detector's box is
answered, narrowed to the person detector's best box only where that is one person well
inside it (`one_person`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .layers import Backbone, ConvBNReLU, SquareInputNet, TopDown, load_network
from .transforms import Letterbox, letterbox, to_tensor

DETECTOR_FORMAT = "drawn-humanoid-detector/1"
# The person detector's weights, beside the figure detector's (its .mar carries both).
PERSON_WEIGHTS = "person_detector.pt"


class DetectorNet(SquareInputNet):
    """Input (N, 3, S, S) normalised RGB -> (N, 5, S/8, S/8): centre logit, then l, t, r, b."""

    stride = 8

    def __init__(self, size: int = 256, widths: tuple[int, ...] = (32, 64, 96, 128)) -> None:
        super().__init__(size, widths)
        self.backbone = Backbone(list(widths), [0, 1, 1, 2])
        self.neck = TopDown(list(widths[1:]), widths[1])
        self.head = nn.Sequential(ConvBNReLU(widths[1], widths[1]), nn.Conv2d(widths[1], 5, 1))
        # A low prior on "figure here" keeps the focal loss calm in the first steps.
        nn.init.constant_(self.head[-1].bias[:1], -4.0)
        nn.init.constant_(self.head[-1].bias[1:], 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.backbone(x)[1:]  # strides 8, 16, 32
        return self.head(self.neck(features))


class Detectors(nn.Module):
    """The figure detector and, where shipped, the person detector, run on one input:
    (N, 3, S, S) -> (N, K, 5, S/8, S/8), K = 1 (figures) or 2 (figures, then people)."""

    def __init__(self, figures: DetectorNet, people: DetectorNet | None = None) -> None:
        super().__init__()
        if people is not None and people.size != figures.size:
            raise ValueError(f"person detector sees {people.size} px, figures {figures.size}")
        self.figures, self.people, self.size = figures, people, figures.size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nets = [self.figures] if self.people is None else [self.figures, self.people]
        return torch.stack([net(x) for net in nets], dim=1)


def detector_input(image: np.ndarray, size: int) -> tuple[torch.Tensor, Letterbox]:
    """RGB uint8 (H, W, 3) photo -> the detector's input tensor (1, 3, size, size) and the
    letterbox that maps its coordinates back to the photo's pixels."""
    square, box = letterbox(image, size)
    return to_tensor(square), box


def cell_boxes(output: torch.Tensor, stride: int) -> torch.Tensor:
    """Per-cell boxes (..., 4, h, w) as x1, y1, x2, y2 in input pixels from (..., 5, h, w)."""
    h, w = output.shape[-2:]
    ys = (torch.arange(h, dtype=output.dtype, device=output.device) + 0.5) * stride - 0.5
    xs = (torch.arange(w, dtype=output.dtype, device=output.device) + 0.5) * stride - 0.5
    ltrb = output[..., 1:5, :, :] * stride
    return torch.stack(
        [
            xs[None, :] - ltrb[..., 0, :, :],
            ys[:, None] - ltrb[..., 1, :, :],
            xs[None, :] + ltrb[..., 2, :, :],
            ys[:, None] + ltrb[..., 3, :, :],
        ],
        dim=-3,
    )


def _intersection(a: np.ndarray, b: np.ndarray) -> float:
    """The area two [x1, y1, x2, y2] boxes share."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return iw * ih


def box_iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two [x1, y1, x2, y2] boxes."""
    inter = _intersection(a, b)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def _share_inside(part: np.ndarray, whole: np.ndarray) -> float:
    """The share of box ``part``'s area inside box ``whole`` (both [x1, y1, x2, y2])."""
    area = (part[2] - part[0]) * (part[3] - part[1])
    return float(_intersection(part, whole) / area) if area > 0 else 0.0


# A box at least this share inside a better one, scoring at least PART_SCORE of its score,
# is a part of that figure (a bushy tail, a wing), not a second one beside it: the better
# box grows to hold it. The detector learns figures side by side, whose boxes barely meet.
PART_INSIDE, PART_SCORE = 0.5, 0.5


def decode_detections(
    output: torch.Tensor,
    box: Letterbox,
    image_size: tuple[int, int],
    *,
    min_score: float = 0.05,
    max_detections: int = 10,
    nms_iou: float = 0.5,
) -> list[dict[str, Any]]:
    """One image's detector output (5, h, w) -> ``[{"bbox": [x1, y1, x2, y2], "score": s}]``
    in the photo's pixels (``image_size`` = (width, height)), best first. A box mostly
    inside a better one (PART_INSIDE, PART_SCORE) widens that one instead of being listed."""
    output = output.detach().float().cpu()
    stride = box.size // output.shape[-1]
    heat = torch.sigmoid(output[0])
    peaks = (heat == F.max_pool2d(heat[None, None], 3, 1, 1)[0, 0]) & (heat >= min_score)
    boxes = cell_boxes(output, stride)  # (4, h, w)
    h, w = heat.shape
    ys, xs = torch.nonzero(peaks, as_tuple=True)
    order = torch.argsort(heat[ys, xs], descending=True)
    width, height = image_size
    kept: list[dict[str, Any]] = []
    for i in order.tolist():
        y, x = int(ys[i]), int(xs[i])
        # Averaging the neighbours' boxes, weighted by heat, cancels much of each cell's noise.
        y0, y1, x0, x1 = max(y - 1, 0), min(y + 2, h), max(x - 1, 0), min(x + 2, w)
        weights = heat[y0:y1, x0:x1]
        xyxy = (boxes[:, y0:y1, x0:x1] * weights).sum(dim=(1, 2)) / weights.sum()
        corners = box.to_source(xyxy.numpy().reshape(2, 2))
        corners[:, 0] = corners[:, 0].clip(0, width)
        corners[:, 1] = corners[:, 1].clip(0, height)
        bbox = corners.reshape(4)
        if bbox[2] - bbox[0] < 1 or bbox[3] - bbox[1] < 1:
            continue
        if any(box_iou(bbox, np.array(k["bbox"])) > nms_iou for k in kept):
            continue
        score = float(heat[y, x])
        whole = next(
            (
                k
                for k in kept
                if score >= PART_SCORE * k["score"]
                and _share_inside(bbox, np.array(k["bbox"])) >= PART_INSIDE
            ),
            None,
        )
        if whole is not None:
            grown = np.r_[
                np.minimum(whole["bbox"][:2], bbox[:2]), np.maximum(whole["bbox"][2:], bbox[2:])
            ]
            whole["bbox"] = [round(float(v), 1) for v in grown]
            continue
        kept.append({"bbox": [round(float(v), 1) for v in bbox], "score": score})
        if len(kept) == max_detections:
            break
    return kept


# The person detector narrows the figure box only to a person it is sure of, lying almost
# wholly inside the figure box and covering at most PERSON_AREA of it: a figure's own
# parts it boxes apart (a bushy tail) leave most of the figure box to the rest.
PERSON_SCORE, PERSON_INSIDE, PERSON_AREA = 0.5, 0.9, 0.6


def one_person(figures: list[dict[str, Any]], people: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figure detector's boxes (`decode_detections`, best first) with the best one
    narrowed to one person where it holds a group or a scene: the person detector's best
    box (of ``people``), scoring at least PERSON_SCORE, at least PERSON_INSIDE inside it and
    at most PERSON_AREA of its area, replaces it. The figure's score stays: whether there
    is a figure at all is the figure detector's call."""
    if not figures or not people or people[0]["score"] < PERSON_SCORE:
        return figures
    figure, person = np.array(figures[0]["bbox"]), np.array(people[0]["bbox"])
    area = (figure[2] - figure[0]) * (figure[3] - figure[1])
    narrower = (person[2] - person[0]) * (person[3] - person[1]) <= PERSON_AREA * area
    if not narrower or _share_inside(person, figure) < PERSON_INSIDE:
        return figures
    return [{**figures[0], "bbox": list(people[0]["bbox"])}, *figures[1:]]


def decode_figures(
    output: torch.Tensor, box: Letterbox, image_size: tuple[int, int]
) -> list[dict[str, Any]]:
    """One image's `Detectors` output (K, 5, h, w) -> the figures' boxes as
    `decode_detections` gives them, the best narrowed to one person (`one_person`) when the
    person detector ran too."""
    figures = decode_detections(output[0], box, image_size)
    if len(output) < 2:
        return figures
    return one_person(figures, decode_detections(output[1], box, image_size))


def load_detector(path: str, device: str | torch.device = "cpu") -> DetectorNet:
    """The detector saved by ``torchserve.training detector``, in eval mode on ``device``."""
    return load_network(path, DETECTOR_FORMAT, DetectorNet, device)


def person_weights(path: str | Path) -> Path | None:
    """The person detector's weights beside the figure detector's at ``path``, if there."""
    people = Path(path).with_name(PERSON_WEIGHTS)
    return people if people.is_file() else None


def load_detectors(path: str, device: str | torch.device = "cpu") -> Detectors:
    """The figure detector at ``path`` with the person detector beside it
    (`person_weights`), if it is there, in eval mode on ``device``."""
    people = person_weights(path)
    return Detectors(
        load_detector(path, device),
        load_detector(str(people), device) if people is not None else None,
    ).eval()
