"""GET /motions lists each motion's group and preview; GET /motions/<name>/preview.gif
serves it (real gunicorn, the render workers drawing it once)."""

from __future__ import annotations

import io

import pytest
import requests
from PIL import Image

from animation.motions import motion_table
from tests.support.gateway_answers import assert_error

pytestmark = pytest.mark.integration


def test_every_motion_has_a_group_and_an_animated_preview(gateway):
    rows = requests.get(f"{gateway.url}/motions", timeout=5).json()["motions"]
    assert [r["name"] for r in rows] == list(motion_table())
    assert {r["group"] for r in rows} == {"dance", "everyday", "sport", "silly"}
    previews = {}
    for row in rows:
        assert row["preview"] == f"/motions/{row['name']}/preview.gif"
        reply = requests.get(f"{gateway.url}{row['preview']}", timeout=30)
        assert reply.status_code == 200 and reply.headers["Content-Type"] == "image/gif"
        gif = Image.open(io.BytesIO(reply.content))
        assert gif.is_animated and max(gif.size) == 96
        previews[row["name"]] = reply.content
    assert len(set(previews.values())) == len(previews)  # each shows its own motion


def test_a_preview_is_kept_and_cached_by_the_browser(gateway):
    url = f"{gateway.url}/motions/clap/preview.gif"
    first = requests.get(url, timeout=30)
    again = requests.get(url, timeout=30)
    assert again.content == first.content
    assert "max-age=" in first.headers["Cache-Control"] and first.headers["ETag"]
    same = requests.get(url, headers={"If-None-Match": first.headers["ETag"]}, timeout=5)
    assert same.status_code == 304 and not same.content


def test_an_unknown_motion_has_no_preview(gateway):
    assert_error(requests.get(f"{gateway.url}/motions/moonwalk/preview.gif", timeout=5), 404,
                 "not_found")  # fmt: skip
