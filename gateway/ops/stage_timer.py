"""Wall time per stage of a request, for Server-Timing, the access log and the histograms."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from gateway.ops import metrics


@dataclass
class StageTimer:
    """Wall time per stage, in order, for Server-Timing, the request log and the histograms."""

    stages: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.stages[name] = self.stages.get(name, 0.0) + seconds
        metrics.STAGE_SECONDS.labels(name).observe(seconds)

    def server_timing(self) -> str:
        return ", ".join(f"{name};dur={s * 1000:.1f}" for name, s in self.stages.items())

    def as_ms(self) -> dict[str, float]:
        return {name: round(s * 1000, 1) for name, s in self.stages.items()}
