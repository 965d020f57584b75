"""Measure the figure mask on real drawings: `python -m animation.tools.segment_eval [DIR]`.

DIR (default `../shared/real-dev`) holds AnimatedDrawings annotation folders (`char*/`:
`texture.png` = the crop with its paper, `mask.png` = the true mask, `char_cfg.yaml` =
the annotated joints). For each one this prints the OpenCV mask's IoU against the truth
(given AnimatedDrawings' margin round the ink first, as its masks have it),
the share of annotated joints inside it, its warnings and the time per crop (median of
`--runs`, one thread), then the mean and the minimum; then the time per crop with every
crop scaled to each of `--sizes` px on its longer side (wall and CPU, medians over crops
and runs). `--overlays OUT` writes one PNG per character: paper taken in red, figure
missed blue, the mask's outline green, joints yellow.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import yaml
from PIL import Image

from animation.figure_mask import FigureJoints, with_ad_margin
from animation.segment import figure_mask

DEFAULT_DIR = Path("../shared/real-dev")


@dataclass(frozen=True)
class DevCharacter:
    name: str
    rgb: np.ndarray  # (H, W, 3) uint8: the crop with its paper
    truth: np.ndarray  # (H, W) bool
    joints: FigureJoints  # every annotated joint, bones to parents


def load_dev_character(folder: Path) -> DevCharacter:
    rgb = np.asarray(Image.open(folder / "texture.png").convert("RGB"))
    truth = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    cfg = yaml.safe_load((folder / "char_cfg.yaml").read_text())
    return DevCharacter(
        folder.name, np.ascontiguousarray(rgb), truth, FigureJoints.from_char_cfg(cfg["skeleton"])
    )


def dev_characters(folder: Path) -> list[DevCharacter]:
    return [load_dev_character(d) for d in sorted(folder.glob("char*")) if d.is_dir()]


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max(1, (a | b).sum()))


def joints_inside(mask: np.ndarray, points: np.ndarray) -> float:
    """Share of (N, 2) points that fall on the mask (outside the image counts as out)."""
    xy = np.round(points).astype(np.int64)
    h, w = mask.shape
    ok = (xy[:, 0] >= 0) & (xy[:, 0] < w) & (xy[:, 1] >= 0) & (xy[:, 1] < h)
    inside = np.zeros(len(xy), bool)
    inside[ok] = mask[xy[ok, 1], xy[ok, 0]]
    return float(inside.mean()) if len(xy) else 1.0


def overlay(rgb: np.ndarray, mask: np.ndarray, truth: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: paper taken in red, figure missed blue, outline green, joints yellow."""
    out = rgb.astype(np.float32)
    for wrong, colour in ((mask & ~truth, (255, 0, 0)), (truth & ~mask, (0, 80, 255))):
        out[wrong] = out[wrong] * 0.4 + np.array(colour, np.float32) * 0.6
    out = out.astype(np.uint8)
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    cv2.drawContours(out, contours, -1, (0, 180, 0), 1)
    for x, y in np.round(points).astype(int):
        cv2.circle(out, (int(x), int(y)), 3, (255, 200, 0), -1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m animation.tools.segment_eval")
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--overlays", type=Path, help="write an overlay PNG per character here")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per crop (median)")
    parser.add_argument("--sizes", default="300,450,600", help="longer sides to time, px")
    args = parser.parse_args(argv)
    cv2.setNumThreads(1)  # as in a gateway render worker
    characters = dev_characters(args.folder)
    if not characters:
        print(f"error: no char*/ folders in {args.folder}", file=sys.stderr)
        return 2
    if args.overlays:
        args.overlays.mkdir(parents=True, exist_ok=True)
    ious, inside = [], []
    print(f"{'character':<10} {'size':>9} {'IoU':>6} {'joints in':>9} {'ms':>6}  warnings")
    for c in characters:
        times = []
        for _ in range(max(1, args.runs)):
            start = time.perf_counter()
            finished = figure_mask(c.rgb, c.joints)
            times.append(time.perf_counter() - start)
        iou = mask_iou(with_ad_margin(finished.mask), c.truth)  # AD's masks carry it
        share = joints_inside(finished.mask, c.joints.points)
        ious.append(iou)
        inside.append(share)
        h, w = c.truth.shape
        ms = 1000 * statistics.median(times)
        print(f"{c.name:<10} {w:>4}x{h:<4} {iou:6.3f} {share:9.2f} {ms:6.1f}  "
              f"{','.join(finished.warnings) or '-'}")  # fmt: skip
        if args.overlays:
            image = overlay(c.rgb, finished.mask, c.truth, c.joints.points)
            Image.fromarray(image).save(args.overlays / f"{c.name}.png")
    print(f"mean IoU {np.mean(ious):.3f}, min {np.min(ious):.3f}; "
          f"joints inside {np.mean(inside):.3f}; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    for side in [int(v) for v in args.sizes.split(",") if v.strip()]:
        wall, cpu = time_at_size(characters, side, max(1, args.runs))
        print(f"time per crop at {side} px: {wall:.1f} ms wall, {cpu:.1f} ms CPU "
              f"(median; load {os.getloadavg()[0]:.2f})")  # fmt: skip
    return 0


def time_at_size(characters: list[DevCharacter], side: int, runs: int) -> tuple[float, float]:
    """(wall ms, CPU ms): medians over crops and runs, each crop scaled to `side` px long."""
    walls, cpus = [], []
    for c in characters:
        scale = side / max(c.rgb.shape[:2])
        size = (round(c.rgb.shape[1] * scale), round(c.rgb.shape[0] * scale))
        rgb = cv2.resize(c.rgb, size, interpolation=cv2.INTER_AREA)
        joints = FigureJoints(c.joints.points * scale, c.joints.bones, c.joints.head)
        figure_mask(rgb, joints)  # warm
        for _ in range(runs):
            wall, cpu = time.perf_counter(), time.process_time()
            figure_mask(rgb, joints)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    return 1000 * statistics.median(walls), 1000 * statistics.median(cpus)


if __name__ == "__main__":
    raise SystemExit(main())
