import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import distance_transform_edt

from animation.__main__ import main
from animation.bvh import format_bvh, load_bvh
from animation.sprites import layout_of
from tests.support.rigs import AD_CHARACTER

EXTERNAL_BVH = Path(__file__).parent / "data" / "bvh_external_zup_30fps.bvh"
REPO = Path(__file__).resolve().parents[2]


def _one_line_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


def test_render_writes_a_gif(tmp_path, capsys):
    out = tmp_path / "wave.gif"
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "wave_hello"]
    assert main([*argv, "--out", str(out), "--size", "96", "--fps", "10"]) == 0
    im = Image.open(out)
    assert max(im.size) == 96 and im.n_frames == 24
    assert [p.name for p in tmp_path.iterdir()] == ["wave.gif"]  # no temp file left


def test_render_a_bvh_from_elsewhere_with_no_config(tmp_path):
    out = tmp_path / "ext.gif"
    argv = ["render", "--character", str(AD_CHARACTER), "--bvh", str(EXTERNAL_BVH)]
    assert main([*argv, "--out", str(out), "--size", "64"]) == 0  # up axis detected
    assert Image.open(out).n_frames > 2
    given = tmp_path / "given.gif"
    assert main([*argv, "--up", "z", "--out", str(given), "--size", "64"]) == 0
    assert given.read_bytes() == out.read_bytes()


