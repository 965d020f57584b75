"""Load test: concurrent latency, throughput and CPU efficiency of a running gateway.

    python -m gateway.loadtest --url http://127.0.0.1:5000 --image drawing.png \
        --concurrency 1,2,4,8 --duration 30 --json out.json --plot out.png

For each concurrency level, that many client threads POST drawings to `/animate` back to
back for `--duration` seconds while one more thread pings `/health` every 100 ms. Each
level reports requests, errors by status, throughput, latency percentiles and the `/health`
p99 (the liveness probe must stay fast while every core renders).

The gateway answers a repeated drawing from storage (keys are the image's content hash and
the options), so each request carries a unique file: a counter in a PNG tEXt chunk or a
JPEG comment, which changes the bytes and not one pixel, so every request costs a full
render of the same drawing. `--no-vary` sends the images unchanged (the cached path).

Efficiency: when the service runs on this machine, the CPU time of its processes (the ones
listening on the gateway and TorchServe ports, and their children, or `--pids` /
`--process-pattern`) is measured per level. The machine's limit is
`cores / CPU-seconds per request`, with the cost per request measured at saturation (the
level with the best throughput), and the efficiency is that throughput over the limit: the
share of the cores the service kept busy serving requests. Other work on the machine takes
cores away from it, so the table also prints how many cores everything else used.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import re
import struct
import sys
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import psutil
import requests
from PIL import Image

HEALTH_INTERVAL_S = 0.1
REQUEST_TIMEOUT_S = 120.0
TORCHSERVE_PORTS = (8080, 8081)


class VariedDrawings:
    """Hands out the drawings in turn, each made unique by a counter in its metadata.

    PNG gets a tEXt chunk, JPEG a comment segment: the bytes (and so the storage key)
    differ per request while the pixels, and so the work, stay exactly the same.
    """

    def __init__(self, images: Sequence[Path], vary: bool = True) -> None:
        self._raw = [_png_or_jpeg(p.read_bytes()) for p in images]
        self._vary = vary
        self._run = uuid.uuid4().hex  # so that no earlier run's request is in storage either
        self._count = 0
        self._lock = threading.Lock()

    def next(self) -> tuple[bytes, str]:
        with self._lock:
            n = self._count
            self._count += 1
        body = self._raw[n % len(self._raw)]
        media_type = "image/png" if body.startswith(PNG_SIGNATURE) else "image/jpeg"
        if not self._vary:
            return body, media_type
        tag = f"loadtest {self._run} request {n}".encode()
        if media_type == "image/png":
            return with_png_text(body, tag), media_type
        return with_jpeg_comment(body, tag), media_type


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_or_jpeg(data: bytes) -> bytes:
    """The file itself when PNG or JPEG; anything else Pillow reads, as PNG."""
    if data.startswith((PNG_SIGNATURE, b"\xff\xd8")):
        return data
    out = io.BytesIO()
    Image.open(io.BytesIO(data)).save(out, format="PNG")
    return out.getvalue()


def with_png_text(png: bytes, text: bytes) -> bytes:
    """`png` with a tEXt chunk right after IHDR (signature 8 bytes + IHDR chunk 25)."""
    body = b"tEXt" + b"Comment\0" + text
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
    return png[:33] + chunk + png[33:]


def with_jpeg_comment(jpeg: bytes, text: bytes) -> bytes:
    """`jpeg` with a COM segment after its APPn segments (EXIF stays where readers look)."""
    at = 2
    while jpeg[at] == 0xFF and 0xE0 <= jpeg[at + 1] <= 0xEF:
        at += 2 + struct.unpack(">H", jpeg[at + 2 : at + 4])[0]
    return jpeg[:at] + b"\xff\xfe" + struct.pack(">H", len(text) + 2) + text + jpeg[at:]


@dataclass
class Level:
    """What one concurrency level measured."""

    concurrency: int
    latencies_s: list[float] = field(default_factory=list)  # successful requests
    failed_latencies_s: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    health_ms: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    cpu_s: float | None = None  # the service's processes
    machine_cpu_s: float = 0.0  # every process on the machine, the load test's included

    @property
    def successes(self) -> int:
        return len(self.latencies_s)

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())

    @property
    def throughput_rps(self) -> float:
        return self.successes / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def cpu_s_per_request(self) -> float | None:
        if self.cpu_s is None or not self.successes:
            return None
        return self.cpu_s / self.successes

    def summary(self) -> dict:
        # Latency of what the client wanted: successful renders; failures only if none.
        sample = self.latencies_s or self.failed_latencies_s
        p50, p95, p99 = percentiles(sample, (50, 95, 99))
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "errors": {k: v for k, v in sorted(self.statuses.items()) if k != "200"},
            "throughput_rps": round(self.throughput_rps, 4),
            "latency_s": {"p50": _round(p50), "p95": _round(p95), "p99": _round(p99)},
            "health_p99_ms": _round(percentiles(self.health_ms, (99,))[0], 2),
        }


def percentiles(sample: Sequence[float], qs: Iterable[float]) -> list[float | None]:
    """Linear-interpolated percentiles; None for an empty sample."""
    qs = list(qs)
    if not sample:
        return [None] * len(qs)
    return [float(v) for v in np.percentile(np.asarray(sample, dtype=float), qs)]


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


# --- the service's CPU -------------------------------------------------------------


class ServiceCPU:
    """CPU seconds spent by the service's processes: its roots and all their descendants."""

    def __init__(self, find_roots: Callable[[], list[psutil.Process]]) -> None:
        self._find_roots = find_roots

    def processes(self) -> list[psutil.Process]:
        seen: dict[int, psutil.Process] = {}
        for root in self._find_roots():
            try:
                for proc in [root, *root.children(recursive=True)]:
                    seen.setdefault(proc.pid, proc)
            except psutil.Error:
                continue
        return list(seen.values())

    def sample(self) -> dict[tuple[int, float], float]:
        """(pid, start time) -> user + system seconds of each process, its own only.

        Reaped children's times are left out on purpose: a recycled gunicorn worker or a
        replaced render worker would bring its whole life's CPU into the level it died in.
        """
        shot = {}
        for proc in self.processes():
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    shot[(proc.pid, proc.create_time())] = t.user + t.system
            except psutil.Error:
                continue
        return shot

    def meter(self, interval_s: float = 0.5) -> CPUMeter:
        return CPUMeter(self, interval_s)


