"""Training data: synthetic drawings cached as model-ready arrays, augmentation and targets.

Each generated drawing gives three records: the whole photo letterboxed for the detector; a
square region around the figure (1.4x its box, at ``REGION`` px) from which the pose
trainer cuts jittered crops, so it learns from boxes as imperfect as the detector's; and the
same square at ``SEG_REGION`` px with the figure's mask, from which the segmenter's trainer
cuts its crops. Generation is the slow part, so the records are cached under
``torchserve/data/cache/``, keyed by the generator's source hash, the seeds and the sizes.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from torchserve.model.outline import outline_hints
from torchserve.model.pose import FLIP_INDEX
from torchserve.model.transforms import PAD_VALUE, fit_letterbox, letterbox

CACHE_DIR = Path(__file__).resolve().parents[1] / "data" / "cache"
REGION = 176  # side of the stored pose region
SEG_REGION = 288  # side of the stored segmenter region: the figure's box is ~206 px in it
REGION_MARGIN = 1.4  # region side / the box's longer side
MAX_OTHERS = 2  # other people's boxes stored per drawing (the generator's crowd)


@dataclass
class Records:
    """Model-ready arrays for a range of seeds (index i = seed start + i)."""

    det_images: np.ndarray  # (N, S, S, 3) uint8 letterboxed photos
    det_boxes: np.ndarray  # (N, 4) float32 figure box in letterboxed pixels
    regions: np.ndarray  # (N, REGION, REGION, 3) uint8 square around the figure
    region_boxes: np.ndarray  # (N, 4) float32 figure box in region pixels
    region_keypoints: np.ndarray  # (N, 17, 3) float32 x, y in region pixels, visibility
    seg_regions: np.ndarray  # (N, SEG_REGION, SEG_REGION, 3) uint8 the same square, larger
    seg_masks: np.ndarray  # (N, SEG_REGION, SEG_REGION) uint8 0..255 the figure's mask there
    seg_boxes: np.ndarray  # (N, 4) float32 figure box in segmenter-region pixels
    # (N, MAX_OTHERS, 4) float32 other people's boxes in letterboxed pixels, NaN rows: none
    det_others: np.ndarray

    def __len__(self) -> int:
        return len(self.det_boxes)


RECORD_FIELDS = tuple(Records.__dataclass_fields__)  # the order make_record returns them in


def region_matrix(bbox: np.ndarray, size: int = REGION) -> np.ndarray:
    """2x3 affine: photo pixels -> a ``size`` square centred on ``bbox``, REGION_MARGIN x its
    longer side."""
    x1, y1, x2, y2 = (float(v) for v in bbox)
    side = max(x2 - x1, y2 - y1, 1.0) * REGION_MARGIN
    scale = size / side
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return np.array(
        [[scale, 0.0, size / 2 - 0.5 - cx * scale], [0.0, scale, size / 2 - 0.5 - cy * scale]]
    )


def apply_affine(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply a 2x3 affine to the x, y columns of (..., 2+) points; extra columns kept."""
    out = np.array(points, dtype=np.float64, copy=True)
    xy = out[..., :2] @ matrix[:, :2].T + matrix[:, 2]
    out[..., :2] = xy
    return out


def warp_region(image: np.ndarray, m: np.ndarray, size: int) -> np.ndarray:
    """``image`` (photo pixels, or a 0/255 mask) through the 2x3 affine ``m`` into a ``size``
    square.

    Downscaling by warpAffine alone aliases thin lines: shrink to about twice the target
    scale first, averaging (INTER_AREA), the way serving letterboxes a large crop."""
    scale = m[0, 0]
    if scale >= 0.5:
        return cv2.warpAffine(
            image, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )
    factor = scale * 2
    h, w = image.shape[:2]
    small = cv2.resize(
        image, (max(1, round(w * factor)), max(1, round(h * factor))), interpolation=cv2.INTER_AREA
    )
    pre = np.array([[factor, 0, 0.5 * factor - 0.5], [0, factor, 0.5 * factor - 0.5]])
    m_small = m.copy()
    m_small[:, :2] = m[:, :2] / factor
    m_small[:, 2] = m[:, 2] - m_small[:, :2] @ pre[:, 2]
    return cv2.warpAffine(
        small, m_small, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )


