"""The job queue: Redis Streams when REDIS_URL is set, else one embedded in the process.

Both have the same interface (`JobQueue`); gateway/jobs/runner.py holds the policy (when a
job is tried again, failed, handed back), the queues only its storage.

Redis (`RedisQueue`), the keys:
- `jobs`: the stream of jobs to do, an entry `{id}` each, read by the consumer group
  `render-workers` (XREADGROUP). An entry stays pending with the worker that read it
  until it is acknowledged (XACK, then XDEL: the stream holds only work not finished, so
  its length is the backlog). A worker working on a job re-claims its entry every third
  of JOB_VISIBILITY_S (its heartbeat); an entry idle longer than that belongs to a worker
  that died, and the next worker asking takes it over (XAUTOCLAIM).
- `job:<id>`: the job's record (a hash; expires JOB_TTL_S after the job ends);
  `job:<id>:request`: the request's body and options, deleted when the job ends.
- `jobs:dead`: the dead-letter stream: `{id, error}` of each job that failed after its
  tries (XLEN for the count; XRANGE to read them).
- `jobs:stats`: counters for /metrics (done, failed, retries, dead, latency buckets).

A submission is one MULTI/EXEC (record, request, stream entry): accepted means all three
are in Redis, and with `appendfsync always` on disk, before the 202 goes out.

Embedded (`EmbeddedQueue`): the same, in the memory of one gateway process: its jobs are
lost when the process ends, and a gateway with several gunicorn workers keeps one queue per
worker (a job is found only by the worker that took it): set REDIS_URL for more.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass

from gevent.queue import Empty, Queue

from gateway.config import Config
from gateway.errors import Overloaded, QueueUnavailable
from gateway.jobs.records import JobRecord, JobRequest, as_text

log = logging.getLogger("gateway.jobs")
STREAM = "jobs"
GROUP = "render-workers"
DEAD = "jobs:dead"
STATS = "jobs:stats"
DEAD_KEPT = 10_000  # dead letters kept (about; the oldest go first)
# Submit-to-end latency buckets (seconds) of gateway_job_seconds.
LATENCY_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


@dataclass(frozen=True)
class Claim:
    """A job a worker took: its id, its stream entry, and which try this is (1, 2, ...)."""

    job_id: str
    entry: str
    tries: int


@dataclass(frozen=True)
class Depth:
    queued: int  # accepted, no worker has it yet
    running: int  # a worker has it (or had it and died)
    dead: int  # in the dead-letter stream


def stat_fields(record: JobRecord, dead: bool) -> Counter[str]:
    """The counters a job that ended adds to: its status, dead letters, its latency."""
    fields: Counter[str] = Counter({record.status: 1})
    if dead:
        fields["dead"] += 1
    latency = record.latency_s
    if latency is not None:
        fields["latency_count"] += 1
        fields.update({f"le:{b:g}": 1 for b in LATENCY_BUCKETS if latency <= b})
    return fields


class JobQueue(ABC):
    """Where jobs wait, and their records. Every method may raise QueueUnavailable."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @abstractmethod
    def submit(self, record: JobRecord, request: JobRequest) -> None:
        """Accept a job (all or nothing); Overloaded past MAX_QUEUED_JOBS waiting."""

    @abstractmethod
    def get(self, job_id: str) -> JobRecord | None: ...

    @abstractmethod
    def request_of(self, job_id: str) -> JobRequest | None: ...

    @abstractmethod
    def claim(self, consumer: str, block_s: float) -> Claim | None:
        """The next job for `consumer` (a dead worker's first), its try counted; None when
        none came within `block_s`."""

    @abstractmethod
    def heartbeat(self, claim: Claim, consumer: str) -> None:
        """The worker still works on `claim`: nobody takes it over yet."""

    @abstractmethod
    def update(self, record: JobRecord) -> None:
        """The record as it stands (running, progress)."""

    @abstractmethod
    def end(self, claim: Claim, record: JobRecord, dead: bool = False) -> None:
        """The job ended (`record` done or failed): kept JOB_TTL_S, its request dropped, its
        entry acknowledged; `dead`: also into the dead-letter stream."""

    @abstractmethod
    def forget(self, claim: Claim) -> None:
        """Acknowledge an entry whose job already ended (its worker died acknowledging it)."""

    @abstractmethod
    def requeue(self, claim: Claim, record: JobRecord, count_try: bool = True) -> None:
        """Back in the queue for another try (`count_try` False: this one did not count,
        the worker handed it back as it stopped)."""

    @abstractmethod
    def depth(self) -> Depth: ...

    @abstractmethod
    def stats(self) -> dict[str, float]:
        """The counters of jobs that ended (see `stat_fields`) and `retries`."""

    @abstractmethod
    def missing(self) -> str | None:
        """What keeps the queue from working (for /ready), or None."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""


class EmbeddedQueue(JobQueue):
    """The queue in this process's memory (no REDIS_URL): lost when it ends."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self._records: dict[str, JobRecord] = {}
        self._requests: dict[str, JobRequest] = {}
        self._expiry: dict[str, float] = {}
        self._waiting: Queue = Queue()
        self._running: set[str] = set()
        self._dead: list[tuple[str, dict]] = []
        self._stats: Counter[str] = Counter()

    def submit(self, record: JobRecord, request: JobRequest) -> None:
        self._expire()
        if self._waiting.qsize() + len(self._running) >= self.config.max_queued_jobs:
            raise _queue_full(self.config)
        self._records[record.id] = record
        self._requests[record.id] = request
        self._waiting.put(record.id)

    def get(self, job_id: str) -> JobRecord | None:
        self._expire()
        return self._records.get(job_id)

    def request_of(self, job_id: str) -> JobRequest | None:
        return self._requests.get(job_id)

    def claim(self, consumer: str, block_s: float) -> Claim | None:
        try:
            job_id = self._waiting.get(timeout=block_s)
        except Empty:
            return None
        record = self._records[job_id]
        self._records[job_id] = record = record.with_(tries=record.tries + 1)
        self._running.add(job_id)
        return Claim(job_id, job_id, record.tries)

    def heartbeat(self, claim: Claim, consumer: str) -> None:
        pass  # one process: its jobs die with it

    def update(self, record: JobRecord) -> None:
        self._records[record.id] = record

    def end(self, claim: Claim, record: JobRecord, dead: bool = False) -> None:
        self._records[record.id] = record
        self._requests.pop(record.id, None)
        self._running.discard(record.id)
        self._expiry[record.id] = time.time() + self.config.job_ttl_s
        if dead:
            self._dead = [*self._dead[-DEAD_KEPT + 1 :], (record.id, record.error or {})]
        self._stats.update(stat_fields(record, dead))
        self._stats["latency_sum"] += record.latency_s or 0.0

    def forget(self, claim: Claim) -> None:
        self._running.discard(claim.job_id)

    def requeue(self, claim: Claim, record: JobRecord, count_try: bool = True) -> None:
        if not count_try:
            record = record.with_(tries=record.tries - 1)
        else:
            self._stats["retries"] += 1
        self._records[record.id] = record
        self._running.discard(record.id)
        self._waiting.put(record.id)

    def depth(self) -> Depth:
        return Depth(self._waiting.qsize(), len(self._running), len(self._dead))

    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    def missing(self) -> str | None:
        return None

    def _expire(self) -> None:
        now = time.time()
        for job_id in [j for j, t in self._expiry.items() if t <= now]:
            self._records.pop(job_id, None)
            del self._expiry[job_id]


