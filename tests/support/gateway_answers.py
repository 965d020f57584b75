"""Reading a running gateway's answers in the tests: errors, stages, GIFs, model calls."""

from __future__ import annotations

import io
import re

import requests
from PIL import Image

from tests.support.images import drawing

DEFAULT_MOTIONS = ["dab", "jumping", "wave_hello", "zombie"]


def stages(reply: requests.Response) -> list[str]:
    return [entry.split(";")[0].strip() for entry in reply.headers["Server-Timing"].split(",")]


def stage_seconds(reply: requests.Response) -> dict[str, float]:
    """Each stage's time in the reply's Server-Timing, seconds."""
    found = re.findall(r"([a-z_]+);dur=([0-9.]+)", reply.headers["Server-Timing"])
    return {name: float(ms) / 1000 for name, ms in found}


def fetch_gif(url: str) -> Image.Image:
    reply = requests.get(url, timeout=10)
    assert reply.status_code == 200, url
    assert reply.headers["Content-Type"] == "image/gif"
    gif = Image.open(io.BytesIO(reply.content))
    assert gif.format == "GIF" and gif.is_animated and gif.n_frames > 5
    return gif


def labels(seed: int) -> dict:
    """bbox and keypoints the synth generator drew: options that skip both models."""
    sample = drawing(seed)
    return {"bbox": sample.bbox.tolist(), "keypoints": sample.keypoints[:, :2].tolist()}


def assert_error(reply: requests.Response, status: int, code: str) -> dict:
    assert reply.status_code == status, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    error = reply.json()["error"]
    assert error["code"] == code and error["message"]
    assert error["request_id"] == reply.headers["X-Request-ID"]
    assert "Traceback" not in reply.text
    return error


def model_calls(torchserve_server) -> dict[str, float]:
    """TorchServe's own count of inference requests per model."""
    text = requests.get(f"{torchserve_server.metrics_url}/metrics", timeout=5).text
    found = re.findall(r'ts_inference_requests_total\{model_name="(\w+)".*\} ([0-9.]+)', text)
    return {name: float(count) for name, count in found}
