"""The error mapping (gateway/web/error_handlers.py) through Flask's test client: every failure
is the API's JSON error, with the status and code its kind says."""

from __future__ import annotations

import pytest

from animation.images import ImageTooLarge, UnsupportedImage
from gateway.app import create_app
from gateway.config import Config
from gateway.rendering.pool import NoWorkerFree


@pytest.fixture
def client(tmp_path):
    app = create_app(Config(storage_url=f"file://{tmp_path}", retry_after_s=7))
    failures = {
        "policy-413": ImageTooLarge("image is 9000x9000, more than 40000000 pixels"),
        "policy-415": UnsupportedImage("GIF images are not accepted; send PNG, JPEG or WebP"),
        "no-worker": NoWorkerFree("no render worker came free within 30 s; retry shortly"),
        "bug": ZeroDivisionError("a bug"),
    }

    @app.get("/fail/<kind>")
    def fail(kind: str):
        raise failures[kind]

    return app.test_client()


@pytest.mark.parametrize(
    "kind, status, code",
    [("policy-413", 413, "image_too_large"), ("policy-415", 415, "unsupported_media_type"),
     ("no-worker", 503, "overloaded"), ("bug", 500, "internal_error")],
)  # fmt: skip
def test_each_failure_is_a_json_error_with_its_status_and_code(client, kind, status, code):
    reply = client.get(f"/fail/{kind}", headers={"X-Request-ID": "req-1"})
    assert reply.status_code == status
    assert reply.get_json()["error"]["code"] == code
    assert reply.get_json()["error"]["request_id"] == "req-1"
    assert "Traceback" not in reply.get_data(as_text=True)
    if code == "overloaded":  # the render pool's refusal is admission's, same Retry-After
        assert reply.headers["Retry-After"] == "7"
