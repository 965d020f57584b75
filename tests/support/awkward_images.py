"""The awkward uploads a real service meets, built from the test drawing or from scratch."""

from __future__ import annotations

import io
import struct
import zlib

import cv2
import numpy as np
from PIL import Image

from tests.support.drawings import Drawing


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _jpeg(image: Image.Image, **kw) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=92, **kw)
    return out.getvalue()


def rgb(d: Drawing) -> Image.Image:
    return Image.open(io.BytesIO(d.png)).convert("RGB")


def grayscale(d: Drawing) -> bytes:
    return _png(rgb(d).convert("L"))


def gray_16bit(d: Drawing) -> bytes:
    values = np.asarray(rgb(d).convert("L"), dtype=np.uint16) * 257
    image = Image.fromarray(values)
    assert image.mode == "I;16"
    return _png(image)


def rgb_16bit(d: Drawing) -> bytes:
    bgr = cv2.cvtColor(np.asarray(rgb(d)), cv2.COLOR_RGB2BGR).astype(np.uint16) * 257
    ok, buf = cv2.imencode(".png", bgr)
    assert ok
    return buf.tobytes()


def cmyk_jpeg(d: Drawing) -> bytes:
    return _jpeg(rgb(d).convert("CMYK"))


def with_alpha(d: Drawing) -> bytes:
    """The paper made transparent, as a drawing app exports it."""
    image = rgb(d).convert("RGBA")
    pixels = np.asarray(image).copy()
    paper = pixels[..., :3].min(axis=2) > 200
    pixels[paper, 3] = 0
    return _png(Image.fromarray(pixels, "RGBA"))


def exif_rotated(d: Drawing, orientation: int = 6) -> bytes:
    """Pixels stored sideways with an EXIF tag saying how to turn them upright (phones do)."""
    stored = {6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270}[orientation]
    image = rgb(d).transpose(stored)
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _jpeg(image, exif=exif.tobytes())


def without_exif(jpeg: bytes) -> bytes:
    return _jpeg(Image.open(io.BytesIO(jpeg)))


def blank_page(d: Drawing) -> bytes:
    return _png(Image.new("RGB", rgb(d).size, (250, 250, 246)))


def truncated(d: Drawing) -> bytes:
    return d.png[: len(d.png) // 2]


def png_bomb(side: int = 30_000) -> bytes:
    """A valid PNG of side x side 1-bit pixels, all black: ~100 KB that decode to ~1 GB."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit grayscale
    row = b"\x00" * (1 + (side + 7) // 8)  # filter byte + packed pixels
    packer = zlib.compressobj(9)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )
