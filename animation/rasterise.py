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
    layer: np.ndarray  # (P,) int64: painter's layer (index into parts.LAYERS), non-decreasing


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
    order = np.argsort(mesh.layer[triangle], kind="stable")
    return Pieces(
        triangle=triangle[order],
        rest=rest[order],
        corners=corners[order],
        layer=mesh.layer[triangle[order]],
    )


def uncovered_texels(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(ys, xs) of the drawn texels whose centres no mesh triangle covers, as the
    rasteriser walks triangles."""
    triangles = Pieces(
        triangle=np.arange(len(mesh.triangles)),
        rest=mesh.vertices[mesh.triangles],
        corners=mesh.triangles,
        layer=np.zeros(len(mesh.triangles), np.int64),
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
    index of the run's first pixel in the (F, H, W) frames, and in one array (gathered
    together) the texture point of its first pixel (u, v), the step per pixel (du, dv)
    and the index of its last pixel (its length less one)."""

    key: np.ndarray  # (R,) uint8
    first: np.ndarray  # (R,) int64
    values: np.ndarray  # (5, R) float32: u, v, du, dv, last


_U, _V, _DU, _DV, _LAST = range(5)  # rows of _Spans.values


def affine_maps(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(..., 2, 3): the affine maps taking triangles `src` (..., 3, 2) to `dst`, NaN where
    `src` has no area. In closed form: a stack of 2 x 2 inverses written out is far
    cheaper than through LAPACK."""
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


def _by_height(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Corners (..., 3) reordered top, middle, bottom: (xt, xm, xb, yt, ym, yb). Three
    compare-and-swaps, far cheaper than a sort along a length-3 axis."""
    xs, ys = [x[..., k] for k in range(3)], [y[..., k] for k in range(3)]
    for i, j in ((0, 1), (1, 2), (0, 1)):
        swap = ys[i] > ys[j]
        xs[i], xs[j] = np.where(swap, xs[j], xs[i]), np.where(swap, xs[i], xs[j])
        ys[i], ys[j] = np.where(swap, ys[j], ys[i]), np.where(swap, ys[i], ys[j])
    return (*xs, *ys)


# The columns of `_spans`' per-trapezoid table.
_START, _Y0, _DY0, _X_REF, _LEFT, _RIGHT, _LO, _HI, _UX, _UY, _U0, _VX, _VY, _V0, _BASE, _PART = (
    range(16)
)


def _spans(
    pieces: Pieces,
    mesh: Mesh,
    vertices: np.ndarray,
    width: int,
    height: int,
    ranks: np.ndarray | None = None,
) -> _Spans:
    """Every run of pixel centres inside a posed piece, for (F, N, 2) vertices in output
    px, in no particular order (the key orders them; `ranks` (F, L), when given, is each
    layer's painter's rank per frame)."""
    frames = len(vertices)
    tri = mesh.triangles[pieces.triangle]
    rest = mesh.vertices[tri]  # (P, 3, 2)
    moved = vertices[:, tri]  # (F, P, 3, 2)
    with np.errstate(divide="ignore", invalid="ignore"):  # flat: NaN, and no rows below
        backward = affine_maps(moved, rest).reshape(-1, 6)
    # The pieces' corners: a mesh triangle's are its posed vertices (shared edges match
    # exactly), a square's go through its triangle's map.
    corners = moved
    squares = np.flatnonzero(pieces.corners[:, 0] < 0)
    if len(squares):
        with np.errstate(divide="ignore", invalid="ignore"):
            forward = np.nan_to_num(affine_maps(rest[squares], moved[:, squares]))  # (F, S, 2, 3)
        corners = moved.copy()
        square = pieces.rest[squares][None, :, :, :, None]  # (1, S, 3, 2, 1)
        corners[:, squares] = (forward[:, :, None, :, :2] @ square)[..., 0] + forward[
            :, :, None, :, 2
        ]
    xt, xm, xb, yt, ym, yb = (c.ravel() for c in _by_height(corners[..., 0], corners[..., 1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        long = np.where(yb > yt, (xb - xt) / (yb - yt), 0.0)  # dx/dy, top to bottom
        short = np.stack(
            [
                np.where(ym > yt, (xm - xt) / (ym - yt), 0.0),
                np.where(yb > ym, (xb - xm) / (yb - ym), 0.0),
            ]
        )
    long_left = xt + (ym - yt) * long <= xm
    # Two trapezoids a piece: rows from the top vertex to just above the middle one, both
    # edges through the top vertex; rows from the middle one down, both edges through the
    # bottom vertex (a row through the middle vertex belongs to the lower one). Each gets
    # everything its rows need, in a table whose columns repeat once per row. In float32:
    # an edge's x is its vertex's x plus the row's distance from that vertex (both exact
    # to ~1e-5 px, well inside EDGE_EPS) times the slope.
    first_row = np.stack([np.ceil(yt - EDGE_EPS), np.ceil(ym - EDGE_EPS)]).clip(0, height)
    last_row = np.stack([np.ceil(ym - EDGE_EPS) - 1, np.floor(yb + EDGE_EPS)]).clip(-1, height - 1)
    rows = np.maximum(last_row - first_row + 1, 0)
    rows[:, np.isnan(backward[:, 0])] = 0  # posed flat: covers nothing
    rows = rows.astype(np.int64).ravel()
    table = np.empty((16, 2, len(xt)), np.float32)
    table[_START] = -(np.cumsum(rows) - rows).reshape(2, -1)  # a row's number in its trapezoid
    table[_Y0] = first_row
    table[_DY0] = first_row - np.stack([yt, yb])
    table[_X_REF] = xt, xb
    table[_LEFT] = np.where(long_left, long, short)
    table[_RIGHT] = np.where(long_left, short, long)
    table[_LO] = np.minimum(np.minimum(xt, xm), xb)
    table[_HI] = np.maximum(np.maximum(xt, xm), xb)
    table[_UX : _V0 + 1] = backward.T[:, None]
    table[_BASE] = np.repeat(np.arange(frames) * (width * height), len(tri))
    layer = np.tile(pieces.layer, frames) if ranks is None else ranks[:, pieces.layer].ravel()
    table[_PART] = layer * len(_RUN_LENGTHS)
    # A gather along the columns: numpy repeats (16, T) along its second axis far slower.
    per_row = np.take(table.reshape(16, -1), np.repeat(np.arange(len(rows)), rows), axis=1)
    k = np.arange(per_row.shape[1], dtype=np.float32)
    k += per_row[_START]
    y = k + per_row[_Y0]
    dy = k + per_row[_DY0]
    # Clamped to the piece's own extent, so that a sliver's nearly horizontal edge cannot
    # throw a run wide.
    x0 = np.clip(per_row[_X_REF] + dy * per_row[_LEFT], per_row[_LO], per_row[_HI])
    x0 = np.maximum(np.ceil(x0 - np.float32(EDGE_EPS)), 0)
    x1 = np.clip(per_row[_X_REF] + dy * per_row[_RIGHT], per_row[_LO], per_row[_HI])
    x1 = np.minimum(np.floor(x1 + np.float32(EDGE_EPS)), width - 1)
    n = np.maximum(x1 - x0 + 1, 0)
    key = (_LENGTH_CLASS[n.astype(np.intp)] + per_row[_PART]).astype(np.uint8)
    key[n == 0] = _EMPTY
    within = y * width + x0  # exact in float32 below 2**24 px a frame
    if frames * width * height < 1 << 24:
        first = (within + per_row[_BASE]).astype(np.int64)
    else:
        first = within.astype(np.int64) + per_row[_BASE].astype(np.int64)
    values = np.empty((5, len(n)), np.float32)
    for out, (dx, dy_, offset) in ((values[_U], (_UX, _UY, _U0)), (values[_V], (_VX, _VY, _V0))):
        np.multiply(per_row[dx], x0, out=out)
        out += per_row[dy_] * y
        out += per_row[offset]
    values[_DU], values[_DV] = per_row[_UX], per_row[_VX]
    np.subtract(n, 1, out=values[_LAST])
    return _Spans(key=key, first=first, values=values)


# Runs are drawn in blocks of equal length, padded to the next of these: every pixel of a
# block is then one broadcast operation, with at most a third of a block wasted.
_RUN_LENGTHS = np.array(
    [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536]
)
_STEPS = np.arange(_RUN_LENGTHS[-1], dtype=np.float32)
_LENGTH_CLASS = np.searchsorted(_RUN_LENGTHS, np.arange(_RUN_LENGTHS[-1] + 1))  # by run length
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
    ranks: np.ndarray | None = None,
) -> np.ndarray:
    """(F, N, 2) vertex positions in output px -> (F, height, width) frames of `table`'s
    values (an (H, W) uint8, uint16 or float32 array over the texture: palette indices,
    or texel numbers), `background` where no texel lands. A texel holding `background`
    is not drawn, so whatever lies behind it shows. Layers are painted in the order of
    `pieces.layer`, or per frame in that of `ranks` (F, len(parts.LAYERS))."""
    frames = len(vertices)
    if width > _RUN_LENGTHS[-1]:
        raise ValueError(f"frames at most {_RUN_LENGTHS[-1]} px wide")
    spans = _spans(pieces, mesh, vertices, width, height, ranks)
    dump = frames * width * height  # where pixels whose texel is background go
    out = np.full(dump + 1, background, table.dtype)
    # Painter's order between parts; within a part, blocks by run length (a radix sort on
    # one byte).
    order = np.argsort(spans.key, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(spans.key, minlength=_EMPTY + 1))]
    first = spans.first
    for k in np.flatnonzero(np.diff(bounds[: _EMPTY + 1])):
        run = int(_RUN_LENGTHS[k % len(_RUN_LENGTHS)])
        for a in range(bounds[k], bounds[k + 1], _BLOCK_ROWS):
            rows = order[a : min(a + _BLOCK_ROWS, bounds[k + 1])]
            # (run, rows): the long axis last, so numpy's inner loops are long. A run
            # shorter than the block repeats its last pixel: same place, same value.
            u0, v0, du, dv, last = np.take(spans.values, rows, axis=1)
            step = np.minimum(_STEPS[:run, None], last)
            u = step * du
            u += u0
            v = step * dv
            v += v0
            value = cv2.remap(
                table,
                u,
                v,
                cv2.INTER_NEAREST,
                borderMode=cv2.BORDER_CONSTANT,
                borderValue=background,
            )
            target = step.astype(np.int64)
            target += first[rows]
            np.putmask(target, value == background, dump)
            # Within one frame later writes win: later parts paint over earlier ones.
            out[target] = value
    return out[:dump].reshape(frames, height, width)
