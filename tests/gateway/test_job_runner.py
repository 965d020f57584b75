"""A job's life (gateway/jobs/runner.py) on the embedded queue, the pipeline stood in for
by a function (a unit test of the policy: the integration tests run the real one)."""

from __future__ import annotations

from types import SimpleNamespace

from gateway.config import Config
from gateway.errors import NoCharacterDetected, StorageUnavailable
from gateway.jobs.queue import EmbeddedQueue
from gateway.jobs.records import JobRecord, JobRequest
from gateway.jobs.runner import JobRunner
from gateway.rendering.pipeline import Animations
from tests.support.drawings import drawing

MOTIONS = ("dab", "zombie")


def runner_with(run) -> tuple[JobRunner, EmbeddedQueue]:
    config = Config(job_max_tries=2, job_visibility_s=0.03, render_workers=1)
    queue = EmbeddedQueue(config)
    services = SimpleNamespace(
        config=config,
        catalogue=SimpleNamespace(names=list(MOTIONS), defaults=MOTIONS),
        pipeline=SimpleNamespace(run=run),
    )
    return JobRunner(services, queue, consumer="test"), queue


def submit(queue: EmbeddedQueue) -> str:
    record = JobRecord("job-1", "", MOTIONS)
    queue.submit(record, JobRequest(drawing(3).png, "image/png", {}, {}, "http://h/"))
    return record.id


def work_once(runner: JobRunner, queue: EmbeddedQueue) -> None:
    claim = queue.claim("test", 0.1)
    assert claim is not None
    runner.work(claim)


def test_a_job_done_records_its_progress_and_urls():
    def run(job, timer, host_url, client, on_stored):
        assert job.motions == MOTIONS and host_url == "http://h/"
        on_stored(["dab"], False)  # storage had it
        on_stored(["zombie"], True)
        return Animations({m: f"http://h/files/{m}.gif" for m in MOTIONS})

    runner, queue = runner_with(run)
    job_id = submit(queue)
    work_once(runner, queue)
    doc = queue.get(job_id).document()
    assert doc["status"] == "done" and doc["progress"]["done"] == 2
    assert doc["result"] == {"dab": "http://h/files/dab.gif", "zombie": "http://h/files/zombie.gif"}
    assert queue.request_of(job_id) is None and queue.stats()["done"] == 1


def test_a_clients_error_fails_at_once_and_is_no_dead_letter():
    def run(*args):
        raise NoCharacterDetected("no figure")

    runner, queue = runner_with(run)
    job_id = submit(queue)
    work_once(runner, queue)
    record = queue.get(job_id)
    assert (record.status, record.tries, record.error["code"]) == (
        "failed", 1, "no_character_detected")  # fmt: skip
    assert queue.depth().dead == 0


def test_the_services_error_is_tried_again_then_dead_lettered():
    calls = []

    def run(*args):
        calls.append(1)
        raise StorageUnavailable("disk gone")

    runner, queue = runner_with(run)
    job_id = submit(queue)
    work_once(runner, queue)
    assert queue.get(job_id).status == "queued" and queue.depth().queued == 1
    work_once(runner, queue)
    record = queue.get(job_id)
    assert (record.status, record.tries, len(calls)) == ("failed", 2, 2)
    assert record.error["code"] == "storage_unavailable"
    assert queue.depth() == type(queue.depth())(queued=0, running=0, dead=1)
    assert queue.stats()["retries"] == 1


def test_a_job_delivered_again_after_it_ended_is_only_acknowledged():
    ran = []
    runner, queue = runner_with(lambda *args: ran.append(1) or Animations({}))
    job_id = submit(queue)
    claim = queue.claim("test", 0.1)
    ended = queue.get(job_id).with_(status="done", finished=1.0)
    queue.end(claim, ended)
    queue._waiting.put(job_id)  # the stream entry again, as after a worker died acking it
    work_once(runner, queue)
    assert not ran and queue.stats()["done"] == 1 and queue.depth().running == 0
