"""Test images: synthetic drawings (torchserve.training.synth) encoded in the forms clients send."""

from __future__ import annotations

import io
import zlib
from functools import cache

import numpy as np
from PIL import Image

from tests.support.drawings import PLAIN
from torchserve.training.synth import generate


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


def png_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims `width` x `height` pixels (a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
        )

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
