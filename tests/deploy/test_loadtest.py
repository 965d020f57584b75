"""The load-test CLI against a real loopback HTTP service whose costs are known."""

import io
import json
import os
import random
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import requests
from PIL import Image

from gateway.tools import loadtest
from gateway.tools.load_clients import Answer, Backoff, Storm, answer_length
from tests.support.stamps import kernel_stamping, needs_receive_stamps

CPU_MS = 30


@pytest.fixture(scope="module")
def busy_server():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.busy_server", str(CPU_MS)], stdout=subprocess.PIPE
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


LEVEL_KEYS = {
    "concurrency", "clients", "requests", "good", "errors", "throughput_rps", "latency_s",
    "refused", "refused_per_s", "refused_share", "refusal_ms", "refusals_without_retry_after",
    "health_ms", "cpu_s_per_request", "others_cores", "loadtest_cores",
}  # fmt: skip


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

    assert set(result) == {"clients", "levels", "cpu_limit_rps", "efficiency"}
    assert result["clients"] == "storm"
    assert [lv["concurrency"] for lv in result["levels"]] == [1, 3]
    for level in result["levels"]:
        assert set(level) == LEVEL_KEYS
        assert set(level["latency_s"]) == {"p50", "p95", "p99"}
        assert set(level["errors"]) <= {"503"}
        ok = level["requests"] - sum(level["errors"].values())
        assert ok == level["good"] and level["refused"] == level["errors"].get("503", 0)
        # Throughput counts successes over a span of at least the duration.
        assert 0 < level["throughput_rps"] <= ok / 1.5
        assert level["throughput_rps"] >= ok / (1.5 + 1.0)
        # Two thirds are refused at once (and retried at once: a storm): the latency
        # percentiles are over successes only, the refusals' apart.
        lat = level["latency_s"]
        assert CPU_MS / 1000 <= lat["p50"] <= lat["p95"] <= lat["p99"]
        assert level["refused_share"] == pytest.approx(2 / 3, abs=0.05)
        assert level["refusal_ms"]["p50"] < 1000 * lat["p50"]  # refusals burn no CPU_MS
        assert level["refusals_without_retry_after"] == 0
        assert 0 < level["health_ms"]["p99"] < 1000
        assert 0 < level["loadtest_cores"] < 1.5

    sent = sum(lv["requests"] for lv in result["levels"])
    assert sent == after["posts"] - before["posts"]
    assert sum(lv["refused"] for lv in result["levels"]) == after["refused"] - before["refused"]
    # Every drawing answered 200 was a new one (the gateway's cache keys on content); a
    # refused one is sent again as it was, as an app retries the same upload.
    good = sum(lv["good"] for lv in result["levels"])
    clients = sum(lv["concurrency"] for lv in result["levels"])
    assert good <= after["unique"] - before["unique"] <= good + clients

    # CPU per request is measured from the server's process: CPU_MS plus HTTP overhead,
    # spread over the successes only (refusals cost next to nothing).
    cores = len(os.sched_getaffinity(0))
    cost = cores / result["cpu_limit_rps"]
    assert CPU_MS / 1000 * 0.9 <= cost <= CPU_MS / 1000 * 3
    best = max(lv["throughput_rps"] for lv in result["levels"])
    assert result["efficiency"] == pytest.approx(best / result["cpu_limit_rps"], rel=1e-3)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_backoff_clients_wait_for_retry_after_and_a_storm_does_not(busy_server, drawing, tmp_path):
    _, url = busy_server
    counts = {}
    for mode in ("storm", "backoff"):
        out = tmp_path / f"{mode}.json"
        argv = ["--url", url, "--image", str(drawing), "--concurrency", "3", "--duration", "2",
                "--warmup", "0", "--json", str(out), "--limit", "1"]  # fmt: skip
        assert loadtest.main([*argv, "--backoff"] if mode == "backoff" else argv) == 0
        result = json.loads(out.read_text())
        assert result["clients"] == mode
        counts[mode] = result["levels"][0]["requests"]
        # Past the limit of 1, the checks are made (this stand-in refuses 2 in 3 at best).
        assert {c["check"] for c in result["checks"]} >= {"good answers/s", "/health p99, ms"}
    # Retry-After is 1 s: in 2 s a backing-off client is refused at most twice, and between
    # refusals it may get a 200 or two (each 30 ms) at the server's 1-in-3.
    assert counts["backoff"] <= 3 * 6
    assert counts["storm"] > 10 * counts["backoff"]
    png = tmp_path / "both.png"
    argv = [
        "--url",
        url,
        "--image",
        str(drawing),
        "--concurrency",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--plot",
        str(png),
        "--plot-with",
        str(tmp_path / "backoff.json"),
    ]
    assert loadtest.main(argv) == 0 and png.read_bytes().startswith(b"\x89PNG")


def test_backoff_policy():
    policy = Backoff(random.Random(1))

    def answer(status, retry_after=None):
        return Answer(status, 0.01, retry_after, 1.0)

    assert policy.delay_s(answer("200"), 0) == 0
    for _ in range(50):
        assert 2.0 <= policy.delay_s(answer("503", 2.0), 1) <= 3.0  # Retry-After, +0-50 %
        assert 0 <= policy.delay_s(answer("504"), 1) <= 1.0  # no Retry-After: 1 s, 2 s, ...
        assert 0 <= policy.delay_s(answer("connection_error"), 3) <= 4.0
        assert 0 <= policy.delay_s(answer("503"), 12) <= 30.0  # at most 30 s
    assert Storm().delay_s(answer("503", 2.0), 5) == 0


