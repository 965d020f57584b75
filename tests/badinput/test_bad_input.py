"""Bad and odd uploads against the real gateway: the right status, fast, with nothing left over.

Refusals must come within 1 s and before any pixel is decoded; valid but unusual images
(grayscale, 16-bit, CMYK, alpha, EXIF-rotated) must render; a blank page is a 422. The
renders use the model-free options (tests/support/drawings.py), so no TorchServe is needed.
"""

from __future__ import annotations

import json
import os
import time

import psutil
import pytest
import requests

from tests.support import awkward_images as images
from tests.support.drawings import drawing, post_drawing

pytestmark = pytest.mark.integration
CHEAP = {"motions": "dab", "size": 64, "fps": 5}  # a real render, kept short
MB = 1024 * 1024


@pytest.fixture(scope="module")
def gateway(offline_gateway):
    """The session's offline gateway, with what it holds before this module's uploads."""
    gw = offline_gateway
    # One render first: the render workers are warm before anything is timed.
    assert post_drawing(requests, gw.url, drawing(), **CHEAP).status_code == 200
    gw.processes_before = {p.pid for p in psutil.Process(gw.proc.pid).children(recursive=True)}
    return gw


def post_raw(gw, body: bytes, media_type: str = "image/png") -> tuple[requests.Response, float]:
    start = time.monotonic()
    reply = requests.post(
        f"{gw.url}/animate", data=body, headers={"Content-Type": media_type}, timeout=30
    )
    return reply, time.monotonic() - start


def assert_error(reply: requests.Response, status: int, codes: set[str]) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert set(body) == {"error"} and body["error"]["code"] in codes, body
    assert body["error"]["message"] and "Traceback" not in reply.text


REFUSED = {
    "not an image": (lambda d: b"%PDF-1.7\n" + os.urandom(4096), 400, {"invalid_image"}),
    "truncated": (images.truncated, 400, {"invalid_image"}),
    "zero bytes": (lambda d: b"", 400, {"bad_request", "invalid_image"}),
    "50 MB": (lambda d: os.urandom(50 * MB), 413, {"payload_too_large"}),
}


@pytest.mark.parametrize("case", list(REFUSED))
@pytest.mark.parametrize("form", ["raw", "multipart"])
def test_refused_with_the_right_status_within_a_second(gateway, case, form):
    make, status, codes = REFUSED[case]
    d = drawing()
    body = make(d)
    if form == "raw":
        reply, latency = post_raw(gateway, body)
    else:
        start = time.monotonic()
        reply = post_drawing(requests, gateway.url, d, image=body, timeout=30)
        latency = time.monotonic() - start
    assert_error(reply, status, codes)
    assert latency < 1.0


def test_a_pixel_bomb_is_refused_before_it_is_decoded(gateway):
    bomb = images.png_bomb(30_000)  # 900 M pixels in ~100 KB
    procs = [psutil.Process(gateway.proc.pid), *psutil.Process(gateway.proc.pid).children(True)]
    rss_before = {p.pid: p.memory_info().rss for p in procs}
    for send in (
        lambda: post_raw(gateway, bomb),
        lambda: (post_drawing(requests, gateway.url, drawing(), image=bomb, **CHEAP), 0.0),
    ):
        start = time.monotonic()
        reply, _ = send()
        assert time.monotonic() - start < 1.0
        assert_error(reply, 413, {"image_too_large"})
    # Decoding it would take ~1 GB; not one process grew by more than a few MB.
    for p in procs:
        assert p.memory_info().rss - rss_before[p.pid] < 32 * MB, p.cmdline()


VALID_BUT_ODD = {
    "grayscale": (images.grayscale, "image/png"),
    "16-bit grayscale": (images.gray_16bit, "image/png"),
    "16-bit RGB": (images.rgb_16bit, "image/png"),
    "CMYK JPEG": (images.cmyk_jpeg, "image/jpeg"),
    "alpha": (images.with_alpha, "image/png"),
}


@pytest.mark.parametrize("case", list(VALID_BUT_ODD))
def test_valid_but_odd_images_render(gateway, case):
    make, media_type = VALID_BUT_ODD[case]
    d = drawing()
    reply = post_drawing(requests, gateway.url, d, image=make(d), media_type=media_type, **CHEAP)
    assert reply.status_code == 200, reply.text
    gif = requests.get(reply.json()["dab"], timeout=10)
    assert gif.status_code == 200 and gif.content.startswith(b"GIF89a")


@pytest.mark.parametrize("orientation", [6, 8])
def test_an_exif_rotated_photo_is_turned_upright(gateway, orientation):
    # Stored sideways, the 400x600 portrait is 600x400: the box and keypoints (given for
    # the upright picture) would fall outside it unless the EXIF turn is applied.
    d = drawing()
    rotated = images.exif_rotated(d, orientation)
    reply = post_drawing(requests, gateway.url, d, image=rotated, media_type="image/jpeg", **CHEAP)
    assert reply.status_code == 200, reply.text
    sideways = images.without_exif(rotated)
    reply = post_drawing(requests, gateway.url, d, image=sideways, media_type="image/jpeg", **CHEAP)
    assert reply.status_code == 400, reply.text


def test_a_blank_page_is_a_422(gateway):
    d = drawing()
    start = time.monotonic()
    reply = post_drawing(requests, gateway.url, d, image=images.blank_page(d), **CHEAP)
    assert_error(reply, 422, {"no_character_detected"})
    assert time.monotonic() - start < 5.0


def test_options_that_make_no_sense_are_400(gateway):
    d = drawing()
    cases = [
        {"keypoints": json.dumps([[1, 2]] * 3)},  # not 17 points
        {"bbox": "[1, 2, 3]"},
        {"size": "99999"},
        {"fps": "-1"},
    ]
    for options in cases:
        reply = post_drawing(requests, gateway.url, d, **options)
        assert reply.status_code == 400, (options, reply.text)
    reply = post_drawing(requests, gateway.url, d, motions="moonwalk")
    assert_error(reply, 400, {"unknown_motion"})


def test_nothing_is_left_behind(gateway):
    """Runs last in this module: no temp file, no half-written GIF, no extra process."""
    leftovers = [
        p
        for p in gateway.temp_dir.rglob("*")
        if not p.relative_to(gateway.temp_dir).parts[0].startswith("gateway-metrics-")
    ]
    assert not leftovers
    assert not [p for p in gateway.storage_dir.rglob("*") if p.name.startswith(".tmp")]
    now = {p.pid for p in psutil.Process(gateway.proc.pid).children(recursive=True)}
    assert now == gateway.processes_before
