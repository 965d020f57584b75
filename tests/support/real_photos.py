"""Real drawings (`../shared/real-dev`, beside the checkout) photographed again by the
synthetic generator's camera (`torchserve.rephoto`): whole photos whose mask is known."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from torchserve.rephoto import rephotograph

REAL_DEV = Path(__file__).resolve().parents[2].parent / "shared" / "real-dev"


def photographed(folder: Path, seed: int) -> tuple[bytes, np.ndarray]:
    """(PNG bytes, (H, W) bool true mask) of the drawing in the annotation `folder`."""
    crop = np.asarray(Image.open(folder / "texture.png").convert("RGB"))
    mask = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    image, truth = rephotograph(crop, mask, seed)
    png = io.BytesIO()
    Image.fromarray(image).save(png, "PNG")
    return png.getvalue(), truth
