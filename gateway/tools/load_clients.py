"""The clients of the load test: many HTTP clients on one event loop, and a /health pinger
in a process of its own.

Each simulated client posts a drawing, waits for the whole answer, and posts the next one,
on a new connection each time (as after a refusal, which closes it). After a failure it
sends the same request again, when its retry policy says:

- `Storm`: posts again at once, whatever `Retry-After` says (impatient apps);
- `Backoff`: what a client should do (README, "When the service is busy"): after a 503
  with `Retry-After`, waits that long plus a random 0-50 %, so clients refused together
  do not come back together; after a failure without it (another 5xx, a timeout, a
  refused connection), waits 1 s, 2 s, 4 s ... at most 30 s, each a random fraction
  (full jitter); after a 200, the next drawing at once.

All clients run on one thread with non-blocking sockets and a selector, and requests are
bytes built once per attempt: a client costs this process some tens of microseconds per
attempt, so even a storm leaves the CPU to the service under test. An attempt ends when its
answer's last bytes reached this machine, by the kernel's receive stamp
(gateway/ops/arrival.py), not when this loop got round to reading them: on a machine shared
with the service, the loop waits for a core under load, and that wait is the load test's,
not the service's. The /health pinger runs in its own process for the same reason.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import multiprocessing
import random
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.ops.arrival import ANCILLARY_SIZE, arrival, stamp

HEALTH_INTERVAL_S = 0.1
HEALTH_TIMEOUT_S = 10.0
FAILED_HEALTH_MS = 1000 * HEALTH_TIMEOUT_S  # a /health that failed counts as this slow
READ_SIZE = 65536


@dataclass(frozen=True)
class Answer:
    """One attempt: its outcome ("200", "503", ..., "timeout", "connection_error"), how long
    it took, the Retry-After it carried, and when it ended (seconds since the run began)."""

    status: str
    seconds: float
    retry_after_s: float | None
    ended_s: float


class Storm:
    """Retries at once, whatever the answer."""

    name = "storm"

    def delay_s(self, answer: Answer, failures: int) -> float:
        return 0.0


class Backoff:
    """Honours Retry-After (plus 0-50 % jitter); exponential backoff with full jitter after
    other failures. `failures` counts the client's failed attempts in a row, this one included."""

    name = "backoff"
    first_s, max_s = 1.0, 30.0

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()

    def delay_s(self, answer: Answer, failures: int) -> float:
        if answer.status == "200":
            return 0.0
        if answer.retry_after_s is not None:
            return answer.retry_after_s * self.rng.uniform(1.0, 1.5)
        ceiling = min(self.max_s, self.first_s * 2 ** (failures - 1))
        return self.rng.uniform(0.0, ceiling)


POLICIES = {"storm": Storm, "backoff": Backoff}


@dataclass(frozen=True)
class Target:
    """Where requests go: the address to connect to and the Host header to send."""

    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http":
            raise ValueError(f"the load test speaks plain HTTP, not {parts.scheme!r}: {url}")
        return cls(parts.hostname or "127.0.0.1", parts.port or 80)

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict | None = None
    ) -> bytes:
        """An HTTP/1.1 request, closing the connection after its answer."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Connection: close", "User-Agent: gateway.tools.loadtest"]  # fmt: skip
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def parse_answer(data: bytes) -> tuple[str, float | None] | None:
    """(status, Retry-After seconds) of a complete answer's head; None without one."""
    head, sep, _ = data.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/"):
        return None
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    retry_after = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"retry-after":
            try:
                retry_after = float(value.strip())
            except ValueError:
                pass  # an HTTP date: not sent by the gateway; treated as absent
    return parts[1].decode(), retry_after


