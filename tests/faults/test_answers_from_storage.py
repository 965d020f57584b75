"""An answer from storage takes no render slot: a repeated drawing is answered at once while
every slot renders and a request waits in the queue. Real gunicorn + gevent, real renders."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.offline_gateway import offline_env

pytestmark = pytest.mark.integration
CHEAP = {"motions": "dab", "size": 64, "fps": 5}
HEAVY = {"motions": "dab,jumping,wave_hello,zombie", "size": 512, "fps": 30}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[GatewayServer]:
    env = offline_env(tmp_path_factory.mktemp("gifs"), MAX_INFLIGHT="1", MAX_QUEUE="2",
                      RENDER_WORKERS="1")  # fmt: skip
    with run_gateway(env) as server:
        yield server


def gauge(url: str, name: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=5).text
    return float(re.search(rf"^{name}(?:{{.*}})? (\S+)$", text, re.M).group(1))


def stages(reply: requests.Response) -> list[str]:
    return [entry.split(";")[0].strip() for entry in reply.headers["Server-Timing"].split(",")]


def test_a_repeated_drawing_is_answered_from_storage_while_every_slot_is_busy(gateway):
    first = post_drawing(requests, gateway.url, drawing(7), **CHEAP)
    assert first.status_code == 200, first.text

    heavy: list[requests.Response] = []
    renders = [
        threading.Thread(
            target=lambda seed=seed: heavy.append(
                post_drawing(requests, gateway.url, drawing(seed), **HEAVY)
            )
        )
        for seed in (8, 9)
    ]
    for render in renders:
        render.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # one renders, one waits for the slot
        inflight = gauge(gateway.url, "gateway_inflight_requests")
        queued = gauge(gateway.url, "gateway_queue_depth")
        if (inflight, queued) == (1, 1):
            break
        time.sleep(0.02)
    assert (inflight, queued) == (1, 1)

    started = time.monotonic()
    again = post_drawing(requests, gateway.url, drawing(7), **CHEAP)
    answered_in = time.monotonic() - started
    busy_after = (gauge(gateway.url, "gateway_inflight_requests"),
                  gauge(gateway.url, "gateway_queue_depth"))  # fmt: skip
    for render in renders:
        render.join(timeout=120)

    assert again.status_code == 200 and again.json() == first.json()
    assert stages(again) == ["receive", "decode", "lookup"]  # neither queued nor rendered
    assert busy_after == (1, 1)  # the renders were still going when it was answered
    assert answered_in < 1.0
    assert [r.status_code for r in heavy] == [200, 200]
