"""`format=webp`, `mp4`, `sprites` and `png` end to end: real gunicorn (gevent), real TorchServe, the
gateway's own /files/ and a real S3-compatible server (moto), each serving the file with its
format's content type, and the bytes decoding back to the clip asked for."""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import av
import jsonschema
import numpy as np
import pytest
import requests
from PIL import Image

from animation.sprites import layout_of
from tests.animation.test_render import _frames as decoded_frames
from tests.support.gateway_answers import assert_error, labels, stages
from tests.support.gateway_server import GatewayServer, run_gateway
from tests.support.images import drawing, encode

pytestmark = pytest.mark.integration
MOTION = "wave_hello"


def animate(url: str, seed: int, **fields: str) -> requests.Response:
    """POST /animate, multipart; with `model_free(seed)` in `fields` the models are skipped."""
    png = encode(drawing(seed).image)
    return requests.post(f"{url}/animate", files={"image": ("d.png", png, "image/png")},
                         data=fields, timeout=60)  # fmt: skip


def model_free(seed: int) -> dict[str, str]:
    return {k: json.dumps(v) for k, v in labels(seed).items()}


def expected_frames(url: str, motion: str) -> tuple[int, float]:
    """Frame count and duration (s) at the default 15 fps, as /motions states them."""
    rows = requests.get(f"{url}/motions", timeout=5).json()["motions"]
    row = next(r for r in rows if r["name"] == motion)
    return row["frames"], row["rendered_s"]


def fetch(url: str, content_type: str) -> bytes:
    reply = requests.get(url, timeout=10)
    assert reply.status_code == 200, url
    assert reply.headers["Content-Type"] == content_type
    return reply.content


def check_webp(data: bytes, frames: int, duration_s: float) -> None:
    """An animated WebP of `frames` frames lasting `duration_s`, transparent around the figure."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    image, pixels, delays_ms = decoded_frames(data)
    assert image.format == "WEBP" and image.is_animated and len(pixels) == frames
    assert sum(delays_ms) / 1000 == pytest.approx(duration_s, abs=0.02)
    alpha = pixels[..., 3]
    assert (alpha == 0).mean() > 0.3 and (alpha == 255).mean() > 0.02  # paper gone, figure kept
    assert len({frame.tobytes() for frame in pixels}) > frames // 3  # it moves


def check_mp4(data: bytes, frames: int, duration_s: float, background: tuple[int, int, int]):
    """H.264 in yuv420p that decodes back to `frames` frames over `duration_s`, on `background`."""
    assert data[4:8] == b"ftyp"
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        assert stream.codec_context.name == "h264"
        assert stream.codec_context.pix_fmt == "yuv420p"
        duration = float(container.duration) / 1e6
    assert len(decoded) == frames
    assert duration == pytest.approx(duration_s, abs=0.02)
    corners = np.concatenate([decoded[0][:4, :4], decoded[0][-4:, -4:]]).reshape(-1, 3)
    assert (np.abs(corners.astype(int) - background) <= 8).all()
    assert len({frame.tobytes() for frame in decoded}) > frames // 3


def test_webp_through_the_models_with_alpha(gateway):
    reply = animate(gateway.url, 41, motions=MOTION, format="webp")
    assert reply.status_code == 200, reply.text
    assert "detect" in stages(reply) and "pose" in stages(reply)
    url = reply.json()[MOTION]
    assert url.startswith(f"{gateway.url}/files/") and url.endswith(f"/{MOTION}.webp")
    check_webp(fetch(url, "image/webp"), *expected_frames(gateway.url, MOTION))
    again = animate(gateway.url, 41, motions=MOTION, format="webp")
    assert again.json() == reply.json() and "render" not in stages(again)


def test_mp4_on_its_background_served_in_ranges(gateway):
    reply = animate(gateway.url, 42, motions=MOTION, format="mp4", background="#1e3250",
                    **model_free(42))  # fmt: skip
    assert reply.status_code == 200, reply.text
    url = reply.json()[MOTION]
    assert url.endswith(f"/{MOTION}.mp4")
    data = fetch(url, "video/mp4")
    check_mp4(data, *expected_frames(gateway.url, MOTION), background=(0x1E, 0x32, 0x50))
    # A phone's player asks for ranges.
    part = requests.get(url, headers={"Range": "bytes=0-99"}, timeout=10)
    assert part.status_code == 206 and part.content == data[:100]
    assert part.headers["Content-Type"] == "video/mp4"
    # Another background is another file; the GIF of the same drawing is a third.
    white = animate(gateway.url, 42, motions=MOTION, format="mp4", **model_free(42)).json()
    gif = animate(gateway.url, 42, motions=MOTION, **model_free(42)).json()
    assert len({url, white[MOTION], gif[MOTION]}) == 3 and gif[MOTION].endswith(".gif")
    fetch(gif[MOTION], "image/gif")


def test_unknown_format_or_background_is_a_bad_request(gateway):
    error = assert_error(animate(gateway.url, 43, format="avi"), 400, "bad_request")
    assert "gif, webp, mp4" in error["message"]
    assert_error(animate(gateway.url, 43, format="mp4", background="navy"), 400, "bad_request")


def test_files_route_serves_only_the_formats_suffixes(gateway):
    root = Path(gateway.env["STORAGE_URL"].removeprefix("file://"))
    folder = root / "zz" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    for name in ("clip.webp", "notes.txt", "clip.GIF", "clip.mp4.bak"):
        (folder / name).write_bytes(b"stored")
    base = f"{gateway.url}/files/zz/{folder.name}"
    assert fetch(f"{base}/clip.webp", "image/webp") == b"stored"
    for name in ("notes.txt", "clip.GIF", "clip.mp4.bak"):
        assert requests.get(f"{base}/{name}", timeout=5).status_code == 404, name


@pytest.fixture(scope="module")
def s3_gateway(model_env, s3_server) -> Iterator[tuple[GatewayServer, str]]:
    bucket = f"formats-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    env = {**model_env, **s3_server.env, "STORAGE_URL": f"s3://{bucket}/anim",
           "RENDER_WORKERS": "2"}  # fmt: skip
    with run_gateway(env, ready=True) as server:
        yield server, bucket


@pytest.mark.parametrize(
    "fmt, content_type", [("webp", "image/webp"), ("mp4", "video/mp4"), ("gif", "image/gif")]
)
def test_s3_stores_each_format_with_its_content_type(s3_gateway, s3_server, fmt, content_type):
    gateway, bucket = s3_gateway
    reply = animate(gateway.url, 44, motions=MOTION, format=fmt, **model_free(44))
    assert reply.status_code == 200, reply.text
    url = reply.json()[MOTION]
    assert "X-Amz-Signature=" in url and f"/{MOTION}.{fmt}?" in url
    data = fetch(url, content_type)
    key = url.split(f"/{bucket}/", 1)[1].split("?", 1)[0]
    head = s3_server.client().head_object(Bucket=bucket, Key=key)
    assert head["ContentType"] == content_type
    frames, duration = expected_frames(gateway.url, MOTION)
    if fmt == "webp":
        check_webp(data, frames, duration)
    elif fmt == "mp4":
        check_mp4(data, frames, duration, background=(255, 255, 255))
    else:
        assert Image.open(io.BytesIO(data)).n_frames == frames


def _layout_links(reply: requests.Response) -> dict[str, str]:
    """format=sprites: motion -> its layout's URL, from the Link headers."""
    found = re.findall(r'<([^>]*)>; rel="describedby"; type="application/json"; title="([^"]*)"',
                       reply.headers.get("Link", ""))  # fmt: skip
    return {motion: url for url, motion in found}


