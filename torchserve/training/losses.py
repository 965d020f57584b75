"""Losses: CenterNet focal loss and GIoU for the detector, spatial cross-entropy for pose,
per-pixel cross-entropy plus a soft IoU for the segmenter."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def focal_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss; ``target`` is 1 at centres, a Gaussian around."""
    pos = target.eq(1).float()
    p = torch.sigmoid(logits)
    log_p, log_not_p = F.logsigmoid(logits), F.logsigmoid(-logits)
    pos_loss = -(log_p * (1 - p) ** 2 * pos).sum()
    neg_loss = -(log_not_p * p**2 * (1 - target) ** 4 * (1 - pos)).sum()
    return (pos_loss + neg_loss) / pos.sum().clamp_min(1)


def ltrb_giou_loss(pred: torch.Tensor, target: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """1 - GIoU of boxes given as distances (N, 4, h, w) from the same cell centre."""
    p, t = pred.clamp_min(0), target
    pl, pt, pr, pb = p.unbind(1)
    tl, tt, tr, tb = t.unbind(1)
    inter = (torch.minimum(pl, tl) + torch.minimum(pr, tr)) * (
        torch.minimum(pt, tt) + torch.minimum(pb, tb)
    )
    union = (pl + pr) * (pt + pb) + (tl + tr) * (tt + tb) - inter
    hull = (torch.maximum(pl, tl) + torch.maximum(pr, tr)) * (
        torch.maximum(pt, tt) + torch.maximum(pb, tb)
    )
    iou = inter / union.clamp_min(1e-6)
    giou = iou - (hull - union) / hull.clamp_min(1e-6)
    return ((1 - giou) * weights).sum() / weights.sum().clamp_min(1e-6)


def ltrb_l1_loss(pred: torch.Tensor, target: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Mean absolute error of the distances, in cells, over the weighted cells."""
    err = (pred - target).abs().sum(dim=1)
    return (err * weights).sum() / weights.sum().clamp_min(1e-6) / 4


def heatmap_ce_loss(
    logits: torch.Tensor, target: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy of each joint's spatial softmax against its target distribution."""
    log_prob = F.log_softmax(logits.flatten(2), dim=-1)
    ce = -(target.flatten(2) * log_prob).sum(dim=-1)  # (N, K)
    return (ce * weights).sum() / weights.sum().clamp_min(1)


def mask_bce_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy of per-pixel logits (N, 1, H, W) against soft targets."""
    return F.binary_cross_entropy_with_logits(logits, target)


def soft_iou_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """1 - the soft IoU of each image's probabilities with its target, averaged over images:
    what the masks are judged by, so a small figure counts as much as a large one."""
    p = torch.sigmoid(logits).flatten(1)
    t = target.flatten(1)
    inter = (p * t).sum(dim=1)
    union = (p + t - p * t).sum(dim=1)
    return (1 - (inter + 1) / (union + 1)).mean()
