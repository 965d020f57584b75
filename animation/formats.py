"""Output formats: what each is called, its file suffix and content type, and its encoder.

Every encoder takes the same input, the frames the rasteriser draws: (n, H, W) chunks of
palette indices in order, the palette, the background's index and each frame's delay in
1/100 s. The WebP and MP4 encoders are imported only when asked for (PyAV alone takes
longer to import than a GIF takes to render).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class OutputFormat:
    name: str
    suffix: str  # of a file holding it, with the dot
    content_type: str  # the MIME type to serve it with
    transparent: bool  # whether the background stays transparent (else `background`)


FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("gif", ".gif", "image/gif", transparent=True),
        OutputFormat("webp", ".webp", "image/webp", transparent=True),
        OutputFormat("mp4", ".mp4", "video/mp4", transparent=False),
        # For game makers (animation/sprites.py): a sheet of every frame with its layout
        # (JSON, beside it at the same name with .json), or the frames as numbered PNGs.
        OutputFormat("sprites", ".png", "image/png", transparent=True),
        OutputFormat("png", ".zip", "application/zip", transparent=True),
    )
}
LAYOUT_SUFFIX = ".json"  # a sprite sheet's layout: the sheet's name with this suffix
DEFAULT_FORMAT = "gif"


def format_for_path(path: str | Path) -> str | None:
    """The format a file name asks for by its suffix (case-insensitive), or None."""
    suffix = Path(path).suffix.lower()
    return next((f.name for f in FORMATS.values() if f.suffix == suffix), None)


def check_format(name: str) -> OutputFormat:
    """The format called `name`; ValueError naming the choices otherwise."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[name]


def parse_colour(text: str) -> tuple[int, int, int]:
    """'#rrggbb' (or 'rrggbb') -> (r, g, b); ValueError otherwise."""
    digits = text.strip().removeprefix("#")
    if len(digits) != 6 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"background must be #rrggbb, got {text!r}")
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)


def encode(
    name: str,
    chunks: Iterable[np.ndarray],
    palette: np.ndarray,
    transparent: int,
    delays_cs: Sequence[int],
    background: tuple[int, int, int],
    executor: Executor | None = None,
    workers: int = 1,
    timings: dict[str, float] | None = None,
) -> bytes:
    """Frames -> the bytes of a file in format `name` (see the module docstring).

    `executor` runs GIF frames' LZW; `workers` is the thread count the MP4 encoder may use.
    """
    check_format(name)
    if name in ("sprites", "png"):
        from animation.sprites import encode_frames_zip, encode_sprites

        encoder = encode_sprites if name == "sprites" else encode_frames_zip
        return encoder(chunks, palette, transparent, delays_cs, timings)
    if name == "webp":
        from animation.webp import encode_webp

        return encode_webp(chunks, palette, transparent, delays_cs, timings)
    if name == "mp4":
        from animation.mp4 import encode_mp4

        return encode_mp4(chunks, palette, transparent, delays_cs, background, workers, timings)
    from animation.gif import encode_gif

    return encode_gif(chunks, palette, delays_cs, transparent, executor, timings)
