"""MOTIONS_DIR end to end: the folder's motions are listed by /motions (with what a long
clip loses) and rendered by the render workers; a bad folder stops the gateway at start
with a message naming the file and line. Real gunicorn (gevent), real TorchServe."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator

import pytest
import requests
from PIL import Image

from animation.motions import motion_table
from tests.support.gateway_answers import labels
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.images import drawing, encode
from tests.support.motion_files import CONVENTIONS, convention, lengthened, with_bad_number

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def motions_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("motions")
    shutil.copy(CONVENTIONS / "rokoko_zombie.bvh", folder / "shamble.bvh")
    (folder / "shamble.yaml").write_text("description: a slow zombie walk\n")
    (folder / "long_dance.bvh").write_bytes(lengthened(convention("biped_dance"), 4))
    return folder


@pytest.fixture(scope="module")
def folder_gateway(model_env, motions_dir, tmp_path_factory) -> Iterator[GatewayServer]:
    env = {**model_env, "MOTIONS_DIR": str(motions_dir), "RENDER_WORKERS": "2",
           "STORAGE_URL": f"file://{tmp_path_factory.mktemp('animations')}",
           "DEFAULT_MOTIONS": "dab"}  # fmt: skip
    with run_gateway(env, ready=True) as server:
        yield server


def test_the_folder_is_listed_with_what_a_long_clip_loses(folder_gateway):
    table = requests.get(f"{folder_gateway.url}/motions", timeout=5).json()
    rows = {row["name"]: row for row in table["motions"]}
    assert list(rows) == [*motion_table(), "long_dance", "shamble"]
    assert table["defaults"] == ["dab"]
    assert rows["shamble"]["description"] == "a slow zombie walk"
    assert rows["shamble"]["cut_s"] == 0 and rows["shamble"]["frames"] == 45
    long = rows["long_dance"]
    assert long["duration_s"] > 15 and long["frames"] == 150 and long["rendered_s"] == 10.0
    assert long["cut_s"] == pytest.approx(long["duration_s"] - 10.0, abs=0.01)


def test_a_folder_motion_renders(folder_gateway):
    sample = labels(61)
    reply = requests.post(
        f"{folder_gateway.url}/animate",
        files={"image": ("d.png", encode(drawing(61).image), "image/png")},
        data={"motions": "shamble,long_dance", **{k: json.dumps(v) for k, v in sample.items()}},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert list(reply.json()) == ["shamble", "long_dance"]
    for name, frames in (("shamble", 45), ("long_dance", 150)):
        gif = Image.open(io.BytesIO(requests.get(reply.json()[name], timeout=10).content))
        assert gif.is_animated and gif.n_frames == frames


@pytest.mark.parametrize("problem", ["malformed", "not a folder"])
def test_a_bad_folder_stops_the_gateway_at_start(model_env, tmp_path, problem):
    folder = tmp_path / "motions"
    if problem == "malformed":
        folder.mkdir()
        data, line = with_bad_number(convention("cmu_walk"))
        (folder / "walk.bvh").write_bytes(data)
        expected = f"walk.bvh:{line}: "
    else:
        folder.write_text("a file, not a folder")
        expected = "is not a directory"
    server = GatewayServer({**model_env, "MOTIONS_DIR": str(folder), "RENDER_WORKERS": "1",
                            "STORAGE_URL": f"file://{tmp_path / 'animations'}"})  # fmt: skip
    try:
        with pytest.raises(RuntimeError, match="gunicorn exited with 3"):
            server.start(timeout=30)
        message = next(line for line in server.log_text().splitlines()
                       if line.startswith("MOTIONS_DIR "))  # fmt: skip
        assert expected in message
        assert "cpu_worker" not in server.log_text()  # no render worker read the folder
    finally:
        server.stop()
        server.log_path.unlink(missing_ok=True)
