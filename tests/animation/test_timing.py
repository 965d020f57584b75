"""Frame reduction: frame count, sample times and GIF delays that keep the real duration."""

from __future__ import annotations

import numpy as np
import pytest

from animation.timing import frame_schedule, plan_clip


@pytest.mark.parametrize(
    ("duration", "fps", "max_frames", "count"),
    [
        (4.0, 15, 150, 60),  # duration x fps
        (2.2, 15, 150, 33),
        (2.8, 30, 150, 84),
        (4.2375, 15, 150, 64),  # rounded
        (10.0, 30, 150, 150),  # cut
        (4.0, 15, 20, 20),  # cut sooner
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
    shown = min(duration, max_frames / fps)  # a longer clip is cut, never slowed down
    assert delays.dtype.kind == "i"
    assert delays.sum() == round(shown * 100)
    # Every delay is the ideal one rounded down or up, and the running total never drifts
    # more than half a centisecond from the real clock.
    ideal = round(shown * 100) / n
    assert set(delays.tolist()) <= {int(np.floor(ideal)), int(np.ceil(ideal))}
    drift = np.cumsum(delays) - ideal * np.arange(1, n + 1)
    assert np.abs(drift).max() <= 0.5 + 1e-9
    # Samples start at 0, are evenly spaced and stop one step before the loop closes.
    np.testing.assert_allclose(times, np.arange(n) * shown / n)


def test_fifteen_fps_alternates_sixes_and_sevens():
    _, delays = frame_schedule(2.0, 15)
    assert delays.tolist()[:6] == [7, 6, 7, 7, 6, 7]


@pytest.mark.parametrize(
    ("duration", "fps", "max_frames"), [(0, 15, 150), (-1, 15, 150), (2, 0, 150), (2, 15, 1)]
)
def test_rejects_nonsense(duration, fps, max_frames):
    with pytest.raises(ValueError):
        frame_schedule(duration, fps, max_frames)


@pytest.mark.parametrize(("duration", "fps"), [(30.0, 15), (20.0, 15), (12.0, 30), (30.0, 10)])
def test_a_long_clip_keeps_the_rate_and_says_what_was_cut(duration, fps):
    plan = plan_clip(duration, fps, 150)
    assert plan.frames == 150 and plan.fps == fps
    np.testing.assert_allclose(np.diff(plan.times_s), 1 / fps)  # the rate asked for
    assert plan.rendered_s == pytest.approx(150 / fps)
    assert plan.cut and plan.cut_s == pytest.approx(duration - 150 / fps)
    assert plan.delays_cs.sum() == round(150 / fps * 100)
    note = plan.note()
    assert f"{duration:.2f} s" in note and f"first {150 / fps:.2f} s" in note
    assert f"150 frames at {fps} fps" in note and "--start/--end" in note


def test_a_clip_that_fits_is_not_cut():
    plan = plan_clip(4.0, 15, 150)
    assert plan.frames == 60 and not plan.cut and plan.cut_s == 0 and plan.note() == ""
    assert plan.rendered_s == plan.duration_s == 4.0
