"""How much a motion bends the drawing out of shape, frame by frame: the numbers behind
"the face keeps its shape" and "no limb stretched across the picture".

Each posed triangle is an affine image of its rest triangle; the singular values of its
linear part are how much it stretches (the larger) and squashes (the smaller) the drawing
there, and a negative determinant means it is flipped (drawn mirrored, through its
neighbours). Per frame and part the worst of each is kept. Besides: how far the figure's
extent grows against its rest extent (a spike: a limb stretched into a line) beside how
far the skeleton's own grows (a figure that spreads its arms grows too), and how many
pieces the drawn figure falls into beyond those its rest pose has (a tear).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from animation.parts import BACKING, PARTS
from animation.rasterise import affine_maps, rasterise
from animation.render import Rig, frame_geometry

# A triangle this small (against the median) carries a pixel or two: its map is noise.
_SLIVER = 0.02
# A drawn piece of fewer output pixels than this is a speck, not a piece torn off.
_LEAST_PIECE_PX = 12
# Bounds the service holds every shipped motion to on real drawings (tests check them).
SPIKE_GROWTH = 1.5  # the figure's extent against rest, past what the skeleton's grows
HEAD_SCALE = (0.9, 1.1)  # the head's local scale, both ways
TORSO_STRETCH = 1.5


@dataclass(frozen=True)
class Distortion:
    """Per frame (F) and part (P = len(parts.PARTS)); NaN where a part has no triangle."""

    stretch: np.ndarray  # (F, P) worst local stretch (largest singular value)
    squash: np.ndarray  # (F, P) worst local squash (smallest singular value)
    flipped: np.ndarray  # (F,) triangles drawn mirrored
    growth: np.ndarray  # (F,) the figure's extent's diagonal / its rest diagonal
    skeleton_growth: np.ndarray  # (F,) the same for the joints alone
    torn: np.ndarray  # (F,) drawn pieces beyond those of the rest pose

    def spikes(self) -> np.ndarray:
        """(F,) bool: frames where the figure grows past `SPIKE_GROWTH` x rest beyond what
        its skeleton does."""
        return self.growth > SPIKE_GROWTH * np.maximum(self.skeleton_growth, 1.0)

    def summary(self) -> dict:
        """The worst of each measure over the clip, per part where it is per part: plain
        numbers for JSON."""

        def worst(values: np.ndarray, pick) -> dict[str, float | None]:
            out = {}
            for k, part in enumerate(PARTS):
                column = values[:, k]
                column = column[np.isfinite(column)]
                out[part] = round(float(pick(column)), 3) if column.size else None
            return out

        return {
            "frames": int(len(self.flipped)),
            "stretch": worst(self.stretch, np.max),
            "squash": worst(self.squash, np.min),
            "flipped_triangles": int(self.flipped.max(initial=0)),
            "growth": round(float(self.growth.max(initial=1.0)), 3),
            "skeleton_growth": round(float(self.skeleton_growth.max(initial=1.0)), 3),
            "spike_frames": int(self.spikes().sum()),
            "torn_frames": int((self.torn > 0).sum()),
        }


def measure(rig: Rig, joints: np.ndarray, size: int = 256) -> Distortion:
    """The distortion of every frame of (F, 16, 2) `joints` (texture px) on `rig`, the
    pieces counted in frames drawn `size` px long."""
    joints = np.asarray(joints, np.float64)
    vertices = rig.pose(joints)  # (F, N, 2)
    rest_vertices = rig.mesh.vertices
    tri = rig.mesh.triangles
    rest = rest_vertices[tri]  # (T, 3, 2)
    posed = vertices[:, tri]  # (F, T, 3, 2)
    linear = affine_maps(rest, posed)[..., :2]  # (F, T, 2, 2); NaN for a flat rest triangle
    area = np.abs(_cross(rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0])) / 2
    # The backing is a skin behind the parts that stretches across a bent joint by design
    # (`parts.cut`): its stretch is no part's. It counts in the extent and the pieces.
    real = (area >= _SLIVER * np.median(area)) & (rig.mesh.layer != BACKING)
    sigma = np.linalg.svd(linear[:, real], compute_uv=False)  # (F, T', 2)
    det = np.linalg.det(linear[:, real])
    part = rig.mesh.part[real]
    stretch = np.full((len(joints), len(PARTS)), np.nan)
    squash = np.full((len(joints), len(PARTS)), np.nan)
    for k in np.unique(part):
        stretch[:, k] = sigma[:, part == k, 0].max(axis=1)
        squash[:, k] = sigma[:, part == k, 1].min(axis=1)
    extent = np.concatenate([vertices, rig.outline @ vertices], axis=1)
    rest_extent = np.concatenate([rest_vertices, rig.outline @ rest_vertices])
    return Distortion(
        stretch=stretch,
        squash=squash,
        flipped=(det < 0).sum(axis=1),
        growth=_diagonal(extent) / _diagonal(rest_extent[None]),
        skeleton_growth=_diagonal(joints) / _diagonal(rig.character.skeleton.rest[None]),
        torn=np.maximum(
            _pieces(rig, vertices, size) - _pieces(rig, rest_vertices[None], size)[0], 0
        ),
    )


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _diagonal(points: np.ndarray) -> np.ndarray:
    """(F,) the diagonal of each frame's bounding box of (F, K, 2) points."""
    return np.linalg.norm(points.max(axis=1) - points.min(axis=1), axis=1)


def _pieces(rig: Rig, vertices: np.ndarray, size: int) -> np.ndarray:
    """(F,) how many pieces (8-connected across gaps of a pixel, of `_LEAST_PIECE_PX` drawn
    pixels or more) each frame's drawn figure falls into."""
    camera, placed = frame_geometry(rig, vertices, size)
    drawn = (rig.texture.index != rig.texture.transparent).astype(np.uint8)
    frames = rasterise(rig.pieces, rig.mesh, drawn, placed, camera.width, camera.height, 0)
    counts = []
    for frame in frames:
        # A one-pixel gap is not a piece come off (a thin stroke turned and drawn texel by
        # texel can part by one): pieces that close up under a 3 x 3 dilation count as one,
        # each with the drawn pixels it holds.
        joined = cv2.dilate(frame, np.ones((3, 3), np.uint8))
        n, labels = cv2.connectedComponents(joined, connectivity=8)
        held = np.bincount(labels[frame > 0], minlength=n)[1:]
        counts.append(int((held >= _LEAST_PIECE_PX).sum()))
    return np.array(counts)