def answer_length(data: bytes) -> int | None:
    """Head plus Content-Length of an answer whose head has arrived; None before that, or
    without a Content-Length (then the answer ends when the server closes)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    for line in bytes(data[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return end + 4 + int(value.strip())
    return None


class _Attempt:
    """One request on its own non-blocking connection, driven by the crowd's selector."""

    def __init__(self, client: int, target: Target, request: bytes, timeout_s: float) -> None:
        self.client = client
        self.started = time.perf_counter()
        self.deadline = self.started + timeout_s
        self.request = memoryview(request)
        self.sent = 0
        self.received = bytearray()
        self.length: int | None = None  # of the whole answer, once its head has come
        self.arrived: float | None = None  # when the last bytes read reached the machine
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setblocking(False)
        stamp([self.sock])
        self.connected = False
        self.failed = self.sock.connect_ex(target.address) not in (0, errno.EINPROGRESS)

    @property
    def sending(self) -> bool:
        return self.sent < len(self.request)

    def on_writable(self) -> bool:
        """Send what the socket takes; True when the whole request is out (or the server
        stopped taking it: its answer may be waiting, as after a refusal)."""
        if not self.connected:
            if self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.failed = True
                return True
            self.connected = True
        try:
            while self.sent < len(self.request):
                self.sent += self.sock.send(self.request[self.sent :])
        except BlockingIOError:
            return False
        except OSError:  # broken pipe or reset: the server closed early; read its answer
            return True
        return True

    def on_readable(self) -> bool:
        """Read what arrived; True at the end of the answer: the server closed, or its
        Content-Length has arrived (should it keep the connection open after all)."""
        try:
            chunk, ancillary, _, _ = self.sock.recvmsg(READ_SIZE, ANCILLARY_SIZE)
        except BlockingIOError:
            return False
        except OSError:  # reset after its answer: what arrived is still the answer
            return True
        if not chunk:
            return True
        self.received += chunk
        self.arrived = arrival(ancillary, time.perf_counter)
        if self.length is None:
            self.length = answer_length(self.received)
        return self.length is not None and len(self.received) >= self.length

    def answer(self, epoch: float, status: str | None = None) -> Answer:
        """The attempt's outcome, timed to its answer's arrival (to now for a timeout or a
        failure without an answer)."""
        now = time.perf_counter()
        self.sock.close()
        parsed = None if (status or self.failed) else parse_answer(bytes(self.received))
        if status is None:
            status = parsed[0] if parsed else "connection_error"
        retry_after = parsed[1] if parsed else None
        if parsed and self.arrived is not None:
            now = min(now, max(self.started, self.arrived))
        return Answer(status, now - self.started, retry_after, now - epoch)


