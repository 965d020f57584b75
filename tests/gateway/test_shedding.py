"""Refusing a full house before Flask (gateway/shedding.py): which requests, the bytes of the
answer, its pace. The worker that uses it runs for real in tests/faults/test_overload.py."""

from __future__ import annotations

import json

import pytest

from gateway.admission import Admission
from gateway.app import create_app
from gateway.config import Config
from gateway.errors import error_document
from gateway.load_clients import parse_answer
from gateway.shedding import RefusalPace, Shedder, guarded_paths, parse_head, refusal_bytes


@pytest.fixture
def app(tmp_path):
    return create_app(Config(storage_url=f"file://{tmp_path}", retry_after_s=3))


def fill(admission: Admission) -> None:
    admission.active, admission.waiting = admission.slots, admission.queue


def test_the_routes_that_render_are_guarded_and_no_other(app):
    assert guarded_paths(app) == {"/animate", "/"}


def test_flask_refuses_a_full_house_before_the_body_with_the_same_answer(app):
    client = app.test_client()
    fill(app.extensions["gateway"].admission)
    reply = client.post("/animate", data=b"not even an image", content_type="image/png",
                        headers={"X-Request-ID": "r-1"})  # fmt: skip
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "3"
    assert reply.get_json() == error_document(
        "overloaded", reply.get_json()["error"]["message"], "r-1"
    )
    assert client.get("/health").status_code == 200  # only the routes that render


def test_parse_head():
    head = (
        b"POST /animate?motions=dab HTTP/1.1\r\nHost: x\r\nX-Request-ID: abc\r\nContent-Length: 5"
    )
    assert parse_head(head) == (
        "POST", "/animate", {"host": "x", "x-request-id": "abc", "content-length": "5"},
    )  # fmt: skip
    assert parse_head(b"POST / HTTP/1.0") == ("POST", "/", {})
    assert parse_head(b"PRI * HTTP/2.0") is None  # HTTP/2's preface: gunicorn's business
    assert parse_head(b"POST /animate") is None
    assert parse_head(b"POST /animate HTTP/1.1\r\nno colon here") is None


def test_refusal_bytes_are_the_api_error_and_close_the_connection():
    raw = refusal_bytes("req-7", 4, "busy")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert parse_answer(raw) == ("503", 4.0)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 SERVICE UNAVAILABLE"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Connection"] == "close" and headers["X-Request-ID"] == "req-7"
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    assert json.loads(body) == error_document("overloaded", "busy", "req-7")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pace_spaces_refusals_and_never_holds_one_past_the_bound():
    clock = Clock()
    pace = RefusalPace(per_s=100, max_hold_s=0.025, clock=clock)
    holds = [pace.hold_s() for _ in range(5)]
    # 10 ms apart; the fourth would wait 30 ms, past the bound: answered at the bound
    # without taking that turn, and so is the fifth.
    assert holds == pytest.approx([0.0, 0.01, 0.02, 0.025, 0.025])
    clock.now += 0.025  # the turn at 30 ms is 5 ms away now
    assert pace.hold_s() == pytest.approx(0.005)
    clock.now += 1.0  # a quiet second: answered at once again
    assert pace.hold_s() == 0.0


def test_shedder_refuses_only_posts_to_guarded_routes_of_a_full_house():
    admission = Admission(slots=1, queue=1, wait_s=1, retry_after_s=2)
    shedder = Shedder(admission, frozenset({"/animate", "/"}))
    assert not shedder.refuses("POST", "/animate", {})  # room left
    fill(admission)
    assert shedder.full
    assert shedder.refuses("POST", "/animate", {}) and shedder.refuses("POST", "/", {})
    assert not shedder.refuses("GET", "/animate", {})
    assert not shedder.refuses("POST", "/annotate-not-guarded", {})


def test_with_an_api_key_only_a_caller_with_it_is_refused_here():
    admission = Admission(slots=1, queue=0, wait_s=1, retry_after_s=2)
    fill(admission)
    shedder = Shedder(admission, frozenset({"/animate"}), api_key="s3cret")
    assert shedder.refuses("POST", "/animate", {"authorization": "Bearer s3cret"})
    # Without it, Flask answers 401 as it would with room: a full house is no one's business
    # but a caller's.
    assert not shedder.refuses("POST", "/animate", {})
    assert not shedder.refuses("POST", "/animate", {"authorization": "Bearer nope"})
