"""A job's record (its state, as GET /jobs/<id> shows it) and the request it was made from.

Both are stored as flat string maps (Redis hashes; plain dicts in the embedded queue), so
each has `to_fields()` and `from_fields()`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import asdict, dataclass, field, replace

STATUSES = ("queued", "running", "done", "failed")
FINAL = ("done", "failed")


def new_job_id() -> str:
    """128 random bits: an id nobody can guess, safe in a URL."""
    return secrets.token_urlsafe(16)


def owner_of(api_key: str | None) -> str:
    """Whose job it is: a digest of the caller's API key (never the key); "" without keys."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""


@dataclass(frozen=True)
class JobRequest:
    """What POST /jobs received, kept until the job ends. The worker reads it again with
    the very code /animate uses (web/upload.py, web/requests.py), after the gateway has
    checked it the same way before queueing it."""

    body: bytes
    mimetype: str
    params: dict[str, str]  # the Content-Type's parameters (multipart's boundary)
    query: dict[str, str]
    host_url: str  # where the gateway was asked: the base of file:// storage's URLs

    def to_fields(self) -> dict[str, bytes | str]:
        return {
            "body": self.body,
            "meta": json.dumps({"mimetype": self.mimetype, "params": self.params,
                                "query": self.query, "host_url": self.host_url}),
        }  # fmt: skip

    @classmethod
    def from_fields(cls, fields: dict[bytes | str, bytes]) -> JobRequest:
        fields = {as_text(k): v for k, v in fields.items()}
        return cls(fields["body"], **json.loads(fields["meta"]))


@dataclass(frozen=True)
class JobRecord:
    id: str
    owner: str
    motions: tuple[str, ...]
    status: str = "queued"
    done: tuple[str, ...] = ()  # motions stored so far
    result: dict[str, str] | None = None  # motion -> URL, as /animate answers
    layouts: dict[str, str] | None = None  # format=sprites: motion -> its layout's URL
    warnings: tuple[str, ...] = ()  # the figure's, as X-Figure-Warnings
    error: dict[str, str] | None = None  # {"code", "message"}: why it failed (or the last try)
    tries: int = 0
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    callback_url: str | None = None

    def to_fields(self) -> dict[str, str]:
        """Every field as a string (JSON for the structured ones)."""
        return {name: json.dumps(value) for name, value in asdict(self).items()}

    @classmethod
    def from_fields(cls, fields: dict[bytes | str, bytes | str]) -> JobRecord:
        values = {as_text(k): json.loads(as_text(v)) for k, v in fields.items()}
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        for name in ("motions", "done", "warnings"):
            known[name] = tuple(known.get(name) or ())
        return cls(**known)

    def with_(self, **changes) -> JobRecord:
        return replace(self, **changes)

    @property
    def latency_s(self) -> float | None:
        """Submit to end, once it ended."""
        return None if self.finished is None else self.finished - self.created

    def document(self) -> dict:
        """What GET /jobs/<id> answers (and what a callback POSTs)."""
        stored = set(self.done)
        doc: dict = {
            "id": self.id,
            "status": self.status,
            "progress": {
                "done": len(stored),
                "total": len(self.motions),
                "motions": {m: "done" if m in stored else "waiting" for m in self.motions},
            },
        }
        if self.status == "done":
            doc["result"] = self.result
            if self.layouts:
                doc["layouts"] = self.layouts
        if self.error and self.status == "failed":
            doc["error"] = self.error
        if self.warnings:
            doc["warnings"] = list(self.warnings)
        doc["created_at"] = _iso(self.created)
        if self.finished is not None:
            doc["finished_at"] = _iso(self.finished)
        return doc


def as_text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
