"""Drawing deformed frames without OpenGL: the texture as palette-indexed splats.

The texture never changes, so it is cleaned and reduced to a palette once (`texture`),
and cut into samples a fraction of an output pixel apart. Each sample's barycentric coordinates in the rest mesh
go into one sparse matrix, so one sparse-dense product places every sample of every frame;
the samples are then written as palette indices in painter's order (back body parts
first). Samples on a hexagonal lattice under 0.866 output px apart leave no holes, whatever
the rotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy import sparse

from animation.mesh import Mesh, barycentric, barycentric_matrix

MARGIN = 3  # output px kept clear around the figure's extent over the whole clip
# Output px between neighbouring samples at rest. A hexagonal lattice leaves no pixel empty
# while its spacing stays under 0.866 px: this leaves room for a 15% stretch, and the
# triangles a motion stretches more get denser lattices (`stretch_levels`). Measured over
# the shipped motions, 0.75 needs the fewest samples in all.
SAMPLE_SPACING = 0.75
MAX_LEVEL = 6  # lattice spacing at most 8x finer than at rest (slivers stretch without bound)


@dataclass(frozen=True)
class Samples:
    """Texture samples bound to the rest mesh, in painter's order."""

    weights: sparse.csr_matrix  # (S, N) float32: barycentric coordinates
    colour: np.ndarray  # (S,) palette index (or any per-texel value: see `texel`)
    texel: np.ndarray  # (S,) int64: the texture pixel each sample carries, y * W + x
    spacing: float  # texture px between neighbouring samples
    _columns: dict[int, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def colour_columns(self, frames: int) -> np.ndarray:
        """(S, frames) copies of `colour`: a contiguous value array scatters twice as fast
        as a broadcast one."""
        if frames not in self._columns:
            self._columns[frames] = np.repeat(self.colour[:, None], frames, axis=1)
        return self._columns[frames]


def texture_samples(
    mesh: Mesh, index: np.ndarray, spacing: float, levels: np.ndarray | None = None
) -> Samples:
    """Samples on hexagonal lattices over the drawn region: `spacing` texture px apart,
    and `spacing / sqrt(2)**levels[t]` in triangle t where the motion stretches it.

    A hexagonal lattice covers the plane with 23% fewer points than a square one for the
    same largest gap, and every output pixel needs a sample in it.
    """
    ys, xs = np.nonzero(mesh.region)
    pixel_level = (
        np.zeros(len(ys), np.int64) if levels is None else levels[mesh.triangle_map[ys, xs]]
    )
    level_map = np.full(mesh.region.shape, -1, np.int64)
    level_map[ys, xs] = pixel_level
    parts = []
    for level in np.unique(pixel_level):
        # A denser lattice reaches one pixel into sparser ground, so no gap opens along the
        # seam where the sparser lattice's last points fall short of it.
        own = level_map == level
        if level > pixel_level.min():
            grown = cv2.dilate(own.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
            own |= grown & (level_map >= 0) & (level_map < level)
        sel = own[ys, xs]
        parts.append(_lattice(own, ys[sel], xs[sel], spacing / np.sqrt(2.0) ** level))
    px, py, points = (np.concatenate(a) for a in zip(*parts, strict=True))
    triangle = mesh.triangle_map[py, px]
    order = np.argsort(mesh.part[triangle], kind="stable")
    points, triangle, px, py = points[order], triangle[order], px[order], py[order]
    colour = index[py, px]
    weights = barycentric_matrix(mesh, points, triangle, np.float32)
    texel = py * index.shape[1] + px
    return Samples(weights=weights, colour=colour, texel=texel, spacing=spacing)


def _lattice(
    region: np.ndarray, ys: np.ndarray, xs: np.ndarray, spacing: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hexagonal lattice points over `region` (whose pixels are ys, xs): their pixels' x and
    y, and the points (P, 2)."""
    row = spacing * np.sqrt(3) / 2
    gy = np.arange(ys.min() - 0.5 + row / 2, ys.max() + 0.5, row)
    gx = np.arange(xs.min() - 0.5 + spacing / 4, xs.max() + 0.5, spacing)
    # Odd rows shift by half a spacing: (rows, cols) grids of x and y.
    grid_x = gx[None, :] + (np.arange(len(gy)) % 2 * spacing / 2)[:, None]
    grid_y = np.broadcast_to(gy[:, None], grid_x.shape)
    px = np.clip(np.round(grid_x).astype(np.int64), 0, region.shape[1] - 1)
    py = np.clip(np.round(grid_y).astype(np.int64), 0, region.shape[0] - 1)
    inside = region[py, px]
    return px[inside], py[inside], np.column_stack([grid_x[inside], grid_y[inside]])


def stretch_levels(mesh: Mesh, vertices: np.ndarray) -> np.ndarray:
    """(T,) how many times to halve each triangle's sample area so that no hole opens,
    for (F, N, 2) posed vertices in texture px.

    A triangle's largest singular value over the clip says how far apart its samples can
    drift; samples `SAMPLE_SPACING` output px apart at rest stay under the 0.866 px a
    hexagonal lattice may reach while that stretch is at most 0.866 / SAMPLE_SPACING.
    """
    rest = mesh.vertices[mesh.triangles]
    posed = vertices[:, mesh.triangles]  # (F, T, 3, 2)
    rest_edges = np.stack([rest[:, 1] - rest[:, 0], rest[:, 2] - rest[:, 0]], axis=-1)
    det = np.linalg.det(rest_edges)
    inverse = np.linalg.inv(np.where(np.abs(det)[:, None, None] < 1e-9, np.eye(2), rest_edges))
    edges = np.stack([posed[..., 1, :] - posed[..., 0, :], posed[..., 2, :] - posed[..., 0, :]], -1)
    grad = edges @ inverse  # (F, T, 2, 2) deformation gradients
    frob = (grad**2).sum(axis=(-2, -1))
    dets = np.linalg.det(grad)
    largest = np.sqrt((frob + np.sqrt(np.maximum(frob**2 - 4 * dets**2, 0))) / 2).max(axis=0)
    needed = SAMPLE_SPACING * largest / 0.866
    return np.clip(np.ceil(2 * np.log2(np.maximum(needed, 1.0))), 0, MAX_LEVEL).astype(np.int64)


def outline_weights(mesh: Mesh) -> sparse.csr_matrix:
    """(P, N): points whose extent, in any pose, is the drawn figure's extent.

    The mesh vertices (which bound every sample inside a triangle), plus the corners of
    the drawn pixels that stick out of every triangle (the mesh outline cuts corners),
    reduced to their convex hull per triangle.
    """
    ys, xs = np.nonzero(mesh.region)
    triangle = mesh.triangle_map[ys, xs]
    centres = np.column_stack([xs, ys]).astype(np.float64)
    outside = barycentric(mesh, centres, triangle).min(axis=1) < 0
    offsets = np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]])
    corners = (centres[outside, None, :] + offsets).reshape(-1, 2)
    corner_tri = np.repeat(triangle[outside], 4)
    # Each triangle moves its fringe affinely, and an affine map keeps convex hulls: the
    # hull of a triangle's pixel corners bounds its samples in every pose.
    hulls, hull_tri = [], []
    order = np.argsort(corner_tri, kind="stable")
    corners, corner_tri = corners[order], corner_tri[order]
    bounds = np.r_[np.flatnonzero(np.diff(corner_tri)) + 1, len(corners)]
    for start, stop in zip(np.r_[0, bounds[:-1]], bounds, strict=True):
        if start == stop:  # no pixel sticks out anywhere
            continue
        hull = cv2.convexHull(corners[start:stop].astype(np.float32))[:, 0, :]
        hulls.append(hull.astype(np.float64))
        hull_tri.append(np.full(len(hull), corner_tri[start]))
    if hulls:
        corners, corner_tri = np.concatenate(hulls), np.concatenate(hull_tri)
    fringe = barycentric_matrix(mesh, corners, corner_tri)
    return sparse.vstack([sparse.identity(len(mesh.vertices), format="csr"), fringe], format="csr")


@dataclass(frozen=True)
class Camera:
    """Texture px -> output px: `scale * p + offset`, into a `width` x `height` frame."""

    scale: float
    offset: np.ndarray  # (2,)
    width: int
    height: int


def fit_camera(lo: np.ndarray, hi: np.ndarray, size: int) -> Camera:
    """The camera that fits the box `lo`..`hi` (texture px, every frame's outline) with a
    clear margin and the longest side `size` px."""
    extent = np.maximum(hi - lo, 1e-6)
    # Samples land on round(p): keep them MARGIN px off every edge.
    scale = (size - 1 - 2 * MARGIN) / extent.max()
    width, height = (np.ceil(extent * scale).astype(int) + 1 + 2 * MARGIN).tolist()
    width, height = min(width, size), min(height, size)
    offset = MARGIN - lo * scale + (np.array([width, height]) - 1 - 2 * MARGIN - extent * scale) / 2
    return Camera(scale=float(scale), offset=offset, width=width, height=height)


def rasterise(
    samples: Samples,
    vertices: np.ndarray,
    width: int,
    height: int,
    background: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """(F, N, 2) vertex positions in output px -> (F, height, width) frames of the samples'
    `colour` (palette indices), `background` where no sample lands."""
    frames = vertices.shape[0]
    if out is None:
        out = np.full((frames, height, width), background, samples.colour.dtype)
    # (N, 2F): x columns then y columns, so one product places every sample in every frame.
    v = np.concatenate([vertices[..., 0].T, vertices[..., 1].T], axis=1).astype(np.float32)
    p = samples.weights @ v  # (S, 2F)
    p += 0.5
    np.floor(p, out=p)  # nearest pixel
    # Flat index y * width + x + frame * width * height, exact in float32 below 2**24.
    if out.size >= 1 << 24:
        raise ValueError(f"rasterise at most {(1 << 24) // (width * height)} frames at a time")
    index = p[:, frames:] * np.float32(width)
    index += p[:, :frames]
    index += (np.arange(frames, dtype=np.float32) * (width * height))[None, :]
    # The camera keeps every sample inside its frame (`outline_weights`); this one pass over
    # a contiguous array only guarantees no write lands outside the chunk.
    np.clip(index, 0, out.size - 1, out=index)
    # Within one frame the writes go in sample order, so later parts paint over earlier ones.
    out.reshape(-1)[index.astype(np.intp)] = samples.colour_columns(frames)
    return out
