"""Which way is up and which way the performer faces, from the motion itself.

BVH files come Y-up or Z-up, in any unit, with the performer facing any horizontal
direction, and some (Rokoko's, 3ds Max's) carry a rotation on the root in every frame
that turns a Z-up rest pose into a Y-up motion. So nothing is read from the file's axes:

- up is the coordinate axis the body (hips to head) points along over the clip; only when
  the motion does not say (it lies down most of the time) does the rest pose decide;
- the performer's left is where the left shoulder and hip are against the right ones, in
  the horizontal plane, per frame and smoothed over about a second, so that a performer
  who turns round is still seen from the front (a flat drawing has no back to show), while
  quick twists of a dance stay; forward = left x up (BVH files are right-handed).

Body coordinates are (lateral, up, forward): x the performer's left, y up, z forward.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from animation.bvh import BVH, rest_positions

AXES = ("x", "y", "z")
FACING_SMOOTHING_S = 0.5  # sigma of the Gaussian over time of the facing direction
MAX_SMOOTHING_FRAMES = 500.0  # that sigma at 1000 fps
_UPRIGHT = 0.5  # mean cosine of the body with an axis needed to call that axis up
_UP_SAMPLES = 600  # frames looked at to find up


def up_vector(up: str) -> np.ndarray:
    """'y', '-z', '+x' ... -> a unit (3,) vector."""
    v = np.zeros(3)
    v[AXES.index(up[-1])] = -1.0 if up.startswith("-") else 1.0
    return v


def _body_axis(points: np.ndarray, hips: int, head: int) -> np.ndarray:
    """Unit vectors (..., 3) from the hips to the top of the head."""
    v = points[..., head, :] - points[..., hips, :]
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def detect_up(bvh: BVH, roles: dict[str, int]) -> str:
    """The coordinate axis pointing from the hips to the head: 'y', 'z', '-y', ...

    Taken from the motion (the mean direction over all frames), so a root that is rotated
    in every frame is no trap; from the rest pose when the motion lies down or spins.
    """
    if bvh.n_frames > _UP_SAMPLES:  # a mean needs no more: spare a long clip's kinematics
        step = -(-bvh.n_frames // _UP_SAMPLES)
        bvh = replace(bvh, motion=bvh.motion[::step])
    mean = _body_axis(bvh.positions, roles["hips"], roles["head"]).mean(axis=0)
    axis = int(np.argmax(np.abs(mean)))
    if abs(mean[axis]) < _UPRIGHT:
        mean = _body_axis(rest_positions(bvh), roles["hips"], roles["head"])
        axis = int(np.argmax(np.abs(mean)))
    return ("" if mean[axis] > 0 else "-") + AXES[axis]


@dataclass(frozen=True)
class BodyAxes:
    """The performer's frame in every source frame, in world coordinates."""

    up: np.ndarray  # (3,) unit, a signed coordinate axis
    lateral: np.ndarray  # (F, 3) unit, horizontal: the performer's left
    forward: np.ndarray  # (F, 3) unit, horizontal: the way the performer faces

    def body_coords(self, vectors: np.ndarray) -> np.ndarray:
        """World vectors (F, ..., 3) -> (F, ..., 3) components (lateral, up, forward)."""
        shape = (vectors.shape[0],) + (1,) * (vectors.ndim - 2) + (3,)
        lateral = self.lateral.reshape(shape)
        forward = self.forward.reshape(shape)
        return np.stack(
            [(vectors * lateral).sum(-1), vectors @ self.up, (vectors * forward).sum(-1)], axis=-1
        )


def body_axes(
    positions: np.ndarray,
    roles: dict[str, int],
    up: str,
    frame_time: float,
    smoothing_s: float = FACING_SMOOTHING_S,
) -> BodyAxes:
    """The performer's left and forward in each frame (positions: (F, J, 3))."""
    up_v = up_vector(up)
    across = (positions[:, roles["left_shoulder"]] - positions[:, roles["right_shoulder"]]) + (
        positions[:, roles["left_hip"]] - positions[:, roles["right_hip"]]
    )
    across = across - np.outer(across @ up_v, up_v)
    norm = np.linalg.norm(across, axis=1, keepdims=True)
    unit = across / np.maximum(norm, 1e-12)
    # Smoothing unit vectors (not angles) needs no unwrapping; frames where the shoulders and
    # hips give no direction (both lines along the up axis) borrow it from their neighbours.
    weight = (norm[:, 0] > 1e-9 * max(float(norm.max()), 1e-12)).astype(np.float64)
    # Bounded: a file's absurd Frame Time (an upload's 1e-12 s) must not ask for 10^12 taps,
    # nor a vast one (1e300 s) for a zero sigma; no real capture runs above 1000 fps.
    sigma = min(smoothing_s / frame_time, MAX_SMOOTHING_FRAMES)
    weighted = unit * weight[:, None]
    smooth = gaussian_smooth(weighted, sigma) if sigma > 0.01 else weighted
    norm = np.linalg.norm(smooth, axis=1, keepdims=True)
    fallback = _default_lateral(up_v)
    lateral = np.where(norm > 1e-6, smooth / np.maximum(norm, 1e-12), fallback)
    forward = np.cross(lateral, up_v)
    return BodyAxes(up=up_v, lateral=lateral, forward=forward)


def gaussian_smooth(values: np.ndarray, sigma: float) -> np.ndarray:
    """(F, C) values smoothed along F by a Gaussian of `sigma` frames, cut at 4 sigma, the
    ends extended by their edge values (scipy.ndimage.gaussian_filter1d's defaults with
    mode="nearest"; in numpy, as the renderer's CLI would wait for scipy.ndimage's import)."""
    radius = int(4.0 * sigma + 0.5)
    if radius == 0:
        return values.astype(np.float64)
    x = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    kernel /= kernel.sum()
    padded = np.pad(values.astype(np.float64), ((radius, radius), (0, 0)), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, len(kernel), axis=0)
    return windows @ kernel


def _default_lateral(up: np.ndarray) -> np.ndarray:
    """+X, or +Y for an X-up file: the usual left of a BVH performer."""
    v = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.5 else np.array([0.0, 1.0, 0.0])
    return v - up * (v @ up)
