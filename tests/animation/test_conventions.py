"""Any BVH, no configuration: files in each convention people have, rendered with `--bvh`
and `--joints-out` only, checked by the numbers of the 2D skeleton they produce.

The files (`data/conventions/`, written by `data/conventions/author.py`) are a jumping
jack, a walk, a zombie walk and a dance in CMU, Mixamo, Rokoko, 3ds Max Biped and the
project's own layout; Y-up and Z-up, facing +X, -X, +Z, -Z and -Y, in inches, cm and m,
at 30, 60 and 120 fps, with and without End Sites, one with a root rotated in every frame.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from animation.__main__ import main
from animation.bvh import format_bvh, load_bvh, parse_bvh
from animation.character import load_character
from animation.joint_guard import guard_joints
from animation.motions import load_motion, motion_from_bvh
from animation.retarget import choose_views, retarget
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX, Skeleton
from tests.support.real_photos import real_dev
from tests.support.rigs import AD_CHARACTER

DATA = Path(__file__).parent / "data" / "conventions"
FILES = sorted(p.name for p in DATA.glob("*.bvh"))
J = JOINT_INDEX
DRAWING = load_character(AD_CHARACTER).skeleton
# The skeleton as rigged: the two hands, drawn a pixel or two off the figure, moved onto it.
RIGGED = Skeleton(guard_joints(load_character(AD_CHARACTER).mask, DRAWING.rest).rest)
HEIGHT = float(np.ptp(DRAWING.rest[:, 1]))  # of the drawn figure, texture px


def _author():
    spec = importlib.util.spec_from_file_location("conventions_author", DATA / "author.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


author = _author()


def _motion_of(name: str) -> str:
    return next(m for m in author.MOTIONS if name.split("_", 1)[1].startswith(m))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict]:
    """Every file rendered by the CLI with --bvh and --joints-out and nothing else."""
    out = tmp_path_factory.mktemp("conventions")
    docs = {}
    for name in FILES:
        gif, joints = out / f"{name}.gif", out / f"{name}.json"
        argv = ["render", "--character", str(AD_CHARACTER), "--bvh", str(DATA / name)]
        assert main([*argv, "--out", str(gif), "--joints-out", str(joints)]) == 0, name
        doc = json.loads(joints.read_text())
        doc["gif_frames"] = Image.open(gif).n_frames
        docs[name] = doc
    return docs


def _frames(doc: dict) -> np.ndarray:
    return np.array(doc["frames"], dtype=np.float64)


def _length(f: np.ndarray, *chain: str) -> np.ndarray:
    return sum(
        np.linalg.norm(f[:, J[b]] - f[:, J[a]], axis=1)
        for a, b in zip(chain, chain[1:], strict=False)
    )


def test_the_files_cover_the_conventions_axes_units_and_rates():
    files = author.FILES
    assert sorted(f.name for f in files) == FILES
    assert {f.convention for f in files} == {"cmu", "mixamo", "rokoko", "biped", "own"}
    assert {f.up for f in files} == {"y", "z"}
    assert {"+x", "-x", "+z", "-z"} <= {f.facing for f in files}
    assert {f.unit for f in files} == {"cm", "m", "inch"} and {f.fps for f in files} == {
        30,
        60,
        120,
    }
    assert {f.motion for f in files} == set(author.MOTIONS)
    ends = {f.convention: any(load_bvh(DATA / f.name).is_end_site(j) for j in range(8))
            for f in files}  # fmt: skip
    assert not all(ends.values())  # with and without End Sites
    with_ends = [f for f in files if author.CONVENTIONS[f.convention].end_sites]
    without = [f for f in files if not author.CONVENTIONS[f.convention].end_sites]
    assert with_ends and without
    for f in with_ends:
        bvh = load_bvh(DATA / f.name)
        assert any(bvh.is_end_site(j) for j in range(len(bvh.names)))
    for f in without:
        bvh = load_bvh(DATA / f.name)
        assert not any(bvh.is_end_site(j) for j in range(len(bvh.names)))


def test_authoring_script_reproduces_the_files(tmp_path):
    author.main(tmp_path)
    for name in FILES:
        again, committed = load_bvh(tmp_path / name), load_bvh(DATA / name)
        assert again.names == committed.names and again.channels == committed.channels, name
        np.testing.assert_allclose(again.motion, committed.motion, atol=2e-4, err_msg=name)


@pytest.mark.parametrize("name", FILES)
def test_upright_grounded_as_drawn_and_the_drawing_kept(rendered, name):
    doc = rendered[name]
    f = _frames(doc)
    assert doc["joints"] == list(JOINTS) and doc["fps"] == 15
    assert f.shape == (doc["gif_frames"], 16, 2) and f.shape[0] >= 30
    width, height = doc["size"]
    assert max(width, height) == 256
    assert (f >= 0).all() and (f[..., 0] < width).all() and (f[..., 1] < height).all()
    # Upright: hip to neck within 45 degrees of vertical in every frame.
    spine = f[:, J["neck"]] - f[:, J["hip"]]
    assert np.degrees(np.arctan2(np.abs(spine[:, 0]), -spine[:, 1])).max() < 45
    # Feet below the hips.
    assert (f[:, [J["left_foot"], J["right_foot"]], 1] > f[:, [J["hip"]], 1]).all()
    # Left and right as drawn: the character's left shoulder and hip stay on the image's
    # right, where the drawing has them (it faces the viewer).
    assert DRAWING["left_shoulder"][0] > DRAWING["right_shoulder"][0]
    assert (f[:, J["left_shoulder"], 0] > f[:, J["right_shoulder"], 0]).all()
    assert (f[:, J["left_hip"], 0] > f[:, J["right_hip"], 0]).all()
    # Every bone keeps the rigged drawing's length (one camera scale for the whole clip), to 1%.
    bones = np.flatnonzero(RIGGED.bone_lengths() > 1)
    lengths = np.linalg.norm(f[:, bones] - f[:, PARENT_INDEX[bones]], axis=2)
    ratio = lengths / RIGGED.bone_lengths()[bones]
    assert np.abs(ratio / np.median(ratio) - 1).max() < 0.01


def _signature_jumping_jack(f: np.ndarray) -> None:
    hands = f[:, [J["left_hand"], J["right_hand"]], 1]
    above_head = (hands < f[:, [J["neck"]], 1]).all(axis=1)  # the neck joint is the nose
    below_shoulders = (hands > f[:, [J["left_shoulder"], J["right_shoulder"]], 1]).all(axis=1)
    assert above_head.mean() > 0.15 and below_shoulders.mean() > 0.15
    hips = np.abs(f[:, J["left_hip"], 0] - f[:, J["right_hip"], 0])
    feet = np.abs(f[:, J["left_foot"], 0] - f[:, J["right_foot"], 0])
    assert (feet > 2.0 * hips).mean() > 0.15  # apart
    assert (feet < 1.25 * hips).mean() > 0.15  # together
    # Opening out, not reaching forward: the arms are seen from the front.
    assert (f[:, J["left_hand"], 0] > f[:, J["right_hand"], 0]).all()


def _signature_walk(f: np.ndarray) -> None:
    leg = _length(f, "left_hip", "left_knee", "left_foot")[0]
    stride = f[:, J["left_foot"], 0] - f[:, J["right_foot"], 0]
    assert stride.max() > 0.25 * leg and stride.min() < -0.25 * leg  # one foot, then the other
    lowest = f[:, [J["left_foot"], J["right_foot"]], 1].max(axis=1)
    assert np.ptp(lowest) < 0.06 * leg  # a foot is always on the ground
    for side in ("left", "right"):
        arm = f[:, J[f"{side}_hand"], 0] - f[:, J[f"{side}_shoulder"], 0]
        step = f[:, J[f"{side}_foot"], 0] - f[:, J[f"{side}_hip"], 0]
        assert np.ptp(arm) > 0.2 * leg  # the arms swing
        assert np.corrcoef(arm, step)[0, 1] < -0.5  # against the leg of their side


def _signature_zombie(f: np.ndarray) -> None:
    for side in ("left", "right"):
        arm = _length(f, f"{side}_shoulder", f"{side}_elbow", f"{side}_hand")
        reach = f[:, J[f"{side}_hand"]] - f[:, J[f"{side}_shoulder"]]
        assert (reach[:, 0] > 0.6 * arm).all()  # both arms reach the same way, forward
        assert (np.abs(reach[:, 1]) < 0.45 * arm).all()  # about level, never hanging
    lean = f[:, J["neck"], 0] - f[:, J["hip"], 0]
    assert (lean > 0).all()  # leaning the way the arms reach


def _signature_dance(f: np.ndarray) -> None:
    assert np.ptp(f[:, J["root"], 0]) > 0.06 * np.ptp(f[0, :, 1])  # the hips sway
    neck = f[:, J["neck"], 1]
    for up, down in (("left", "right"), ("right", "left")):
        raised = f[:, J[f"{up}_hand"], 1] < neck
        lowered = f[:, J[f"{down}_hand"], 1] > f[:, J[f"{down}_shoulder"], 1]
        assert (raised & lowered).any()  # one arm thrown up while the other is down


SIGNATURES = {
    "jumping_jack": _signature_jumping_jack,
    "walk": _signature_walk,
    "zombie": _signature_zombie,
    "dance": _signature_dance,
}


@pytest.mark.parametrize("name", FILES)
def test_the_motion_is_recognisable_in_the_joint_numbers(rendered, name):
    SIGNATURES[_motion_of(name)](_frames(rendered[name]))


def test_each_motion_chooses_its_views_itself():
    kinds = {name: {g: v.kind for g, v in choose_views(load_motion(DATA / name)).items()}
             for name in FILES}  # fmt: skip
    for name, views in kinds.items():
        motion = _motion_of(name)
        if motion == "jumping_jack":  # opens out sideways: the front
            assert set(views.values()) == {"front"}, name
        if motion in ("walk", "zombie"):  # arms and legs swing and reach forward: the side
            assert {views[g] for g in ("left_arm", "right_arm", "left_leg", "right_leg")} == {
                "side"
            }, name


def _retargeted(file, times=None) -> np.ndarray:
    bvh, _ = author.build(file)
    text = format_bvh(bvh, decimals=4)  # through the text, as a file would be
    motion = motion_from_bvh(parse_bvh(text, source=file.name))
    times = np.arange(0, motion.duration_s, 1 / 15) if times is None else times
    return retarget(DRAWING, motion, times)


@pytest.mark.parametrize(
    ("convention", "motion", "up", "facings"),
    [
        ("mixamo", "walk", "y", ("+z", "+x", "-x", "-z")),
        ("rokoko", "zombie", "y", ("+z", "+x", "-x", "-z")),
        ("cmu", "dance", "y", ("-z", "+x", "+z", "-x")),
        ("biped", "jumping_jack", "z", ("-y", "+x", "-x", "+y")),
    ],
)
def test_the_way_the_performer_faces_changes_nothing(convention, motion, up, facings):
    first = author.TestFile(convention, motion, up, facings[0], "cm", 30)
    reference = _retargeted(first)
    for facing in facings[1:]:
        poses = _retargeted(replace(first, facing=facing))
        assert np.linalg.norm(poses - reference, axis=2).max() < 0.05 * HEIGHT, facing


def test_every_convention_of_one_motion_gives_the_same_animation():
    # The same jumping jack in five layouts, units and axes: the same 2D animation.
    reference = _retargeted(author.TestFile("mixamo", "jumping_jack", "y", "+z", "cm", 30))
    for convention, up, facing, unit in (
        ("cmu", "y", "-x", "inch"), ("rokoko", "y", "+z", "m"),
        ("biped", "z", "+x", "cm"), ("own", "z", "-y", "m"),
    ):  # fmt: skip
        file = author.TestFile(convention, "jumping_jack", up, facing, unit, 30)
        poses = _retargeted(file)
        assert np.linalg.norm(poses - reference, axis=2).max() < 0.05 * HEIGHT, convention


def test_a_root_rotated_in_every_frame_is_not_a_figure_lying_down():
    # Rokoko's files: the rest pose is Z-up, the root turns it upright in every frame.
    bvh = load_bvh(DATA / "rokoko_dance.bvh")
    hips, spine = bvh.index("Hips"), bvh.index("Spine")
    assert np.argmax(np.abs(bvh.offsets[spine])) == 2  # the rest pose says Z is up
    motion = load_motion(DATA / "rokoko_dance.bvh")
    assert motion.up == "y"  # the motion says Y
    assert (
        np.abs(bvh.motion[:, bvh.channel_start[hips] + 3 : bvh.channel_start[hips] + 6]).max() > 45
    )


@pytest.mark.parametrize("convention", ["rokoko", "mixamo", "cmu"])
@pytest.mark.parametrize("drawing", ["char1", "char2", "char3", "char4"])
def test_a_dance_started_mid_step_keeps_its_performer_upright(tmp_path, convention, drawing):
    # Rokoko's own hierarchy and channels (Spine..Spine3, position channels everywhere, a
    # Z-up rest turned upright by the root), and the same dance as Mixamo and CMU write it;
    # cut to start mid-step, so nothing taken from a first frame could pass for upright.
    bvh = DATA / f"{convention}_dance.bvh"
    start = 0.37 * load_motion(bvh).duration_s
    joints = tmp_path / "joints.json"
    argv = ["render", "--character", str(real_dev(drawing)), "--bvh", str(bvh),
            "--start", f"{start:.3f}", "--out", str(tmp_path / "d.gif"), "--joints-out", str(joints)]  # fmt: skip
    assert main(argv) == 0
    f = np.array(json.loads(joints.read_text())["frames"])
    spine = f[:, J["neck"]] - f[:, J["hip"]]
    lean = np.degrees(np.arctan2(np.abs(spine[:, 0]), -spine[:, 1]))
    assert np.mean(lean <= 20) >= 0.95, lean.max()
