"""Admission and overload, in one place: how many renders run at once, how many wait, and
how a request that cannot be let in is refused - inside Flask, or before Flask sees it.

The policy: at most `slots` renders at once and `queue` more waiting; the rest get 503
`overloaded` with Retry-After at once, so latency stays bounded under a burst instead of
every request timing out. A slot that frees goes to the waiting request whose client (its
address) holds the fewest slots, the earliest first among equals: a client that posts ten
drawings at once waits behind its own, not everyone else behind them. Only renders are counted: a request asks for a slot (`admit`)
after its body has arrived and storage has said its animations are not there yet, so
neither a slow upload nor an answer from storage holds one. Counts are per gunicorn worker.

The routes that render are declared here (`GUARDED_PATHS`). The one entry point is
`Admission.at_head`: given a request's head (method, path, headers; the body unread), it
says whether the request is refused now - a guarded route, every slot and the queue taken,
and the API key right when one is set (without it, Flask answers 401, as it would with
room). The gunicorn worker (gateway/ops/gunicorn_worker.py) calls it on the head it peeked
at, before gunicorn parses anything; the routes (web/drawings.py) call it from a
`before_request` hook, for servers without that worker and for a head that passed while
the house was not quite full.

A guarded request let in while no slot is free holds a place on account (a claim) from its
head until it reaches `admit` or ends (`release`), at most CLAIM_S: when a place frees, the
first request takes it and those arriving meanwhile are refused at their head, instead of
all reading their bodies and asking storage only to be refused in `admit`. A claim is not
a slot: a body still arriving after CLAIM_S holds nothing.

Refusing before Flask (`Shedder`): a refusal through Flask (request context, hooks, JSON,
metrics, a log line, gunicorn reading the unread body) costs the event loop several times
what a few hundred bytes from a template do, and a storm of clients retrying at once kept
the loop busy refusing (docs/BENCHMARKS.md, sections overload and refusal-path). So a
refusal at the head is:
- 503 `overloaded` from a template (`refusal_bytes`): Retry-After, X-Request-ID,
  `Connection: close`; the body is never read and the connection is closed;
- held (`RefusalHold`): answered REFUSAL_HOLD_S after it arrived (as the kernel stamped it),
  on a HOLD_TICK_S grid, by one greenlet that sends every refusal due at a tick. A client
  that retries at once, whatever Retry-After says, then comes back a few dozen times a
  second instead of thousands, while every refused client still has its 503 within tens of
  milliseconds;
- counted in the metrics like any request, and logged as one line per LOG_EVERY_S with the
  count (`RefusalLog`), not one line each.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import math
import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import gevent
from gevent.event import Event

from gateway.errors import Overloaded, error_document
from gateway.ops import metrics
from gateway.ops.request_log import request_id
from gateway.web.security import matching_key

log = logging.getLogger("gateway.admission")
BUSY = "the service is busy; retry shortly"
# The POST routes that render (web/drawings.py): they take a slot, so they may be refused
# when none can come, and they may claim a place.
GUARDED_PATHS = frozenset({"/animate", "/", "/annotate"})
# Longer than an upload on a fast network takes from its head to `admit` (body, parse,
# storage lookup) on a busy worker; a slower one competes for its place there as before.
CLAIM_S = 1.0
HOLD_TICK_S = 0.005
LOG_EVERY_S = 10.0


class Admission:
    """The admission policy of one gunicorn worker (see the module's doc)."""

    def __init__(
        self, slots: int, queue: int, wait_s: float, retry_after_s: int,
        api_keys: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.slots = slots
        self.queue = queue
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self.api_keys = api_keys
        self.waiting = 0
        self.active = 0
        self._held: Counter[Hashable] = Counter()  # client -> slots its requests hold
        self._waiters: list[_Waiter] = []  # requests waiting for a slot
        self._arrivals = itertools.count()
        self._claims: dict[Hashable, float] = {}  # key (the client's socket) -> expiry

    # ---- the entry point: a request's head ---------------------------------------------
    def at_head(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        key: Hashable | None = None,
        *,
        claim: bool = False,
    ) -> bool:
        """True when the request of this head must be refused now, its body unread: a POST
        to a guarded route while the house is full (`key`, the connection, does not count
        its own claim), from a caller with the API key when one is set. `headers`: looked up
        by lower-case name. With `claim`, a guarded request let in while no slot is free
        holds a place until it is admitted or released."""
        if not (method == "POST" and path in GUARDED_PATHS):
            return False
        if self.full_for(key) and self._has_key(headers):
            return True
        if claim and not self.slot_free:
            self.claim(key)
        return False

    def _has_key(self, headers: Mapping[str, str]) -> bool:
        if not self.api_keys:
            return True
        return matching_key(headers.get("authorization", ""), self.api_keys) is not None

    def refusal(self, why: str = BUSY) -> Overloaded:
        """The 503 every refusal of this policy answers (the render pool's included)."""
        return Overloaded(why, headers={"Retry-After": str(self.retry_after_s)})

    # ---- the house -------------------------------------------------------------------
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
    def admit(self, key: Hashable | None = None, caller: Hashable = None) -> Iterator[float]:
        """Hold one render slot for the block (yielding the seconds waited for it); raise
        Overloaded when the queue is full or no slot comes within `wait_s`. The claim of
        `key`, if any, ends here. `caller` (the caller's address; None: unknown) decides
        who of those waiting a freed slot goes to (see the module's doc)."""
        self._claims.pop(key, None)
        started = time.perf_counter()
        # Greenlets switch only at blocking calls: each check-and-count here is atomic.
        if self.active < self.slots and not self._waiters:
            self._take(caller)
        else:
            if self.waiting >= self.queue:
                raise self.refusal()
            self._wait(caller)
        metrics.IN_FLIGHT.inc()
        try:
            yield time.perf_counter() - started
        finally:
            metrics.IN_FLIGHT.dec()
            self._release(caller)

    def _take(self, caller: Hashable) -> None:
        self.active += 1
        self._held[caller] += 1

    def _release(self, caller: Hashable) -> None:
        self.active -= 1
        self._held[caller] -= 1
        if not self._held[caller]:
            del self._held[caller]
        self._hand_on()

    def _wait(self, caller: Hashable) -> None:
        """Wait for `_hand_on` to give this request a slot, at most `wait_s`."""
        waiter = _Waiter(caller, next(self._arrivals))
        self._waiters.append(waiter)
        self.waiting += 1
        metrics.QUEUE_DEPTH.inc()
        try:
            waiter.given.wait(self.wait_s)
        except BaseException:  # killed (the client left): give back what it may have got
            if waiter.given.is_set():
                self._release(caller)
            else:
                self._waiters.remove(waiter)
            raise
        finally:
            self.waiting -= 1
            metrics.QUEUE_DEPTH.dec()
        if not waiter.given.is_set():
            self._waiters.remove(waiter)
            raise self.refusal(f"no render slot came free within {self.wait_s:g} s; retry shortly")

    def _hand_on(self) -> None:
        """Give each free slot to the waiting request whose caller holds the fewest."""
        while self.active < self.slots and self._waiters:
            waiter = min(self._waiters, key=lambda w: (self._held[w.caller], w.arrival))
            self._waiters.remove(waiter)
            self._take(waiter.caller)
            waiter.given.set()


@dataclass
class _Waiter:
    caller: Hashable
    arrival: int
    given: Event = field(default_factory=Event)  # set when a slot is handed to it


# ---- refusing before Flask --------------------------------------------------------------
def parse_head(head: bytes) -> tuple[str, str, dict[str, str]] | None:
    """(method, path, headers by lower-case name) of a request's head (the bytes before its
    blank line), or None when it is not a plain HTTP/1.x request line and headers."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            return None
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    path = parts[1].partition(b"?")[0].decode("latin-1")
    return parts[0].decode("latin-1"), path, headers


def refusal_bytes(rid: str, retry_after_s: int, message: str = BUSY) -> bytes:
    """The whole HTTP answer of a refusal: the API's JSON error, and the connection closed."""
    body = json.dumps(error_document("overloaded", message, rid), separators=(",", ":"))
    return (
        "HTTP/1.1 503 SERVICE UNAVAILABLE\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Retry-After: {retry_after_s}\r\n"
        f"X-Request-ID: {rid}\r\n"
        "Connection: close\r\n"
        f"\r\n{body}"
    ).encode()


class RefusalHold:
    """Every refusal is answered `hold_s` after it arrived, rounded down to a grid of
    `tick_s`: the refusals of one tick go out together."""

    def __init__(
        self,
        hold_s: float,
        tick_s: float = HOLD_TICK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hold_s = hold_s
        self.tick_s = tick_s
        self.clock = clock

    def remaining_s(self, arrived: float | None = None) -> float:
        """How long a refusal that arrived at `arrived` (`clock()` time; default now) still
        waits: until the last tick at or before `arrived + hold_s`."""
        now = self.clock()
        release = math.floor(((now if arrived is None else arrived) + self.hold_s) / self.tick_s)
        return max(0.0, release * self.tick_s - now)


class RefusalLog:
    """One log line per `every_s` while refusals go on, with their count."""

    def __init__(self, every_s: float = LOG_EVERY_S) -> None:
        self.every_s = every_s
        self.pending = 0
        self._since = 0.0

    def count(self) -> None:
        if not self.pending:
            self._since = time.monotonic()
            gevent.spawn_later(self.every_s, self.flush)
        self.pending += 1

    def flush(self) -> None:
        if self.pending:
            seconds = time.monotonic() - self._since
            log.warning(
                "overloaded: refused %d requests in %.1f s, before reading their bodies",
                self.pending, seconds,
                extra={"status": 503, "code": "overloaded", "refused": self.pending,
                       "seconds": round(seconds, 1)},
            )  # fmt: skip
        self.pending = 0


@dataclass
class Shedder:
    """Answers the refusals `Admission.at_head` decided on a peeked head: held, together
    per tick, counted and logged."""

    admission: Admission
    hold: RefusalHold = field(default_factory=lambda: RefusalHold(0.0))
    log: RefusalLog = field(default_factory=RefusalLog)
    # Held refusals: (due, order, file descriptor, request id, path, arrived), by due time.
    _held: list = field(default_factory=list, init=False, repr=False)
    _order: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)
    _releaser: gevent.Greenlet | None = field(default=None, init=False, repr=False)

    parse_head = staticmethod(parse_head)

    def answer(
        self, sock, path: str, headers: Mapping[str, str], arrived: float | None = None
    ) -> None:
        """Answer the refusal once its hold is over; `arrived`: when the request came
        (`time.monotonic()` time), default now. Returns at once: a held refusal's connection
        is taken from `sock` (detached: closing `sock` afterwards, as the caller does, is
        harmless) and answered and closed with the others of its tick by `_release`."""
        started = time.monotonic() if arrived is None else arrived
        rid = request_id(headers.get("x-request-id", ""))
        hold = self.hold.remaining_s(started)
        if hold <= 0:
            try:
                sock.sendall(refusal_bytes(rid, self.admission.retry_after_s))
            except OSError:  # the client is gone already
                pass
            self._count(path, started)
            return
        # One greenlet answers every held refusal: a greenlet asleep per refusal would cost
        # the event loop a timer and two switches each.
        due = time.monotonic() + hold
        heapq.heappush(self._held, (due, next(self._order), sock.detach(), rid, path, started))
        if self._releaser is None:
            self._releaser = gevent.spawn(self._release)

    def _release(self) -> None:
        """Send each held refusal when it is due, and close its connection (the body unread:
        the kernel resets it), until none is left."""
        try:
            while self._held:
                wait = self._held[0][0] - time.monotonic()
                if wait > 0:
                    gevent.sleep(wait)
                self.flush(until=time.monotonic())
        finally:
            self._releaser = None

    def flush(self, until: float = math.inf) -> None:
        """Answer the held refusals due by `until` (`time.monotonic()` time), or all of them:
        a worker that stops answers its held refusals before it exits."""
        while self._held and self._held[0][0] <= until:
            _, _, fd, rid, path, started = heapq.heappop(self._held)
            try:  # a few hundred bytes into a new connection's empty buffer
                os.write(fd, refusal_bytes(rid, self.admission.retry_after_s))
            except OSError:  # the client is gone already
                pass
            finally:  # not os.close: gevent's asks the hub about watchers it has none of
                socket.close(fd)
            self._count(path, started)

    @property
    def held(self) -> int:
        """Refusals waiting out their hold."""
        return len(self._held)

    def _count(self, path: str, started: float) -> None:
        metrics.REQUESTS.labels(path, "POST", "503").inc()
        metrics.REQUEST_SECONDS.labels(path).observe(time.monotonic() - started)
        self.log.count()
