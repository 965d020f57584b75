"""When bytes reached this machine, by the kernel's own receive stamp.

Linux stamps each packet as it arrives (`SO_TIMESTAMPNS`, absent from Python's socket
module), and a `recvmsg` (a peek included) reads the stamp with the bytes. A program whose
event loop waits for a core can then still tell when a request, or an answer, came in:
the gateway's refusals count their hold from the request's arrival, and the load test's
clients time an answer to its arrival, not to when their own loop got round to it. The
kernel turns stamping on a moment after the first socket asks for it (and off after the
last one closes): bytes that come unstamped count as arriving when they are read.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable, Iterable

SO_TIMESTAMPNS = 35 if sys.platform.startswith("linux") else None
_TIMESPEC = struct.Struct("@qq")
ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)  # recvmsg's ancbufsize for the stamp


def stamp(sockets: Iterable[socket.socket]) -> None:
    """Ask the kernel to stamp what arrives on `sockets` (connections a listener accepts
    inherit it); a no-op where there is no such option or no kernel socket."""
    if SO_TIMESTAMPNS is None:
        return
    for sock in sockets:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except (OSError, AttributeError):  # not a kernel socket (a test double)
            pass


def arrival(
    ancillary: list[tuple[int, int, bytes]], clock: Callable[[], float] = time.monotonic
) -> float:
    """`clock()` time at which the bytes of a recvmsg arrived, from the kernel's stamp in
    its `ancillary` data; now when there is none (or it is not believable)."""
    now, now_wall = clock(), time.time()
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            age = now_wall - (seconds + nanoseconds / 1e9)
            # The wall clock may have been stepped meanwhile: an age that cannot be is ignored.
            if 0.0 <= age < 60.0:
                return now - age
    return now
