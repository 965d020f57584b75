"""The load-test CLI against a real loopback HTTP service whose costs are known."""

import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import requests
from PIL import Image

from gateway import loadtest

CPU_MS = 30


@pytest.fixture(scope="module")
def busy_server():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.deploy.busy_server", str(CPU_MS)], stdout=subprocess.PIPE
    )
    try:
        port = int(proc.stdout.readline())
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def drawing(tmp_path_factory):
    path = tmp_path_factory.mktemp("img") / "drawing.png"
    Image.new("RGB", (64, 48), "white").save(path)
    return path


def stats(url: str) -> dict:
    return requests.get(f"{url}/stats", timeout=5).json()


def test_json_counts_every_request_and_status(busy_server, drawing, tmp_path):
    proc, url = busy_server
    before = stats(url)
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    argv = [
        "--url", url, "--image", str(drawing), "--concurrency", "1,3", "--duration", "1.5",
        "--warmup", "0", "--pids", str(proc.pid), "--json", str(out), "--plot", str(png),
    ]  # fmt: skip
    assert loadtest.main(argv) == 0
    after = stats(url)
    result = json.loads(out.read_text())

    assert set(result) == {"levels", "cpu_limit_rps", "efficiency"}
    assert [lv["concurrency"] for lv in result["levels"]] == [1, 3]
    for level in result["levels"]:
        assert set(level) == {
            "concurrency", "requests", "errors", "throughput_rps", "latency_s", "health_p99_ms",
        }  # fmt: skip
        assert set(level["latency_s"]) == {"p50", "p95", "p99"}
        assert set(level["errors"]) <= {"503"}
        ok = level["requests"] - sum(level["errors"].values())
        # Throughput counts successes over a span of at least the duration.
        assert 0 < level["throughput_rps"] <= ok / 1.5
        assert level["throughput_rps"] >= ok / (1.5 + 1.0)
        # Two thirds are refused at once: the percentiles are over successes only.
        lat = level["latency_s"]
        assert CPU_MS / 1000 <= lat["p50"] <= lat["p95"] <= lat["p99"]
        assert 0 < level["health_p99_ms"] < 1000

    sent = sum(lv["requests"] for lv in result["levels"])
    assert sent == after["posts"] - before["posts"]
    assert sum(lv["errors"].get("503", 0) for lv in result["levels"]) == (
        after["refused"] - before["refused"]
    )
    # Every request was a different drawing (the gateway's cache keys on content).
    assert after["unique"] - before["unique"] == sent

    # CPU per request is measured from the server's process: CPU_MS plus HTTP overhead,
    # spread over the successes only (refusals cost next to nothing).
    cores = len(os.sched_getaffinity(0))
    cost = cores / result["cpu_limit_rps"]
    assert CPU_MS / 1000 * 0.9 <= cost <= CPU_MS / 1000 * 3
    best = max(lv["throughput_rps"] for lv in result["levels"])
    assert result["efficiency"] == pytest.approx(best / result["cpu_limit_rps"], rel=1e-3)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_no_vary_sends_the_same_drawing(busy_server, drawing):
    proc, url = busy_server
    before = stats(url)
    assert loadtest.main(["--url", url, "--image", str(drawing), "--concurrency", "2",
                          "--duration", "0.3", "--warmup", "0", "--no-vary"]) == 0  # fmt: skip
    after = stats(url)
    assert after["posts"] > before["posts"]
    assert after["unique"] - before["unique"] <= 1


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_varied_drawings_differ_in_bytes_not_pixels(tmp_path, fmt):
    path = tmp_path / f"drawing.{fmt.lower()}"
    exif = Image.Exif()
    exif[0x0112] = 6  # the orientation tag must survive
    Image.effect_noise((40, 30), 60).convert("RGB").save(path, format=fmt, exif=exif)
    drawings, again = loadtest.VariedDrawings([path]), loadtest.VariedDrawings([path])
    bodies = [drawings.next()[0] for _ in range(3)]
    assert len(set(bodies)) == 3
    assert again.next()[0] not in bodies  # nor does a second run repeat the first
    original = Image.open(path)
    for body in bodies:
        varied = Image.open(io.BytesIO(body))
        assert varied.format == fmt and varied.getexif().get(0x0112) == 6
        assert np.array_equal(np.asarray(varied), np.asarray(original))


def test_percentiles():
    assert loadtest.percentiles(list(range(1, 101)), (50, 99)) == pytest.approx([50.5, 99.01])
    assert loadtest.percentiles([], (50,)) == [None]


def burner(cpu_s: float, then_sleep_s: float) -> subprocess.Popen:
    code = (
        "import time\nend = time.process_time() + float(__import__('sys').argv[1])\n"
        "while time.process_time() < end: pass\ntime.sleep(float(__import__('sys').argv[2]))"
    )
    return subprocess.Popen([sys.executable, "-c", code, str(cpu_s), str(then_sleep_s)])


def test_cpu_meter_counts_only_the_level_even_for_processes_that_come_and_go():
    # One process spent its CPU before the meter started; another starts, burns, and exits.
    before = burner(0.4, 5)
    try:
        deadline = time.monotonic() + 20
        while sum(psutil.Process(before.pid).cpu_times()[:2]) < 0.35:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        procs = [before]
        meter = loadtest.ServiceCPU(lambda: loadtest._processes(p.pid for p in procs)).meter(0.05)
        during = burner(0.3, 0)
        procs.append(during)
        during.wait()
        spent = meter.stop()
    finally:
        before.kill()
        before.wait()
    assert 0.2 < spent < 0.45  # the 0.3 s burnt during the level, not the 0.4 s before it
