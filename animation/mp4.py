"""MP4 (H.264, yuv420p) through PyAV, whose wheels carry their own FFmpeg and libx264.

H.264 has no transparency: frames are drawn on a background colour. `yuv420p` and even
sides (the frame is padded with the background by one pixel where needed) are what phones
and browsers play. The frame rate is constant, frames / duration, so the clip lasts as long
as the GIF (the renderer samples the motion at even times). The moov box goes first
(`faststart`), so a player starts before the whole file arrives; FFmpeg writes that in a
second pass over a real file, hence the temporary file.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

CRF = 20  # x264 quality: 18-23 is visually clean for flat drawings; lower is bigger
PRESET = "veryfast"  # of x264's speed presets: slower ones save little of the bytes
INSTALL_HINT = "MP4 output needs PyAV: pip install 'av>=14' (its wheels bring FFmpeg)"


def encode_mp4(
    chunks: Iterable[np.ndarray],
    palette: np.ndarray,
    transparent: int,
    delays_cs: Sequence[int],
    background: tuple[int, int, int] = (255, 255, 255),
    threads: int = 1,
    timings: dict[str, float] | None = None,
) -> bytes:
    """(n, H, W) chunks of palette indices -> an MP4 of the clip on `background`."""
    try:
        import av
    except ImportError as exc:  # an install without the animation library's dependencies
        raise ModuleNotFoundError(INSTALL_HINT) from exc
    frames = len(delays_cs)
    total_cs = int(sum(int(d) for d in delays_cs))
    if frames == 0 or total_cs <= 0:
        raise ValueError("no frames to encode")
    table = colour_table(palette, transparent, tuple(background))
    seconds = 0.0
    written = 0
    with tempfile.TemporaryDirectory(prefix="animation-mp4-") as tmp:
        path = os.path.join(tmp, "clip.mp4")
        with av.open(path, "w", format="mp4", options={"movflags": "+faststart"}) as container:
            stream = None
            for chunk in chunks:  # drawing the chunk counts as rasterising, not here
                start = time.thread_time()
                if stream is None:
                    height, width = chunk.shape[1:]
                    stream = container.add_stream("libx264", rate=Fraction(frames * 100, total_cs))
                    stream.width, stream.height = width + width % 2, height + height % 2
                    stream.pix_fmt = "yuv420p"
                    stream.options = {"crf": str(CRF), "preset": PRESET, "tune": "animation"}
                    stream.codec_context.thread_count = threads
                    pad = ((0, height % 2), (0, width % 2))
                for frame in chunk:
                    index = np.pad(frame, pad, constant_values=transparent)
                    rgb = table[index]  # (H, W, 3)
                    video = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                    video.pts = written
                    container.mux(stream.encode(video))
                    written += 1
                seconds += time.thread_time() - start
            start = time.thread_time()
            if stream is None or written != frames:
                raise ValueError(f"{written} frames but {frames} delays")
            container.mux(stream.encode(None))
        with open(path, "rb") as f:
            data = f.read()
        seconds += time.thread_time() - start
    if timings is not None:
        timings["encode"] = timings.get("encode", 0.0) + seconds
    return data


def colour_table(
    palette: np.ndarray, transparent: int, background: tuple[int, int, int, int]
) -> np.ndarray:
    """(256, C) uint8 lookup from palette index to colour: the palette's colours (opaque
    when C is 4), `background` at `transparent`. C is len(background)."""
    channels = len(background)
    table = np.zeros((256, channels), np.uint8)
    table[: len(palette), :3] = palette
    if channels == 4:
        table[: len(palette), 3] = 255
    table[transparent] = background
    return table
