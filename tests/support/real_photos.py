"""Real drawings (`../shared/real-dev`, beside the checkout): where they are, and photographed
again by the synthetic generator's camera (`torchserve.training.rephoto`): whole photos whose mask is
known.

CI and `make test` run with `../shared` beside the checkout, so every test that reads them
runs there; a checkout without it (the installed wheel's tests) skips those tests, saying why.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from torchserve.training.rephoto import rephotograph

REAL_DEV = Path(__file__).resolve().parents[2].parent / "shared" / "real-dev"
REAL_PHOTOS = REAL_DEV.parent / "real-photos"


def real_dev(*parts: str) -> Path:
    """`REAL_DEV` joined with `parts`; the test is skipped when that is not there."""
    path = REAL_DEV.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is missing: the real drawings live beside the checkout")
    return path


def real_photo(name: str) -> Path:
    """A photo of `../shared/real-photos` (real drawings, for checking only); the test is
    skipped when it is not there."""
    path = REAL_PHOTOS / name
    if not path.exists():
        pytest.skip(f"{path} is missing: the real photos live beside the checkout")
    return path


def photographed(folder: Path, seed: int) -> tuple[bytes, np.ndarray]:
    """(PNG bytes, (H, W) bool true mask) of the drawing in the annotation `folder`."""
    crop = np.asarray(Image.open(folder / "texture.png").convert("RGB"))
    mask = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    image, truth = rephotograph(crop, mask, seed)
    png = io.BytesIO()
    Image.fromarray(image).save(png, "PNG")
    return png.getvalue(), truth
