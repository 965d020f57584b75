"""The gateway's S3 storage against Ceph radosgw, which checks signatures and expiry for real.

moto accepts any signature; here a tampered or expired presigned URL must be refused, and a
gateway holding the wrong secret must answer 503 storage_unavailable and say why in its log.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests

from tests.support.drawings import drawing, post_drawing
from tests.support.gateway_server import run_gateway

pytestmark = pytest.mark.integration
EXPIRY_S = 4
CHEAP = {"motions": "dab,zombie", "size": 64, "fps": 5}


def radosgw_env(rgw, bucket: str, **overrides: str) -> dict[str, str | None]:
    return {
        **rgw.env(f"s3://{bucket}/animations"),
        "PRESIGN_EXPIRY_S": str(EXPIRY_S),
        "TORCHSERVE_URL": "http://127.0.0.1:9",
        "TORCHSERVE_MANAGEMENT_URL": "http://127.0.0.1:9",
        "RENDER_WORKERS": "1",
        "API_KEY": None,
        "PUBLIC_BASE_URL": None,
        **overrides,
    }


@pytest.fixture(scope="module")
def bucket(radosgw_server) -> str:
    return radosgw_server.make_bucket()


@pytest.fixture(scope="module")
def gateway(radosgw_server, bucket):
    with run_gateway(radosgw_env(radosgw_server, bucket)) as server:
        yield server


def tamper_signature(url: str) -> str:
    signature = re.search(r"X-Amz-Signature=([0-9a-f]+)", url).group(1)
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    return url.replace(signature, flipped)


def test_uploads_land_in_radosgw_and_presigned_urls_work(gateway, radosgw_server, bucket):
    reply = post_drawing(requests, gateway.url, drawing(), **CHEAP)
    assert reply.status_code == 200, reply.text
    stored = radosgw_server.client().list_objects_v2(Bucket=bucket, Prefix="animations/")
    keys = {o["Key"] for o in stored.get("Contents", [])}
    for motion, url in reply.json().items():
        assert urlsplit(url).path.removeprefix(f"/{bucket}/") in keys
        assert url.endswith(f"{motion}.gif") or f"{motion}.gif?" in url
        gif = requests.get(url, timeout=10)
        assert gif.status_code == 200 and gif.content.startswith(b"GIF89a")
        assert gif.headers["Content-Type"] == "image/gif"


def test_tampered_unsigned_and_expired_urls_are_refused(gateway, bucket):
    reply = post_drawing(requests, gateway.url, drawing(), **CHEAP)  # from storage: fresh URLs
    issued = time.monotonic()
    url, other = reply.json()["dab"], reply.json()["zombie"]
    assert requests.get(url, timeout=10).status_code == 200

    tampered = [
        tamper_signature(url),
        url.replace("dab.gif", "zombie.gif"),  # another object under dab's signature
        urlunsplit(urlsplit(url)._replace(query="")),  # no signature: the bucket is private
        re.sub(r"X-Amz-Expires=\d+", "X-Amz-Expires=604800", url),  # a longer life
    ]
    for bad in tampered:
        refused = requests.get(bad, timeout=10)
        assert refused.status_code == 403, bad
        assert b"GIF89a" not in refused.content

    time.sleep(max(0.0, EXPIRY_S + 1.5 - (time.monotonic() - issued)))
    for expired in (url, other):
        refused = requests.get(expired, timeout=10)
        assert refused.status_code == 403, refused.text
        assert b"AccessDenied" in refused.content


def test_wrong_credentials_give_503_and_a_clear_log_line(radosgw_server, bucket):
    wrong_secret = "x" * 40
    env = radosgw_env(radosgw_server, bucket, AWS_SECRET_ACCESS_KEY=wrong_secret)
    with run_gateway(env) as server:
        ready = requests.get(f"{server.url}/ready", timeout=10)
        assert ready.status_code == 503
        reply = post_drawing(requests, server.url, drawing(), size=72, fps=5, motions="dab")
        assert reply.status_code == 503, reply.text
        assert reply.json()["error"]["code"] == "storage_unavailable"
        assert "http" not in json.dumps(reply.json())  # no URL of any kind

        lines = [json.loads(ln) for ln in server.log_text().splitlines() if ln.startswith("{")]
        storage_lines = [
            ln for ln in lines if "storage" in ln["message"].lower() and ln["level"] != "info"
        ]
        assert storage_lines, "no log line says storage failed"
        # The reason, from radosgw itself (a HEAD has no body, so just its status).
        assert any("403" in ln["message"] for ln in storage_lines), storage_lines
        for secret in (wrong_secret, radosgw_server.secret_key):
            assert secret not in server.log_text()
