"""mask_warnings.several_figures: a mask that joins two separate drawings says so."""

import numpy as np
import pytest
from PIL import Image

from animation.mask_warnings import several_figures
from animation.paper import ink_map, light_page
from tests.support.real_photos import real_dev, real_photo
from torchserve.training.evaluate_photos import load_truth

TRUTH = {t.name: t for t in load_truth()}


def _ink(rgb: np.ndarray, mask: np.ndarray, margin: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """The mask over the crop round it (as the gateway crops it, with paper round it) and
    that crop's ink."""
    rows, cols = np.nonzero(mask)
    top, left = max(rows.min() - margin, 0), max(cols.min() - margin, 0)
    bottom, right = rows.max() + margin, cols.max() + margin
    crop = np.ascontiguousarray(rgb[top:bottom, left:right])
    return mask[top:bottom, left:right], ink_map(light_page(crop)).ink


def test_two_figures_one_above_the_other_are_several_and_each_is_one():
    # Real photo 15 (a comic cover): one figure leaping above another, apart on the page.
    truth = TRUTH["15"]
    with Image.open(real_photo(truth.photo)) as image:
        rgb = np.asarray(image.convert("RGB"))
    both = truth.figure(1) | truth.figure(2)
    assert several_figures(*_ink(rgb, both))
    for label in (1, 2):
        assert not several_figures(*_ink(rgb, truth.figure(label))), label


@pytest.mark.parametrize("name", ["char1", "char2", "char3", "char4", "char5"])
def test_one_drawn_figure_is_not_several(name):
    # AnimatedDrawings' own annotated figures: one each, some drawn in several pieces
    # (char5's detached hands and feet).
    folder = real_dev(name)
    rgb = np.asarray(Image.open(folder / "texture.png").convert("RGB"))
    mask = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    assert not several_figures(mask, ink_map(light_page(rgb)).ink)


def test_a_head_apart_from_its_body_is_one_figure_and_two_bodies_are_two():
    # A head drawn apart above its body: two pieces, but the head spans less than half
    # the figure's height. Two figures with their arms out, one above the other, each
    # span more than half of it.
    head_and_body = np.zeros((200, 120), bool)
    head_and_body[10:50, 40:80] = True
    head_and_body[60:190, 20:100] = True
    assert not several_figures(head_and_body, head_and_body)
    two = np.zeros((200, 120), bool)
    two[0:90, 0:110] = True
    two[100:200, 5:115] = True
    assert several_figures(two, two)
    # The bridge a mask draws between pieces is paper, not ink: still two.
    bridged = two.copy()
    bridged[90:100, 55:60] = True
    assert several_figures(bridged, two)
    assert not several_figures(bridged, bridged)  # drawn joined: one
