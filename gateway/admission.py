"""The one admission policy: at most `slots` renders at once, `queue` more waiting, the rest refused.

Only renders are counted. A request takes its place here after its body has arrived and
storage has said the GIFs are not there yet, so neither a slow upload nor an answer from
storage holds a slot. Refusing (503 `overloaded` with Retry-After) keeps latency bounded
under a burst instead of letting every request time out; when the slots and the queue are
already full, a request is refused before its body is read (`full`), which is what makes
a refusal cheap. Counts are per gunicorn worker process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from gevent.lock import BoundedSemaphore

from gateway import metrics
from gateway.errors import Overloaded

BUSY = "the service is busy; retry shortly"


class Admission:
    def __init__(self, slots: int, queue: int, wait_s: float, retry_after_s: int) -> None:
        self.slots = slots
        self.queue = queue
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self._free = BoundedSemaphore(slots)  # waiting yields to the hub
        self.waiting = 0
        self.active = 0

    def refusal(self, why: str = BUSY) -> Overloaded:
        """The 503 every refusal of this policy answers (the render pool's included)."""
        return Overloaded(why, headers={"Retry-After": str(self.retry_after_s)})

    @property
    def full(self) -> bool:
        """Every slot taken and the queue full: a request arriving now would be refused."""
        return self.active >= self.slots and self.waiting >= self.queue

    @contextmanager
    def admit(self) -> Iterator[float]:
        """Hold one render slot for the block (yielding the seconds waited for it); raise
        Overloaded when the queue is full or no slot comes within `wait_s`."""
        started = time.perf_counter()
        if not self._free.acquire(blocking=False):
            # Greenlets switch only at blocking calls: this check-and-count is atomic.
            if self.waiting >= self.queue:
                raise self.refusal()
            self.waiting += 1
            metrics.QUEUE_DEPTH.inc()
            try:
                got = self._free.acquire(timeout=self.wait_s)
            finally:
                self.waiting -= 1
                metrics.QUEUE_DEPTH.dec()
            if not got:
                raise self.refusal(
                    f"no render slot came free within {self.wait_s:g} s; retry shortly"
                )
        self.active += 1
        metrics.IN_FLIGHT.inc()
        try:
            yield time.perf_counter() - started
        finally:
            self.active -= 1
            metrics.IN_FLIGHT.dec()
            self._free.release()
