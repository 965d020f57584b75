"""Test images: synthetic drawings (torchserve.synth) encoded in the forms clients send."""

from __future__ import annotations

import io
from functools import cache

import numpy as np
from PIL import Image

from torchserve.synth import generate

# Styles the models are trained on and that a flat photo shows clearly.
PLAIN = {"paper": "white", "medium": "marker", "scene": "plain", "photo": "flat"}


@cache
def drawing(seed: int = 5, size: int | tuple[int, int] = 512):
    return generate(seed, size=size, only=PLAIN)


def encode(pixels: np.ndarray | Image.Image, fmt: str = "PNG", **params) -> bytes:
    image = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    buf = io.BytesIO()
    image.save(buf, fmt, **params)
    return buf.getvalue()


def drawing_bytes(seed: int = 5, fmt: str = "PNG") -> bytes:
    return encode(drawing(seed).image, fmt)
