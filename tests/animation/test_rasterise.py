"""The backward rasteriser: each output pixel takes its texel through its triangle's map."""

from dataclasses import replace

import numpy as np
import pytest

from animation import mesh as mesh_module
from animation.character import load_character
from animation.mesh import Mesh, build_mesh
from animation.rasterise import mesh_pieces, rasterise, uncovered_texels
from tests.support.real_photos import real_dev
from tests.support.rigs import character, rig

BACKGROUND = 255


def _draw(mesh: Mesh, table: np.ndarray, vertices: np.ndarray, size: tuple[int, int]):
    """One frame of `table` for the mesh posed at `vertices` (N, 2), (width, height)."""
    return rasterise(mesh_pieces(mesh), mesh, table, vertices[None], *size, BACKGROUND)[0]


def _indexed(mesh: Mesh) -> np.ndarray:
    """A table with a different value on every drawn texel (mod 250), BACKGROUND off it."""
    numbers = (np.arange(mesh.region.size) % 250).reshape(mesh.region.shape).astype(np.uint8)
    return np.where(mesh.region, numbers, np.uint8(BACKGROUND))


@pytest.mark.parametrize("variant", ["plain", "everything", "ad"])
def test_the_rest_pose_draws_the_texture_texel_for_texel(variant):
    mesh = rig(variant).mesh
    table = _indexed(mesh)
    h, w = table.shape
    np.testing.assert_array_equal(_draw(mesh, table, mesh.vertices, (w, h)), table)
    # Moved by whole pixels, the same picture moves with it.
    moved = _draw(mesh, table, mesh.vertices + (7, 3), (w + 7, h + 3))
    np.testing.assert_array_equal(moved[3:, 7:], table)
    assert (moved[:3] == BACKGROUND).all() and (moved[:, :7] == BACKGROUND).all()


def test_twice_the_size_draws_each_texel_as_a_crisp_two_by_two_block():
    mesh = rig("plain").mesh
    table = _indexed(mesh)
    h, w = table.shape
    big = _draw(mesh, table, mesh.vertices * 2 + 0.5, (2 * w + 1, 2 * h + 1))
    # Inside the figure (every neighbour drawn too) no texel blends into another.
    inner = mesh.region.copy()
    for dy, dx in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        inner &= np.roll(mesh.region, (dy, dx), axis=(0, 1))
    ys, xs = np.nonzero(inner)
    for oy, ox in ((0, 0), (0, 1), (1, 0), (1, 1)):
        np.testing.assert_array_equal(big[2 * ys + oy, 2 * xs + ox], table[ys, xs])


def _two_triangle_mesh() -> Mesh:
    """A leg triangle (layer 1) on the left of the texture and an arm triangle (layer 7)
    on the right whose lower half is drawn and upper half is paper (not drawn)."""
    region = np.zeros((40, 80), bool)
    region[5:35, 5:35] = True
    region[20:35, 45:75] = True
    vertices = np.array(
        [[2.0, 2.0], [38.0, 2.0], [2.0, 38.0], [42.0, 2.0], [78.0, 2.0], [78.0, 38.0]]
    )
    triangles = np.array([[0, 2, 1], [3, 4, 5]])
    triangle_map = np.where(np.arange(80) < 40, 0, 1)[None].repeat(40, 0).astype(np.int32)
    return Mesh(vertices, triangles, np.array([0, 6]), region, triangle_map, np.array([1, 7]), None)


def test_a_front_part_s_undrawn_texels_never_erase_the_part_behind():
    mesh = _two_triangle_mesh()
    table = np.where(mesh.region, np.where(np.arange(80) < 40, 1, 2)[None], BACKGROUND)
    table = table.astype(np.uint8)
    posed = mesh.vertices.copy()
    posed[3:] -= (40, 0)  # the arm's triangle laid over the leg's
    frame = _draw(mesh, table, posed, (80, 40))
    arm = (frame == 2).sum()
    assert arm > 0 and (frame[5:19, 5:35] == 1).all()  # the leg shows through the paper
    assert (frame[21:33, 28:34] == 2).all()  # and the arm's ink is in front of it
    # Drawn back to front the other way round, the arm's ink would be hidden.
    swapped = replace(mesh, layer=np.array([7, 1]))
    assert (_draw(swapped, table, posed, (80, 40)) == 2).sum() < arm


def test_texels_outside_every_triangle_are_drawn_with_their_nearest_triangle():
    mesh = _two_triangle_mesh()
    region = mesh.region.copy()
    region[36:38, 10:14] = True  # below the leg's triangle, which ends at y = 2 + 36 - x
    mesh = replace(mesh, region=region)
    ys, xs = uncovered_texels(mesh)
    assert {(36, 10), (37, 13)} <= set(zip(ys.tolist(), xs.tolist(), strict=True))
    table = np.where(region, np.uint8(1), np.uint8(BACKGROUND))
    frame = _draw(mesh, table, mesh.vertices + (0, 1), (80, 41))
    assert (frame[37:39, 10:14] == 1).all()  # moved with their triangle, one row down


@pytest.mark.parametrize("name", ["char1", "char2", "char3", "char4"])
def test_a_real_drawing_s_mesh_covers_its_drawn_texels(name):
    character = load_character(real_dev(name, "char_cfg.yaml").parent)
    mesh = build_mesh(character.mask, character.skeleton.rest)
    assert len(uncovered_texels(mesh)[0]) <= 10  # of 30,000-150,000
    table = _indexed(mesh)
    h, w = table.shape
    np.testing.assert_array_equal(_draw(mesh, table, mesh.vertices, (w, h)), table)


def test_a_stretch_the_triangles_miss_is_meshed_again(monkeypatch):
    ch = character("plain")
    band = ch.skeleton["torso"][1]
    triangulate = mesh_module._triangulate

    def lossy(meshed, spacing, joints, extra=None):
        vertices, triangles = triangulate(meshed, spacing, joints, extra)
        if extra is None:  # the first try loses every triangle across a band of the body
            keep = np.abs(vertices[triangles].mean(1)[:, 1] - band) > 10
            return vertices, triangles[keep]
        return vertices, triangles

    monkeypatch.setattr(mesh_module, "_triangulate", lossy)
    assert len(uncovered_texels(build_mesh(ch.mask, ch.skeleton.rest))[0]) <= 10
    monkeypatch.setattr(mesh_module, "_REPAIRS", 0)
    assert len(uncovered_texels(build_mesh(ch.mask, ch.skeleton.rest))[0]) > 500
