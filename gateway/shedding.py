"""Refusing a full house before Flask sees the request: which routes, the 503's bytes, its
hold and its log line.

When every render slot and the queue are taken (`Admission.full`), a request to a route
that renders can only be refused. Through Flask that refusal cost the gevent hub about
0.8 ms of CPU (request context, hooks, JSON, metrics, a log line, then gunicorn reading
the unread body, and the connection kept open), and a storm of clients that retry at once
kept the hub busy refusing. So the worker (`gunicorn_worker.GatewayWorker`) asks the
`Shedder` as soon as it sees the request line and headers, and a refusal is:

- a few hundred bytes from a template: 503 `overloaded`, `Retry-After`, `X-Request-ID`,
  `Connection: close`; the body is never read and the connection is closed;
- held (`RefusalHold`): answered REFUSAL_HOLD_S (0.04 s) after it arrived (as the
  kernel stamped it), on a 5 ms grid, by one greenlet that sends every refusal due at a
  tick and closes its connection (nothing read meanwhile; no greenlet or timer per
  refusal). A client that retries at once, whatever Retry-After says, then comes back
  about 25 times a second instead of thousands (measured with 36 of them on 2 cores: 840
  refusals/s costing 0.3 cores at both ends, against 4200/s and 1.1 cores unheld;
  docs/BENCHMARKS.md, section overload), while every refused client still has its 503
  within tens of milliseconds;
- counted in the metrics like any request, and logged as one line per `LOG_EVERY_S` with
  the count, not one line each.

The same routes refuse a full house inside Flask too (`refuse_when_full`, a blueprint
hook): for servers without this worker (Flask's test client), and for the request whose
headers passed here while the house was not quite full.
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
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field

import gevent
from flask import Flask, request

from gateway import metrics
from gateway.admission import BUSY, Admission
from gateway.api_key import bearer_matches
from gateway.errors import error_document
from gateway.request_log import request_id
from gateway.services import current_services, services_of

log = logging.getLogger("gateway.shedding")
HOLD_TICK_S = 0.005
LOG_EVERY_S = 10.0


def refuse_when_full() -> None:
    """Blueprint hook (`bp.before_request(refuse_when_full)`): nothing could start
    rendering soon, so refuse now, before the body is read."""
    admission = current_services().admission
    if admission.full_for(request.environ.get("gunicorn.socket")):
        raise admission.refusal()


def guarded_paths(app: Flask) -> frozenset[str]:
    """The POST paths whose blueprint refuses a full house with `refuse_when_full`."""
    guarded = {name for name, hooks in app.before_request_funcs.items()
               if refuse_when_full in hooks}  # fmt: skip
    return frozenset(
        rule.rule
        for rule in app.url_map.iter_rules()
        if "POST" in (rule.methods or ()) and not rule.arguments
        and rule.endpoint.rpartition(".")[0] in guarded
    )  # fmt: skip


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


@dataclass
class Shedder:
    """Decides, from the request line and headers alone, whether a request is refused
    unread; answers the refusal."""

    admission: Admission
    paths: frozenset[str]
    api_key: str | None = None
    hold: RefusalHold = field(default_factory=lambda: RefusalHold(0.0))
    log: RefusalLog = field(default_factory=RefusalLog)
    # Held refusals: (due, order, file descriptor, request id, path, arrived), by due time.
    _held: list = field(default_factory=list, init=False, repr=False)
    _order: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)
    _releaser: gevent.Greenlet | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_app(cls, app: Flask) -> Shedder:
        services = services_of(app)
        config = services.config
        return cls(
            services.admission, guarded_paths(app), config.api_key,
            RefusalHold(config.refusal_hold_s),
        )  # fmt: skip

    parse_head = staticmethod(parse_head)

    def refuses(
        self, method: str, path: str, headers: Mapping[str, str], key: Hashable | None = None
    ) -> bool:
        """True for a request to a guarded route while the house is full (`headers` by
        lower-case name; `key`: the connection, whose own claim does not count). Not for
        one without the API key: it gets its 401 from Flask, as it would with room."""
        if not self.guards(method, path) or not self.admission.full_for(key):
            return False
        return not self.api_key or bearer_matches(headers.get("authorization", ""), self.api_key)

    def guards(self, method: str, path: str) -> bool:
        """A request to a route that renders: it may be refused, and it may claim a place."""
        return method == "POST" and path in self.paths

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
        # One greenlet answers every held refusal: a greenlet asleep per refusal cost the
        # event loop a timer and two switches each, a third of a refusal's CPU in a storm.
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