def row(concurrency, good, p99, health=10.0, refusal=5.0, errors=None, missing=0):
    return {"concurrency": concurrency, "throughput_rps": good, "latency_s": {"p99": p99},
            "health_ms": {"p99": health}, "refusal_ms": {"p99": refusal},
            "errors": errors or {}, "refusals_without_retry_after": missing}  # fmt: skip


def test_overload_checks_hold_each_level_past_the_limit_to_the_bounds():
    rows = [row(4, 5.0, 1.0), row(12, 5.0, 2.0), row(24, 4.6, 2.5),
            row(48, 4.4, 2.7, health=60.0, refusal=80.0, errors={"503": 9, "timeout": 1},
                missing=2)]  # fmt: skip
    checks = loadtest.overload_checks(rows, limit=12)
    assert {c["concurrency"] for c in checks} == {24, 48}
    failed = {(c["concurrency"], c["check"]) for c in checks if not c["ok"]}
    assert failed == {
        (48, "good answers/s"),  # 4.4 < 0.9 x 5.0
        (48, "p99 of good answers, s"),  # 2.7 > 1.3 x 2.0
        (48, "/health p99, ms"),
        (48, "refusal p99, ms"),
        (48, "answers neither 200 nor 503 with Retry-After"),  # a timeout, 2 without it
    }
    wrong = next(c for c in checks if c["concurrency"] == 48 and c["check"].startswith("answers"))
    assert wrong["value"] == 3


def test_a_limit_not_measured_leaves_its_p99_check_unjudged_not_failed():
    rows = [row(4, 5.0, 1.0), row(24, 4.6, 2.5)]  # --concurrency 4,24 --limit 12
    checks = loadtest.overload_checks(rows, limit=12)
    p99 = next(c for c in checks if c["check"] == "p99 of good answers, s")
    assert p99["ok"] is None and p99["bound"] is None
    assert all(c["ok"] for c in checks if c is not p99)
    out = io.StringIO()
    result = {"levels": [], "cpu_limit_rps": None, "admission_limit": 12, "checks": checks}
    loadtest.print_table(result, 2.0, out)
    assert "FAIL" not in out.getvalue() and "bound None" not in out.getvalue()
    assert "add 12 to --concurrency" in out.getvalue()


def test_plot_without_matplotlib_says_which_extra_brings_it(monkeypatch, capsys):
    real = loadtest.importlib.util.find_spec
    monkeypatch.setattr(loadtest.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        loadtest.parse_args(["--url", "http://127.0.0.1:9", "--image", "x.png", "--plot", "p.png"])
    assert exited.value.code == 2 and "'.[loadtest]'" in capsys.readouterr().err


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


def test_answer_length_ends_an_answer_the_server_keeps_open():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
    assert answer_length(head[:-2]) is None  # the head has not all come
    assert answer_length(head) == len(head) + 7
    assert answer_length(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil EOF") is None


@needs_receive_stamps
def test_an_answer_is_timed_to_its_arrival_not_to_when_the_loop_reads_it():
    import socket

    from gateway.tools.load_clients import Target

    listener = socket.create_server(("127.0.0.1", 0))
    target = Target("127.0.0.1", listener.getsockname()[1])
    with kernel_stamping():
        answer, answered, started = _answer_read_late(target, listener)
    assert (answer.status, answer.retry_after_s) == ("503", 1.0)
    assert answer.seconds < answered - started + 0.05, answer.seconds
    assert answer.ended_s == answer.seconds


def _answer_read_late(target, listener):
    from gateway.tools.load_clients import _Attempt

    attempt = _Attempt(0, target, target.request("GET", "/"), timeout_s=5)
    conn, _ = listener.accept()
    attempt.sock.setblocking(True)
    assert attempt.on_writable()
    conn.recv(4096)
    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n")
    answered = time.perf_counter()
    time.sleep(0.3)  # the client's loop busy elsewhere while the answer waits for it
    assert attempt.on_readable()
    answer = attempt.answer(epoch=attempt.started)
    conn.close()
    listener.close()
    return answer, answered, attempt.started


def test_a_connection_that_fails_as_it_opens_counts_as_an_error_not_a_crash(monkeypatch):
    """A connection whose connect fails after it began (SO_ERROR at the first send, as when
    the server's backlog is full or it restarts) ends as a `connection_error`: the load
    test goes on."""
    import socket

    from gateway.tools import load_clients

    def fails_at_once(self):
        self.failed = True
        return True

    monkeypatch.setattr(load_clients._Attempt, "on_writable", fails_at_once)
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        target = load_clients.Target("127.0.0.1", listener.getsockname()[1])
        crowd = load_clients.Crowd(target, lambda: target.request("GET", "/"), Storm())
        answers = crowd.run(3, 0.0, attempts_per_client=2)
    finally:
        listener.close()
    assert [a.status for a in answers] == ["connection_error"] * 6