class CPUMeter:
    """Samples the service's processes until stopped, so a process that exits mid-level
    still counts up to its last sample, and one that starts counts from zero."""

    def __init__(self, service: ServiceCPU, interval_s: float) -> None:
        self._service = service
        self._first = service.sample()
        self._last = dict(self._first)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval_s,), daemon=True)
        self._thread.start()

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self._last.update(self._service.sample())

    def stop(self) -> float:
        """CPU seconds spent since the meter started."""
        self._stop.set()
        self._thread.join()
        self._last.update(self._service.sample())
        return sum(cpu - self._first.get(key, 0.0) for key, cpu in self._last.items())


def listeners(ports: Iterable[int]) -> list[psutil.Process]:
    """Processes with a TCP socket listening on one of the ports (any local address)."""
    wanted = set(ports)
    pids = {
        c.pid
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in wanted and c.pid
    }
    return _processes(pids)


def matching(pattern: str) -> list[psutil.Process]:
    """Processes whose command line matches the regular expression."""
    regex = re.compile(pattern)
    me = os.getpid()
    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["pid"] != me and regex.search(cmdline):
            pids.add(proc.info["pid"])
    return _processes(pids)


def _processes(pids: Iterable[int]) -> list[psutil.Process]:
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return procs


# --- the load ----------------------------------------------------------------------


