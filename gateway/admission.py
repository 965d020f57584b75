"""Bounded admission: at most `slots` renders at once, `queue` more waiting, the rest refused.

Refusing at once (503 `overloaded` with Retry-After) keeps latency bounded under a burst
instead of letting every request time out. Counts are per gunicorn worker process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gevent.lock import BoundedSemaphore

from gateway import metrics
from gateway.errors import Overloaded


class Admission:
    def __init__(self, slots: int, queue: int, wait_s: float, retry_after_s: int) -> None:
        self.slots = slots
        self.queue = queue
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self._free = BoundedSemaphore(slots)  # waiting yields to the hub
        self.waiting = 0
        self.active = 0

    def _refuse(self, why: str) -> Overloaded:
        return Overloaded(why, headers={"Retry-After": str(self.retry_after_s)})

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Hold one render slot for the block; raise Overloaded when none comes in time."""
        if not self._free.acquire(blocking=False):
            # Greenlets switch only at blocking calls: this check-and-count is atomic.
            if self.waiting >= self.queue:
                raise self._refuse("the service is busy; retry shortly")
            self.waiting += 1
            metrics.QUEUE_DEPTH.inc()
            try:
                got = self._free.acquire(timeout=self.wait_s)
            finally:
                self.waiting -= 1
                metrics.QUEUE_DEPTH.dec()
            if not got:
                raise self._refuse("no render slot freed up in time; retry shortly")
        self.active += 1
        metrics.IN_FLIGHT.inc()
        try:
            yield
        finally:
            self.active -= 1
            metrics.IN_FLIGHT.dec()
            self._free.release()