class RedisQueue(JobQueue):
    """Redis Streams (see the module's doc)."""

    def __init__(self, config: Config) -> None:
        import redis  # only where REDIS_URL is set

        super().__init__(config)
        self._errors = (redis.RedisError, OSError)
        self._response_error = redis.ResponseError
        # A blocked XREADGROUP waits at most CLAIM_BLOCK_S: the socket's timeout is longer.
        self.redis = redis.Redis.from_url(
            config.redis_url, socket_connect_timeout=2.0, socket_timeout=10.0,
            health_check_interval=10,
        )  # fmt: skip
        self._group_made = False

    # ---- Redis calls, their failures as the API's -------------------------------------
    def _call(self, fn, *args, **kwargs):
        try:
            self._ensure_group()
            return fn(*args, **kwargs)
        except self._response_error as exc:
            if "NOGROUP" in str(exc):  # Redis lost its data (no AOF): make the group again
                self._group_made = False
            raise QueueUnavailable(f"job queue: {exc}") from exc
        except self._errors as exc:
            raise QueueUnavailable(f"job queue (Redis) unreachable: {exc}") from exc

    def _ensure_group(self) -> None:
        if self._group_made:
            return
        try:
            self.redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
        except self._response_error as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_made = True

    def _transaction(self, build) -> None:
        def run() -> None:
            pipe = self.redis.pipeline(transaction=True)
            build(pipe)
            pipe.execute()

        self._call(run)

    # ---- the interface -----------------------------------------------------------------
    def submit(self, record: JobRecord, request: JobRequest) -> None:
        if self._call(self.redis.xlen, STREAM) >= self.config.max_queued_jobs:
            raise _queue_full(self.config)

        def build(pipe) -> None:
            pipe.hset(_key(record.id), mapping=record.to_fields())
            pipe.hset(_request_key(record.id), mapping=request.to_fields())
            pipe.xadd(STREAM, {"id": record.id})

        self._transaction(build)

    def get(self, job_id: str) -> JobRecord | None:
        fields = self._call(self.redis.hgetall, _key(job_id))
        return JobRecord.from_fields(fields) if fields else None

    def request_of(self, job_id: str) -> JobRequest | None:
        fields = self._call(self.redis.hgetall, _request_key(job_id))
        return JobRequest.from_fields(fields) if fields else None

    def claim(self, consumer: str, block_s: float) -> Claim | None:
        entry = self._take_over(consumer)
        if entry is None:
            answer = self._call(
                self.redis.xreadgroup, GROUP, consumer, {STREAM: ">"}, count=1,
                block=max(1, int(block_s * 1000)),
            )  # fmt: skip
            if not answer or not answer[0][1]:
                return None
            entry = answer[0][1][0]
        entry_id, fields = as_text(entry[0]), entry[1]
        job_id = as_text(fields[b"id"])
        record = self.get(job_id)
        if record is None:  # its record expired or was deleted: nothing to do
            self._call(self._drop, entry_id)
            return None
        record = record.with_(tries=record.tries + 1)
        self._call(self.redis.hset, _key(job_id), "tries", json.dumps(record.tries))
        return Claim(job_id, entry_id, record.tries)

    def _take_over(self, consumer: str) -> tuple | None:
        """An entry a dead worker left pending past the visibility timeout, now ours."""
        answer = self._call(
            self.redis.xautoclaim, STREAM, GROUP, consumer,
            min_idle_time=int(self.config.job_visibility_s * 1000), start_id="0-0", count=1,
        )  # fmt: skip
        claimed, deleted = answer[1], answer[2] if len(answer) > 2 else []
        if deleted:
            self._call(self.redis.xack, STREAM, GROUP, *deleted)
        if claimed:
            log.warning("job entry %s taken over from a worker that stopped answering",
                        as_text(claimed[0][0]))  # fmt: skip
            return claimed[0]
        return None

    def _drop(self, entry_id: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(STREAM, GROUP, entry_id)
        pipe.xdel(STREAM, entry_id)
        pipe.execute()

    def heartbeat(self, claim: Claim, consumer: str) -> None:
        self._call(
            self.redis.xclaim, STREAM, GROUP, consumer, min_idle_time=0,
            message_ids=[claim.entry], justid=True,
        )  # fmt: skip

    def update(self, record: JobRecord) -> None:
        self._call(self.redis.hset, _key(record.id), mapping=record.to_fields())

    def end(self, claim: Claim, record: JobRecord, dead: bool = False) -> None:
        def build(pipe) -> None:
            pipe.hset(_key(record.id), mapping=record.to_fields())
            pipe.expire(_key(record.id), self.config.job_ttl_s)
            pipe.delete(_request_key(record.id))
            pipe.xack(STREAM, GROUP, claim.entry)
            pipe.xdel(STREAM, claim.entry)
            if dead:
                error = json.dumps(record.error or {})
                pipe.xadd(DEAD, {"id": record.id, "error": error}, maxlen=DEAD_KEPT,
                          approximate=True)  # fmt: skip
            for name, count in stat_fields(record, dead).items():
                pipe.hincrby(STATS, name, count)
            pipe.hincrbyfloat(STATS, "latency_sum", record.latency_s or 0.0)

        self._transaction(build)

    def forget(self, claim: Claim) -> None:
        self._call(self._drop, claim.entry)

    def requeue(self, claim: Claim, record: JobRecord, count_try: bool = True) -> None:
        if not count_try:
            record = record.with_(tries=record.tries - 1)

        def build(pipe) -> None:
            pipe.hset(_key(record.id), mapping=record.to_fields())
            pipe.xack(STREAM, GROUP, claim.entry)
            pipe.xdel(STREAM, claim.entry)
            pipe.xadd(STREAM, {"id": record.id})
            if count_try:
                pipe.hincrby(STATS, "retries", 1)

        self._transaction(build)

    def depth(self) -> Depth:
        def read() -> Depth:
            pipe = self.redis.pipeline(transaction=False)
            pipe.xlen(STREAM)
            pipe.xpending(STREAM, GROUP)
            pipe.xlen(DEAD)
            backlog, pending, dead = pipe.execute()
            running = int(pending["pending"])
            return Depth(max(0, backlog - running), running, dead)

        return self._call(read)

    def stats(self) -> dict[str, float]:
        fields = self._call(self.redis.hgetall, STATS)
        return {as_text(k): float(v) for k, v in fields.items()}

    def missing(self) -> str | None:
        try:
            self._call(self.redis.ping)
        except QueueUnavailable as exc:
            return f"redis: {exc.message}"
        return None

    def close(self) -> None:
        self.redis.close()


def _key(job_id: str) -> str:
    return f"job:{job_id}"


def _request_key(job_id: str) -> str:
    return f"job:{job_id}:request"


def _queue_full(config: Config) -> Overloaded:
    return Overloaded(
        f"{config.max_queued_jobs} jobs are waiting already; retry later",
        headers={"Retry-After": str(max(config.retry_after_s, 10))},
    )


def open_queue(config: Config) -> JobQueue:
    """Redis when REDIS_URL is set, else the embedded queue. Opens no connection yet."""
    return RedisQueue(config) if config.redis_url else EmbeddedQueue(config)
