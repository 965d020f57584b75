"""The real photos taken again (`torchserve.training.photo_variants`): each variant changes
the photo and its truth alike, so the truth still fits the picture posted."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from torchserve.training.evaluate_photos import Answer, load_truth, problems
from torchserve.training.photo_variants import VARIANTS, main, mirrored, moved_box, score_shifted

TRUTHS = {t.name: t for t in load_truth()}
# A small photo, a tall one and a page with several figures.
SAMPLE = ("31", "14", "36")


def _grey(truth) -> np.ndarray:
    """A stand-in for the photo: its truth's figures drawn dark on light paper."""
    return np.where(truth.labels[..., None] > 0, 40, 230).astype(np.uint8).repeat(3, axis=2)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", SAMPLE)
def test_a_variants_truth_fits_its_picture(variant, name):
    truth = TRUTHS[name]
    data, suffix, labels, joints = VARIANTS[variant](_grey(truth), truth.labels, truth.joints)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == ("JPEG" if suffix == ".jpg" else "PNG")
        picture = np.asarray(image.convert("L"))
    assert picture.shape == labels.shape
    moved = replace(truth, labels=labels, joints=joints)
    if variant in ("dim", "jpeg40", "mirrored"):  # no pixel moves off its stroke
        assert problems(moved) == []
    # Every hand-placed joint within a pixel and a half of its own figure (a joint on a
    # stroke 2 px wide may land just off it when the photo is shrunk or turned).
    for label, points in joints.items():
        off = cv2.distanceTransform((labels != label).astype(np.uint8), cv2.DIST_L2, 5)
        xy = np.clip(np.round(points).astype(int), 0, np.array(labels.shape[::-1]) - 1)
        assert off[xy[:, 1], xy[:, 0]].max() <= 1.5, (label, off[xy[:, 1], xy[:, 0]])
    # The figures are where the picture shows them: dark under the labels, light elsewhere.
    assert picture[labels > 0].mean() < 100 < picture[labels == 0].mean()


def test_mirrored_twice_is_the_photo_again_and_the_left_wrist_becomes_the_right():
    truth = TRUTHS["31"]
    _, _, labels, joints = mirrored(_grey(truth), truth.labels, truth.joints)
    width = truth.labels.shape[1]
    assert np.allclose(joints[1][9], [width - 1 - truth.joints[1][10][0], truth.joints[1][10][1]])
    _, _, back, again = mirrored(_grey(truth), labels, joints)
    assert (back == truth.labels).all()
    assert np.allclose(again[1], truth.joints[1])


def test_an_unknown_variant_is_refused_before_anything_is_posted(capsys):
    assert main(["--url", "http://127.0.0.1:9", "--variants", "dim,foggy"]) == 2
    assert "foggy" in capsys.readouterr().err


def test_a_box_moves_by_its_own_size_and_stays_inside_the_image():
    assert moved_box((100, 50, 300, 450), (0.02, 0), (640, 480)) == (104, 50, 304, 450)
    assert moved_box((100, 50, 300, 450), (0, -0.02), (640, 480)) == (100, 42, 300, 442)
    # Against the image's edges the box is cut there, never outside it.
    assert moved_box((0, 0, 640, 480), (-0.02, 0.02), (640, 480)) == (0, 9.6, 627.2, 480)


def test_a_photo_refused_as_taken_is_not_posted_again_with_a_moved_box():
    truth = TRUTHS["31"]
    refused = Answer(422, "no_character_detected")
    # Nothing listens on port 9: a post would raise.
    got = score_shifted("http://127.0.0.1:9", Path("."), [truth], [refused], (0.02, 0))
    assert [(s.status, s.code) for s in got] == [(422, "no_character_detected")]
