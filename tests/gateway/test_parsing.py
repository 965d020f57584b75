import base64
import io
import json

import gevent
import pytest
from flask import Flask

from gateway.errors import (
    BadRequest,
    PayloadTooLarge,
    RequestTimeout,
    UnknownMotion,
    UnsupportedMediaType,
)
from gateway.web.requests import AnimateOptions, parse_animate_request, parse_options
from gateway.web.upload import body_limit, read_body, read_upload, too_large

KNOWN = ["dab", "jumping", "wave_hello", "zombie"]
DEFAULT = ("dab", "jumping")
IMAGE = b"\x89PNG fake image bytes"
LIMIT = 1000
KEYPOINTS = [[float(i), float(2 * i)] for i in range(17)]

app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = body_limit("", LIMIT)


def parse(path: str = "/animate", **kw):
    """As the route does: receive the body, read its form, parse the options."""
    with app.test_request_context(path, method="POST", **kw):
        from flask import request

        limit = body_limit(request.mimetype, LIMIT)
        body = read_body(request, limit, timeout_s=5)
        upload = read_upload(body, request.mimetype, request.mimetype_params, LIMIT)
        return parse_animate_request(upload, request.args.to_dict(), KNOWN, DEFAULT)


def test_raw_body():
    job = parse(data=IMAGE, content_type="image/png")
    assert job.image == IMAGE
    assert job.options == AnimateOptions(motions=DEFAULT, size=256, fps=15)


@pytest.mark.parametrize("field", ["image", "file", "data"])
def test_multipart_fields(field):
    job = parse(data={field: (io.BytesIO(IMAGE), "d.png"), "size": "128", "motions": "zombie"},
                content_type="multipart/form-data")  # fmt: skip
    assert job.image == IMAGE
    assert job.options.size == 128 and job.options.motions == ("zombie",)


def test_other_multipart_files_are_kept_beside_the_image():
    with app.test_request_context(
        "/animate", method="POST", content_type="multipart/form-data",
        data={"image": (io.BytesIO(IMAGE), "d.png"), "bvh": (io.BytesIO(b"HIERARCHY"), "m.bvh")},
    ):  # fmt: skip
        from flask import request

        body = request.get_data()
        upload = read_upload(body, request.mimetype, request.mimetype_params, LIMIT)
    assert upload.image == IMAGE and upload.files == {"bvh": b"HIERARCHY"}


@pytest.mark.parametrize("key", ["file", "image"])
def test_json_base64_as_the_android_app_sends(key):
    body = {key: base64.b64encode(IMAGE).decode(), "motions": ["dab", "zombie"], "fps": 10}
    job = parse(json=body)
    assert job.image == IMAGE
    assert job.options.motions == ("dab", "zombie") and job.options.fps == 10


def test_json_accepts_a_data_url():
    job = parse(json={"file": "data:image/png;base64," + base64.b64encode(IMAGE).decode()})
    assert job.image == IMAGE


def test_options_from_the_query_string_and_the_body_wins():
    job = parse(
        "/animate?size=64&fps=5", json={"file": base64.b64encode(IMAGE).decode(), "size": 96}
    )
    assert (job.options.size, job.options.fps) == (96, 5)


def test_keypoints_and_bbox_as_json_strings_or_lists():
    fields = {"keypoints": json.dumps(KEYPOINTS), "bbox": "10, 20, 110, 220"}
    options = parse_options(fields, KNOWN, DEFAULT)
    assert options.keypoints[3] == (3.0, 6.0) and options.bbox == (10, 20, 110, 220)
    options = parse_options({"keypoints": [p + [0.9] for p in KEYPOINTS], "bbox": [1, 2, 3, 4]},
                            KNOWN, DEFAULT)  # fmt: skip
    assert len(options.keypoints) == 17 and options.bbox == (1, 2, 3, 4)


def test_motions_deduplicated_in_order():
    assert parse_options({"motions": "zombie,dab,zombie"}, KNOWN, DEFAULT).motions == (
        "zombie",
        "dab",
    )
    assert parse_options({"motions": ""}, KNOWN, DEFAULT).motions == DEFAULT


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"motions": "dab,moonwalk"}, UnknownMotion),
        ({"motions": 7}, BadRequest),
        ({"size": "513"}, BadRequest),
        ({"size": "big"}, BadRequest),
        ({"size": 3.5}, BadRequest),
        ({"fps": "0"}, BadRequest),
        ({"fps": 31}, BadRequest),
        ({"fps": True}, BadRequest),
        ({"keypoints": "[[1, 2]]"}, BadRequest),
        ({"keypoints": [[1, "x"]] * 17}, BadRequest),
        ({"keypoints": [[1, float("nan")]] * 17}, BadRequest),
        ({"bbox": "[10, 10, 5, 20]"}, BadRequest),
        ({"bbox": "not a box"}, BadRequest),
        ({"bbox": [1, 2, 3]}, BadRequest),
    ],
)
def test_bad_options(fields, error):
    with pytest.raises(error):
        parse_options(fields, KNOWN, DEFAULT)


