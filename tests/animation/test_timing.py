"""Frame reduction: frame count, sample times and GIF delays that keep the real duration."""

from __future__ import annotations

import numpy as np
import pytest

from animation.timing import frame_schedule


@pytest.mark.parametrize(
    ("duration", "fps", "max_frames", "count"),
    [
        (4.0, 15, 150, 60),  # duration x fps
        (2.2, 15, 150, 33),
        (2.8, 30, 150, 84),
        (4.2375, 15, 150, 64),  # rounded
        (10.0, 30, 150, 150),  # capped
        (4.0, 15, 20, 20),  # capped lower
        (0.05, 10, 150, 2),  # at least two frames
    ],
)
def test_frame_count(duration, fps, max_frames, count):
    times, delays = frame_schedule(duration, fps, max_frames)
    assert times.shape == delays.shape == (count,)


@pytest.mark.parametrize(
    ("duration", "fps", "max_frames"),
    [(4.0, 15, 150), (2.2, 15, 150), (2.8, 24, 150), (4.2375, 15, 150), (10.0, 30, 150),
     (3.333, 7, 150), (5.65, 15, 150), (1.0, 30, 150)],
)  # fmt: skip
def test_delays_keep_the_duration_and_spread_the_rounding(duration, fps, max_frames):
    times, delays = frame_schedule(duration, fps, max_frames)
    n = len(times)
    assert delays.dtype.kind == "i"
    assert delays.sum() == round(duration * 100)
    # Every delay is the ideal one rounded down or up, and the running total never drifts
    # more than half a centisecond from the real clock.
    ideal = round(duration * 100) / n
    assert set(delays.tolist()) <= {int(np.floor(ideal)), int(np.ceil(ideal))}
    drift = np.cumsum(delays) - ideal * np.arange(1, n + 1)
    assert np.abs(drift).max() <= 0.5 + 1e-9
    # Samples start at 0, are evenly spaced and stop one step before the loop closes.
    np.testing.assert_allclose(times, np.arange(n) * duration / n)


def test_fifteen_fps_alternates_sixes_and_sevens():
    _, delays = frame_schedule(2.0, 15)
    assert delays.tolist()[:6] == [7, 6, 7, 7, 6, 7]


@pytest.mark.parametrize(
    ("duration", "fps", "max_frames"), [(0, 15, 150), (-1, 15, 150), (2, 0, 150), (2, 15, 1)]
)
def test_rejects_nonsense(duration, fps, max_frames):
    with pytest.raises(ValueError):
        frame_schedule(duration, fps, max_frames)
