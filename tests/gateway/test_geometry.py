"""Upload pixels <-> model pixels: boxes and masks come back exactly where they came from."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.rendering.geometry import Scale, pixels_holding


@pytest.mark.parametrize(("upload", "model"), [
    ((1400, 1050), (1000, 750)), ((1201, 1799), (668, 1000)), ((1001, 999), (1000, 998)),
    ((640, 480), (640, 480)),
])  # fmt: skip
def test_a_model_mask_survives_the_trip_through_upload_pixels(upload, model):
    scale = Scale(upload, model)
    rng = np.random.default_rng(0)
    for _ in range(20):
        left, top = rng.integers(0, model[0] // 2), rng.integers(0, model[1] // 2)
        right = rng.integers(left + 1, model[0] + 1)
        bottom = rng.integers(top + 1, model[1] + 1)
        mask = rng.random((bottom - top, right - left)) > 0.5
        upload_box, upload_mask = scale.mask_to_upload(mask, (left, top, right, bottom))
        assert upload_mask.shape == (upload_box[3] - upload_box[1], upload_box[2] - upload_box[0])
        assert 0 <= upload_box[0] and upload_box[2] <= upload[0] and upload_box[3] <= upload[1]
        back_box, back = scale.mask_to_model(upload_mask, upload_box)
        assert back_box == (left, top, right, bottom)
        np.testing.assert_array_equal(back, mask)


def test_an_upload_mask_lands_on_the_model_pixels_under_it():
    scale = Scale((200, 100), (100, 50))  # every model pixel is 2x2 upload pixels
    mask = np.zeros((20, 40), bool)
    mask[:, 20:] = True  # the right half of the box
    box, sampled = scale.mask_to_model(mask, (10, 10, 50, 30))
    assert box == (5, 5, 25, 15)
    assert sampled.shape == (10, 20)
    assert not sampled[:, :10].any() and sampled[:, 10:].all()


def test_points_scale_by_each_axis():
    scale = Scale((1000, 500), (500, 200))
    points = np.array([[100.0, 100.0], [999.0, 499.0]])
    np.testing.assert_allclose(scale.points_to_model(points), [[50, 40], [499.5, 199.6]])
    np.testing.assert_allclose(scale.points_to_upload(scale.points_to_model(points)), points)


@pytest.mark.parametrize(("upload", "model"), [
    ((2000, 1500), (1000, 750)), ((1999, 1333), (999, 666)), ((3024, 4032), (750, 1000)),
    ((1234, 987), (1000, 800)), ((640, 480), (640, 480)),
])  # fmt: skip
def test_joints_sent_back_through_upload_pixels_are_held_by_the_same_pixels(upload, model):
    # A joint on a crop's last pixel (the pose model's joints are kept on the crop) comes
    # back from the upload's pixels a hair past it (x / f * f is not x in floats); the
    # crop it asks for must not grow by a pixel for that.
    scale = Scale(upload, model)
    rng = np.random.default_rng(1)
    ends = np.arange(model[0] - 1, dtype=np.float64)
    for x in np.concatenate([ends, rng.random(200) * (model[0] - 1)]):
        points = np.array([[x, x * model[1] / model[0]], [x / 2, 0.0]])
        back = scale.points_to_model(scale.points_to_upload(points))
        assert pixels_holding(back) == pixels_holding(points)
    assert pixels_holding(np.array([[3.0, 4.0]])) == (3, 4, 4, 5)
    assert pixels_holding(np.array([[2.5, 0.2], [7.0, 9.9]])) == (2, 0, 8, 11)
