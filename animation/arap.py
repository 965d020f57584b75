"""As-rigid-as-possible shape manipulation (Igarashi & Igarashi 2009, the two-step method).

Step 1 finds the vertex positions whose edges are best explained by one similarity
transform per edge neighbourhood; step 2 keeps each of those transforms' rotation and drops
its scale, so limbs neither shrink nor swell. Handles are points inside triangles (the
joints), tied to the mesh by their barycentric coordinates as heavily weighted soft
constraints. Both systems depend only on the rest mesh and the handles' binding, so they
are built and factorised once per character; every frame of every motion is then one more
right-hand side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import splu
from threadpoolctl import ThreadpoolController

HANDLE_WEIGHT = 1000.0  # soft-constraint weight: handles are met to ~1e-3 px
# SuperLU solves many right-hand sides through BLAS; OpenBLAS's threads busy-wait, and on
# a small shared machine they make a 20 ms solve take 100-500 ms of CPU. One thread it is.
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
    handles: sparse.csr_matrix  # (H, N): handle positions as combinations of vertices
    edge_vectors: np.ndarray  # (E, 2) rest edge vectors v_j - v_i
    similarity_fit: sparse.csr_matrix  # (2E, 2N): (c, s) of each edge's best similarity
    step1_rhs: sparse.csr_matrix  # (2N, 2H): w^2 C^T, interleaved x/y
    step2_rhs_edges: sparse.csr_matrix  # (N, E): D^T
    step2_rhs_handles: sparse.csr_matrix  # (N, H): w^2 C^T
    step1: object  # splu factor of A^T A + w^2 C^T C (2N x 2N)
    step2: object  # splu factor of D^T D + w^2 C^T C (N x N)

    def __reduce__(self):
        # SuperLU factors cannot be pickled: a copy in another process refactorises (ms).
        return build_arap, (self.vertices, self.triangles, self.handles)

    def solve(self, handle_positions: np.ndarray) -> np.ndarray:
        """(F, H, 2) handle positions -> (F, N, 2) vertex positions; all frames at once."""
        with _BLAS.limit(limits=1, user_api="blas"):
            return self._solve(np.asarray(handle_positions, dtype=np.float64))

    def _solve(self, q: np.ndarray) -> np.ndarray:
        frames = q.shape[0]
        # Step 1: similarity. Unknowns interleaved [x0, y0, x1, y1, ...], one column a frame.
        q_interleaved = q.reshape(frames, -1).T  # (2H, F)
        v1 = self.step1.solve(np.asarray(self.step1_rhs @ q_interleaved))  # (2N, F)
        # Step 2: each edge keeps the rotation of its fitted similarity, at rest length.
        cs = (self.similarity_fit @ v1).reshape(-1, 2, frames)  # (E, 2, F)
        cs /= np.maximum(np.linalg.norm(cs, axis=1, keepdims=True), 1e-12)
        c, s = cs[:, 0], cs[:, 1]
        ex, ey = self.edge_vectors[:, :1], self.edge_vectors[:, 1:]
        targets = np.concatenate([c * ex + s * ey, c * ey - s * ex], axis=1)  # (E, 2F): x | y
        handles_xy = np.concatenate([q[:, :, 0].T, q[:, :, 1].T], axis=1)  # (H, 2F)
        rhs = self.step2_rhs_edges @ targets + self.step2_rhs_handles @ handles_xy
        v2 = self.step2.solve(np.asarray(rhs))  # (N, 2F)
        return np.stack([v2[:, :frames].T, v2[:, frames:].T], axis=-1)


def build_arap(vertices: np.ndarray, triangles: np.ndarray, handles: sparse.spmatrix) -> ArapSolver:
    """Build and factorise both ARAP systems for a rest mesh and its handle binding.

    `handles` (H, N) gives each handle as a (barycentric) combination of vertices.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    n = len(vertices)
    handles = sparse.csr_matrix(handles)
    edges, sides = mesh_edges(triangles)
    n_edges = len(edges)
    # Each edge's neighbourhood: its ends and the opposite corner on each side (4 points,
    # 3 on the boundary: the missing one gets zero rows and so no say).
    hood = np.column_stack([edges, sides])  # (E, 4)
    present = hood >= 0
    p = vertices[np.maximum(hood, 0)] * present[..., None]  # (E, 4, 2)
    # G maps (c, s, tx, ty) to the neighbourhood's positions: x' = c x + s y + tx,
    # y' = -s x + c y + ty (the paper's row pair per point).
    g = np.zeros((n_edges, 8, 4))
    g[:, 0::2, 0], g[:, 0::2, 1], g[:, 0::2, 2] = p[..., 0], p[..., 1], present
    g[:, 1::2, 0], g[:, 1::2, 1], g[:, 1::2, 3] = p[..., 1], -p[..., 0], present
    fit = np.linalg.pinv(g)[:, :2, :]  # (E, 2, 8): neighbourhood positions -> (c, s)
    e = vertices[edges[:, 1]] - vertices[edges[:, 0]]
    e_mat = np.stack([np.stack([e[:, 0], e[:, 1]], -1), np.stack([e[:, 1], -e[:, 0]], -1)], 1)
    # Residual of edge k: (v_j - v_i) - T_k e_k, linear in the neighbourhood's positions.
    select = np.zeros((2, 8))
    select[0, 0], select[0, 2], select[1, 1], select[1, 3] = -1, 1, -1, 1
    residual = select[None] - e_mat @ fit  # (E, 2, 8)
    cols = (2 * np.maximum(hood, 0)[:, :, None] + np.arange(2)).reshape(n_edges, 8)
    rows = 2 * np.arange(n_edges)[:, None] + np.arange(2)  # (E, 2)
    shape = (2 * n_edges, 2 * n)
    rr = np.broadcast_to(rows[:, :, None], residual.shape).ravel()
    cc = np.broadcast_to(cols[:, None, :], residual.shape).ravel()
    a1 = sparse.csr_matrix((residual.ravel(), (rr, cc)), shape=shape)
    similarity_fit = sparse.csr_matrix((fit.ravel(), (rr, cc)), shape=shape)
    w2 = HANDLE_WEIGHT**2
    c2 = sparse.kron(handles, sparse.identity(2), format="csr")  # interleaved x/y
    step1 = splu(sparse.csc_matrix(a1.T @ a1 + w2 * (c2.T @ c2)))
    d = sparse.csr_matrix(
        (
            np.r_[-np.ones(n_edges), np.ones(n_edges)],
            (np.r_[np.arange(n_edges), np.arange(n_edges)], np.r_[edges[:, 0], edges[:, 1]]),
        ),
        shape=(n_edges, n),
    )
    step2 = splu(sparse.csc_matrix(d.T @ d + w2 * (handles.T @ handles)))
    return ArapSolver(
        vertices=vertices,
        triangles=np.asarray(triangles),
        handles=handles,
        edge_vectors=e,
        similarity_fit=similarity_fit,
        step1_rhs=sparse.csr_matrix(w2 * c2.T),
        step2_rhs_edges=sparse.csr_matrix(d.T),
        step2_rhs_handles=sparse.csr_matrix(w2 * handles.T),
        step1=step1,
        step2=step2,
    )
