"""How far the cleaned, paletted texture moves a frame's colours from the drawing's own.

A frame is drawn twice on the same pixels: once from the palette (what the renderer
writes) and once from the character's original texture, each pixel taking its texel's
colour as photographed. The mean CIELAB error between the two, over
the figure's pixels, is what cleaning (the light and grain flattened, ink smoothed) and
the palette cost together.
"""

from __future__ import annotations

import numpy as np

from animation.rasterise import rasterise
from animation.render import Rig, frame_geometry
from animation.texture import delta_e

# Mean delta E a frame may differ from the same frame drawn from the photo. The palette
# alone may add up to `MAX_DELTA_E` (6) on the ink; the rest is what cleaning removes on
# purpose: the paper's grain (2-3 delta E from its median on the real drawings) and the
# light's gradient. Measured (dab at 256 and 500 px): 4.7-5.8 on char1, char2, char4 and
# the sample photo, 7.3 on char3, whose crayon fills lose their grain. 8 holds those, and
# a frame over it has lost colour (a single grey instead of the palette: 25 and more).
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
    original = rig.character.texture[..., :3].reshape(-1, 3)[texels[drawn].astype(np.intp)]
    paletted = rig.texture.palette[index[drawn]]
    return float(delta_e(original, paletted).mean())
