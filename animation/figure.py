"""The figure pipeline: from a photographed drawing, the figure's joints and, where it is
known, its outline, to a character that can be rigged and animated.

The steps, each a function of numpy arrays (pixels are the photo's unless said):

1. `crop_for`: the figure's box grown by a margin (`crop.CROP_MARGIN`) and to hold every
   joint placed by hand -> a `Crop`, which also knows how much of that margin the photo's
   edges cut off. Models look at `Crop.seen` (the crop with plain paper there, as they were
   trained) and their joints and masks come back onto the crop (`Crop.joints_from_seen`,
   `Crop.mask_from_seen`).
2. `choose_mask`: the figure's mask from the crop and its joints: OpenCV's, or, with a
   learned segmenter's mask, the better of the two (`segment.figure_mask`).
3. `grown_box`: where a detector boxed only part of a drawing (the figure's mask runs off
   the crop into an outline that goes on past it), the box of the whole drawing, to crop
   again (`crop.whole_drawing`).
4. `character_of`: texture, mask and skeleton -> a `Character`; `rig_for`: its rig at the
   resolution an output can show, its strokes at least an output pixel wide.

`character_from_photo` runs them for a photo whose joints are known, with its outline or its
box. The gateway runs the same steps around its model calls (gateway/rendering/); a drawing
that gives no figure raises `NoFigure`, a box with nothing of the photo in it `BadBox`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animation.character import Character, for_output, with_stroke_floor
from animation.crop import (
    CROP_MARGIN,
    crop_box,
    margin_lost,
    paper_beyond,
    whole_drawing,
    without_paper,
)
from animation.figure_mask import ALL_EDGES, Edges, FigureJoints, FinishedMask
from animation.paper import light_page
from animation.render import Rig, build_rig
from animation.segment import figure_mask
from animation.skeleton import Skeleton

Box = tuple[int, int, int, int]  # left, top, right, bottom in pixels (right, bottom excluded)
NO_PADS: Box = (0, 0, 0, 0)
MIN_FIGURE_FRACTION = 0.01  # of the crop; less is a speck, not a figure


class FigureError(ValueError):
    """The drawing cannot give a figure to animate."""


class NoFigure(FigureError):
    """No figure could be separated from the paper, or the one found cannot be rigged."""


class BadBox(FigureError):
    """A figure's box that holds nothing of the image (too small, or outside it)."""