class LoadTest:
    def __init__(
        self,
        url: str,
        drawings: VariedDrawings,
        cpu: ServiceCPU | None,
        motions: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.base = url.rstrip("/")
        self.drawings = drawings
        self.cpu = cpu
        self.params = {"motions": motions} if motions else {}
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def post(self, session: requests.Session) -> tuple[str, float]:
        body, media_type = self.drawings.next()
        start = time.perf_counter()
        try:
            reply = session.post(
                f"{self.base}/animate",
                data=body,
                params=self.params,
                headers={**self.headers, "Content-Type": media_type},
                timeout=REQUEST_TIMEOUT_S,
            )
            reply.content  # noqa: B018 - read the whole body before stopping the clock
            status = str(reply.status_code)
        except requests.Timeout:
            status = "timeout"
        except requests.RequestException:
            status = "connection_error"
        return status, time.perf_counter() - start

    def run_level(self, concurrency: int, duration_s: float) -> Level:
        level = Level(concurrency)
        lock = threading.Lock()
        stop = threading.Event()

        def client() -> None:
            with requests.Session() as session:
                while time.perf_counter() < deadline:
                    status, latency = self.post(session)
                    with lock:
                        level.statuses[status] += 1
                        ok = status == "200"
                        (level.latencies_s if ok else level.failed_latencies_s).append(latency)

        def pinger() -> None:
            with requests.Session() as session:
                while not stop.is_set():
                    start = time.perf_counter()
                    try:
                        session.get(f"{self.base}/health", timeout=10).content  # noqa: B018
                        level.health_ms.append(1000 * (time.perf_counter() - start))
                    except requests.RequestException:
                        level.health_ms.append(10_000.0)
                    stop.wait(max(0.0, HEALTH_INTERVAL_S - (time.perf_counter() - start)))

        meter = self.cpu.meter() if self.cpu else None
        machine_before = machine_busy_s()
        start = time.perf_counter()
        deadline = start + duration_s
        threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
        health = threading.Thread(target=pinger, daemon=True)
        for t in [health, *threads]:
            t.start()
        for t in threads:
            t.join()
        # Requests started before the deadline finish; the level lasts until the last one.
        level.elapsed_s = time.perf_counter() - start
        level.machine_cpu_s = machine_busy_s() - machine_before
        if meter:
            level.cpu_s = meter.stop()
        stop.set()
        health.join()
        return level

    def warm_up(self, count: int) -> None:
        with requests.Session() as session:
            for _ in range(count):
                self.post(session)


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent on anything but idling, so far."""
    t = psutil.cpu_times()
    return sum(
        getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal")
    )


def saturation(levels: Sequence[Level]) -> Level | None:
    """The level with the best throughput."""
    return max(levels, key=lambda lv: lv.throughput_rps, default=None)


def report(levels: Sequence[Level], cores: float) -> dict:
    """The JSON document: per-level figures, the machine's limit and the efficiency.

    The limit uses the CPU cost per request measured at saturation itself, so the
    efficiency is the share of the cores the service kept busy with requests there.
    """
    best = saturation(levels)
    cost = best.cpu_s_per_request if best else None
    limit = cores / cost if cost else None
    return {
        "levels": [lv.summary() for lv in levels],
        "cpu_limit_rps": _round(limit),
        "efficiency": _round(best.throughput_rps / limit) if limit else None,
    }


def others_cores(level: Level) -> float | None:
    """Cores everything but the service (other jobs, this load test) kept busy, on average."""
    if level.cpu_s is None or not level.elapsed_s:
        return None
    return (level.machine_cpu_s - level.cpu_s) / level.elapsed_s


def print_table(levels: Sequence[Level], result: dict, cores: float, out=sys.stdout) -> None:
    print(
        f"{'conc':>4} {'reqs':>5} {'errors':>14} {'rps':>7} {'p50 s':>7} {'p95 s':>7} "
        f"{'p99 s':>7} {'health p99 ms':>13} {'cpu s/req':>9} {'others cores':>12}",
        file=out,
    )
    for lv, row in zip(levels, result["levels"], strict=True):
        lat = row["latency_s"]
        errors = ",".join(f"{k}:{v}" for k, v in row["errors"].items()) or "0"
        cost = lv.cpu_s_per_request
        others = others_cores(lv)
        print(
            f"{lv.concurrency:>4} {row['requests']:>5} {errors:>14} {row['throughput_rps']:>7.3f} "
            f"{_fmt(lat['p50'])} {_fmt(lat['p95'])} {_fmt(lat['p99'])} "
            f"{_fmt(row['health_p99_ms'], 13, 1)} {_fmt(cost, 9)} {_fmt(others, 12, 2)}",
            file=out,
        )
    if result["cpu_limit_rps"]:
        print(
            f"machine limit: {cores:g} cores / {cores / result['cpu_limit_rps']:.3f} CPU-s per "
            f"request at saturation (concurrency {saturation(levels).concurrency}) = "
            f"{result['cpu_limit_rps']:.3f} rps; efficiency {result['efficiency']:.3f}",
            file=out,
        )
    else:
        print("efficiency: no service process found on this machine (see --pids)", file=out)


def _fmt(value: float | None, width: int = 7, digits: int = 3) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def plot(result: dict, path: Path, others_cores: Sequence[float | None] = ()) -> None:
    """Latency percentiles and throughput against concurrency; with `others_cores`, bars of
    the cores other work on the machine took at each level (what the service did not get)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["levels"]
    conc = [r["concurrency"] for r in rows]
    fig, (lat_ax, rps_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for q, style in (("p50", "o-"), ("p95", "s--"), ("p99", "^:")):
        lat_ax.plot(conc, [r["latency_s"][q] for r in rows], style, label=q)
    lat_ax.set(xlabel="concurrent clients", ylabel="latency (s)", title="POST /animate latency")
    health = ", ".join(f"{r['health_p99_ms']}" for r in rows)
    lat_ax.text(0.02, 0.97, f"/health p99 (ms): {health}", transform=lat_ax.transAxes, va="top")
    rps_ax.plot(conc, [r["throughput_rps"] for r in rows], "o-", label="measured")
    if result["cpu_limit_rps"]:
        rps_ax.axhline(result["cpu_limit_rps"], color="grey", ls="--", label="CPU limit")
    rps_ax.set(xlabel="concurrent clients", ylabel="requests / s", title="throughput")
    top = max([r["throughput_rps"] for r in rows] + [result["cpu_limit_rps"] or 0.0])
    rps_ax.set_ylim(0, 1.3 * top or 1.0)  # headroom for the legends
    if any(v is not None for v in others_cores):
        cores_ax = rps_ax.twinx()
        widths = [0.25 * c for c in conc]  # even on the log axis
        heights = [v or 0.0 for v in others_cores]
        cores_ax.bar(conc, heights, width=widths, color="grey", alpha=0.25, label="other work")
        cores_ax.set_ylabel("cores used by other work")
        cores_ax.set_ylim(0, max(2.0, *heights))
        cores_ax.legend(loc="upper left")
    for ax in (lat_ax, rps_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(conc, [str(c) for c in conc])
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m gateway.loadtest", description=__doc__.split("\n")[0]
    )
    p.add_argument("--url", required=True, help="the gateway's base URL")
    p.add_argument("--image", action="append", required=True, type=Path, help="a drawing (repeat)")
    p.add_argument("--concurrency", default="1,2,4,8,16", help="comma-separated client counts")
    p.add_argument("--duration", type=float, default=30.0, help="seconds per level")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--plot", type=Path, help="draw latency and throughput here (PNG)")
    p.add_argument("--motions", help="the motions option sent with each request")
    p.add_argument("--api-key", default=os.environ.get("API_KEY"), help="bearer token")
    p.add_argument("--warmup", type=int, default=2, help="requests sent before measuring")
    p.add_argument("--no-vary", dest="vary", action="store_false", help="repeat images as is")
    p.add_argument("--cores", type=float, help="cores the service may use (default: all)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--pids", help="comma-separated pids of the service (children included)")
    who.add_argument("--process-pattern", help="regex over command lines of the service")
    p.add_argument(
        "--service-ports",
        help="ports whose listeners are the service (default: the URL's port and 8080, 8081)",
    )
    args = p.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if not args.levels or min(args.levels) < 1:
        p.error("--concurrency needs positive integers")
    if args.plot and importlib.util.find_spec("matplotlib") is None:  # before, not after a run
        p.error("--plot needs matplotlib: pip install 'drawn-animation[plot]'")
    return args


def service_cpu(args: argparse.Namespace) -> ServiceCPU:
    if args.pids:
        pids = [int(p) for p in args.pids.split(",")]
        return ServiceCPU(lambda: _processes(pids))
    if args.process_pattern:
        return ServiceCPU(lambda: matching(args.process_pattern))
    if args.service_ports:
        ports = [int(p) for p in args.service_ports.split(",")]
    else:
        ports = [urlsplit(args.url).port or 80, *TORCHSERVE_PORTS]
    return ServiceCPU(lambda: listeners(ports))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cpu = service_cpu(args)
    if not cpu.processes():
        cpu = None
    cores = args.cores or float(len(os.sched_getaffinity(0)))
    test = LoadTest(
        args.url, VariedDrawings(args.image, args.vary), cpu, args.motions, args.api_key
    )
    test.warm_up(args.warmup)
    levels = []
    for concurrency in args.levels:
        levels.append(test.run_level(concurrency, args.duration))
        print(f"concurrency {concurrency}: {levels[-1].requests} requests", file=sys.stderr)
    result = report(levels, cores)
    print_table(levels, result, cores)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(result, args.plot, [others_cores(lv) for lv in levels])
    return 0


if __name__ == "__main__":
    sys.exit(main())
