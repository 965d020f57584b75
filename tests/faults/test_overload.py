"""Past the admission limit: refusals cost next to nothing and the service keeps serving.

A storm (48 clients retrying at once, 16 times the admission limit, for 10 s) against real
gunicorn + gevent + the real TorchServe: good answers keep coming, /health stays within
the liveness probe's timeout, every refusal is a quick 503 with Retry-After, the worker is
never recycled, and nothing is left running after the gateway stops. Then, with the house
held full by requests waiting on a slow model (tests/support/fake_torchserve.py), what one
refusal is: answered before its body is sent, closed, on a new or a kept-alive connection.
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests
import yaml

from gateway.tools.load_clients import Crowd, HealthPinger, Storm, Target
from gateway.tools.loadtest import VariedDrawings, percentiles
from tests.support.drawings import drawing
from tests.support.fake_torchserve import FakeTorchServe
from tests.support.gateway_server import GatewayServer, run_gateway

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
LIMITS = {"MAX_INFLIGHT": "1", "MAX_QUEUE": "2", "RENDER_WORKERS": "1", "API_KEY": None}
STORM_CLIENTS, STORM_S = 48, 10.0
CHEAP = "motions=dab&fps=5&size=96"  # a render stays short on a busy machine


def liveness_timeout_s() -> float:
    deployment = yaml.safe_load((REPO / "k8s" / "deployment.yaml").read_text())
    gateway = next(c for c in deployment["spec"]["template"]["spec"]["containers"]
                   if c["name"] == "gateway")  # fmt: skip
    return float(gateway["livenessProbe"]["timeoutSeconds"])


def service_processes(server: GatewayServer) -> list[psutil.Process]:
    master = psutil.Process(server.proc.pid)
    return [master, *master.children(recursive=True)]


@pytest.fixture
def stormed(torchserve_server, tmp_path) -> Iterator[GatewayServer]:
    env = {**LIMITS, "STORAGE_URL": f"file://{tmp_path}",
           "TORCHSERVE_URL": torchserve_server.inference_url,
           "TORCHSERVE_MANAGEMENT_URL": torchserve_server.management_url}  # fmt: skip
    with run_gateway(env, ready=True) as server:
        yield server


def test_a_storm_of_immediate_retries_leaves_the_service_serving(stormed, tmp_path):
    png = tmp_path / "drawing.png"
    png.write_bytes(drawing().png)
    drawings = VariedDrawings([png])  # every request a new file: each admitted one renders
    target = Target.from_url(stormed.url)

    def post() -> bytes:
        body, media_type = drawings.next()
        return target.request("POST", f"/animate?{CHEAP}", body, {"Content-Type": media_type})

    crowd = Crowd(target, post, Storm(), timeout_s=60)
    assert [a.status for a in crowd.run(1, 0, attempts_per_client=1)] == ["200"]  # warm
    worker_pids = {p.pid for p in service_processes(stormed)}
    with HealthPinger(target) as health:
        answers = crowd.run(STORM_CLIENTS, STORM_S)
    processes = service_processes(stormed)

    statuses = {a.status for a in answers}
    good = sorted(a.ended_s for a in answers if a.status == "200")
    refusals = [a for a in answers if a.status == "503"]
    assert statuses <= {"200", "503"}, statuses  # no reset, timeout or other error
    # Good answers keep coming: in each half of the storm, not only at its start.
    assert any(t < STORM_S / 2 for t in good) and any(t >= STORM_S / 2 for t in good), good
    assert len(refusals) > 20 * STORM_CLIENTS  # it was a storm, and it was answered
    assert all(a.retry_after_s and a.retry_after_s >= 1 for a in refusals)
    refusal_p99_s = percentiles([a.seconds for a in refusals], [99])[0]
    assert refusal_p99_s < 1.0, refusal_p99_s  # 40 ms at most on a quiet machine
    # The liveness probe would never have failed.
    assert len(health.latencies_ms) > 5 * STORM_S
    assert max(health.latencies_ms) < 1000 * liveness_timeout_s(), max(health.latencies_ms)
    # Thousands of refusals did not recycle the worker, nor replace a render worker.
    assert {p.pid for p in processes} == worker_pids
    # One log line per 10 s for the refusals made in the worker, not one each.
    deadline = time.monotonic() + 10
    while '"refused"' not in stormed.log_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    log = stormed.log_text()
    assert '"refused"' in log
    # Nearly all refused from their head: when a place frees, the first request whose
    # body is in claims it, and the rest are not let in to read theirs and ask storage.
    slow = log.count('"path": "/animate", "status": 503')
    print(f"refusals {len(refusals)}, through Flask {slow}")
    assert slow < len(refusals) / 100, slow

    code = stormed.stop()
    assert code == 0
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


# --- one refusal, the house held full -------------------------------------------------


@pytest.fixture(scope="module")
def full_house(tmp_path_factory) -> Iterator[tuple[GatewayServer, FakeTorchServe]]:
    """One slot and one queue place on a model that answers after 30 s."""
    with FakeTorchServe() as fake:
        env = {**LIMITS, "MAX_QUEUE": "1", "STORAGE_URL": f"file://{tmp_path_factory.mktemp('g')}",
               "TORCHSERVE_URL": fake.url, "TORCHSERVE_MANAGEMENT_URL": fake.url,
               "MODEL_TIMEOUT_S": "30"}  # fmt: skip
        with run_gateway(env) as server:
            fake.delay_s = 30.0
            holders = [threading.Thread(target=_post_quietly, args=(server.url,), daemon=True)
                       for _ in range(2)]  # fmt: skip
            for holder in holders:
                holder.start()
                time.sleep(0.5)
            deadline = time.monotonic() + 20
            while fake.predictions < 1:  # the first holds the slot, asking the model
                assert time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(0.5)  # the second is queued behind it
            yield server, fake
            fake.delay_s = 0.0


def _post_quietly(url: str) -> None:
    try:
        requests.post(f"{url}/animate", data=drawing().png, headers={"Content-Type": "image/png"},
                      timeout=60)  # fmt: skip
    except requests.RequestException:
        pass


def _address(server: GatewayServer) -> tuple[str, int]:
    return ("127.0.0.1", server.port)


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:  # the unread body makes the kernel reset: the answer stays
        pass
    return data


def _head(data: bytes) -> dict[str, str]:
    lines = data.partition(b"\r\n\r\n")[0].decode().split("\r\n")
    return {"status": lines[0].split()[1],
            **{k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}}  # fmt: skip


def test_a_refusal_comes_before_the_body_is_sent_and_closes_the_connection(full_house):
    server, _ = full_house
    with socket.create_connection(_address(server), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /animate HTTP/1.1\r\nHost: t\r\nContent-Type: image/png\r\n"
                     b"Content-Length: 10000000\r\nX-Request-ID: storm-1\r\n\r\n")  # fmt: skip
        data = _read_answer(sock)  # EOF: the server closed it, not a byte of the body sent
        seconds = time.monotonic() - started
    head = _head(data)
    assert head["status"] == "503" and head["retry-after"] == "2"
    assert head["connection"] == "close" and head["x-request-id"] == "storm-1"
    body = json.loads(data.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == "overloaded" and body["error"]["request_id"] == "storm-1"
    assert seconds < 1.0


def test_a_refused_upload_in_flight_still_gets_its_answer(full_house):
    server, _ = full_house
    # A 3 MB body the server never reads: the client's send fails once the connection is
    # reset, and the 503 is still there to read, as urllib3 and requests do.
    reply = requests.post(f"{server.url}/", data=io.BytesIO(b"\0" * 3_000_000),
                          headers={"Content-Type": "image/png"}, timeout=10)  # fmt: skip
    assert reply.status_code == 503 and reply.json()["error"]["code"] == "overloaded"
    assert reply.headers["Connection"] == "close"


def test_a_kept_alive_connection_is_refused_too_and_health_still_answers(full_house):
    server, _ = full_house
    with requests.Session() as session:
        assert session.get(f"{server.url}/health", timeout=5).status_code == 200
        reply = session.post(f"{server.url}/animate", data=drawing().png,
                             headers={"Content-Type": "image/png"}, timeout=10)  # fmt: skip
        assert reply.status_code == 503 and reply.headers["Retry-After"] == "2"
        assert session.get(f"{server.url}/health", timeout=5).status_code == 200
