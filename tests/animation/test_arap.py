import numpy as np
import pytest

from animation.arap import build_arap, mesh_edges
from tests.support.rigs import character, rig


def _rotate(points: np.ndarray, angle: float, centre: np.ndarray, shift) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return (points - centre) @ np.array([[c, s], [-s, c]]) + centre + np.asarray(shift)


@pytest.mark.parametrize("variant", ["plain", "everything", "ad"])
def test_rest_handles_give_the_rest_mesh(variant):
    r = rig(variant)
    joints = character(variant).skeleton.rest
    posed = r.arap.solve(joints[None])[0]
    assert np.abs(posed - r.mesh.vertices).max() < 0.5


@pytest.mark.parametrize("angle", [0.3, -1.2, np.pi])
def test_rigidly_moved_handles_move_the_mesh_rigidly(angle):
    r = rig("plain")
    joints = character("plain").skeleton.rest
    centre = joints.mean(axis=0)
    posed = r.arap.solve(_rotate(joints, angle, centre, (25, -40))[None])[0]
    expected = _rotate(r.mesh.vertices, angle, centre, (25, -40))
    assert np.abs(posed - expected).max() < 0.5


def test_frames_are_solved_together_as_they_would_be_one_by_one():
    r = rig("plain")
    joints = character("plain").skeleton.rest
    rng = np.random.default_rng(1)
    frames = joints[None] + rng.normal(0, 8, (5, *joints.shape))
    together = r.arap.solve(frames)
    one_by_one = np.stack([r.arap.solve(f[None])[0] for f in frames])
    np.testing.assert_allclose(together, one_by_one, atol=1e-6)


def test_moving_a_hand_bends_the_arm_and_leaves_the_legs():
    from animation.skeleton import JOINT_INDEX

    r, ch = rig("plain"), character("plain")
    joints = ch.skeleton.rest.copy()
    joints[JOINT_INDEX["left_hand"]] += (0, -60)
    posed = r.arap.solve(joints[None])[0]
    moved = np.linalg.norm(posed - r.mesh.vertices, axis=1)
    hand = r.arap.handles[JOINT_INDEX["left_hand"]] > 0  # its triangle's corners
    foot = np.linalg.norm(r.mesh.vertices - ch.skeleton["right_foot"], axis=1) < 10
    assert moved[hand].min() > 40
    assert moved[foot].max() < 2
    # As rigid as possible: edge lengths change little on average even so.
    edges, _ = mesh_edges(r.mesh.triangles)
    rest = np.linalg.norm(np.diff(r.mesh.vertices[edges], axis=1), axis=-1)
    now = np.linalg.norm(np.diff(posed[edges], axis=1), axis=-1)
    assert np.median(np.abs(now / rest - 1)) < 0.05


def test_a_square_of_two_triangles_with_corner_handles():
    vertices = np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]])
    triangles = np.array([[0, 1, 2], [0, 2, 3]])
    solver = build_arap(vertices, triangles, np.eye(4))
    shifted = solver.solve((vertices + [3.0, 4.0])[None])[0]
    np.testing.assert_allclose(shifted, vertices + [3.0, 4.0], atol=1e-6)
    edges, sides = mesh_edges(triangles)
    assert len(edges) == 5 and (sides[:, 1] >= 0).sum() == 1
