"""Drawn-figure segmenter: the figure's filled silhouette in a crop, as AnimatedDrawings'
masks are (its strokes, fills and what they enclose, its separate limbs; not the paper,
nor what lies against it).

The crop (the detector's box plus the gateway's margin) is letterboxed to ``size`` x
``size`` RGB, with two hint channels (``outline.outline_hints``: the ink, and what the ink
shuts off from the crop's edge). An encoder down to stride 32, with the whole input's mean
features added
back there, sees the whole figure (what is figure and what is a ball it holds, or whether
bare paper lies inside a big round body or beside it, is a question of context); a
top-down decoder brings that back to
stride 4, and a last layer at stride 2 fuses it with the stem's fine features, so a stroke
one input pixel wide still shows in the logits. The logits are then resampled bilinearly
straight to the crop's own pixels (never a thresholded low-resolution mask scaled up) and
thresholded there, so edges and thin limbs keep the crop's resolution.

Served, the network sees each crop twice (``segmenter_views``): as it is and mirrored; the
two logits, each resampled to the crop's pixels (the mirrored one mirrored back), are
averaged before the threshold (``decode_views``). Its mistakes on one view change with
where the crop's edges fall (a box a few pixels off fills the bay between two limbs, or
leaves a tail's outline open) and are not the same on the mirror image: averaged, they
partly cancel (docs/BENCHMARKS.md, section `mirrored`).

The network learns the drawing's own silhouette, which does not depend on the crop's
resolution. The served mask is drawn as AnimatedDrawings' masks are: that silhouette grown
by ``MASK_MARGIN_PX`` of the crop's pixels, and the holes it then has filled.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .layers import Backbone, ConvBNReLU, SquareInputNet, TopDown, load_network
from .outline import HINT_CHANNELS, enclosed, outline_hints
from .transforms import Letterbox, letterbox, to_tensor

SEGMENTER_FORMAT = "drawn-humanoid-segmenter/1"
NECK_CHANNELS = 48
FINE_CHANNELS = 16
THRESHOLD = 0.5  # probability above which a crop pixel is the figure's
# AnimatedDrawings' masks run this far outside the ink at any crop size (as on the real
# drawings; torchserve.training.synth labels its masks the same way, MASK_MARGIN_PX there).
MASK_MARGIN_PX = 2


class GlobalContext(nn.Module):
    """Adds what the whole input looks like (its mean features, through a 1x1 conv) to every
    cell: the coarsest cells then know where the figure's outline runs however far away."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.project = nn.Sequential(nn.Conv2d(channels, channels, 1), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.project(F.adaptive_avg_pool2d(x, 1))


