"""Drawing deformed frames without OpenGL: each output pixel looks its texel up.

The mesh covers every drawn texel's centre (see `mesh`), and each posed triangle is an
affine image of its rest triangle. So a frame is drawn backwards: every output pixel
whose centre lies in a posed triangle is mapped by that triangle's inverse affine map to
a point of the texture, and takes the value of the nearest texel (a palette index, or
anything else per texel: see `rasterise`'s `table`). Texels off the drawn region hold the
background and are not written, so the figure's silhouette is the drawing's own, to the
texel. The work is proportional to the output pixels covered; no pixel inside a triangle
can be missed (no cracks, however a pose stretches the figure), and a texel is never
blended with its neighbours (strokes stay as crisp as the texture).

Triangles are walked as horizontal spans: each is split at its middle vertex into two
trapezoids whose rows run between two straight edges; each row is a run of pixels along
which the texture coordinates grow by a constant step. Everything is vectorised over
(piece, frame) then rows then pixels; the pixels are written in painter's order (back
body parts first), so later parts paint over earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from animation.mesh import Mesh, barycentric_matrix

MARGIN = 3  # output px kept clear around the figure's extent over the whole clip
# Spans are closed to within this many px: a pixel centre on an edge two triangles share
# is drawn by both (same texel either way) rather than by neither.
EDGE_EPS = 1e-3


@dataclass(frozen=True)
class Pieces:
    """The triangles a frame is drawn from, in painter's order, each moved by the affine
    map of one mesh triangle: the mesh's own triangles, and a pixel-sized square (two
    triangles) for each drawn texel whose centre no mesh triangle covers."""

    triangle: np.ndarray  # (P,) int64: the mesh triangle whose map moves the piece
    rest: np.ndarray  # (P, 3, 2) float64: corners in texture px
    corners: np.ndarray  # (P, 3) int64: mesh vertex of each corner, -1 if none (a square)
    part: np.ndarray  # (P,) int64: the body part (index into mesh.PARTS), non-decreasing


def mesh_pieces(mesh: Mesh) -> Pieces:
    """The mesh's triangles and the squares of the drawn texels they miss, back to front."""
    ys, xs = uncovered_texels(mesh)
    owner = mesh.triangle_map[ys, xs].astype(np.int64)
    half = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]])
    square = np.column_stack([xs, ys])[:, None, :] + half  # (U, 4, 2)
    halves = np.concatenate([square[:, [0, 1, 2]], square[:, [0, 2, 3]]])
    triangle = np.r_[np.tile(owner, 2), np.arange(len(mesh.triangles))]
    rest = np.concatenate([halves, mesh.vertices[mesh.triangles]])
    corners = np.concatenate([np.full((len(halves), 3), -1), mesh.triangles])
    # Squares first within a part; parts back to front.
    order = np.argsort(mesh.part[triangle], kind="stable")
    return Pieces(
        triangle=triangle[order],
        rest=rest[order],
        corners=corners[order],
        part=mesh.part[triangle[order]],
    )


