"""Jobs on a real queue: the real gateway (gunicorn, gevent), real `python -m gateway.worker`
processes, Debian's redis-server (append-only file, fsync always), the real TorchServe.

Each test gets its own Redis, gateway and workers (a worker of another test would take its
jobs), started in a few seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from tests.support.drawings import drawing, model_free_form
from tests.support.gateway_server import gateways
from tests.support.motion_files import convention, with_bad_number
from tests.support.redis_server import job_workers, run_redis
from tests.support.s3 import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]
KEYS = ("key-one", "key-two")
AUTH = {"Authorization": f"Bearer {KEYS[0]}"}
SECRET = "callback-secret-for-tests"


class Stack:
    """Redis, a gateway on it, and workers started on demand."""

    def __init__(self, exits: ExitStack, model_env: dict, folder: Path, **env: str) -> None:
        self.redis = exits.enter_context(run_redis(folder / "redis"))
        self.storage = folder / "animations"
        self.env = {**model_env, "STORAGE_URL": f"file://{self.storage}", "RENDER_WORKERS": "2",
                    "REDIS_URL": self.redis.url, "API_KEY": ",".join(KEYS),
                    "CALLBACK_SECRET": SECRET, **env}  # fmt: skip
        start_gateway = exits.enter_context(gateways())
        self.gateway = start_gateway(self.env, ready=True)
        self.url = self.gateway.url
        self.start_worker = exits.enter_context(job_workers(self.env))

    def submit(self, seed: int = 3, auth: dict = AUTH, **options) -> requests.Response:
        d = drawing(seed)
        return requests.post(
            f"{self.url}/jobs", files={"image": ("drawing.png", d.png, "image/png")},
            data=model_free_form(d, **options), headers=auth, timeout=30,
        )  # fmt: skip

    def job(self, job_id: str, auth: dict = AUTH) -> dict:
        reply = requests.get(f"{self.url}/jobs/{job_id}", headers=auth, timeout=10)
        assert reply.status_code == 200, reply.text
        return reply.json()

    def wait(self, job_id: str, timeout: float = 120.0, until=("done", "failed")) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.job(job_id)
            if body["status"] in until:
                return body
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} still {body['status']} after {timeout} s: {body}")

    def queued(self) -> int:
        """Entries in the jobs stream, and job records, in Redis."""
        client = self.redis.client()
        return client.xlen("jobs") + len(client.keys("job:*"))


@pytest.fixture
def stack(model_env, tmp_path):
    with ExitStack() as exits:
        yield lambda **env: Stack(exits, model_env, tmp_path, **env)


@pytest.fixture(scope="module")
def refusing(model_env, tmp_path_factory):
    """One stack, no worker, for the tests of what is refused at submission: nothing they
    send may be queued, so they share it (each starting its own cost 5-8 s)."""
    with ExitStack() as exits:
        yield Stack(exits, model_env, tmp_path_factory.mktemp("refusing"))


def stored_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.gif"))


def test_a_job_is_queued_worked_and_its_animations_fetched(stack):
    s = stack()
    s.start_worker()
    reply = s.submit(motions="dab,zombie")
    assert reply.status_code == 202, reply.text
    body = reply.json()
    assert reply.headers["Location"] == body["status_url"] == f"/jobs/{body['id']}"
    done = s.wait(body["id"])
    assert done["status"] == "done", done
    assert done["progress"] == {"done": 2, "total": 2,
                                "motions": {"dab": "done", "zombie": "done"}}  # fmt: skip
    assert set(done["result"]) == {"dab", "zombie"}
    for url in done["result"].values():
        gif = requests.get(url, timeout=10)
        assert gif.status_code == 200 and gif.content.startswith(b"GIF8")
    # The same request through /animate answers the same files: keyed by content.
    d = drawing(3)
    sync = requests.post(
        f"{s.url}/animate", files={"image": ("drawing.png", d.png, "image/png")},
        data=model_free_form(d, motions="dab,zombie"), headers=AUTH, timeout=60,
    )  # fmt: skip
    assert sync.json() == done["result"]
    assert len(stored_files(s.storage)) == 2


def test_twenty_jobs_from_eight_clients_are_all_done_and_fetchable(stack):
    s = stack()
    s.start_worker()
    s.start_worker()
    motions = ["dab", "zombie", "jumping", "wave_hello"]

    def client(n: int) -> list[str]:
        ids = []
        for k in range(n, 20, 8):  # 20 jobs dealt over 8 clients
            reply = s.submit(seed=k % 5, motions=motions[k % 4], size=128)
            assert reply.status_code == 202, reply.text
            ids.append(reply.json()["id"])
        return ids

    with ThreadPoolExecutor(8) as pool:
        ids = [i for batch in pool.map(client, range(8)) for i in batch]
    assert len(set(ids)) == 20
    for job_id in ids:
        done = s.wait(job_id, timeout=180)
        assert done["status"] == "done", done
        for url in done["result"].values():
            assert requests.get(url, timeout=10).status_code == 200
    metrics = requests.get(f"{s.url}/metrics", timeout=10).text
    assert 'gateway_jobs_ended_total{status="done"} 20.0' in metrics
    assert 'gateway_jobs{state="queued"} 0.0' in metrics


def test_a_job_whose_worker_is_killed_is_finished_by_another_each_file_stored_once(stack):
    visibility = 4.0
    s = stack(JOB_VISIBILITY_S=str(visibility))
    first = s.start_worker()
    motions = "dab,zombie,jumping,wave_hello,clap,cheer"
    job_id = s.submit(motions=motions, size=384, fps=20).json()["id"]
    running = s.wait(job_id, until=("running",))
    deadline = time.monotonic() + 120
    while running["progress"]["done"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
        running = s.job(job_id)
    assert 0 < running["progress"]["done"] < 6, running  # killed mid-job
    first.kill()
    killed_at = time.monotonic()
    second = s.start_worker()
    done = s.wait(job_id, timeout=180)
    took = time.monotonic() - killed_at
    assert done["status"] == "done" and done["progress"]["done"] == 6, done
    assert "taken over" in second.log_text()
    # Stored once each: the first worker's files are found, not made again.
    events = [json.loads(line) for w in (first, second) for line in w.log_text().splitlines()
              if '"event"' in line]  # fmt: skip
    stored = [e["motion"] for e in events if e["event"] == "stored"]
    assert sorted(stored) == sorted(motions.split(",")), stored
    assert len(stored_files(s.storage)) == 6
    # The visibility timeout plus starting a worker and rendering the rest (on 2 cores).
    assert took < visibility + 60, took


def test_no_accepted_job_is_lost_when_redis_restarts_mid_run(stack):
    s = stack()
    s.start_worker()
    ids = [s.submit(seed=k % 5, motions="dab,zombie", size=128).json()["id"] for k in range(6)]
    time.sleep(0.5)
    s.redis.stop()  # SIGTERM: its append-only file is written
    # While it is down: not ready, naming Redis; a job is refused (503), never a lost 202.
    ready = requests.get(f"{s.url}/ready", timeout=10)
    assert ready.status_code == 503 and any("redis" in m for m in ready.json()["missing"])
    down = s.submit(seed=5, motions="dab", size=128)
    assert (down.status_code, down.json()["error"]["code"]) == (503, "queue_unavailable")
    s.redis.start()
    later = s.submit(seed=5, motions="dab", size=128)
    assert later.status_code == 202, later.text
    for job_id in [*ids, later.json()["id"]]:
        assert s.wait(job_id, timeout=180)["status"] == "done"


def test_a_worker_told_to_stop_hands_its_job_back_and_another_finishes_it(stack):
    s = stack(WORKER_GRACE_S="0")
    first = s.start_worker()
    job_id = s.submit(motions="dab,zombie,jumping,wave_hello,clap,cheer", size=384).json()["id"]
    s.wait(job_id, until=("running",))
    assert first.stop() == 0  # SIGTERM: no grace, so the job goes back to the queue
    assert "handed back" in first.log_text()
    back = s.job(job_id)
    assert back["status"] == "queued", back
    s.start_worker()
    assert s.wait(job_id, timeout=180)["status"] == "done"
    assert (
        s.redis.client().hget(f"job:{job_id}", "tries") == b"1"
    )  # the handed-back try did not count


def test_a_job_that_always_fails_ends_failed_after_its_tries_in_the_dead_letters(stack):
    s = stack(JOB_MAX_TRIES="2")
    s.start_worker()
    s.storage.mkdir(parents=True, exist_ok=True)
    # Storage goes wrong after the worker found it ready: every try fails to store.
    s.storage.rename(s.storage.with_name("gone"))
    s.storage.write_bytes(b"not a folder")
    job_id = s.submit(motions="dab", size=128).json()["id"]
    failed = s.wait(job_id, timeout=120)
    assert failed["status"] == "failed", failed
    assert failed["error"]["code"] == "storage_unavailable"
    dead = s.redis.client().xrange("jobs:dead")
    assert [entry[1][b"id"].decode() for entry in dead] == [job_id]
    assert json.loads(dead[0][1][b"error"])["code"] == "storage_unavailable"
    assert s.redis.client().hget(f"job:{job_id}", "tries") == b"2"
    assert "gateway_jobs_dead_letters 1.0" in requests.get(f"{s.url}/metrics", timeout=10).text


class Receiver(BaseHTTPRequestHandler):
    """A callback receiver: answers 500 to the first POST, 200 after; keeps what came."""

    got: list[tuple[dict, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append((dict(self.headers), body))
        self.send_response(500 if len(Receiver.got) == 1 else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_callback_is_signed_and_tried_again_after_a_500(stack):
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    Receiver.got = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        s = stack(CALLBACK_ALLOW_HOSTS="127.0.0.1", CALLBACK_BACKOFF_S="0.2")
        s.start_worker()
        reply = s.submit(motions="dab", size=128, callback_url=f"http://127.0.0.1:{port}/hook")
        assert reply.status_code == 202, reply.text
        done = s.wait(reply.json()["id"])
        deadline = time.monotonic() + 20
        while len(Receiver.got) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.shutdown()
    assert len(Receiver.got) == 2
    for headers, body in Receiver.got:
        stamp = headers["X-Signature-Timestamp"]
        expected = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
        assert headers["X-Signature-256"] == "sha256=" + expected.hexdigest()
        assert abs(int(stamp) - time.time()) < 120
        assert json.loads(body)["result"] == done["result"]


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "https://169.254.169.254/", "https://10.1.2.3/h",
     "https://127.0.0.1/h", "https://localhost/h", "https://[::1]/h", "https://[fd00:ec2::254]/",
     "https://192.168.0.7/h", "http://example.com/h", "ftp://example.com/h",
     "https://user:pw@example.com/h"],
)  # fmt: skip
def test_a_callback_to_a_private_or_metadata_address_is_refused_at_submission(refusing, url):
    reply = refusing.submit(callback_url=url)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_callback"
    assert refusing.queued() == 0


def bad_requests() -> dict[str, dict]:
    """name -> requests.post keyword arguments of a request /animate refuses."""
    d = drawing(3)
    png = d.png
    form = model_free_form(d)
    bad_bvh, _ = with_bad_number(convention("mixamo_dance"))
    return {
        "no image": {"data": form},
        "not an image": {"files": {"image": ("x.png", b"not a png at all", "image/png")},
                         "data": form},
        "unknown motion": {"files": {"image": ("d.png", png, "image/png")},
                           "data": {**form, "motions": "moonwalk"}},
        "size out of range": {"files": {"image": ("d.png", png, "image/png")},
                              "data": {**form, "size": "5000"}},
        "bad keypoints": {"files": {"image": ("d.png", png, "image/png")},
                          "data": {**form, "keypoints": "[[1, 2]]"}},
        "malformed motion": {"files": {"image": ("d.png", png, "image/png"),
                                       "bvh": ("mine.bvh", bad_bvh, "text/plain")},
                             "data": form},
        "text body": {"data": b"hello", "headers": {"Content-Type": "text/plain"}},
    }  # fmt: skip


def test_bad_input_to_jobs_gets_the_same_4xx_as_animate_and_nothing_is_queued(refusing):
    s = refusing
    for name, kwargs in bad_requests().items():
        headers = {**AUTH, **kwargs.pop("headers", {})}
        answers = [requests.post(f"{s.url}{route}", headers=headers, timeout=30, **kwargs)
                   for route in ("/animate", "/jobs")]  # fmt: skip
        (sync, job) = answers
        assert 400 <= sync.status_code < 500, (name, sync.text)
        assert (job.status_code, job.json()["error"]["code"]) == (
            sync.status_code, sync.json()["error"]["code"]), name  # fmt: skip
    no_key = s.submit(auth={})
    assert no_key.status_code == 401
    assert s.queued() == 0


def test_a_job_is_seen_only_with_the_api_key_that_made_it(stack):
    s = stack()
    job_id = s.submit(motions="dab", size=128).json()["id"]
    assert s.job(job_id)["status"] == "queued"  # no worker yet
    other = requests.get(f"{s.url}/jobs/{job_id}", headers={"Authorization": f"Bearer {KEYS[1]}"},
                         timeout=10)  # fmt: skip
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert requests.get(f"{s.url}/jobs/{job_id}", timeout=10).status_code == 401
    assert requests.get(f"{s.url}/jobs/nope", headers=AUTH, timeout=10).status_code == 404


def test_without_redis_the_gateway_runs_its_jobs_itself(model_env, tmp_path):
    env = {**model_env, "STORAGE_URL": f"file://{tmp_path}", "RENDER_WORKERS": "2",
           "REDIS_URL": None}  # fmt: skip
    with gateways() as start:
        gw = start(env, ready=True)
        d = drawing(4)
        reply = requests.post(
            f"{gw.url}/jobs", files={"image": ("d.png", d.png, "image/png")},
            data=model_free_form(d, motions="dab,jumping,zombie", size=128), timeout=30,
        )  # fmt: skip
        assert reply.status_code == 202, reply.text
        deadline, body = time.monotonic() + 120, {}
        while time.monotonic() < deadline and body.get("status") not in ("done", "failed"):
            body = requests.get(f"{gw.url}{reply.headers['Location']}", timeout=10).json()
            time.sleep(0.1)
        assert body["status"] == "done" and body["progress"]["done"] == 3, body
        assert all(requests.get(u, timeout=10).status_code == 200 for u in body["result"].values())
        metrics = requests.get(f"{gw.url}/metrics", timeout=10).text
        assert 'gateway_jobs_ended_total{status="done"} 1.0' in metrics
