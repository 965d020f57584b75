"""The margin the photo's edges cut off a crop, and the paper the models see there."""

from __future__ import annotations

import numpy as np

from animation.crop import crop_box, margin_lost, paper_beyond, without_paper


def test_a_box_inside_the_image_loses_no_margin():
    assert margin_lost((100, 100, 200, 300), (1000, 1000)) == (0, 0, 0, 0)


def test_a_box_against_the_edges_loses_what_crop_box_clipped():
    size = (210, 320)
    bbox = (0, 30, 200, 320)  # against the left and bottom edges, 10 px from the right
    box = crop_box(bbox, size)
    lost = margin_lost(bbox, size)
    assert box == (0, 1, 210, 320)
    assert lost == (20, 0, 10, 29)
    # Together they make the crop the image would have given had it gone on.
    assert (box[0] - lost[0], box[3] + lost[3]) == (-20, 349)


def test_a_box_reaching_past_the_image_loses_a_margin_of_its_part_inside():
    # A client's box twice the image's width: the paper added is a margin of the image's.
    assert margin_lost((-300, 0, 300, 100), (300, 100)) == (30, 10, 30, 10)


def test_paper_beyond_is_the_rims_colour_and_keeps_the_crop_in_place():
    rng = np.random.default_rng(0)
    crop = np.clip(rng.normal(200, 6, (40, 30, 3)), 0, 255).astype(np.uint8)
    crop[30:, 10:20] = 20  # a leg running out at the bottom
    out = paper_beyond(crop, (5, 0, 3, 7))
    assert out.shape == (47, 38, 3)
    assert np.array_equal(out[0:40, 5:35], crop)
    paper = out[40:, :]
    assert (np.abs(paper.astype(int) - 200) <= 6).all()  # not the leg's ink
    assert paper_beyond(crop, (0, 0, 0, 0)) is crop
    assert np.array_equal(without_paper(out, (5, 0, 3, 7)), crop)
    assert np.array_equal(without_paper(out[..., 0], (5, 0, 3, 7)), crop[..., 0])  # a mask
