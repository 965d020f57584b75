"""`python -m gateway.worker`: a job worker. It takes jobs from Redis (REDIS_URL) and runs
them with the gateway's own pipeline: the same settings, render pool, TorchServe client and
storage as the gateway; it listens on no port.

It starts taking jobs once it could serve them (the checks of /ready: the models, storage,
the render workers, the motion table, Redis). SIGTERM or SIGINT: it takes no more jobs,
gives those running WORKER_GRACE_S to finish, hands the rest back to the queue (another
worker takes them, the try not counted), and exits 0. Killed outright (SIGKILL, the OOM
killer), its jobs are taken over by another worker JOB_VISIBILITY_S after its last
heartbeat. See gateway/jobs/runner.py for a job's life.
"""

from gevent import monkey

monkey.patch_all()  # before anything opens a socket: Redis, TorchServe and storage calls yield

import logging  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

import gevent  # noqa: E402
from gevent.event import Event  # noqa: E402

from gateway.config import Config, ConfigError  # noqa: E402
from gateway.jobs.queue import RedisQueue  # noqa: E402
from gateway.jobs.runner import JobRunner  # noqa: E402
from gateway.ops import readiness  # noqa: E402
from gateway.ops.logs import configure_logging  # noqa: E402
from gateway.services import Services  # noqa: E402

log = logging.getLogger("gateway.worker")
USAGE = """\
usage: python -m gateway.worker

A job worker of the drawn-animation service: takes the jobs POST /jobs queued in Redis
(REDIS_URL) and renders them. Every setting comes from the environment, as the gateway's
(README, Configuration): REDIS_URL, TORCHSERVE_URL, STORAGE_URL, RENDER_WORKERS,
JOB_CONCURRENCY, JOB_VISIBILITY_S, JOB_MAX_TRIES, WORKER_GRACE_S, CALLBACK_SECRET, ...
"""
READY_POLL_S = 1.0


def wait_until_ready(services: Services, queue: RedisQueue, stop: Event) -> bool:
    """Block until the worker could serve a job (False: told to stop first)."""
    said = None
    while not stop.is_set():
        problems = readiness.missing(services)
        problem = queue.missing()
        if problem:
            problems.append(problem)
        if not problems:
            return True
        if problems != said:
            log.warning("not taking jobs yet: %s", "; ".join(problems))
            said = problems
        stop.wait(READY_POLL_S)
    return False


def main(argv: list[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(USAGE, end="")
        return 0
    try:
        config = Config.from_env()
    except ConfigError as exc:
        print(f"gateway.worker: {exc}", file=sys.stderr)
        return 2
    if not config.redis_url:
        print("gateway.worker: REDIS_URL is not set; without it the gateway runs jobs itself "
              "(its embedded queue) and no worker is needed", file=sys.stderr)  # fmt: skip
        return 2
    configure_logging(config.log_level)
    stop = Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(signum, stop.set)
    services = Services.build(config)
    queue = RedisQueue(config)
    try:
        services.start()
    except ConfigError as exc:
        log.error("cannot start: %s", exc)
        return 2
    runner = JobRunner(services, queue)
    try:
        if wait_until_ready(services, queue, stop):
            runner.start()
            log.info("taking jobs as %s, %d at a time", runner.consumer,
                     config.job_concurrency)  # fmt: skip
            stop.wait()
            log.info("stopping: %d job(s) running get %g s", runner.busy, config.worker_grace_s)
        runner.stop(config.worker_grace_s)
    finally:
        services.close()
        queue.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