def uncovered_texels(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(ys, xs) of the drawn texels whose centres no mesh triangle covers, as the
    rasteriser walks triangles."""
    triangles = Pieces(
        triangle=np.arange(len(mesh.triangles)),
        rest=mesh.vertices[mesh.triangles],
        corners=mesh.triangles,
        part=np.zeros(len(mesh.triangles), np.int64),
    )
    h, w = mesh.region.shape
    ones = np.ones((h, w), np.uint8)
    covered = rasterise(triangles, mesh, ones, mesh.vertices[None], w, h, 0)[0]
    return np.nonzero(mesh.region & (covered == 0))


def outline_weights(mesh: Mesh, pieces: Pieces) -> np.ndarray:
    """(Q, N): the points besides the mesh vertices whose extent, in any pose, bounds
    every pixel drawn (the corners of the squares of uncovered texels), as combinations
    of the vertices."""
    squares = np.flatnonzero(pieces.corners[:, 0] < 0)
    points = pieces.rest[squares].reshape(-1, 2)
    return barycentric_matrix(mesh, points, np.repeat(pieces.triangle[squares], 3))


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
    scale = (size - 1 - 2 * MARGIN) / extent.max()
    width, height = (np.ceil(extent * scale).astype(int) + 1 + 2 * MARGIN).tolist()
    width, height = min(width, size), min(height, size)
    offset = MARGIN - lo * scale + (np.array([width, height]) - 1 - 2 * MARGIN - extent * scale) / 2
    return Camera(scale=float(scale), offset=offset, width=width, height=height)


@dataclass
class _Spans:
    """Runs of pixels: a sort key (body part, then run length: `_EMPTY` for none), flat
    index of the run's first pixel in the (F, H, W) frames, its length, and the texture
    point of the first pixel (`u`, `v`) with its step per pixel (`du`, `dv`)."""

    key: np.ndarray  # (R,) uint8
    first: np.ndarray  # (R,) int64
    n: np.ndarray  # (R,) float32, likewise
    u: np.ndarray  # (R,) float32, and the rest likewise
    v: np.ndarray
    du: np.ndarray
    dv: np.ndarray


def _affine_maps(mesh: Mesh, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For (F, N, 2) posed vertices, each (frame, triangle)'s affine maps as (F, T, 2, 3)
    arrays: output px -> texture px (NaN where the triangle is posed flat: it covers
    nothing), and texture px -> output px."""
    rest = mesh.vertices[mesh.triangles]  # (T, 3, 2)
    posed = vertices[:, mesh.triangles]  # (F, T, 3, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        backward = _affine(posed, np.broadcast_to(rest, posed.shape))
        forward = _affine(np.broadcast_to(rest, posed.shape), posed)
    return backward, np.nan_to_num(forward)


def _affine(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(..., 2, 3): the affine maps taking triangles `src` (..., 3, 2) to `dst`, in closed
    form (a stack of 2 x 2 inverses is far cheaper written out than through LAPACK)."""
    s1, s2 = src[..., 1, :] - src[..., 0, :], src[..., 2, :] - src[..., 0, :]
    d1, d2 = dst[..., 1, :] - dst[..., 0, :], dst[..., 2, :] - dst[..., 0, :]
    det = s1[..., 0] * s2[..., 1] - s2[..., 0] * s1[..., 1]
    det = np.where(np.abs(det) < 1e-9, np.nan, det)
    # Linear part: [d1 d2] @ inverse([s1 s2]).
    a = (d1[..., 0] * s2[..., 1] - d2[..., 0] * s1[..., 1]) / det
    b = (d2[..., 0] * s1[..., 0] - d1[..., 0] * s2[..., 0]) / det
    c = (d1[..., 1] * s2[..., 1] - d2[..., 1] * s1[..., 1]) / det
    d = (d2[..., 1] * s1[..., 0] - d1[..., 1] * s2[..., 0]) / det
    x0, y0 = src[..., 0, 0], src[..., 0, 1]
    e = dst[..., 0, 0] - a * x0 - b * y0
    f = dst[..., 0, 1] - c * x0 - d * y0
    return np.stack([np.stack([a, b, e], -1), np.stack([c, d, f], -1)], -2)


def _spans(pieces: Pieces, mesh: Mesh, vertices: np.ndarray, width: int, height: int) -> _Spans:
    """Every run of pixel centres inside a posed piece, for (F, N, 2) vertices in output
    px."""
    frames = len(vertices)
    backward, forward = _affine_maps(mesh, vertices)
    tri = pieces.triangle
    # (P, F, 3, 2) posed corners: mesh vertices as they are (shared edges match exactly),
    # squares through their triangle's map.
    own = pieces.corners[:, 0] >= 0
    posed = np.empty((len(tri), frames, 3, 2))
    posed[own] = vertices[:, pieces.corners[own]].transpose(1, 0, 2, 3)
    if not own.all():
        maps = forward[:, tri[~own]].transpose(1, 0, 2, 3)[:, :, None]  # (S, F, 1, 2, 3)
        rest = pieces.rest[~own][:, None]  # (S, 1, 3, 2)
        posed[~own] = np.einsum("...ij,...j->...i", maps[..., :2], rest) + maps[..., 2]
    posed = posed.reshape(-1, 3, 2)
    # Corners by y: top, middle, bottom.
    order = np.argsort(posed[..., 1], axis=1)
    posed = np.take_along_axis(posed, order[..., None], axis=1)
    (xt, xm, xb), (yt, ym, yb) = posed[..., 0].T, posed[..., 1].T
    with np.errstate(divide="ignore", invalid="ignore"):
        long = np.where(yb > yt, (xb - xt) / (yb - yt), 0.0)  # dx/dy, top to bottom
        upper = np.where(ym > yt, (xm - xt) / (ym - yt), 0.0)
        lower = np.where(yb > ym, (xb - xm) / (yb - ym), 0.0)
    long_left = xt + (ym - yt) * long <= xm
    maps = backward[:, tri].transpose(1, 0, 2, 3).reshape(-1, 6)  # (P * F, 6)
    # Two trapezoids a piece: rows from the top vertex to just above the middle one, both
    # edges through the top vertex; rows from the middle one down, both edges through the
    # bottom vertex (a row through the middle vertex belongs to the lower one).
    first_row = np.stack([np.ceil(yt - EDGE_EPS), np.ceil(ym - EDGE_EPS)], 1).clip(0, height)
    last_row = np.stack([np.ceil(ym - EDGE_EPS) - 1, np.floor(yb + EDGE_EPS)], 1)
    rows = np.maximum(last_row.clip(-1, height - 1) - first_row + 1, 0)
    rows[~np.isfinite(maps[:, 0])] = 0  # posed flat
    rows = rows.astype(np.int64).ravel()
    short = np.stack([upper, lower], 1)
    # Per trapezoid, everything its rows need (float32: coordinates of a few thousand px
    # to 1e-3 px and better): a row's y is its number plus `y0`.
    start = np.cumsum(rows) - rows
    trapezoid = np.stack(
        [
            first_row.ravel() - start,
            np.stack([yt, yb], 1).ravel(),
            np.stack([xt, xb], 1).ravel(),
            np.where(long_left[:, None], long[:, None], short).ravel(),
            np.where(long_left[:, None], short, long[:, None]).ravel(),
            *(np.repeat(c, 2) for c in (posed[..., 0].min(1), posed[..., 0].max(1))),
            *(np.repeat(c, 2) for c in maps.T),
            np.repeat(pieces.part[np.arange(len(tri)).repeat(frames)], 2),
        ]
    ).astype(np.float32)
    (y0, y_ref, x_ref, left, right, lo, hi, ux, uy, u0, vx, vy, v0, part) = np.take(
        trapezoid, np.repeat(np.arange(len(rows)), rows), axis=1
    )
    y = np.arange(len(y0), dtype=np.float32) + y0
    dy = y - y_ref
    # Clamped to the piece's own extent, so that a sliver's nearly horizontal edge cannot
    # throw a run wide.
    x0 = np.ceil(np.clip(x_ref + dy * left, lo, hi) - EDGE_EPS).clip(0, None)
    x1 = np.floor(np.clip(x_ref + dy * right, lo, hi) + EDGE_EPS).clip(None, width - 1)
    n = x1 - x0 + 1
    length = np.searchsorted(_RUN_LENGTHS, n).astype(np.uint8)
    key = part.astype(np.uint8) * np.uint8(len(_RUN_LENGTHS)) + length
    key[n < 1] = _EMPTY
    trapezoid_frame = np.tile(np.arange(frames).repeat(2), len(tri))
    frame = np.repeat(trapezoid_frame, rows)
    return _Spans(
        key=key,
        first=(frame * height + y.astype(np.int64)) * width + x0.astype(np.int64),
        n=n,
        u=ux * x0 + uy * y + u0,
        v=vx * x0 + vy * y + v0,
        du=ux,
        dv=vx,
    )


# Runs are drawn in blocks of equal length, padded to the next of these: every pixel of a
# block is then one broadcast operation, with at most a third of a block wasted.
_RUN_LENGTHS = np.array(
    [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536]
)
_STEPS = np.arange(_RUN_LENGTHS[-1], dtype=np.float32)
_EMPTY = 255  # the sort key of a row with no pixel
_BLOCK_ROWS = 32_000  # cv2.remap takes maps under 32767 px a side


def rasterise(
    pieces: Pieces,
    mesh: Mesh,
    table: np.ndarray,
    vertices: np.ndarray,
    width: int,
    height: int,
    background: float,
) -> np.ndarray:
    """(F, N, 2) vertex positions in output px -> (F, height, width) frames of `table`'s
    values (an (H, W) uint8, uint16 or float32 array over the texture: palette indices,
    or texel numbers), `background` where no texel lands. A texel holding `background`
    is not drawn, so whatever lies behind it shows."""
    frames = len(vertices)
    if width > _RUN_LENGTHS[-1]:
        raise ValueError(f"frames at most {_RUN_LENGTHS[-1]} px wide")
    spans = _spans(pieces, mesh, vertices, width, height)
    dump = frames * width * height  # where pixels whose texel is background go
    out = np.full(dump + 1, background, table.dtype)
    # Painter's order between parts; within a part, blocks by run length (a radix sort on
    # one byte).
    order = np.argsort(spans.key, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(spans.key, minlength=_EMPTY + 1))]
    last = spans.n - 1
    first = spans.first
    for k in np.flatnonzero(np.diff(bounds[: _EMPTY + 1])):
        run = int(_RUN_LENGTHS[k % len(_RUN_LENGTHS)])
        for a in range(bounds[k], bounds[k + 1], _BLOCK_ROWS):
            rows = order[a : min(a + _BLOCK_ROWS, bounds[k + 1])]
            # A run shorter than the block repeats its last pixel: same place, same value.
            step = np.minimum(_STEPS[:run], last[rows, None])
            u = step * spans.du[rows, None]
            u += spans.u[rows, None]
            v = step * spans.dv[rows, None]
            v += spans.v[rows, None]
            value = cv2.remap(
                table,
                u,
                v,
                cv2.INTER_NEAREST,
                borderMode=cv2.BORDER_CONSTANT,
                borderValue=background,
            )
            target = step.astype(np.int64)
            target += first[rows, None]
            np.putmask(target, value == background, dump)
            # Within one frame later writes win: later parts paint over earlier ones.
            out[target] = value
    return out[:dump].reshape(frames, height, width)
