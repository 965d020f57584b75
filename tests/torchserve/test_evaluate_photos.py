"""The hand-made truth of the real photos, and how the served mask is scored against it."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageOps

from tests.support.real_photos import REAL_PHOTOS, real_photo
from torchserve.training.evaluate_photos import (
    SECTION_END,
    SECTION_START,
    Answer,
    PhotoScore,
    Truth,
    carry_section,
    load_truth,
    load_why_low,
    problems,
    report,
    score,
    summary,
    write_section,
)

TRUTHS = load_truth()


def test_every_real_photo_has_a_truth_of_its_size_with_every_joint_inside_its_figure():
    real_photo(TRUTHS[0].photo)  # skipped without ../shared
    photos = sorted(p.name for p in REAL_PHOTOS.glob("[0-9][0-9]_*"))
    assert [t.photo for t in TRUTHS] == photos
    for truth in TRUTHS:
        with Image.open(REAL_PHOTOS / truth.photo) as image:
            size = ImageOps.exif_transpose(image).size
        assert truth.labels.shape == size[::-1], truth.name
        assert problems(truth) == [], truth.name
        assert truth.notes, f"{truth.name}: say what is in and out of the mask"


def test_problems_names_a_joint_off_its_figure_and_a_figure_without_joints():
    labels = np.zeros((50, 50), np.uint8)
    labels[10:40, 10:20] = 1
    labels[10:40, 30:40] = 2
    joints = np.tile([15.0, 20.0], (17, 1))
    assert problems(Truth("00", "00.png", labels, {1: joints, 2: joints + [20, 0]}, "")) == []
    off = joints.copy()
    off[3] = [25, 20]  # between the two figures
    found = problems(Truth("00", "00.png", labels, {1: off}, ""))
    assert found == [
        "mask labels [1, 2] but joints for [1]",
        "figure 1: 94% of its joints inside its mask",
    ]


def test_an_answer_is_scored_against_the_figure_it_overlaps_most():
    labels = np.zeros((60, 60), np.uint8)
    labels[5:55, 5:25] = 1  # 1000 px
    labels[5:55, 35:55] = 2
    joints = {1: np.tile([15.0, 30.0], (17, 1)), 2: np.tile([45.0, 30.0], (17, 1))}
    mask = labels == 2
    mask[5:55, 25:35] = True  # and the paper between them: 1000 + 500 px
    got = score("00", labels, joints, Answer(200, mask=mask, keypoints=joints[2] + [3, 0]))
    assert got.figure == 2
    assert got.iou == pytest.approx(1000 / 1500)
    assert got.joints_inside == 1.0
    assert got.pck == 1.0  # 3 px of a 50 px box
    far = score("00", labels, joints, Answer(200, mask=mask, keypoints=joints[2] + [6, 0]))
    assert far.pck == 0.0  # 6 px: past 0.1 of 50
    refused = score("00", labels, joints, Answer(422, "pose_not_found"))
    assert not refused.animated
    assert summary([got, refused]) == {
        "animated": 1, "refused": 1, "mean_iou": got.iou, "min_iou": got.iou, "below": 1,
        "joints_inside": 1.0,
    }  # fmt: skip


def test_the_report_says_why_each_low_photo_is_low_or_that_it_is_not_explained():
    scores = [
        PhotoScore("01", 200, figure=1, iou=0.95, joints_inside=1.0, pck=1.0),
        PhotoScore("02", 200, figure=1, iou=0.40, joints_inside=1.0, pck=0.5),
        PhotoScore("03", 200, figure=1, iou=0.80, joints_inside=1.0, pck=0.5),
        PhotoScore("04", 422, "pose_not_found"),
    ]
    text = report(scores, [], why_low={"02": "Two figures boxed as one.", "01": "Old news."})
    lows = text[text.index("and why") :].splitlines()
    assert "- 02 (0.400): Two figures boxed as one." in lows
    assert "- 03 (0.800): not explained yet." in lows
    assert not any(line.startswith(("- 01", "- 04")) for line in lows)


def test_every_explanation_names_a_photo_with_a_truth():
    names = {t.name for t in TRUTHS}
    why = load_why_low()
    assert why and set(why) <= names, set(why) - names
    assert all(len(text) > 20 for text in why.values())


def test_an_answer_of_another_size_is_an_error_not_a_score():
    labels = np.ones((10, 10), np.uint8)
    joints = {1: np.tile([5.0, 5.0], (17, 1))}
    with pytest.raises(ValueError, match="answered"):
        score("00", labels, joints, Answer(200, mask=np.ones((10, 12), bool), keypoints=joints[1]))


def test_the_report_replaces_its_own_section_and_keeps_the_rest(tmp_path):
    path = tmp_path / "EVAL.md"
    path.write_text("# Evaluation\n\nthe synthetic tables\n")
    write_section(path, "first")
    write_section(path, "second")
    text = path.read_text()
    assert text.startswith("# Evaluation\n\nthe synthetic tables\n")
    assert text.count(SECTION_START) == 1 and "first" not in text
    assert text.endswith(f"{SECTION_START}\nsecond\n{SECTION_END}\n")


def test_the_models_evaluation_written_again_keeps_the_real_photos_section(tmp_path):
    path = tmp_path / "EVAL.md"
    path.write_text("# old tables\n")
    write_section(path, "the photos")
    again = carry_section(path.read_text(), "# new tables\n")
    assert again == f"# new tables\n\n{SECTION_START}\nthe photos\n{SECTION_END}\n"
    assert carry_section("# no section\n", "# new\n") == "# new\n"
