"""Load test: throughput, latency, refusals and liveness of a running gateway, up to and
past its admission limit, with clients that storm or back off.

    python -m gateway.tools.loadtest --url http://127.0.0.1:5000 --image drawing.jpg \
        --concurrency 1,4,12,24,48 --duration 20 [--backoff] [--limit 12] \
        --json out.json --plot out.png [--plot-with other-run.json]

For each concurrency level, that many clients POST drawings to `/animate` back to back for
`--duration` seconds (gateway/tools/load_clients.py: one event loop, a new connection per
attempt) while another process GETs `/health` every 100 ms, as a liveness probe would.
After a 503 a client retries at once (a storm: impatient apps, the default) or, with
`--backoff`, honours `Retry-After` as the README asks of clients. Each level reports good
answers (200) per second and their latency, 503s (how many, how fast they came back, and
whether each carried Retry-After), the /health p99, and the CPU the service, the load test
and everything else used. With `--limit` (the admission limit: MAX_INFLIGHT + MAX_QUEUE per
gunicorn worker, 12 for `make run` on 2 cores) it also checks the levels past it against
issue 14's bounds and says which hold.

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
cores away from it, so the table also prints how many cores everything else used, the load
test's own share among them.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
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
from urllib.parse import urlencode, urlsplit

import numpy as np
import psutil
from PIL import Image

from gateway.tools.load_clients import Answer, Backoff, Crowd, HealthPinger, Storm, Target

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
    clients: str = "storm"  # the retry policy's name
    answers: list[Answer] = field(default_factory=list)
    health_ms: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    cpu_s: float | None = None  # the service's processes
    machine_cpu_s: float = 0.0  # every process on the machine, the load test's included
    loadtest_cpu_s: float = 0.0  # the clients and the pinger

    @property
    def statuses(self) -> Counter:
        return Counter(a.status for a in self.answers)

    @property
    def good(self) -> list[Answer]:
        return [a for a in self.answers if a.status == "200"]

    @property
    def refusals(self) -> list[Answer]:
        return [a for a in self.answers if a.status == "503"]

    @property
    def successes(self) -> int:
        return len(self.good)

    @property
    def requests(self) -> int:
        return len(self.answers)

    @property
    def throughput_rps(self) -> float:
        return self.successes / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def cpu_s_per_request(self) -> float | None:
        if self.cpu_s is None or not self.successes:
            return None
        return self.cpu_s / self.successes

    def summary(self) -> dict:
        p50, p95, p99 = percentiles([a.seconds for a in self.good], (50, 95, 99))
        refusals = self.refusals
        refusal_ms = [1000 * a.seconds for a in refusals]
        r50, r99 = percentiles(refusal_ms, (50, 99))
        h50, h99 = percentiles(self.health_ms, (50, 99))
        elapsed = self.elapsed_s or float("inf")
        return {
            "concurrency": self.concurrency,
            "clients": self.clients,
            "requests": self.requests,
            "good": self.successes,
            "errors": {k: v for k, v in sorted(self.statuses.items()) if k != "200"},
            "throughput_rps": round(self.throughput_rps, 4),
            "latency_s": {"p50": _round(p50), "p95": _round(p95), "p99": _round(p99)},
            "refused": len(refusals),
            "refused_per_s": round(len(refusals) / elapsed, 2),
            "refused_share": round(len(refusals) / self.requests, 4) if self.requests else 0.0,
            "refusal_ms": {
                "p50": _round(r50, 2),
                "p99": _round(r99, 2),
                "max": _round(max(refusal_ms, default=None), 2),
            },  # fmt: skip
            "refusals_without_retry_after": sum(a.retry_after_s is None for a in refusals),
            "health_ms": {
                "p50": _round(h50, 2),
                "p99": _round(h99, 2),
                "max": _round(max(self.health_ms, default=None), 2),
            },  # fmt: skip
            "cpu_s_per_request": _round(self.cpu_s_per_request),
            "others_cores": _round(others_cores(self), 3),
            "loadtest_cores": round(self.loadtest_cpu_s / elapsed, 3),
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
        policy: Storm | Backoff | None = None,
    ) -> None:
        self.target = Target.from_url(url)
        self.drawings = drawings
        self.cpu = cpu
        self.path = "/animate" + (f"?{urlencode({'motions': motions})}" if motions else "")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.policy = policy or Storm()
        self.crowd = Crowd(self.target, self.make_request, self.policy, REQUEST_TIMEOUT_S)

    def make_request(self) -> bytes:
        body, media_type = self.drawings.next()
        headers = {**self.headers, "Content-Type": media_type}
        return self.target.request("POST", self.path, body, headers)

    def run_level(self, concurrency: int, duration_s: float) -> Level:
        level = Level(concurrency, self.policy.name)
        meter = self.cpu.meter() if self.cpu else None
        machine_before, own_before = machine_busy_s(), time.process_time()
        with HealthPinger(self.target) as pinger:
            start = time.perf_counter()
            level.answers = self.crowd.run(concurrency, duration_s)
            # Attempts started before the end finish; the level lasts until the last one.
            level.elapsed_s = time.perf_counter() - start
            level.machine_cpu_s = machine_busy_s() - machine_before
            if meter:
                level.cpu_s = meter.stop()
            level.loadtest_cpu_s = time.process_time() - own_before
        level.health_ms = pinger.latencies_ms
        level.loadtest_cpu_s += pinger.cpu_s
        return level

    def warm_up(self, count: int) -> None:
        """`count` requests one after another, not measured (start-up costs, caches)."""
        if count:
            self.crowd.run(1, 0.0, attempts_per_client=count)


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent on anything but idling, so far."""
    t = psutil.cpu_times()
    return sum(
        getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal")
    )


