"""The gateway's Flask application: `create_app(config)` wires the services and blueprints.

gunicorn loads `gateway.app:create_app()` in each worker (after gevent has patched the
process) and `gunicorn.conf.py` starts and stops the render pool around the worker's life.
"""

from __future__ import annotations

import logging
import re
import socket
import time
import uuid
from dataclasses import dataclass

from flask import Flask, Response, current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from gateway import metrics
from gateway.admission import Admission
from gateway.catalogue import MotionCatalogue
from gateway.config import Config
from gateway.cpu_pool import CpuPool
from gateway.errors import ApiError, ClientGone
from gateway.logs import configure_logging
from gateway.parsing import body_limit
from gateway.pipeline import AnimationPipeline, StageTimer
from gateway.storage import Storage, open_storage
from gateway.torchserve_client import TorchServeClient

access_log = logging.getLogger("gateway.access")
log = logging.getLogger("gateway.app")
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
CLIENT_CLOSED = 499  # nginx's code for "client closed the request"; for logs and metrics only
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed",
              413: "payload_too_large", 415: "unsupported_media_type"}  # fmt: skip


@dataclass
class Gateway:
    """The services one worker process shares between its requests."""

    config: Config
    models: TorchServeClient
    storage: Storage
    pool: CpuPool
    admission: Admission
    catalogue: MotionCatalogue
    pipeline: AnimationPipeline

    @classmethod
    def build(cls, config: Config) -> Gateway:
        models = TorchServeClient(
            config.model_roles(),
            config.model_timeout_s,
            on_error=lambda role, kind: metrics.TORCHSERVE_ERRORS.labels(role, kind).inc(),
        )
        storage = open_storage(
            config.storage_url,
            endpoint_url=config.s3_endpoint_url,
            public_base_url=config.public_base_url,
            presign_expiry_s=config.presign_expiry_s,
            timeout_s=config.storage_timeout_s,
        )
        pool = CpuPool(config.render_workers)
        admission = Admission(
            config.max_inflight, config.max_queue, config.queue_timeout_s, config.retry_after_s
        )
        pipeline = AnimationPipeline(config, models, storage, pool)
        return cls(config, models, storage, pool, admission,
                   MotionCatalogue(config.default_motions), pipeline)  # fmt: skip

    def start(self) -> None:
        """Start the render workers and load the motion table before the first request."""
        self.pool.start()
        problem = self.catalogue.missing()
        if problem:
            log.error("motion table unusable: %s", problem)

    def close(self) -> None:
        self.pool.close()


def gateway() -> Gateway:
    return current_app.extensions["gateway"]


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    body = {"error": {"code": code, "message": message, "request_id": g.get("request_id", "")}}
    response = jsonify(body)
    response.status_code = status
    response.headers.update(headers or {})
    return response


def _stop_reading_body() -> None:
    """An upload refused for its size: close our read side of the connection, or gunicorn
    reads (and discards) the rest of the body before the client sees the 413 - 7 s for
    50 MB on a busy 2-core machine, with the worker's hub kept busy all that time."""
    client = request.environ.get("gunicorn.socket")
    if client is not None:
        try:
            client.shutdown(socket.SHUT_RD)
        except OSError:  # already gone
            pass


def _register_errors(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        if exc.code == "payload_too_large":
            _stop_reading_body()
        elif exc.status >= 500 and exc.code != "overloaded":
            # A dependency failed (model or storage): the operator needs the reason, which
            # the access log line alone does not carry.
            log.warning(
                "%s: %s", exc.code, exc.message,
                extra={"request_id": g.get("request_id"), "code": exc.code},
            )  # fmt: skip
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.errorhandler(ClientGone)
    def client_gone(exc: ClientGone) -> Response:
        g.client_gone = True
        return error_response(CLIENT_CLOSED, "client_closed_request", str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = HTTP_CODES.get(exc.code or 500, "http_error")
        if code == "payload_too_large":
            _stop_reading_body()
        return error_response(exc.code or 500, code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        log.exception("unhandled error", extra={"request_id": g.get("request_id")})
        return error_response(500, "internal_error", "the server failed to handle this request")


def _register_request_hooks(app: Flask) -> None:
    @app.before_request
    def start_request() -> None:
        given = request.headers.get("X-Request-ID", "")
        g.request_id = given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        g.timer = StageTimer()
        g.started = time.perf_counter()

    @app.after_request
    def finish_request(response: Response) -> Response:
        elapsed = time.perf_counter() - g.get("started", time.perf_counter())
        response.headers["X-Request-ID"] = g.get("request_id", "")
        timer: StageTimer | None = g.get("timer")
        if timer and timer.stages:
            response.headers["Server-Timing"] = timer.server_timing()
        route = request.url_rule.rule if request.url_rule else "unmatched"
        metrics.REQUESTS.labels(route, request.method, str(response.status_code)).inc()
        metrics.REQUEST_SECONDS.labels(route).observe(elapsed)
        access_log.info(
            "%s %s %s", request.method, request.path, response.status_code,
            extra={
                "request_id": g.get("request_id"), "method": request.method,
                "path": request.path, "status": response.status_code,
                "duration_ms": round(elapsed * 1000, 1),
                "stages_ms": timer.as_ms() if timer else {},
            },
        )  # fmt: skip
        return response


def create_app(config: Config | None = None) -> Flask:
    """The WSGI app. Cheap: no process, connection or file is opened until it is used."""
    from gateway.routes import animate, files, health, motions

    config = config or Config.from_env()
    configure_logging(config.log_level)
    app = Flask("gateway")
    # Werkzeug refuses bodies past this (declared or streamed) before reading them.
    app.config["MAX_CONTENT_LENGTH"] = body_limit(config.max_upload_bytes)
    app.json.sort_keys = False
    app.extensions["gateway"] = Gateway.build(config)
    for blueprint in (animate.bp, health.bp, motions.bp, files.bp):
        app.register_blueprint(blueprint)
    _register_errors(app)
    _register_request_hooks(app)
    return app
