"""Under load: /health stays fast while every render worker is busy; S3 storage end to end."""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support.gateway_answers import fetch_gif, labels, stages
from tests.support.gateway_server import run_gateway
from tests.support.images import drawing, encode

pytestmark = pytest.mark.integration


def render_request(url: str, seed: int, **options: object) -> requests.Response:
    """A request that renders (a new drawing) without calling the models."""
    params = {k: json.dumps(v) for k, v in labels(seed).items()} | options
    return requests.post(f"{url}/animate", data=encode(drawing(seed).image), params=params,
                         headers={"Content-Type": "image/png"}, timeout=120)  # fmt: skip


def test_health_stays_fast_while_every_render_worker_is_busy(gateway):
    latencies, done = [], threading.Event()

    def poll_health():
        while not done.is_set():
            started = time.perf_counter()
            assert requests.get(f"{gateway.url}/health", timeout=5).status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.02)

    poller = threading.Thread(target=poll_health)
    poller.start()
    try:
        with ThreadPoolExecutor(3) as clients:  # more renders than the 2 render workers
            # The longest renders there are: the poller runs all along them.
            replies = list(
                clients.map(
                    lambda seed: render_request(gateway.url, seed, size=512, fps=30), (40, 41, 42)
                )
            )
    finally:
        done.set()
        poller.join()
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert len(latencies) > 20  # polled all along the renders
    assert max(latencies) < 1.0, sorted(latencies)[-5:]


@pytest.fixture(scope="module")
def s3_gateway(model_env, s3_server):
    bucket = f"gifs-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    env = {**model_env, **s3_server.env, "STORAGE_URL": f"s3://{bucket}/animations",
           "RENDER_WORKERS": "2", "PRESIGN_EXPIRY_S": "600"}  # fmt: skip
    with run_gateway(env, ready=True) as server:
        yield server


def test_s3_storage_presigned_urls_resolve_and_repeat_is_served_from_the_bucket(
    s3_gateway, s3_server
):
    first = render_request(s3_gateway.url, 43)
    assert first.status_code == 200, first.text
    urls = first.json()
    assert list(urls) == ["dab", "jumping", "wave_hello", "zombie"]
    for url in urls.values():
        assert url.startswith(s3_server.endpoint_url) and "X-Amz-Expires=600" in url
        fetch_gif(url)
    again = render_request(s3_gateway.url, 43)
    assert again.status_code == 200
    assert "render" not in stages(again) and "upload" not in stages(again)
    assert {k: v.split("?")[0] for k, v in again.json().items()} == {
        k: v.split("?")[0] for k, v in urls.items()
    }
