"""Real drawings photographed again with the synthetic generator's camera.

An AnimatedDrawings annotation folder holds a drawing already cut to its figure
(`texture.png`, its paper included) and its true mask. Laid on a sheet of its own paper and
shot by `torchserve.training.synth.camera` (uneven light, now and then a shadow, an angle over a
table, blur, JPEG), it becomes a whole photo of a real drawing whose mask is known: what
the gateway meets, with strokes and paper nobody on the team made. The evaluation scores
the served path on such photos, and the gateway's tests hold its masks to them.

Kept outside `torchserve/training/synth`: a file there changes the generator's version, and with it
every cached training set.
"""

from __future__ import annotations

import cv2
import numpy as np

from torchserve.training.synth import camera

PAGE_MARGIN = 0.25  # of the crop's longer side: the sheet's paper around the crop
FEATHER = 0.08  # of the crop's longer side: the crop's paper fades into the sheet's


def rephotograph(
    crop: np.ndarray, mask: np.ndarray, seed: int, photo: str = "angled"
) -> tuple[np.ndarray, np.ndarray]:
    """(photo (H, W, 3) uint8, its true mask (H, W) bool) of an (h, w, 3) uint8 `crop` and
    its (h, w) bool `mask`; `photo` is a kind of `camera.PHOTO` ("scan", "flat", "angled").

    The crop's paper fades into a sheet of its median border colour, so that its edge is
    not a drawn rectangle; the figure's own pixels are kept as they are.
    """
    rng = np.random.default_rng(seed)
    h, w = crop.shape[:2]
    pad = int(PAGE_MARGIN * max(h, w))
    border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
    sheet = np.empty((h + 2 * pad, w + 2 * pad, 3), np.float32)
    sheet[:] = np.median(border, axis=0) / 255
    # Opaque on the figure and inside the crop; fading out over its last FEATHER.
    inside = np.pad(np.ones((h - 2, w - 2), np.uint8), 1)
    edge = cv2.distanceTransform(inside, cv2.DIST_L2, 3) / max(1.0, FEATHER * max(h, w))
    alpha = np.maximum(np.clip(edge, 0, 1), mask)[..., None].astype(np.float32)
    window = sheet[pad : pad + h, pad : pad + w]
    window[:] = alpha * (crop / np.float32(255)) + (1 - alpha) * window
    page_mask = np.zeros(sheet.shape[:2], np.uint8)
    page_mask[pad : pad + h, pad : pad + w] = mask
    camera.light(rng, sheet, photo, fibre=0.0)  # the crop has its paper's own fibre
    height, width = sheet.shape[:2]
    homography = camera.homography(rng, height, width, photo)
    shot = camera.shoot(rng, cv2.convertScaleAbs(sheet, alpha=255.0), homography, photo)
    corners = np.float32([(0, 0), (width, 0), (width, height), (0, height)])
    truth = camera.warp_mask(page_mask, homography, corners) > 0
    return camera.jpeg(rng, shot), truth
