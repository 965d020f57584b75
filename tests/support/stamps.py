"""Tests of the kernel's receive stamps (gateway/ops/arrival.py) need them turned on first."""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterator

import pytest

from gateway.ops.arrival import ANCILLARY_SIZE, stamp

# Receive stamps (SO_TIMESTAMPNS) are Linux's: elsewhere `arrival` always answers "now".
needs_receive_stamps = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's receive stamps are Linux's"
)


@contextlib.contextmanager
def kernel_stamping() -> Iterator[None]:
    """Receive stamps on while the block runs: Linux turns them on a moment after the first
    socket asks (and off after the last one closes), so a stamped connection is held open
    from the first stamped bytes to the end of the block."""
    listener = socket.create_server(("127.0.0.1", 0))
    probes: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 5
        while True:
            probe = socket.create_connection(listener.getsockname())
            probes.append(probe)
            stamp([probe])
            conn, _ = listener.accept()
            with conn:
                conn.sendall(b"x")
                _, ancillary, _, _ = probe.recvmsg(1, ANCILLARY_SIZE)
            if ancillary:
                break
            if time.monotonic() > deadline:
                pytest.fail("the kernel does not stamp received bytes")
            time.sleep(0.01)
        yield
    finally:
        for probe in probes:
            probe.close()
        listener.close()
