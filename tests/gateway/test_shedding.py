"""Admission and overload (gateway/admission.py): which requests are refused at their head,
the bytes of the answer, its pace, and the claims. The worker that uses it runs for real in
tests/faults/test_overload.py."""

from __future__ import annotations

import json
import socket
import time

import gevent
import pytest

from gateway.admission import (
    GUARDED_PATHS,
    Admission,
    RefusalHold,
    Shedder,
    parse_head,
    refusal_bytes,
)
from gateway.app import create_app
from gateway.config import Config, ConfigError
from gateway.errors import error_document
from gateway.ops.gunicorn_worker import GatewayWorker
from gateway.tools.load_clients import parse_answer


@pytest.fixture
def app(tmp_path):
    return create_app(Config(storage_url=f"file://{tmp_path}", retry_after_s=3))


def fill(admission: Admission) -> None:
    admission.active, admission.waiting = admission.slots, admission.queue


def test_the_worker_refuses_on_exactly_the_routes_flask_refuses_a_full_house_on(app):
    # The guarded routes are declared (GUARDED_PATHS): each is a POST route of the app, and
    # Flask refuses a full house on exactly those.
    assert {"/animate", "/", "/annotate"} == GUARDED_PATHS
    client = app.test_client()
    admission = app.extensions["gateway"].admission
    fill(admission)
    posts = {r.rule for r in app.url_map.iter_rules() if "POST" in r.methods and not r.arguments}
    assert GUARDED_PATHS <= posts
    for path in posts:
        reply = client.post(path, data=b"x", content_type="image/png")
        refused = reply.status_code == 503 and reply.get_json()["error"]["code"] == "overloaded"
        assert refused == (path in GUARDED_PATHS), path
        assert admission.at_head("POST", path, {}) == (path in GUARDED_PATHS), path


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


def test_hold_answers_each_refusal_on_the_grid_before_its_bound():
    clock = Clock()
    hold = RefusalHold(0.040, tick_s=0.010, clock=clock)
    # Arriving now (100.000): answered at 100.040, the bound itself on the grid.
    assert hold.remaining_s() == pytest.approx(0.040)
    # Arrived 3 ms ago: its bound 100.037 rounds down to the tick at 100.030.
    assert hold.remaining_s(arrived=clock.now - 0.003) == pytest.approx(0.030)
    clock.now = 100.0157  # refusals arriving within one tick go out together
    assert clock.now + hold.remaining_s() == pytest.approx(100.050)
    assert hold.remaining_s(arrived=100.0109) == pytest.approx(100.050 - clock.now)
    # One that waited for the hub past its bound is answered at once.
    assert hold.remaining_s(arrived=clock.now - 0.1) == 0.0
    assert RefusalHold(0.0, clock=clock).remaining_s() == 0.0


def test_held_refusals_are_answered_when_due_and_their_connections_closed():
    admission = Admission(slots=1, queue=0, wait_s=1, retry_after_s=3)
    fill(admission)
    shedder = Shedder(admission, hold=RefusalHold(0.03))
    pairs = [socket.socketpair() for _ in range(3)]
    arrived = time.monotonic()
    for i, (server_end, client) in enumerate(pairs):
        shedder.answer(server_end, "/animate", {"x-request-id": f"r{i}"}, arrived)
        server_end.close()  # as the worker does: harmless, the connection was taken
        client.setblocking(False)
    assert shedder.held == 3  # answered later, by one greenlet
    gevent.sleep(0.01)
    for _, client in pairs:
        with pytest.raises(BlockingIOError):  # not before the hold is over
            client.recv(1)
    gevent.sleep(0.05)
    for i, (_, client) in enumerate(pairs):
        data = client.recv(8192)
        assert parse_answer(data) == ("503", 3.0)
        assert json.loads(data.partition(b"\r\n\r\n")[2])["error"]["request_id"] == f"r{i}"
        assert client.recv(1) == b""  # and the connection closed
        client.close()
    assert shedder.held == 0


def test_a_stopping_worker_answers_its_held_refusals_at_once():
    admission = Admission(slots=1, queue=0, wait_s=1, retry_after_s=3)
    fill(admission)
    shedder = Shedder(admission, hold=RefusalHold(10.0))
    server_end, client = socket.socketpair()
    shedder.answer(server_end, "/animate", {}, time.monotonic())
    assert shedder.held == 1
    shedder.flush()
    assert shedder.held == 0
    assert parse_answer(client.recv(8192)) == ("503", 3.0)
    assert client.recv(1) == b""
    client.close()


def test_only_posts_to_guarded_routes_of_a_full_house_are_refused_at_their_head():
    admission = Admission(slots=1, queue=1, wait_s=1, retry_after_s=2)
    assert not admission.at_head("POST", "/animate", {})  # room left
    fill(admission)
    assert admission.full
    assert admission.at_head("POST", "/animate", {}) and admission.at_head("POST", "/", {})
    assert admission.at_head("POST", "/annotate", {})
    assert not admission.at_head("GET", "/animate", {})
    assert not admission.at_head("POST", "/annotate-not-guarded", {})


def test_with_an_api_key_only_a_caller_with_it_is_refused_here():
    admission = Admission(slots=1, queue=0, wait_s=1, retry_after_s=2, api_keys=("s3cret",))
    fill(admission)
    assert admission.at_head("POST", "/animate", {"authorization": "Bearer s3cret"})
    # Without it, Flask answers 401 as it would with room: a full house is no one's business
    # but a caller's.
    assert not admission.at_head("POST", "/animate", {})
    assert not admission.at_head("POST", "/animate", {"authorization": "Bearer nope"})


def test_the_hold_is_a_setting(tmp_path):
    config = Config.from_env({"REFUSAL_HOLD_S": "0.02", "STORAGE_URL": f"file://{tmp_path}"})
    assert GatewayWorker.shedder_for(create_app(config)).hold.hold_s == 0.02
    assert Config().refusal_hold_s == 0.04
    with pytest.raises(ConfigError, match="REFUSAL_HOLD_S"):
        Config.from_env({"REFUSAL_HOLD_S": "5"})


def test_a_claim_holds_a_place_until_admitted_or_expired(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("gateway.admission.time.monotonic", clock)
    admission = Admission(slots=1, queue=2, wait_s=1, retry_after_s=2)
    admission.active = 1  # the slot is taken: whoever comes next queues
    admission.waiting = 1
    assert not admission.full
    admission.claim("a")  # let in while no slot is free: the last place is on account
    assert admission.full  # for anyone else...
    assert not admission.full_for("a")  # ...but not for the request holding the claim
    assert admission.at_head("POST", "/animate", {}) and not admission.at_head(
        "POST", "/animate", {}, "a"
    )
    clock.now += 1.1  # its body never came: the claim lapses
    assert not admission.full
    admission.claim("b")
    assert admission.full
    admission.active = 0  # a slot frees: b takes it, and its claim ends there
    with admission.admit("b"):
        assert admission.active == 1 and not admission.full  # one place left in the queue


def test_a_claim_ends_with_its_request():
    admission = Admission(slots=1, queue=1, wait_s=1, retry_after_s=2)
    admission.active = 1
    admission.claim("a")
    assert admission.full and not admission.full_for("a")
    admission.release("a")  # answered from storage, say: no slot taken, place given back
    assert not admission.full
    # A request let in at its head while no slot is free claims a place itself.
    assert not admission.at_head("POST", "/animate", {}, "b", claim=True)
    assert admission.full and not admission.full_for("b")
    admission.release("b")
    assert not admission.at_head("GET", "/health", {}, "c", claim=True)  # not a guarded route
    assert not admission.full
