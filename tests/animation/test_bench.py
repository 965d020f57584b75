"""The benchmark's own parts: the character it builds from the sample photo, the
whole-process measurement of a CLI run, and what it says about missing real drawings."""

import numpy as np
import pytest

from animation.character import load_character
from animation.skeleton import JOINT_INDEX
from animation.tools import bench
from tests.support.rigs import AD_CHARACTER


def test_the_sample_photo_becomes_a_character_as_the_service_builds_one(tmp_path):
    folder = bench.build_sample_character(tmp_path / "sample")
    character = load_character(folder)
    width, height = character.size
    # The crop is the labelled box grown by the gateway's 10% margin (clipped to the photo).
    assert 300 < width < 480 and 500 < height <= 640
    covered = character.mask.mean()
    assert 0.05 < covered < 0.6
    assert character.mask[tuple(character.skeleton["torso"][::-1].round().astype(int))]


def test_a_cli_run_is_measured_as_its_own_process(tmp_path):
    out = tmp_path / "j.gif"
    usage = bench.run_cli(
        ["render", "--character", str(AD_CHARACTER), "--motion", "jumping", "--size", "48",
         "--out", str(out)]
    )  # fmt: skip
    assert out.stat().st_size > 0
    assert usage["wall_s"] > 0 and usage["cpu_s"] > 0
    assert 20 < usage["peak_rss_mb"] < 2000  # the child's RSS, not this test process's


def test_missing_real_drawings_are_said(tmp_path, capsys):
    (tmp_path / "char2").mkdir()
    (tmp_path / "char2" / "char_cfg.yaml").write_text("skeleton: []\n")
    found = bench.real_characters(tmp_path)
    assert list(found) == ["char2"]
    out = capsys.readouterr().out
    assert out.count("MISSING") == 3 and "char1" in out


def test_the_mp4_check_decodes_frames_and_duration(tmp_path):
    out = tmp_path / "j.mp4"
    bench.run_cli(
        ["render", "--character", str(AD_CHARACTER), "--motion", "jumping", "--size", "48",
         "--out", str(out)]
    )  # fmt: skip
    frames, seconds = bench.mp4_plays(out)
    assert frames == 33 and abs(seconds - 2.2) < 0.01


def test_the_shape_section_measures_every_motion_and_says_what_is_out_of_bounds(capsys):
    rows = bench.bench_shape({"ad": AD_CHARACTER})
    assert [r["motion"] for r in rows] == list(bench.MOTIONS)
    assert all(r["ok"] and r["head"] == pytest.approx((1.0, 1.0)) for r in rows), rows
    out = capsys.readouterr().out
    assert "clips in bounds: 4 / 4 = 1.00" in out and "OUT OF BOUNDS" not in out


def test_jittered_joints_move_by_the_figures_size_seeded_and_stay_on_the_texture():
    character = load_character(AD_CHARACTER)
    rest = character.skeleton.rest
    same = bench.jittered(character, 0.02, 3).skeleton.rest
    np.testing.assert_array_equal(same, bench.jittered(character, 0.02, 3).skeleton.rest)
    assert not np.allclose(same, bench.jittered(character, 0.02, 4).skeleton.rest)
    rows, cols = np.nonzero(character.mask)
    side = max(np.ptp(rows), np.ptp(cols)) + 1
    moved = np.linalg.norm(same - rest, axis=1)
    assert 0.005 * side < np.median(moved) < 0.05 * side
    np.testing.assert_array_equal(same[JOINT_INDEX["root"]], same[JOINT_INDEX["hip"]])
    far = bench.jittered(character, 5.0, 0).skeleton.rest  # every joint pushed off the page
    height, width = character.mask.shape
    assert far.min() >= 0 and (far <= (width - 1, height - 1)).all()
    np.testing.assert_array_equal(bench.jittered(character, 0.0, 0).skeleton.rest, rest)
