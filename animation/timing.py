"""Frame reduction: when to sample a motion and how long to show each output frame."""

from __future__ import annotations

import numpy as np


def frame_schedule(
    duration_s: float, fps: float, max_frames: int = 150
) -> tuple[np.ndarray, np.ndarray]:
    """Sample times (F,) in seconds and GIF delays (F,) in 1/100 s for a clip.

    F = round(duration * fps), capped at `max_frames`, at least 2. GIF delays are whole
    centiseconds, so each frame's delay is the difference of rounded cumulative end times:
    the delays sum exactly to round(duration * 100) and the rounding is spread evenly
    instead of piling up at the end (15 fps gives 7, 6, 7, 7, 6, 7, ... not 7, 7, 7, ...).
    """
    if not (np.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration must be positive, got {duration_s}")
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be positive, got {fps}")
    if max_frames < 2:
        raise ValueError(f"max_frames must be at least 2, got {max_frames}")
    total_cs = max(2, round(duration_s * 100))
    # No more frames than centiseconds: a GIF frame cannot last less than 1/100 s.
    n = int(min(max(2, round(duration_s * fps)), max_frames, total_cs))
    k = np.arange(n + 1)
    ends_cs = np.round(total_cs * k / n).astype(np.int64)
    delays_cs = np.diff(ends_cs)
    times_s = duration_s * k[:-1] / n
    return times_s, delays_cs
