"""The figure pipeline as the library's functions (`animation.figure`): the crop and the
paper its margin lacks, joints and masks back from what the models saw, the whole drawing,
the character and its rig, and photo + joints (+ mask) -> character in one call."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from animation.crop import crop_box, margin_lost, paper_beyond
from animation.figure import (
    BadBox,
    Crop,
    NoFigure,
    character_from_photo,
    character_of,
    choose_mask,
    crop_for,
    grown_box,
    rig_for,
)
from animation.segment import segment_figure
from animation.skeleton import Skeleton

SAMPLE = Path(__file__).resolve().parents[2] / "gateway" / "sample_drawing.jpg"


@pytest.fixture(scope="module")
def sample():
    labels = json.loads(SAMPLE.with_suffix(".json").read_text())
    rgb = np.asarray(Image.open(SAMPLE).convert("RGB"))
    return rgb, np.asarray(labels["keypoints"], np.float64)[:, :2], tuple(labels["bbox"])


def test_the_crop_is_the_box_with_its_margin_and_holds_every_placed_joint():
    size = (1000, 800)
    assert crop_for((100, 100, 200, 300), size) == Crop(crop_box((100, 100, 200, 300), size))
    # A joint placed outside the box grows the box before the margin is added.
    joint = np.array([[400.0, 150.0]])
    grown = crop_for((100, 100, 200, 300), size, hold=joint)
    assert grown.box == crop_box((100, 100, 400, 300), size) and grown.box[2] > 400
    with pytest.raises(BadBox):
        crop_for((500, 500, 502, 502), size)


def test_a_tight_upload_shows_the_models_paper_and_their_answers_come_back_onto_the_crop():
    rgb = np.full((120, 80, 3), 200, np.uint8)
    bbox = (0, 10, 80, 120)  # against the left, right and bottom edges
    where = crop_for(bbox, (80, 120))
    assert where.pads == margin_lost(bbox, (80, 120)) and where.pads[0] > 0
    crop = where.pixels(rgb)
    seen = where.seen(crop)
    assert np.array_equal(seen, paper_beyond(crop, where.pads))
    width, height = where.size
    # A joint the pose model put in the paper lands on the crop's edge, the rest moves back.
    found = np.array([[2.0, 50.0, 0.9], [where.pads[0] + 30.0, 40.0, 0.8]])
    back = where.joints_from_seen(found)
    assert back[0, :2].tolist() == [0.0, 50.0 - where.pads[1]]
    assert back[1, :2].tolist() == [30.0, 40.0 - where.pads[1]] and back[1, 2] == 0.8
    assert (back[:, 0] <= width - 1).all() and (back[:, 1] <= height - 1).all()
    mask = np.zeros(seen.shape[:2], bool)
    assert where.mask_from_seen(mask).shape == crop.shape[:2]


def test_the_rig_says_what_it_did_about_the_joints(sample):
    rgb, keypoints, bbox = sample
    where = crop_for(bbox, rgb.shape[1::-1], hold=keypoints)
    crop = where.pixels(rgb)
    joints = keypoints - where.box[:2]
    mask = choose_mask(crop, joints).mask
    assert rig_for(character_of(crop, joints, mask), 128).warnings == ()
    # The left wrist (COCO 9) placed on the paper in the crop's corner: rigging moves it
    # onto the figure, and says so; choosing the mask does not weigh it.
    off = joints.copy()
    off[9] = (2.0, 2.0)
    assert "joint_moved" in rig_for(character_of(crop, off, mask), 128).warnings
    assert "joint_moved" not in choose_mask(crop, off).warnings


def test_the_mask_is_opencvs_unless_a_learned_one_is_given(sample):
    rgb, keypoints, bbox = sample
    where = crop_for(bbox, rgb.shape[1::-1], hold=keypoints)
    crop = where.pixels(rgb)
    joints = keypoints - where.box[:2]
    found = choose_mask(crop, joints)
    assert found.source == "opencv"
    assert np.array_equal(found.mask, segment_figure(crop, joints))
    learned = choose_mask(crop, joints, learned=found.mask.copy())
    assert learned.mask.shape == crop.shape[:2] and learned.mask.any()


def test_a_figure_all_inside_its_crop_is_not_cropped_again(sample):
    rgb, keypoints, bbox = sample
    where = crop_for(bbox, rgb.shape[1::-1])
    mask = choose_mask(where.pixels(rgb), keypoints - where.box[:2]).mask
    assert grown_box(rgb, where, mask, bbox) is None


def test_a_speck_is_no_figure_and_the_character_rigs(sample):
    rgb, keypoints, bbox = sample
    where = crop_for(bbox, rgb.shape[1::-1])
    crop, joints = where.pixels(rgb), keypoints - where.box[:2]
    speck = np.zeros(crop.shape[:2], bool)
    speck[10:12, 10:12] = True
    with pytest.raises(NoFigure):
        character_of(crop, joints, speck)
    character = character_of(crop, joints, choose_mask(crop, joints).mask)
    assert character.texture.shape[:2] == crop.shape[:2]
    assert np.allclose(character.skeleton.rest, Skeleton.from_coco(joints).rest)
    rig = rig_for(character, 128)
    assert rig.mesh.vertices.shape[1] == 2


def test_photo_and_joints_make_a_character_with_a_box_or_with_a_mask(sample):
    rgb, keypoints, bbox = sample
    boxed = character_from_photo(rgb, keypoints, bbox=bbox)
    where = crop_for(bbox, rgb.shape[1::-1], hold=keypoints)
    assert boxed.size == where.size
    assert np.allclose(boxed.skeleton.rest, Skeleton.from_coco(keypoints - where.box[:2]).rest)
    # The same figure's mask laid on the photo: the crop is its box (holding the joints),
    # and the mask is used exactly as given.
    mask = np.zeros(rgb.shape[:2], bool)
    left, top = where.box[:2]
    mask[top : top + boxed.size[1], left : left + boxed.size[0]] = boxed.mask
    given = character_from_photo(rgb, keypoints, mask=mask)
    rows, cols = np.nonzero(mask)
    assert given.mask.sum() == mask.sum()
    assert given.size[0] >= cols.max() - cols.min() + 1
    with pytest.raises(NoFigure):
        character_from_photo(rgb, keypoints, mask=np.zeros(rgb.shape[:2], bool))
    with pytest.raises(ValueError, match="mask or its box"):
        character_from_photo(rgb, keypoints)
