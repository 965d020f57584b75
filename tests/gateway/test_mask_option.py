"""The `mask` option: read from JSON or form text, refused clearly when malformed."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from gateway.errors import BadRequest
from gateway.web.options import parse_mask
from gateway.web.requests import parse_animate_request, parse_annotate_request
from gateway.web.upload import Upload


def png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.fromarray(np.full((height, width), 255, np.uint8)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_the_mask_is_read_from_an_object_a_json_text_or_a_data_url():
    given = {"box": [3, 4, 13, 9], "png": png(10, 5)}
    for value in (
        given,
        json.dumps(given),
        {**given, "png": "data:image/png;base64," + given["png"]},
    ):
        mask = parse_mask(value)
        assert mask.box == (3, 4, 13, 9)
        assert Image.open(io.BytesIO(mask.png)).size == (10, 5)


def test_the_mask_goes_into_the_storage_key_fields():
    upload = Upload(b"img", {"mask": json.dumps({"box": [0, 0, 2, 2], "png": png(2, 2)})})
    job = parse_animate_request(upload, {}, ["dab"], ("dab",))
    fields = job.options.render_fields()
    assert fields["mask"]["box"] == [0, 0, 2, 2] and len(fields["mask"]["sha256"]) == 64
    other = Upload(b"img", {"mask": json.dumps({"box": [1, 0, 3, 2], "png": png(2, 2)})})
    assert parse_animate_request(other, {}, ["dab"], ("dab",)).options.render_fields() != fields
    assert job.options.figure.mask == job.options.mask


def test_annotate_takes_the_figure_options_only():
    keypoints = [[i, i] for i in range(17)]
    job = parse_annotate_request(Upload(b"img", {"keypoints": json.dumps(keypoints)}),
                                 {"bbox": "[1, 2, 30, 40]", "motions": "not-a-motion"})  # fmt: skip
    assert job.figure.bbox == (1, 2, 30, 40) and len(job.figure.keypoints) == 17
    assert job.figure.mask is None


@pytest.mark.parametrize(("value", "words"), [
    ("not json", "JSON object"),
    ({"box": [0, 0, 2, 2]}, "'box' and 'png'"),
    ({"box": [0, 0, 2.5, 2], "png": png(2, 2)}, "whole pixels"),
    ({"box": [2, 0, 2, 2], "png": png(2, 2)}, "left < right"),
    ({"box": [0, 0, 2, 2], "png": 5}, "base64 string"),
    ({"box": [0, 0, 2, 2], "png": "%%%"}, "not a base64 PNG"),
    ({"box": [0, 0, 2, 2], "png": base64.b64encode(b"GIF89a....").decode()}, "not a base64 PNG"),
    ({"box": [0, 0, 3, 2], "png": png(2, 2)}, "its box"),
])  # fmt: skip
def test_a_malformed_mask_is_a_bad_request(value, words):
    with pytest.raises(BadRequest, match=words):
        parse_mask(value)
