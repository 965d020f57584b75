"""One labelled sample: a photographed page with a child's drawing of a person on it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import cv2
import numpy as np

from . import camera
from .figure import Figure, build_figure, draw_figure
from .props import add_props
from .scene import Layout, colour_in_page, decorate, ghosts, paper, whiteboard_light
from .styles import STYLE_AXES, allowed_values, pick_styles

MIN_SIDE, MAX_SIDE = 32, 4096
# AnimatedDrawings' masks run about 2 px outside the drawing's ink, whatever the crop's size
# (measured on ../shared/real-dev: the median distance from a mask's edge to the nearest ink
# is 1.9-2.3 px on all six, crops of 257 to 564 px): their segmentation dilates it.
MASK_MARGIN_PX = 2
ASPECTS = (1.0, 4 / 3, 3 / 2, 16 / 9, 5 / 4)
# With `crowd`, the share of pages with one other person of about the figure's size beside
# it, and with two (one each side): families, friends holding hands. Real photos with several figures touching were boxed as one by a detector that
# had never seen two labelled side by side.
CROWD_ONE, CROWD_TWO = 0.15, 0.06


@dataclass(frozen=True)
class Sample:
    image: np.ndarray  # (H, W, 3) uint8 RGB, the "photo"
    bbox: np.ndarray  # (4,) float32 [x1, y1, x2, y2]: tight box of the main figure, image px
    # (17, 3) float32 [x, y, visible], COCO order, image px; "left" is the figure's own left
    # (the image's right). Every joint is labelled (visible = 1), as an annotator clicks
    # even a knee under a dress where it must be.
    keypoints: np.ndarray
    # (H, W) bool: the main figure's filled silhouette: its strokes and fills as meant (gaps
    # in a stroke or a scribbled fill included), what they enclose, and its separate
    # blocks; never the things drawn or lying against it. What the segmenter learns.
    silhouette: np.ndarray
    # (H, W) bool: the figure's mask as AnimatedDrawings' tools make it (their mask.png):
    # the silhouette grown by MASK_MARGIN_PX, holes that closes filled. What masks are
    # judged against.
    mask: np.ndarray
    style: dict[str, str]  # one value per axis of STYLE_AXES
    # (K, 4) float32: tight boxes of the other people on the page as big as the figure
    # (`crowd`), image px; (0, 4) when there are none. Not the scene's small figures.
    others: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))


def _image_size(rng: np.random.Generator, size: int | tuple[int, int] | None) -> tuple[int, int]:
    """(height, width): `size` is the longer side (aspect random) or an exact (h, w)."""
    aspect = ASPECTS[int(rng.integers(len(ASPECTS)))]
    portrait = rng.random() < 0.6
    if size is None:
        longer = int(rng.integers(320, 1001))
    elif isinstance(size, tuple | list):
        h, w = (int(v) for v in size)
        if not (MIN_SIDE <= h <= MAX_SIDE and MIN_SIDE <= w <= MAX_SIDE):
            raise ValueError(f"size {size} outside {MIN_SIDE}..{MAX_SIDE} px per side")
        return h, w
    else:
        longer = int(size)
    if not MIN_SIDE <= longer <= MAX_SIDE:
        raise ValueError(f"size {size} outside {MIN_SIDE}..{MAX_SIDE} px")
    shorter = max(MIN_SIDE, int(round(longer / aspect)))
    return (longer, shorter) if portrait else (shorter, longer)


def _tilt(rng: np.random.Generator, figure: Figure, max_deg: float) -> Figure:
    """Children rarely draw a person upright, or with the proportions they meant."""
    a = np.radians(rng.uniform(-max_deg, max_deg))
    r = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    r = np.diag([rng.uniform(0.8, 1.2), 1.0]) @ r  # squat or lanky
    for s in figure.shapes:
        s.points = s.points @ r
    return Figure(figure.keypoints @ r, figure.shapes)


def _placement(figure: Figure, box: tuple[float, float, float, float]):
    """Scale-and-shift from figure units to page px that fits the figure in `box`."""
    lo, hi = figure.bounds()
    x0, y0, x1, y1 = box
    k = min((x1 - x0) / (hi[0] - lo[0]), (y1 - y0) / (hi[1] - lo[1]))
    offset = np.array([x0, y0]) + (np.array([x1 - x0, y1 - y0]) - (hi - lo) * k) / 2
    return lambda p: (np.asarray(p) - lo) * k + offset


def _place(rng: np.random.Generator, figure: Figure, h: int, w: int, margin: float):
    """Where the main figure goes: 20-90 % of the page's height (if it fits), anywhere."""
    lo, hi = figure.bounds()
    fw, fh = hi - lo
    height = rng.uniform(0.2, 0.9) * h
    k = min(height / fh, (w - 2 * margin) / fw, (h - 2 * margin) / fh)
    bw, bh = fw * k, fh * k
    x0 = rng.uniform(margin, max(margin, w - margin - bw))
    y0 = rng.uniform(margin, max(margin, h - margin - bh))
    return (x0, y0, x0 + bw, y0 + bh)


