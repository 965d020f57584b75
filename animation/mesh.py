"""A triangle mesh over the character's mask, built once per character.

The mesh carries the deformation and the texture: `rasterise` draws every output pixel
from the texel its triangle maps it back to, so the mesh must *cover* the centre of every
drawn texel and keep separate limbs apart. Points are placed along every outline (outer and
hole contours) of the pixels one step outside the mask, simplified to within a pixel, and
on an interior grid; they are Delaunay-triangulated, and the triangles that leave the mask
(across the gap between two legs, across a hole) are dropped. Where that drops a stretch of
the mask (a thin limb whose triangles all crossed its outline), denser points go in there
and the mask is triangulated again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from animation.mesh_graph import components, corner_pairs, edge_pairs
from animation.parts import (
    PART_INDEX,
    PartBinding,
    arms_along_body,
    arms_on_the_head,
    attach_pieces,
    body_core,
    body_pieces_on_the_head,
    cut,
    hinges,
    label_triangles,
    on_seams,
    pivots,
    skirt_parts,
)

# How far (px) the mesh's outline may cut inside the contour one pixel outside the mask:
# at 1 it still passes outside the centres of the mask's edge pixels.
OUTLINE_TOLERANCE = 1.0
_REPAIRS = 2  # times points are added where the triangles missed part of the mask


@dataclass(frozen=True)
class Mesh:
    vertices: np.ndarray  # (N, 2) float64, texture px
    triangles: np.ndarray  # (T, 3) int64 vertex indices
    part: np.ndarray  # (T,) int64 index into parts.PARTS: the part moving each triangle
    region: np.ndarray  # (H, W) bool: the mask pixels the mesh carries (what gets drawn)
    triangle_map: np.ndarray  # (H, W) int32: the triangle carrying each pixel (nearest if none)
    layer: np.ndarray  # (T,) int64 index into parts.LAYERS: painter's order
    binding: PartBinding  # how the vertices follow the skeleton


def clean_mask(mask: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """(region to draw, region to mesh) from a raw mask.

    Pinholes are filled; specks far smaller than the figure are dropped; every remaining
    blob is joined to the largest by a thick bridge that is meshed but never drawn, so a
    head drawn apart from its body still moves with it.
    """
    m = mask.astype(np.uint8)
    area = int(m.sum())
    # Fill holes smaller than a mesh cell: they are noise, and cells cannot resolve them.
    n_bg, bg_labels, bg_stats, _ = cv2.connectedComponentsWithStats(1 - m, connectivity=4)
    border = np.unique(np.r_[bg_labels[0], bg_labels[-1], bg_labels[:, 0], bg_labels[:, -1]])
    small = np.flatnonzero(bg_stats[:, cv2.CC_STAT_AREA] < max(4.0, spacing**2 / 4))
    small = np.setdiff1d(small, border)
    if small.size:
        m[np.isin(bg_labels, small)] = 1
    n, labels, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    keep = 1 + np.flatnonzero(areas >= max(0.005 * area, 0.02 * areas.max()))
    keep = keep[np.argsort(-stats[keep, cv2.CC_STAT_AREA])]
    draw = np.isin(labels, keep)
    meshed = draw.astype(np.uint8)
    main = labels == keep[0]
    thickness = max(3, int(round(spacing)))
    for label in keep[1:]:
        # Bridge from the blob's point nearest to the main body to that body's nearest point.
        dist, (iy, ix) = _nearest(main)
        blob = labels == label
        by, bx = np.unravel_index(np.argmin(np.where(blob, dist, np.inf)), dist.shape)
        cv2.line(meshed, (int(bx), int(by)), (int(ix[by, bx]), int(iy[by, bx])), 1, thickness)
        main = main | blob
    return draw, meshed.astype(bool)


def _outline_points(meshed: np.ndarray, spacing: float) -> np.ndarray:
    """Points along every outer and hole contour of the pixels one step outside `meshed`:
    the contour simplified to within `OUTLINE_TOLERANCE` px, long sides cut `spacing`
    apart. Contour pixels are pixel centres one pixel off the mask, so the outline this
    draws runs outside the centres of the mask's own edge pixels: the triangles cover
    every drawn pixel's centre, and no pixel of the figure is lost at its edge."""
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    outer = cv2.dilate(meshed.astype(np.uint8), cross)
    contours, _ = cv2.findContours(outer, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    points = []
    for contour in contours:
        corners = cv2.approxPolyDP(contour, OUTLINE_TOLERANCE, True)[:, 0, :].astype(np.float64)
        sides = np.roll(corners, -1, axis=0) - corners
        cuts = np.maximum(1, np.ceil(np.linalg.norm(sides, axis=1) / spacing)).astype(int)
        steps = np.concatenate([np.arange(c) / c for c in cuts])
        points.append(
            np.repeat(corners, cuts, axis=0) + steps[:, None] * np.repeat(sides, cuts, axis=0)
        )
    return np.vstack(points)


def _cover(shape: tuple[int, int], vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(H, W) int32: the triangle covering each pixel, -1 where none does."""
    label = np.full(shape, -1, np.int32)
    shift = 4  # cv2 draws with sub-pixel vertices in fixed point
    pts = np.round(vertices[triangles] * (1 << shift)).astype(np.int32)
    for t, tri in enumerate(pts):  # once per character, a few hundred triangles
        cv2.fillConvexPoly(label, tri, int(t), lineType=cv2.LINE_8, shift=shift)
    return label


def _mean_colours(texture: np.ndarray, label: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(T, 3) uint8: the mean colour of `texture` (H, W, 3) over each triangle's pixels
    (`label` from `_cover`); a sliver that covers no pixel centre takes the colour at its
    centre (T, 2)."""
    count = len(centres)
    covered = label >= 0
    which = label[covered]
    pixels = np.bincount(which, minlength=count).astype(np.float64)
    sums = np.stack(
        [np.bincount(which, texture[..., c][covered], minlength=count) for c in range(3)], 1
    )
    colours = sums / np.maximum(pixels, 1)[:, None]
    h, w = label.shape
    xs = np.clip(np.round(centres[:, 0]).astype(int), 0, w - 1)
    ys = np.clip(np.round(centres[:, 1]).astype(int), 0, h - 1)
    empty = pixels == 0
    colours[empty] = texture[ys[empty], xs[empty], :3]
    return np.clip(np.round(colours), 0, 255).astype(np.uint8)


def _nearest_label(label: np.ndarray) -> np.ndarray:
    """`label` with every -1 replaced by the nearest pixel's label."""
    _, (iy, ix) = _nearest(label >= 0)
    return label[iy, ix]


def _nearest(mask: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Each pixel's distance to the nearest pixel of `mask` (H, W) bool, and that pixel's
    (rows, cols). OpenCV numbers the zeros of its input in row-major order."""
    distance, label = cv2.distanceTransformWithLabels(
        (~mask).astype(np.uint8), cv2.DIST_L2, 5, labelType=cv2.DIST_LABEL_PIXEL
    )
    ys, xs = np.nonzero(mask)
    return distance, (ys[label - 1], xs[label - 1])


def _inside_distance(mask: np.ndarray) -> np.ndarray:
    """(H, W) float32: each pixel of `mask`'s distance to the nearest pixel off it."""
    return cv2.distanceTransform(mask.astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)


def _delaunay(points: np.ndarray) -> np.ndarray:
    """(T, 3) indices into `points` (P, 2) (distinct, on a quarter-pixel grid) of their
    Delaunay triangles."""
    lo, hi = points.min(axis=0) - 1, points.max(axis=0) + 1
    subdiv = cv2.Subdiv2D((int(lo[0]), int(lo[1]), int(hi[0] - lo[0]) + 2, int(hi[1] - lo[1]) + 2))
    subdiv.insert(points.astype(np.float32))  # quarter pixels are exact in float32
    corners = np.asarray(subdiv.getTriangleList(), np.float64).reshape(-1, 2)
    if not len(corners):
        return np.zeros((0, 3), np.int64)
    key = np.round(points * 4) @ [1 << 20, 1]
    order = np.argsort(key)
    found = np.searchsorted(key[order], np.round(corners * 4) @ [1 << 20, 1])
    return order[np.minimum(found, len(order) - 1)].reshape(-1, 3)


def _poseable(triangles: np.ndarray, points: np.ndarray, joints: np.ndarray) -> np.ndarray:
    """Mask of the triangles that joint handles can pose.

    Start from the largest piece joined through edges; a piece hanging on it by vertices
    joins if a joint lies on it (the joint fixes its swing about the shared vertex) or it
    shares two vertices. Whatever is left (specks, pieces no handle reaches) is dropped and
    its pixels ride on the nearest kept triangle.
    """
    blob = components(len(triangles), corner_pairs(triangles))
    triangles_in = blob == np.argmax(np.bincount(blob))
    piece = np.where(triangles_in, components(len(triangles), edge_pairs(triangles)), -1)
    counts = np.bincount(piece[piece >= 0])
    corners = points[triangles]
    centre = corners.mean(1)
    # The piece under each joint (or nearest to it).
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]

    def side(p, q, r):
        return (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (
            r[..., 0] - p[..., 0]
        )

    j = joints[:, None, :]
    s1, s2, s3 = side(a, b, j), side(b, c, j), side(c, a, j)
    inside = ((s1 >= 0) & (s2 >= 0) & (s3 >= 0)) | ((s1 <= 0) & (s2 <= 0) & (s3 <= 0))
    dist = np.linalg.norm(centre[None] - j, axis=-1) + np.where(inside & triangles_in, 0, 1e6)
    dist[:, ~triangles_in] = np.inf
    handled = set(piece[np.argmin(dist, axis=1)].tolist())
    kept = {int(np.argmax(counts))}
    changed = True
    while changed:
        changed = False
        kept_vertices = set(np.unique(triangles[np.isin(piece, list(kept))]).tolist())
        for p in set(range(len(counts))) - kept:
            shared = len(kept_vertices & set(np.unique(triangles[piece == p]).tolist()))
            if shared >= 2 or (shared == 1 and p in handled):
                kept.add(p)
                changed = True
    return np.isin(piece, list(kept))


def build_mesh(
    mask: np.ndarray,
    joints: np.ndarray,
    target_triangles: int = 400,
    still: Sequence[str] = (),
    texture: np.ndarray | None = None,
) -> Mesh:
    """Triangulate `mask` (H, W) bool into about `target_triangles` triangles.

    `joints` (16, 2) assigns each triangle to a body part; the mesh is cut into its parts
    (`parts`), and the backing disks behind the joints follow its triangles. The parts
    named in `still` (and a skirt's upper legs) move with the part they hang from. With
    the drawing's (H, W, 3) uint8 RGB `texture`, the parts' borders keep to its own
    (a sleeve's edge against a skirt: see `parts.label_triangles`).
    """
    if not mask.any():
        raise ValueError("mask is empty")
    area = float(mask.sum())
    # Delaunay gives about two triangles per point; outline points take a good share.
    spacing = max(2.0, np.sqrt(area / (0.35 * target_triangles)))
    draw, meshed = clean_mask(mask, spacing)
    joints = np.asarray(joints, dtype=np.float64)
    # A mask too thin or small to triangulate (a one-pixel line, a dot) is meshed grown
    # by a pixel at a time; what is drawn stays the mask.
    for _ in range(4):
        try:
            vertices, triangles = _triangulate(meshed, spacing, joints)
            break
        except ValueError:
            meshed = cv2.dilate(meshed.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    else:
        raise ValueError("the mask is too small or thin to mesh")
    label = _cover(mask.shape, vertices, triangles)
    for _ in range(_REPAIRS):
        # Where the triangles left a stretch of the mask out (a thin limb whose Delaunay
        # triangles all crossed its outline), points three times as dense go in and the
        # mask is triangulated again; what is left rides on the nearest triangle.
        extra = _repair_points(meshed & (label < 0), meshed, spacing / 3)
        if not len(extra):
            break
        vertices, triangles = _triangulate(meshed, spacing, joints, extra)
        label = _cover(mask.shape, vertices, triangles)
    # Parts: each triangle to its bone's region, the mesh cut between parts, a backing
    # disk behind each joint.
    inside = _inside_distance(meshed)
    core = body_core(inside, joints)
    joins = hinges(joints, inside, core)
    neck = next(h.point for h in joins if h.child == PART_INDEX["head"])
    colours = (
        None if texture is None else _mean_colours(texture, label, vertices[triangles].mean(axis=1))
    )
    part = label_triangles(vertices, triangles, label, joints, neck, inside, colours, core)
    part = attach_pieces(vertices, triangles, part, joins, joints)
    part = arms_on_the_head(vertices, triangles, part)
    part = body_pieces_on_the_head(triangles, part)
    joins = on_seams(vertices, triangles, part, joins, joints)
    pieces = cut(vertices, triangles, part, joins)
    return Mesh(
        vertices=pieces.vertices,
        triangles=pieces.triangles,
        part=pieces.part,
        region=draw,
        triangle_map=_nearest_label(label),
        layer=pieces.layer,
        binding=PartBinding(
            part=pieces.vertex_part,
            rest=pieces.vertices,
            rest_joints=joints.copy(),
            pivots=pivots(joins, joints),
            follow=pieces.vertex_follow,
            still=tuple(
                sorted(
                    PART_INDEX[p]
                    for p in {
                        *still,
                        *skirt_parts(vertices, triangles, part, joints),
                        *arms_along_body(vertices, triangles, part),
                    }
                )
            ),
        ),
    )


def _repair_points(missed: np.ndarray, meshed: np.ndarray, spacing: float) -> np.ndarray:
    """Points `spacing` apart over the stretches of `missed` (H, W) bool of a few pixels
    or more, and along the outline around them."""
    _, labels, stats, _ = cv2.connectedComponentsWithStats(missed.astype(np.uint8), connectivity=8)
    stretches = 1 + np.flatnonzero(stats[1:, cv2.CC_STAT_AREA] >= max(4.0, spacing))
    if not len(stretches):
        return np.zeros((0, 2))
    reach = 2 * int(np.ceil(spacing)) + 1
    zone = cv2.dilate(
        np.isin(labels, stretches).astype(np.uint8), np.ones((reach, reach), np.uint8)
    )
    zone = zone.astype(bool)
    gy, gx = np.mgrid[spacing / 2 : zone.shape[0] : spacing, spacing / 2 : zone.shape[1] : spacing]
    iy, ix = gy.astype(int).ravel(), gx.astype(int).ravel()
    grid = np.column_stack([gx.ravel(), gy.ravel()])[zone[iy, ix] & meshed[iy, ix]]
    outline = _outline_points(meshed, spacing)
    ox, oy = (
        np.clip(np.round(outline[:, k]).astype(int), 0, zone.shape[1 - k] - 1) for k in (0, 1)
    )
    return np.vstack([grid, outline[zone[oy, ox]]])


def _triangulate(
    meshed: np.ndarray, spacing: float, joints: np.ndarray, extra: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and counter-clockwise triangles over `meshed`, with `extra` (E, 2) points
    besides the outline and the grid; ValueError if too few."""
    mask = meshed
    # Keep the interior grid off the outline so slivers do not form against it.
    inside = _inside_distance(meshed)
    gy, gx = np.mgrid[spacing / 2 : mask.shape[0] : spacing, spacing / 2 : mask.shape[1] : spacing]
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    grid = grid[inside[gy.astype(int).ravel(), gx.astype(int).ravel()] >= 0.6 * spacing]
    # Contour pixels are pixel indices; pixel centres are the texture's sample points.
    points = np.vstack(
        [_outline_points(meshed, spacing), grid, *([] if extra is None else [extra])]
    )
    points = np.unique(np.round(points * 4) / 4, axis=0)
    triangles = _delaunay(points)
    # Drop triangles that leave the mask: their centre, or an edge's middle by more than
    # a pixel or two (an edge cutting a concave corner between a limb and the body stays).
    near = cv2.dilate(meshed.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    grown = cv2.dilate(meshed.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    corners = points[triangles]
    probes = np.stack(
        [corners.mean(1), *(corners + np.roll(corners, 1, axis=1)).transpose(1, 0, 2) / 2]
    )
    py = np.clip(np.round(probes[..., 1]).astype(int), 0, mask.shape[0] - 1)
    px = np.clip(np.round(probes[..., 0]).astype(int), 0, mask.shape[1] - 1)
    triangles = triangles[near[py[0], px[0]] & grown[py[1:], px[1:]].all(axis=0)]
    triangles = triangles[_poseable(triangles, points, joints)]
    # Renumber the vertices that triangles use.
    kept, triangles = np.unique(triangles, return_inverse=True)
    triangles = triangles.reshape(-1, 3).astype(np.int64)
    vertices = points[kept]
    # Counter-clockwise in x-right / y-down pixels (positive signed area), for consistency.
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    flip = ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]) < 0
    triangles[flip] = triangles[flip][:, [0, 2, 1]]
    if len(triangles) < 2:
        raise ValueError("too few triangles")
    return vertices, triangles


def barycentric(mesh: Mesh, points: np.ndarray, triangle: np.ndarray) -> np.ndarray:
    """(P, 3) barycentric coordinates of `points` in `triangle` (outside ones extrapolate)."""
    a, b, c = (mesh.vertices[mesh.triangles[triangle, k]] for k in range(3))
    v0, v1, v2 = b - a, c - a, points - a
    det = v0[:, 0] * v1[:, 1] - v0[:, 1] * v1[:, 0]
    det = np.where(np.abs(det) < 1e-12, 1e-12, det)
    wb = (v2[:, 0] * v1[:, 1] - v2[:, 1] * v1[:, 0]) / det
    wc = (v0[:, 0] * v2[:, 1] - v0[:, 1] * v2[:, 0]) / det
    return np.column_stack([1.0 - wb - wc, wb, wc])


def barycentric_matrix(mesh: Mesh, points: np.ndarray, triangle: np.ndarray) -> np.ndarray:
    """(P, N): each point as the barycentric combination of its triangle's vertices, so
    `matrix @ vertices` moves the points with any pose of the mesh."""
    matrix = np.zeros((len(points), len(mesh.vertices)))
    np.put_along_axis(matrix, mesh.triangles[triangle], barycentric(mesh, points, triangle), 1)
    return matrix


def joint_triangles(mesh: Mesh, joints: np.ndarray) -> np.ndarray:
    """The triangle each joint is bound to: the one under it, else the nearest (joints may
    lie a little outside the mask)."""
    h, w = mesh.triangle_map.shape
    ix = np.clip(np.round(joints[:, 0]).astype(int), 0, w - 1)
    iy = np.clip(np.round(joints[:, 1]).astype(int), 0, h - 1)
    return mesh.triangle_map[iy, ix]
