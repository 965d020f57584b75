"""The real photos taken again in other conditions: how much the served mask depends on the shot.

    python -m torchserve.training.photo_variants --url http://127.0.0.1:5000
        [--variants dim,jpeg40,small,turned-4,turned+4,mirrored] [--photos ../shared/real-photos]
        [--shift 0.02]

The hand-made truth (`evaluate_photos`) fits the 39 photos as they were taken. A drawing the
service has not seen comes in other light, at another size, held a little askew; a rule
tuned to the photos as they are may hold only for them. Each variant changes every photo
the way such a shot would, changes its truth alike (the labels by nearest neighbour, the
joints by the same map), posts it whole to `POST /annotate` and scores the answer as
`evaluate_photos` does. A variant's mean far below the photos' own is a rule that holds
for the file, not for the kind.

`--shift FRAC` asks the same of the detector's box: each photo as taken is posted again
four times with the box it was answered with given as `bbox`, moved by FRAC of its width
(right, left) or height (down, up). A detector's box is that far off from one shot to the
next; the mask and the joints found in it should not change with it. (A given box skips
the detector, and with it the second crop round a drawing that runs on past the box; on
the real photos as taken no second crop is made.)
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageOps

from torchserve.model.pose import FLIP_INDEX
from torchserve.training.evaluate_photos import (
    LOW_IOU,
    Answer,
    PhotoScore,
    Truth,
    annotate,
    checked_truths,
    score,
    service_arguments,
    summary,
)

# One shot of a photo: (the file's bytes, its suffix, the labels, the joints by figure).
Shot = tuple[bytes, str, np.ndarray, dict[int, np.ndarray]]

DIM_LIGHT = (0.7, 0.66, 0.58)  # per channel (RGB): a dim room under warm light
JPEG_QUALITY = 40  # a phone app's heavy compression
SMALL = 0.6  # of each side: the drawing photographed from further away
TURN_DEGREES = 4.0  # held a little askew
# The detector's box moved (`--shift`): by a share of its width and height.
SHIFTS = {"box right": (1, 0), "box left": (-1, 0), "box down": (0, 1), "box up": (0, -1)}


def _png(rgb: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, "PNG")
    return out.getvalue()


def dim(rgb: np.ndarray, labels: np.ndarray, joints: dict[int, np.ndarray]) -> Shot:
    """Every pixel darkened as a dim, warm room would (DIM_LIGHT)."""
    dimmed = (rgb.astype(np.float32) * DIM_LIGHT).astype(np.uint8)
    return _png(dimmed), ".png", labels, joints


def jpeg40(rgb: np.ndarray, labels: np.ndarray, joints: dict[int, np.ndarray]) -> Shot:
    """Compressed hard (JPEG_QUALITY): blocks and ringing round every stroke."""
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue(), ".jpg", labels, joints


def small(rgb: np.ndarray, labels: np.ndarray, joints: dict[int, np.ndarray]) -> Shot:
    """SMALL of each side: thin strokes thinner, a small photo smaller still."""
    height, width = labels.shape
    size = (max(1, round(width * SMALL)), max(1, round(height * SMALL)))
    shrunk = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    shrunk_labels = cv2.resize(labels, size, interpolation=cv2.INTER_NEAREST)
    # Pixel centres: x maps to (x + 0.5) * s - 0.5, as a resize does.
    scale = np.array([size[0] / width, size[1] / height])
    moved = {k: (p + 0.5) * scale - 0.5 for k, p in joints.items()}
    return _png(shrunk), ".png", shrunk_labels, moved


def turned(degrees: float) -> Callable[[np.ndarray, np.ndarray, dict[int, np.ndarray]], Shot]:
    """Turned `degrees` (counterclockwise) about the centre, the corners filled with the
    photo's own border colour."""

    def turn(rgb: np.ndarray, labels: np.ndarray, joints: dict[int, np.ndarray]) -> Shot:
        height, width = labels.shape
        matrix = cv2.getRotationMatrix2D(((width - 1) / 2, (height - 1) / 2), degrees, 1.0)
        border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]])
        fill = tuple(float(c) for c in np.median(border, axis=0))
        image = cv2.warpAffine(rgb, matrix, (width, height), flags=cv2.INTER_CUBIC,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=fill)  # fmt: skip
        turned_labels = cv2.warpAffine(labels, matrix, (width, height), flags=cv2.INTER_NEAREST)
        moved = {k: p @ matrix[:, :2].T + matrix[:, 2] for k, p in joints.items()}
        return _png(image), ".png", turned_labels, moved

    return turn


def mirrored(rgb: np.ndarray, labels: np.ndarray, joints: dict[int, np.ndarray]) -> Shot:
    """Mirrored left to right: each joint's mirror image names it (the left wrist is the
    right one now)."""
    width = labels.shape[1]
    moved = {
        k: np.column_stack([width - 1 - p[:, 0], p[:, 1]])[list(FLIP_INDEX)]
        for k, p in joints.items()
    }
    return _png(np.ascontiguousarray(rgb[:, ::-1])), ".png", labels[:, ::-1].copy(), moved


