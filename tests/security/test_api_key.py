"""API_KEY set: POST routes need `Authorization: Bearer <key>`; reads stay open; no key in logs."""

from __future__ import annotations

import secrets

import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.gateway_server import run_gateway
from tests.support.offline_gateway import offline_env

pytestmark = pytest.mark.integration
KEY = "k-" + secrets.token_urlsafe(24)
WRONG = KEY[:-1] + ("y" if KEY.endswith("x") else "x")  # one character off, never the key


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    env = offline_env(tmp_path_factory.mktemp("gifs"), API_KEY=KEY, RENDER_WORKERS="1")
    with run_gateway(env) as server:
        yield server


@pytest.mark.parametrize("route", ["/animate", "/"])
@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", f"Bearer {WRONG}", f"Basic {KEY}", f"Bearer {KEY} extra", KEY],
    # Named, not shown: the key is drawn afresh in each process (and each xdist worker).
    ids=["none", "empty", "no-token", "wrong-token", "basic", "extra-word", "no-scheme"],
)
def test_posts_without_the_right_bearer_token_are_401(gateway, route, authorization):
    headers = {"Content-Type": "image/png"}
    if authorization is not None:
        headers["Authorization"] = authorization
    reply = requests.post(f"{gateway.url}{route}", data=drawing().png, headers=headers, timeout=10)
    assert reply.status_code == 401, reply.text
    assert reply.json()["error"]["code"] == "unauthorized"
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    assert KEY not in reply.text


def test_the_right_token_renders(gateway):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {KEY}"
    reply = post_drawing(session, gateway.url, drawing(), motions="dab", size=64, fps=5)
    assert reply.status_code == 200, reply.text
    # The GIF URLs it hands out work without the key (they are what the app shows).
    assert requests.get(reply.json()["dab"], timeout=10).status_code == 200


@pytest.mark.parametrize("route", ["/health", "/ready", "/motions", "/metrics"])
def test_reads_need_no_token(gateway, route):
    assert requests.get(f"{gateway.url}{route}", timeout=10).status_code in (200, 503)


def test_the_key_never_reaches_the_logs(gateway):
    requests.post(
        f"{gateway.url}/animate", data=b"x", headers={"Authorization": f"Bearer {KEY}"}, timeout=10
    )
    log = gateway.log_text()
    assert "POST /animate 401" in log  # the requests above were logged...
    assert KEY not in log and KEY[:-1] not in log  # ...without the key or a near miss
