"""Between the upload's pixels and the models' pixels: points, boxes and masks, both ways.

The pipeline works on the upload decoded upright and shrunk to `MODEL_INPUT_PX` (model
pixels); what a client sends (`bbox`, `keypoints`, `mask`) and what /annotate answers are
in the pixels of the upright upload. Points scale by the two axes' own factors. Pixel
boxes and masks map pixel to pixel by the pixels' centres, so a mask that /annotate gave
comes back onto the very model pixels it came from: the factors are at most 1, so every
model pixel holds the centre of at least one upload pixel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Box = tuple[int, int, int, int]  # left, top, right, bottom (right and bottom excluded)


@dataclass(frozen=True)
class Scale:
    upload: tuple[int, int]  # (width, height) of the upright upload
    model: tuple[int, int]  # (width, height) of the image the models see

    @property
    def factors(self) -> np.ndarray:
        """(2,) model pixels per upload pixel along x and y (<= 1)."""
        return np.asarray(self.model, np.float64) / np.asarray(self.upload, np.float64)

    def points_to_model(self, xy: np.ndarray) -> np.ndarray:
        """(N, 2) upload px -> (N, 2) model px."""
        return np.asarray(xy, np.float64) * self.factors

    def points_to_upload(self, xy: np.ndarray) -> np.ndarray:
        """(N, 2) model px -> (N, 2) upload px."""
        return np.asarray(xy, np.float64) / self.factors

    def box_to_upload(self, box: Box) -> Box:
        """The upload pixels whose centres fall in the model pixel box `box`."""
        fx, fy = self.factors
        left, top, right, bottom = box
        return (_first(left / fx), _first(top / fy), _first(right / fx), _first(bottom / fy))

    def box_to_model(self, box: Box) -> Box:
        """The model pixels whose centres fall in the upload pixel box `box`."""
        fx, fy = self.factors
        left, top, right, bottom = box
        return (_first(left * fx), _first(top * fy), _first(right * fx), _first(bottom * fy))

    def mask_to_upload(self, mask: np.ndarray, box: Box) -> tuple[Box, np.ndarray]:
        """A (h, w) mask over the model pixel `box` -> (upload box, the mask over it):
        each upload pixel takes the model pixel its centre falls in."""
        upload_box = self.box_to_upload(box)
        rows = _sources(upload_box[1], upload_box[3], self.factors[1], box[1], mask.shape[0])
        cols = _sources(upload_box[0], upload_box[2], self.factors[0], box[0], mask.shape[1])
        return upload_box, mask[np.ix_(rows, cols)]

    def mask_to_model(self, mask: np.ndarray, box: Box) -> tuple[Box, np.ndarray]:
        """A (H, W) mask over the upload pixel `box` -> (model box, the mask over it):
        each model pixel takes the upload pixel its centre falls in."""
        model_box = self.box_to_model(box)
        fx, fy = self.factors
        rows = _sources(model_box[1], model_box[3], 1 / fy, box[1], mask.shape[0])
        cols = _sources(model_box[0], model_box[2], 1 / fx, box[0], mask.shape[1])
        return model_box, mask[np.ix_(rows, cols)]


# Model px: how far a point mapped to the upload's pixels and back may land from where it
# was (float error: ~1e-13 at any scale).
ROUND_TRIP_PX = 1e-6


def pixels_holding(points: np.ndarray) -> Box:
    """The box of whole model pixels that holds (N, 2) model-px `points`, a point at x
    taking pixels floor(x)..ceil(x) (the same for one mapped to the upload's pixels and
    back, so /annotate's joints sent back keep the crop they came from)."""
    low = np.floor(points.min(0) + ROUND_TRIP_PX).astype(int)
    high = np.ceil(points.max(0) - ROUND_TRIP_PX).astype(int) + 1
    return int(low[0]), int(low[1]), int(high[0]), int(high[1])


def _first(edge: float) -> int:
    """The first pixel whose centre lies at or past `edge` (in pixels of the other side)."""
    return math.ceil(round(edge - 0.5, 9))  # rounding: 1e-9 px of float noise is no pixel


def _sources(start: int, stop: int, factor: float, source_start: int, source_len: int):
    """Indices into the source for target pixels start..stop-1: the source pixel holding
    each target pixel's centre, `factor` source pixels per target pixel."""
    centres = (np.arange(start, stop, dtype=np.float64) + 0.5) * factor
    return np.clip(np.floor(centres).astype(np.int64) - source_start, 0, source_len - 1)
