"""A real S3-compatible server for the tests: `moto[server]` over HTTP on a free loopback port.

`s3_server` (session scope) starts `python -m moto.server`, waits until it answers, and
stops its process group at the end whatever happened:

    s3_server.endpoint_url          # http://127.0.0.1:<port>
    s3_server.env                   # AWS_* variables for a client or a gateway to use
    s3_server.client()              # a boto3 S3 client talking to it
    s3_server.create_bucket(name)   # idempotent
    s3_server.stop() / .start()     # a fault test may take it down; start() brings it back
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MotoServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self.env = {**CREDENTIALS, "S3_ENDPOINT_URL": self.endpoint_url}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> None:
        """Start the server; one already running is kept (a fault test's `finally` may call
        this after failing before its stop: a second server would find the port taken, and
        the first would outlive the session)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        env = {**os.environ, **CREDENTIALS}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto server exited with {self.proc.returncode}")
            try:
                urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.endpoint_url} in {timeout} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass

    def client(self):
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )  # fmt: skip

    def create_bucket(self, name: str) -> None:
        client = self.client()
        try:
            client.create_bucket(Bucket=name)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass


@pytest.fixture(scope="session")
def s3_server() -> Iterator[MotoServer]:
    server = MotoServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
