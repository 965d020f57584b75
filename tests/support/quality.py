"""How far the cleaned, paletted texture moves a frame's colours from the drawing's own.

A frame is drawn twice on the same pixels: once from the palette (what the renderer
writes) and once from the character's original texture, each pixel taking its texel's
colour as drawn (`as_drawn`: as photographed, on the page the cleaning draws, white for
white paper). The mean CIELAB error between the two, over the figure's pixels, is what
cleaning (the light and grain flattened, ink smoothed) and the palette cost together.
"""

from __future__ import annotations

import numpy as np

from animation.morph import fill_holes
from animation.paper import light_page
from animation.rasterise import rasterise
from animation.render import Rig, frame_geometry
from animation.texture import MIN_PAPER_PIXELS, delta_e, page_colour, paper_around

# Mean delta E a frame may differ from the same frame drawn from the photo (`as_drawn`).
# The palette alone may add up to `MAX_DELTA_E` (6) on the ink; the rest is what cleaning
# removes on purpose: the paper's grain (2-3 delta E from its median on the real drawings)
# and the light's gradient. Measured (dab at 256 and 500 px): 3.8-5.0 on char1, char2 and
# char4, 7.3 on the sample photo, 7.7 on char3, whose crayon fills lose their grain. 8
# holds those, and a frame over it has lost colour (a single grey instead of the palette:
# 25 and more).
FRAME_ERROR_BOUND = 8.0


def frame_colour_error(rig: Rig, joints: np.ndarray, size: int = 256) -> float:
    """Mean CIELAB error (delta E 1976) over the figure's pixels of the frame for `joints`
    (16, 2) in texture px, at `size` px, against the same frame drawn from the original
    texture."""
    vertices = rig.pose(np.asarray(joints, np.float64)[None])
    camera, placed = frame_geometry(rig, vertices, size)
    index = rig.texture.index
    numbers = np.arange(index.size, dtype=np.float32).reshape(index.shape)  # exact below 2**24
    by_texel = np.where(index == rig.texture.transparent, np.float32(-1), numbers)
    w, h = camera.width, camera.height
    texels = rasterise(rig.pieces, rig.mesh, by_texel, placed, w, h, -1)[0]
    index = rasterise(rig.pieces, rig.mesh, index, placed, w, h, rig.texture.transparent)[0]
    drawn = texels >= 0
    region = fill_holes(rig.character.mask)  # as cleaned
    texture = as_drawn(rig.character.texture, region, rig.texture.bolder)
    original = texture.reshape(-1, 3)[texels[drawn].astype(np.intp)]
    paletted = rig.texture.palette[index[drawn]]
    return float(delta_e(original, paletted).mean())


def as_drawn(texture: np.ndarray, region: np.ndarray, bolder: float = 1.0) -> np.ndarray:
    """(H, W, 3) uint8: the (H, W, 4) RGBA `texture` of a figure drawn over (H, W) bool
    `region`, each colour scaled as the page's median is to the colour the cleaning draws
    the page in (`texture.page_colour`: white for white paper photographed grey), and
    darkening it `bolder` times as much (`PalettedTexture.bolder`); on a dark page in the
    negative. The photo itself where it shows too little page to measure."""
    rgb = texture[..., :3]
    known = paper_around(region, texture[..., 3] > 0)
    if known.sum() < MIN_PAPER_PIXELS:
        return rgb.copy()
    seen = light_page(rgb)
    median = np.median(seen[known], axis=0)
    page = page_colour(median)
    scaled = seen.astype(np.float64) * (page / np.maximum(median, 1.0))
    scaled = np.clip(np.round(page - bolder * (page - scaled)), 0, 255).astype(np.uint8)
    return scaled if seen is rgb else 255 - scaled
