"""A real Redis for the tests (Debian's `redis-server`) and job workers beside it.

    with run_redis(tmp_path) as redis:          # on a free loopback port, AOF on, fsync always
        redis.url                                # redis://127.0.0.1:<port>/0
        redis.restart()                          # SIGTERM (it writes its AOF), then again
        redis.client()                           # a redis-py client

    with job_workers(env) as start:              # python -m gateway.worker, own session each
        worker = start()                          # .kill() (SIGKILL, its render pool too), .stop()

Everything is stopped when the block ends, whatever happened. Without `redis-server` on
PATH (`make sysdeps` installs it) the tests that need it skip and say why.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.s3 import free_port

REPO = Path(__file__).resolve().parents[2]


def need_redis() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make sysdeps installs Debian's)")


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> RedisServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
             "--dir", str(self.folder), "--appendonly", "yes", "--appendfsync", "always",
             "--save", "", "--protected-mode", "yes", "--logfile", str(self.folder / "log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited {self.proc.returncode}")
            try:
                if self.client().ping():
                    return self
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer in {timeout} s")

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()  # Redis writes and closes its append-only file
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self, down_s: float = 0.0) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()


@contextmanager
def run_redis(folder: Path | None = None) -> Iterator[RedisServer]:
    need_redis()
    own = folder is None
    folder = folder or Path(tempfile.mkdtemp(prefix="redis-"))
    server = RedisServer(folder)
    try:
        yield server.start()
    finally:
        server.stop()
        if own:
            shutil.rmtree(folder, ignore_errors=True)


class JobWorker:
    """`python -m gateway.worker` in a session of its own, its output in a log file."""

    def __init__(self, env: dict[str, str]) -> None:
        self.log_path = Path(tempfile.mkstemp(prefix="worker-", suffix=".log")[1])
        full = {**os.environ, **env}
        full.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gateway.worker"], cwd=REPO, env=full, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip

    def wait_taking_jobs(self, timeout: float = 90.0) -> JobWorker:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "taking jobs as" in self.log_text():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited {self.proc.returncode}:\n{self.log_text()}")
            time.sleep(0.1)
        raise RuntimeError(f"worker not taking jobs in {timeout} s:\n{self.log_text()}")

    def kill(self) -> None:
        """SIGKILL to the worker and its render processes: nothing said, nothing handed back."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stop(self, timeout: float = 40.0) -> int:
        """SIGTERM (finish or hand back), then SIGKILL for the whole group; the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return self.proc.returncode

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def job_workers(env: dict[str, str]) -> Iterator[Callable[[], JobWorker]]:
    """`start()` for the block: a worker taking jobs; every worker stops when it ends."""
    started: list[JobWorker] = []

    def start(wait: bool = True) -> JobWorker:
        worker = JobWorker(env)
        started.append(worker)
        return worker.wait_taking_jobs() if wait else worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()
            worker.log_path.unlink(missing_ok=True)