def saturation(levels: Sequence[Level]) -> Level | None:
    """The level with the best throughput."""
    return max(levels, key=lambda lv: lv.throughput_rps, default=None)


def report(levels: Sequence[Level], cores: float, limit: int | None = None) -> dict:
    """The JSON document: per-level figures, the machine's limit and the efficiency, and,
    given the admission limit, the checks of the levels past it.

    The limit uses the CPU cost per request measured at saturation itself, so the
    efficiency is the share of the cores the service kept busy with requests there.
    """
    best = saturation(levels)
    cost = best.cpu_s_per_request if best else None
    cpu_limit = cores / cost if cost else None
    rows = [lv.summary() for lv in levels]
    result = {
        "clients": levels[0].clients if levels else None,
        "levels": rows,
        "cpu_limit_rps": _round(cpu_limit),
        "efficiency": _round(best.throughput_rps / cpu_limit) if cpu_limit else None,
    }
    if limit:
        result["admission_limit"] = limit
        result["checks"] = overload_checks(rows, limit)
    return result


# Issue 14's bounds for the levels past the admission limit.
GOOD_SHARE_OF_BEST = 0.9  # good answers/s, against the best level
P99_OVER_LIMIT_LEVEL = 1.3  # p99 of good answers, against the level at the limit
HEALTH_P99_MS = 50.0
REFUSAL_P99_MS = 50.0


def overload_checks(rows: Sequence[dict], limit: int) -> list[dict]:
    """Each bound of issue 14 at each level past `limit` clients: value, bound, held or not."""
    best = max((r["throughput_rps"] for r in rows), default=0.0)
    at_limit = next((r for r in rows if r["concurrency"] == limit), None)
    checks = []

    def check(row: dict, name: str, value: float | None, bound: float | None, ok: bool) -> None:
        checks.append({"concurrency": row["concurrency"], "check": name, "value": value,
                       "bound": bound, "ok": ok})  # fmt: skip

    for row in rows:
        if row["concurrency"] <= limit:
            continue
        good = row["throughput_rps"]
        check(row, "good answers/s", good, round(GOOD_SHARE_OF_BEST * best, 4),
              good >= GOOD_SHARE_OF_BEST * best)  # fmt: skip
        p99, ref = row["latency_s"]["p99"], at_limit and at_limit["latency_s"]["p99"]
        if at_limit is None:  # its bound is the p99 at the limit, which was not measured
            check(row, "p99 of good answers, s", p99, None, None)
        else:
            bound = round(P99_OVER_LIMIT_LEVEL * ref, 4) if ref else None
            check(row, "p99 of good answers, s", p99, bound,
                  None not in (p99, bound) and p99 <= bound)  # fmt: skip
        health = row["health_ms"]["p99"]
        check(row, "/health p99, ms", health, HEALTH_P99_MS,
              health is not None and health <= HEALTH_P99_MS)  # fmt: skip
        refusal = row["refusal_ms"]["p99"]
        check(row, "refusal p99, ms", refusal, REFUSAL_P99_MS,
              refusal is None or refusal <= REFUSAL_P99_MS)  # fmt: skip
        wrong = sum(n for status, n in row["errors"].items() if status != "503")
        wrong += row["refusals_without_retry_after"]
        check(row, "answers neither 200 nor 503 with Retry-After", wrong, 0, wrong == 0)
    return checks


