"""Drawing deformed frames without OpenGL: the texture as palette-indexed splats.

The texture never changes, so it is quantised to a palette once, and cut into samples a
fraction of an output pixel apart. Each sample's barycentric coordinates in the rest mesh
go into one sparse matrix, so one sparse-dense product places every sample of every frame;
the samples are then written as palette indices in painter's order (back body parts
first). Samples closer together than ~0.7 output px leave no holes whatever the rotation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import sparse

from animation.mesh import Mesh, barycentric

TRANSPARENT = 255  # palette index of the background; the texture gets the other 255
MARGIN = 3  # output px kept clear around the figure's extent over the whole clip
SAMPLE_SPACING = 0.55  # output px between neighbouring samples at rest


def quantise_texture(texture: np.ndarray, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(palette (256, 3) uint8, (H, W) uint8 index image) for the texture inside `region`."""
    rgb = texture[..., :3][region]
    quantised = Image.fromarray(rgb[None]).quantize(
        colors=TRANSPARENT, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
    )
    palette = np.zeros((256, 3), np.uint8)
    entries = np.frombuffer(bytes(quantised.getpalette()[: 3 * TRANSPARENT]), np.uint8)
    palette[: len(entries) // 3] = entries.reshape(-1, 3)
    index = np.full(region.shape, TRANSPARENT, np.uint8)
    index[region] = np.asarray(quantised)[0]
    return palette, index


@dataclass(frozen=True)
class Samples:
    """Texture samples bound to the rest mesh, in painter's order."""

    weights: sparse.csr_matrix  # (S, N) float32: barycentric coordinates
    colour: np.ndarray  # (S,) uint8 palette index
    spacing: float  # texture px between neighbouring samples


def texture_samples(mesh: Mesh, index: np.ndarray, spacing: float) -> Samples:
    """Samples on a grid `spacing` texture px apart over the mesh's drawn region."""
    ys, xs = np.nonzero(mesh.region)
    x0, y0 = xs.min() - 0.5 + spacing / 2, ys.min() - 0.5 + spacing / 2
    gx = np.arange(x0, xs.max() + 0.5, spacing)
    gy = np.arange(y0, ys.max() + 0.5, spacing)
    px = np.clip(np.round(gx).astype(np.int64), 0, mesh.region.shape[1] - 1)
    py = np.clip(np.round(gy).astype(np.int64), 0, mesh.region.shape[0] - 1)
    inside = mesh.region[py[:, None], px[None, :]]
    iy, ix = np.nonzero(inside)
    points = np.column_stack([gx[ix], gy[iy]])
    triangle = mesh.triangle_map[py[iy], px[ix]]
    order = np.argsort(mesh.part[triangle], kind="stable")
    points, triangle = points[order], triangle[order]
    colour = index[py[iy][order], px[ix][order]]
    bary = barycentric(mesh, points, triangle)
    n = len(points)
    weights = sparse.csr_matrix(
        (
            bary.ravel().astype(np.float32),
            mesh.triangles[triangle].ravel(),
            np.arange(0, 3 * n + 1, 3),
        ),
        shape=(n, len(mesh.vertices)),
    )
    return Samples(weights=weights, colour=colour, spacing=spacing)


def outline_weights(mesh: Mesh) -> sparse.csr_matrix:
    """(P, N): the mesh vertices and every drawn pixel lying outside all triangles (pixel
    corners), so the extent of the deformed figure is the extent of these points."""
    ys, xs = np.nonzero(mesh.region)
    triangle = mesh.triangle_map[ys, xs]
    centres = np.column_stack([xs, ys]).astype(np.float64)
    outside = barycentric(mesh, centres, triangle).min(axis=1) < 0
    corners = (
        centres[outside, None, :] + np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5], [0.5, 0.5]])
    ).reshape(-1, 2)
    corner_tri = np.repeat(triangle[outside], 4)
    bary = barycentric(mesh, corners, corner_tri)
    n = len(corners)
    fringe = sparse.csr_matrix(
        (bary.ravel(), mesh.triangles[corner_tri].ravel(), np.arange(0, 3 * n + 1, 3)),
        shape=(n, len(mesh.vertices)),
    )
    return sparse.vstack([sparse.identity(len(mesh.vertices), format="csr"), fringe], format="csr")


@dataclass(frozen=True)
class Camera:
    """Texture px -> output px: `scale * p + offset`, into a `width` x `height` frame."""

    scale: float
    offset: np.ndarray  # (2,)
    width: int
    height: int


def fit_camera(points: np.ndarray, size: int) -> Camera:
    """The camera that fits `points` (..., 2), every frame's outline, with a clear margin
    and the longest side `size` px."""
    lo = points.reshape(-1, 2).min(axis=0)
    hi = points.reshape(-1, 2).max(axis=0)
    extent = np.maximum(hi - lo, 1e-6)
    # Samples land on round(p): keep them MARGIN px off every edge.
    scale = (size - 1 - 2 * MARGIN) / extent.max()
    width, height = (np.ceil(extent * scale).astype(int) + 1 + 2 * MARGIN).tolist()
    width, height = min(width, size), min(height, size)
    offset = MARGIN - lo * scale + (np.array([width, height]) - 1 - 2 * MARGIN - extent * scale) / 2
    return Camera(scale=float(scale), offset=offset, width=width, height=height)


def rasterise(
    samples: Samples, vertices: np.ndarray, width: int, height: int, out: np.ndarray | None = None
) -> np.ndarray:
    """(F, N, 2) vertex positions in output px -> (F, height, width) uint8 palette indices."""
    frames = vertices.shape[0]
    if out is None:
        out = np.full((frames, height, width), TRANSPARENT, np.uint8)
    flat = out.reshape(-1)
    # (N, 2F): x columns then y columns, so one product places every sample in every frame.
    v = np.ascontiguousarray(
        np.concatenate([vertices[..., 0].T, vertices[..., 1].T], axis=1), np.float32
    )
    p = samples.weights @ v  # (S, 2F)
    p += 0.5  # round half up by truncation: positions are positive
    ix = p[:, :frames].astype(np.int32)
    iy = p[:, frames:].astype(np.int32)
    del p
    iy *= width
    iy += ix
    iy += (np.arange(frames, dtype=np.int32) * (width * height))[None, :]
    # Within one frame the writes go in sample order, so later parts paint over earlier ones.
    flat[iy] = np.broadcast_to(samples.colour[:, None], iy.shape)
    return out
