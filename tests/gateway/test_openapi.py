"""GET /openapi.json: valid OpenAPI 3.1 that describes every route, option and error code.

The document is generated from the app's routes, the option dataclasses and the error
classes; these tests fail when one of them gains a member the document has no words for,
or when the document names a route, option or code the code does not have.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import re
from pathlib import Path

import pytest
from flask import Blueprint
from openapi_spec_validator import validate

from animation.images import ImageRejected
from gateway import errors
from gateway.app import create_app
from gateway.config import Config
from gateway.web import openapi
from gateway.web.requests import MOTION_UPLOAD_FIELDS, AnimateOptions, FigureOptions
from gateway.web.upload import IMAGE_FIELDS, JSON_IMAGE_FIELDS, read_upload

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def app(tmp_path):
    return create_app(Config(storage_url=f"file://{tmp_path}"))


@pytest.fixture
def document(app) -> dict:
    reply = app.test_client().get("/openapi.json")
    assert reply.status_code == 200 and reply.mimetype == "application/json"
    return reply.json


def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)  # raises on anything the 3.1 schema refuses


def test_every_route_of_the_app_and_no_other_is_described(app, document):
    served = {(openapi.openapi_path(rule), method.lower()) for rule, method in openapi.routes(app)}
    described = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert served == described
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert operation["summary"] and operation["responses"], (path, method)


def test_a_route_without_words_fails_the_build(app):
    extra = Blueprint("extra", __name__)
    extra.add_url_rule("/undocumented", view_func=lambda: "", methods=["GET"])
    app.register_blueprint(extra)
    with pytest.raises(KeyError, match="undocumented"):
        openapi.build(app)


def codes_in_the_code() -> dict[str, int]:
    found = {c.code: c.status for c in errors.ApiError.__subclasses__()}
    found |= {c.code: c.status for c in (ImageRejected, *ImageRejected.__subclasses__())}
    return found


def test_every_error_code_is_described_with_its_status(document):
    described: dict[str, int] = {}
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                for code in re.findall(r"`(\w+)`:", response["description"]):
                    described[code] = int(status)
    for code, status in codes_in_the_code().items():
        assert described.get(code) == status, code
    extra = {"not_found", "method_not_allowed", "internal_error"}  # Werkzeug's and the catch-all
    assert set(described) == set(codes_in_the_code()) | extra


def test_an_error_code_without_words_fails_the_build(app):
    teapot = errors._error("Teapot", 418, "teapot")  # a new ApiError, as errors.py makes them
    with pytest.raises(KeyError, match="teapot"):
        openapi.build(app)
    del teapot
    gc.collect()  # gone from ApiError's subclasses again
    openapi.build(app)


def request_properties(document, path: str) -> set[str]:
    body = document["paths"][path]["post"]["requestBody"]["content"]
    return set(body["multipart/form-data"]["schema"]["properties"]) - set(IMAGE_FIELDS)


def test_every_option_is_described_for_its_route(document):
    animate = {f.name for f in dataclasses.fields(AnimateOptions)} | set(MOTION_UPLOAD_FIELDS)
    figure = {f.name for f in dataclasses.fields(FigureOptions)}
    assert request_properties(document, "/animate") == animate
    assert request_properties(document, "/") == animate
    assert request_properties(document, "/annotate") == figure
    for path, names in (("/animate", animate), ("/annotate", figure)):
        query = {p["name"] for p in document["paths"][path]["post"]["parameters"]}
        assert query == names - {"bvh"}


def test_the_page_and_the_readme_use_the_documented_names(document):
    script = (REPO / "gateway" / "static" / "app.js").read_text()
    sent = set(re.findall(r'form\.append\("(\w+)"', script)) - {"image"}
    assert sent <= request_properties(document, "/animate")
    assert sent <= set(openapi.OPTIONS)
    assert set(re.findall(r'post\("(/\w+)"', script)) <= set(document["paths"])
    readme = (REPO / "README.md").read_text()
    api = readme[readme.index("<!-- section: api -->") : readme.index("<!-- /section: api -->")]
    for path in document["paths"]:
        stem = path.split("{")[0]  # `/files/<key>` in the README, `/files/{key}` here
        assert re.search(r"`(GET |POST )?" + re.escape(stem) + r"[`<]", api), path
    for name in request_properties(document, "/animate"):
        assert f"`{name}`" in api, name


def test_the_spec_says_what_the_server_accepts_and_answers(app, document, tmp_path):
    # Every image field and JSON key the body readers take is in the request's schema.
    for path in ("/animate", "/annotate"):
        content = document["paths"][path]["post"]["requestBody"]["content"]
        multipart, as_json = (
            content[t]["schema"] for t in ("multipart/form-data", "application/json")
        )
        assert set(IMAGE_FIELDS) <= set(multipart["properties"])
        assert [r["required"] for r in multipart["anyOf"]] == [[f] for f in IMAGE_FIELDS]
        assert set(JSON_IMAGE_FIELDS) <= set(as_json["properties"])
        assert [r["required"] for r in as_json["anyOf"]] == [[f] for f in JSON_IMAGE_FIELDS]
    json_animate = document["paths"]["/animate"]["post"]["requestBody"]["content"]
    assert "bvh" in json_animate["application/json"]["schema"]["properties"]
    for key in JSON_IMAGE_FIELDS:  # and the reader does take each of them
        body = json.dumps({key: "aGVsbG8=", "bvh": "HIERARCHY"}).encode()
        upload = read_upload(body, "application/json", {}, 1000)
        assert upload.image == b"hello" and upload.fields == {"bvh": "HIERARCHY"}
    # /motions: the schema has every key a row has.
    rows = app.test_client().get("/motions").json["motions"]
    item = document["components"]["schemas"]["Motions"]["properties"]["motions"]["items"]
    assert set(rows[0]) == set(item["properties"])
    # /files answers a Range request with 206, as the spec says.
    storage = app.extensions["gateway"].storage
    storage.put("ab/c/dab.gif", b"GIF89a" + bytes(100), "image/gif")
    part = app.test_client().get("/files/ab/c/dab.gif", headers={"Range": "bytes=0-5"})
    assert part.status_code == 206 and part.data == b"GIF89a"
    assert "206" in document["paths"]["/files/{key}"]["get"]["responses"]


def test_the_readme_names_every_error_code_with_its_status(document):
    readme = (REPO / "README.md").read_text()
    api = readme[readme.index("<!-- section: api -->") : readme.index("<!-- /section: api -->")]
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                for code in re.findall(r"`(\w+)`:", response["description"]):
                    assert re.search(rf"\| {status} \| `{code}` \|", api), (status, code)