def test_unknown_motion_names_the_known_ones():
    with pytest.raises(UnknownMotion, match="known: dab, jumping"):
        parse_options({"motions": ["moonwalk"]}, KNOWN, DEFAULT)


@pytest.mark.parametrize(
    "kw, error",
    [
        ({"data": IMAGE, "content_type": "text/plain"}, UnsupportedMediaType),
        ({"data": IMAGE}, UnsupportedMediaType),
        ({"data": b"{not json", "content_type": "application/json"}, BadRequest),
        ({"json": [1, 2]}, BadRequest),
        ({"json": {"motions": "dab"}}, BadRequest),
        ({"json": {"file": "@@@not base64@@@"}}, BadRequest),
        ({"json": {"file": 12}}, BadRequest),
        ({"data": {"other": (io.BytesIO(IMAGE), "a.png")}, "content_type": "multipart/form-data"},
         BadRequest),
        ({"data": b"", "content_type": "image/png"}, BadRequest),
        ({"data": b"--x\r\nbroken", "content_type": "multipart/form-data"}, BadRequest),
    ],
)  # fmt: skip
def test_bad_bodies(kw, error):
    with pytest.raises(error):
        parse(**kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"data": b"x" * (LIMIT + 1), "content_type": "image/jpeg"},
        {"json": {"file": base64.b64encode(b"x" * (LIMIT + 10)).decode()}},
        {"data": {"image": (io.BytesIO(b"x" * (LIMIT + 1)), "a.png")},
         "content_type": "multipart/form-data"},
        {"data": b"x" * (body_limit("application/json", LIMIT) + 1), "content_type": "application/json"},
    ],
)  # fmt: skip
def test_uploads_over_the_limit(kw):
    with pytest.raises(PayloadTooLarge):
        parse(**kw)


def test_streamed_body_is_cut_off_at_the_limit():
    # No Content-Length (chunked upload): the reader stops as soon as the limit is passed.
    chunks = iter([b"x" * 600, b"x" * 600, b"never read"])

    class Stream:
        def read(self, n=-1):
            return next(chunks, b"")

    environ = {"wsgi.input": Stream(), "wsgi.input_terminated": True}
    with app.test_request_context("/animate", method="POST", content_type="image/png",
                                  environ_overrides=environ):  # fmt: skip
        from flask import request

        with pytest.raises(PayloadTooLarge):
            read_body(request, LIMIT, timeout_s=5)
    assert next(chunks) == b"never read"


def test_a_form_too_large_names_the_image_limit_a_client_sets():
    body = b"x" * (body_limit("application/json", LIMIT) + 1)
    with app.test_request_context("/animate", method="POST", data=body,
                                  content_type="application/json"):  # fmt: skip
        from flask import request

        limit = body_limit(request.mimetype, LIMIT)
        with pytest.raises(PayloadTooLarge) as refused:
            read_body(request, limit, timeout_s=5, max_upload_bytes=LIMIT)
    assert f"larger than {limit} bytes" in refused.value.message
    assert f"an image of at most {LIMIT} bytes" in refused.value.message
    assert str(too_large(LIMIT, LIMIT)) == f"the upload is larger than {LIMIT} bytes"


def test_a_body_that_stops_coming_is_408_saying_what_was_expected():
    class Stalled:  # 104 bytes came, then nothing: the read waits for the rest
        def read(self, n=-1):
            gevent.sleep(10)
            return b""

    environ = {"wsgi.input": Stalled(), "CONTENT_LENGTH": "5000"}
    with app.test_request_context("/animate", method="POST", content_type="image/png",
                                  environ_overrides=environ):  # fmt: skip
        from flask import request

        with pytest.raises(RequestTimeout) as late:
            read_body(request, 10_000, timeout_s=0.05)
    assert late.value.message == "the body did not arrive whole of its 5000 bytes within 0.05 s"