def _frame(rng: np.random.Generator, corners: np.ndarray, h: int, w: int, photo: str):
    """A camera homography that keeps `corners` (the whole figure) in the frame; after a
    few misses, a square-on shot."""
    for _ in range(6):
        H = camera.homography(rng, h, w, photo)
        moved = cv2.perspectiveTransform(corners[None], H)[0]
        if moved.min() >= 1 and moved[:, 0].max() <= w - 2 and moved[:, 1].max() <= h - 2:
            return H
    return np.eye(3)


def fill_enclosed(mask: np.ndarray) -> np.ndarray:
    """`mask` (uint8 0/1) plus every background region that does not reach its border."""
    x, y, w, h = cv2.boundingRect(mask)
    if w == 0:
        return mask
    window = np.pad(mask[y : y + h, x : x + w], 1)  # a ring of background joins the outside
    count, labels = cv2.connectedComponents((window == 0).astype(np.uint8), connectivity=4)
    outside = labels[0, 0]
    out = mask.copy()
    out[y : y + h, x : x + w] = (labels != outside)[1:-1, 1:-1]
    return out


def with_margin(silhouette: np.ndarray, margin: int = MASK_MARGIN_PX) -> np.ndarray:
    """A silhouette (uint8 0/1) as AnimatedDrawings' masks draw it: grown by `margin` px,
    and the holes that closes filled."""
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1,) * 2)
    return fill_enclosed(cv2.dilate(silhouette, disc))


def _extent(mask: np.ndarray, points: np.ndarray) -> tuple[float, float, float, float]:
    """The tight box (x1, y1, x2, y2) around a mask's pixels and some points."""
    x, y, mw, mh = cv2.boundingRect(mask)
    if mw == 0:  # every stroke skipped: the joints alone
        x, y = points.min(axis=0)
    return (
        min(x, points[:, 0].min()),
        min(y, points[:, 1].min()),
        max(x + mw, points[:, 0].max()),
        max(y + mh, points[:, 1].max()),
    )


def _companion_boxes(
    rng: np.random.Generator, fig_box, h: int, w: int, margin: float
) -> list[tuple[float, float, float, float]]:
    """Where other people stand beside the figure: boxes (x0, y0, x1, y1) of about its size,
    on about the same ground, side by side (their boxes barely overlapping, as hands and hair
    touch), inside the page; none on most pages."""
    roll = rng.random()
    n = 2 if roll < CROWD_TWO else 1 if roll < CROWD_TWO + CROWD_ONE else 0
    x0, y0, x1, y1 = fig_box
    bw, bh = x1 - x0, y1 - y0
    sides = ["left", "right"] if n == 2 else [rng.choice(["left", "right"])]
    boxes = []
    for side in sides:
        ch = bh * rng.uniform(0.7, 1.1)  # the scene's small people stay under 0.8
        cw = ch * rng.uniform(0.45, 0.9)
        gap = rng.uniform(-0.1, 0.2) * min(bw, cw)
        cx0 = x0 - gap - cw if side == "left" else x1 + gap
        cy1 = y1 + rng.uniform(-0.15, 0.1) * bh
        box = (cx0, cy1 - ch, cx0 + cw, cy1)
        if box[0] >= margin and box[1] >= margin and box[2] <= w - margin and box[3] <= h - margin:
            boxes.append(box)
    return boxes


