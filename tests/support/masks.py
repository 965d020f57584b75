"""The segmenter's side of the tests: the crop the gateway would send it, and its answer
read back as a mask."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

from animation.crop import crop_box


def gateway_crop(sample) -> tuple[np.ndarray, np.ndarray]:
    """The crop the gateway cuts from a synth sample (its true box grown by 10% per side)
    and the sample's true mask inside that crop."""
    left, top, right, bottom = crop_box(tuple(sample.bbox), sample.image.shape[1::-1])
    window = (slice(top, bottom), slice(left, right))
    return np.ascontiguousarray(sample.image[window]), sample.mask[window]


def mask_of(answer: dict) -> np.ndarray:
    """The segmenter's answer as a bool mask; asserts it is a one-channel 0/255 PNG in
    strict base64."""
    with Image.open(io.BytesIO(base64.b64decode(answer["mask"], validate=True))) as png:
        assert png.format == "PNG" and png.mode == "L"
        mask = np.asarray(png)
    assert set(np.unique(mask)) <= {0, 255}
    return mask == 255
