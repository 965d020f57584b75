"""The motions this gateway can render: names, defaults, and what /motions shows of them."""

from __future__ import annotations

import threading
from functools import cached_property

from animation.motions import MotionError, default_motions, load_motion, load_motion_table
from animation.timing import frame_schedule
from animation.version import motion_version
from gateway.parsing import DEFAULT_FPS

MAX_FRAMES = 150  # animation.render's default cap


class MotionCatalogue:
    """Loaded on first use (the BVH files are parsed once per process), then read-only."""

    def __init__(self, configured_defaults: tuple[str, ...]) -> None:
        self._configured_defaults = configured_defaults
        self._lock = threading.Lock()

    @cached_property
    def table(self) -> dict:
        return load_motion_table()

    @property
    def names(self) -> list[str]:
        return list(self.table)

    @cached_property
    def defaults(self) -> tuple[str, ...]:
        names = self._configured_defaults or tuple(default_motions(self.table))
        unknown = [n for n in names if n not in self.table]
        if unknown:
            raise MotionError(f"DEFAULT_MOTIONS names unknown motions: {unknown}")
        return names

    @cached_property
    def summary(self) -> list[dict]:
        """Name, duration and frame count at the default fps of every motion."""
        with self._lock:
            out = []
            for name, spec in self.table.items():
                duration = load_motion(name).duration_s
                times, _ = frame_schedule(duration, DEFAULT_FPS, MAX_FRAMES)
                out.append({
                    "name": name,
                    "duration_s": round(duration, 3),
                    "frames": len(times),
                    "fps": DEFAULT_FPS,
                    "default": name in self.defaults,
                    "description": spec.description,
                })  # fmt: skip
            return out

    @cached_property
    def versions(self) -> dict[str, str]:
        """Each motion's version (its table entry and BVH file), for the storage keys."""
        return {name: motion_version(spec) for name, spec in self.table.items()}

    def missing(self) -> str | None:
        """Why the motions cannot be served, or None (for /ready)."""
        try:
            self.defaults  # noqa: B018 - loads and checks the table
            self.summary  # noqa: B018
            self.versions  # noqa: B018
        except (MotionError, OSError, ValueError) as exc:
            return f"motions: {exc}"
        return None
