"""POST /jobs (queue an /animate request, answer 202 at once) and GET /jobs/<id> (its state,
progress and, when done, /animate's answer). gateway/jobs/ holds the queue and the runner.

A job is checked exactly as /animate checks a request before anything is queued (the
API key, the body's limits, the options, the image's header, an uploaded motion read in a
render worker, the callback's URL), so a bad one gets the same 4xx and nothing is queued.
It is visible only with the API key that made it: any other gets 404, as for an id that
never was.
"""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, g, jsonify, request

from gateway.errors import CallbackRefused, NotFound
from gateway.jobs import callbacks
from gateway.jobs.records import JobRecord, JobRequest, new_job_id, owner_of
from gateway.services import current_services
from gateway.web.drawings import (
    caller_key,
    parse_animate,
    parse_body,
    receive_body,
    require_api_key,
)
from gateway.web.requests import AnimateRequest
from gateway.web.upload import Upload

bp = Blueprint("jobs", __name__)
bp.before_request(require_api_key)
CALLBACK_FIELD = "callback_url"


def _callback_url(fields: dict) -> str | None:
    """The job's callback URL, checked (gateway/jobs/callbacks.py); None when not given."""
    url = fields.get(CALLBACK_FIELD)
    if url in (None, ""):
        return None
    if not isinstance(url, str):
        raise CallbackRefused("callback_url must be a string")
    config = current_services().config
    if not config.callback_secret:
        raise CallbackRefused("callbacks are off on this service (no CALLBACK_SECRET is set)")
    callbacks.check_url(url, config.callback_allow_hosts)
    return url


@bp.post("/jobs")
def submit() -> tuple[Response, int]:
    services = current_services()
    body = receive_body()
    given: dict = {}

    def parse(upload: Upload, query: dict) -> AnimateRequest:
        given.update({**query, **upload.fields})
        return parse_animate(upload, query)

    job = parse_body(body, parse)
    callback_url = _callback_url(given)
    if job.motion_upload is not None:  # a malformed motion is refused now, not in the job
        with g.timer.stage("motion"):
            services.pipeline.read_motion(job.motion_upload, request.environ.get("gunicorn.socket"))
    record = JobRecord(new_job_id(), owner_of(caller_key()), job.motions, callback_url=callback_url)
    services.queue.submit(
        record,
        JobRequest(body, request.mimetype, dict(request.mimetype_params), request.args.to_dict(),
                   request.host_url),
    )  # fmt: skip
    status_url = f"/jobs/{record.id}"
    response = jsonify(id=record.id, status_url=status_url)
    response.headers["Location"] = status_url
    return response, 202


@bp.get("/jobs/<job_id>")
def status(job_id: str) -> Response:
    record = current_services().queue.get(job_id) if len(job_id) <= 64 else None
    if record is None or not hmac.compare_digest(record.owner, owner_of(caller_key())):
        raise NotFound(f"no job {job_id!r} (or not one of this API key's)")
    response = jsonify(record.document())
    response.headers["Cache-Control"] = "no-store"
    return response
