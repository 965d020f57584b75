"""S3 storage that goes away: 503 storage_unavailable, never a URL that does not resolve.

A moto server of this module's own (the session's is shared and must not be stopped) is
stopped before a request and in the middle of one, then brought back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.processes import render_workers, wait_until_rendering
from tests.support.s3 import MotoServer

pytestmark = pytest.mark.integration
BUCKET = "gifs"


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    server = MotoServer()
    try:
        server.start()
        server.create_bucket(BUCKET)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(moto, tmp_path_factory) -> Iterator[GatewayServer]:
    env = {
        **moto.env,
        "STORAGE_URL": f"s3://{BUCKET}/animations",
        "STORAGE_TIMEOUT_S": "3",
        "TORCHSERVE_URL": "http://127.0.0.1:9",
        "TORCHSERVE_MANAGEMENT_URL": "http://127.0.0.1:9",
        "API_KEY": None,
    }
    with run_gateway(env) as server:
        yield server


def assert_storage_unavailable(reply: requests.Response) -> None:
    assert reply.status_code == 503, reply.text
    assert reply.json() == {"error": reply.json()["error"]}  # an error, and no URL at all
    assert reply.json()["error"]["code"] == "storage_unavailable"


def assert_urls_resolve(reply: requests.Response) -> None:
    assert reply.status_code == 200, reply.text
    for url in reply.json().values():
        gif = requests.get(url, timeout=10)
        assert gif.status_code == 200 and gif.content.startswith(b"GIF89a"), url


def test_storage_down_then_back(gateway, moto):
    d = drawing()
    assert_urls_resolve(post_drawing(requests, gateway.url, d, size=64, fps=5))
    moto.stop()
    try:
        start = time.monotonic()
        assert_storage_unavailable(post_drawing(requests, gateway.url, d, size=80, fps=5))
        assert time.monotonic() - start < 5  # refused connections fail fast, no hanging
        ready = requests.get(f"{gateway.url}/ready", timeout=10)
        assert ready.status_code == 503
        assert any(m.startswith("storage") for m in ready.json()["missing"])
        # The failed uploads ran in greenlets: their errors are in the JSON log line of the
        # request, not in tracebacks that gevent's hub would print beside it.
        assert "Traceback" not in gateway.log_text()
    finally:
        moto.start()
        moto.create_bucket(BUCKET)  # moto keeps nothing across a restart
    assert_urls_resolve(post_drawing(requests, gateway.url, d, size=80, fps=5))


def test_storage_lost_during_the_render_hands_out_no_url(gateway, moto):
    d = drawing()
    result: dict = {}
    # The longest render there is, so that storage is gone well before its upload.
    client = threading.Thread(
        target=lambda: result.update(r=post_drawing(requests, gateway.url, d, size=512, fps=30))
    )
    client.start()
    try:
        wait_until_rendering(render_workers(gateway.proc.pid), min_cpu_s=0.1)
        moto.stop()  # the lookup is done; the upload will find nobody
        client.join(timeout=60)
        assert_storage_unavailable(result["r"])
    finally:
        client.join(timeout=60)
        moto.start()
        moto.create_bucket(BUCKET)
    # Nothing half-stored is mistaken for a finished animation: it renders again.
    reply = post_drawing(requests, gateway.url, d, size=512, fps=30)
    assert_urls_resolve(reply)
    assert "render" in reply.headers["Server-Timing"]
