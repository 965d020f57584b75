"""Frames for game makers: a sprite sheet with its layout, or the frames as numbered PNGs.

    encode_sprites(...) -> PNG bytes: every frame in a grid, row by row, on a transparent
                           sheet; its layout (`sprite_layout`) rides in the PNG's `layout`
                           text chunk (`layout_of` reads it back) and is written beside it
                           as JSON by the CLI and the gateway.
    encode_frames_zip(...) -> zip bytes: frame_0001.png, frame_0002.png, ... and layout.json.

Both take what every encoder takes (`formats.encode`): chunks of (n, H, W) palette indices,
the palette, the transparent index and each frame's delay in 1/100 s. The PNGs are paletted
with that index transparent: the pixels are the very ones the GIF carries, nothing resampled
or dithered.
"""

from __future__ import annotations

import io
import json
import math
import time
import zipfile
from collections.abc import Iterable, Sequence

import numpy as np
from PIL import Image, PngImagePlugin

LAYOUT_KEY = "layout"  # the PNG text chunk that carries the layout
# The layout as JSON Schema (the gateway's OpenAPI document carries it).
LAYOUT_SCHEMA: dict = {
    "type": "object",
    "required": ["frame", "count", "columns", "rows", "fps", "frames"],
    "properties": {
        "frame": {
            "type": "object", "required": ["width", "height"],
            "properties": {"width": {"type": "integer", "minimum": 1},
                           "height": {"type": "integer", "minimum": 1}},
        },
        "count": {"type": "integer", "minimum": 1, "description": "frames in the sheet"},
        "columns": {"type": "integer", "minimum": 1},
        "rows": {"type": "integer", "minimum": 1},
        "fps": {"type": "number", "exclusiveMinimum": 0,
                "description": "frames per second over the whole clip"},
        "loop": {"type": "boolean", "description": "the clip is meant to play round"},
        "frames": {
            "type": "array",
            "description": "each frame's place in the sheet (px) and how long it shows",
            "items": {
                "type": "object", "required": ["x", "y", "w", "h", "duration_ms"],
                "properties": {"x": {"type": "integer", "minimum": 0},
                               "y": {"type": "integer", "minimum": 0},
                               "w": {"type": "integer", "minimum": 1},
                               "h": {"type": "integer", "minimum": 1},
                               "duration_ms": {"type": "integer", "minimum": 1}},
            },
        },
    },
}  # fmt: skip


def sprite_layout(count: int, width: int, height: int, delays_cs: Sequence[int]) -> dict:
    """Where each of `count` frames of `width` x `height` px lies in the sheet: a grid as
    near square as the frames allow, filled row by row; and how long each shows."""
    if count < 1 or len(delays_cs) != count:
        raise ValueError(f"{count} frames need as many delays, got {len(delays_cs)}")
    columns = math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    durations = [max(1, int(d) * 10) for d in delays_cs]
    return {
        "frame": {"width": width, "height": height},
        "count": count,
        "columns": columns,
        "rows": rows,
        "fps": round(1000 * count / sum(durations), 3),
        "loop": True,
        "frames": [
            {"x": (i % columns) * width, "y": (i // columns) * height, "w": width, "h": height,
             "duration_ms": durations[i]}
            for i in range(count)
        ],
    }  # fmt: skip


def _paletted(indices: np.ndarray, palette: np.ndarray, transparent: int) -> Image.Image:
    image = Image.fromarray(np.ascontiguousarray(indices, np.uint8), "P")
    # The transparent index may lie past the palette's colours (the texture's palette
    # leaves it the next free index): the PNG's palette must reach it.
    colours = np.zeros((max(len(palette), int(transparent) + 1), 3), np.uint8)
    colours[: len(palette)] = np.asarray(palette, np.uint8).reshape(-1, 3)
    image.putpalette(colours.reshape(-1).tolist())
    image.info["transparency"] = int(transparent)
    return image


def _frames(chunks: Iterable[np.ndarray]) -> np.ndarray:
    frames = [np.asarray(c, np.uint8) for c in chunks]
    if not frames:
        raise ValueError("no frames to encode")
    return np.concatenate(frames)


def encode_sprites(
    chunks: Iterable[np.ndarray],
    palette: np.ndarray,
    transparent: int,
    delays_cs: Sequence[int],
    timings: dict[str, float] | None = None,
) -> bytes:
    """The frames as one transparent PNG sheet (see the module's doc); adds its CPU seconds
    to `timings["encode"]`."""
    frames = _frames(chunks)
    start = time.thread_time()
    count, height, width = frames.shape
    layout = sprite_layout(count, width, height, delays_cs)
    sheet = np.full((layout["rows"] * height, layout["columns"] * width), transparent, np.uint8)
    for frame, place in zip(frames, layout["frames"], strict=True):
        sheet[place["y"] : place["y"] + height, place["x"] : place["x"] + width] = frame
    text = PngImagePlugin.PngInfo()
    text.add_text(LAYOUT_KEY, json.dumps(layout, separators=(",", ":")))
    out = io.BytesIO()
    _paletted(sheet, palette, transparent).save(
        out, "PNG", optimize=False, compress_level=6, pnginfo=text,
        transparency=int(transparent),
    )  # fmt: skip
    _spent(timings, start)
    return out.getvalue()


def layout_of(png: bytes) -> dict:
    """The layout a sprite sheet made by `encode_sprites` carries; ValueError if none."""
    with Image.open(io.BytesIO(png)) as image:
        text = getattr(image, "text", {}).get(LAYOUT_KEY)
    if text is None:
        raise ValueError("not a sprite sheet: the PNG carries no layout")
    return json.loads(text)


def encode_frames_zip(
    chunks: Iterable[np.ndarray],
    palette: np.ndarray,
    transparent: int,
    delays_cs: Sequence[int],
    timings: dict[str, float] | None = None,
) -> bytes:
    """The frames as frame_0001.png, frame_0002.png, ... (transparent) and their
    `sprite_layout` as layout.json (its x, y are where they would lie in a sheet); adds its
    CPU seconds to `timings["encode"]`."""
    frames = _frames(chunks)
    start = time.thread_time()
    count, height, width = frames.shape
    digits = max(4, len(str(count)))
    out = io.BytesIO()
    # The PNGs are compressed already: stored, the zip costs no second pass over them.
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for number, frame in enumerate(frames, start=1):
            png = io.BytesIO()
            _paletted(frame, palette, transparent).save(
                png, "PNG", compress_level=6, transparency=int(transparent)
            )
            archive.writestr(_entry(f"frame_{number:0{digits}d}.png"), png.getvalue())
        layout = sprite_layout(count, width, height, delays_cs)
        archive.writestr(_entry("layout.json"), json.dumps(layout, indent=1))
    _spent(timings, start)
    return out.getvalue()


def _spent(timings: dict[str, float] | None, start: float) -> None:
    if timings is not None:
        timings["encode"] = timings.get("encode", 0.0) + time.thread_time() - start


def _entry(name: str) -> zipfile.ZipInfo:
    """A zip entry with a fixed date: the same frames give the same bytes (and storage key)."""
    info = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info