def make_record(
    image: np.ndarray,
    bbox: np.ndarray,
    keypoints: np.ndarray,
    mask: np.ndarray,
    det_size: int,
    others: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """One labelled photo -> (det image, det box, region, region box, region keypoints,
    segmenter region, its mask (0..255, soft at the edges), segmenter-region box, other
    people's boxes (MAX_OTHERS, 4) in the det image, NaN-padded). ``others`` (K, 4): the
    other people's boxes in the photo's pixels (at most MAX_OTHERS are kept)."""
    det_image, box = letterbox(image, det_size)
    det_box = box.to_input(np.asarray(bbox, dtype=np.float64).reshape(2, 2)).reshape(4)
    det_others = np.full((MAX_OTHERS, 4), np.nan, np.float32)
    for i, other in enumerate(np.zeros((0, 4)) if others is None else others[:MAX_OTHERS]):
        det_others[i] = box.to_input(np.asarray(other, np.float64).reshape(2, 2)).reshape(4)
    corners = np.asarray(bbox, dtype=np.float64).reshape(2, 2)
    m = region_matrix(bbox)
    m_seg = region_matrix(bbox, SEG_REGION)
    mask_255 = np.asarray(mask, dtype=np.uint8) * np.uint8(255)
    return (
        det_image,
        det_box.astype(np.float32),
        warp_region(image, m, REGION),
        apply_affine(m, corners).reshape(4).astype(np.float32),
        apply_affine(m, np.asarray(keypoints, dtype=np.float64)).astype(np.float32),
        warp_region(image, m_seg, SEG_REGION),
        warp_region(mask_255, m_seg, SEG_REGION),
        apply_affine(m_seg, corners).reshape(4).astype(np.float32),
        det_others,
    )


# --- the cache ----------------------------------------------------------------------------


def generator_version() -> str:
    """A hash of the generator's source: a changed generator invalidates the cache."""
    digest = hashlib.sha256()
    synth = Path(__file__).resolve().parent / "synth"
    for path in sorted(synth.rglob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _generate_record(args: tuple[int, str, int, bool]) -> tuple:
    seed, split, det_size, crowd = args
    from torchserve.training.synth import HELD_OUT_STYLES, generate

    if split == "held_out_styles":
        sample = generate(seed, only=HELD_OUT_STYLES)
    else:
        sample = generate(seed, exclude=HELD_OUT_STYLES, crowd=crowd)
    # The network learns the drawing's silhouette; the margin of AnimatedDrawings' masks is
    # a fixed number of the crop's pixels, added when the mask is served.
    return make_record(
        sample.image, sample.bbox, sample.keypoints, sample.silhouette, det_size, sample.others
    )


def build_records(
    seeds: range,
    det_size: int,
    make: Callable[[tuple[int, str, int, bool]], tuple] = _generate_record,
    split: str = "train",
    workers: int = 2,
    crowd: bool = False,
) -> Records:
    """Generate the records of ``seeds`` (in seed order, so results do not depend on
    ``workers``); ``crowd``: the generator's pages with other people beside the figure."""
    n = len(seeds)
    out = Records(
        np.empty((n, det_size, det_size, 3), np.uint8),
        np.empty((n, 4), np.float32),
        np.empty((n, REGION, REGION, 3), np.uint8),
        np.empty((n, 4), np.float32),
        np.empty((n, 17, 3), np.float32),
        np.empty((n, SEG_REGION, SEG_REGION, 3), np.uint8),
        np.empty((n, SEG_REGION, SEG_REGION), np.uint8),
        np.empty((n, 4), np.float32),
        np.empty((n, MAX_OTHERS, 4), np.float32),
    )
    jobs = [(seed, split, det_size, crowd) for seed in seeds]
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.imap(make, jobs, chunksize=16)
            _fill(out, results)
    else:
        _fill(out, map(make, jobs))
    return out


def _fill(out: Records, results) -> None:
    for i, record in enumerate(results):
        for name, value in zip(RECORD_FIELDS, record, strict=True):
            getattr(out, name)[i] = value


def cached_records(
    seeds: range,
    det_size: int,
    split: str = "train",
    workers: int = 2,
    version: str | None = None,
    crowd: bool = False,
) -> Records:
    """``build_records`` for the synth generator, stored once under CACHE_DIR. ``version``
    picks the cache of another generator version (default: the current source's); crowd
    pages are cached apart from the others."""
    version = version or generator_version()
    kind = f"{split}-crowd" if crowd else split
    key = f"{kind}_{seeds.start}_{seeds.stop}_{det_size}_{REGION}_{SEG_REGION}_{version}"
    folder = CACHE_DIR / key
    if version != generator_version() and not (folder / "done").exists():
        raise FileNotFoundError(f"no cached drawings of generator version {version} in {folder}")
    if (folder / "done").exists():
        return Records(*(_load(folder, name, len(seeds)) for name in RECORD_FIELDS))
    records = build_records(seeds, det_size, split=split, workers=workers, crowd=crowd)
    folder.mkdir(parents=True, exist_ok=True)
    for name in RECORD_FIELDS:
        np.save(folder / f"{name}.npy", getattr(records, name))
    (folder / "done").touch()
    return records


def _load(folder: Path, name: str, n: int) -> np.ndarray:
    """One cached field, memory-mapped; caches made before a field existed lack it (only
    ``det_others``: no other people)."""
    path = folder / f"{name}.npy"
    if not path.exists() and name == "det_others":
        return np.full((n, MAX_OTHERS, 4), np.nan, np.float32)
    return np.load(path, mmap_mode="r")


# --- augmentation -------------------------------------------------------------------------


def stroke_width(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Thicker or thinner dark lines than the medium drew: a grey-level erosion grows dark
    strokes, a dilation thins them."""
    roll = rng.random()
    if roll < 0.2:
        return cv2.erode(image, np.ones((2, 2), np.uint8))
    if roll < 0.4:
        return cv2.dilate(image, np.ones((2, 2), np.uint8))
    return image


def cutout(image: np.ndarray, rng: np.random.Generator, chance: float = 0.3) -> np.ndarray:
    """Sometimes paint over a patch with the page's colour: joints hidden by clothes or
    clutter must be placed from the rest of the body."""
    if rng.random() >= chance:
        return image
    size = image.shape[0]
    h, w = (rng.uniform(0.12, 0.3, size=2) * size).astype(int)
    y, x = rng.integers(0, size - h), rng.integers(0, size - w)
    out = image.copy()
    out[y : y + h, x : x + w] = np.median(image.reshape(-1, 3), axis=0)
    return out


def photometric(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Colour and exposure jitter in place of the photos the generator did not make."""
    img = image.astype(np.float32)
    if rng.random() < 0.5:
        img = img[..., rng.permutation(3)]  # ink and paper colours the generator never chose
    if rng.random() < 0.15:
        img = np.repeat(img.mean(axis=2, keepdims=True), 3, axis=2)
    gain = rng.uniform(0.7, 1.15) * rng.uniform(0.9, 1.1, size=3)
    mean = img.mean()
    contrast = rng.uniform(0.6, 1.2)  # faint pencil on a dim photo
    img = (img - mean) * contrast + mean
    img = img * gain + rng.uniform(-20, 20)
    if rng.random() < 0.2:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 1.0))
    if rng.random() < 0.2:
        img = img + rng.normal(0, rng.uniform(2, 8), img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def augment_detector(
    image: np.ndarray, boxes: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A letterboxed photo and its people's boxes (K, 4), the figure first, NaN rows for
    none -> a randomly flipped, zoomed, shifted, recoloured copy and the boxes moved alike.
    The zoom keeps the figure in the frame; another person mostly pushed out of it becomes
    a NaN row."""
    size = image.shape[0]
    boxes = np.asarray(boxes).reshape(-1, 4)
    x1, y1, x2, y2 = boxes[0]
    scale = rng.uniform(0.75, 1.2)
    # Keep the scaled box inside the frame, then place it anywhere that allows.
    scale = min(scale, 0.98 * size / max(x2 - x1, y2 - y1, 1.0))
    bw, bh = (x2 - x1) * scale, (y2 - y1) * scale
    nx1 = (
        rng.uniform(0, max(size - bw, 0))
        if rng.random() < 0.5
        else x1 * scale + rng.uniform(-0.1, 0.1) * size
    )
    ny1 = (
        rng.uniform(0, max(size - bh, 0))
        if rng.random() < 0.5
        else y1 * scale + rng.uniform(-0.1, 0.1) * size
    )
    nx1 = float(np.clip(nx1, 0, max(size - bw, 0)))
    ny1 = float(np.clip(ny1, 0, max(size - bh, 0)))
    m = np.array([[scale, 0, nx1 - x1 * scale], [0, scale, ny1 - y1 * scale]])
    if rng.random() < 0.5:  # a box has no left or right: flipping needs no relabelling
        m = np.array([[-1.0, 0, size - 1], [0, 1, 0]]) @ np.vstack([m, [0, 0, 1]])
    out = cv2.warpAffine(
        image, m, (size, size), flags=cv2.INTER_LINEAR, borderValue=(PAD_VALUE,) * 3
    )
    corners = apply_affine(m, boxes.reshape(-1, 2, 2))
    moved = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    inside = np.clip(moved, 0, size)
    area = np.prod(moved[:, 2:] - moved[:, :2], axis=1)
    kept = np.prod(inside[:, 2:] - inside[:, :2], axis=1)
    moved[1:][~(kept[1:] >= 0.5 * area[1:])] = np.nan
    moved[1:] = np.where(np.isnan(moved[1:]), np.nan, inside[1:])
    return photometric(stroke_width(out, rng), rng), moved.astype(np.float32)


def erase_figure(image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """The page with its people painted over from their surroundings (``boxes`` (K, 4),
    NaN rows skipped): a negative example, so that a page with no person on it scores low."""
    mask = np.zeros(image.shape[:2], np.uint8)
    for box in np.asarray(boxes, np.float64).reshape(-1, 4):
        if np.isnan(box).any():
            continue
        x1, y1, x2, y2 = np.round(box).astype(int)
        mask[max(y1 - 2, 0) : y2 + 3, max(x1 - 2, 0) : x2 + 3] = 255
    return cv2.inpaint(image, mask, 3, cv2.INPAINT_TELEA)


def jitter_crop(box: np.ndarray, rng: np.random.Generator, limit: float) -> np.ndarray:
    """A crop box around ``box`` as a detector (or a person) might draw it: each side moved by
    up to ``limit`` of the box's size, more often outwards than inwards."""
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    d = rng.uniform(-0.4 * limit, limit, size=4) * np.array([w, h, w, h])
    return np.array([x1 - d[0], y1 - d[1], x2 + d[2], y2 + d[3]])


def crop_matrix(crop: np.ndarray, size: int, angle: float = 0.0, flip: bool = False) -> np.ndarray:
    """2x3 affine: region pixels -> the pose input made from ``crop`` (x1, y1, x2, y2) the way
    serving makes it (cut, letterbox), then rotated by ``angle`` degrees, maybe mirrored."""
    cw, ch = crop[2] - crop[0], crop[3] - crop[1]
    lb = fit_letterbox(max(round(cw), 1), max(round(ch), 1), size)
    m = lb.matrix().copy()
    m[:, 2] -= m[:, :2] @ crop[:2]
    centre = (size / 2 - 0.5, size / 2 - 0.5)
    m = cv2.getRotationMatrix2D(centre, angle, 1.0) @ np.vstack([m, [0, 0, 1]])
    if flip:
        m = np.array([[-1.0, 0, size - 1], [0, 1, 0]]) @ np.vstack([m, [0, 0, 1]])
    return m


def cut_crop(
    region: np.ndarray, crop: np.ndarray, m: np.ndarray, size: int, fill: int = PAD_VALUE
) -> np.ndarray:
    """The model input for ``crop_matrix`` ``m``: the crop, ``fill`` beyond it as served
    (the letterbox's grey for an image, 0 for a mask)."""
    out = cv2.warpAffine(region, m, (size, size), flags=cv2.INTER_LINEAR, borderValue=(fill,) * 3)
    x1, y1, x2, y2 = crop
    quad = apply_affine(m, np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]]))
    inside = np.zeros((size, size), np.uint8)
    cv2.fillConvexPoly(inside, np.round(quad * 16).astype(np.int32), 1, cv2.LINE_8, shift=4)
    out[inside == 0] = fill
    return out


