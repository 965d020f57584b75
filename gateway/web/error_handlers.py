"""Every failure as the API's JSON error: `{"error": {"code", "message", "request_id"}}`.

ApiError and the decoding policy's refusals carry their own status and code; Werkzeug's
HTTP errors get a code from HTTP_CODES; a gone client is logged as 499; anything else is a
500 whose traceback goes to the log, never to the client. A refusal that leaves part of
the body unread (too large, too slow, overloaded) stops reading it and closes the
connection, so it costs the server nothing more.
"""

from __future__ import annotations

import logging
import socket

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from animation.images import ImageRejected
from gateway.errors import ApiError, ClientGone, error_document
from gateway.rendering.pool import NoWorkerFree
from gateway.services import current_services

log = logging.getLogger("gateway.errors")
CLIENT_CLOSED = 499  # nginx's code for "client closed the request"; for logs and metrics only
HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed",
              408: "request_timeout", 413: "payload_too_large",
              415: "unsupported_media_type"}  # fmt: skip
# Refusals answered before (or instead of) reading the whole body.
CUT_SHORT = frozenset({"payload_too_large", "request_timeout", "overloaded"})


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    response = jsonify(error_document(code, message, g.get("request_id", "")))
    response.status_code = status
    response.headers.update(headers or {})
    return response


def stop_reading_body() -> None:
    """Close our read side of the connection: otherwise gunicorn reads (and discards) the
    rest of the body before the next request, a long while for a big body on a busy machine,
    with the worker's hub kept busy all that time. With nothing left to read, gunicorn closes
    the connection once the answer is sent."""
    client = request.environ.get("gunicorn.socket")
    if client is not None:
        try:
            client.shutdown(socket.SHUT_RD)
        except OSError:  # already gone
            pass


def _answer(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    if code in CUT_SHORT:
        stop_reading_body()
    return error_response(status, code, message, headers)


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        if exc.status >= 500 and exc.code != "overloaded":
            # A dependency failed (model or storage): the operator needs the reason, which
            # the access log line alone does not carry.
            log.warning(
                "%s: %s", exc.code, exc.message,
                extra={"request_id": g.get("request_id"), "code": exc.code},
            )  # fmt: skip
        return _answer(exc.status, exc.code, exc.message, exc.headers)

    @app.errorhandler(ImageRejected)
    def image_rejected(exc: ImageRejected) -> Response:
        return _answer(exc.status, exc.code, str(exc))

    @app.errorhandler(NoWorkerFree)
    def no_worker_free(exc: NoWorkerFree) -> Response:
        # The render pool waited as long as admission lets a request queue: the same refusal.
        return api_error(current_services().admission.refusal(str(exc)))

    @app.errorhandler(ClientGone)
    def client_gone(exc: ClientGone) -> Response:
        g.client_gone = True
        return error_response(CLIENT_CLOSED, "client_closed_request", str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = HTTP_CODES.get(exc.code or 500, "http_error")
        return _answer(exc.code or 500, code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Response:
        log.exception("unhandled error", extra={"request_id": g.get("request_id")})
        return error_response(500, "internal_error", "the server failed to handle this request")
