"""GIF assembly: one global palette, a transparent background, only changed rectangles.

Each frame after the first is the smallest rectangle that turns the canvas into it, and
pixels inside that rectangle that are already right are written as transparent, which
LZW packs into almost nothing. A pixel cannot be turned transparent by drawing over it,
so a frame whose successor uncovers background grows its rectangle over those pixels and
is disposed "restore to background" (2); otherwise it stays in place (1). The last frame
is always cleared, so the loop restarts on an empty canvas just like the first play.

Frames arrive in chunks and are planned in order (each frame's rectangle depends on the
one before), holding only a chunk and its neighbours in memory; Pillow's C encoder
compresses each frame, on an executor's threads if given one (it releases the GIL).
"""

from __future__ import annotations

import os
import struct
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future

import cv2
import numpy as np
from PIL import Image, ImageFile

Box = tuple[int, int, int, int]  # top, bottom, left, right (exclusive); empty when top >= bottom
_EMPTY: Box = (1 << 30, -1, 1 << 30, -1)
KEEP, CLEAR = 1, 2  # GIF disposal methods
_IN_FLIGHT = 24  # frames queued for encoding at most


def _union(a: Box, b: Box) -> Box:
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _intersection(a: Box, b: Box) -> Box:
    return max(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3])


def _is_empty(a: Box) -> bool:
    return a[0] >= a[1] or a[2] >= a[3]


def _boxes(changed: np.ndarray) -> list[Box]:
    """Bounding box of the True pixels of each (H, W) plane of a (F, H, W) stack."""
    boxes = []
    for plane in changed.view(np.uint8):  # OpenCV's one pass beats numpy's two reductions
        left, top, width, height = cv2.boundingRect(plane)
        boxes.append(_EMPTY if width == 0 else (top, top + height, left, left + width))
    return boxes


class _Planner:
    """Decides each frame's rectangle and disposal, one chunk of frames at a time."""

    def __init__(self, transparent: int) -> None:
        self.transparent = transparent
        self.box: Box | None = None  # the previous frame's rectangle
        self.disposal = KEEP  # and its disposal

    def plan(self, window: np.ndarray) -> list[tuple[Box, int]]:
        """Plan the frames `window[1:-1]` of a (n + 2, H, W) window that also holds the
        frame before and the frame after (an empty canvas at either end of the clip)."""
        figure_mask = window != self.transparent
        figure = _boxes(figure_mask[1:-1])
        changed = _boxes(window[1:-1] != window[:-2])
        uncovered = _boxes(figure_mask[1:-1] & ~figure_mask[2:])  # what the next frame uncovers
        plans = []
        for fig, chg, unc in zip(figure, changed, uncovered, strict=True):
            box = chg
            if self.box is not None and self.disposal == CLEAR:
                box = _union(box, _intersection(self.box, fig))  # redraw what was cleared
            box = _union(box, unc)
            if _is_empty(box):
                box = (0, 1, 0, 1)  # nothing changes: a single kept pixel
            self.box, self.disposal = box, CLEAR if not _is_empty(unc) else KEEP
            plans.append((box, self.disposal))
        return plans


def plan_frames(frames: np.ndarray, transparent: int) -> tuple[list[Box], list[int]]:
    """Each frame's rectangle and disposal method (see the module docstring)."""
    empty = np.full((1, *frames.shape[1:]), transparent, frames.dtype)
    plans = _Planner(transparent).plan(np.concatenate([empty, frames, empty]))
    return [p[0] for p in plans], [p[1] for p in plans]


def code_size(colours: int) -> int:
    """Bits per palette index for `colours` indices (GIF: 2 to 8). LZW starts its codes one
    bit wider, so a drawing of 12 colours packs in 5-bit codes instead of 9-bit ones."""
    return max(2, int(colours - 1).bit_length())


_scratch = threading.local()


def _scratch_file():
    """This thread's scratch file. Pillow compresses into a real file with the GIL
    released, but into a BytesIO with it held: other threads' rasterising and LZW would
    wait on it."""
    if not hasattr(_scratch, "file"):
        if hasattr(os, "memfd_create"):  # in memory, no disk
            _scratch.file = os.fdopen(os.memfd_create("lzw", os.MFD_CLOEXEC), "w+b")
        else:
            _scratch.file = tempfile.TemporaryFile()
    return _scratch.file


def _lzw(block: np.ndarray, bits: int) -> bytes:
    """The image data of one frame: LZW minimum code size, sub-blocks, terminator."""
    im = Image.fromarray(np.ascontiguousarray(block), "L")
    im.encoderconfig = (bits, False)  # `bits`-bit indices, not interlaced
    out = _scratch_file()
    out.seek(0)
    out.truncate()
    ImageFile._save(im, out, [ImageFile._Tile("gif", (0, 0, *im.size), 0, "L")])
    out.seek(0)
    return bytes([bits]) + out.read() + b"\x00"