VARIANTS: dict[str, Callable[[np.ndarray, np.ndarray, dict[int, np.ndarray]], Shot]] = {
    "dim": dim,
    "jpeg40": jpeg40,
    "small": small,
    "turned-4": turned(-TURN_DEGREES),
    "turned+4": turned(TURN_DEGREES),
    "mirrored": mirrored,
}


def shot(truth: Truth, photos: Path, variant: str) -> Shot:
    """Photo `truth` (upright, as its truth is) taken again as `variant` says."""
    with Image.open(photos / truth.photo) as image:
        rgb = np.asarray(ImageOps.exif_transpose(image).convert("RGB"))
    return VARIANTS[variant](rgb, truth.labels, truth.joints)


def score_variant(
    url: str, photos: Path, truths: list[Truth], variant: str, api_key: str | None = None
) -> list[PhotoScore]:
    """Every photo of `truths` taken again as `variant`, posted to /annotate and scored."""
    scores = []
    with tempfile.TemporaryDirectory() as folder:
        for truth in truths:
            data, suffix, labels, joints = shot(truth, photos, variant)
            path = Path(folder) / f"{truth.name}{suffix}"
            path.write_bytes(data)
            scores.append(score(truth.name, labels, joints, annotate(url, path, api_key)))
    return scores


def moved_box(
    box: tuple[float, float, float, float], by: tuple[float, float], size: tuple[int, int]
) -> tuple[float, float, float, float]:
    """`box` (left, top, right, bottom) moved by `by` (x, y) of its width and height, kept
    inside an image of `size` (width, height)."""
    left, top, right, bottom = box
    dx, dy = by[0] * (right - left), by[1] * (bottom - top)
    width, height = size
    return (
        min(max(0.0, left + dx), width - 1.0),
        min(max(0.0, top + dy), height - 1.0),
        max(1.0, min(float(width), right + dx)),
        max(1.0, min(float(height), bottom + dy)),
    )


def score_shifted(
    url: str,
    photos: Path,
    truths: list[Truth],
    answers: list[Answer],
    by: tuple[float, float],
    api_key: str | None = None,
) -> list[PhotoScore]:
    """Every photo of `truths` posted again with the box of its answer as taken (`answers`,
    in the same order) given, moved by `by` (`moved_box`); a photo refused as taken keeps
    its refusal."""
    scores = []
    for truth, first in zip(truths, answers, strict=True):
        answer = first
        if first.bbox is not None and first.mask is not None:
            height, width = first.mask.shape
            box = moved_box(first.bbox, by, (width, height))
            answer = annotate(url, photos / truth.photo, api_key, bbox=box)
        scores.append(score(truth.name, truth.labels, truth.joints, answer))
    return scores


def report(rows: dict[str, list[PhotoScore]]) -> str:
    """A table of each variant's summary, then each photo's IoU under each variant."""
    lines = [
        "| variant | animated | mean IoU | below 0.85 | truth joints inside |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, scores in rows.items():
        got = summary(scores)
        lines.append(
            f"| {name} | {got['animated']} | {got['mean_iou']:.3f} | {got['below']} | "
            f"{got['joints_inside']:.0%} |"
        )
    names = list(rows)
    lines += ["", "| photo | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for k, first in enumerate(next(iter(rows.values()))):
        cells = []
        for name in names:
            s = rows[name][k]
            cells.append(
                f"{s.iou:.3f}" + ("*" if s.iou < LOW_IOU else "") if s.animated else s.code
            )
        lines.append(f"| {first.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchserve.training.photo_variants", description=__doc__.split("\n")[0]
    )
    service_arguments(parser)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--shift", type=float, default=0.0,
                        help="also each photo with its box moved by this share of its size, "
                             "four ways (0: not)")  # fmt: skip
    args = parser.parse_args(argv)
    chosen = [v for v in args.variants.split(",") if v]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        print(f"unknown variants {unknown}: choose from {list(VARIANTS)}", file=sys.stderr)
        return 2
    truths = checked_truths(args)
    if truths is None:
        return 1
    answers = [annotate(args.url, args.photos / t.photo, args.api_key) for t in truths]
    taken = [score(t.name, t.labels, t.joints, a) for t, a in zip(truths, answers, strict=True)]
    rows = {"as taken": taken}
    for variant in chosen:
        rows[variant] = score_variant(args.url, args.photos, truths, variant, args.api_key)
        print(f"{variant}: {summary(rows[variant])}", file=sys.stderr, flush=True)
    if args.shift:
        for name, (x, y) in SHIFTS.items():
            by = (x * args.shift, y * args.shift)
            row = f"{name} {args.shift:.0%}"
            rows[row] = score_shifted(args.url, args.photos, truths, answers, by, args.api_key)
            print(f"{row}: {summary(rows[row])}", file=sys.stderr, flush=True)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
