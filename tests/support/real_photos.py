"""Real drawings (`../shared/real-dev`, AnimatedDrawings' annotation folders) photographed
again: the crop laid on a page of its own paper colour, the page at an angle on a wooden
table, the light falling off across it, grain, JPEG. The annotated mask goes through the
same homography, so the figure's outline is known in the new photo's pixels.
"""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

REAL_DEV = Path(__file__).resolve().parents[2].parent / "shared" / "real-dev"
TABLE = (120, 85, 55)  # RGB, a wooden table
TILT = 0.08  # each page corner moves up to this share of the page's size
LIGHT = (0.75, 1.05)  # left to right


def angled_photo(folder: Path, seed: int) -> tuple[bytes, np.ndarray]:
    """(JPEG bytes, (H, W) bool true mask in the photo's pixels) of the drawing in `folder`."""
    rng = np.random.default_rng(seed)
    crop = np.asarray(Image.open(folder / "texture.png").convert("RGB"), np.float64)
    mask = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    h, w = crop.shape[:2]
    pad = max(h, w) // 4
    border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
    page = np.ones((h + 2 * pad, w + 2 * pad, 3)) * np.median(border, axis=0)
    page[pad : pad + h, pad : pad + w] = crop
    page_mask = np.zeros(page.shape[:2], np.uint8)
    page_mask[pad : pad + h, pad : pad + w] = mask
    height, width = page.shape[:2]
    corners = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    moved = (
        corners
        + rng.uniform(-TILT, TILT, (4, 2)) * (width, height)
        + 0.15 * np.float32((width, height))
    )
    homography = cv2.getPerspectiveTransform(corners, moved.astype(np.float32))
    size = (int(width * 1.3), int(height * 1.3))
    warped = cv2.warpPerspective(page.astype(np.float32), homography, size, borderValue=(-1,) * 3)
    truth = cv2.warpPerspective(page_mask, homography, size, flags=cv2.INTER_NEAREST) > 0
    table = np.ones((size[1], size[0], 3)) * TABLE + rng.normal(0, 8, (size[1], size[0], 3))
    photo = np.where((warped[..., 0] >= 0)[..., None], warped, table)
    photo *= np.linspace(*LIGHT, size[0])[None, :, None]
    photo += rng.normal(0, 3, photo.shape)
    jpeg = io.BytesIO()
    Image.fromarray(np.clip(photo, 0, 255).astype(np.uint8)).save(jpeg, "JPEG", quality=85)
    return jpeg.getvalue(), truth