def _gif_frames(url: str, seed: int) -> tuple[np.ndarray, list[int]]:
    reply = animate(url, seed, motions=MOTION, **model_free(seed))
    assert reply.status_code == 200, reply.text
    _, frames, delays_ms = decoded_frames(fetch(reply.json()[MOTION], "image/gif"))
    return frames, delays_ms


def _same_after_alpha(frames: np.ndarray, gif: np.ndarray) -> None:
    assert frames.shape == gif.shape
    opaque = gif[..., 3] > 0
    assert ((frames[..., 3] > 0) == opaque).all()
    assert (frames[opaque][:, :3] == gif[opaque][:, :3]).all()


def _rgba(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def _layout_schema(url: str) -> dict:
    return requests.get(f"{url}/openapi.json", timeout=5).json()["components"]["schemas"][
        "SpriteLayout"
    ]


def test_sprites_and_png_frames_are_the_gifs_frames_with_a_layout_the_api_describes(gateway):
    gif, delays_ms = _gif_frames(gateway.url, 45)
    schema = _layout_schema(gateway.url)

    reply = animate(gateway.url, 45, motions=MOTION, format="sprites", **model_free(45))
    assert reply.status_code == 200, reply.text
    assert reply.json()[MOTION].endswith(f"/{MOTION}.png")
    sheet = fetch(reply.json()[MOTION], "image/png")
    layout = json.loads(fetch(_layout_links(reply)[MOTION], "application/json"))
    jsonschema.validate(layout, schema)
    assert layout == layout_of(sheet)
    pixels = _rgba(sheet)
    _same_after_alpha(np.stack([pixels[f["y"] : f["y"] + f["h"], f["x"] : f["x"] + f["w"]]
                                for f in layout["frames"]]), gif)  # fmt: skip
    assert [f["duration_ms"] for f in layout["frames"]] == delays_ms

    reply = animate(gateway.url, 45, motions=MOTION, format="png", **model_free(45))
    assert reply.status_code == 200, reply.text
    assert "Link" not in reply.headers
    with zipfile.ZipFile(io.BytesIO(fetch(reply.json()[MOTION], "application/zip"))) as archive:
        frames = np.stack([_rgba(archive.read(n)) for n in sorted(archive.namelist())
                           if n.startswith("frame_")])  # fmt: skip
        jsonschema.validate(json.loads(archive.read("layout.json")), schema)
    _same_after_alpha(frames, gif)


def test_s3_stores_a_sprite_sheet_with_its_layout_before_it(s3_gateway, s3_server):
    gateway, bucket = s3_gateway
    reply = animate(gateway.url, 46, motions=MOTION, format="sprites", **model_free(46))
    assert reply.status_code == 200, reply.text
    sheet = fetch(reply.json()[MOTION], "image/png")
    layout_url = _layout_links(reply)[MOTION]
    assert "X-Amz-Signature=" in layout_url and f"/{MOTION}.json?" in layout_url
    assert json.loads(fetch(layout_url, "application/json")) == layout_of(sheet)
    again = animate(gateway.url, 46, motions=MOTION, format="sprites", **model_free(46))
    assert "render" not in stages(again)  # answered from storage, the layout's URL with it
    assert _layout_links(again)[MOTION].split("?")[0] == layout_url.split("?")[0]
