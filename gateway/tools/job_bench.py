"""Benchmark of jobs (POST /jobs on Redis, python -m gateway.worker): latency and throughput.

    make run                        # in another terminal: its TorchServe is used
    python -m gateway.tools.job_bench [--workers 1 2] [--jobs 16] [--runs 5]

It starts a stack of its own beside make run's TorchServe (TORCHSERVE_URL, default
127.0.0.1:8080): a redis-server (loopback, a free port, AOF with fsync always, as
deployed), a gateway (`python -m gateway`, RENDER_WORKERS as set, storage in a temporary
folder) on a free port, and for each count in `--workers` that many workers. Then, at the
default options (the default motions, 256 px, 15 fps), the sample drawing with one pixel
changed per request so nothing comes from storage:
1. `sync`: POST /animate, one at a time (`--runs`): the request's p50, the reference;
2. `alone`: one job at a time, submit to done (polled every 20 ms): p50 and its ratio to
   `sync` (what the queue costs a lone request);
3. `burst`: `--jobs` jobs submitted at once: jobs per second until the last is done, and
   the p50 / p90 / max of submit-to-done.
Everything it started is stopped when it ends, whatever happened.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import requests
from PIL import Image

from gateway.tools.bench import SAMPLE, unique_drawing

POLL_S = 0.02


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(exits: ExitStack, command: list[str], env: dict, log: Path) -> subprocess.Popen:
    """A process in its own session, stopped (SIGTERM, then SIGKILL) when `exits` closes."""
    with log.open("ab") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip

    def stop() -> None:
        for sig, wait in ((signal.SIGTERM, 40), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue

    exits.callback(stop)
    return proc


def _until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (requests.RequestException, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} not up within {timeout:g} s")


class Stack:
    def __init__(self, exits: ExitStack, folder: Path) -> None:
        self.exits, self.folder = exits, folder
        redis_port, port = free_port(), free_port()
        (folder / "redis").mkdir()
        _start(exits, ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port),
                       "--dir", str(folder / "redis"), "--appendonly", "yes",
                       "--appendfsync", "always", "--save", ""],
               dict(os.environ), folder / "redis.log")  # fmt: skip
        self.env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                    "STORAGE_URL": f"file://{folder / 'animations'}",
                    "GUNICORN_BIND": f"127.0.0.1:{port}"}  # fmt: skip
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.url = f"http://127.0.0.1:{port}"
        _start(exits, [sys.executable, "-m", "gateway"], self.env, folder / "gateway.log")
        _until(lambda: requests.get(f"{self.url}/ready", timeout=5).ok, 180, "the gateway")
        self.workers: list[subprocess.Popen] = []

    def workers_to(self, n: int) -> None:
        log = self.folder / "workers.log"
        while len(self.workers) < n:
            self.workers.append(
                _start(self.exits, [sys.executable, "-m", "gateway.worker"], self.env, log)
            )
        _until(lambda: log.read_text().count("taking jobs as") >= n, 180, f"{n} worker(s)")


def _files(pixels: np.ndarray) -> dict:
    return {"image": ("drawing.png", unique_drawing(pixels), "image/png")}


def sync_p50(url: str, pixels: np.ndarray, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        reply = requests.post(f"{url}/animate", files=_files(pixels), timeout=120)
        reply.raise_for_status()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def one_job(url: str, pixels: np.ndarray) -> float:
    """Submit to done, seconds."""
    started = time.perf_counter()
    reply = requests.post(f"{url}/jobs", files=_files(pixels), timeout=60)
    reply.raise_for_status()
    status_url = f"{url}{reply.headers['Location']}"
    while True:
        body = requests.get(status_url, timeout=10).json()
        if body["status"] == "done":
            return time.perf_counter() - started
        if body["status"] == "failed":
            raise RuntimeError(f"job failed: {body['error']}")
        time.sleep(POLL_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--jobs", type=int, default=16, help="jobs in the burst")
    parser.add_argument("--runs", type=int, default=5, help="sync requests and lone jobs")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("job_bench: redis-server is not installed (make sysdeps)")
    pixels = np.asarray(Image.open(SAMPLE).convert("RGB"))
    with ExitStack() as exits, tempfile.TemporaryDirectory(prefix="job-bench-") as folder:
        stack = Stack(exits, Path(folder))
        reference = sync_p50(stack.url, pixels, args.runs)
        print(f"sync /animate p50 {reference:.3f} s ({args.runs} runs)")
        print("workers | alone p50 | ratio to sync | burst jobs/s | burst p50 | p90 | max")
        for n in sorted(args.workers):
            stack.workers_to(n)
            alone = float(np.median([one_job(stack.url, pixels)
                                     for _ in range(args.runs)]))  # fmt: skip
            started = time.perf_counter()
            with ThreadPoolExecutor(args.jobs) as pool:
                latencies = list(pool.map(lambda _: one_job(stack.url, pixels),
                                          range(args.jobs)))  # fmt: skip
            wall = time.perf_counter() - started
            p50, p90 = np.percentile(latencies, [50, 90])
            print(f"{n} | {alone:.3f} s | {alone / reference:.2f}x | {args.jobs / wall:.2f} | "
                  f"{p50:.2f} s | {p90:.2f} s | {max(latencies):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
