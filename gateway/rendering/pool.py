"""A pool of render worker processes that gevent can wait on without blocking its hub.

Why not `concurrent.futures` or `multiprocessing.Pool`: both rely on helper threads and
locks, which gevent's monkey-patching turns into greenlets, and a blocking wait there can
freeze the whole worker. Here each worker is a fresh interpreter (`python -m
gateway.rendering.pool_worker`, never a fork of a process running a gevent hub), reached over its own
socketpair. The parent sends a pickled `(function, args)` frame and reads the answer from
the socket. Everything on the parent's side is gevent's own (sockets, subprocess, queue),
patched process or not, so that read yields to other greenlets and `/health` keeps
answering while every core renders.

A fresh worker first runs the pool's `setup` call (loading the motion table, say), then
says it is ready. A worker runs one task at a time; a task waits for a free worker at most `wait_s` (the
admission policy's queue timeout: the pool has no queue policy of its own, and admission
already bounds how many tasks can wait). Abandoning a task (its greenlet killed because the client
left or a sibling task failed) kills that worker process and starts a fresh one, so no CPU
is spent on answers nobody will read.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import gevent
from gevent import socket as gsocket
from gevent import subprocess as gsubprocess
from gevent.queue import Empty, Queue

from gateway.errors import ClientGone
from gateway.greenlets import client_gone, run_all
from gateway.rendering.pool_worker import recv_frame, send_frame

log = logging.getLogger("gateway.pool")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# One thread per process: the pool is the parallelism; BLAS and OpenCV threads on top
# oversubscribe (OpenCV's own pool cost more CPU per request at saturation;
# docs/BENCHMARKS.md, section quiet-2026-11-24).
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENCV_FOR_THREADS_NUM")  # fmt: skip


class WorkerCrashed(RuntimeError):
    """A render worker exited while running a task (killed, out of memory, segfault)."""


class NoWorkerFree(RuntimeError):
    """No render worker came free in time: all busy for long, or none could start."""


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # workers record no metrics of their own
    env.update({name: "1" for name in _THREAD_VARS})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


Setup = tuple[Callable, tuple]  # (function, args), run by each worker before it is ready


# A frame can be a rig (about 1.5 MB: one is sent to every render worker of a request) or
# its files; through the default 208 KiB socket buffer it took a dozen wakeups each way (6
# ms for a rig to two workers, 3 ms with this). The kernel caps it at net.core.wmem_max.
FRAME_BUFFER_BYTES = 4 << 20


class _Worker:
    def __init__(self, setup: Setup | None) -> None:
        parent, child = gsocket.socketpair()
        for end in (parent, child):
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                end.setsockopt(socket.SOL_SOCKET, option, FRAME_BUFFER_BYTES)
        try:
            self.proc = gsubprocess.Popen(
                [sys.executable, "-m", "gateway.rendering.pool_worker", str(child.fileno())],
                pass_fds=[child.fileno()], stdin=gsubprocess.DEVNULL, env=_worker_env(),
            )  # fmt: skip
        finally:
            child.close()
        self.sock = parent
        self.ready = False
        send_frame(self.sock, setup)  # the worker's first frame, read before it says ready

    def wait_ready(self) -> None:
        hello = recv_frame(self.sock)
        if hello != ("ready", self.proc.pid):
            raise WorkerCrashed(f"render worker sent {hello!r} instead of ready")
        self.ready = True

    def call(self, fn: Callable, args: tuple) -> tuple[str, Any]:
        """("ok", result) or ("err", the exception the task raised)."""
        try:
            send_frame(self.sock, (fn, args))
            return recv_frame(self.sock)
        except (EOFError, ConnectionError) as exc:
            raise WorkerCrashed(f"render worker {self.proc.pid} died: {exc}") from exc

    def kill(self) -> None:
        self.sock.close()
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, gsubprocess.TimeoutExpired):
            log.warning("render worker %s did not exit", self.proc.pid)

    def stop(self, timeout: float) -> None:
        """Ask politely (EOF on its socket), then kill."""
        self.sock.close()
        try:
            self.proc.wait(timeout=timeout)
        except gsubprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class CpuPool:
    """`size` worker processes; `run(fn, *args)` runs `fn(*args)` in one of them.

    `setup` is `(fn, args)` each worker runs once, before it takes tasks."""

    def __init__(self, size: int, wait_s: float = 30.0, setup: Setup | None = None) -> None:
        self.size = size
        self.wait_s = wait_s
        self.setup = setup
        self._idle: Queue = Queue()
        self._all: set[_Worker] = set()
        self._busy = 0
        self._closed = False
        self._started = False

    # ---- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        """Start the workers (idempotent); they join the pool as they finish warming up."""
        if self._started or self._closed:
            return
        self._started = True
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        if self._closed:
            return
        worker = _Worker(self.setup)
        self._all.add(worker)
        gevent.spawn(self._admit, worker)

    def _admit(self, worker: _Worker) -> None:
        try:
            worker.wait_ready()
        except (EOFError, OSError, WorkerCrashed) as exc:
            if not self._closed:
                log.error("render worker %s failed to start: %s", worker.proc.pid, exc)
                self._all.discard(worker)
                worker.kill()
                gevent.sleep(1.0)  # a worker that cannot start must not spin
                self._spawn()
            return
        self._idle.put(worker)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until every worker has warmed up (scripts and tests; servers use /ready)."""
        self.start()
        with gevent.Timeout(timeout, TimeoutError(f"render workers not ready in {timeout} s")):
            while self.ready < self.size:
                gevent.sleep(0.05)

    def close(self, timeout: float = 5.0) -> None:
        """Stop every worker; nothing is left running after this returns."""
        self._closed = True
        for worker in list(self._all):
            worker.stop(timeout)
        self._all.clear()

    # ---- running tasks -----------------------------------------------------------------
    @property
    def busy(self) -> int:
        return self._busy

    @property
    def idle(self) -> int:
        return self._idle.qsize()

    @property
    def ready(self) -> int:
        """Workers warmed up and alive (idle or busy)."""
        return sum(1 for w in self._all if w.ready and w.proc.poll() is None)

    def _take_worker(self) -> _Worker:
        """An idle, live worker; one that died while idle (OOM killer) is replaced."""
        while True:
            try:
                worker = self._idle.get(timeout=self.wait_s)
            except Empty:
                raise NoWorkerFree(
                    f"no render worker came free within {self.wait_s:g} s; retry shortly"
                ) from None
            if worker.proc.poll() is None:
                return worker
            self._replace(worker)

    def run(self, fn: Callable, *args: Any) -> Any:
        """Run `fn(*args)` in a worker; the caller's greenlet waits without blocking the hub."""
        self.start()
        worker = self._take_worker()
        self._busy += 1
        try:
            status, value = worker.call(fn, args)
        except BaseException:
            # Killed greenlet, crashed worker, broken pipe: this worker's state is unknown.
            self._replace(worker)
            raise
        finally:
            self._busy -= 1
        self._idle.put(worker)
        if status == "err":
            raise value
        return value

    def _replace(self, worker: _Worker) -> None:
        self._all.discard(worker)
        gevent.spawn(worker.kill)
        self._spawn()

    def map(self, fn: Callable, arg_lists: list[tuple], client: socket.socket | None) -> list:
        """Run `fn` over `arg_lists` in parallel; abandon all if one fails or the client leaves."""

        def left() -> ClientGone | None:
            return ClientGone("client closed the connection") if client_gone(client) else None

        # Each poll interval a gone client still costs every busy worker's CPU: keep it short.
        return run_all(partial(self.run, fn), arg_lists, poll_s=0.1, stop_when=left)
