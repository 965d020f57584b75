"""A character resampled to what an output of a given size can show (`for_output`)."""

import io
from dataclasses import replace

import cv2
import numpy as np
from PIL import Image

from animation.character import OUTPUT_OVERSAMPLE, Character, for_output, resampled
from animation.figure import rig_for
from animation.motions import load_motion
from animation.render import RenderOptions, build_rig, render_motion
from animation.skeleton import Skeleton
from tests.support.photo import photographed
from tests.support.rigs import character


def _extent(mask: np.ndarray) -> int:
    _, _, w, h = cv2.boundingRect(mask.astype(np.uint8))
    return max(w, h)


def test_a_character_already_small_enough_is_kept_as_it_is():
    small = character()  # 240 px tall
    assert for_output(small, 256) is small
    assert for_output(small, 160) is small  # 1.5 x 160 = 240


def test_a_big_character_shrinks_to_the_oversampled_output_size():
    big = photographed(height=900).character
    out = for_output(big, 256)
    assert abs(_extent(out.mask) - OUTPUT_OVERSAMPLE * 256) <= 2
    factor = out.size[1] / big.size[1]

    # The joints move with their pixels: the same place relative to the figure's box.
    def relative(c: Character) -> np.ndarray:
        x, y, w, h = cv2.boundingRect(c.mask.astype(np.uint8))
        return (c.skeleton.rest - (x, y)) / (w, h)

    assert np.abs(relative(out) - relative(big)).max() < 0.01
    assert abs(out.mask.sum() / big.mask.sum() - factor**2) < 0.05 * factor**2
    # Area-averaged colour: the figure's mean colour stays (no aliasing of its strokes).
    before = big.texture[big.mask][:, :3].mean(axis=0)
    after = out.texture[out.mask][:, :3].mean(axis=0)
    assert np.abs(before - after).max() < 6, (before, after)


def test_a_stroke_thinner_than_the_new_pixel_keeps_its_line():
    mask = np.zeros((400, 400), bool)
    mask[50:350, 200] = True  # one pixel wide
    mask[40:60, 180:220] = True  # a head, so the figure is more than a line
    texture = np.full((400, 400, 4), 255, np.uint8)
    rest = np.tile([[200.0, 200.0]], (16, 1)) + np.linspace(-150, 150, 16)[:, None] * [0, 1]
    line = resampled(Character(texture, mask, Skeleton(rest)), 0.3)
    column = line.mask[:, 58:63].any(axis=1)  # x 200 -> 59.85
    rows = np.flatnonzero(column)
    assert rows.max() - rows.min() >= 0.9 * 300 * 0.3
    assert column[rows.min() : rows.max() + 1].all()  # unbroken


def test_frames_from_the_resampled_rig_match_the_full_one():
    big = photographed(height=900).character
    options = RenderOptions(size=128, max_frames=8)
    motion = load_motion("dab")
    files = [render_motion(build_rig(c), motion, options) for c in (big, for_output(big, 128))]
    frames = []
    for data in files:
        with Image.open(io.BytesIO(data)) as gif:
            gif.seek(3)
            frames.append(np.asarray(gif.convert("RGBA"), np.int16))
    full, small = frames
    assert full.shape == small.shape  # the camera fits the clip into the same frame
    drawn = (full[..., 3] > 0) | (small[..., 3] > 0)
    same_place = (full[..., 3] > 0) == (small[..., 3] > 0)
    assert same_place[drawn].mean() > 0.9
    both = (full[..., 3] > 0) & (small[..., 3] > 0)
    diff = np.abs(full[both][:, :3] - small[both][:, :3]).max(axis=1)
    # Most pixels come out the same colour; what differs is where a stroke's edge moved by
    # an output pixel (measured: median 1, 20 % of the pixels by over 40 levels at 128 px,
    # nearly all on the outline, 1 px wide here; 18 % with the page drawn in its cream as
    # photographed, against which a moved edge changes less than against white).
    assert np.median(diff) <= 2
    assert (diff > 40).mean() < 0.25


def test_the_services_rig_draws_a_stroke_thinner_than_an_output_pixel_whole():
    # The service's masks end on the ink: a stick 1 px wide held in a hand of a figure three
    # times the output's size is a fraction of an output pixel wide, and was drawn as dots
    # that came loose from frame to frame (real photo 10's pencil legs). The rig the service
    # builds (`rig_for`) draws the figure's mask with a floor of half an output pixel.
    big = photographed(height=900).character
    mask, texture = big.mask.copy(), big.texture.copy()
    stick = np.zeros(mask.shape, np.uint8)
    cv2.line(stick, (613, 440), (560, 760), 1, 1)  # a pencil line, 1 px wide, slanting
    mask |= stick > 0
    texture[stick > 0, :3] = 40
    held = replace(big, mask=mask, texture=texture)
    options = RenderOptions(size=256, max_frames=12)
    data = render_motion(rig_for(held, options.size), load_motion("dab"), options)
    with Image.open(io.BytesIO(data)) as gif:
        for index in range(gif.n_frames):
            gif.seek(index)
            drawn = (np.asarray(gif.convert("RGBA"))[..., 3] > 0).astype(np.uint8)
            assert cv2.connectedComponents(drawn, connectivity=8)[0] - 1 == 1, index
