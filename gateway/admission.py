"""The one admission policy: at most `slots` renders at once, `queue` more waiting, the rest refused.

Only renders are counted. A request takes its place here after its body has arrived and
storage has said the GIFs are not there yet, so neither a slow upload nor an answer from
storage holds a slot. Refusing (503 `overloaded` with Retry-After) keeps latency bounded
under a burst instead of letting every request time out; when the slots and the queue are
already full, a request is refused before its body is read (`full`), which is what makes
a refusal cheap. Counts are per gunicorn worker process.

A request let in while no slot was free holds a place on account (`claim`) from its head
until it reaches `admit` or ends, at most `CLAIM_S`: when a place frees, the first request
is let in and the others arriving meanwhile are refused at their head, instead of all
reading their bodies and asking storage only to be refused in `admit` (a storm measured
2.5 % of its refusals on that slow path, each 30-90 ms, together stalling the hub). A
claim is not a slot: a body still arriving after `CLAIM_S` holds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

from gevent.lock import BoundedSemaphore

from gateway import metrics
from gateway.errors import Overloaded

BUSY = "the service is busy; retry shortly"
# Longer than an upload on a fast network takes from its head to `admit` (body, parse,
# storage lookup) on a busy worker; a slower one competes for its place there as before.
CLAIM_S = 1.0


class Admission:
    def __init__(self, slots: int, queue: int, wait_s: float, retry_after_s: int) -> None:
        self.slots = slots
        self.queue = queue
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self._free = BoundedSemaphore(slots)  # waiting yields to the hub
        self.waiting = 0
        self.active = 0
        self._claims: dict[Hashable, float] = {}  # key (the client's socket) -> expiry

    def refusal(self, why: str = BUSY) -> Overloaded:
        """The 503 every refusal of this policy answers (the render pool's included)."""
        return Overloaded(why, headers={"Retry-After": str(self.retry_after_s)})

    @property
    def full(self) -> bool:
        """Every slot taken and the queue full, claims counted: a request arriving now
        would be refused."""
        return self.full_for(None)

    def full_for(self, key: Hashable | None) -> bool:
        """`full`, leaving out the claim of `key` (the request asking holds it)."""
        if self.active < self.slots:
            return False
        now = time.monotonic()
        for held, expiry in list(self._claims.items()):
            if expiry <= now:
                del self._claims[held]
        claims = len(self._claims) - (key in self._claims)
        return self.waiting + claims >= self.queue

    @property
    def slot_free(self) -> bool:
        return self.active < self.slots

    def claim(self, key: Hashable) -> None:
        """Hold a place for `key` until it is admitted or released, at most CLAIM_S."""
        self._claims[key] = time.monotonic() + CLAIM_S

    def release(self, key: Hashable) -> None:
        """The request of `key` ended (answered from storage, refused, failed)."""
        self._claims.pop(key, None)

    @contextmanager
    def admit(self, key: Hashable | None = None) -> Iterator[float]:
        """Hold one render slot for the block (yielding the seconds waited for it); raise
        Overloaded when the queue is full or no slot comes within `wait_s`. The claim of
        `key`, if any, ends here."""
        self._claims.pop(key, None)
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
