import cv2
import numpy as np
import pytest

from animation.mesh import build_mesh, clean_mask
from tests.support.rigs import VARIANTS, character, rig


def _covered(mesh) -> np.ndarray:
    covered = np.zeros(mesh.region.shape, np.uint8)
    for tri in np.round(mesh.vertices[mesh.triangles]).astype(np.int32):
        cv2.fillConvexPoly(covered, tri, 1)
    return covered.astype(bool)


@pytest.mark.parametrize("variant", [*VARIANTS, "ad"])
def test_mesh_covers_the_mask_with_a_few_hundred_triangles(variant):
    ch, mesh = character(variant), rig(variant).mesh
    assert 100 <= len(mesh.triangles) <= 800
    covered = _covered(mesh)
    # Nearly every drawn pixel lies in a triangle; the rest ride on a neighbouring one.
    assert (covered & ch.mask).sum() / ch.mask.sum() > 0.95
    # And the triangles stay on the figure rather than bridging gaps between limbs.
    grown = cv2.dilate(ch.mask.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    assert (covered & ~grown).sum() / covered.sum() < 0.03
    # Consistent orientation: positive signed area in x-right, y-down pixels.
    a, b, c = (mesh.vertices[mesh.triangles[:, k]] for k in range(3))
    area = (b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]
    assert (area > 0).all()


def test_a_head_drawn_apart_from_the_body_is_kept_and_joined():
    ch, mesh = character("detached_head"), rig("detached_head").mesh
    head_rows = slice(0, int(ch.skeleton["neck"][1]))
    assert mesh.region[head_rows].sum() > 0.9 * ch.mask[head_rows].sum()
    assert (_covered(mesh) & ch.mask)[head_rows].sum() > 0.9 * ch.mask[head_rows].sum()


def test_specks_are_dropped_and_pinholes_filled():
    mask = np.zeros((120, 100), bool)
    mask[10:110, 30:70] = True
    mask[60, 50] = False  # a pinhole
    mask[5:7, 90:92] = True  # a speck of dirt
    draw, meshed = clean_mask(mask, spacing=8.0)
    assert draw[60, 50] and not draw[5, 90]
    assert meshed[draw].all()


def test_blobs_are_bridged_so_the_mesh_is_one_piece():
    mask = np.zeros((160, 100), bool)
    cv2.circle(mask.view(np.uint8), (50, 25), 18, 1, -1)  # head
    mask[55:150, 30:70] = True  # body, 12 px below the head
    joints = np.tile([50.0, 100.0], (16, 1))
    joints[3] = (50, 30)
    mesh = build_mesh(mask, joints)
    assert mesh.region[25, 50] and mesh.region[100, 50]
    covered = _covered(mesh)
    assert covered[25, 50] and covered[100, 50]
    assert not mesh.region[48, 50]  # the bridge is meshed but not drawn


@pytest.mark.parametrize(
    "shape",
    ["one_pixel_line", "dot", "stripes"],
)
def test_awkward_masks_still_rig_and_render_inside_the_frame(shape):
    from animation.character import Character
    from animation.render import RenderOptions, build_rig, render_joints
    from animation.skeleton import Skeleton

    mask = np.zeros((100, 100), bool)
    if shape == "one_pixel_line":
        mask[50, 10:90] = True
    elif shape == "dot":
        mask[48:51, 48:51] = True
    else:
        mask[10:90:2, 10:90] = True
    texture = np.full((100, 100, 4), 200, np.uint8)
    joints = np.random.default_rng(0).uniform(10, 90, (16, 2))
    r = build_rig(Character(texture, mask, Skeleton(joints)))
    assert len(r.mesh.triangles) >= 2
    gif = render_joints(r, np.stack([joints, joints + 5]), np.array([5, 5]), RenderOptions(size=64))
    assert gif.startswith(b"GIF89a")


def test_a_skeleton_on_one_point_is_refused():
    from animation.character import Character
    from animation.render import build_rig
    from animation.skeleton import Skeleton

    mask = np.zeros((50, 50), bool)
    mask[10:40, 10:40] = True
    texture = np.zeros((50, 50, 4), np.uint8)
    with pytest.raises(ValueError, match="one point"):
        build_rig(Character(texture, mask, Skeleton(np.full((16, 2), 25.0))))
