"""What TorchServe's handlers refuse is the client's error, in the handler's words, and no
model error: a real TorchServe with the project's handlers, behind the real gateway."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import requests

from tests.support.gateway_answers import assert_error
from tests.support.images import drawing, encode

pytestmark = pytest.mark.integration


def model_errors(gateway_url: str) -> float:
    """gateway_torchserve_errors_total, every role and kind."""
    text = requests.get(f"{gateway_url}/metrics", timeout=5).text
    return sum(float(v) for v in re.findall(r"^gateway_torchserve_errors_total\{.*\} (\S+)$",
                                            text, re.M))  # fmt: skip


def post(gateway_url: str, png: bytes, **options: str) -> requests.Response:
    return requests.post(f"{gateway_url}/animate", data=png, params=options,
                         headers={"Content-Type": "image/png"}, timeout=60)  # fmt: skip


def test_a_60_to_1_image_is_a_400_in_torchserves_words(gateway, torchserve_server):
    line = encode(np.full((20, 1200, 3), 255, np.uint8))
    direct = requests.post(
        f"{torchserve_server.inference_url}/predictions/drawn_humanoid_detector",
        data=line, headers={"Content-Type": "image/png"}, timeout=30,
    )  # fmt: skip
    assert direct.status_code == 400
    reason = direct.json()["message"]
    before = model_errors(gateway.url)
    # The gateway applies the same policy to the upload: refused at once, same words.
    error = assert_error(post(gateway.url, line), 400, "invalid_image")
    assert error["message"] == reason
    # A client's box 60 times wider than high: the pose model is sent that crop and refuses
    # it; its 400 reaches the client with its reason, not as 503 model_unavailable.
    page = drawing(24).image
    wide = np.pad(page, ((0, 0), (0, 1000 - page.shape[1]), (0, 0)), constant_values=255)
    # Grown by the gateway's 10% margin and cut to the page: a 1000 x 8 crop.
    error = assert_error(post(gateway.url, encode(wide), bbox=json.dumps([0, 100, 990, 106])),
                         400, "invalid_image")  # fmt: skip
    assert error["message"].startswith("drawn_humanoid_pose_estimator refused the image: ")
    assert re.search(r"image is \d+x\d+: sides further apart than 50:1", error["message"])
    assert model_errors(gateway.url) == before  # not counted as a model error
