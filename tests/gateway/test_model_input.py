"""What the gateway sends the models: the upload at model scale with its JPEG (the render
task `decode`), and the crop (`animation.figure.crop_for`, a box with nothing in it the
client's 400).

The decoding policy itself is tested in tests/animation/test_images.py."""

import io

import numpy as np
import pytest
from PIL import Image

from animation.figure import BadBox, crop_for
from gateway.errors import InvalidImage, from_library
from gateway.rendering.tasks import DecodeJob, decode
from tests.support.images import drawing, encode

LIMIT = 40_000_000


def test_scales_to_the_model_input_size_with_its_jpeg():
    page = np.full((1000, 2000, 3), 255, np.uint8)
    image = decode(DecodeJob(encode(page), LIMIT, 1000))
    assert image.rgb.shape == (500, 1000, 3) and image.rgb.dtype == np.uint8
    assert image.scale == pytest.approx(0.5)
    assert Image.open(io.BytesIO(image.jpeg)).size == (1000, 500)


def test_crop_box_adds_a_margin_and_stays_inside():
    assert crop_for((100, 100, 200, 300), (1000, 1000)).box == (90, 80, 210, 320)
    assert crop_for((0, 0, 50, 60), (50, 60)).box == (0, 0, 50, 60)
    with pytest.raises(BadBox) as refused:
        crop_for((500, 500, 502, 502), (1000, 1000))
    assert isinstance(from_library(refused.value), InvalidImage)


def test_synth_drawing_decodes_at_its_size():
    sample = drawing()
    decoded = decode(DecodeJob(encode(sample.image), LIMIT, 1000))
    assert decoded.rgb.shape == sample.image.shape
    assert np.array_equal(decoded.rgb, sample.image)
