"""Train one of the three models on synthetic drawings, reproducibly, on the CPU.

    python -m torchserve.training detector  [--out PATH] [--seed 0] [--steps N] [--threads 1]
    python -m torchserve.training pose      [--out PATH] [--seed 0] [--steps N] [--threads 1]
    python -m torchserve.training segmenter [--out PATH] [--seed 0] [--steps N] [--threads 1]

    --init PATH continues from saved weights of the same kind (a second cosine schedule,
    peak --lr) instead of torch's seeded initial weights.
    --crowd trains on pages that also hold other people beside the figure (the generator's
    `crowd`), each a box the detector learns to find.

The drawings of seeds [0, --samples) are generated once (training styles only: the
held-out styles are excluded) and cached under torchserve/data/cache/. The same seed,
samples, steps and thread count give bitwise the same weights on the same machine.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import cv2
import torch

from torchserve.model.layers import read_checkpoint
from torchserve.training import data
from torchserve.training.loop import (
    FORMATS,
    TrainConfig,
    save_checkpoint,
    train,
    validate_detector,
    validate_pose,
    validate_segmenter,
    weights_digest,
)

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights"
VAL_SEEDS = range(900_000, 900_200)  # neither training's seeds nor evaluation's
DETECTOR_SIZE = 192
POSE_SIZE = 128
SEGMENTER_SIZE = 256
SEGMENTER_WINDOW = 192  # trained on windows of its input: 0.56x the pixels, same scale
DEFAULTS = {
    "detector": {"steps": 5000, "size": DETECTOR_SIZE, "lr": 2e-3, "batch": 32},
    "pose": {"steps": 3200, "size": POSE_SIZE, "lr": 2e-3, "batch": 32},
    "segmenter": {"steps": 5000, "size": SEGMENTER_SIZE, "lr": 3e-3, "batch": 16},
}
VALIDATE = {
    "detector": lambda val: validate_detector(val),
    "pose": lambda val: validate_pose(val, POSE_SIZE),
    "segmenter": lambda val: validate_segmenter(val, SEGMENTER_SIZE),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m torchserve.training", description=__doc__.split("\n")[0]
    )
    parser.add_argument("kind", choices=sorted(DEFAULTS))
    parser.add_argument(
        "--out", type=Path, help="weights file (default torchserve/weights/KIND.pt)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--steps",
        type=int,
        help="optimiser steps (default: 5000 detector, 3200 pose, 5000 segmenter)",
    )
    parser.add_argument(
        "--batch-size", type=int, help="drawings per step (default: 32; 16 for the segmenter)"
    )
    parser.add_argument(
        "--lr", type=float, help="peak learning rate (default: 2e-3; 3e-3 for the segmenter)"
    )
    parser.add_argument(
        "--init", type=Path, help="start from these weights of the same kind (default: seeded init)"
    )
    parser.add_argument("--samples", type=int, default=10000, help="distinct training drawings")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (part of the seed)")
    parser.add_argument("--workers", type=int, default=2, help="processes generating drawings")
    parser.add_argument("--every", type=int, default=250, help="log, validate, save every N steps")
    parser.add_argument(
        "--crowd", action="store_true", help="pages with other people beside the figure too"
    )
    parser.add_argument(
        "--generator-version",
        help="reuse the cached drawings of this generator version (default: the current one)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    torch.set_num_threads(args.threads)
    cv2.setNumThreads(1)
    defaults = DEFAULTS[args.kind]
    config = TrainConfig(
        kind=args.kind,
        steps=args.steps or defaults["steps"],
        batch_size=args.batch_size or defaults["batch"],
        lr=args.lr or defaults["lr"],
        seed=args.seed,
        size=defaults["size"],
        window=SEGMENTER_WINDOW if args.kind == "segmenter" else 0,
        init=str(args.init or ""),
    )
    out = args.out or WEIGHTS_DIR / f"{args.kind}.pt"
    out.parent.mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    version = args.generator_version or data.generator_version()
    records = data.cached_records(
        range(args.samples), DETECTOR_SIZE, workers=args.workers, version=version, crowd=args.crowd
    )
    val = data.cached_records(
        VAL_SEEDS, DETECTOR_SIZE, "val", args.workers, version=version, crowd=args.crowd
    )
    logging.info("%d training drawings ready in %.0fs", len(records), time.monotonic() - started)
    validate = VALIDATE[args.kind](val)
    meta = {
        "samples": args.samples,
        "threads": args.threads,
        "generator": version,
        "crowd": args.crowd,
        "torch": str(torch.__version__),
    }
    if args.init:
        # What the run started from, so the chain of runs can be retraced.
        meta["init_meta"] = read_checkpoint(str(args.init), FORMATS[args.kind])["meta"]

    def checkpoint(model: torch.nn.Module, step: int) -> None:
        save_checkpoint(model, config, str(out), {**meta, "trained_steps": step})

    model = train(config, records, validate=validate, every=args.every, checkpoint=checkpoint)
    checkpoint(model, config.steps)
    logging.info(
        "wrote %s (%.1f MB) weights sha256 %s in %.0fs",
        out,
        out.stat().st_size / 1e6,
        weights_digest(model),
        time.monotonic() - started,
    )


if __name__ == "__main__":
    main()
