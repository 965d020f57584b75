"""paper.light_page: a figure on a dark page is found as a dark figure on a light one."""

import numpy as np

from animation.paper import light_page
from animation.segment import figure_mask
from tests.support import pages


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def test_a_light_page_is_left_as_it_is():
    page = pages.stick_figure(0, width=3)
    assert light_page(page.rgb) is page.rgb


def test_a_light_page_in_dim_light_is_left_as_it_is():
    # Its rim is as dark as black card's, but the figure on it is no lighter than it.
    page = pages.stick_figure(0, width=3)
    dim = (page.rgb * 0.3).astype(np.uint8)
    assert np.median(dim) < 80
    assert light_page(dim) is dim


def test_a_figure_on_a_dark_page_is_found_once_the_page_is_negated():
    # Light ink on black card: the ink map finds no ink darker than the page until the
    # page is negated (real photo 26, a cut-out girl on black, came out a black slab).
    page = pages.stick_figure(0, width=3)
    dark = 255 - page.rgb  # light strokes on a page darker than 80
    assert np.array_equal(light_page(dark), page.rgb)
    assert _iou(figure_mask(dark, page.skeleton).mask, page.figure) < 0.4
    assert _iou(figure_mask(light_page(dark), page.skeleton).mask, page.figure) > 0.55
