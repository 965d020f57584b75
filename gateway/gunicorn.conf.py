"""gunicorn settings for the gateway: `gunicorn -c gateway/gunicorn.conf.py`.

gevent workers: many slow clients and model/storage calls per process, while the CPU
work goes to each worker's render processes (gateway.rendering.pool). Values come from the
environment so the same file serves `make run`, the tests and Kubernetes.
"""

import os
import shutil
import tempfile

wsgi_app = "gateway.app:create_app()"
# gunicorn's gevent worker, refusing a full house before Flask (gateway/ops/gunicorn_worker.py).
worker_class = "gateway.ops.gunicorn_worker.GatewayWorker"
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:5000")]
# One worker per pod is enough with gevent; its render pool takes the cores (RENDER_WORKERS).
workers = int(os.environ.get("GUNICORN_WORKERS", os.environ.get("WEB_CONCURRENCY", "1")))
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "1000"))
# gevent workers heartbeat from the hub, which never blocks on a render: a worker silent
# this long is truly stuck.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
# SIGTERM: stop accepting, let in-flight requests finish (two model calls and a render fit).
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = 5
# Off by default: a recycled worker stops accepting while its requests drain (up to
# graceful_timeout) and its successor boots, and with one worker per pod nothing answers
# meanwhile, /health included (docs/BENCHMARKS.md, section overload). The native work
# (decoding, rendering) runs in the render processes, not here.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
max_requests_jitter = max_requests // 10
# The request log is the gateway's own JSON line; gunicorn's own messages (boot, worker
# exits, timeouts) go to stderr as JSON too, so one parser reads the whole stream.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "gateway.ops.logs.JsonFormatter"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "gunicorn.error": {"handlers": ["stderr"], "level": loglevel.upper(), "propagate": False},
        # Off: the gateway writes its own request line, with request id and stage timings.
        "gunicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
    },
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}
proc_name = "drawn-animation-gateway"
# gunicorn's control socket defaults to one path per user ($HOME/.gunicorn): several
# gateways on one machine would fight over it, and a read-only root cannot hold it.
control_socket_disable = True
# Request-line and header limits: nothing legitimate comes near them.
limit_request_line = 8190
limit_request_fields = 100

# prometheus_client picks its multiprocess mode at import time: the variable must be set
# here, in the master, before any worker imports the app.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="gateway-metrics-")


def on_starting(server):
    # Samples of a previous run would be summed into this one's.
    folder = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".db"):
            os.unlink(os.path.join(folder, name))


def post_fork(server, worker):
    # The render pool must not be created here: gevent has not patched this process yet.
    # It starts in post_worker_init, once the worker (and its hub) is set up.
    server.log.info("worker %s forked", worker.pid)


def post_worker_init(worker):
    from gateway.services import services_of

    services_of(worker.wsgi).start()


def worker_exit(server, worker):
    from gateway.services import services_of

    app = getattr(worker, "wsgi", None)
    if app is not None:
        services_of(app).close()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if os.path.basename(folder).startswith("gateway-metrics-"):
        shutil.rmtree(folder, ignore_errors=True)
