"""Evaluate the committed models on two held-out synthetic sets, exactly as they are served.

    python -m torchserve.evaluate [--n 500] [--write torchserve/weights/EVAL.md]

Set 1 ("held-out seeds") is drawn from seeds training never used, in the training styles;
set 2 ("held-out styles") uses only the styles training never saw (HELD_OUT_STYLES). For
each photo the detector's best box is scored by IoU against the true box, then the photo is
cut at that box grown by 10% per side (as the gateway cuts it) and the pose network's joints
are scored by PCK@0.1 (within 10% of the true box's longer side): the served path, end to
end. Pose is also scored on crops at the true box (same margin), to separate its own error
from the detector's.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from torchserve.model import (
    KEYPOINT_NAMES,
    decode_detections,
    decode_keypoints,
    detector_input,
    load_detector,
    load_pose,
    pose_input,
)
from torchserve.training.metrics import box_iou, pck_hits, summarise_boxes

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SETS = {
    "held-out seeds": (1_000_000, "exclude"),
    "held-out styles": (2_000_000, "only"),
}
CROP_MARGIN = 0.1  # the gateway grows the detected box by this much per side before posing
TARGETS = "detector mean IoU >= 0.85, recall@0.5 >= 0.98; PCK@0.1 >= 0.90 (set 1), >= 0.80 (set 2)"


@dataclass
class Scores:
    iou: float
    pck_served: np.ndarray  # (17,) hits on the detector's crop (NaN: joint not labelled)
    pck_true_box: np.ndarray  # (17,) hits on the true box's crop


def crop(image: np.ndarray, bbox: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pixels of ``bbox`` grown by CROP_MARGIN (rounded outwards, clipped to the image)
    and their top-left corner."""
    h, w = image.shape[:2]
    dx, dy = (bbox[2] - bbox[0]) * CROP_MARGIN, (bbox[3] - bbox[1]) * CROP_MARGIN
    x1, y1 = max(int(np.floor(bbox[0] - dx)), 0), max(int(np.floor(bbox[1] - dy)), 0)
    x2, y2 = min(int(np.ceil(bbox[2] + dx)), w), min(int(np.ceil(bbox[3] + dy)), h)
    x2, y2 = max(x2, x1 + 1), max(y2, y1 + 1)
    return image[y1:y2, x1:x2], np.array([x1, y1], dtype=np.float64)


_models: dict[str, torch.nn.Module] = {}


def _load(detector_path: str, pose_path: str) -> None:
    torch.set_num_threads(1)
    _models["detector"] = load_detector(detector_path)
    _models["pose"] = load_pose(pose_path)


def _keypoints(image: np.ndarray, bbox: np.ndarray) -> np.ndarray:
    """Pose on the crop at ``bbox``, in the photo's pixels, (17, 3)."""
    pose = _models["pose"]
    piece, origin = crop(image, bbox)
    x, box = pose_input(piece, pose.size)
    with torch.inference_mode():
        points = np.array(decode_keypoints(pose(x)[0], box))
    points[:, :2] += origin
    return points


def score_one(job: tuple[int, str]) -> Scores:
    from torchserve.synth import HELD_OUT_STYLES, generate

    seed, mode = job
    sample = generate(seed, **{mode: HELD_OUT_STYLES})
    detector = _models["detector"]
    x, box = detector_input(sample.image, detector.size)
    with torch.inference_mode():
        found = decode_detections(detector(x)[0], box, sample.image.shape[1::-1])
    truth = np.asarray(sample.keypoints, dtype=np.float64)
    true_box = np.asarray(sample.bbox, dtype=np.float64)
    if found:
        best = np.array(found[0]["bbox"])
        iou = box_iou(best, true_box)
        served = pck_hits(_keypoints(sample.image, best), truth, true_box)
    else:  # nothing found: every labelled joint is missed
        iou = 0.0
        served = np.where(truth[:, 2] > 0, 0.0, np.nan)
    return Scores(iou, served, pck_hits(_keypoints(sample.image, true_box), truth, true_box))


