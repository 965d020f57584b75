"""Every error of DESIGN.md's table that the gateway answers, through real gunicorn + gevent."""

from __future__ import annotations

import base64
import json
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support.gateway_answers import assert_error, labels
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.images import drawing, encode, png_claiming
from tests.support.s3 import free_port

pytestmark = pytest.mark.integration
API_KEY = "test-key-" + uuid.uuid4().hex
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def black_hole():
    """A TCP port that accepts connections and never answers: a hung TorchServe."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


@pytest.fixture(scope="module")
def broken(tmp_path_factory, black_hole, s3_server):
    """A gateway whose every dependency is broken: detector refused, pose hung, no bucket.

    Two gunicorn workers (metrics must add up across them), one render slot and a queue of
    one (admission), and an API key.
    """
    table = tmp_path_factory.mktemp("models") / "models.yaml"
    table.write_text(
        f"detector: {{model: drawn_humanoid_detector, url: 'http://127.0.0.1:{free_port()}'}}\n"
        f"pose: {{model: drawn_humanoid_pose_estimator, url: '{black_hole}'}}\n"
    )
    env = {
        **s3_server.env,
        "MODEL_TABLE": str(table),
        "TORCHSERVE_MANAGEMENT_URL": f"http://127.0.0.1:{free_port()}",
        "STORAGE_URL": f"s3://missing-{uuid.uuid4().hex[:8]}/gifs",
        "MODEL_TIMEOUT_S": "1",
        "RENDER_WORKERS": "1",
        "MAX_INFLIGHT": "1",
        "MAX_QUEUE": "1",
        "API_KEY": API_KEY,
    }
    with run_gateway(env, workers=2) as server:
        # Not ready (nothing it needs is up), but its render workers warm up all the same.
        deadline = time.monotonic() + 60
        while any("render workers" in m for m in _missing(server)) and time.monotonic() < deadline:
            time.sleep(0.2)
        yield server


def _missing(server: GatewayServer) -> list[str]:
    return requests.get(f"{server.url}/ready", timeout=10).json()["missing"]


def post(url: str, data: bytes = b"", params=None, headers=None, **kw) -> requests.Response:
    headers = {"Content-Type": "image/png", **(headers or {})}
    return requests.post(
        f"{url}/animate", data=data, params=params, headers=headers, timeout=30, **kw
    )


# ---- 400, 413, 415 and 422 on the working gateway ---------------------------------------------


def test_bad_request_rows(gateway):
    png = encode(drawing(30).image)
    assert_error(post(gateway.url, png, {"size": "9000"}), 400, "bad_request")
    assert_error(post(gateway.url, png, {"bbox": "[5, 5, 1, 1]"}), 400, "bad_request")
    assert_error(post(gateway.url, b"{oops", headers={"Content-Type": "application/json"}), 400,
                 "bad_request")  # fmt: skip
    assert_error(post(gateway.url, png, {"motions": "moonwalk"}), 400, "unknown_motion")
    assert_error(post(gateway.url, b"definitely not a PNG"), 400, "invalid_image")
    assert_error(post(gateway.url, png[: len(png) // 2]), 400, "invalid_image")


def test_too_large_rows(gateway):
    over = b"\xff\xd8" + b"\0" * (10 * 1024 * 1024)
    assert_error(post(gateway.url, over, headers={"Content-Type": "image/jpeg"}), 413,
                 "payload_too_large")  # fmt: skip
    streamed = post(gateway.url, iter([over[i : i + 65536] for i in range(0, len(over), 65536)]))
    assert_error(streamed, 413, "payload_too_large")
    started = time.perf_counter()
    assert_error(post(gateway.url, png_claiming(30000, 30000)), 413, "image_too_large")
    assert time.perf_counter() - started < 2  # refused from the header, nothing decoded


def test_unsupported_media_type(gateway):
    assert_error(post(gateway.url, b"hello", headers={"Content-Type": "text/plain"}), 415,
                 "unsupported_media_type")  # fmt: skip


def test_blank_page_has_no_character(gateway):
    blank = encode(drawing(31).image * 0 + 235)  # an empty sheet of paper
    assert_error(post(gateway.url, blank), 422, "no_character_detected")  # the detector's verdict
    # Given a box and joints, the models are skipped; segmentation finds nothing either.
    assert_error(post(gateway.url, blank, {"bbox": "[20, 20, 300, 400]",
                                           "keypoints": json.dumps(labels(31)["keypoints"])}),
                 422, "no_character_detected")  # fmt: skip


def test_no_pose_in_an_empty_box(gateway):
    blank = encode(drawing(31).image * 0 + 235)
    assert_error(post(gateway.url, blank, {"bbox": "[20, 20, 300, 400]"}), 422, "pose_not_found")


def test_unknown_routes_and_methods_are_json(gateway):
    assert_error(requests.get(f"{gateway.url}/nope", timeout=5), 404, "not_found")
    assert_error(requests.get(f"{gateway.url}/animate", timeout=5), 405, "method_not_allowed")


# ---- dependencies down: 503 and 504, fast ------------------------------------------------------


def test_api_key_is_required_on_post_routes(broken):
    png = encode(drawing(32).image)
    error = assert_error(post(broken.url, png), 401, "unauthorized")
    assert "Bearer" in error["message"]
    assert_error(
        post(broken.url, png, headers={"Authorization": "Bearer wrong"}), 401, "unauthorized"
    )
    assert requests.get(f"{broken.url}/health", timeout=5).status_code == 200  # GETs stay open


def test_model_unavailable_is_fast(broken):
    started = time.perf_counter()
    assert_error(
        post(broken.url, encode(drawing(32).image), headers=AUTH), 503, "model_unavailable"
    )
    assert time.perf_counter() - started < 3


def test_model_timeout(broken):
    started = time.perf_counter()
    reply = post(broken.url, encode(drawing(33).image), {"bbox": json.dumps(labels(33)["bbox"])},
                 headers=AUTH)  # fmt: skip
    assert_error(reply, 504, "model_timeout")
    assert 0.9 < time.perf_counter() - started < 5


def test_storage_unavailable_returns_no_url(broken):
    reply = post(broken.url, encode(drawing(34).image), {k: json.dumps(v) for k, v in labels(34).items()},
                 headers=AUTH)  # fmt: skip
    assert_error(reply, 503, "storage_unavailable")


def test_ready_names_what_is_missing(broken):
    reply = requests.get(f"{broken.url}/ready", timeout=10)
    assert reply.status_code == 503
    missing = " ".join(reply.json()["missing"])
    assert "drawn_humanoid_detector" in missing and "drawn_humanoid_pose_estimator" in missing
    assert "storage" in missing and "missing-" in missing


def test_overloaded_answers_at_once_with_retry_after(broken):
    # One render slot and a queue of one per worker: of many slow requests, some are refused.
    body = {"file": base64.b64encode(encode(drawing(35).image)).decode(),
            **{k: v for k, v in labels(35).items() if k == "bbox"}}  # fmt: skip

    def call(_):
        started = time.perf_counter()
        reply = requests.post(f"{broken.url}/animate", json=body, headers=AUTH, timeout=30)
        return reply, time.perf_counter() - started

    with ThreadPoolExecutor(8) as clients:
        results = list(clients.map(call, range(8)))
    refused = [(r, s) for r, s in results if r.status_code == 503]
    assert refused, [r.status_code for r, _ in results]
    for reply, seconds in refused:
        assert_error(reply, 503, "overloaded")
        assert int(reply.headers["Retry-After"]) >= 1
        assert seconds < 0.8  # refused at once, not after waiting for the model's timeout


def test_metrics_add_up_across_gunicorn_workers(broken):
    before = _count(broken.url, 'route="/health"')
    for _ in range(20):
        requests.get(f"{broken.url}/health", headers={"Connection": "close"}, timeout=5)
    assert _count(broken.url, 'route="/health"') - before == 20
    pids = {json.loads(line)["pid"] for line in broken.log_text().splitlines()
            if line.startswith("{") and '"/health"' in line}  # fmt: skip
    assert len(pids) == 2  # both workers answered, and /metrics summed them
    text = requests.get(f"{broken.url}/metrics", timeout=5).text
    assert 'gateway_torchserve_errors_total{kind="unavailable",role="detector"}' in text
    assert 'gateway_torchserve_errors_total{kind="timeout",role="pose"}' in text
    assert 'gateway_storage_errors_total{operation="upload"}' in text
    assert "gateway_inflight_requests" in text and "gateway_queue_depth" in text


def _count(url: str, selector: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("gateway_requests_total{") and selector in line)  # fmt: skip
