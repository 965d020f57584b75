import cv2
import numpy as np

from animation.segment import GAP_FRACTION, fill_holes, odd_size, segment_figure
from gateway.preprocess import crop_box
from tests.gateway.images import drawing


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max(1, (a | b).sum()))


def _crop(sample):
    left, top, right, bottom = crop_box(sample.bbox, sample.image.shape[1::-1])
    window = (slice(top, bottom), slice(left, right))
    keypoints = sample.keypoints[:, :2] - (left, top)
    return np.ascontiguousarray(sample.image[window]), sample.silhouette[window], keypoints


def _filled(label: np.ndarray) -> np.ndarray:
    """The label (the figure's ink) as a mask should be: outline gaps closed, inside filled."""
    k = odd_size(min(label.shape) * GAP_FRACTION)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    return fill_holes(cv2.morphologyEx(label.astype(np.uint8), cv2.MORPH_CLOSE, kernel) > 0)


def test_mask_hugs_the_drawn_figure():
    ious = []
    for seed in range(10):
        crop, label, keypoints = _crop(drawing(seed))
        ious.append(_iou(segment_figure(crop, keypoints), _filled(label)))
    assert np.median(ious) > 0.9, ious
    assert min(ious) > 0.75, ious


def test_enclosed_regions_are_filled():
    page = np.full((120, 120, 3), 250, np.uint8)
    ring = np.zeros((120, 120), bool)
    yy, xx = np.mgrid[:120, :120]
    ring[(np.hypot(yy - 60, xx - 60) < 40) & (np.hypot(yy - 60, xx - 60) > 35)] = True
    page[ring] = 20
    mask = segment_figure(page)
    assert mask[60, 60]  # the inside of a drawn head belongs to the figure
    assert not mask[5, 5] and not mask[60, 110]


def test_the_component_holding_the_joints_wins_over_a_bigger_one():
    page = np.full((200, 300, 3), 250, np.uint8)
    page[20:180, 20:140] = 20  # a big dark blob (a sun, a house)
    page[60:140, 200:220] = 20  # the thin figure
    joints = np.array([[210, 70], [210, 100], [210, 130]])
    assert segment_figure(page)[100, 60]  # without joints: the largest
    with_joints = segment_figure(page, joints)
    assert with_joints[100, 210] and not with_joints[100, 60]


def test_blank_page_gives_an_empty_mask():
    assert not segment_figure(np.full((100, 80, 3), 240, np.uint8)).any()
