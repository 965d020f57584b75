"""Running jobs: take one from the queue, render it with the gateway's own pipeline, record
how it ended. `python -m gateway.worker` runs one `JobRunner`; without REDIS_URL each
gateway process runs one on its embedded queue.

The policy of a job's life:
- taken (`claim`): its try is counted; past JOB_MAX_TRIES tries (a worker died with it each
  time) it fails, into the dead-letter stream;
- running: the request read again exactly as /animate reads it, its motions rendered and
  stored a few at a time, the record's progress updated after each few; the claim renewed
  every third of JOB_VISIBILITY_S (the heartbeat), so nobody takes it over while it runs;
- done: the URLs recorded, as /animate answers them;
- a client's error (4xx: no figure in the drawing, an unreadable motion): failed at once;
- anything else (TorchServe or storage down, a render worker lost): tried again after a
  pause, and failed into the dead-letter stream after JOB_MAX_TRIES tries; a full house
  (overloaded, the embedded queue sharing the gateway's slots) waits and does not count;
- the worker told to stop: its jobs get WORKER_GRACE_S to finish, then are handed back
  (queued again, the try not counted).
Then the callback, if the job has one.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import gevent
from gevent.event import Event

from gateway.errors import ApiError, Overloaded, QueueUnavailable
from gateway.jobs import callbacks
from gateway.jobs.queue import Claim, JobQueue
from gateway.jobs.records import JobRecord, JobRequest
from gateway.ops.stage_timer import StageTimer
from gateway.web.requests import parse_animate_request
from gateway.web.upload import read_upload

if TYPE_CHECKING:  # services.py builds the embedded queue's runner
    from gateway.services import Services

log = logging.getLogger("gateway.jobs")
CLAIM_BLOCK_S = 0.5  # a free worker asks the queue again this often, and sees a stop (a
# stop waits for it; an idle worker costs Redis two cheap commands a loop each time)
T = TypeVar("T")


def consumer_name() -> str:
    """This worker's name in the consumer group: host and process, unique per process."""
    return f"{socket.gethostname()}-{os.getpid()}"


