"""JSON logs on stderr: one object per line, so a log pipeline needs no parser of its own.

A line logged while a request is being handled carries its `request_id`, whichever module
logged it.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from flask import g, has_request_context

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def with_request_id(record: logging.LogRecord) -> bool:
    """A logging filter: the current request's id on the record, unless it has one."""
    if not hasattr(record, "request_id") and has_request_context():
        record.request_id = g.get("request_id")
    return True


def configure_logging(level: str) -> None:
    """Send the gateway's loggers to stderr as JSON (idempotent)."""
    logger = logging.getLogger("gateway")
    if not any(isinstance(h.formatter, JsonFormatter) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        handler.addFilter(with_request_id)
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)
