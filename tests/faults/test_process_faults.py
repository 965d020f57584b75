"""The gateway's own processes under stress: a client that leaves, SIGTERM, a killed worker.

Real gunicorn + gevent, real render workers, real renders (the model-free options).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.offline_gateway import offline_env
from tests.support.processes import (
    alive,
    cpu_seconds,
    gunicorn_setting,
    gunicorn_workers,
    raw_animate_request,
    render_workers,
    wait_until_rendering,
)

pytestmark = pytest.mark.integration

# A long render (4 motions, 512 px, 30 fps, WebP: the slowest to encode): a few
# CPU-seconds, time enough to interfere. (As GIFs it has become less than one: the share
# spent before the hang-up is noticed then nears the test's bound.)
LONG = {"size": 512, "fps": 30, "format": "webp"}


def test_a_client_that_hangs_up_has_its_render_abandoned(offline_gateway):
    gw, d = offline_gateway, drawing()
    workers = render_workers(gw.proc.pid)
    assert workers, "the gateway has no render workers"

    # What a whole render costs, measured the same way.
    before = cpu_seconds(workers)
    assert post_drawing(requests, gw.url, d, **LONG).status_code == 200
    full_cpu = sum(cpu_seconds(workers)[p] - before[p] for p in before)

    request_id = uuid.uuid4().hex
    workers = render_workers(gw.proc.pid)
    before = cpu_seconds(workers)
    client = socket.create_connection(("127.0.0.1", gw.port))
    abandoned = {**LONG, "fps": LONG["fps"] - 1}  # the same work, not in storage yet
    client.sendall(raw_animate_request(d, request_id, **abandoned))
    at_hangup = wait_until_rendering(workers)
    client.close()
    hung_up = time.monotonic()
    busy = [p for p in workers if at_hangup.get(p.pid, 0) - before.get(p.pid, 0) > 0.02]

    last = dict(at_hangup)
    while any(alive(p) for p in busy) and time.monotonic() - hung_up < 5:
        last.update(cpu_seconds(busy))
        time.sleep(0.02)
    stopped_after = time.monotonic() - hung_up

    assert busy and stopped_after < 1.5, f"render workers still running {stopped_after:.1f} s on"
    after_hangup = sum(last[p.pid] - at_hangup[p.pid] for p in busy)
    spent = sum(last[p.pid] - before[p.pid] for p in busy)
    assert after_hangup < 0.2 * full_cpu, (after_hangup, full_cpu)
    assert spent < 0.6 * full_cpu, (spent, full_cpu)

    # The service notices, logs it, and replaces the killed workers.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and f'"request_id": "{request_id}"' not in gw.log_text():
        time.sleep(0.1)
    line = next(ln for ln in gw.log_text().splitlines() if request_id in ln and "POST" in ln)
    assert '"status": 499' in line
    assert post_drawing(requests, gw.url, d, size=128).status_code == 200
    assert len([p for p in render_workers(gw.proc.pid) if alive(p)]) == len(workers)


def test_a_killed_gunicorn_worker_is_replaced_and_service_goes_on(offline_gateway):
    gw, d = offline_gateway, drawing()
    (worker,) = gunicorn_workers(gw.proc.pid)
    orphans = render_workers(gw.proc.pid)
    os.kill(worker.pid, signal.SIGKILL)

    # Connections wait in the listen backlog while the master forks a new worker.
    started = time.monotonic()
    reply = post_drawing(requests, gw.url, d, size=96, timeout=60)
    assert reply.status_code == 200, reply.text
    assert time.monotonic() - started < 30
    assert requests.get(f"{gw.url}/health", timeout=5).status_code == 200
    (replacement,) = gunicorn_workers(gw.proc.pid)
    assert replacement.pid != worker.pid

    # The dead worker's render processes die with it (no orphan keeps a core busy).
    deadline = time.monotonic() + 5
    while any(alive(p) for p in orphans) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in orphans)


def test_sigterm_finishes_the_request_in_flight_refuses_new_ones_and_exits(
    gateway_factory, tmp_path: Path
):
    d = drawing()
    # One render worker: the four motions render one after the other, so the drain has
    # something to wait for (on two, the request ended 0.2 s after the refusal began).
    gw = gateway_factory(offline_env(tmp_path / "gifs", RENDER_WORKERS="1"))
    reply: dict = {}

    def in_flight() -> None:
        # The longest render there is (WebP encodes slowest), so the drain has something to
        # wait for: gunicorn's gevent worker may take up to a second to stop accepting.
        reply["r"] = post_drawing(requests, gw.url, d, timeout=60, size=512, fps=30,
                                  format="webp")  # fmt: skip

    client = threading.Thread(target=in_flight)
    client.start()
    wait_until_rendering(render_workers(gw.proc.pid), min_cpu_s=0.1)  # early in the render
    everything = [psutil.Process(gw.proc.pid), *psutil.Process(gw.proc.pid).children(True)]
    os.kill(gw.proc.pid, signal.SIGTERM)  # as the kubelet does, to PID 1 only
    signalled = time.monotonic()

    # New connections are refused while the request in flight carries on.
    refused_after = None
    while time.monotonic() - signalled < 5:
        try:
            socket.create_connection(("127.0.0.1", gw.port), timeout=1).close()
        except ConnectionRefusedError:
            refused_after = time.monotonic() - signalled
            still_in_flight = client.is_alive()
            break
        time.sleep(0.05)
    assert refused_after is not None and refused_after < 2, "still accepting after SIGTERM"
    assert still_in_flight

    client.join(timeout=60)
    assert reply["r"].status_code == 200, reply["r"].text
    for url in reply["r"].json().values():
        assert (tmp_path / "gifs" / url.split("/files/", 1)[1]).stat().st_size > 0

    grace = gunicorn_setting("graceful_timeout")
    gw.proc.wait(timeout=grace + 5)
    assert time.monotonic() - signalled < grace
    assert gw.proc.returncode == 0, gw.log_tail()
    assert not any(alive(p) for p in everything)


def test_sigterm_closes_a_kept_alive_connection_waiting_for_its_next_request(
    gateway_factory, tmp_path: Path
):
    # A client (a load balancer, `requests`) keeps its connection open after an answer.
    # gunicorn's gevent worker would let it wait out `keepalive` before the worker exits;
    # it is closed at once, as nginx does, so a rolling restart does not wait on it.
    gw = gateway_factory(offline_env(tmp_path / "gifs"))
    keepalive = gunicorn_setting("keepalive")
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as kept:
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += kept.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200") and b"close" not in answer.lower()
        os.kill(gw.proc.pid, signal.SIGTERM)
        kept.settimeout(keepalive - 1)
        while kept.recv(4096):  # the body's rest, then the server's end (else a timeout)
            pass
    gw.proc.wait(timeout=keepalive)
    assert gw.proc.returncode == 0, gw.log_tail()
