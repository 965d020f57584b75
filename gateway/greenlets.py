"""Run calls side by side in greenlets and re-raise the first failure in the caller.

A greenlet that dies of an exception is also reported by gevent's hub, which prints a
plain-text traceback into the JSON log. Here each call's exception is caught inside its
greenlet and raised again in the request's own greenlet, where the error handlers turn it
into a JSON reply and one log line.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import gevent
from gevent import select as gselect


def _captured(fn: Callable, args: tuple) -> tuple[BaseException | None, Any]:
    try:
        return None, fn(*args)
    except Exception as exc:  # raised again by run_all, in the caller's greenlet
        return exc, None


def run_all(
    fn: Callable,
    arg_lists: list[tuple],
    *,
    poll_s: float | None = None,
    stop_when: Callable[[], BaseException | None] | None = None,
) -> list:
    """`[fn(*args) for args in arg_lists]`, each in its own greenlet.

    The first failure kills the others and is raised here. With `poll_s`, `stop_when()` is
    asked every `poll_s` seconds; an exception it returns abandons the calls the same way.
    """
    jobs = [gevent.spawn(_captured, fn, args) for args in arg_lists]
    try:
        while True:
            gevent.joinall(jobs, timeout=poll_s)
            for job in jobs:
                if job.ready() and job.value[0] is not None:
                    raise job.value[0]
            if all(job.ready() for job in jobs):
                return [job.value[1] for job in jobs]
            reason = stop_when() if stop_when else None
            if reason is not None:
                raise reason
    except BaseException:
        gevent.killall(jobs, block=True)
        raise


def client_gone(client: socket.socket | None) -> bool:
    """True when the client closed its connection (EOF), without consuming any of its bytes."""
    if client is None:
        return False
    try:
        readable, _, _ = gselect.select([client], [], [], 0)
        if not readable:
            return False
        return client.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):  # reset or already closed
        return True


def client_address(client: socket.socket | None) -> str | None:
    """The address the client connects from (admission's fairness key); None when unknown."""
    if client is None:
        return None
    try:
        return str(client.getpeername()[0])
    except (OSError, IndexError):
        return None
