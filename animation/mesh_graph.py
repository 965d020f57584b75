"""Which triangles of a mesh neighbour which, and the pieces they make.

Triangles are (T, 3) vertex indices. Pairs are (K, 2) triangle indices, each pair once.
"""

from __future__ import annotations

import numpy as np


def edge_pairs(triangles: np.ndarray) -> np.ndarray:
    """(K, 2): the pairs of triangles that share an edge."""
    a, b = triangles, np.roll(triangles, -1, axis=1)
    n = int(triangles.max(initial=0)) + 1
    key = (np.minimum(a, b) * n + np.maximum(a, b)).ravel()
    owner = np.repeat(np.arange(len(triangles)), 3)
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    same = np.flatnonzero(key[1:] == key[:-1])
    return np.column_stack([owner[same], owner[same + 1]]).astype(np.int64)


def corner_pairs(triangles: np.ndarray) -> np.ndarray:
    """(K, 2): the pairs of triangles that share a corner (an edge's two included), each
    once, smaller index first."""
    corner = triangles.ravel()
    owner = np.repeat(np.arange(len(triangles)), 3)
    order = np.argsort(corner, kind="stable")
    corner, owner = corner[order], owner[order]
    pairs = [np.zeros((0, 2), np.int64)]
    for step in range(1, int(np.bincount(corner).max(initial=1))):  # most triangles at a corner
        same = np.flatnonzero(corner[step:] == corner[:-step])
        pairs.append(np.column_stack([owner[same], owner[same + step]]))
    return np.unique(np.sort(np.vstack(pairs), axis=1), axis=0)


def components(n: int, pairs: np.ndarray) -> np.ndarray:
    """(n,) the piece (0, 1, ...) each of n items joined by `pairs` (K, 2) belongs to:
    every item takes the smallest label among its neighbours, and jumps along the chain,
    until none changes (as many rounds as the longest chain is long: a few dozen)."""
    label = np.arange(n)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    a, b = pairs[:, 0], pairs[:, 1]
    while len(pairs):
        smaller = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, smaller)
        np.minimum.at(new, b, smaller)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    return np.unique(label, return_inverse=True)[1]
