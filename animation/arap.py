"""As-rigid-as-possible shape manipulation (Igarashi & Igarashi 2009, the two-step method).

Step 1 finds the vertex positions whose edges are best explained by one similarity
transform per edge neighbourhood; step 2 keeps each of those transforms' rotation and drops
its scale, so limbs neither shrink nor swell. Handles are points inside triangles (the
joints), tied to the mesh by their barycentric coordinates as heavily weighted soft
constraints. Both systems depend only on the rest mesh and the handles' binding, so they
are built and solved for once per character, as dense matrices that map handle positions
(and step 1's edge rotations) to vertex positions; every frame of every motion is then a few
matrix products. A drawing's mesh has a few hundred vertices (about 400 triangles), so the
dense systems (2N and N unknowns) solve in milliseconds, and a render needs no scipy (whose
import alone costs a CLI run far more than the solve; docs/BENCHMARKS.md, section from-readme).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

HANDLE_WEIGHT = 1000.0  # soft-constraint weight: handles are met to ~1e-3 px
# OpenBLAS's threads busy-wait, and on a small shared machine they make a short product
# burn many times its own CPU. One thread it is.
_BLAS = ThreadpoolController()


def mesh_edges(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique edges (E, 2) with i < j, and the opposite vertex of each side (E, 2); -1 where
    the edge is on the boundary and has only one side."""
    n = int(triangles.max()) + 1
    half = np.concatenate(
        [triangles[:, [0, 1, 2]], triangles[:, [1, 2, 0]], triangles[:, [2, 0, 1]]]
    )
    i, j, opposite = (
        np.minimum(half[:, 0], half[:, 1]),
        np.maximum(half[:, 0], half[:, 1]),
        half[:, 2],
    )
    key = i * n + j
    order = np.argsort(key, kind="stable")
    key, opposite = key[order], opposite[order]
    first = np.r_[True, key[1:] != key[:-1]]
    starts = np.flatnonzero(first)
    edges = np.column_stack([key[starts] // n, key[starts] % n])
    sides = np.full((len(starts), 2), -1, np.int64)
    sides[:, 0] = opposite[starts]
    second = starts + 1
    has_second = (second < len(key)) & (np.r_[key, -1][second] == key[starts])
    sides[has_second, 1] = opposite[second[has_second]]
    return edges, sides


@dataclass(frozen=True)
class ArapSolver:
    """Poses a mesh from handle positions; built once, solves any number of frames."""

    vertices: np.ndarray  # (N, 2) rest positions
    triangles: np.ndarray  # (T, 3)
    handles: np.ndarray  # (H, N): handle positions as combinations of vertices
    edges: np.ndarray  # (E, 2) vertex indices i < j
    edge_vectors: np.ndarray  # (E, 2) rest edge vectors v_j - v_i
    neighbourhoods: np.ndarray  # (E, 4) each edge's ends and opposite corners (0 if none)
    similarity_fit: np.ndarray  # (E, 2, 8): neighbourhood x/y -> the edge's (c, s)
    step1: np.ndarray  # (2N, 2H): interleaved handle x/y -> step 1's interleaved vertex x/y
    step2_edges: np.ndarray  # (N, E): step 2's edge targets -> vertex coordinates
    step2_handles: np.ndarray  # (N, H): step 2's handle coordinates -> vertex coordinates

    def __reduce__(self):
        # A copy in another process rebuilds (quick) rather than carrying megabytes of matrices.
        return build_arap, (self.vertices, self.triangles, self.handles)

    def solve(self, handle_positions: np.ndarray) -> np.ndarray:
        """(F, H, 2) handle positions -> (F, N, 2) vertex positions; all frames at once."""
        with _BLAS.limit(limits=1, user_api="blas"):
            return self._solve(np.asarray(handle_positions, dtype=np.float64))

    def _solve(self, q: np.ndarray) -> np.ndarray:
        frames = q.shape[0]
        # Step 1: similarity. Unknowns interleaved [x0, y0, x1, y1, ...], one column a frame.
        v1 = self.step1 @ q.reshape(frames, -1).T  # (2N, F)
        # Each edge's best similarity (c, s) from its neighbourhood's positions.
        hood = v1.reshape(-1, 2, frames)[self.neighbourhoods].reshape(len(self.edges), 8, frames)
        cs = self.similarity_fit @ hood  # (E, 2, F)
        # Step 2: each edge keeps the rotation of its fitted similarity, at rest length.
        cs /= np.maximum(np.linalg.norm(cs, axis=1, keepdims=True), 1e-12)
        c, s = cs[:, 0], cs[:, 1]
        ex, ey = self.edge_vectors[:, :1], self.edge_vectors[:, 1:]
        targets = np.concatenate([c * ex + s * ey, c * ey - s * ex], axis=1)  # (E, 2F): x | y
        handles_xy = np.concatenate([q[:, :, 0].T, q[:, :, 1].T], axis=1)  # (H, 2F)
        v2 = self.step2_edges @ targets + self.step2_handles @ handles_xy  # (N, 2F)
        return np.stack([v2[:, :frames].T, v2[:, frames:].T], axis=-1)


def build_arap(vertices: np.ndarray, triangles: np.ndarray, handles: np.ndarray) -> ArapSolver:
    """Build and solve both ARAP systems for a rest mesh and its handle binding.

    `handles` (H, N) gives each handle as a (barycentric) combination of vertices.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    handles = np.asarray(handles, dtype=np.float64)
    edges, sides = mesh_edges(triangles)
    n_edges = len(edges)
    # Each edge's neighbourhood: its ends and the opposite corner on each side (4 points,
    # 3 on the boundary: the missing one gets zero rows and so no say).
    hood = np.column_stack([edges, sides])  # (E, 4)
    present = (hood >= 0).astype(np.float64)
    p = vertices[np.maximum(hood, 0)]  # (E, 4, 2)
    # The least-squares similarity x' = c x + s y + tx, y' = -s x + c y + ty of the
    # neighbourhood, in closed form: with q the points less their centroid (zero for a
    # missing corner), c = sum(qx x' + qy y') / sum|q|^2 and s = sum(qy x' - qx y') / sum|q|^2.
    centroid = (p * present[..., None]).sum(1) / present.sum(1)[:, None]
    q = (p - centroid[:, None]) * present[..., None]  # (E, 4, 2)
    q /= (q**2).sum((1, 2))[:, None, None]
    fit = np.zeros((n_edges, 2, 8))  # (E, 2, 8): neighbourhood positions -> (c, s)
    fit[:, 0, 0::2], fit[:, 0, 1::2] = q[..., 0], q[..., 1]
    fit[:, 1, 0::2], fit[:, 1, 1::2] = q[..., 1], -q[..., 0]
    e = vertices[edges[:, 1]] - vertices[edges[:, 0]]
    e_mat = np.stack([np.stack([e[:, 0], e[:, 1]], -1), np.stack([e[:, 1], -e[:, 0]], -1)], 1)
    # Residual of edge k: (v_j - v_i) - T_k e_k, linear in the neighbourhood's positions.
    select = np.zeros((2, 8))
    select[0, 0], select[0, 2], select[1, 1], select[1, 3] = -1, 1, -1, 1
    residual = select[None] - e_mat @ fit  # (E, 2, 8)
    cols = (2 * np.maximum(hood, 0)[:, :, None] + np.arange(2)).reshape(n_edges, 8)
    w2 = HANDLE_WEIGHT**2
    # Step 1's normal matrix A^T A + w^2 C^T C, A's rows being each edge's residual (8
    # non-zero columns): summed from each edge's 8x8 block (a missing corner's column 0
    # gets zeros).
    bound = w2 * (handles.T @ handles)  # (N, N): w^2 H^T H, each axis apart
    gram = np.zeros((2 * len(vertices),) * 2)  # interleaved x/y
    gram[0::2, 0::2], gram[1::2, 1::2] = bound, bound
    blocks = np.einsum("eki,ekj->eij", residual, residual)
    np.add.at(gram, (cols[:, :, None], cols[:, None, :]), blocks)
    # Step 2's: D^T D (the mesh's graph Laplacian) + w^2 H^T H.
    laplacian = bound.copy()
    i, j = edges[:, 0], edges[:, 1]
    np.add.at(laplacian, (np.r_[i, j, i, j], np.r_[i, j, j, i]),
              np.r_[np.ones(2 * n_edges), -np.ones(2 * n_edges)])  # fmt: skip
    with _BLAS.limit(limits=1, user_api="blas"):
        rhs = np.zeros((2 * len(vertices), 2 * len(handles)))  # w^2 C^T, interleaved
        rhs[0::2, 0::2], rhs[1::2, 1::2] = w2 * handles.T, w2 * handles.T
        step1 = np.linalg.solve(gram, rhs)  # (2N, 2H)
        inverse = np.linalg.inv(laplacian)
        step2_handles = inverse @ (w2 * handles.T)  # (N, H)
    step2_edges = inverse[:, j] - inverse[:, i]  # (N, E): the inverse times D^T
    return ArapSolver(
        vertices=vertices,
        triangles=np.asarray(triangles),
        handles=handles,
        edges=edges,
        edge_vectors=e,
        neighbourhoods=np.maximum(hood, 0),
        similarity_fit=fit,
        step1=step1,
        step2_edges=step2_edges,
        step2_handles=step2_handles,
    )
