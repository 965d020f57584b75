"""The figures the models are judged by: box IoU, recall at IoU 0.5, PCK@0.1, mask IoU and
the share of joints a mask holds."""

from __future__ import annotations

import numpy as np

from torchserve.model.detector import box_iou

PCK_THRESHOLD = 0.1  # of the figure box's longer side


def pck_hits(pred: np.ndarray, truth: np.ndarray, bbox: np.ndarray) -> np.ndarray:
    """Per joint: 1 if the prediction is within PCK_THRESHOLD x the box's longer side of the
    truth, 0 if not, NaN where the joint is not labelled visible. (17, 2+) inputs."""
    side = max(bbox[2] - bbox[0], bbox[3] - bbox[1])
    dist = np.hypot(pred[:, 0] - truth[:, 0], pred[:, 1] - truth[:, 1])
    hits = (dist <= PCK_THRESHOLD * side).astype(np.float64)
    hits[truth[:, 2] <= 0] = np.nan
    return hits


def mask_iou(found: np.ndarray, truth: np.ndarray) -> float:
    """Intersection over union of two same-shaped bool masks (1.0 when both are empty)."""
    union = np.count_nonzero(found | truth)
    return float(np.count_nonzero(found & truth) / union) if union else 1.0


def share_inside(mask: np.ndarray, points: np.ndarray) -> float:
    """The share of ``points`` (N, 2+), x, y in the mask's pixels (rounded, clipped to it),
    that fall on the (H, W) bool ``mask``."""
    h, w = mask.shape
    xy = np.round(np.asarray(points, dtype=np.float64)[:, :2]).astype(int)
    xs, ys = np.clip(xy[:, 0], 0, w - 1), np.clip(xy[:, 1], 0, h - 1)
    return float(mask[ys, xs].mean())


def summarise_boxes(ious: list[float]) -> dict[str, float]:
    """Mean IoU and recall at IoU 0.5 of the best box per image (0 where none was found)."""
    values = np.asarray(ious, dtype=np.float64)
    return {"mean_iou": float(values.mean()), "recall_50": float((values >= 0.5).mean())}


__all__ = ["PCK_THRESHOLD", "box_iou", "mask_iou", "pck_hits", "share_inside", "summarise_boxes"]
