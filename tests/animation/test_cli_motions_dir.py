"""`--motions-dir FOLDER`: the CLI reads a folder of BVH files as the gateway's MOTIONS_DIR
does, so an operator can check a folder (and see what its long clips lose) before a deploy."""

import json
import shutil

from PIL import Image

from animation.__main__ import main
from tests.support.rigs import AD_CHARACTER

CONVENTIONS = AD_CHARACTER.parent / "conventions"


def test_the_folder_is_listed_and_rendered(tmp_path, capsys):
    folder = tmp_path / "motions"
    folder.mkdir()
    shutil.copy(CONVENTIONS / "mixamo_jumping_jack.bvh", folder / "star.bvh")
    (folder / "star.yaml").write_text("description: star jumps\nend_s: 1.0\n")
    assert main(["motions", "--json", "--motions-dir", str(folder)]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {"dab", "zombie", "star"} <= set(rows)
    assert rows["star"]["description"] == "star jumps"
    assert rows["star"]["duration_s"] == 1.0 and rows["star"]["frames"] == 15

    out = tmp_path / "star.gif"
    argv = ["render", "--character", str(AD_CHARACTER), "--motion", "star", "--size", "64"]
    assert main([*argv, "--motions-dir", str(folder), "--out", str(out)]) == 0
    assert Image.open(out).n_frames == 15
    assert main([*argv, "--out", str(out)]) == 2  # without the folder: unknown


def test_a_bad_file_in_the_folder_is_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "motions"
    folder.mkdir()
    (folder / "broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n")
    assert main(["motions", "--motions-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.bvh:4:" in err