def test_motions_lists_the_table_as_json(capsys):
    assert main(["motions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"dab", "jumping", "wave_hello", "zombie"} <= names
    assert all(r["frames"] >= 2 and r["duration_s"] > 0 for r in rows)


def test_bad_inputs_are_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "x.gif"
    ad = ["--character", str(AD_CHARACTER)]
    err = _one_line_error(
        capsys, ["render", "--character", str(tmp_path), "--motion", "dab", "--out", str(out)]
    )
    assert "char_cfg.yaml" in err
    err = _one_line_error(capsys, ["render", *ad, "--motion", "moonwalk", "--out", str(out)])
    assert "moonwalk" in err
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n  CHANNELS 3 Xposition\n}\nMOTION\n")
    err = _one_line_error(capsys, ["render", *ad, "--bvh", str(bad), "--out", str(out)])
    assert "line" in err
    _one_line_error(capsys, ["render", *ad, "--out", str(out)])  # neither --motion nor --bvh
    _one_line_error(capsys, ["render", *ad, "--motion", "dab", "--up", "z", "--out", str(out)])
    _one_line_error(capsys, ["render", *ad, "--motion", "dab", "--size", "0", "--out", str(out)])
    _one_line_error(capsys, ["render", *ad, "--motion", "dab", "--size", "big", "--out", str(out)])
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.bvh"]


def test_a_broken_character_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / "char"
    folder.mkdir()
    for name in ("char_cfg.yaml", "mask.png"):
        (folder / name).write_bytes((AD_CHARACTER / name).read_bytes())
    (folder / "texture.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    argv = [
        "render",
        "--character",
        str(folder),
        "--motion",
        "dab",
        "--out",
        str(tmp_path / "o.gif"),
    ]
    assert "texture" in _one_line_error(capsys, argv)


def test_python_dash_m_animation(tmp_path):
    out = tmp_path / "dab.gif"
    ok = subprocess.run(
        [sys.executable, "-m", "animation", "render", "--character", str(AD_CHARACTER),
         "--motion", "dab", "--out", str(out), "--size", "64"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert Image.open(io.BytesIO(out.read_bytes())).n_frames == 60
    bad = subprocess.run(
        [sys.executable, "-m", "animation", "render", "--character", str(tmp_path),
         "--motion", "dab", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


CONVENTIONS = Path(__file__).parent / "data" / "conventions"


def _long_clip(path: Path, seconds: float) -> None:
    """A clip of `seconds` made of one file's loop repeated (its last frame is its first)."""
    bvh = load_bvh(CONVENTIONS / "mixamo_walk.bvh")
    loop = bvh.motion[:-1]
    repeats = int(np.ceil(seconds / (len(loop) * bvh.frame_time)))
    rows = np.concatenate([loop] * repeats)[: round(seconds / bvh.frame_time) + 1]
    path.write_text(format_bvh(replace(bvh, motion=rows)))


def _gif_delays(path: Path) -> list[int]:
    im = Image.open(path)
    delays = []
    for i in range(im.n_frames):
        im.seek(i)
        delays.append(im.info["duration"])
    return delays


def test_a_30_s_clip_at_the_defaults_keeps_15_fps_is_cut_at_150_frames_and_says_so(
    tmp_path, capsys
):
    clip = tmp_path / "long.bvh"
    _long_clip(clip, 30.0)
    out, joints = tmp_path / "long.gif", tmp_path / "long.json"
    argv = ["render", "--character", str(AD_CHARACTER), "--bvh", str(clip), "--out", str(out)]
    assert main([*argv, "--joints-out", str(joints)]) == 0
    delays = _gif_delays(out)
    assert len(delays) == 150
    assert set(delays) <= {60, 70} and sum(delays) == 10_000  # 15 fps, the first 10 s
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("note: the clip is 30.00 s")
    assert "rendered its first 10.00 s (150 frames at 15 fps), cut 20.00 s" in err
    doc = json.loads(joints.read_text())
    assert doc["fps"] == 15 and len(doc["frames"]) == 150
    # A segment picked with --start/--end is rendered whole, at the same rate, unannounced.
    segment = tmp_path / "segment.gif"
    argv = ["render", "--character", str(AD_CHARACTER), "--bvh", str(clip), "--out", str(segment)]
    assert main([*argv, "--start", "20", "--end", "24"]) == 0
    assert sum(_gif_delays(segment)) == 4_000 and len(_gif_delays(segment)) == 60
    assert capsys.readouterr().err == ""


def test_joints_out_is_the_gifs_skeleton_in_its_pixels(tmp_path):
    out, joints = tmp_path / "jj.gif", tmp_path / "jj.json"
    argv = ["render", "--character", str(AD_CHARACTER), "--bvh",
            str(CONVENTIONS / "cmu_jumping_jack.bvh"), "--size", "180"]  # fmt: skip
    assert main([*argv, "--out", str(out), "--joints-out", str(joints)]) == 0
    doc = json.loads(joints.read_text())
    assert set(doc) == {"fps", "size", "joints", "frames"}
    im = Image.open(out)
    assert doc["size"] == list(im.size) and len(doc["frames"]) == im.n_frames
    assert doc["joints"][:4] == ["root", "hip", "torso", "neck"] and len(doc["joints"]) == 16
    # The figure is drawn where the joints say: every joint on the figure, or within a few
    # pixels of it, in every frame. A thin stroke may end short of the joint at its tip, and
    # a limb turns about the middle of the seam it hangs by (parts.on_seams), which on this
    # drawing's thin arms lies up to 3 texture px from the shoulder: a raised hand is drawn
    # up to twice that from the skeleton's (6 px at this size).
    for k in range(0, im.n_frames, 7):
        im.seek(k)
        off_figure = distance_transform_edt(np.asarray(im.convert("RGBA"))[..., 3] == 0)
        x, y = np.round(np.array(doc["frames"][k])).astype(int).T
        assert off_figure[y, x].max() <= 7, k
        assert np.median(off_figure[y, x]) == 0, k


def test_map_names_the_joints_a_file_hides(tmp_path, capsys):
    text = (CONVENTIONS / "mixamo_walk.bvh").read_text()
    for side in ("Left", "Right"):
        text = text.replace(f"mixamorig:{side}Arm\n", f"mixamorig:{side}Bone0\n")
        text = text.replace(f"mixamorig:{side}ForeArm", f"mixamorig:{side}Bone1")
        text = text.replace(f"mixamorig:{side}Hand\n", f"mixamorig:{side}Bone2\n")
    odd = tmp_path / "odd.bvh"
    odd.write_text(text)
    out = tmp_path / "odd.gif"
    argv = ["render", "--character", str(AD_CHARACTER), "--bvh", str(odd), "--out", str(out)]
    err = _one_line_error(capsys, argv)
    assert (
        "cannot find the joints for left_shoulder, left_elbow, left_hand" in err and "--map" in err
    )
    assert not out.exists()
    given = ["--map", "left_hand=mixamorig:LeftBone2", "--map", "right_hand=mixamorig:RightBone2"]
    assert main([*argv, *given]) == 0 and Image.open(out).n_frames == 33
    assert "unknown role" in _one_line_error(capsys, [*argv, "--map", "tail=Hips"])
    assert "ROLE=JOINT" in _one_line_error(capsys, [*argv, "--map", "left_hand"])


@pytest.mark.parametrize(
    ("name", "extra", "magic"),
    [
        ("clip.mp4", [], b"ftyp"),
        ("clip.webp", [], b"WEBP"),
        ("clip.GIF", [], b"GIF8"),
        ("clip", ["--format", "webp"], b"WEBP"),
        ("clip", [], b"GIF8"),  # no suffix, no --format: the default
        ("clip.mp4", ["--format", "mp4", "--background", "#102030"], b"ftyp"),
        ("clip.zip", [], b"PK\x03\x04"),
        ("clip", ["--format", "png"], b"PK\x03\x04"),
    ],
)
def test_the_format_comes_from_format_or_the_suffix(tmp_path, name, extra, magic):
    out = tmp_path / name
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "jumping", "--size", "48"]
    assert main([*argv, "--out", str(out), *extra]) == 0
    assert magic in out.read_bytes()[:16]


def test_gif_bytes_never_land_under_another_format_s_name(tmp_path, capsys):
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "jumping"]
    for name, extra in (
        ("x.mp4", ["--format", "gif"]),
        ("x.webp", ["--format", "mp4"]),
        ("x.bmp", []),
        ("x.png", ["--format", "png"]),  # png frames come zipped: .zip
        ("x.mp4", ["--background", "blue"]),
    ):
        _one_line_error(capsys, [*argv, "--out", str(tmp_path / name), *extra])
    assert list(tmp_path.iterdir()) == []


def test_the_cli_defaults_are_the_renderer_s():
    from animation import __main__ as cli
    from animation.render import RenderOptions

    assert (cli.SIZE, cli.FPS, cli.MAX_FRAMES) == (
        RenderOptions.size,
        RenderOptions.fps,
        RenderOptions.max_frames,
    )


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import sys; from animation.__main__ import main; assert main(sys.argv[1:]) == 0; "
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_a_command_imports_only_what_it_uses(tmp_path):
    listing = _modules_after(["motions"])
    assert not {"scipy", "cv2", "av", "animation.render"} & listing
    gif = _modules_after(
        ["render", "--character", str(AD_CHARACTER), "--motion", "dab", "--size", "32",
         "--out", str(tmp_path / "a.gif")]
    )  # fmt: skip
    assert "animation.render" in gif and not {"av", "animation.mp4", "animation.webp"} & gif
    # No scipy at all (its import alone cost ~0.3 CPU-s): the parts turn in numpy,
    # the mesh uses OpenCV, the facing's smoothing is numpy.
    assert "scipy" not in gif


def test_up_takes_a_signed_axis_as_the_api_does(tmp_path, capsys):
    walk = AD_CHARACTER.parent / "conventions" / "cmu_walk.bvh"
    base = ["render", "--character", str(AD_CHARACTER), "--bvh", str(walk), "--size", "48",
            "--max-frames", "4"]  # fmt: skip
    for up in ("-y", "+y", "Y"):
        assert main([*base, "--up", up, "--out", str(tmp_path / "w.gif")]) == 0, up
    with pytest.raises(SystemExit) as refused:
        main([*base, "--up", "w", "--out", str(tmp_path / "w.gif")])
    assert refused.value.code == 2 and "expected x, y or z" in capsys.readouterr().err


def test_a_reader_that_leaves_early_is_no_error():
    # `python -m animation motions --json | head -1`: the pipe's reader is gone.
    read, write = os.pipe()
    os.close(read)
    run = subprocess.run([sys.executable, "-m", "animation", "motions", "--json"], stdout=write,
                         stderr=subprocess.PIPE, text=True, timeout=60)  # fmt: skip
    os.close(write)
    assert run.returncode == 0 and run.stderr == ""


def test_report_says_how_far_the_render_bends_each_part(tmp_path):
    out, report = tmp_path / "dab.gif", tmp_path / "dab.json"
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "dab", "--size", "96"]
    assert main([*argv, "--out", str(out), "--report", str(report)]) == 0
    doc = json.loads(report.read_text())
    assert doc["motion"] == "dab" and doc["frames"] == Image.open(out).n_frames
    assert doc["stretch"]["head"] == doc["squash"]["head"] == 1.0  # turned whole
    assert doc["flipped_triangles"] == doc["spike_frames"] == doc["torn_frames"] == 0
    assert 1.0 <= doc["growth"] < 1.5


def test_sheet_lays_out_a_row_per_drawing_and_says_what_it_left_out(tmp_path, capsys):
    import shutil

    folder = tmp_path / "drawings"
    shutil.copytree(AD_CHARACTER, folder / "a")
    Image.new("RGB", (40, 30), "red").save(folder / "a" / "photo.png")
    shutil.copytree(AD_CHARACTER, folder / "b")
    (folder / "broken").mkdir()
    (folder / "broken" / "char_cfg.yaml").write_text("skeleton: []\n")
    out = tmp_path / "sheet.png"
    argv = ["sheet", str(folder), "--out", str(out), "--motions", "dab,jumping", "--cell", "64"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "left out broken" in err and "skeleton lacks joints" in err
    sheet = Image.open(out)
    # Two rows; the first has the photo, rest and two frames per motion (six cells).
    assert sheet.height == 2 * (64 + 14) and sheet.width == 120 + 6 * 64
    pixels = np.asarray(sheet.convert("RGB"))
    assert (pixels[:64, 120 : 120 + 64] == (255, 0, 0)).all(axis=2).any()  # the photo
    assert not (pixels[64 + 14 :, 120 : 120 + 64] == (255, 0, 0)).all(axis=2).any()
    assert "no annotation folder" in _one_line_error(
        capsys, ["sheet", str(folder / "broken"), "--out", str(tmp_path / "x.png")]
    )
    assert "--cell" in _one_line_error(capsys, [*argv[:4], "--cell", "8"])


def test_a_sprite_sheet_is_written_with_its_layout_beside_it(tmp_path):
    out = tmp_path / "wave.png"
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "wave_hello", "--size", "64"]
    assert main([*argv, "--out", str(out)]) == 0
    layout = json.loads((tmp_path / "wave.json").read_text())
    assert layout == layout_of(out.read_bytes())
    assert Image.open(out).size == (
        layout["columns"] * layout["frame"]["width"],
        layout["rows"] * layout["frame"]["height"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wave.json", "wave.png"]
