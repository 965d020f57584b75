"""Entry point of one render worker process: `python -m gateway.rendering.pool_worker FD`.

Runs the pool's setup call (the first frame: `(function, args)` or None), says ready, then
reads `(function, args)` frames from the socket FD, runs them, writes `("ok", result)` or
`("err", exception)` back. Exits when the gateway closes the socket, and dies with it if
the gateway is killed outright.

The frames (a length, then a pickle) are read and written by `send_frame` / `recv_frame`
here, on both ends: the pool imports them from this module, so a worker process loads
nothing of the gateway's HTTP side, gevent included.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import socket
import struct
import sys
from typing import Any

_HEADER = struct.Struct("!Q")


def send_frame(sock: socket.socket, obj: object) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def recv_frame(sock: socket.socket) -> Any:
    """The next frame's object; EOFError when the other end closed."""
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    return pickle.loads(_recv_exactly(sock, size))


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError("render worker closed its socket")
        got += n
    return bytes(buf)


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies, so no orphan renders on."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve(sock: socket.socket) -> None:
    setup = recv_frame(sock)  # heavy imports and warm-up happen here, before "ready"
    if setup is not None:
        fn, args = setup
        fn(*args)
    send_frame(sock, ("ready", os.getpid()))
    while True:
        try:
            fn, args = recv_frame(sock)
        except (EOFError, ConnectionError):
            return
        try:
            reply = ("ok", fn(*args))
        except Exception as exc:  # the gateway decides what an exception means
            reply = ("err", exc)
        try:
            send_frame(sock, reply)
        except (TypeError, AttributeError, pickle.PicklingError):  # an unpicklable exception
            send_frame(sock, ("err", RuntimeError(repr(reply[1]))))


# Renders yield the CPU to the gateway's own process: its event loop answers /health and
# moves bytes in a few milliseconds, which it cannot do while waiting for a core.
NICENESS = 5


def main() -> None:
    # Ctrl-C reaches the whole process group; the gateway decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(NICENESS)
    _die_with_parent()
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.setblocking(True)  # the gateway's end is non-blocking under gevent; this one waits
    serve(sock)


if __name__ == "__main__":
    main()