def others_cores(level: Level) -> float | None:
    """Cores everything but the service (other jobs, this load test) kept busy, on average."""
    if level.cpu_s is None or not level.elapsed_s:
        return None
    return (level.machine_cpu_s - level.cpu_s) / level.elapsed_s


def print_table(result: dict, cores: float, out=sys.stdout) -> None:
    print(
        f"{'clients':>7} {'reqs':>6} {'good/s':>7} {'p50 s':>7} {'p99 s':>7} {'503/s':>7} "
        f"{'503 %':>6} {'refusal p99 ms':>14} {'health p99 ms':>13} {'other errors':>12} "
        f"{'CPU-s/good':>10} {'load test cores':>15} {'other cores':>11}",
        file=out,
    )
    for row in result["levels"]:
        lat = row["latency_s"]
        other = ",".join(f"{k}:{v}" for k, v in row["errors"].items() if k != "503") or "0"
        print(
            f"{row['concurrency']:>7} {row['requests']:>6} {row['throughput_rps']:>7.3f} "
            f"{_fmt(lat['p50'])} {_fmt(lat['p99'])} {row['refused_per_s']:>7.1f} "
            f"{100 * row['refused_share']:>6.1f} {_fmt(row['refusal_ms']['p99'], 14, 1)} "
            f"{_fmt(row['health_ms']['p99'], 13, 1)} {other:>12} "
            f"{_fmt(row['cpu_s_per_request'], 10)} {row['loadtest_cores']:>15.2f} "
            f"{_fmt(row['others_cores'], 11, 2)}",
            file=out,
        )
    if result["cpu_limit_rps"]:
        best = max(result["levels"], key=lambda r: r["throughput_rps"])
        print(
            f"machine limit: {cores:g} cores / {cores / result['cpu_limit_rps']:.3f} CPU-s per "
            f"request at saturation (concurrency {best['concurrency']}) = "
            f"{result['cpu_limit_rps']:.3f} rps; efficiency {result['efficiency']:.3f}",
            file=out,
        )
    else:
        print("efficiency: no service process found on this machine (see --pids)", file=out)
    limit = result.get("admission_limit")
    for c in result.get("checks", []):
        if c["ok"] is None:
            print(f"n/a  {c['concurrency']:>3} clients: {c['check']} = {c['value']} (its bound "
                  f"is the p99 at the limit: add {limit} to --concurrency)", file=out)  # fmt: skip
            continue
        print(
            f"{'ok  ' if c['ok'] else 'FAIL'} {c['concurrency']:>3} clients: {c['check']} = "
            f"{c['value']} (bound {c['bound']})",
            file=out,
        )


