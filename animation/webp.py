"""Animated WebP through Pillow's encoder (libwebp): lossless, with the alpha kept.

Frames stay palette images (one byte a pixel) until libwebp takes them one at a time;
libwebp's animation encoder finds each frame's changed rectangle and blending itself.
Lossless, because a drawing's flat colours and crisp strokes are what lossy WebP (4:2:0
chroma, DCT) blurs, and its files came out larger than lossless ones on the real drawings.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image

# libwebp's effort (0-6) and, in lossless mode, how hard it searches (0-100): on the real
# drawings, more effort saves next to no bytes for much more time (docs/BENCHMARKS.md,
# section raster).
METHOD = 2
QUALITY = 50


def encode_webp(
    chunks: Iterable[np.ndarray],
    palette: np.ndarray,
    transparent: int,
    delays_cs: Sequence[int],
    timings: dict[str, float] | None = None,
) -> bytes:
    """(n, H, W) chunks of palette indices -> an endlessly looping animated WebP."""
    pal = np.zeros((256, 3), np.uint8)
    pal[: len(palette)] = palette
    frames: list[Image.Image] = []
    for chunk in chunks:  # drawing the chunk counts as rasterising, not here
        for frame in chunk:
            im = Image.fromarray(np.ascontiguousarray(frame), "L")
            im.putpalette(pal.tobytes())  # mode P: Pillow converts to RGBA frame by frame
            im.info["transparency"] = transparent
            frames.append(im)
    start = time.thread_time()
    if len(frames) != len(delays_cs):
        raise ValueError(f"{len(frames)} frames but {len(delays_cs)} delays")
    if not frames:
        raise ValueError("no frames to encode")
    out = io.BytesIO()
    frames[0].save(
        out,
        "WEBP",
        save_all=True,
        append_images=frames[1:],
        duration=[10 * int(d) for d in delays_cs],
        loop=0,
        lossless=True,
        quality=QUALITY,
        method=METHOD,
        background=(0, 0, 0, 0),
    )
    if timings is not None:
        timings["encode"] = timings.get("encode", 0.0) + time.thread_time() - start
    return out.getvalue()
