"""A motion of the client's own: a `bvh` part in a multipart POST /animate, end to end
(real gunicorn with the gevent worker, real TorchServe, local-folder storage)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import requests
from PIL import Image

from animation.bvh import UPLOAD_LIMITS, parse_bvh_bytes
from animation.motions import motion_from_bvh
from tests.support.gateway_answers import assert_error, labels, model_calls, stages
from tests.support.images import drawing, encode
from tests.support.motion_files import convention, frames_only, with_bad_number

pytestmark = pytest.mark.integration


def animate(url: str, seed: int, bvh: tuple | None, models: bool = False, **fields: str):
    """Multipart: the drawing, the `bvh` part (filename, bytes), the options; the drawing's
    known box and joints skip the models unless `models`."""
    files = {"image": ("d.png", encode(drawing(seed).image), "image/png")}
    if bvh is not None:
        files["bvh"] = bvh
    if not models:
        fields = {**{k: json.dumps(v) for k, v in labels(seed).items()}, **fields}
    return requests.post(f"{url}/animate", files=files, data=fields, timeout=60)


def frames_of(url: str) -> Image.Image:
    reply = requests.get(url, timeout=10)
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "image/gif"
    gif = Image.open(io.BytesIO(reply.content))
    assert gif.format == "GIF" and gif.is_animated
    return gif


def planned_frames(data: bytes, fps: float = 15, **segment) -> int:
    """The frame count the renderer plans for this BVH, read here the way the gateway does."""
    return motion_from_bvh(parse_bvh_bytes(data), **segment).plan(fps, 150).frames


def stored_files(gateway) -> set[Path]:
    root = Path(gateway.env["STORAGE_URL"].removeprefix("file://"))
    return {p for p in root.rglob("*") if p.is_file()}


def test_a_bvh_file_animates_the_drawing_under_its_name(gateway, torchserve_server):
    data = convention("cmu_jumping_jack")
    before = model_calls(torchserve_server)
    reply = animate(gateway.url, 51, ("cmu_jumping_jack.bvh", data), models=True)
    assert reply.status_code == 200, reply.text
    assert list(reply.json()) == ["cmu_jumping_jack"]  # only the uploaded motion
    assert model_calls(torchserve_server)["drawn_humanoid_detector"] == (
        before.get("drawn_humanoid_detector", 0) + 1
    )
    assert "motion" in stages(reply) and "render" in stages(reply)
    url = reply.json()["cmu_jumping_jack"]
    assert url.endswith("/cmu_jumping_jack.gif")
    gif = frames_of(url)
    assert gif.n_frames == planned_frames(data)
    # The same file again: from storage. Other bytes under the same name: rendered anew.
    again = animate(gateway.url, 51, ("cmu_jumping_jack.bvh", data), models=True)
    assert again.json() == reply.json() and stages(again) == ["receive", "decode", "lookup"]
    other = animate(gateway.url, 51, ("cmu_jumping_jack.bvh", convention("biped_jumping_jack")),
                    models=True)  # fmt: skip
    assert other.status_code == 200 and other.json()["cmu_jumping_jack"] != url


def test_beside_named_motions_a_nameless_part_is_custom(gateway):
    reply = animate(gateway.url, 52, (None, convention("rokoko_zombie")), motions="dab")
    assert reply.status_code == 200, reply.text
    assert list(reply.json()) == ["dab", "custom"]
    assert frames_of(reply.json()["custom"]).n_frames == planned_frames(convention("rokoko_zombie"))
    frames_of(reply.json()["dab"])


def test_a_segment_and_a_joint_map_for_the_upload(gateway):
    data = convention("mixamo_walk")
    reply = animate(gateway.url, 53, ("walk.bvh", data), fps="10", start="0.5", end="1.5",
                    map="left_elbow=mixamorig:LeftForeArm")  # fmt: skip
    assert reply.status_code == 200, reply.text
    gif = frames_of(reply.json()["walk"])
    assert (
        gif.n_frames == planned_frames(data, 10, start_s=0.5, end_s=1.5) < planned_frames(data, 10)
    )


@pytest.mark.parametrize("frame", [0, 40])
def test_a_malformed_bvh_is_invalid_motion_naming_its_line(gateway, torchserve_server, frame):
    data, line = with_bad_number(convention("cmu_walk"), frame)
    before, calls = stored_files(gateway), model_calls(torchserve_server)
    reply = animate(gateway.url, 54, ("my walk.bvh", data), models=True)
    error = assert_error(reply, 400, "invalid_motion")
    assert error["message"].startswith(f"my_walk.bvh:{line}: ") and "'oops'" in error["message"]
    # Refused before any model was asked, and nothing stored.
    assert model_calls(torchserve_server) == calls
    assert stored_files(gateway) == before


def test_a_bvh_without_limbs_is_invalid_motion_saying_what_is_missing(gateway):
    error = assert_error(animate(gateway.url, 55, ("stick.bvh", frames_only(30))), 400,
                         "invalid_motion")  # fmt: skip
    assert "cannot find the joints for" in error["message"] and "left_elbow" in error["message"]


@pytest.mark.parametrize(
    "data, limit",
    [
        (b"HIERARCHY\n" + b" " * UPLOAD_LIMITS.max_bytes, "bytes"),
        (frames_only(UPLOAD_LIMITS.max_frames + 1), "frames"),
    ],
)
def test_an_oversized_bvh_is_413(gateway, data, limit):
    before = stored_files(gateway)
    error = assert_error(animate(gateway.url, 56, ("big.bvh", data)), 413, "motion_too_large")
    assert str(getattr(UPLOAD_LIMITS, f"max_{limit}")) in error["message"]
    assert stored_files(gateway) == before


def test_retarget_options_without_a_bvh_are_a_bad_request(gateway):
    error = assert_error(animate(gateway.url, 57, None, start="1"), 400, "bad_request")
    assert "'bvh'" in error["message"]
