"""A real gateway (gunicorn + gevent) with local-folder storage and no TorchServe behind it.

`offline_gateway` (session scope) serves the fault, bad-input and security tests that
exercise the gateway itself: they send the `bbox` and `keypoints` options (see
tests/support/drawings.py), so renders are real while no model is called, and TorchServe's
URLs point at a loopback port nobody listens on.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.s3 import free_port


def offline_env(storage_dir: Path, **overrides: str | None) -> dict[str, str | None]:
    nobody = f"http://127.0.0.1:{free_port()}"  # connection refused: "TorchServe is down"
    return {
        "STORAGE_URL": f"file://{storage_dir}",
        "TORCHSERVE_URL": nobody,
        "TORCHSERVE_MANAGEMENT_URL": nobody,
        "API_KEY": None,
        "RENDER_WORKERS": "2",
        **overrides,
    }


@pytest.fixture(scope="session")
def offline_gateway() -> Iterator[GatewayServer]:
    """`.storage_dir` holds the GIFs; `.temp_dir` is its TMPDIR, to see what it leaves there."""
    root = Path(tempfile.mkdtemp(prefix="offline-gateway-"))
    storage_dir, temp_dir = root / "gifs", root / "tmp"
    temp_dir.mkdir()
    try:
        with run_gateway(offline_env(storage_dir, TMPDIR=str(temp_dir))) as server:
            server.storage_dir, server.temp_dir = storage_dir, temp_dir
            yield server
    finally:
        shutil.rmtree(root, ignore_errors=True)