class Crowd:
    """`clients` simulated clients posting `make_request()` back to back for `duration_s`;
    after a failure a client sends the same request again when `policy` says. Attempts
    started before the end finish."""

    def __init__(
        self,
        target: Target,
        make_request: Callable[[], bytes],
        policy: Storm | Backoff,
        timeout_s: float = 120.0,
    ) -> None:
        self.target = target
        self.make_request = make_request
        self.policy = policy
        self.timeout_s = timeout_s

    def run(
        self, clients: int, duration_s: float, attempts_per_client: int | None = None
    ) -> list[Answer]:
        """Every attempt's answer, in the order they ended. With `attempts_per_client`, each
        client stops after that many attempts instead of at the end of `duration_s`."""
        selector = selectors.DefaultSelector()
        answers: list[Answer] = []
        epoch = time.perf_counter()
        end = epoch + duration_s
        tie = itertools.count()
        due: list[tuple[float, int, int]] = []  # (when, tie, client): its next attempt
        failures = [0] * clients  # failed attempts in a row, per client
        attempts = [0] * clients
        retrying: list[bytes | None] = [None] * clients  # the request a failure left to send again
        live: dict[int, _Attempt] = {}  # client -> its attempt on the wire

        def may_start(client: int, now: float) -> bool:
            if attempts_per_client is not None:
                return attempts[client] < attempts_per_client
            return now < end

        def start(client: int) -> None:
            attempts[client] += 1
            request = retrying[client] or self.make_request()
            attempt = _Attempt(client, self.target, request, self.timeout_s)
            # On loopback the connection is usually up as connect returns: send at once
            # rather than a turn of the loop later, which would count as the server's time.
            sent = not attempt.failed and attempt.on_writable()
            if attempt.failed:  # not on the wire yet: nothing registered to undo
                finish(attempt)
                return
            live[client] = attempt
            events = selectors.EVENT_READ if sent else selectors.EVENT_WRITE | selectors.EVENT_READ
            selector.register(attempt.sock, events, attempt)

        def finish(attempt: _Attempt, status: str | None = None) -> None:
            if live.pop(attempt.client, None) is not None:
                selector.unregister(attempt.sock)
            answer = attempt.answer(epoch, status)
            answers.append(answer)
            client = attempt.client
            ok = answer.status == "200"
            failures[client] = 0 if ok else failures[client] + 1
            retrying[client] = None if ok else attempt.request.obj
            delay = self.policy.delay_s(answer, failures[client])
            heapq.heappush(due, (time.perf_counter() + delay, next(tie), client))

        for client in range(clients):
            heapq.heappush(due, (epoch, next(tie), client))
        while True:
            now = time.perf_counter()
            while due and due[0][0] <= now:
                _, _, client = heapq.heappop(due)
                if may_start(client, now):
                    start(client)
            past_end = attempts_per_client is None and (not due or due[0][0] >= end)
            if not live and (not due or past_end):
                break  # nothing on the wire, and nobody will start another attempt
            timeout = min(0.05, max(0.0, due[0][0] - now)) if due else 0.05
            for key, mask in selector.select(timeout):
                attempt: _Attempt = key.data
                if live.get(attempt.client) is not attempt:
                    continue
                if mask & selectors.EVENT_WRITE and attempt.sending:
                    if attempt.on_writable():
                        if attempt.failed:
                            finish(attempt)
                            continue
                        selector.modify(attempt.sock, selectors.EVENT_READ, attempt)
                if mask & selectors.EVENT_READ and attempt.on_readable():
                    finish(attempt)
            now = time.perf_counter()
            for attempt in [a for a in live.values() if a.deadline <= now]:
                finish(attempt, "timeout")
        selector.close()
        return answers


def _ping(target: Target, interval_s: float, conn) -> None:
    """The pinger process: GET /health on a new connection (as the kubelet's probe does)
    every `interval_s` until told to stop; sends back the latencies (ms) and its CPU."""
    request = target.request("GET", "/health")
    latencies: list[float] = []
    while True:
        start = time.perf_counter()
        ok = False
        try:
            with socket.create_connection(target.address, timeout=HEALTH_TIMEOUT_S) as sock:
                sock.sendall(request)
                data = b""
                while chunk := sock.recv(READ_SIZE):
                    data += chunk
            ok = (parse_answer(data) or ("",))[0] == "200"
        except OSError:
            pass
        latencies.append(1000 * (time.perf_counter() - start) if ok else FAILED_HEALTH_MS)
        if conn.poll(max(0.0, interval_s - (time.perf_counter() - start))):
            break
    conn.send((latencies, time.process_time()))


class HealthPinger:
    """Pings /health from another process while the block runs: `.latencies_ms`, `.cpu_s`."""

    def __init__(self, target: Target, interval_s: float = HEALTH_INTERVAL_S) -> None:
        self.target = target
        self.interval_s = interval_s
        self.latencies_ms: list[float] = []
        self.cpu_s = 0.0

    def __enter__(self) -> HealthPinger:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._proc = context.Process(target=_ping, args=(self.target, self.interval_s, child),
                                     daemon=True)  # fmt: skip
        self._proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        if self._conn.poll(HEALTH_TIMEOUT_S + 5):
            self.latencies_ms, self.cpu_s = self._conn.recv()
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