def _fmt(value: float | None, width: int = 7, digits: int = 3) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def plot(results: Sequence[dict], path: Path) -> None:
    """Good answers/s, latency of good answers, 503s/s, and /health and refusal p99 against
    clients, one line per run (e.g. a storm and a backoff run), the admission limit marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    (good_ax, lat_ax), (refused_ax, ms_ax) = axes
    colours = itertools.cycle(("tab:red", "tab:blue", "tab:green", "tab:purple"))
    for result, colour in zip(results, colours, strict=False):  # colours never run out
        rows, name = result["levels"], result.get("label") or result.get("clients") or "run"
        conc = [r["concurrency"] for r in rows]
        good_ax.plot(conc, [r["throughput_rps"] for r in rows], "o-", color=colour, label=name)
        lat_ax.plot(conc, [r["latency_s"]["p50"] for r in rows], "o-", color=colour,
                    label=f"{name} p50")  # fmt: skip
        lat_ax.plot(conc, [r["latency_s"]["p99"] for r in rows], "^:", color=colour,
                    label=f"{name} p99")  # fmt: skip
        refused_ax.plot(conc, [r["refused_per_s"] for r in rows], "o-", color=colour, label=name)
        ms_ax.plot(conc, [r["health_ms"]["p99"] for r in rows], "o-", color=colour,
                   label=f"{name}: /health p99")  # fmt: skip
        ms_ax.plot(conc, [r["refusal_ms"]["p99"] for r in rows], "s--", color=colour,
                   label=f"{name}: 503 p99")  # fmt: skip
    ms_ax.axhline(HEALTH_P99_MS, color="grey", ls="--", lw=1, label="50 ms")
    good_ax.set(ylabel="good answers / s (200)", title="throughput of good answers")
    lat_ax.set(ylabel="seconds", title="latency of good answers")
    refused_ax.set(ylabel="503 overloaded / s", title="refusals")
    ms_ax.set(ylabel="ms (log scale)", title="/health and refusal latency, p99")
    limit = next((r.get("admission_limit") for r in results if r.get("admission_limit")), None)
    every = sorted({r["concurrency"] for result in results for r in result["levels"]})
    for ax in axes.flat:
        ax.set_xscale("log", base=2)
        ax.set_xticks(every, [str(c) for c in every])
        ax.set_xlabel("concurrent clients")
        if ax is ms_ax:  # from a few ms to seconds: a log scale keeps 50 ms readable
            ax.set_yscale("log")
            ax.set_ylim(bottom=1)
        else:
            ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if limit:
            ax.axvline(limit, color="black", lw=0.8, alpha=0.5)
        ax.legend(loc="best", fontsize=8)
    if limit:
        good_ax.text(limit, 0, " admission limit", rotation=90, va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m gateway.tools.loadtest", description=__doc__.split("\n")[0]
    )
    p.add_argument("--url", required=True, help="the gateway's base URL")
    p.add_argument("--image", action="append", required=True, type=Path, help="a drawing (repeat)")
    p.add_argument("--concurrency", default="1,4,12,24,48", help="comma-separated client counts")
    p.add_argument("--duration", type=float, default=20.0, help="seconds per level")
    p.add_argument(
        "--backoff",
        action="store_true",
        help="clients honour Retry-After (default: a storm, retrying at once)",
    )
    p.add_argument(
        "--limit",
        type=int,
        help="the admission limit (MAX_INFLIGHT + MAX_QUEUE, times gunicorn workers):"
        " check the levels past it against issue 14's bounds",
    )
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--plot", type=Path, help="draw the results here (PNG)")
    p.add_argument(
        "--plot-with",
        type=Path,
        action="append",
        default=[],
        help="another run's --json, drawn beside this one (repeat)",
    )
    p.add_argument("--label", help="this run's name in the plot (default: storm or backoff)")
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
        p.error("--plot needs matplotlib: pip install -e '.[loadtest]' in the checkout")
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
    policy = Backoff() if args.backoff else Storm()
    drawings = VariedDrawings(args.image, args.vary)
    test = LoadTest(args.url, drawings, cpu, args.motions, args.api_key, policy)
    test.warm_up(args.warmup)
    levels = []
    for concurrency in args.levels:
        levels.append(test.run_level(concurrency, args.duration))
        print(f"concurrency {concurrency}: {levels[-1].requests} requests", file=sys.stderr)
    result = report(levels, cores, args.limit)
    if args.label:
        result["label"] = args.label
    print_table(result, cores)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        others = [json.loads(path.read_text()) for path in args.plot_with]
        plot([result, *others], args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
