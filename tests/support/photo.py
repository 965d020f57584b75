"""A photographed drawing made from the generated figure: known paper, known inks.

The generated figure (flat colours, black outline) with its shirt left uncoloured (bare
paper inside the outline, as children leave a belly), laid on a page, lit by a gradient
from 0.7 at the left to 1.05 at the right, slightly blurred like a phone's lens, with
grain. The truth is kept: which pixels are paper, and each ink's colour before the light.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import cv2
import numpy as np

from animation.character import Character
from animation.tools.testchar import draw_character

PAPER = np.array([214.0, 208.0, 196.0])  # the page under even light
GRAIN = 4.0  # standard deviation of the grain, RGB levels
LIGHT = (0.7, 1.05)  # left to right


@dataclass(frozen=True)
class Photo:
    character: Character
    paper: np.ndarray  # (H, W) bool: paper inside the figure's mask, by construction
    inks: dict[tuple[int, int, int], np.ndarray]  # ink colour (even light) -> (H, W) bool
    light: np.ndarray  # (W,) the light across the page


@cache
def photographed(seed: int = 3, height: int = 320) -> Photo:
    figure = draw_character(seed, height=height)
    rgb = figure.texture[..., :3].astype(np.float64)
    inside = figure.mask
    colours, counts = np.unique(rgb[inside].reshape(-1, 3), axis=0, return_counts=True)
    shirt = colours[np.argmax(counts)]  # the biggest flat colour: leave it as paper
    paper = inside & (rgb == shirt).all(axis=2)
    page = np.where(inside[..., None] & ~paper[..., None], rgb, PAPER)
    inks = {}
    for colour, count in zip(colours, counts, strict=True):
        where = inside & (rgb == colour).all(axis=2) & ~paper
        if count > 200 and where.any():  # flat inks, not the outline's antialiasing
            inks[tuple(int(c) for c in colour)] = where
    h, w = inside.shape
    light = np.linspace(*LIGHT, w)
    photo = cv2.GaussianBlur(page, (0, 0), 0.7) * light[None, :, None]
    photo += np.random.default_rng(seed).normal(0, GRAIN, photo.shape)
    texture = np.dstack([np.clip(np.round(photo), 0, 255), np.full((h, w), 255)])
    character = Character(texture.astype(np.uint8), inside, figure.skeleton)
    return Photo(character=character, paper=paper, inks=inks, light=light)
