"""A new version of a model renders the same drawing again instead of serving the GIFs the
old one made. TorchServe's model API (register, set-default) is off, as in the project's
config: a version changes when TorchServe restarts with a new archive, as on a rollout."""

from __future__ import annotations

import time

import pytest
import requests

from gateway.backends.torchserve_client import VERSIONS_TTL_S
from tests.support.images import drawing, encode
from tests.support.torchserve import WEIGHTS_DIR, make_torchserve
from torchserve.build_archives import ARCHIVES, build

pytestmark = pytest.mark.integration
POSE = "drawn_humanoid_pose_estimator"
NEW_VERSION = "2.0.test"


def stages(reply: requests.Response) -> list[str]:
    return [entry.split(";")[0].strip() for entry in reply.headers["Server-Timing"].split(",")]


def post(url: str, png: bytes) -> requests.Response:
    reply = requests.post(f"{url}/animate", data=png, params={"motions": "dab", "size": 64},
                          headers={"Content-Type": "image/png"}, timeout=60)  # fmt: skip
    assert reply.status_code == 200, reply.text
    return reply


def serving_version(management_url: str) -> str:
    [described] = requests.get(f"{management_url}/models/{POSE}", timeout=5).json()
    return described["modelVersion"]


@pytest.fixture
def own_torchserve(tmp_path):
    """A TorchServe of this test's own: it is restarted with a new archive."""
    server = make_torchserve(tmp_path / "torchserve")
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_a_new_model_version_renders_again(own_torchserve, gateway_factory, tmp_path):
    ts = own_torchserve
    gateway = gateway_factory({"TORCHSERVE_URL": ts.inference_url, "RENDER_WORKERS": "1",
                               "TORCHSERVE_MANAGEMENT_URL": ts.management_url,
                               "STORAGE_URL": f"file://{tmp_path / 'gifs'}"}, ready=True)  # fmt: skip
    png = encode(drawing(26).image)
    first = post(gateway.url, png)
    assert "render" in stages(first)
    assert "render" not in stages(post(gateway.url, png))  # from storage, as long as...

    ts.stop()  # ...the same models serve: a rollout brings a new pose archive
    build(ARCHIVES[POSE], WEIGHTS_DIR, ts.model_store, version=NEW_VERSION)
    ts.start()
    assert serving_version(ts.management_url) == NEW_VERSION
    time.sleep(VERSIONS_TTL_S)  # the longest the gateway keeps the versions it read
    again = post(gateway.url, png)
    assert {"pose", "render", "upload"} <= set(stages(again))
    assert "detect" in stages(again)  # the detector did not change, but its answer is needed
    assert again.json()["dab"] != first.json()["dab"]
    assert "render" not in stages(post(gateway.url, png))  # stored again, under the new version