class SegmenterNet(SquareInputNet):
    """Input (N, 5, S, S): normalised RGB and the two hints -> (N, 1, S/2, S/2) logits."""

    stride = 2

    def __init__(self, size: int = 256, widths: tuple[int, ...] = (32, 64, 96, 128)) -> None:
        super().__init__(size, widths)
        # Stem at stride 2, stages at strides 4 to 32.
        self.backbone = Backbone(list(widths), [1, 1, 2, 1], in_channels=3 + HINT_CHANNELS)
        self.context = GlobalContext(widths[-1])
        self.neck = TopDown(list(widths), NECK_CHANNELS)  # back to stride 4
        self.fuse = ConvBNReLU(NECK_CHANNELS + widths[0] // 2, FINE_CHANNELS)
        self.head = nn.Conv2d(FINE_CHANNELS, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stem = self.backbone.stem(x)
        features, y = [], stem
        for stage in self.backbone.stages:
            y = stage(y)
            features.append(y)
        features[-1] = self.context(features[-1])
        y = F.interpolate(
            self.neck(features), size=stem.shape[-2:], mode="bilinear", align_corners=False
        )
        return self.head(self.fuse(torch.cat([y, stem], dim=1)))


def upsample_logits(logits: torch.Tensor, stride: int) -> torch.Tensor:
    """(N, 1, h, w) logits -> (N, 1, h*stride, w*stride) at input resolution (bilinear, the
    same half-pixel convention as ``logits_to_crop``); what training scores."""
    return F.interpolate(logits, scale_factor=stride, mode="bilinear", align_corners=False)


def input_tensor(squares: np.ndarray, hints: np.ndarray) -> torch.Tensor:
    """uint8 RGB (N, S, S, 3) and their hints (N, 2, S, S) -> the input (N, 5, S, S)."""
    return torch.cat([to_tensor(squares), torch.from_numpy(np.ascontiguousarray(hints))], dim=1)


def segmenter_input(crop: np.ndarray, size: int) -> tuple[torch.Tensor, Letterbox]:
    """RGB uint8 (H, W, 3) crop of one figure -> the input tensor (1, 5, size, size) and the
    letterbox that maps its coordinates back to the crop's pixels."""
    square, box = letterbox(crop, size)
    height, width = crop.shape[:2]
    valid = np.zeros((size, size), bool)
    x0, y0 = int(box.pad_x), int(box.pad_y)
    valid[
        y0 : y0 + max(1, round(height * box.scale)), x0 : x0 + max(1, round(width * box.scale))
    ] = True
    return input_tensor(square[None], outline_hints(square, valid)[None]), box


def logits_to_crop(logits: np.ndarray, box: Letterbox, shape: tuple[int, int]) -> np.ndarray:
    """One crop's logits (h, w) at the network's stride -> float32 logits (H, W) at the
    crop's pixels (``shape`` = (H, W)), bilinear, in one warp."""
    stride = box.size / logits.shape[-1]
    m = box.matrix()  # crop pixels -> input pixels
    # Input pixel x lies at logit cell (x + 0.5) / stride - 0.5.
    to_cell = np.array(
        [
            [m[0, 0] / stride, 0.0, (m[0, 2] + 0.5) / stride - 0.5],
            [0.0, m[1, 1] / stride, (m[1, 2] + 0.5) / stride - 0.5],
        ]
    )
    height, width = shape
    return cv2.warpAffine(
        np.ascontiguousarray(logits, dtype=np.float32),
        to_cell,
        (width, height),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_REPLICATE,
    )


def decode_mask(
    logits: torch.Tensor, box: Letterbox, shape: tuple[int, int]
) -> tuple[np.ndarray, float]:
    """One crop's segmenter output (1, h, w) -> (mask (H, W) bool at the crop's pixels,
    score): the silhouette the network sees, grown by MASK_MARGIN_PX and with its holes
    filled; the score is the mean probability of the network's cells that call the crop's
    pixels figure (0 when none does), how sure it is of what it calls figure."""
    return decode_views(logits[None], (View(box, mirrored=False),), shape)


@dataclass(frozen=True)
class View:
    """One view of a crop that the segmenter sees: its letterbox, and whether the crop was
    mirrored (left to right) before it."""

    letterbox: Letterbox
    mirrored: bool


def segmenter_views(crop: np.ndarray, size: int) -> tuple[torch.Tensor, tuple[View, ...]]:
    """RGB uint8 (H, W, 3) crop of one figure -> the inputs (2, 5, size, size) of its two
    views, the crop as it is and mirrored, and the views."""
    inputs, views = [], []
    for mirrored in (False, True):
        x, box = segmenter_input(np.ascontiguousarray(crop[:, ::-1]) if mirrored else crop, size)
        inputs.append(x)
        views.append(View(box, mirrored))
    return torch.cat(inputs), tuple(views)


def decode_views(
    logits: torch.Tensor, views: tuple[View, ...], shape: tuple[int, int]
) -> tuple[np.ndarray, float]:
    """One crop's segmenter outputs (V, 1, h, w) for its `views` -> (mask (H, W) bool,
    score) as ``decode_mask`` makes them, from the views' logits averaged at the crop's
    pixels; the score is the first view's (the crop as it is)."""
    cells = logits.detach().float().cpu().numpy()[:, 0]
    at_crop = []
    for c, view in zip(cells, views, strict=True):
        seen = logits_to_crop(c, view.letterbox, shape)
        at_crop.append(seen[:, ::-1] if view.mirrored else seen)
    mask = _served_mask(np.mean(at_crop, axis=0))
    return mask, _score(cells[0], views[0].letterbox, shape) if mask.any() else 0.0


def _served_mask(logits: np.ndarray) -> np.ndarray:
    """Logits (H, W) at the crop's pixels -> the served mask: the silhouette above
    THRESHOLD, grown by MASK_MARGIN_PX, its holes filled."""
    silhouette = logits > np.log(THRESHOLD / (1 - THRESHOLD))
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * MASK_MARGIN_PX + 1,) * 2)
    return enclosed(cv2.dilate(silhouette.astype(np.uint8), disc) > 0)


def _score(cells: np.ndarray, box: Letterbox, shape: tuple[int, int]) -> float:
    """The mean probability of the logit cells (h, w) over the crop (not the letterbox's
    padding) that call it figure; 0 when none does."""
    # From the cells, not the crop's pixels: a few thousand numbers, where the crop's own
    # pixels may be a million.
    stride = box.size / cells.shape[-1]
    height, width = shape
    x0, y0 = int(box.pad_x // stride), int(box.pad_y // stride)
    x1 = int(np.ceil((box.pad_x + width * box.scale) / stride))
    y1 = int(np.ceil((box.pad_y + height * box.scale) / stride))
    inside = cells[y0:y1, x0:x1]
    figure = inside[inside > 0]
    if figure.size == 0:
        return 0.0
    return round(float((1.0 / (1.0 + np.exp(-figure))).mean()), 4)


def load_segmenter(path: str, device: str | torch.device = "cpu") -> SegmenterNet:
    """The segmenter saved by ``torchserve.training segmenter``, in eval mode on ``device``."""
    return load_network(path, SEGMENTER_FORMAT, SegmenterNet, device)
