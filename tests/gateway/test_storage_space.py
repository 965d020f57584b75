"""`file://` storage on a small disk: /ready turns 503 naming storage once its free space is
below STORAGE_MIN_FREE_BYTES, and back to 200 when space returns, with no restart.

The disk is a 16 MiB tmpfs mounted for the test (root only; elsewhere the test skips and
says why). Real gunicorn + gevent, real TorchServe: every other check of /ready passes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

pytestmark = pytest.mark.integration
MiB = 1024 * 1024
FLOOR = 4 * MiB


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def ready(url: str) -> tuple[int, list[str]]:
    reply = requests.get(f"{url}/ready", timeout=10)
    return reply.status_code, reply.json()["missing"]


def wait_for(url: str, status: int, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (found := ready(url))[0] != status and time.monotonic() < deadline:
        time.sleep(0.2)
    assert found[0] == status, found
    return found[1]


def test_ready_follows_the_free_space_of_the_storage_disk(small_disk, model_env, gateway_factory):
    storage = small_disk / "animations"
    gateway = gateway_factory({**model_env, "STORAGE_URL": f"file://{storage}",
                               "STORAGE_MIN_FREE_BYTES": str(FLOOR), "RENDER_WORKERS": "1"},
                              ready=True)  # fmt: skip
    filler = small_disk / "filler"
    with filler.open("wb") as out:  # leave 1 MiB: below the floor, though not quite full
        out.write(os.urandom(shutil.disk_usage(small_disk).free - MiB))
    missing = wait_for(gateway.url, 503)
    assert len(missing) == 1 and missing[0].startswith("storage"), missing
    assert str(storage) in missing[0] and "STORAGE_MIN_FREE_BYTES" in missing[0]

    filler.unlink()  # space returns
    assert wait_for(gateway.url, 200) == []
