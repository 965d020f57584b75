"""The training loop of the three models: seeded batches, AdamW, cosine schedule, checkpoints.

Everything random flows from one seed: torch's for the initial weights, one numpy
generator for batch order and augmentation, so a run is bitwise repeatable on the same
machine, library versions and thread count.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import cv2
import numpy as np
import torch

from torchserve.model.detector import (
    DETECTOR_FORMAT,
    DetectorNet,
    decode_detections,
)
from torchserve.model.layers import read_checkpoint
from torchserve.model.pose import POSE_FORMAT, PoseNet, heatmap_coordinates
from torchserve.model.segmenter import (
    SEGMENTER_FORMAT,
    SegmenterNet,
    input_tensor,
    segmenter_input,
    upsample_logits,
)
from torchserve.model.transforms import Letterbox, to_tensor
from torchserve.training import data, losses
from torchserve.training.metrics import box_iou, pck_hits

logger = logging.getLogger(__name__)


FORMATS = {"detector": DETECTOR_FORMAT, "pose": POSE_FORMAT, "segmenter": SEGMENTER_FORMAT}


@dataclass
class TrainConfig:
    kind: str  # "detector", "pose" or "segmenter"
    steps: int
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 1e-4
    warmup: int = 200
    seed: int = 0
    size: int = 192  # model input side
    jitter: float = 0.22  # pose and segmenter crop jitter, fraction of the box
    window: int = 0  # segmenter: train on random windows this wide of each input (0: whole)
    init: str = ""  # weights file of the same kind to start from ("": torch's seeded init)


def seed_everything(seed: int) -> np.random.Generator:
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    return np.random.default_rng(seed)


def detector_batch(
    records: data.Records,
    idx: np.ndarray,
    rng: np.random.Generator,
    stride: int,
    negatives: float = 0.05,
) -> tuple[torch.Tensor, ...]:
    images, boxes = [], []
    for i in idx:
        people = np.concatenate([records.det_boxes[i][None], records.det_others[i]])
        image, people = data.augment_detector(records.det_images[i], people, rng)
        if rng.random() < negatives:
            image, people = data.erase_figure(image, people), np.full_like(people, np.nan)
        images.append(image)
        boxes.append(people)
    size = images[0].shape[0]
    heat, ltrb, weights = data.detector_targets(np.stack(boxes), size, stride)
    return to_tensor(np.stack(images)), *map(torch.from_numpy, (heat, ltrb, weights))


def detector_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, heat, ltrb, weights = batch
    out = model(x)
    return (
        losses.focal_loss(out[:, 0], heat)
        + losses.ltrb_giou_loss(out[:, 1:], ltrb, weights) * 2
        + losses.ltrb_l1_loss(out[:, 1:], ltrb, weights) * 0.5
    )


def pose_batch(
    records: data.Records,
    idx: np.ndarray,
    rng: np.random.Generator,
    size: int,
    stride: int,
    jitter: float,
) -> tuple[torch.Tensor, ...]:
    images, keypoints = zip(
        *(
            data.augment_pose(
                records.regions[i],
                records.region_boxes[i],
                records.region_keypoints[i],
                size,
                rng,
                jitter,
            )
            for i in idx
        ),
        strict=True,
    )
    target, weights = data.pose_targets(np.stack(keypoints), size, stride)
    return to_tensor(np.stack(images)), torch.from_numpy(target), torch.from_numpy(weights)


def pose_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, target, weights = batch
    return losses.heatmap_ce_loss(model(x), target, weights)


def segmenter_batch(
    records: data.Records,
    idx: np.ndarray,
    rng: np.random.Generator,
    size: int,
    jitter: float,
    window: int,
) -> tuple[torch.Tensor, ...]:
    images, hints, targets = zip(
        *(
            data.augment_segmenter(
                records.seg_regions[i],
                records.seg_boxes[i],
                records.seg_masks[i],
                size,
                rng,
                jitter,
                window or None,
            )
            for i in idx
        ),
        strict=True,
    )
    return input_tensor(np.stack(images), np.stack(hints)), torch.from_numpy(np.stack(targets))[
        :, None
    ]


def segmenter_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, target = batch
    logits = upsample_logits(model(x), model.stride)
    return losses.mask_bce_loss(logits, target) + losses.soft_iou_loss(logits, target)


def build_model(config: TrainConfig) -> torch.nn.Module:
    if config.kind == "detector":
        return DetectorNet(size=config.size)
    if config.kind == "pose":
        return PoseNet(size=config.size)
    if config.kind == "segmenter":
        return SegmenterNet(size=config.size)
    raise ValueError(f"unknown model kind {config.kind!r}: choose one of {', '.join(FORMATS)}")


def train(
    config: TrainConfig,
    records: data.Records,
    *,
    validate: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    every: int = 250,
    checkpoint: Callable[[torch.nn.Module, int], None] | None = None,
) -> torch.nn.Module:
    """Train one model on ``records`` for ``config.steps`` steps and return it in eval mode."""
    rng = seed_everything(config.seed)
    model = build_model(config)
    if config.init:
        model.load_state_dict(read_checkpoint(config.init, FORMATS[config.kind])["state_dict"])
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    optimiser = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0},
        ],
        lr=config.lr,
    )
    model.train()
    started, running = time.monotonic(), []
    for step in range(config.steps):
        idx = rng.integers(0, len(records), size=config.batch_size)
        if config.kind == "detector":
            batch = detector_batch(records, idx, rng, model.stride)
            loss = detector_loss(model, batch)
        elif config.kind == "pose":
            batch = pose_batch(records, idx, rng, config.size, model.stride, config.jitter)
            loss = pose_loss(model, batch)
        else:
            batch = segmenter_batch(records, idx, rng, config.size, config.jitter, config.window)
            loss = segmenter_loss(model, batch)
        lr = data.cosine_lr(
            step, config.steps, config.lr, min(config.warmup, config.steps // 5 + 1)
        )
        for group in optimiser.param_groups:
            group["lr"] = lr
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimiser.step()
        running.append(loss.item())
        done = step + 1
        if done % every == 0 or done == config.steps:
            elapsed = time.monotonic() - started
            line = f"{config.kind} step {done}/{config.steps} loss {np.mean(running):.4f} lr {lr:.2e} {elapsed:.0f}s"
            running = []
            if validate is not None:
                model.eval()
                with torch.no_grad():
                    line += " " + " ".join(f"{k} {v:.4f}" for k, v in validate(model).items())
                model.train()
            logger.info(line)
            if checkpoint is not None:
                checkpoint(model.eval(), done)
                model.train()
    return model.eval()


def validate_detector(records: data.Records) -> Callable[[torch.nn.Module], dict[str, float]]:
    """Mean IoU of the best box on letterboxed records (no augmentation), with whichever
    person of the drawing it boxes best."""

    def run(model: torch.nn.Module) -> dict[str, float]:
        size = records.det_images.shape[1]
        identity = Letterbox(1.0, 0, 0, size)
        ious = []
        for start in range(0, len(records), 64):
            out = model(to_tensor(np.asarray(records.det_images[start : start + 64])))
            for j, o in enumerate(out):
                found = decode_detections(o, identity, (size, size))
                people = [records.det_boxes[start + j], *records.det_others[start + j]]
                best = np.array(found[0]["bbox"]) if found else None
                ious.append(
                    max(box_iou(best, p) for p in people if not np.isnan(p).any()) if found else 0.0
                )
        ious = np.array(ious)
        return {"val_iou": float(ious.mean()), "val_r50": float((ious >= 0.5).mean())}

    return run


def validate_pose(
    records: data.Records, size: int
) -> Callable[[torch.nn.Module], dict[str, float]]:
    """PCK@0.1 on crops of the true boxes (no augmentation)."""
    crops = [data.crop_matrix(records.region_boxes[i], size) for i in range(len(records))]
    images = np.stack(
        [
            data.cut_crop(records.regions[i], records.region_boxes[i], m, size)
            for i, m in enumerate(crops)
        ]
    )
    truth = [data.apply_affine(m, records.region_keypoints[i]) for i, m in enumerate(crops)]
    boxes = [
        data.apply_affine(m, records.region_boxes[i].reshape(2, 2)).reshape(4)
        for i, m in enumerate(crops)
    ]

    def run(model: torch.nn.Module) -> dict[str, float]:
        hits = []
        for start in range(0, len(images), 64):
            out = model(to_tensor(images[start : start + 64]))
            points = heatmap_coordinates(out, model.stride).numpy()
            for j, p in enumerate(points):
                hits.append(pck_hits(p, truth[start + j], boxes[start + j]))
        return {"val_pck": float(np.nanmean(np.stack(hits)))}

    return run


def validate_segmenter(
    records: data.Records, size: int
) -> Callable[[torch.nn.Module], dict[str, float]]:
    """Mean mask IoU on crops of the true boxes grown by 10% per side, as the gateway cuts
    them (no augmentation), scored at the input's resolution."""
    inputs, targets = [], []
    for i in range(len(records)):
        box = records.seg_boxes[i]
        crop = box + np.array([-0.1, -0.1, 0.1, 0.1]) * np.tile(box[2:] - box[:2], 2)
        x0, y0 = np.maximum(np.floor(crop[:2]).astype(int), 0)
        x1, y1 = np.ceil(crop[2:]).astype(int)
        piece = np.ascontiguousarray(records.seg_regions[i][y0:y1, x0:x1])
        x, letterbox_ = segmenter_input(piece, size)
        inputs.append(x)
        m = letterbox_.matrix()
        targets.append(
            cv2.warpAffine(
                np.ascontiguousarray(records.seg_masks[i][y0:y1, x0:x1]),
                m,
                (size, size),
                flags=cv2.INTER_LINEAR,
            )
            > 127
        )
    batch, truth = torch.cat(inputs), np.stack(targets)

    def run(model: torch.nn.Module) -> dict[str, float]:
        ious = []
        for start in range(0, len(batch), 32):
            logits = upsample_logits(model(batch[start : start + 32]), model.stride)
            found = (logits[:, 0] > 0).numpy()
            t = truth[start : start + 32]
            inter = (found & t).sum(axis=(1, 2))
            union = (found | t).sum(axis=(1, 2))
            ious.extend((inter / np.maximum(union, 1)).tolist())
        return {"val_mask_iou": float(np.mean(ious))}

    return run


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 of the parameters and buffers, in order: equal digests, equal weights."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def save_checkpoint(model: torch.nn.Module, config: TrainConfig, path: str, meta: dict) -> None:
    """Write the weights atomically, with what is needed to rebuild and to retrain them."""
    payload = {
        "format": FORMATS[config.kind],
        "config": model.config,
        "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "meta": {**{k: str(v) for k, v in asdict(config).items()}, **meta},
    }
    tmp = f"{path}.tmp"
    torch.save(payload, tmp)
    os.replace(tmp, path)
