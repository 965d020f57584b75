"""The real gateway for the tests: gunicorn with the gevent worker and gateway/gunicorn.conf.py.

    with run_gateway({"STORAGE_URL": "file:///tmp/x", "TORCHSERVE_URL": ...}) as gw:
        requests.get(f"{gw.url}/health")

`start_gateway(env)` picks a free loopback port, starts gunicorn in its own process group
with the given environment overrides on top of the test process's (a value of None removes
a variable), waits for /health and returns a `GatewayServer`; `.stop()` sends SIGTERM (the
graceful path), waits, then SIGKILLs the group, so nothing is left running. `.log_text()`
is everything gunicorn and the gateway wrote (JSON request lines included).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.support.s3 import free_port

REPO = Path(__file__).resolve().parents[2]
GUNICORN_CONF = REPO / "gateway" / "gunicorn.conf.py"


class GatewayServer:
    def __init__(self, env: dict[str, str | None], workers: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tempfile.mkstemp(prefix="gateway-", suffix=".log")[1])
        self.env = dict(os.environ)
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # each server gets its own
        self.env.update(
            {"GUNICORN_BIND": f"127.0.0.1:{self.port}", "GUNICORN_WORKERS": str(workers)}
        )
        for key, value in env.items():
            if value is None:
                self.env.pop(key, None)
            else:
                self.env[key] = str(value)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> GatewayServer:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF)],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"gunicorn exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                if requests.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"gateway did not answer /health in {timeout} s:\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 60.0) -> dict:
        """Poll /ready until 200; the last body otherwise, in the error."""
        deadline, body = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            reply = requests.get(f"{self.url}/ready", timeout=5)
            body = reply.json()
            if reply.status_code == 200:
                return body
            time.sleep(0.2)
        raise RuntimeError(f"gateway not ready in {timeout} s: {body}")

    def stop(self, timeout: float = 40.0) -> int | None:
        """SIGTERM (graceful drain), then SIGKILL for the whole group; the exit code."""
        if self.proc is None:
            return None
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers (render workers) too
        except ProcessLookupError:
            pass
        return self.proc.wait()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


def start_gateway(
    env: dict[str, str | None], workers: int = 1, timeout: float = 60.0
) -> GatewayServer:
    return GatewayServer(env, workers).start(timeout)


@contextmanager
def gateways() -> Iterator[Callable[..., GatewayServer]]:
    """`start(env, workers=1, ready=False)` for the block; every gateway stops when it ends.

    For fixtures of any scope: `with gateways() as start: yield start`.
    """
    started: list[GatewayServer] = []

    def start(env: dict[str, str | None], workers: int = 1, ready: bool = False,
              timeout: float = 60.0) -> GatewayServer:  # fmt: skip
        server = GatewayServer(env, workers)
        started.append(server)
        server.start(timeout)
        if ready:
            server.wait_ready(timeout)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
            server.log_path.unlink(missing_ok=True)


@contextmanager
def run_gateway(
    env: dict[str, str | None], workers: int = 1, ready: bool = False, timeout: float = 60.0
) -> Iterator[GatewayServer]:
    """One gateway for the block (waiting for /ready too with `ready=True`)."""
    with gateways() as start:
        yield start(env, workers, ready, timeout)


@pytest.fixture
def gateway_factory() -> Iterator[Callable[..., GatewayServer]]:
    """`gateway_factory(env, workers=1, ready=False)`; all are stopped after the test."""
    with gateways() as start:
        yield start
