"""GIF assembly: one global palette, a transparent background, only changed rectangles.

Each frame after the first is the smallest rectangle that turns the canvas into it, and
pixels inside that rectangle that are already right are written as transparent, which
LZW packs into almost nothing. A pixel cannot be turned transparent by drawing over it,
so a frame whose successor uncovers background grows its rectangle over those pixels and
is disposed "restore to background" (2); otherwise it stays in place (1). The last frame
is always cleared, so the loop restarts on an empty canvas just like the first play.
Pillow's C encoder compresses each frame (it releases the GIL, so threads encode frames
side by side); this module writes the blocks around them.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image, ImageFile

Box = tuple[int, int, int, int]  # top, bottom, left, right (exclusive); empty when top >= bottom
_EMPTY: Box = (1 << 30, -1, 1 << 30, -1)
KEEP, CLEAR = 1, 2  # GIF disposal methods


def _union(a: Box, b: Box) -> Box:
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _intersection(a: Box, b: Box) -> Box:
    return max(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3])


def _is_empty(a: Box) -> bool:
    return a[0] >= a[1] or a[2] >= a[3]


def _boxes(changed: np.ndarray) -> list[Box]:
    """Bounding box of the True pixels of each (H, W) plane of a (F, H, W) stack."""
    rows, cols = changed.any(axis=2), changed.any(axis=1)
    boxes = []
    for r, c in zip(rows, cols, strict=True):
        if not r.any():
            boxes.append(_EMPTY)
            continue
        ry, cx = np.flatnonzero(r), np.flatnonzero(c)
        boxes.append((int(ry[0]), int(ry[-1]) + 1, int(cx[0]), int(cx[-1]) + 1))
    return boxes


def plan_frames(
    frames: np.ndarray, transparent: int, chunk: int = 32
) -> tuple[list[Box], list[int]]:
    """Each frame's rectangle and disposal method (see the module docstring)."""
    count = len(frames)
    figure, changed, uncovered = [], [_EMPTY], []
    for start in range(0, count, chunk):  # in chunks: boolean stacks of a long clip are big
        block = frames[start : start + chunk]
        fig = block != transparent
        figure += _boxes(fig)
        before = frames[max(start - 1, 0) : start + len(block) - 1] if start else block[:-1]
        now = block if start else block[1:]
        changed += _boxes(before != now)
        uncovered += _boxes((before != transparent) & ~(now != transparent))
    uncovered.append(figure[-1])  # after the last frame the loop restarts on an empty canvas
    boxes, disposal = [], []
    for i in range(count):
        box = figure[0] if i == 0 else changed[i]
        if i and disposal[-1] == CLEAR:
            box = _union(box, _intersection(boxes[-1], figure[i]))
        box = _union(box, uncovered[i])  # uncovered[i] is what frame i + 1 uncovers
        if _is_empty(box):
            box = (0, 1, 0, 1)  # nothing changes: a single kept pixel
        boxes.append(box)
        disposal.append(CLEAR if not _is_empty(uncovered[i]) else KEEP)
    return boxes, disposal


def _lzw(block: np.ndarray) -> bytes:
    """The image data of one frame: LZW minimum code size, sub-blocks, terminator."""
    im = Image.fromarray(np.ascontiguousarray(block), "L")
    im.encoderconfig = (8, False)  # 8-bit codes, not interlaced
    out = io.BytesIO()
    ImageFile._save(im, out, [ImageFile._Tile("gif", (0, 0, *im.size), 0, "L")])
    return b"\x08" + out.getvalue() + b"\x00"


def encode_gif(
    frames: np.ndarray,
    palette: np.ndarray,
    delays_cs: Sequence[int],
    transparent: int,
    workers: int = 1,
) -> bytes:
    """(F, H, W) uint8 palette indices -> an endlessly looping GIF."""
    count, height, width = frames.shape
    if len(delays_cs) != count:
        raise ValueError(f"{count} frames but {len(delays_cs)} delays")
    boxes, disposal = plan_frames(frames, transparent)

    def frame_block(i: int) -> bytes:
        top, bottom, left, right = boxes[i]
        block = frames[i, top:bottom, left:right].copy()
        if i:
            # What the canvas shows there before frame i: frame i - 1, cleared if disposed.
            canvas = frames[i - 1, top:bottom, left:right].copy()
            if disposal[i - 1] == CLEAR:
                pt, pb, pl, pr = _intersection(boxes[i - 1], boxes[i])
                canvas[
                    max(pt - top, 0) : max(pb - top, 0), max(pl - left, 0) : max(pr - left, 0)
                ] = transparent
            block[block == canvas] = transparent
        control = b"!\xf9\x04" + struct.pack(
            "<BHBB", (disposal[i] << 2) | 1, int(delays_cs[i]), transparent, 0
        )
        descriptor = b"," + struct.pack("<HHHHB", left, top, right - left, bottom - top, 0)
        return control + descriptor + _lzw(block)

    if workers > 1 and count > 1:
        with ThreadPoolExecutor(workers) as pool:
            blocks = list(pool.map(frame_block, range(count)))
    else:
        blocks = [frame_block(i) for i in range(count)]
    pal = np.zeros((256, 3), np.uint8)
    pal[: len(palette)] = palette
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0xF7, transparent, 0) + pal.tobytes()
    loop = b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    return header + loop + b"".join(blocks) + b";"
