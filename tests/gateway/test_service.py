"""The gateway end to end: real gunicorn (gevent worker), real TorchServe, real storage."""

from __future__ import annotations

import base64
import json
import re

import pytest
import requests

from tests.support.gateway_answers import (
    DEFAULT_MOTIONS,
    fetch_gif,
    labels,
    model_calls,
    stages,
)
from tests.support.images import drawing, encode

pytestmark = pytest.mark.integration


def test_health_ready_and_motions(gateway):
    assert requests.get(f"{gateway.url}/health", timeout=5).json() == {"status": "ok"}
    assert requests.get(f"{gateway.url}/ready", timeout=5).json() == {"ready": True, "missing": []}
    table = requests.get(f"{gateway.url}/motions", timeout=5).json()
    assert table["defaults"] == DEFAULT_MOTIONS
    by_name = {m["name"]: m for m in table["motions"]}
    assert set(DEFAULT_MOTIONS) <= set(by_name)
    for motion in by_name.values():
        assert motion["duration_s"] > 0.5
        assert motion["frames"] == min(150, round(motion["duration_s"] * 15))


def test_raw_photo_through_both_models_then_from_storage(gateway, torchserve_server):
    photo = encode(drawing(21).image, "JPEG", quality=90)
    before = model_calls(torchserve_server)
    first = requests.post(f"{gateway.url}/animate", data=photo,
                          headers={"Content-Type": "image/jpeg"}, timeout=60)  # fmt: skip
    assert first.status_code == 200, first.text
    after = model_calls(torchserve_server)
    for model in ("drawn_humanoid_detector", "drawn_humanoid_pose_estimator",
                  "drawn_humanoid_segmenter"):  # fmt: skip
        assert after[model] - before.get(model, 0) == 1  # once per request, not per motion
    urls = first.json()
    assert list(urls) == DEFAULT_MOTIONS
    assert re.fullmatch(r"[0-9a-f]{32}", first.headers["X-Request-ID"])
    assert stages(first) == ["receive", "decode", "lookup", "queue", "detect", "pose",
                             "segmenter", "segment", "rig", "render", "upload"]  # fmt: skip
    for url in urls.values():
        assert url.startswith(f"{gateway.url}/files/")
        gif = fetch_gif(url)
        assert max(gif.size) == 256

    again = requests.post(f"{gateway.url}/", data=photo, timeout=60,
                          headers={"Content-Type": "image/jpeg", "X-Request-ID": "retry-42"})  # fmt: skip
    assert again.status_code == 200 and again.json() == urls
    assert again.headers["X-Request-ID"] == "retry-42"
    assert stages(again) == ["receive", "decode", "lookup"]  # no render slot taken


def test_multipart_with_size_fps_and_motions(gateway):
    png = encode(drawing(22).image)
    reply = requests.post(
        f"{gateway.url}/animate",
        files={"image": ("drawing.png", png, "image/png")},
        data={
            "motions": "zombie",
            "size": "128",
            "fps": "10",
            **{k: json.dumps(v) for k, v in labels(22).items()},
        },
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert list(reply.json()) == ["zombie"]
    assert "detect" not in stages(reply) and "pose" not in stages(reply)
    gif = fetch_gif(reply.json()["zombie"])
    assert max(gif.size) == 128
    duration = requests.get(f"{gateway.url}/motions", timeout=5).json()
    zombie = next(m for m in duration["motions"] if m["name"] == "zombie")
    assert gif.n_frames == round(zombie["duration_s"] * 10)


def test_json_base64_as_the_android_app_sends(gateway):
    body = {"file": base64.b64encode(encode(drawing(23).image)).decode(),
            "motions": ["dab", "wave_hello"], **labels(23)}  # fmt: skip
    reply = requests.post(f"{gateway.url}/animate", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    assert list(reply.json()) == ["dab", "wave_hello"]
    for url in reply.json().values():
        fetch_gif(url)


def test_file_route_refuses_paths_outside_storage(gateway):
    for path in (
        "/files/../../etc/passwd",
        "/files/%2e%2e/%2e%2e/etc/passwd.gif",
        "/files/nope.gif",
    ):
        reply = requests.get(gateway.url + path, timeout=5)
        assert reply.status_code == 404, path
        assert "root:" not in reply.text