def _draw_companions(
    rng: np.random.Generator,
    boxes: list,
    sheet: np.ndarray,
    exclude: dict[str, str] | None,
    medium: str,
    scale: float,
    stroke_scale: float,
) -> list[np.ndarray]:
    """Draw a person into each box on `sheet`; their silhouettes (uint8 0/1), in order."""
    h, w = sheet.shape[:2]
    masks = []
    for box in boxes:
        other = _tilt(rng, build_figure(rng, pick_styles(rng, exclude, {"medium": medium})), 8)
        drawn = np.zeros((h, w), np.uint8)
        to_px = _placement(other, box)
        for ink in draw_figure(rng, other, (h, w), medium, scale, to_px, stroke_scale, True):
            ink.silhouette(drawn)
            ink.composite(sheet)
        masks.append(drawn)
    return masks


def generate(
    seed: int,
    *,
    size: int | tuple[int, int] | None = None,
    exclude: dict[str, str] | None = None,
    only: dict[str, str] | None = None,
    crowd: bool = False,
) -> Sample:
    """A labelled photo of a child's drawing of a person; the same arguments, the same bytes.

    size: None = random (longer side 320..1000 px, portrait or landscape); an int = the
    longer side (aspect and orientation still random); a tuple = exact (height, width).
    exclude: styles never produced, e.g. HELD_OUT_STYLES for training (a value may also
    be a tuple of values to leave out of that axis).
    only: styles forced, e.g. HELD_OUT_STYLES for the held-out-styles evaluation.
    crowd: some pages also hold other people of the figure's size beside it, their
    boxes in `Sample.others` (training; drawn from a generator of their own, so a page
    without them is the same as with crowd off).
    """
    rng = np.random.default_rng(seed)
    style = pick_styles(rng, exclude, only)
    h, w = _image_size(rng, size)
    # Stroke widths and tremor are tuned at 512 px (a very long thin image counts as less).
    scale = min(max(h, w), 2.5 * min(h, w)) / 512
    medium = style["medium"]

    # The page: paper, then the things around the figure, then the figure itself.
    figure = _tilt(rng, build_figure(rng, style), 8.0)
    # Room for stroke width and tremor past the figure's outline.
    margin = min(10 * scale + 4, 0.15 * min(h, w))
    fig_box = _place(rng, figure, h, w, margin)
    x0, y0, x1, y1 = fig_box
    # Strokes are thinner when the whole drawing is small; a crayon is a crayon, though.
    stroke_scale = float(np.clip((y1 - y0) / (0.6 * h), 0.5, 1.0))

    sheet, fibre = paper(rng, style["paper"], h, w, scale)
    layout = Layout(h, w)
    pad = 0.04 * (y1 - y0) + margin
    layout.take((x0 - pad, y0 - pad, x1 + pad, y1 + pad))
    crowd_rng = np.random.default_rng([seed, 1])
    # A page coloured all over would paint over them (it spares the main figure only).
    crowded = crowd and style["background"] != "coloured"
    companions = _companion_boxes(crowd_rng, fig_box, h, w, margin) if crowded else []
    for cx0, cy0, cx1, cy1 in companions:
        layout.take((cx0 - pad, cy0 - pad, cx1 + pad, cy1 + pad))

    def extra_figure(box) -> None:
        other = pick_styles(rng, exclude, {"medium": medium})
        small = build_figure(rng, other)
        for ink in draw_figure(rng, small, (h, w), medium, scale, _placement(small, box), 0.7):
            ink.composite(sheet)

    count = {"plain": 0, "some": int(rng.integers(1, 4)), "busy": int(rng.integers(4, 9))}
    others = allowed_values("medium", exclude)  # the rest of the page may use another tool
    scene_medium = others[int(rng.integers(len(others)))] if rng.random() < 0.3 else medium
    n = count[style["scene"]]
    if style["paper"] == "whiteboard":
        ghosts(rng, (h, w), scale).composite(sheet)
    decorate(rng, sheet, layout, scene_medium, scale, n, fig_box, margin, extra_figure)
    others = _draw_companions(crowd_rng, companions, sheet, exclude, medium, scale, stroke_scale)

    mask = np.zeros((h, w), np.uint8)
    to_px = _placement(figure, fig_box)
    inks = draw_figure(rng, figure, (h, w), medium, scale, to_px, stroke_scale, silhouette=True)
    for ink in inks:
        ink.silhouette(mask)
    mask = fill_enclosed(mask)
    if style["background"] == "coloured":
        inks = colour_in_page(rng, (h, w), scene_medium, scale, mask > 0) + inks
    for ink in inks:
        ink.composite(sheet)
    keypoints = to_px(figure.keypoints)
    if style["props"] == "touching":
        ex0, ey0, ex1, ey1 = _extent(mask, keypoints)
        hidden = add_props(
            rng, sheet, mask > 0, keypoints, (ex0, ey0, ex1, ey1), scene_medium, scale
        )
        mask[hidden] = 0
    if style["paper"] == "whiteboard":
        whiteboard_light(rng, sheet)

    # The photo: light, camera angle, lens and JPEG; the labels follow the same homography.
    camera.light(rng, sheet, style["photo"], fibre)
    ex0, ey0, ex1, ey1 = _extent(mask, keypoints)
    corners = np.float32([(ex0, ey0), (ex1, ey0), (ex1, ey1), (ex0, ey1)])
    H = _frame(rng, corners, h, w, style["photo"])
    photo = camera.shoot(rng, cv2.convertScaleAbs(sheet, alpha=255.0), H, style["photo"])
    photo = camera.jpeg(rng, photo)
    # Nearest-neighbour warping can open pinholes in the silhouette: close them again.
    mask = fill_enclosed(camera.warp_mask(mask, H, corners))
    kp = cv2.perspectiveTransform(keypoints[None].astype(np.float64), H)[0]
    other_boxes = []
    for drawn in others:
        x, y, bw, bh = cv2.boundingRect(drawn)
        if bw == 0:
            continue
        quad = np.float32([(x, y), (x + bw, y), (x + bw, y + bh), (x, y + bh)])
        whole = cv2.perspectiveTransform(quad[None], H)[0]
        x, y, bw, bh = cv2.boundingRect(camera.warp_mask(drawn, H, quad))
        # A person mostly outside the photo is not one the detector should find.
        if bw * bh >= 0.5 * np.ptp(whole[:, 0]) * np.ptp(whole[:, 1]):
            other_boxes.append((x, y, x + bw, y + bh))

    # The box is the drawing's own extent (the silhouette's), as an annotator draws it.
    bbox = np.clip(np.array(_extent(mask, kp)), 0, [w, h, w, h]).astype(np.float32)
    return Sample(
        image=np.ascontiguousarray(photo),
        bbox=bbox,
        keypoints=np.concatenate([kp, np.ones((17, 1))], axis=1).astype(np.float32),
        silhouette=mask.astype(bool),
        mask=with_margin(mask).astype(bool),
        style=style,
        others=np.array(other_boxes, np.float32).reshape(-1, 4),
    )


def generate_batch(seeds: Iterable[int], **kw) -> list[Sample]:
    """`generate` for each seed, same keyword arguments."""
    return [generate(int(s), **kw) for s in seeds]


__all__ = ["Sample", "STYLE_AXES", "generate", "generate_batch"]