class JobRunner:
    def __init__(self, services: Services, queue: JobQueue, consumer: str | None = None) -> None:
        self.services = services
        self.config = services.config
        self.queue = queue
        self.consumer = consumer or consumer_name()
        self._stopping = Event()
        self._loops: list[gevent.Greenlet] = []
        self._working: dict[gevent.Greenlet, Claim] = {}
        self._progress: dict[str, JobRecord] = {}  # job id -> its record, progress made

    # ---- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        """JOB_CONCURRENCY loops, each taking one job at a time."""
        self._loops = [gevent.spawn(self._loop) for _ in range(self.config.job_concurrency)]

    def stop(self, grace_s: float) -> None:
        """Take no more jobs; those running get `grace_s` to finish, then are handed back."""
        self._stopping.set()
        gevent.joinall(self._loops, timeout=grace_s)
        gevent.killall(self._loops, block=True)  # a job killed hands itself back

    @property
    def busy(self) -> int:
        return len(self._working)

    def _loop(self) -> None:
        unreachable = 0
        while not self._stopping.is_set():
            try:
                claim = self.queue.claim(self.consumer, CLAIM_BLOCK_S)
            except QueueUnavailable as exc:
                log.error("cannot take a job: %s", exc.message)
                gevent.sleep(min(10.0, 0.5 * 2**unreachable))
                unreachable += 1
                continue
            unreachable = 0
            if claim is not None:
                self._working[gevent.getcurrent()] = claim
                try:
                    self.work(claim)
                finally:
                    del self._working[gevent.getcurrent()]

    # ---- one job -----------------------------------------------------------------------
    def work(self, claim: Claim) -> None:
        record = self._patiently(self.queue.get, claim.job_id)
        request = self._patiently(self.queue.request_of, claim.job_id)
        if record is None:
            return
        if record.status in ("done", "failed"):  # a worker died acknowledging it
            self._patiently(self.queue.forget, claim)
            return
        if request is None:  # never without a bug or a hand in Redis: say so, keep it
            error = {"code": "internal_error", "message": "the job's request is gone"}
            self._end(claim, self._ended(record, "failed", error=error), dead=True)
            return
        if claim.tries > self.config.job_max_tries:
            error = record.error or {
                "code": "worker_lost",
                "message": f"the worker running it stopped answering {claim.tries - 1} times",
            }
            self._end(claim, self._ended(record, "failed", error=error), dead=True)
            return
        record = record.with_(status="running", started=record.started or time.time())
        self._quietly(self.queue.update, record)
        heartbeat = gevent.spawn(self._heartbeat, claim)
        try:
            record = self._run(record, request)
        except gevent.GreenletExit:
            log.info("job %s handed back: the worker stops", record.id)
            handed_back = self._latest(record).with_(status="queued")
            self._patiently(self.queue.requeue, claim, handed_back, False)
            raise
        except ApiError as exc:
            record = self._latest(record).with_(error={"code": exc.code, "message": exc.message})
            if isinstance(exc, Overloaded):  # the house was full: not the job's fault
                gevent.sleep(self.config.retry_after_s)
                self._patiently(self.queue.requeue, claim, record.with_(status="queued"), False)
            elif exc.status < 500:
                self._end(claim, self._ended(record, "failed"))
            else:
                self._retry(claim, record)
        except Exception as exc:
            log.exception("job %s, try %d failed", record.id, claim.tries)
            error = {"code": "internal_error", "message": f"{type(exc).__name__} in the worker"}
            self._retry(claim, self._latest(record).with_(error=error))
        else:
            self._end(claim, record)
        finally:
            heartbeat.kill()
            self._progress.pop(record.id, None)

    def _run(self, record: JobRecord, request: JobRequest) -> JobRecord:
        """The job's animations stored; its record done, with their URLs."""
        catalogue = self.services.catalogue
        upload = read_upload(
            request.body, request.mimetype, request.params, self.config.max_upload_bytes
        )
        job = parse_animate_request(upload, request.query, catalogue.names, catalogue.defaults)
        self._progress[record.id] = record

        def stored(motions: list[str], rendered: bool) -> None:
            # Logged before the progress is published: a worker killed between the two
            # leaves a file that the log names, never progress that it does not.
            for motion in motions:
                log.info("job %s: %s %s", record.id, motion, "stored" if rendered else "found",
                         extra={"job": record.id, "motion": motion,
                                "event": "stored" if rendered else "found"})  # fmt: skip
            progress = self._progress[record.id]
            progress = progress.with_(done=tuple(dict.fromkeys(progress.done + tuple(motions))))
            self._progress[record.id] = progress
            self._quietly(self.queue.update, progress)

        answer = self.services.pipeline.run(job, StageTimer(), request.host_url, None, stored)
        return self._ended(
            self._progress[record.id], "done", result=answer.urls, layouts=answer.layouts or None,
            warnings=answer.figure_warnings, error=None,
        )  # fmt: skip

    def _latest(self, record: JobRecord) -> JobRecord:
        """The record with the progress `_run` made."""
        return self._progress.get(record.id, record)

    def _retry(self, claim: Claim, record: JobRecord) -> None:
        if claim.tries >= self.config.job_max_tries:
            log.error("job %s failed after %d tries: %s", record.id, claim.tries, record.error)
            self._end(claim, self._ended(record, "failed"), dead=True)
            return
        # A pause before the next try (TorchServe restarting, storage coming back).
        gevent.sleep(min(self.config.job_visibility_s / 3, 2.0**claim.tries))
        log.warning("job %s, try %d failed (%s); queued again", record.id, claim.tries,
                    (record.error or {}).get("code"))  # fmt: skip
        self._patiently(self.queue.requeue, claim, record.with_(status="queued"))

    @staticmethod
    def _ended(record: JobRecord, status: str, **changes) -> JobRecord:
        return record.with_(status=status, finished=time.time(), **changes)

    def _end(self, claim: Claim, record: JobRecord, dead: bool = False) -> None:
        self._patiently(self.queue.end, claim, record, dead)
        log.info("job %s %s after %d tries", record.id, record.status, claim.tries,
                 extra={"job": record.id, "status": record.status,
                        "latency_s": record.latency_s})  # fmt: skip
        if record.callback_url:
            gevent.spawn(self._call_back, record)

    def _call_back(self, record: JobRecord) -> None:
        config = self.config
        if not config.callback_secret:  # refused at submission; the secret went since
            log.error("job %s has a callback_url but CALLBACK_SECRET is unset", record.id)
            return
        callbacks.deliver(
            record.callback_url, record.document(), secret=config.callback_secret,
            allow=config.callback_allow_hosts, tries=config.callback_tries,
            backoff_s=config.callback_backoff_s,
        )  # fmt: skip

    def _heartbeat(self, claim: Claim) -> None:
        while True:
            gevent.sleep(self.config.job_visibility_s / 3)
            self._quietly(self.queue.heartbeat, claim, self.consumer)

    # ---- a queue that may be away for a while ------------------------------------------
    def _quietly(self, call: Callable[..., T], *args) -> T | None:
        """A call whose failure only costs a progress update or a heartbeat."""
        try:
            return call(*args)
        except QueueUnavailable as exc:
            log.warning("job queue: %s", exc.message)
            return None

    def _patiently(self, call: Callable[..., T], *args) -> T:
        """A call the job needs: tried again while the queue is away, up to the visibility
        timeout (past it another worker will take the job over and do it again, finding
        its files stored)."""
        deadline = time.monotonic() + self.config.job_visibility_s
        attempt = 0
        while True:
            try:
                return call(*args)
            except QueueUnavailable as exc:
                if time.monotonic() > deadline:
                    raise
                log.warning("job queue: %s; asking again", exc.message)
                gevent.sleep(min(5.0, 0.25 * 2**attempt))
                attempt += 1