def augment_pose(
    region: np.ndarray,
    box: np.ndarray,
    keypoints: np.ndarray,
    size: int,
    rng: np.random.Generator,
    jitter: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:
    """A figure's region -> (pose input image ``size`` square, keypoints in its pixels).

    The crop is what serving gets: a box near the figure's, letterboxed. A little rotation
    and a mirror (with left and right joints swapped) add variety.
    """
    crop = jitter_crop(box, rng, jitter)
    crop[[0, 1]] = np.maximum(crop[[0, 1]], 0)
    crop[[2, 3]] = np.minimum(crop[[2, 3]], region.shape[1] - 1)
    flip = bool(rng.random() < 0.5)
    m = crop_matrix(crop, size, angle=float(rng.normal(0, 6)), flip=flip)
    kps = apply_affine(m, keypoints)
    if flip:
        kps = kps[list(FLIP_INDEX)]
    image = cutout(stroke_width(cut_crop(region, crop, m, size), rng), rng)
    return photometric(image, rng), kps.astype(np.float32)


# Share of segmenter crops turned a quarter (see augment_segmenter).
QUARTER_TURNS = 0.15


def augment_segmenter(
    region: np.ndarray,
    box: np.ndarray,
    mask: np.ndarray,
    size: int,
    rng: np.random.Generator,
    jitter: float = 0.22,
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A figure's segmenter region and mask -> (input image ``size`` square, or a random
    ``window`` square of it; its hint channels (2, ...); the mask's share of each pixel
    there, float32 0..1).

    The crop is what serving gets (a box near the figure's, letterboxed), a little rotated,
    maybe mirrored, now and then turned a quarter (ruled or squared paper, a table's edge:
    lines run every way in photos, and what is paper does not depend on which). Nothing that
    would change the drawing without its mask (no stroke thickening, no painted-over
    patches): only the photo's colours are jittered."""
    crop = jitter_crop(box, rng, jitter)
    crop[[0, 1]] = np.maximum(crop[[0, 1]], 0)
    crop[[2, 3]] = np.minimum(crop[[2, 3]], region.shape[1] - 1)
    angle = float(rng.normal(0, 5))
    if rng.random() < QUARTER_TURNS:
        angle += 90.0 * rng.choice([-1.0, 1.0])
    m = crop_matrix(crop, size, angle=angle, flip=bool(rng.random() < 0.5))
    image = photometric(cut_crop(region, crop, m, size), rng)
    target = cut_crop(mask, crop, m, size, fill=0).astype(np.float32) / 255
    # The hints see the whole input, as served; a window is cut from them afterwards.
    valid = cut_crop(np.full(mask.shape, 255, np.uint8), crop, m, size, fill=0) > 127
    hints = outline_hints(image, valid)
    if window is not None and window < size:
        x0, y0 = rng.integers(0, size - window + 1, size=2)
        image = image[y0 : y0 + window, x0 : x0 + window]
        target = target[y0 : y0 + window, x0 : x0 + window]
        hints = hints[:, y0 : y0 + window, x0 : x0 + window]
    return np.ascontiguousarray(image), np.ascontiguousarray(hints), np.ascontiguousarray(target)


# --- targets ------------------------------------------------------------------------------


def detector_targets(
    boxes: np.ndarray, size: int, stride: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes (N, K, 4) (or (N, 4), one each) in input pixels -> centre heatmaps (N, g, g),
    l/t/r/b in cells (N, 4, g, g) and regression weights (N, g, g): the cells near each
    centre. A NaN box: no figure there. Where two people's Gaussians meet, a cell takes the
    higher heat and regresses that person's box."""
    boxes = np.asarray(boxes)  # float32 boxes stay float32 (what the cache holds)
    if boxes.ndim == 2:
        boxes = boxes[:, None]
    g = size // stride
    centres = (np.arange(g) + 0.5) * stride - 0.5
    n, k = boxes.shape[:2]
    x1, y1, x2, y2 = (boxes[..., i][..., None, None] for i in range(4))  # (N, K, 1, 1)
    xs, ys = centres[None, None, None, :], centres[None, None, :, None]
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    sigma = np.clip(0.1 * np.sqrt((x2 - x1) * (y2 - y1)) / stride, 0.7, 3.0)
    d2 = ((xs - cx) ** 2 + (ys - cy) ** 2) / stride**2
    heat = np.exp(-d2 / (2 * sigma**2))  # (N, K, g, g)
    # The cell holding each centre is the one positive of the focal loss.
    ci = np.clip(np.nan_to_num((cx + 0.5) / stride).astype(int), 0, g - 1).reshape(n, k)
    cj = np.clip(np.nan_to_num((cy + 0.5) / stride).astype(int), 0, g - 1).reshape(n, k)
    heat[np.arange(n)[:, None], np.arange(k)[None], cj, ci] = 1.0
    heat = np.nan_to_num(heat, nan=0.0)
    heat[np.isnan(boxes).any(axis=2)] = 0.0
    owner = heat.argmax(axis=1)[:, None]  # (N, 1, g, g)
    sides = [(xs - x1) / stride, (ys - y1) / stride, (x2 - xs) / stride, (y2 - ys) / stride]
    ltrb = np.stack(np.broadcast_arrays(*sides), axis=2)  # (N, K, 4, g, g)
    ltrb = np.take_along_axis(ltrb, owner[:, :, None].repeat(4, axis=2), axis=1)[:, 0]
    heat = heat.max(axis=1).astype(np.float32)
    weights = (heat > 0.3).astype(np.float32) * heat
    return heat, np.nan_to_num(ltrb).astype(np.float32), weights


def pose_targets(
    keypoints: np.ndarray, size: int, stride: int, sigma: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints (N, 17, 3) in input pixels -> target distributions (N, 17, g, g), each summing
    to 1, and joint weights (N, 17): visible joints inside the input."""
    g = size // stride
    centres = np.arange(g, dtype=np.float32)
    u = (keypoints[..., 0] + 0.5) / stride - 0.5
    v = (keypoints[..., 1] + 0.5) / stride - 0.5
    inside = (u > -0.5) & (u < g - 0.5) & (v > -0.5) & (v < g - 0.5)
    u, v = np.clip(u, 0, g - 1), np.clip(v, 0, g - 1)
    gx = np.exp(-((centres - u[..., None]) ** 2) / (2 * sigma**2))
    gy = np.exp(-((centres - v[..., None]) ** 2) / (2 * sigma**2))
    target = gy[..., :, None] * gx[..., None, :]
    target /= target.sum(axis=(-2, -1), keepdims=True)
    weights = ((keypoints[..., 2] > 0) & inside).astype(np.float32)
    return target.astype(np.float32), weights


def cosine_lr(step: int, steps: int, base: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 2% of ``base``."""
    if step < warmup:
        return base * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return base * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))