def latency_ms(model: torch.nn.Module, runs: int = 30) -> float:
    """Median milliseconds of one forward pass at the model's input size on one thread."""
    torch.set_num_threads(1)
    x = torch.randn(1, 3, model.size, model.size)
    times = []
    with torch.inference_mode():
        for i in range(runs + 5):
            start = time.perf_counter()
            model(x)
            if i >= 5:
                times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def evaluate(n: int, detector_path: Path, pose_path: Path, workers: int) -> dict[str, list[Scores]]:
    results = {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(
        workers, initializer=_load, initargs=(str(detector_path), str(pose_path))
    ) as pool:
        for name, (start, mode) in SETS.items():
            jobs = [(seed, mode) for seed in range(start, start + n)]
            results[name] = pool.map(score_one, jobs, chunksize=8)
    return results


def report(results: dict[str, list[Scores]]) -> str:
    """The evaluation as Markdown tables: a summary per set, then PCK per joint."""
    lines = [
        "| set | drawings | detector mean IoU | recall@0.5 | PCK@0.1 served (detector crop) | PCK@0.1 true-box crop |",
        "|---|---|---|---|---|---|",
    ]
    per_joint = {}
    for name, scores in results.items():
        boxes = summarise_boxes([s.iou for s in scores])
        served = np.stack([s.pck_served for s in scores])
        true_box = np.stack([s.pck_true_box for s in scores])
        per_joint[name] = (np.nanmean(served, axis=0), np.nanmean(true_box, axis=0))
        lines.append(
            f"| {name} | {len(scores)} | {boxes['mean_iou']:.3f} | {boxes['recall_50']:.3f} "
            f"| {np.nanmean(served):.3f} | {np.nanmean(true_box):.3f} |"
        )
    names = list(results)
    lines += [
        "",
        "| joint | " + " | ".join(f"{n}: served | {n}: true box" for n in names) + " |",
        "|---|" + "---|" * (2 * len(names)),
    ]
    for j, joint in enumerate(KEYPOINT_NAMES):
        cells = " | ".join(f"{per_joint[n][0][j]:.3f} | {per_joint[n][1][j]:.3f}" for n in names)
        lines.append(f"| {joint} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m torchserve.evaluate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=500, help="drawings per set")
    parser.add_argument("--detector", type=Path, default=WEIGHTS_DIR / "detector.pt")
    parser.add_argument("--pose", type=Path, default=WEIGHTS_DIR / "pose.pt")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", type=Path, help="also write the report (Markdown) here")
    args = parser.parse_args(argv)

    started = time.monotonic()
    results = evaluate(args.n, args.detector, args.pose, args.workers)
    table = report(results)
    timing = (
        f"Median forward pass on 1 CPU thread: detector {latency_ms(load_detector(str(args.detector))):.1f} ms "
        f"at {load_detector(str(args.detector)).size}px, pose {latency_ms(load_pose(str(args.pose))):.1f} ms "
        f"at {load_pose(str(args.pose)).size}px (limit 40 ms)."
    )
    print(table)
    print()
    print(timing)
    print(f"({time.monotonic() - started:.0f}s)")
    if args.write:
        args.write.write_text(markdown(args, table, timing))


def markdown(args: argparse.Namespace, table: str, timing: str) -> str:
    """EVAL.md: the command, the tables, and what exactly was evaluated."""
    from torchserve.training.data import generator_version

    lines = [
        "# Evaluation of the committed models",
        "",
        f"Produced by `python -m torchserve.evaluate --n {args.n} --write {args.write}`.",
        f"Targets (issue 4): {TARGETS}.",
        "",
        table,
        "",
        timing,
        "",
        f"Evaluated with the generator source at version `{generator_version()}`.",
        "",
    ]
    for path in (args.detector, args.pose):
        meta = torch.load(path, weights_only=True)["meta"]
        lines.append(
            f"- `{path.name}` sha256 `{sha256(path)}`: {meta.get('trained_steps')} steps of "
            f"{meta.get('batch_size')} on {meta.get('samples')} drawings (generator "
            f"`{meta.get('generator')}`), seed {meta.get('seed')}, {meta.get('threads')} thread(s)"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
