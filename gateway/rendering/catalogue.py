"""The motions this gateway can render: names, defaults, and what /motions shows of them.

The table is the shipped one (`bvh/motions.yaml`) plus, with MOTIONS_DIR set, every
`*.bvh` in that folder (a folder motion with a shipped motion's name replaces it). The
gateway process and every render worker read it the same way:
`animation.motions.motion_table(folder)`.
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path

from gevent.lock import Semaphore

from animation.motions import (
    MotionError,
    MotionSpec,
    default_motions,
    load_motion,
    motion_summary,
    motion_table,
)
from animation.version import motion_version
from gateway.rendering import tasks
from gateway.rendering.pool import CpuPool
from gateway.web.options import DEFAULT_FPS

MAX_FRAMES = 150  # animation.render's default cap


class MotionCatalogue:
    """Loaded on first use (the BVH files are parsed once per process), then read-only."""

    def __init__(
        self, configured_defaults: tuple[str, ...], motions_dir: Path | None = None
    ) -> None:
        self._configured_defaults = configured_defaults
        self.motions_dir = motions_dir
        self._lock = threading.Lock()
        self._previews: dict[str, bytes] = {}
        self._rendering = Semaphore()  # one preview rendered at a time (greenlets wait)

    @cached_property
    def table(self) -> dict[str, MotionSpec]:
        return motion_table(self.motions_dir)

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
        """Each motion at the default fps: name, group, duration, frames, what a long clip
        loses (`rendered_s`, `cut_s`), whether it is a default, description, and where its
        preview is."""
        with self._lock:
            out = []
            for name in self.table:
                motion = load_motion(name, table=self.table)
                row = motion_summary(motion, DEFAULT_FPS, MAX_FRAMES)
                out.append({**row, "default": name in self.defaults,
                            "preview": f"/motions/{name}/preview.gif"})  # fmt: skip
            return out

    def preview(self, name: str, pool: CpuPool) -> bytes:
        """`name`'s preview GIF (`tasks.preview`), rendered in a render worker the first time
        it is asked for and kept; one at a time, so a page's first visit never fills the pool
        with them. KeyError for a name not in the table."""
        if name not in self.table:
            raise KeyError(name)
        if name not in self._previews:
            with self._rendering:
                if name not in self._previews:
                    job = tasks.PreviewJob(name, self.motions_dir)
                    self._previews[name] = pool.run(tasks.preview, job)
        return self._previews[name]

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
