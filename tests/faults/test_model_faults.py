"""TorchServe killed, slow or failing, and more requests than render slots.

The slow and failing cases put a loopback HTTP server in TorchServe's place
(fake_torchserve.py); the killed case uses the real TorchServe with the project's models.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.drawings import drawing
from tests.support.fake_torchserve import FakeTorchServe
from tests.support.gateway_server import GatewayServer, run_gateway

pytestmark = pytest.mark.integration
MODEL_TIMEOUT_S = 1.0


def post_image(url: str, png: bytes, timeout: float = 30) -> tuple[requests.Response, float]:
    """POST the bare image, so the gateway asks the models; the reply and its latency."""
    start = time.monotonic()
    reply = requests.post(
        f"{url}/animate", data=png, headers={"Content-Type": "image/png"}, timeout=timeout
    )
    return reply, time.monotonic() - start


def error_code(reply: requests.Response) -> str:
    return reply.json()["error"]["code"]


@pytest.fixture(scope="module")
def fake_torchserve() -> Iterator[FakeTorchServe]:
    with FakeTorchServe() as server:
        yield server


@pytest.fixture(scope="module")
def gateway_on_fake(fake_torchserve, tmp_path_factory) -> Iterator[GatewayServer]:
    """One render slot and one queue place, so three requests at once overload it."""
    env = {
        "STORAGE_URL": f"file://{tmp_path_factory.mktemp('gifs')}",
        "TORCHSERVE_URL": fake_torchserve.url,
        "TORCHSERVE_MANAGEMENT_URL": fake_torchserve.url,
        "MODEL_TIMEOUT_S": str(MODEL_TIMEOUT_S),
        "MAX_INFLIGHT": "1",
        "MAX_QUEUE": "1",
        "RENDER_WORKERS": "1",
        "API_KEY": None,
    }
    with run_gateway(env) as server:
        yield server


@pytest.fixture
def fake(fake_torchserve) -> Iterator[FakeTorchServe]:
    yield fake_torchserve
    fake_torchserve.delay_s, fake_torchserve.status = 0.0, 200


def test_a_slow_model_gives_504_once_its_budget_is_spent(gateway_on_fake, fake):
    fake.delay_s = 5 * MODEL_TIMEOUT_S
    asked = fake.predictions
    reply, latency = post_image(gateway_on_fake.url, drawing().png)
    assert reply.status_code == 504 and error_code(reply) == "model_timeout", reply.text
    assert fake.predictions == asked + 1  # it did ask, and did not ask again
    assert MODEL_TIMEOUT_S <= latency < MODEL_TIMEOUT_S + 1.5


def test_a_failing_model_gives_503_at_once(gateway_on_fake, fake):
    fake.status = 500
    reply, latency = post_image(gateway_on_fake.url, drawing().png)
    assert reply.status_code == 503 and error_code(reply) == "model_unavailable", reply.text
    assert latency < 1.0
    assert "Traceback" not in reply.text


def test_overload_is_refused_at_once_with_retry_after(gateway_on_fake, fake):
    fake.delay_s = 5 * MODEL_TIMEOUT_S  # each admitted request holds its slot ~1 s
    replies: list[tuple[requests.Response, float]] = []
    go = threading.Barrier(4)

    def client() -> None:
        go.wait()
        replies.append(post_image(gateway_on_fake.url, drawing().png))

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    refused = [(r, t) for r, t in replies if r.status_code == 503]
    served = [(r, t) for r, t in replies if r.status_code == 504]
    assert len(refused) == 2 and len(served) == 2, [(r.status_code, t) for r, t in replies]
    for reply, latency in refused:
        assert error_code(reply) == "overloaded"
        assert int(reply.headers["Retry-After"]) > 0
        assert latency < 0.5
    # The queued request waited for the slot, then had its own full model budget.
    assert max(t for _, t in served) >= 2 * MODEL_TIMEOUT_S


def test_torchserve_killed_mid_request(torchserve_server, gateway_factory, tmp_path: Path):
    ts = torchserve_server
    gw = gateway_factory(
        {
            "STORAGE_URL": f"file://{tmp_path}",
            "TORCHSERVE_URL": ts.inference_url,
            "TORCHSERVE_MANAGEMENT_URL": ts.management_url,
            "API_KEY": None,
        }
    )
    gw.wait_ready()
    png = drawing().png
    try:
        # Frozen, TorchServe still accepts connections (the kernel does) but never answers:
        # the request is in flight inside it when it dies.
        os.killpg(ts.pid, signal.SIGSTOP)
        result: dict = {}
        client = threading.Thread(target=lambda: result.update(r=post_image(gw.url, png)))
        client.start()
        time.sleep(1.5)
        killed = time.monotonic()
        ts.kill()
        client.join(timeout=30)
        reply, _ = result["r"]
        answered_after = time.monotonic() - killed
        assert reply.status_code == 503 and error_code(reply) == "model_unavailable", reply.text
        assert answered_after < 2.0

        ready = requests.get(f"{gw.url}/ready", timeout=10)
        assert ready.status_code == 503
        assert any("drawn_humanoid_detector" in m for m in ready.json()["missing"])
        reply, latency = post_image(gw.url, png)
        assert reply.status_code == 503 and latency < 2.0  # fails fast, does not hang

        # Back by itself: no restart of the gateway.
        ts.start()
        gw.wait_ready(timeout=60)
        reply, _ = post_image(gw.url, png, timeout=60)
        assert reply.status_code == 200, reply.text
    finally:
        if ts.pid is not None:
            os.killpg(ts.pid, signal.SIGCONT)
        ts.ensure_running()
