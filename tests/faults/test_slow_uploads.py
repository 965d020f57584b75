"""Slow uploads hold no render slot: a hundred of them trickling a byte now and then while
normal requests keep getting 200 in their usual time, and each is cut off with 408 once
READ_TIMEOUT_S has passed. Real gunicorn + gevent, real sockets, real renders (the
model-free options of tests/support/drawings.py)."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.offline_gateway import offline_env

pytestmark = pytest.mark.integration
READ_TIMEOUT_S = 6.0
SLOW_UPLOADS = 100
TRICKLE_S = 0.5  # one byte per connection this often
CHEAP = {"motions": "dab", "fps": 5}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[GatewayServer]:
    """One render slot and one queue place: two slow uploads holding slots would fill it."""
    env = offline_env(tmp_path_factory.mktemp("gifs"), READ_TIMEOUT_S=str(READ_TIMEOUT_S),
                      MAX_INFLIGHT="1", MAX_QUEUE="1", RENDER_WORKERS="1")  # fmt: skip
    with run_gateway(env) as server:
        yield server


class SlowUpload(threading.Thread):
    """Sends the headers of a 100 kB PNG upload, then one byte every TRICKLE_S."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        host, port = url.removeprefix("http://").split(":")
        self.address = (host, int(port))
        self.connected = threading.Event()
        self.answer = b""
        self.seconds = float("nan")  # from the headers sent to the answer

    def run(self) -> None:
        with socket.create_connection(self.address, timeout=30) as sock:
            sock.sendall(b"POST /animate HTTP/1.1\r\nHost: test\r\nContent-Type: image/png\r\n"
                         b"Content-Length: 100000\r\n\r\n\x89P")  # fmt: skip
            started = time.monotonic()
            self.connected.set()
            sock.settimeout(TRICKLE_S)
            while time.monotonic() - started < 3 * READ_TIMEOUT_S:
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    try:
                        sock.send(b"N")
                    except OSError:  # the server stopped reading: its answer is on the way
                        pass
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                if not self.answer:
                    self.seconds = time.monotonic() - started
                self.answer += chunk
                if b"\r\n\r\n" in self.answer and self.answer.rstrip().endswith(b"}"):
                    break

    @property
    def status(self) -> int:
        return int(self.answer.split(b" ", 2)[1]) if self.answer else 0


def timed_render(url: str, size: int) -> tuple[int, float]:
    """A normal request that renders (a new size each time, so never from storage)."""
    started = time.monotonic()
    reply = post_drawing(requests, url, drawing(), size=size, **CHEAP)
    return reply.status_code, time.monotonic() - started


def test_slow_uploads_hold_no_slot_and_get_408(gateway):
    timed_render(gateway.url, 40)  # warm the render worker
    usual = statistics.median(timed_render(gateway.url, size)[1] for size in (41, 42, 43))

    uploads = [SlowUpload(gateway.url) for _ in range(SLOW_UPLOADS)]
    for upload in uploads:
        upload.start()
    for upload in uploads:
        assert upload.connected.wait(10)
    # Every slow upload is in flight now, and stays so for READ_TIMEOUT_S.
    during = [timed_render(gateway.url, size) for size in (44, 45, 46)]
    still_uploading = sum(not upload.answer for upload in uploads)
    for upload in uploads:
        upload.join(timeout=3 * READ_TIMEOUT_S + 5)

    assert still_uploading == SLOW_UPLOADS  # the normal requests ran beside all of them
    assert [status for status, _ in during] == [200] * 3
    assert max(seconds for _, seconds in during) < 2 * usual + 1.0, (usual, during)
    statuses = [upload.status for upload in uploads]
    assert statuses == [408] * SLOW_UPLOADS, statuses
    for upload in uploads:
        assert b'"code":"request_timeout"' in upload.answer
        assert READ_TIMEOUT_S - 0.1 <= upload.seconds < READ_TIMEOUT_S + 2.0, upload.seconds
    assert requests.get(f"{gateway.url}/health", timeout=5).status_code == 200
