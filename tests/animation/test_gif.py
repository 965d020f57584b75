import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from animation.gif import CLEAR, encode_gif, plan_frames

T = 255


def _palette() -> np.ndarray:
    palette = np.zeros((256, 3), np.uint8)
    palette[:4] = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (240, 240, 0)]
    return palette


def _clip(count: int = 8, height: int = 40, width: int = 50) -> np.ndarray:
    """A square walking right, a bar that comes and goes, a still dot, a blinking pixel."""
    frames = np.full((count, height, width), T, np.uint8)
    for i in range(count):
        frames[i, 10:20, 3 + 4 * i : 13 + 4 * i] = 0
        if i % 3 != 2:
            frames[i, 30:34, 5:45] = 1 + i % 2
        frames[i, 2, 2] = 3
        frames[i, 37, 47] = 2 if i % 2 else T
    return frames


def _decode(gif: bytes) -> tuple[Image.Image, list[np.ndarray]]:
    im = Image.open(io.BytesIO(gif))
    decoded = []
    for i in range(im.n_frames):
        im.seek(i)
        decoded.append(np.asarray(im.convert("RGBA")))
    return im, decoded


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_round_trip_through_pillow(threads, chunk):
    frames, palette = _clip(), _palette()
    delays = [7, 6, 7, 7, 6, 7, 7, 6]
    chunks = [frames[i : i + chunk] for i in range(0, len(frames), chunk)]
    with ThreadPoolExecutor(2) as pool:
        gif = encode_gif(chunks, palette, delays, T, pool if threads else None)
    im, decoded = _decode(gif)
    assert im.n_frames == len(frames)
    assert im.info["loop"] == 0
    assert im.size == (50, 40)
    for i, rgba in enumerate(decoded):
        opaque = frames[i] != T
        np.testing.assert_array_equal(rgba[..., 3] > 0, opaque, err_msg=f"frame {i}")
        np.testing.assert_array_equal(rgba[..., :3][opaque], palette[frames[i][opaque]])
    durations = []
    for i in range(im.n_frames):
        im.seek(i)
        durations.append(im.info["duration"])
    assert durations == [10 * d for d in delays]


def test_only_changed_rectangles_are_written():
    frames = np.full((3, 60, 60), T, np.uint8)
    frames[:, 5:50, 5:50] = 0
    frames[1, 52:55, 52:55] = 1  # appears in frame 1 only
    boxes, disposal = plan_frames(frames, T)
    assert boxes[0] == (5, 50, 5, 50)
    # Frame 1 adds a small square; frame 2 must clear it again, so frame 1 is disposed.
    assert boxes[1] == (52, 55, 52, 55) and disposal[1] == CLEAR
    # The last frame is cleared whole so the loop restarts on an empty canvas.
    assert disposal[-1] == CLEAR and boxes[-1] == (5, 55, 5, 55)


def test_still_frames_cost_almost_nothing():
    frames = np.full((20, 100, 100), T, np.uint8)
    frames[:, 20:80, 20:80] = np.arange(60)[None, :, None] % 4
    gif = encode_gif(frames, _palette(), [5] * 20, T)
    one = encode_gif(frames[:1], _palette(), [5], T)
    assert len(gif) < len(one) + 20 * 40


def test_frame_and_delay_counts_must_agree():
    with pytest.raises(ValueError, match="delays"):
        encode_gif(_clip(), _palette(), [5, 5], T)