def _frame_block(
    frame: np.ndarray,
    canvas: np.ndarray,
    box: Box,
    cleared: Box | None,
    disposal: int,
    delay_cs: int,
    transparent: int,
    bits: int,
) -> tuple[bytes, float]:
    """One frame's graphic control extension, image descriptor and data, and the CPU
    seconds it took. `canvas` is the frame before; `cleared` what its disposal cleared."""
    start = time.thread_time()
    top, bottom, left, right = box
    block = frame[top:bottom, left:right].copy()
    shown = canvas[top:bottom, left:right].copy()
    if cleared is not None:
        ct, cb, cl, cr = _intersection(cleared, box)
        shown[max(ct - top, 0) : max(cb - top, 0), max(cl - left, 0) : max(cr - left, 0)] = (
            transparent
        )
    block[block == shown] = transparent  # already right: keep what the canvas shows
    control = b"!\xf9\x04" + struct.pack("<BHBB", (disposal << 2) | 1, delay_cs, transparent, 0)
    descriptor = b"," + struct.pack("<HHHHB", left, top, right - left, bottom - top, 0)
    return control + descriptor + _lzw(block, bits), time.thread_time() - start


class InlineExecutor(Executor):
    """Runs each task at once in the caller: the one-thread executor."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def encode_gif(
    chunks: Iterable[np.ndarray] | np.ndarray,
    palette: np.ndarray,
    delays_cs: Sequence[int],
    transparent: int,
    executor: Executor | None = None,
    timings: dict[str, float] | None = None,
) -> bytes:
    """Frames of palette indices, as one (F, H, W) array or (n, H, W) chunks in order ->
    an endlessly looping GIF. `palette` (K, 3) holds every index but `transparent`, which
    may be K (the global colour table grows to the next power of two). Adds the CPU
    seconds spent to `timings["encode"]`."""
    executor = executor or InlineExecutor()
    bits = code_size(max(len(palette), transparent + 1))
    if isinstance(chunks, np.ndarray):
        chunks = [chunks[i : i + 8] for i in range(0, len(chunks), 8)]
    planner = _Planner(transparent)
    futures: list[Future] = []
    size: tuple[int, int] | None = None
    previous: np.ndarray | None = None  # last frame of the chunk before
    pending: np.ndarray | None = None  # a chunk waiting for its successor's first frame
    cleared: Box | None = None
    plan_seconds = 0.0

    def submit(block: np.ndarray, following: np.ndarray) -> None:
        nonlocal previous, cleared, plan_seconds
        start = time.thread_time()
        window = np.concatenate([previous[None], block, following[None]])
        plans = planner.plan(window)
        plan_seconds += time.thread_time() - start
        for k, (box, disposal) in enumerate(plans):
            i = len(futures)
            if i >= len(delays_cs):
                raise ValueError(f"more frames than the {len(delays_cs)} delays")
            args = (
                block[k],
                window[k],
                box,
                cleared,
                disposal,
                int(delays_cs[i]),
                transparent,
                bits,
            )
            futures.append(executor.submit(_frame_block, *args))
            cleared = box if disposal == CLEAR else None
        previous = block[-1]
        # Wait for older frames so queued work (and the chunks it holds) stays bounded.
        for future in futures[: max(len(futures) - _IN_FLIGHT, 0)]:
            future.result()

    for chunk in chunks:
        if size is None:
            size = chunk.shape[2], chunk.shape[1]
            previous = np.full(chunk.shape[1:], transparent, chunk.dtype)  # empty canvas
        if pending is not None:
            submit(pending, chunk[0])
        pending = chunk
    if pending is None or size is None:
        raise ValueError("no frames to encode")
    submit(pending, np.full(pending.shape[1:], transparent, pending.dtype))
    if len(futures) != len(delays_cs):
        raise ValueError(f"{len(futures)} frames but {len(delays_cs)} delays")
    blocks, seconds = zip(*(f.result() for f in futures), strict=True)
    if timings is not None:
        timings["encode"] = timings.get("encode", 0.0) + sum(seconds) + plan_seconds
    pal = np.zeros((1 << bits, 3), np.uint8)
    pal[: len(palette)] = palette
    # Global colour table of 2**bits entries, 8 bits of colour resolution.
    flags = 0x80 | 0x70 | (bits - 1)
    header = b"GIF89a" + struct.pack("<HHBBB", *size, flags, transparent, 0) + pal.tobytes()
    loop = b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    return header + loop + b"".join(blocks) + b";"
