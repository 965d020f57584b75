"""`animation.crop.whole_drawing`: the whole drawing when the figure runs off its crop.

Each page is a photographed sheet (paper colour, grain, a lens's blur) with strokes drawn on
it; the figure's mask over a crop is what the gateway would hand over: the crop's ink,
grown by the 2 px a mask carries.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from animation.crop import runs_off, whole_drawing
from animation.paper import ink_map

PAPER = (214, 208, 196)
INK = (200, 60, 90)  # a pink felt tip
SIZE = (450, 600)  # (H, W)


def page(draw, paper=PAPER, size=SIZE) -> np.ndarray:
    """(H, W, 3) uint8: `draw(canvas)` on paper, blurred a little, with grain."""
    canvas = np.full((*size, 3), paper, np.uint8)
    draw(canvas)
    canvas = cv2.GaussianBlur(canvas, (0, 0), 0.8).astype(np.float64)
    grain = np.random.default_rng(0).normal(0, 4, canvas.shape)
    return np.clip(canvas + grain, 0, 255).astype(np.uint8)


def pig(canvas: np.ndarray) -> None:
    """A big body outline with the head at its right end, four legs and a tail."""
    cv2.ellipse(canvas, (220, 260), (130, 70), 0, 0, 360, INK, 3, cv2.LINE_AA)
    cv2.circle(canvas, (385, 215), 55, INK, 3, cv2.LINE_AA)
    for x in (130, 190, 280, 330):
        cv2.rectangle(canvas, (x, 315), (x + 30, 365), INK, 3, cv2.LINE_AA)
    cv2.line(canvas, (92, 240), (40, 200), INK, 3, cv2.LINE_AA)


def mask_over(rgb: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The crop's ink grown by 2 px: a figure's mask over `box`."""
    left, top, right, bottom = box
    ink = ink_map(np.ascontiguousarray(rgb[top:bottom, left:right])).ink
    return cv2.dilate(ink.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0


def drawn_extent(draw) -> tuple[int, int, int, int]:
    """The box of what `draw` puts on a blank page, exactly."""
    canvas = np.zeros((*SIZE, 3), np.uint8)
    draw(canvas)
    rows, cols = np.nonzero(canvas.any(axis=2))
    return cols.min(), rows.min(), cols.max() + 1, rows.max() + 1


def test_a_body_the_detector_left_out_is_taken_in():
    # The box holds the head and the front legs; the body's outline runs off its left edge.
    rgb = page(pig)
    box = (310, 150, 450, 375)
    mask = mask_over(rgb, box)
    assert runs_off(mask, box, (SIZE[1], SIZE[0]))
    found = whole_drawing(rgb, box, mask)
    assert found is not None
    expected = drawn_extent(pig)
    assert np.abs(np.subtract(found, expected)).max() <= 4, (found, expected)


def test_a_crop_holding_the_whole_drawing_is_left_alone():
    rgb = page(pig)
    box = (20, 140, 460, 385)
    mask = mask_over(rgb, box)
    assert not runs_off(mask, box, (SIZE[1], SIZE[0]))
    assert whole_drawing(rgb, box, mask) is None


def test_a_drawing_just_past_the_crop_edge_is_not_cropped_again():
    # The crop cuts 3 px off the tail's tip, of a crop 480 px wide: a second crop (the
    # models again) would add next to nothing.
    rgb = page(pig)
    left, top, right, bottom = drawn_extent(pig)
    box = (left + 3, top - 20, right + 20, bottom + 20)
    mask = mask_over(rgb, box)
    assert runs_off(mask, box, (SIZE[1], SIZE[0]))
    assert whole_drawing(rgb, box, mask) is None


def test_where_the_crop_meets_the_image_edge_nothing_runs_off():
    # The same pig cut by the photo's own edge: there is nothing past it to take in.
    rgb = page(pig)[:, 300:]
    box = (0, 150, 150, 375)
    mask = mask_over(rgb, box)
    assert mask[:, 0].sum() >= 3  # the mask does reach the crop's (= the image's) left edge
    assert not runs_off(mask, box, (rgb.shape[1], rgb.shape[0]))
    assert whole_drawing(rgb, box, mask) is None


def stick_figure(canvas: np.ndarray, cx: int = 300, ground: int = 380) -> None:
    cv2.circle(canvas, (cx, 170), 30, INK, 3, cv2.LINE_AA)
    cv2.line(canvas, (cx, 200), (cx, 300), INK, 3, cv2.LINE_AA)
    cv2.line(canvas, (cx - 60, 230), (cx + 60, 230), INK, 3, cv2.LINE_AA)
    cv2.line(canvas, (cx, 300), (cx - 40, ground), INK, 3, cv2.LINE_AA)
    cv2.line(canvas, (cx, 300), (cx + 40, ground), INK, 3, cv2.LINE_AA)


def test_a_drawing_running_to_the_image_border_is_not_taken_in():
    # The pig stands on a ground line drawn across the whole page: the drawing the mask
    # runs into is the scene's, and where the figure ends in it cannot be told.
    def scene(canvas):
        pig(canvas)
        cv2.line(canvas, (0, 365), (SIZE[1] - 1, 365), INK, 3, cv2.LINE_AA)

    rgb = page(scene)
    box = (310, 150, 450, 375)
    mask = mask_over(rgb, box)
    assert runs_off(mask, box, (SIZE[1], SIZE[0]))
    assert whole_drawing(rgb, box, mask) is None


def test_a_line_that_encloses_nothing_is_not_taken_in():
    # A stick arm drawn on into a long pen stroke: lines, not a body's outline.
    def scene(canvas):
        stick_figure(canvas)
        cv2.line(canvas, (360, 230), (560, 120), INK, 3, cv2.LINE_AA)

    rgb = page(scene)
    box = (230, 130, 370, 395)
    mask = mask_over(rgb, box)
    assert runs_off(mask, box, (SIZE[1], SIZE[0]))
    assert whole_drawing(rgb, box, mask) is None


@pytest.mark.parametrize("table", [(90, 60, 40), (245, 245, 245)])
def test_the_page_around_the_figure_is_not_taken_for_it(table):
    # A sheet photographed on a table, darker or lighter than the page: its edge reads as
    # ink and encloses the whole figure. The figure's body runs off the crop; the box
    # grows to the figure, never to the sheet.
    def scene(canvas):
        canvas[:] = table
        canvas[30:425, 15:585] = PAPER
        pig(canvas)

    rgb = page(scene)
    box = (310, 150, 450, 375)
    found = whole_drawing(rgb, box, mask_over(rgb, box))
    assert found is not None
    assert np.abs(np.subtract(found, drawn_extent(pig))).max() <= 4, found


def test_squared_paper_is_not_taken_in():
    # A small figure on a squared sheet lying on a table, its arm's stroke running on into
    # the grid past the crop: the grid's cells enclose paper, together far more than the
    # grid's ink, but each far less; a lattice, not an outline around a body.
    def scene(canvas):
        canvas[:] = (120, 85, 55)
        canvas[100:350, 150:450] = PAPER
        for x in range(156, 450, 20):
            cv2.line(canvas, (x, 100), (x, 349), (90, 100, 160), 2)
        for y in range(106, 350, 20):
            cv2.line(canvas, (150, y), (449, y), (90, 100, 160), 2)
        cv2.circle(canvas, (300, 170), 22, INK, 3, cv2.LINE_AA)
        cv2.line(canvas, (300, 192), (300, 260), INK, 3, cv2.LINE_AA)
        cv2.line(canvas, (240, 215), (360, 215), INK, 3, cv2.LINE_AA)

    rgb = page(scene)
    box = (260, 140, 340, 280)
    left, top, right, bottom = box
    mask = (
        cv2.dilate(ink_map(rgb).ink[top:bottom, left:right].astype(np.uint8), np.ones((5, 5))) > 0
    )
    assert runs_off(mask, box, (SIZE[1], SIZE[0]))
    assert whole_drawing(rgb, box, mask) is None
