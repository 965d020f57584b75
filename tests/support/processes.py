"""Looking at a running gateway from outside: its processes and the CPU they spend."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from urllib3 import encode_multipart_formdata

from tests.support.drawings import Drawing, model_free_form


def render_workers(master_pid: int) -> list[psutil.Process]:
    """The gateway's render worker processes (python -m gateway.rendering.pool_worker)."""
    found = []
    for proc in psutil.Process(master_pid).children(recursive=True):
        try:
            if "gateway.rendering.pool_worker" in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def gunicorn_workers(master_pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(master_pid).children() if p not in render_workers(master_pid)]


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    """User + system CPU of each process still readable (zombies keep theirs)."""
    seen = {}
    for proc in procs:
        try:
            times = proc.cpu_times()
            seen[proc.pid] = times.user + times.system
        except psutil.Error:
            continue
    return seen


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_until_rendering(
    procs: list[psutil.Process], min_cpu_s: float = 0.3, timeout: float = 20.0
) -> dict[int, float]:
    """Block until the processes together spent `min_cpu_s` more CPU; their CPU then."""
    start = cpu_seconds(procs)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = cpu_seconds(procs)
        if sum(now[p] - start.get(p, 0.0) for p in now) >= min_cpu_s:
            return now
        time.sleep(0.05)
    raise AssertionError(f"no render started within {timeout} s")


def raw_animate_request(d: Drawing, request_id: str, **options: object) -> bytes:
    """The bytes of a multipart POST /animate, for a client that will hang up mid-way."""
    body, content_type = encode_multipart_formdata(
        {**model_free_form(d, **options), "image": ("drawing.png", d.png, "image/png")}
    )
    head = (
        f"POST /animate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nX-Request-ID: {request_id}\r\n\r\n"
    )
    return head.encode() + body


def gunicorn_setting(name: str) -> float:
    """A value of gateway/gunicorn.conf.py, read in a child so this process stays untouched."""
    conf = Path(__file__).resolve().parents[2] / "gateway" / "gunicorn.conf.py"
    code = f"import runpy, sys; print(runpy.run_path(sys.argv[1])[{name!r}])"
    # Set, so that the config file creates no metrics folder of its own.
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": "/nonexistent"}
    return float(subprocess.check_output([sys.executable, "-c", code, str(conf)], env=env))
