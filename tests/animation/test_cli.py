import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from animation.__main__ import main
from tests.animation.rigs import AD_CHARACTER

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