@dataclass(frozen=True)
class Crop:
    """Where the figure is cut from the image, and the paper its margin lacks there.

    `pads` (left, top, right, bottom px): how much of the crop's margin the image's edges
    cut off (an upload cropped tight round the figure); the models see that much paper."""

    box: Box
    pads: Box = NO_PADS

    @property
    def open_edges(self) -> Edges:
        """Which of the crop's edges (left, top, right, bottom) the image goes on past
        (`finish_mask`): not where the image's own edge cut off half its margin or more,
        the figure's box lying against it (an upload cropped tight round the figure)."""
        width, height = self.size
        left, top, right, bottom = self.pads
        # The margin on each side is CROP_MARGIN of the box the whole crop grew from.
        dx = CROP_MARGIN * (width + left + right) / (1 + 2 * CROP_MARGIN)
        dy = CROP_MARGIN * (height + top + bottom) / (1 + 2 * CROP_MARGIN)
        return left < dx / 2, top < dy / 2, right < dx / 2, bottom < dy / 2

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the crop."""
        left, top, right, bottom = self.box
        return right - left, bottom - top

    def pixels(self, rgb: np.ndarray) -> np.ndarray:
        """(h, w, 3) of the (H, W, 3) image `rgb`: the crop."""
        left, top, right, bottom = self.box
        return np.ascontiguousarray(rgb[top:bottom, left:right])

    def seen(self, crop: np.ndarray) -> np.ndarray:
        """What the models see of the (h, w, 3) `crop`: it as a light page shows it
        (`paper.light_page`), with `pads` of plain paper round."""
        return paper_beyond(light_page(crop), self.pads)

    def joints_from_seen(self, keypoints: np.ndarray) -> np.ndarray:
        """(N, 2+) joints found on `seen` -> the same on the crop: the paper taken off, and a
        joint in the paper (or in a model's letterbox) put on the crop's edge, where the
        figure is (so /annotate's joints, sent back, keep this crop)."""
        out = np.array(keypoints, np.float64)
        width, height = self.size
        out[:, :2] = np.clip(out[:, :2] - self.pads[:2], 0, (width - 1, height - 1))
        return out

    def mask_from_seen(self, mask: np.ndarray) -> np.ndarray:
        """A mask over `seen` -> the crop's own pixels of it."""
        return without_paper(mask, self.pads)


def crop_for(
    bbox: tuple[float, float, float, float],
    size: tuple[int, int],
    hold: np.ndarray | None = None,
) -> Crop:
    """The crop round the figure's `bbox` (left, top, right, bottom) in an image of `size`
    (width, height): grown to hold the (N, 2) points `hold` (joints a person placed), then
    by the crop margin; BadBox when it leaves nothing of the image to crop."""
    if hold is not None and len(hold):
        points = np.asarray(hold, np.float64)[:, :2]
        bbox = (*np.minimum(bbox[:2], points.min(0)), *np.maximum(bbox[2:], points.max(0)))
    try:
        box = crop_box(bbox, size)
    except ValueError as exc:
        raise BadBox(str(exc)) from None
    return Crop(box, margin_lost(bbox, size))


def choose_mask(
    crop: np.ndarray,
    keypoints: np.ndarray,
    learned: np.ndarray | None = None,
    budget_s: float | None = None,
    open_edges: Edges = ALL_EDGES,
) -> FinishedMask:
    """The figure's mask in the (h, w, 3) uint8 `crop` with its 17 COCO `keypoints` (x, y in
    crop px): OpenCV's, or with a segmenter's (h, w) bool mask `learned`, the better of the
    two (the segmenter's alone past `budget_s` CPU seconds: `segment.figure_mask`); with
    its warnings and its source either way. `open_edges`: the crop's edges the image goes
    on past (`Crop.open_edges`)."""
    joints = FigureJoints.of(np.asarray(keypoints)[:, :2])
    return figure_mask(light_page(crop), joints, learned, budget_s, open_edges)


def grown_box(
    rgb: np.ndarray,
    crop: Crop,
    mask: np.ndarray,
    bbox: tuple[float, float, float, float],
) -> tuple[float, float, float, float] | None:
    """The figure's `bbox` grown to the whole drawing its (h, w) `mask` over `crop` runs
    into past the crop's edge, in the (H, W, 3) image `rgb`; None when it runs into none
    (the figure is all in the crop)."""
    whole = whole_drawing(rgb, crop.box, mask)
    if whole is None:
        return None
    return (*np.minimum(bbox[:2], whole[:2]), *np.maximum(bbox[2:], whole[2:]))


def character_of(crop: np.ndarray, keypoints: np.ndarray, mask: np.ndarray) -> Character:
    """The character: texture = the (h, w, 3) `crop`, its (h, w) bool `mask`, its skeleton
    from the 17 COCO `keypoints` (crop px). NoFigure when the mask is a speck."""
    if mask.sum() < MIN_FIGURE_FRACTION * mask.size:
        raise NoFigure("no drawn figure could be separated from the paper")
    texture = np.dstack([crop, np.full(crop.shape[:2], 255, np.uint8)])
    points = np.asarray(keypoints)[:, :2]
    return Character(texture=texture, mask=mask, skeleton=Skeleton.from_coco(points))


def rig_for(character: Character, size: int, workers: int = 1) -> Rig:
    """The character's rig, built at the finest resolution an output `size` px long can
    show, its mask given the stroke floor of that output (`with_stroke_floor`), on
    `workers` threads (`build_rig`); NoFigure when it cannot be rigged (no outline to
    mesh)."""
    try:
        return build_rig(for_output(with_stroke_floor(character, size), size), workers=workers)
    except ValueError as exc:
        raise NoFigure(f"the drawing could not be rigged: {exc}") from exc


def character_from_photo(
    rgb: np.ndarray,
    keypoints: np.ndarray,
    *,
    bbox: tuple[float, float, float, float] | None = None,
    mask: np.ndarray | None = None,
) -> Character:
    """Photo + joints (+ outline) -> character, as the service makes one without its models.

    `rgb`: the (H, W, 3) uint8 photo; `keypoints`: its figure's 17 COCO joints (x, y in the
    photo's pixels); then either `mask` ((H, W) bool, the figure's outline as a person drew
    it: the crop is its box, holding every joint) or `bbox` (left, top, right, bottom: the
    crop is that box with the margin, and the mask OpenCV's)."""
    height, width = rgb.shape[:2]
    points = np.asarray(keypoints, np.float64)[:, :2]
    if mask is not None:
        rows, cols = np.nonzero(mask)
        if not rows.size:
            raise NoFigure("the mask is empty")
        left = int(min(cols.min(), np.floor(points[:, 0].min())))
        top = int(min(rows.min(), np.floor(points[:, 1].min())))
        right = int(max(cols.max() + 1, np.ceil(points[:, 0].max()) + 1))
        bottom = int(max(rows.max() + 1, np.ceil(points[:, 1].max()) + 1))
        crop = Crop((max(0, left), max(0, top), min(width, right), min(height, bottom)))
        figure = np.asarray(mask, bool)[crop.box[1] : crop.box[3], crop.box[0] : crop.box[2]]
    elif bbox is not None:
        crop = crop_for(bbox, (width, height), hold=points)
        figure = None
    else:
        raise ValueError("character_from_photo needs the figure's mask or its box")
    pixels = crop.pixels(rgb)
    joints = points - crop.box[:2]  # the crop holds every joint
    if figure is None:
        figure = choose_mask(pixels, joints).mask
    return character_of(pixels, joints, figure)
