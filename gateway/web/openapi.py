"""GET /openapi.json: the API as OpenAPI 3.1, generated from the code: the app's routes, the
request options (the fields of `web.requests.AnimateOptions` / `FigureOptions`) and the
error codes (the classes of `gateway.errors` and `animation.images`, with the statuses they
carry).

Only the words live here. A route, an option or an error code without its words is a
KeyError when the document is built, so a test fails before a client meets it undocumented.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache

from flask import Blueprint, Flask, Response, current_app, jsonify

from animation import images
from animation.formats import FORMATS
from animation.mask_warnings import WARNINGS
from animation.skeleton import COCO_KEYPOINTS
from animation.sprites import LAYOUT_SCHEMA
from gateway import errors
from gateway.jobs.records import STATUSES
from gateway.rendering.figures import FIGURE_WARNINGS_HEADER
from gateway.web.error_handlers import HTTP_CODES
from gateway.web.options import DEFAULT_FPS, DEFAULT_SIZE, FPS_RANGE, SIZE_RANGE
from gateway.web.requests import MOTION_UPLOAD_FIELDS, AnimateOptions, FigureOptions
from gateway.web.upload import IMAGE_FIELDS, JSON_IMAGE_FIELDS

ERROR_WORDS = {
    "bad_request": "An unparsable body or option (size, fps, bbox, keypoints, mask, format, "
    "background, map, up, start, end).",
    "invalid_image": "Not a PNG/JPEG/WebP image, a truncated one, sides more than 50:1 apart, "
    "or an image a model refused (with its words).",
    "unknown_motion": "A motion the table does not have; the message lists the known ones.",
    "invalid_motion": "An uploaded BVH file that cannot be read (the message names the line), "
    "whose joints cannot be found (it says what is missing), or that is empty.",
    "motion_too_large": "An uploaded BVH file over 8 MiB, 256 joints or 15000 frames (the "
    "message names the limit).",
    "unauthorized": "API_KEY is set and the bearer token is missing or wrong.",
    "not_found": "No such route or stored file.",
    "method_not_allowed": "The route does not take this method.",
    "request_timeout": "The body did not arrive within READ_TIMEOUT_S.",
    "payload_too_large": "More than MAX_UPLOAD_BYTES, declared or streamed.",
    "image_too_large": "More than MAX_PIXELS, read from the header before any pixel is decoded.",
    "unsupported_media_type": "A body that is none of the three forms, or an image in another "
    "format.",
    "no_character_detected": "The detector found no figure, or no figure separates from the paper.",
    "pose_not_found": "The pose model is not confident about the joints.",
    "model_unavailable": "TorchServe is down, has no worker, fails or refuses the gateway.",
    "storage_unavailable": "An upload to or a lookup in storage failed.",
    "overloaded": "Every render slot and the queue are taken (or no slot came in time); retry "
    "after Retry-After seconds.",
    "model_timeout": "TorchServe gave no answer within MODEL_TIMEOUT_S.",
    "queue_unavailable": "The job queue (Redis) does not answer: the job was not accepted.",
    "invalid_callback": "A job's callback_url that is not https (http only to an allow-listed "
    "host), carries credentials, does not resolve, or resolves to a loopback, private, "
    "link-local or metadata address; or callbacks are off (no CALLBACK_SECRET).",
    "internal_error": "A bug: the traceback is in the server's log, never in the answer.",
}
# Codes a client never reads (logged only) or a catch-all without a class.
NOT_ANSWERED = {"client_closed_request", "http_error"}

BOX = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
PIXEL_BOX = {"type": "array", "items": {"type": "integer", "minimum": 0},
             "minItems": 4, "maxItems": 4}  # fmt: skip
MASK = {
    "type": "object",
    "required": ["box", "png"],
    "properties": {
        "box": {
            **PIXEL_BOX,
            "description": "[left, top, right, bottom] in the upload's pixels "
            "(right and bottom excluded)",
        },  # fmt: skip
        "png": {
            "type": "string",
            "description": "base64 PNG of the box's size (a data: URL "
            "also works); non-zero pixels are the figure",
        },  # fmt: skip
    },
}
OPTIONS = {
    "motions": {
        "description": "Motions to render (GET /motions), a list or a comma-separated string; "
        "default DEFAULT_MOTIONS, else the whole table.",
        "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
    },
    "size": {"description": "Longest side of the animations in px.", "type": "integer",
             "minimum": SIZE_RANGE[0], "maximum": SIZE_RANGE[1], "default": DEFAULT_SIZE},
    "fps": {"description": "Frames per second; the clip keeps its real duration, at most 150 "
            "frames.", "type": "integer", "minimum": FPS_RANGE[0], "maximum": FPS_RANGE[1],
            "default": DEFAULT_FPS},
    "format": {"description": "gif (transparent), webp (animated, alpha), mp4 (H.264 "
               "yuv420p on a background colour), sprites (every frame in a transparent PNG "
               "sheet; its layout, a SpriteLayout, is in the PNG's `layout` text chunk and "
               "at the sheet's URL with .json, named in a Link header per motion) or png "
               "(numbered transparent PNG frames and layout.json, zipped).", "type": "string",
               "enum": list(FORMATS), "default": "gif"},
    "bbox": {"description": "[left, top, right, bottom] of the figure in the upload's pixels "
             "(after EXIF rotation): skips the detector. JSON text in a form or query.",
             **BOX},
    "keypoints": {"description": "17 COCO [x, y] (" + ", ".join(COCO_KEYPOINTS) + ") in the "
                  "upload's pixels: skip the pose model. JSON text in a form or query.",
                  "type": "array", "minItems": 17, "maxItems": 17,
                  "items": {"type": "array", "items": {"type": "number"},
                            "minItems": 2, "maxItems": 3}},
    "mask": {**MASK, "description": "The figure's outline as /annotate answers it (perhaps "
             "fixed by a person): used as given, skips segmentation, and its box fixes the "
             "crop (skips the detector). JSON text in a form or query."},
    "background": {"description": "#rrggbb behind the figure in an mp4 (gif and webp stay "
                   "transparent and ignore it).", "type": "string",
                   "pattern": "^#?[0-9a-fA-F]{6}$", "default": "#ffffff"},
    "bvh": {"description": "A BVH file (a multipart file part, or its text in a JSON string): "
            "animates the drawing with that motion, retargeted with no configuration, answered "
            "under its file name's stem (else `custom`). At most 8 MiB, 256 joints, 15000 "
            "frames.", "type": "string", "contentMediaType": "application/octet-stream"},
    "map": {"description": "For an uploaded bvh: role=JOINT pairs (or a JSON object) for roles "
            "its joint names do not give away.", "type": "string"},
    "up": {"description": "For an uploaded bvh: its up axis, x, y or z (optionally signed); "
           "default: found from the motion.", "type": "string", "pattern": "^[+-]?[xyzXYZ]$"},
    "callback_url": {"description": "POST /jobs only: where the job's final state is POSTed "
                     "(https; http and private addresses only to hosts the operator "
                     "allow-lists).", "type": "string", "format": "uri"},
    "start": {"description": "For an uploaded bvh: where the segment starts, seconds.",
              "type": "number", "minimum": 0},
    "end": {"description": "For an uploaded bvh: where the segment ends, seconds.",
            "type": "number", "exclusiveMinimum": 0},
}  # fmt: skip
IMAGE_WORDS = (
    "The drawing: a PNG, JPEG or WebP image. Multipart: the field `image` (also `file`, `data`). "
    "JSON: base64 in `file` (also `image`). Raw: the body itself, with its image Content-Type."
)


def _schema(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def option_names(options: type) -> list[str]:
    return [f.name for f in dataclasses.fields(options)]


def error_codes() -> dict[str, int]:
    """Every error code a client can meet -> its status, from the code itself."""
    found = {cls.code: cls.status for cls in errors.ApiError.__subclasses__()}
    found |= {cls.code: cls.status for cls in _subclasses(images.ImageRejected)}
    found |= {code: status for status, code in HTTP_CODES.items()}
    found[errors.ApiError.code] = errors.ApiError.status  # internal_error
    return {code: status for code, status in found.items() if code not in NOT_ANSWERED}


def _subclasses(cls: type) -> list[type]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


def _error_responses(statuses: set[int]) -> dict:
    by_status: dict[int, list[str]] = {}
    for code, status in sorted(error_codes().items(), key=lambda item: item[1]):
        if status in statuses:
            by_status.setdefault(status, []).append(code)
    out = {}
    for status, codes in sorted(by_status.items()):
        words = "; ".join(f"`{c}`: {ERROR_WORDS[c]}" for c in codes)
        response = {"description": words, "content": {"application/json": {
            "schema": _schema("Error")}}}  # fmt: skip
        if status == 503:
            response["headers"] = {"Retry-After": {
                "description": "seconds to wait (with `overloaded`)", "schema": {"type": "integer"}}}  # fmt: skip
        if status == 401:
            response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
        out[str(status)] = response
    return out


DRAWING_ERRORS = {400, 401, 405, 408, 413, 415, 422, 500, 503, 504}


def animate_option_names() -> list[str]:
    """Every option of POST /animate: AnimateOptions' fields and the uploaded motion's."""
    return option_names(AnimateOptions) + list(MOTION_UPLOAD_FIELDS)


def _drawing_operation(summary: str, description: str, names: list[str], answer: dict) -> dict:
    """A POST that takes a drawing in the three forms, with the options `names`."""
    fields = {name: OPTIONS[name] for name in names}
    form_fields = {n: s for n, s in fields.items() if n != "bvh"}
    query = [{"name": n, "in": "query", "required": False, "description": s["description"],
              "schema": {"type": "string"}} for n, s in form_fields.items()]  # fmt: skip
    image = {"type": "string", "contentMediaType": "image/*", "description": IMAGE_WORDS}
    base64_image = {"type": "string", "contentEncoding": "base64", "description": IMAGE_WORDS}
    json_fields = dict(form_fields)
    if "bvh" in fields:  # a JSON body carries the file's text
        json_fields["bvh"] = {**fields["bvh"], "contentMediaType": "text/plain"}

    def one_of(names) -> list[dict]:
        return [{"required": [name]} for name in names]

    return {
        "summary": summary,
        "description": description + " Options come as form fields, JSON keys or query "
        "parameters (the body wins).",
        "security": [{}, {"bearer": []}],
        "parameters": query,
        "requestBody": {"required": True, "content": {
            "multipart/form-data": {"schema": {"type": "object", "anyOf": one_of(IMAGE_FIELDS),
                "properties": {**{f: image for f in IMAGE_FIELDS}, **fields}}},
            "application/json": {"schema": {"type": "object", "anyOf": one_of(JSON_IMAGE_FIELDS),
                "properties": {**{f: base64_image for f in JSON_IMAGE_FIELDS}, **json_fields}}},
            **{t: {"schema": {"type": "string", "contentMediaType": t}}
               for t in ("image/png", "image/jpeg", "image/webp")},
        }},
        "responses": {"200": answer, **_error_responses(DRAWING_ERRORS)},
    }  # fmt: skip


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _get(summary: str, answer: dict, statuses: set[int] = frozenset()) -> dict:
    responses = _error_responses({405, *statuses})
    return {"summary": summary, "responses": {"200": answer, **responses}}


def _file_operation() -> dict:
    """GET /files/<key>: the whole file, or the byte range a video player asks for."""
    content = {f.content_type: {"schema": {"type": "string"}} for f in FORMATS.values()}
    content["application/json"] = {"schema": _schema("SpriteLayout")}
    operation = _get("A stored animation (file:// storage)",
                     {"description": "The animation", "content": content}, {404})  # fmt: skip
    operation["responses"]["206"] = {"description": "The byte range the Range header asked for",
                                     "content": content}  # fmt: skip
    operation["parameters"] = [{"name": "Range", "in": "header", "required": False,
                                "schema": {"type": "string"},
                                "description": "a byte range, e.g. bytes=0-1023"}]  # fmt: skip
    return operation


def _operations() -> dict[tuple[str, str], dict]:
    """(Flask rule, method) -> its operation."""
    animate = _drawing_operation(
        "Animate a drawing",
        "Finds the figure (or takes the given bbox, keypoints and mask), rigs it and renders each "
        "motion; answers one URL per motion, nothing else. Answered from storage when the same "
        "drawing was animated with the same options before.",
        animate_option_names(),
        {**_json("One URL per motion", _schema("Animations")), "headers": {
            FIGURE_WARNINGS_HEADER: {"description": "Present when the figure's outline looked "
                                     "implausible (it animated with the best outline all the "
                                     "same): the warning codes, comma-separated, as /annotate's "
                                     "`quality.warnings` name them.",
                                     "schema": {"type": "string"}},
            "Link": {"description": "format=sprites: one per motion, `<url>; "
                     "rel=\"describedby\"; type=\"application/json\"; title=\"<motion>\"`: "
                     "where its sheet's layout (a SpriteLayout) is.",
                     "schema": {"type": "string"}}}},
    )  # fmt: skip
    post_root = {**animate, "summary": "Animate a drawing (the Android app's route)"}
    annotate = _drawing_operation(
        "What the service sees in a drawing",
        "The figure's box, its 17 joints, its outline and quality warnings, in the upload's "
        "pixels after EXIF rotation; no rendering. Fed back to /animate (bbox, keypoints, "
        "mask), it gives the same animations without any model.",
        option_names(FigureOptions),
        _json("The figure", _schema("Annotation")),
    )
    job = _drawing_operation(
        "Queue a drawing's animation as a job",
        "Takes what POST /animate takes, checked the same way before anything is queued (a bad "
        "request gets the same 4xx), plus an optional `callback_url`; answers 202 at once. "
        "GET /jobs/{job_id} says how it goes, and when it is done gives /animate's answer. "
        "With callback_url, the final state (a Job) is POSTed there, signed: "
        '`X-Signature-256: sha256=<hex HMAC-SHA256 of "<X-Signature-Timestamp>.<body>" '
        "with the operator's CALLBACK_SECRET>`, tried again with backoff until a 2xx.",
        [*animate_option_names(), "callback_url"],
        {},
    )
    job["responses"] = {
        "202": {
            **_json("Accepted: the job's id and where to ask about it", _schema("JobAccepted")),
            "headers": {
                "Location": {"description": "the status_url", "schema": {"type": "string"}}
            },
        },
        **{k: v for k, v in job["responses"].items() if k != "200"},
    }
    job_state = _get(
        "A job: its state, progress per motion, and its result when done "
        "(visible only with the API key that made it)",
        _json("The job", _schema("Job")),
        {401, 404},
    )
    job_state["security"] = [{}, {"bearer": []}]
    html = {"description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}
    any_file = {"description": "The file", "content": {"*/*": {"schema": {"type": "string"}}}}
    return {
        ("/animate", "POST"): animate,
        ("/", "POST"): post_root,
        ("/annotate", "POST"): annotate,
        ("/jobs", "POST"): job,
        ("/jobs/<job_id>", "GET"): job_state,
        ("/", "GET"): _get("The web page: upload or photograph a drawing, fix it, animate it",
                           html),
        ("/static/<path:filename>", "GET"): _get("The page's scripts and styles", any_file, {404}),
        ("/openapi.json", "GET"): _get("This document", _json("OpenAPI 3.1", {"type": "object"})),
        ("/health", "GET"): _get("Liveness: touches no dependency", _json("Alive", {
            "type": "object", "properties": {"status": {"const": "ok"}}})),
        ("/ready", "GET"): {**_get("Readiness: models, storage, render workers, motions", _json(
            "Ready", _schema("Readiness"))), "responses": {
                "200": _json("Ready", _schema("Readiness")),
                "503": _json("Not ready: `missing` names each problem", _schema("Readiness"))}},
        ("/motions", "GET"): _get("The motion table", _json("Motions", _schema("Motions"))),
        ("/motions/<name>/preview.gif", "GET"): _get(
            "A motion's preview: a small animated GIF of it on a generated figure (rendered "
            "on first request, then kept; cacheable, with an ETag)",
            {"description": "The preview",
             "content": {"image/gif": {"schema": {"type": "string"}}}}, {404}),
        ("/metrics", "GET"): _get("Prometheus metrics", {"description": "Prometheus text", "content": {
            "text/plain": {"schema": {"type": "string"}}}}),
        ("/files/<path:key>", "GET"): _file_operation(),
    }  # fmt: skip


COMPONENTS = {
    "schemas": {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {
            "type": "object", "required": ["code", "message", "request_id"], "properties": {
                "code": {"type": "string"}, "message": {"type": "string"},
                "request_id": {"type": "string"}}}}},
        "Animations": {"type": "object", "description": "motion name -> URL of its animation",
                       "additionalProperties": {"type": "string", "format": "uri"}},
        "SpriteLayout": {**LAYOUT_SCHEMA, "description": "Where each frame lies in a sprite "
                         "sheet (format=sprites) and how long it shows; also layout.json in "
                         "format=png's zip, its x and y as a sheet would place them."},
        "Annotation": {"type": "object",
                       "required": ["image", "bbox", "bbox_score", "keypoints", "mask", "quality"],
                       "properties": {
            "image": {"type": "object", "properties": {"width": {"type": "integer"},
                                                       "height": {"type": "integer"}}},
            "bbox": {**BOX, "description": "[left, top, right, bottom] of the figure"},
            "bbox_score": {"type": ["number", "null"],
                           "description": "the detector's score; null when the box was given"},
            "keypoints": {"type": "array", "minItems": 17, "maxItems": 17,
                          "description": "17 COCO [x, y, score] (" + ", ".join(COCO_KEYPOINTS)
                          + "); score null where the point was given",
                          "items": {"type": "array", "prefixItems": [
                              {"type": "number"}, {"type": "number"},
                              {"type": ["number", "null"]}]}},
            "mask": MASK,
            "quality": {"type": "object", "properties": {
                "ok": {"type": "boolean"},
                "warnings": {"type": "array", "items": {"type": "object", "properties": {
                    "code": {"type": "string", "enum": list(WARNINGS)},
                    "message": {"type": "string"}}}}}},
        }},
        "JobAccepted": {"type": "object", "required": ["id", "status_url"], "properties": {
            "id": {"type": "string"}, "status_url": {"type": "string"}}},
        "Job": {"type": "object", "required": ["id", "status", "progress", "created_at"],
                "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": list(STATUSES)},
            "progress": {"type": "object", "required": ["done", "total", "motions"],
                         "properties": {
                "done": {"type": "integer", "description": "motions stored"},
                "total": {"type": "integer"},
                "motions": {"type": "object", "description": "motion -> done or waiting",
                            "additionalProperties": {"enum": ["done", "waiting"]}}}},
            "result": {**_schema("Animations"), "description": "when done: /animate's answer"},
            "layouts": {"type": "object", "description": "format=sprites: motion -> the URL of "
                        "its sheet's layout", "additionalProperties": {"type": "string"}},
            "error": {"type": "object", "description": "when failed: why (a client's error at "
                      "once; anything else after JOB_MAX_TRIES tries)", "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}}},
            "warnings": {"type": "array", "items": {"type": "string"},
                         "description": "as /animate's " + FIGURE_WARNINGS_HEADER},
            "created_at": {"type": "string", "format": "date-time"},
            "finished_at": {"type": "string", "format": "date-time"}}},
        "Readiness": {"type": "object", "properties": {
            "ready": {"type": "boolean"}, "missing": {"type": "array", "items": {"type": "string"}}}},
        "Motions": {"type": "object", "properties": {
            "defaults": {"type": "array", "items": {"type": "string"}},
            "motions": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "duration_s": {"type": "number"},
                "frames": {"type": "integer"}, "fps": {"type": "integer"},
                "rendered_s": {"type": "number", "description": "seconds of it rendered: at "
                               "most 150 frames at the fps"},
                "cut_s": {"type": "number", "description": "seconds a long clip loses (0: none)"},
                "default": {"type": "boolean"}, "description": {"type": "string"},
                "group": {"type": "string", "description": "dance, everyday, sport, silly "
                          "(empty for an uploaded folder's motion without one)"},
                "preview": {"type": "string", "description": "the path of its preview GIF"}}}}}},
    },
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                   "description": "Needed by the POST routes when API_KEY is set"}},
}  # fmt: skip


def openapi_path(rule: str) -> str:
    """Flask's `/files/<path:key>` -> OpenAPI's `/files/{key}`."""
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def routes(app: Flask) -> list[tuple[str, str]]:
    """(rule, method) of every route the app serves (HEAD and OPTIONS come with them)."""
    return sorted((rule.rule, method) for rule in app.url_map.iter_rules()
                  for method in rule.methods - {"HEAD", "OPTIONS"})  # fmt: skip


def build(app: Flask) -> dict:
    """The document for `app`: every route it serves, or a KeyError naming one undescribed."""
    undescribed = [code for code in error_codes() if code not in ERROR_WORDS]
    if undescribed:
        raise KeyError(f"error codes without words in gateway/web/openapi.py: {undescribed}")
    operations = _operations()
    paths: dict[str, dict] = {}
    for rule, method in routes(app):
        operation = dict(operations[(rule, method)])
        names = re.findall(r"<(?:[^:<>]+:)?([^<>]+)>", rule)
        if names:
            in_path = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                       for n in names]  # fmt: skip
            operation["parameters"] = [*in_path, *operation.get("parameters", [])]
        paths.setdefault(openapi_path(rule), {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Drawn animation service",
            "version": "1",
            "description": "A photo of a child's drawing of a person in, animations out. "
            'Errors are `{"error": {"code", "message", "request_id"}}`.',
        },
        "paths": paths,
        "components": COMPONENTS,
    }


@cache
def document(app: Flask) -> dict:
    return build(app)


bp = Blueprint("openapi", __name__)


@bp.get("/openapi.json")
def openapi_document() -> Response:
    return jsonify(document(current_app._get_current_object()))
