"""Frame reduction: when to sample a motion, how long to show each output frame, what is cut."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClipPlan:
    """The output frames of one clip: sample times, GIF delays and what did not fit."""

    times_s: np.ndarray  # (F,) seconds into the clip
    delays_cs: np.ndarray  # (F,) int64, GIF frame delays in 1/100 s
    fps: float  # the requested output rate, kept
    duration_s: float  # the whole clip
    rendered_s: float  # the part the frames cover: duration_s unless cut

    @property
    def frames(self) -> int:
        return len(self.times_s)

    @property
    def cut_s(self) -> float:
        """Seconds left out at the end (0.0 when the whole clip fits)."""
        return max(self.duration_s - self.rendered_s, 0.0)

    @property
    def cut(self) -> bool:
        return self.cut_s > 0

    def note(self) -> str:
        """One line saying what was cut, or '' when nothing was."""
        if not self.cut:
            return ""
        return (
            f"the clip is {self.duration_s:.2f} s; rendered its first {self.rendered_s:.2f} s "
            f"({self.frames} frames at {self.fps:g} fps), cut {self.cut_s:.2f} s; "
            f"pick a segment with --start/--end or raise --max-frames"
        )


def plan_clip(duration_s: float, fps: float, max_frames: int = 150) -> ClipPlan:
    """The frames of a clip at `fps`, at most `max_frames` of them.

    A clip that fits loops: F = round(duration * fps) frames (at least 2) spread evenly
    over it, so the last frame leads back into the first. A longer clip keeps the rate
    (a lower one looks broken: 6 fps is a slide show) and is cut to its first
    `max_frames` frames, 1/fps apart. GIF delays are whole centiseconds, so each frame's
    delay is the difference of rounded cumulative end times: the delays sum exactly to the
    rendered length and the rounding is spread evenly instead of piling up at the end
    (15 fps gives 7, 6, 7, 7, 6, 7, ... not 7, 7, 7, ...).
    """
    if not (np.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration must be positive, got {duration_s}")
    if not (np.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be positive, got {fps}")
    if max_frames < 2:
        raise ValueError(f"max_frames must be at least 2, got {max_frames}")
    whole = max(2, round(duration_s * fps))
    rendered_s = duration_s if whole <= max_frames else max_frames / fps
    total_cs = max(2, round(rendered_s * 100))
    # No more frames than centiseconds: a GIF frame cannot last less than 1/100 s.
    n = int(min(whole, max_frames, total_cs))
    k = np.arange(n + 1)
    ends_cs = np.round(total_cs * k / n).astype(np.int64)
    return ClipPlan(
        times_s=rendered_s * k[:-1] / n,
        delays_cs=np.diff(ends_cs),
        fps=float(fps),
        duration_s=float(duration_s),
        rendered_s=float(rendered_s),
    )


def frame_schedule(
    duration_s: float, fps: float, max_frames: int = 150
) -> tuple[np.ndarray, np.ndarray]:
    """(times_s, delays_cs) of plan_clip: sample times (F,) and GIF delays (F,) in 1/100 s."""
    plan = plan_clip(duration_s, fps, max_frames)
    return plan.times_s, plan.delays_cs
