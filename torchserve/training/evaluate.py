"""Evaluate the committed models on two held-out synthetic sets and on real drawings, as served.

    python -m torchserve.training.evaluate [--n 500] [--write torchserve/weights/EVAL.md]
                                  [--real-dev ../shared/real-dev] [--overlays DIR]

Set 1 ("held-out seeds") is drawn from seeds training never used, in the training styles;
set 2 ("held-out styles") uses only the styles training never saw (HELD_OUT_STYLES). For
each photo the detector's best box is scored by IoU against the true box, then the photo is
cut at that box grown by 10% per side (as the gateway cuts it; and cut again around the
whole drawing when the figure runs off that crop, `animation.crop.whole_drawing`) and the
pose network's joints are scored by PCK@0.1 (within 10% of the true box's longer side): the
served path, end to end. Pose is also scored on crops at the true box (same margin), to
separate its own error from the detector's.

The segmenter's mask, cut from the same two crops, is scored by IoU against the generator's
exact mask (the figure's filled silhouette), beside the OpenCV path
(`animation.segment.segment_figure`, given the served joints on the detector's crop and the
true ones on the true box's crop), and beside the mask the gateway uses when TorchServe
serves the segmenter (`animation.segment.figure_mask` with the segmenter's mask: both
finished, the one `choose` picks), with the share of the true joints inside each mask. On
the real drawings (`--real-dev`, AnimatedDrawings' annotation folders: `texture.png` is the
crop with its paper, `mask.png` the truth, `char_cfg.yaml` the joints) all three run on the
crop as it is; `--overlays DIR` writes each drawing with the first two masks' outlines and
the truth's. The served pose is scored there too, on the drawings annotated as people: its
12 limb joints, as the gateway rigs them, by PCK@0.1 of the true mask's box. Last, each
real drawing is photographed again by the generator's camera (`torchserve.training.rephoto`) and
the served path runs on the whole photo, from the detector on.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
import yaml
from PIL import Image

from animation.crop import margin_lost, whole_drawing, without_paper
from animation.figure import Crop
from animation.figure_mask import with_ad_margin
from animation.paper import light_page
from animation.segment import figure_mask
from animation.skeleton import JOINT_INDEX, JOINTS, Skeleton
from torchserve.model import (
    KEYPOINT_NAMES,
    decode_figures,
    decode_keypoints,
    decode_views,
    detector_input,
    load_detectors,
    load_pose,
    load_segmenter,
    pose_input,
    segmenter_views,
)
from torchserve.model.detector import person_weights
from torchserve.training.evaluate_photos import carry_section
from torchserve.training.metrics import box_iou, mask_iou, pck_hits, share_inside, summarise_boxes
from torchserve.training.rephoto import rephotograph

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights"
REAL_DEV = Path(__file__).resolve().parents[3] / "shared" / "real-dev"
SETS = {
    "held-out seeds": (1_000_000, "exclude"),
    "held-out styles": (2_000_000, "only"),
}
CROP_MARGIN = 0.1  # the gateway grows the detected box by this much per side before posing
TARGETS = "detector mean IoU >= 0.85, recall@0.5 >= 0.98; PCK@0.1 >= 0.90 (set 1), >= 0.80 (set 2)"
MASK_TARGETS = (
    "mask IoU >= 0.93 (held-out seeds), >= 0.88 (held-out styles); real drawings: mean >= 0.93, "
    "none below 0.88, every annotated joint inside (for the gateway's final mask)"
)
# The mask scores of one drawing, by column: (path, crop).
MASK_COLUMNS = (
    ("segmenter", "detector crop"),
    ("segmenter", "true-box crop"),
    ("OpenCV", "detector crop"),
    ("OpenCV", "true-box crop"),
    ("gateway", "detector crop"),
    ("gateway", "true-box crop"),
)
PATHS = ("segmenter", "OpenCV", "gateway")  # the gateway's: the choice of the other two


@dataclass
class Scores:
    iou: float
    pck_served: np.ndarray  # (17,) hits on the detector's crop (NaN: joint not labelled)
    pck_true_box: np.ndarray  # (17,) hits on the true box's crop
    mask_iou: tuple[float, ...]  # per MASK_COLUMNS, against the whole photo's true mask
    joints_inside: tuple[float, ...]  # per PATHS, then the true mask (true box)


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


def _load_detector(detector_path: str) -> None:
    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    _models["detector"] = load_detectors(detector_path)


def _load(detector_path: str, pose_path: str, segmenter_path: str) -> None:
    _load_detector(detector_path)
    _models["pose"] = load_pose(pose_path)
    _models["segmenter"] = load_segmenter(segmenter_path)


def _best_box(image: np.ndarray) -> np.ndarray | None:
    """The detector's best box (x0, y0, x1, y1) in the photo's pixels; None if it found none."""
    detector = _models["detector"]
    x, box = detector_input(image, detector.size)
    with torch.inference_mode():
        found = decode_figures(detector(x)[0], box, image.shape[1::-1])
    return np.array(found[0]["bbox"]) if found else None


def _keypoints(image: np.ndarray, bbox: np.ndarray) -> np.ndarray:
    """Pose on the crop at ``bbox``, in the photo's pixels, (17, 3); seen with paper where
    the photo's edges cut the crop's margin off and kept on the crop, as the gateway does."""
    pose = _models["pose"]
    piece, origin = crop(image, bbox)
    pads = margin_lost(bbox, image.shape[1::-1], CROP_MARGIN)
    x, box = pose_input(_seen(piece, pads), pose.size)
    with torch.inference_mode():
        points = np.array(decode_keypoints(pose(x)[0], box))
    height, width = piece.shape[:2]
    points[:, :2] = np.clip(points[:, :2] - pads[:2], 0, (width - 1, height - 1)) + origin
    return points


def segment(piece: np.ndarray, pads: tuple[int, int, int, int] = (0, 0, 0, 0)) -> np.ndarray:
    """The segmenter's mask (bool, the crop's size) of one crop, as the handler makes it of
    the crop with ``pads`` (left, top, right, bottom px) of paper round it (the gateway's)."""
    segmenter = _models["segmenter"]
    seen = _seen(piece, pads)
    x, views = segmenter_views(seen, segmenter.size)
    with torch.inference_mode():
        mask, _ = decode_views(segmenter(x), views, seen.shape[:2])
    return without_paper(mask, pads)


def three_masks(
    piece: np.ndarray, joints: object, pads: tuple[int, int, int, int] = (0, 0, 0, 0)
) -> tuple[np.ndarray, ...]:
    """The (H, W) bool masks of one crop per PATHS; `joints` in the crop's pixels; the
    segmenter sees ``pads`` of paper round the crop. The truths scored here (the
    generator's, AnimatedDrawings') carry a margin round the ink that the served masks do
    not: those are given it (`with_ad_margin`), the segmenter's has it already."""
    return _paths(piece, joints, pads)[0]


def _paths(
    piece: np.ndarray, joints: object, pads: tuple[int, int, int, int]
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """`three_masks`, and the gateway's with the lines cut off it where they ran to the
    crop's edge (`FinishedMask.reaching`, with the margin): what the second crop looks at."""
    learned = segment(piece, pads)
    page = light_page(piece)  # as `figure.choose_mask` finds the mask
    height, width = piece.shape[:2]
    edges = Crop((0, 0, width, height), pads).open_edges
    drawn = figure_mask(page, joints, open_edges=edges).mask
    served = figure_mask(page, joints, learned, open_edges=edges)
    masks = learned, with_ad_margin(drawn), with_ad_margin(served.mask)
    return masks, with_ad_margin(served.reaching)


def _seen(piece: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """What the models see of the (h, w, 3) crop `piece`, as the gateway shows it to them
    (`figure.Crop.seen`: a dark page negated, `pads` of paper round)."""
    height, width = piece.shape[:2]
    return Crop((0, 0, width, height), pads).seen(piece)


def _masks(
    image: np.ndarray, bbox: np.ndarray, keypoints: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """The masks per PATHS of the crop at ``bbox``, each pasted into a page-sized canvas,
    and the gateway's with its lines (`_paths`), the crop's size. ``keypoints`` (17, 2+) in
    the photo's pixels."""
    piece, origin = crop(image, bbox)
    h, w = piece.shape[:2]
    x0, y0 = int(origin[0]), int(origin[1])
    pages = []
    pads = margin_lost(bbox, image.shape[1::-1], CROP_MARGIN)
    masks, reaching = _paths(np.ascontiguousarray(piece), keypoints[:, :2] - origin, pads)
    for mask in masks:
        page = np.zeros(image.shape[:2], bool)
        page[y0 : y0 + h, x0 : x0 + w] = mask
        pages.append(page)
    return pages, reaching


def _served(image: np.ndarray, bbox: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The joints (17, 3) and the page-sized masks per PATHS the gateway finds from the
    detector's `bbox`: cropped again around the whole drawing when the gateway's mask runs
    off the first crop into it."""
    points = _keypoints(image, bbox)
    pages, reaching = _masks(image, bbox, points)
    piece, origin = crop(image, bbox)
    (x0, y0), (h, w) = origin.astype(int), piece.shape[:2]
    whole = whole_drawing(image, (x0, y0, x0 + w, y0 + h), reaching)
    if whole is None:
        return points, pages
    bbox = np.r_[np.minimum(bbox[:2], whole[:2]), np.maximum(bbox[2:], whole[2:])]
    points = _keypoints(image, bbox)
    return points, _masks(image, bbox, points)[0]


def score_one(job: tuple[int, str]) -> Scores:
    from torchserve.training.synth import HELD_OUT_STYLES, generate

    seed, mode = job
    sample = generate(seed, **{mode: HELD_OUT_STYLES})
    best = _best_box(sample.image)
    truth = np.asarray(sample.keypoints, dtype=np.float64)
    true_box = np.asarray(sample.bbox, dtype=np.float64)
    if best is not None:
        iou = box_iou(best, true_box)
        served_points, served_masks = _served(sample.image, best)
        served = pck_hits(served_points, truth, true_box)
        served_ious = [mask_iou(m, sample.mask) for m in served_masks]
    else:  # nothing found: every labelled joint and every mask pixel is missed
        iou = 0.0
        served = np.where(truth[:, 2] > 0, 0.0, np.nan)
        served_ious = [0.0] * len(PATHS)
    true_masks = _masks(sample.image, true_box, truth)[0]
    true_ious = [mask_iou(m, sample.mask) for m in true_masks]
    inside = tuple(share_inside(m, truth) for m in (*true_masks, sample.mask))
    return Scores(
        iou,
        served,
        pck_hits(_keypoints(sample.image, true_box), truth, true_box),
        tuple(v for pair in zip(served_ious, true_ious, strict=True) for v in pair),
        inside,
    )


@dataclass
class RealScore:
    name: str
    size: tuple[int, int]  # crop width, height
    iou: tuple[float, ...]  # per PATHS
    joints_inside: tuple[float, ...]  # per PATHS


@dataclass
class RealDrawing:
    """One AnimatedDrawings annotation folder: the crop with its paper, its true mask and
    its joints by name (whatever skeleton it was annotated with)."""

    name: str
    rgb: np.ndarray  # (H, W, 3) uint8
    truth: np.ndarray  # (H, W) bool
    joints: dict[str, np.ndarray]  # name -> (2,) x, y in the crop's pixels

    @property
    def points(self) -> np.ndarray:
        """(J, 2) every annotated joint."""
        return np.array(list(self.joints.values()), dtype=np.float64)


def real_drawings(folder: Path) -> list[RealDrawing]:
    """Each annotation folder under ``folder``."""
    out = []
    for character in sorted(folder.glob("char*")):
        config = yaml.safe_load((character / "char_cfg.yaml").read_text())
        out.append(
            RealDrawing(
                character.name,
                np.asarray(Image.open(character / "texture.png").convert("RGB")),
                np.asarray(Image.open(character / "mask.png").convert("L")) > 127,
                {j["name"]: np.array(j["loc"], dtype=np.float64) for j in config["skeleton"]},
            )
        )
    return out


def score_real(drawings: list[RealDrawing], overlays: Path | None) -> list[RealScore]:
    """Every path on each real drawing's crop; overlays of the first two written if asked."""
    scores = []
    for drawing in drawings:
        name, rgb, truth, joints = drawing.name, drawing.rgb, drawing.truth, drawing.points
        # As the gateway sees an upload cropped this tight: its margin is paper.
        masks = three_masks(rgb, joints, margin_lost(_mask_box(truth), rgb.shape[1::-1]))
        scores.append(
            RealScore(
                name,
                rgb.shape[1::-1],
                tuple(mask_iou(m, truth) for m in masks),
                tuple(share_inside(m, joints) for m in masks),
            )
        )
        if overlays is not None:
            overlays.mkdir(parents=True, exist_ok=True)
            Image.fromarray(overlay(rgb, truth, masks[:2], joints)).save(overlays / f"{name}.png")
    return scores


# The joints of a person's limbs in the character skeleton: what the pose decides (root,
# hip, torso and neck are midpoints of them, or the nose).
LIMB_JOINTS = tuple(n for n in JOINTS if n not in ("root", "hip", "torso", "neck"))


@dataclass
class RealPose:
    name: str
    box_iou: float  # the detector's best box against the true mask's box; 0 if none
    missed: tuple[str, ...]  # limb joints farther than PCK@0.1 from the annotation

    @property
    def pck(self) -> float:
        return 1.0 - len(self.missed) / len(LIMB_JOINTS)


def limbs_missed(
    skeleton: np.ndarray, joints: dict[str, np.ndarray], box: np.ndarray
) -> tuple[str, ...]:
    """The LIMB_JOINTS of `skeleton` (16, 2), in JOINTS order, that miss the annotated
    `joints` by PCK@0.1 (`pck_hits`) of the figure's `box` (x0, y0, x1, y1)."""
    found = skeleton[[JOINT_INDEX[name] for name in LIMB_JOINTS]]
    truth = np.array([[*joints[name], 1.0] for name in LIMB_JOINTS])  # all labelled
    hits = pck_hits(found, truth, box)
    return tuple(name for name, hit in zip(LIMB_JOINTS, hits, strict=True) if not hit)


def score_real_pose(drawings: list[RealDrawing]) -> list[RealPose]:
    """The served pose on each real drawing annotated as a person (the 12 limb joints of
    AnimatedDrawings' skeleton; a bug's or a pig's skeleton has others): the detector on the
    crop as it is, the pose on its best box, as the gateway rigs it (`Skeleton.from_coco`)."""
    scores = []
    for drawing in drawings:
        if not set(LIMB_JOINTS) <= drawing.joints.keys():
            continue
        truth_box = _mask_box(drawing.truth)
        best = _best_box(drawing.rgb)
        if best is None:
            scores.append(RealPose(drawing.name, 0.0, LIMB_JOINTS))
            continue
        skeleton = Skeleton.from_coco(_keypoints(drawing.rgb, best)).rest
        missed = limbs_missed(skeleton, drawing.joints, truth_box)
        scores.append(RealPose(drawing.name, box_iou(best, truth_box), missed))
    return scores


def real_pose_report(scores: list[RealPose]) -> str:
    """The pose on the real drawings, one row each, then the mean."""
    lines = [
        "| drawing | detector IoU | PCK@0.1, 12 limb joints | missed |",
        "|---|---|---|---|",
    ]
    for s in scores:
        missed = ", ".join(s.missed) or "-"
        lines.append(f"| {s.name} | {s.box_iou:.3f} | {s.pck:.2f} | {missed} |")
    if scores:
        mean = np.mean([s.pck for s in scores])
        lines.append(f"| mean | {np.mean([s.box_iou for s in scores]):.3f} | {mean:.3f} | |")
    return "\n".join(lines)


def overlay(
    rgb: np.ndarray, truth: np.ndarray, masks: tuple[np.ndarray, ...], joints: np.ndarray
) -> np.ndarray:
    """Side by side, one panel per mask: the drawing with the mask tinted, its outline, the
    truth's outline (green) and the joints (red: outside the mask)."""
    panels = []
    for mask in masks:
        panel = rgb.copy()
        panel[mask] = (panel[mask] * 0.55 + np.array([255, 0, 220]) * 0.45).astype(np.uint8)
        for edge_of, colour in ((truth, (0, 200, 0)), (mask, (255, 0, 220))):
            edge = cv2.morphologyEx(
                edge_of.astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)
            )
            panel[edge > 0] = colour
        for x, y in np.round(joints).astype(int):
            inside = share_inside(mask, np.array([[x, y]])) == 1.0
            cv2.circle(panel, (int(x), int(y)), 4, (0, 90, 255) if inside else (255, 0, 0), -1)
        panels.append(panel)
    gap = np.full((rgb.shape[0], 8, 3), 255, np.uint8)
    return np.hstack([panels[0], gap, *panels[1:]])


def median_ms(call, runs: int = 30, warm_up: int = 5) -> float:
    """Median milliseconds of ``call()`` on one thread, after a few calls to warm up."""
    torch.set_num_threads(1)
    times = []
    for i in range(runs + warm_up):
        start = time.perf_counter()
        call()
        if i >= warm_up:
            times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def latency_ms(model: torch.nn.Module) -> float:
    """Median milliseconds of one forward pass at the model's input size on one thread."""
    channels = next(model.parameters()).shape[1]  # the first convolution's input
    x = torch.randn(1, channels, model.size, model.size)
    with torch.inference_mode():
        return median_ms(lambda: model(x))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def evaluate(
    n: int, detector_path: Path, pose_path: Path, segmenter_path: Path, workers: int
) -> dict[str, list[Scores]]:
    results = {}
    ctx = multiprocessing.get_context("fork")
    paths = (str(detector_path), str(pose_path), str(segmenter_path))
    with ctx.Pool(workers, initializer=_load, initargs=paths) as pool:
        for name, (start, mode) in SETS.items():
            jobs = [(seed, mode) for seed in range(start, start + n)]
            results[name] = pool.map(score_one, jobs, chunksize=8)
    return results


def evaluate_crowded(n: int, detector_path: Path, workers: int) -> list[tuple[float, float] | None]:
    """``score_crowded`` on the first ``n`` held-out seeds."""
    start = SETS["held-out seeds"][0]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers, initializer=_load_detector, initargs=(str(detector_path),)) as pool:
        return pool.map(score_crowded, range(start, start + n), chunksize=16)


def score_crowded(seed: int) -> tuple[float, float] | None:
    """On a held-out-seed page with other people beside the figure (the generator's crowd):
    the best box's IoU with whichever person it boxes best, and with the box round them all
    (high when it boxed the group as one); None for a page with nobody else."""
    from torchserve.training.synth import HELD_OUT_STYLES, generate

    sample = generate(seed, exclude=HELD_OUT_STYLES, crowd=True)
    if len(sample.others) == 0:
        return None
    people = np.concatenate([sample.bbox[None], sample.others]).astype(np.float64)
    group = np.r_[people[:, :2].min(axis=0), people[:, 2:].max(axis=0)]
    best = _best_box(sample.image)
    if best is None:
        return 0.0, 0.0
    return max(box_iou(best, p) for p in people), box_iou(best, group)


def crowd_report(scores: list[tuple[float, float] | None]) -> str:
    """The detector on crowded pages as a Markdown table."""
    found = [s for s in scores if s is not None]
    if not found:
        return f"(no page with other people among the first {len(scores)} held-out seeds)"
    one, group = np.array(found).T
    boxes = summarise_boxes(list(one))
    return "\n".join(
        [
            "| set | pages with others | detector mean IoU, any one person | recall@0.5 "
            "| best box closer to the group than to one person |",
            "|---|---|---|---|---|",
            f"| held-out seeds, crowded | {len(found)} of {len(scores)} | "
            f"{boxes['mean_iou']:.3f} | {boxes['recall_50']:.3f} | {np.mean(group > one):.3f} |",
        ]
    )


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


def mask_report(results: dict[str, list[Scores]]) -> str:
    """The masks on the synthetic sets: mean IoU per path and crop, joints inside."""
    header = " | ".join(f"{path} IoU, {where}" for path, where in MASK_COLUMNS)
    lines = [
        f"| set | drawings | {header} | true joints inside: {' / '.join(PATHS)} / true mask |",
        "|---|---|" + "---|" * (len(MASK_COLUMNS) + 1),
    ]
    for name, scores in results.items():
        ious = np.array([s.mask_iou for s in scores]).mean(axis=0)
        inside = np.array([s.joints_inside for s in scores]).mean(axis=0)
        cells = " | ".join(f"{v:.3f}" for v in ious)
        lines.append(
            f"| {name} | {len(scores)} | {cells} | {' / '.join(f'{v:.3f}' for v in inside)} |"
        )
    return "\n".join(lines)


def real_report(scores: list[RealScore]) -> str:
    """The masks on the real drawings, one row each, then the mean."""
    lines = [
        "| drawing | crop px | " + " | ".join(f"{p} IoU" for p in PATHS)
        + " | joints inside: " + " | ".join(PATHS) + " |",
        "|---|---|" + "---|" * (2 * len(PATHS)),
    ]  # fmt: skip
    for s in scores:
        ious = " | ".join(f"{v:.3f}" for v in s.iou)
        inside = " | ".join(f"{v:.2f}" for v in s.joints_inside)
        lines.append(f"| {s.name} | {s.size[0]}x{s.size[1]} | {ious} | {inside} |")
    ious = np.array([s.iou for s in scores])
    inside = np.array([s.joints_inside for s in scores])
    means = " | ".join(f"{m:.3f} ({n:.3f})" for m, n in zip(ious.mean(0), ious.min(0), strict=True))
    lines.append(
        f"| mean (min) | | {means} | " + " | ".join(f"{v:.2f}" for v in inside.mean(0)) + " |"
    )
    return "\n".join(lines)


REPHOTO_SEEDS = range(4)  # photos of each real drawing taken again (torchserve.training.rephoto)


@dataclass
class RephotoScore:
    name: str
    box_iou: tuple[float, ...]  # per seed: the detector's best box against the true mask's box
    iou: tuple[tuple[float, ...], ...]  # per seed, per PATHS: the served masks' IoU


def _mask_box(mask: np.ndarray) -> np.ndarray:
    """(4,) x0, y0, x1, y1 of an (H, W) bool mask's pixels."""
    ys, xs = np.nonzero(mask)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=np.float64)


def score_rephotographed(drawings: list[RealDrawing]) -> list[RephotoScore]:
    """The served path (detector, crop, second crop, joints, masks) on each real drawing
    photographed again by the generator's camera, REPHOTO_SEEDS times."""
    scores = []
    for drawing in drawings:
        boxes, ious = [], []
        for seed in REPHOTO_SEEDS:
            image, truth = rephotograph(drawing.rgb, drawing.truth, seed)
            best = _best_box(image)
            if best is None:
                boxes.append(0.0)
                ious.append((0.0,) * len(PATHS))
                continue
            boxes.append(box_iou(best, _mask_box(truth)))
            ious.append(tuple(mask_iou(m, truth) for m in _served(image, best)[1]))
        scores.append(RephotoScore(drawing.name, tuple(boxes), tuple(ious)))
    return scores


def rephoto_report(scores: list[RephotoScore]) -> str:
    """The re-photographed real drawings, one row each (means over the seeds), then the mean."""
    lines = [
        "| drawing | photos | detector IoU | " + " | ".join(f"{p} IoU" for p in PATHS) + " |",
        "|---|---|---|" + "---|" * len(PATHS),
    ]
    for s in scores:
        ious = np.array(s.iou)
        cells = " | ".join(
            f"{m:.3f} ({n:.3f})" for m, n in zip(ious.mean(0), ious.min(0), strict=True)
        )
        lines.append(f"| {s.name} | {len(s.iou)} | {np.mean(s.box_iou):.3f} | {cells} |")
    ious = np.concatenate([np.array(s.iou) for s in scores])
    boxes = np.concatenate([s.box_iou for s in scores])
    cells = " | ".join(f"{m:.3f} ({n:.3f})" for m, n in zip(ious.mean(0), ious.min(0), strict=True))
    lines.append(f"| mean (min) | {len(ious)} | {boxes.mean():.3f} | {cells} |")
    return "\n".join(lines)


def segmenter_call_ms() -> float:
    """Median milliseconds of the handler's whole path for one 500x400 crop on one thread:
    both views' letterboxes, forward pass, logits to the crop's pixels, threshold."""
    piece = np.full((500, 400, 3), 235, np.uint8)
    cv2.circle(piece, (200, 250), 120, (40, 40, 40), 4)
    return median_ms(lambda: segment(piece))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m torchserve.training.evaluate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=500, help="drawings per set")
    parser.add_argument("--detector", type=Path, default=WEIGHTS_DIR / "detector.pt")
    parser.add_argument("--pose", type=Path, default=WEIGHTS_DIR / "pose.pt")
    parser.add_argument("--segmenter", type=Path, default=WEIGHTS_DIR / "segmenter.pt")
    parser.add_argument("--real-dev", type=Path, default=REAL_DEV, help="annotation folders")
    parser.add_argument("--overlays", type=Path, help="write the real drawings' masks here")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", type=Path, help="also write the report (Markdown) here")
    args = parser.parse_args(argv)

    started = time.monotonic()
    results = evaluate(args.n, args.detector, args.pose, args.segmenter, args.workers)
    crowded = crowd_report(evaluate_crowded(args.n, args.detector, args.workers))
    tables = [report(results), mask_report(results)]
    _load(str(args.detector), str(args.pose), str(args.segmenter))
    if (args.real_dev / "char1").is_dir():
        drawings = real_drawings(args.real_dev)
        tables.append(real_report(score_real(drawings, args.overlays)))
        tables.append(real_pose_report(score_real_pose(drawings)))
        tables.append(rephoto_report(score_rephotographed(drawings)))
    else:
        tables += [f"(no real drawings at {args.real_dev}: pass --real-dev)"] * 3
    tables.append(crowded)
    print("\n\n".join(tables), flush=True)
    timing = (
        f"Median forward pass on 1 CPU thread: detector {latency_ms(_models['detector']):.1f} ms "
        f"at {_models['detector'].size}px, pose {latency_ms(_models['pose']):.1f} ms at "
        f"{_models['pose'].size}px, segmenter {latency_ms(_models['segmenter']):.1f} ms at "
        f"{_models['segmenter'].size}px (limit 40 ms); the segmenter's whole call for a "
        f"500x400 crop (both views: letterbox, network, mask at the crop's pixels) "
        f"{segmenter_call_ms():.1f} ms."
    )
    print()
    print(timing)
    print(f"({time.monotonic() - started:.0f}s)")
    if args.write:  # the real photos' section, made against the running service, is kept
        kept = args.write.read_text() if args.write.exists() else ""
        args.write.write_text(carry_section(kept, markdown(args, tables, timing)))


def markdown(args: argparse.Namespace, tables: list[str], timing: str) -> str:
    """EVAL.md: the command, the tables, and what exactly was evaluated."""
    from torchserve.training.data import generator_version

    lines = [
        "# Evaluation of the committed models",
        "",
        f"Produced by `python -m torchserve.training.evaluate --n {args.n} --write {args.write}`.",
        f"Targets (issue 4): {TARGETS}. Targets (issue 9): {MASK_TARGETS}.",
        "",
        "Detector and pose:",
        "",
        tables[0],
        "",
        "The detector on pages with other people of the figure's size beside it (the held-out "
        "seeds drawn with the generator's `crowd`, which `--crowd` trains on), its best box "
        "against each person:",
        "",
        tables[5],
        "",
        "Masks on the synthetic sets (IoU against the whole photo's true mask):",
        "",
        tables[1],
        "",
        f"Masks on the real drawings (`{args.real_dev.name}`, each crop as it is, the "
        "annotated joints; the segmenter sees paper beyond the crop's edges where the gateway's "
        "margin round the mask's box would lie, as it does for an upload cropped this tight):",
        "",
        tables[2],
        "",
        f"Pose on the real drawings annotated as people (`{args.real_dev.name}`, the detector "
        "on each crop as it is, the joints as the gateway rigs them, against `char_cfg.yaml`):",
        "",
        tables[3],
        "",
        f"Masks on the real drawings photographed again (`torchserve.training.rephoto`: each crop on a "
        f"sheet of its own paper, shot at an angle over a table by the generator's camera, "
        f"seeds {REPHOTO_SEEDS.start}-{REPHOTO_SEEDS.stop - 1}), the served path from the "
        "detector on (no minimum scores), IoU against the annotated mask warped alike, mean "
        "(min) over the photos:",
        "",
        tables[4],
        "",
        timing,
        "",
        f"Evaluated with the generator source at version `{generator_version()}`.",
        "",
    ]
    people = person_weights(args.detector)
    weights = [args.detector, *([people] if people else []), args.pose, args.segmenter]
    for path in weights:
        meta = torch.load(path, weights_only=True)["meta"]
        lines.append(f"- `{path.name}` sha256 `{sha256(path)}`: {training_history(meta)}")
    return "\n".join(lines) + "\n"


def training_history(meta: dict) -> str:
    """What a checkpoint's runs were, first to last (a run with --init continued the one
    before it)."""
    runs = []
    while meta:
        runs.append(
            f"{meta.get('trained_steps')} steps of {meta.get('batch_size')} at peak lr "
            f"{meta.get('lr')} on {meta.get('samples')} drawings"
            f"{' with crowd' if meta.get('crowd') else ''} (generator "
            f"`{meta.get('generator')}`), seed {meta.get('seed')}, {meta.get('threads')} thread(s)"
        )
        meta = meta.get("init_meta") or {}
    return "; then ".join(reversed(runs))


if __name__ == "__main__":
    main()
