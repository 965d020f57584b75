"""The worker's peek at a new connection says when the request reached the machine, so a
refusal's hold counts from then, not from when the event loop got round to it."""

from __future__ import annotations

import socket
import sys
import time
from types import SimpleNamespace

from gateway.ops.arrival import arrival, stamp
from gateway.ops.gunicorn_worker import GatewayWorker
from tests.support.stamps import kernel_stamping, needs_receive_stamps

pytestmark = needs_receive_stamps


def _peek_after(wait_s: float) -> tuple[bytes, float, socket.socket]:
    with kernel_stamping():
        return _peek_after_stamped(wait_s)


def _peek_after_stamped(wait_s: float) -> tuple[bytes, float, socket.socket]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stamp([listener])
    client = socket.create_connection(listener.getsockname())
    client.sendall(b"POST /animate HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
    time.sleep(wait_s)  # the event loop busy elsewhere
    conn, _ = listener.accept()
    worker = SimpleNamespace(cfg=SimpleNamespace(keepalive=2))
    head, arrived = GatewayWorker._peek(worker, conn, 8192)
    listener.close()
    client.close()
    return head, arrived, conn


def test_the_peek_dates_the_request_by_its_arrival_and_leaves_it_unread():
    head, arrived, conn = _peek_after(0.25)
    with conn:
        waited = time.monotonic() - arrived
        assert 0.24 <= waited < 1.0, waited
        assert head.startswith(b"POST /animate HTTP/1.1\r\n")
        assert conn.recv(8192) == head  # nothing was consumed


def test_a_request_taken_at_once_is_dated_now():
    _, arrived, conn = _peek_after(0.0)
    conn.close()
    assert 0.0 <= time.monotonic() - arrived < 0.05


def test_without_a_believable_stamp_the_arrival_is_now():
    assert abs(arrival([]) - time.monotonic()) < 0.01
    future = time.time() + 30
    stamp = (socket.SOL_SOCKET, 35, int(future).to_bytes(8, sys.byteorder) + bytes(8))
    assert abs(arrival([stamp]) - time.monotonic()) < 0.01
