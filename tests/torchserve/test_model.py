"""The models' geometry, decoders, training determinism and the committed weights."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from tests.support.real_photos import real_dev
from torchserve.model import (
    DetectorNet,
    PoseNet,
    decode_detections,
    decode_keypoints,
    detector_input,
    letterbox,
    load_detector,
    load_pose,
    pose_input,
)
from torchserve.model.detector import box_iou, cell_boxes, load_detectors, one_person
from torchserve.model.pose import heatmap_coordinates
from torchserve.model.transforms import fit_letterbox
from torchserve.training import data
from torchserve.training.loop import TrainConfig, save_checkpoint, train, weights_digest
from torchserve.training.metrics import pck_hits

WEIGHTS = Path(__file__).resolve().parents[2] / "torchserve" / "weights"


def test_networks_output_shapes() -> None:
    with torch.no_grad():
        assert DetectorNet(size=192)(torch.zeros(2, 3, 192, 192)).shape == (2, 5, 24, 24)
        assert PoseNet(size=128)(torch.zeros(2, 3, 128, 128)).shape == (2, 17, 32, 32)


def test_letterbox_round_trip_and_pixel_agreement() -> None:
    image = np.full((300, 500, 3), 255, np.uint8)
    image[200:204, 100:104] = 0  # a dark 4x4 dot centred at (101.5, 201.5)
    square, box = letterbox(image, 200)
    assert square.shape == (200, 200, 3)
    assert box.scale == pytest.approx(0.4)
    points = np.array([[0.0, 0.0, 7.0], [101.5, 201.5, 1.0], [499.0, 299.0, 0.0]])
    np.testing.assert_allclose(box.to_source(box.to_input(points)), points, atol=1e-9)
    # Where the resized image put the dot is where the transform says it is.
    content = square[int(box.pad_y) : int(box.pad_y) + 120, :, 0].astype(np.float64)
    ink = 255 - content
    rows, cols = np.indices(ink.shape)
    centre = [(ink * rows).sum() / ink.sum() + box.pad_y, (ink * cols).sum() / ink.sum()]
    expected = box.to_input(points[1:2])[0]
    assert abs(centre[1] - expected[0]) < 0.3 and abs(centre[0] - expected[1]) < 0.3
    assert (square[:30] == 128).all()  # padding above the wide image


def test_decode_detections_places_boxes_best_first() -> None:
    stride, size = 8, 192
    out = torch.full((5, 24, 24), -10.0)
    out[1:] = 3.0  # every cell: 3 cells to each edge
    out[0, 10, 12] = 4.0  # strong figure at cell (12, 10)
    out[0, 3, 3] = 0.0  # weaker one elsewhere
    box = fit_letterbox(400, 300, size)  # a 400x300 photo
    found = decode_detections(out, box, (400, 300))
    assert [round(f["score"], 3) for f in found] == [round(1 / (1 + np.exp(-4.0)), 3), 0.5]
    cx, cy = (12 + 0.5) * stride - 0.5, (10 + 0.5) * stride - 0.5
    expected = box.to_source(np.array([[cx - 24, cy - 24], [cx + 24, cy + 24]])).reshape(4)
    np.testing.assert_allclose(found[0]["bbox"], expected, atol=0.06)
    # A blank output finds nothing.
    assert decode_detections(torch.full((5, 24, 24), -10.0), box, (400, 300)) == []


def test_detector_targets_decode_back_to_their_box() -> None:
    boxes = np.array([[30.0, 20.0, 150.0, 170.0]], np.float32)
    heat, ltrb, weights = data.detector_targets(boxes, 192, 8)
    j, i = np.unravel_index(np.argmax(heat[0]), heat[0].shape)
    assert heat[0, j, i] == 1.0 and (i, j) == (11, 11)
    out = torch.cat([torch.zeros(1, 24, 24), torch.from_numpy(ltrb[0])])
    per_cell = cell_boxes(out, 8)
    np.testing.assert_allclose(per_cell[:, j, i].numpy(), boxes[0], atol=1e-4)
    assert weights[0, j, i] > 0 and weights[0].sum() < 24 * 24 / 4


def test_two_peoples_targets_each_decode_to_their_own_box() -> None:
    people = np.array(
        [[[30.0, 20.0, 90.0, 170.0], [80.0, 30.0, 150.0, 175.0], [np.nan] * 4]], np.float32
    )
    heat, ltrb, weights = data.detector_targets(people, 192, 8)
    out = torch.cat([torch.zeros(1, 24, 24), torch.from_numpy(ltrb[0])])
    per_cell = cell_boxes(out, 8)
    for box in people[0, :2]:
        i, j = (int(((box[0] + box[2]) / 2 + 0.5) // 8), int(((box[1] + box[3]) / 2 + 0.5) // 8))
        assert heat[0, j, i] == 1.0 and weights[0, j, i] > 0
        np.testing.assert_allclose(per_cell[:, j, i].numpy(), box, atol=1e-4)
    # Two peaks, one per person; the NaN row adds none.
    peaks = heat[0] == torch.nn.functional.max_pool2d(torch.from_numpy(heat), 3, 1, 1)[0].numpy()
    assert int((peaks & (heat[0] > 0.9)).sum()) == 2
    # One person alone gives the targets a (N, 4) box gives.
    alone = data.detector_targets(people[:, :1], 192, 8)
    for a, b in zip(alone, data.detector_targets(people[:, 0], 192, 8), strict=True):
        np.testing.assert_array_equal(a, b)


def test_detector_augmentation_moves_every_persons_box_with_the_page() -> None:
    image = np.full((96, 96, 3), 235, np.uint8)
    people = np.array([[20, 30, 44, 80], [50, 28, 70, 78], [np.nan] * 4], np.float32)
    for x1, y1, x2, y2 in people[:2].astype(int):
        image[y1:y2, x1:x2] = 10
    rng = np.random.default_rng(3)
    for _ in range(20):
        out, moved = data.augment_detector(image, people, rng)
        assert np.isnan(moved[2]).all()
        gray = out.mean(axis=2)
        for box in moved[:2]:
            if np.isnan(box).any():  # the other pushed mostly out of the frame
                continue
            x1, y1, x2, y2 = np.round(box).astype(int)
            inner = gray[y1 + 2 : y2 - 2, x1 + 2 : x2 - 2]
            assert inner.size and np.median(inner) < np.median(gray)
    # A page's negative paints out every person.
    blank = data.erase_figure(image, people)
    assert blank.mean(axis=2).min() > 100


def test_heatmap_peak_decodes_to_its_pixel_with_sub_cell_refinement() -> None:
    logits = torch.full((17, 32, 32), -20.0)
    logits[0, 7, 9] = 10.0
    logits[1, 20, 5] = 10.0
    logits[1, 20, 6] = 10.0  # two equal cells: the joint is between them
    points = heatmap_coordinates(logits, stride=4).numpy()
    assert points[0, :2] == pytest.approx([(9 + 0.5) * 4 - 0.5, (7 + 0.5) * 4 - 0.5])
    assert points[1, :2] == pytest.approx([(5.5 + 0.5) * 4 - 0.5, (20 + 0.5) * 4 - 0.5])
    assert points[0, 2] == pytest.approx(1.0, abs=1e-6)
    # In a crop of 64 x 32 px letterboxed to 128, x and y scale by 2, x shifted by the pad.
    crop_box = fit_letterbox(32, 64, 128)
    keypoints = decode_keypoints(logits, crop_box)
    assert len(keypoints) == 17 and all(len(k) == 3 for k in keypoints)
    assert keypoints[0][:2] == pytest.approx(list(crop_box.to_source(points[0:1, :2])[0]), abs=0.05)


def test_pose_targets_decode_back_to_their_keypoints() -> None:
    rng = np.random.default_rng(1)
    keypoints = np.concatenate([rng.uniform(5, 120, (2, 17, 2)), np.ones((2, 17, 1))], axis=2)
    target, weights = data.pose_targets(keypoints.astype(np.float32), 128, 4)
    assert target.shape == (2, 17, 32, 32) and weights.all()
    decoded = heatmap_coordinates(torch.from_numpy(np.log(target + 1e-12)), 4).numpy()
    np.testing.assert_allclose(decoded[..., :2], keypoints[..., :2], atol=0.6)


def test_augmented_pose_crop_keeps_keypoints_on_the_drawing() -> None:
    # A black dot at each joint on white: after augmentation each joint is still on its dot.
    region = np.full((data.REGION, data.REGION, 3), 255, np.uint8)
    rng = np.random.default_rng(3)
    keypoints = np.concatenate([rng.uniform(40, 136, (17, 2)), np.ones((17, 1))], axis=1)
    for x, y, _ in keypoints:
        cv2.circle(region, (round(x), round(y)), 3, (0, 0, 0), -1)
    box = np.array([30.0, 30.0, 146.0, 146.0])
    for _ in range(5):
        image, moved = data.augment_pose(region, box, keypoints, 128, rng, jitter=0.0)
        gray = image.mean(axis=2)
        inside = [gray[round(y), round(x)] for x, y, _ in moved if 0 <= x < 127 and 0 <= y < 127]
        assert np.median(inside) < np.median(gray) - 40


def _stand_in_records(n: int) -> data.Records:
    """Hand-drawn stick figures (not the synth generator), enough for a few training steps."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(n):
        image = np.full((240, 200, 3), 235, np.uint8)
        mask = np.zeros((240, 200), np.uint8)
        keypoints = np.concatenate([rng.uniform(50, 180, (17, 2)), np.ones((17, 1))], axis=1)
        for a, b in [(5, 7), (7, 9), (6, 8), (8, 10), (11, 13), (13, 15), (12, 14), (14, 16)]:
            pa, pb = keypoints[a, :2].astype(int), keypoints[b, :2].astype(int)
            cv2.line(image, tuple(map(int, pa)), tuple(map(int, pb)), (20, 20, 20), 3)
            cv2.line(mask, tuple(map(int, pa)), tuple(map(int, pb)), 1, 3)
        lo, hi = keypoints[:, :2].min(0) - 3, keypoints[:, :2].max(0) + 3
        rows.append(data.make_record(image, np.concatenate([lo, hi]), keypoints, mask, 96))
    columns = list(zip(*rows, strict=True))
    return data.Records(*(np.stack(c) for c in columns))


@pytest.mark.parametrize(
    "kind,size,window", [("detector", 96, 0), ("pose", 64, 0), ("segmenter", 96, 64)]
)
def test_training_is_deterministic(kind: str, size: int, window: int) -> None:
    records = _stand_in_records(8)
    torch.set_num_threads(1)

    def digest(seed: int) -> str:
        config = TrainConfig(
            kind=kind, steps=3, batch_size=4, seed=seed, size=size, warmup=1, window=window
        )
        return weights_digest(train(config, records))

    first = digest(0)
    assert digest(0) == first
    assert digest(1) != first


def test_training_continues_from_saved_weights(tmp_path: Path) -> None:
    records = _stand_in_records(8)
    torch.set_num_threads(1)
    config = TrainConfig(kind="pose", steps=2, batch_size=4, size=64, warmup=1)
    first = train(config, records)
    saved = tmp_path / "pose.pt"
    save_checkpoint(first, config, str(saved), {})
    # No steps from saved weights leave them as they were; steps move them on.
    resumed = TrainConfig(kind="pose", steps=0, size=64, init=str(saved))
    assert weights_digest(train(resumed, records)) == weights_digest(first)
    more = TrainConfig(kind="pose", steps=2, batch_size=4, size=64, warmup=1, init=str(saved))
    assert weights_digest(train(more, records)) not in (
        weights_digest(first),
        weights_digest(train(config, records)),
    )
    with pytest.raises(ValueError, match="not a"):
        train(TrainConfig(kind="detector", steps=1, size=64, init=str(saved)), records)


def test_the_evaluation_lists_a_continued_run_after_the_one_it_started_from() -> None:
    from torchserve.training.evaluate import training_history

    first = {"trained_steps": 5000, "batch_size": 16, "lr": "0.003", "generator": "aaa",
             "samples": 10000, "seed": 0, "threads": 1}  # fmt: skip
    second = {**first, "trained_steps": 4000, "lr": "0.001", "generator": "bbb", "init_meta": first}
    history = training_history(second)
    assert history.index("5000 steps") < history.index("; then 4000 steps")
    assert "`aaa`" in history and "`bbb`" in history
    assert "then" not in training_history(first)
    # The committed segmenter says what it went through.
    meta = torch.load(WEIGHTS / "segmenter.pt", weights_only=True)["meta"]
    assert training_history(meta).count("steps of") == 1 + ("init_meta" in meta)


def test_committed_weights_find_a_generated_figure_and_its_joints() -> None:
    from torchserve.training.synth import HELD_OUT_STYLES, generate

    torch.set_num_threads(1)
    detector = load_detector(str(WEIGHTS / "detector.pt"))
    pose = load_pose(str(WEIGHTS / "pose.pt"))
    total_hits, total = 0.0, 0
    for seed in (1_000_001, 1_000_002, 1_000_003):
        sample = generate(seed, exclude=HELD_OUT_STYLES)
        x, box = detector_input(sample.image, detector.size)
        with torch.no_grad():
            found = decode_detections(detector(x)[0], box, sample.image.shape[1::-1])
        assert found, f"no figure found in seed {seed}"
        assert box_iou(np.array(found[0]["bbox"]), sample.bbox) > 0.5
        x1, y1, x2, y2 = np.round(sample.bbox).astype(int)
        x, crop_box = pose_input(sample.image[y1:y2, x1:x2], pose.size)
        with torch.no_grad():
            points = np.array(decode_keypoints(pose(x)[0], crop_box)) + [x1, y1, 0]
        hits = pck_hits(points, sample.keypoints, sample.bbox)
        total_hits += np.nansum(hits)
        total += np.isfinite(hits).sum()
    assert total_hits / total > 0.7


def test_a_box_mostly_inside_a_better_one_widens_it_instead_of_being_a_second_figure() -> None:
    stride, size = 8, 192
    out = torch.full((5, 24, 24), -10.0)
    out[1:] = 3.0  # every cell: a 48 px box round its centre
    out[0, 10, 10] = 2.0  # the figure
    out[0, 10, 12] = 1.5  # a tail: its box is 2/3 inside the figure's
    out[0, 10, 15] = 1.8  # someone beside it: 1/6 inside the widened box, a figure of its own
    found = decode_detections(out, fit_letterbox(size, size, size), (size, size))
    centre = (10 + 0.5) * stride - 0.5
    assert len(found) == 2
    np.testing.assert_allclose(
        found[0]["bbox"], [centre - 24, centre - 24, centre + 16 + 24, centre + 24], atol=0.1
    )
    assert found[0]["score"] == pytest.approx(1 / (1 + np.exp(-2.0)), abs=1e-6)
    np.testing.assert_allclose(found[1]["bbox"][0], centre + 40 - 24, atol=0.1)
    # A weak box inside (under half the figure's score) widens nothing; it is listed last.
    out[0, 10, 12] = -1.0
    found = decode_detections(out, fit_letterbox(size, size, size), (size, size))
    np.testing.assert_allclose(found[0]["bbox"][2], centre + 24, atol=0.1)
    assert len(found) == 3 and found[2]["score"] < 0.3


def test_the_figure_box_is_narrowed_to_one_person_only_inside_a_group_or_scene() -> None:
    figures = [
        {"bbox": [100, 100, 500, 500], "score": 0.54},
        {"bbox": [0, 0, 50, 60], "score": 0.2},
    ]

    def answered(bbox, score=0.76):
        return one_person(
            figures, [{"bbox": bbox, "score": score}, {"bbox": [0, 0, 9, 9], "score": 0.1}]
        )

    # A girl among butterflies: her box is answered, with the figure detector's score.
    narrowed = answered([240, 130, 400, 440])
    assert narrowed[0] == {"bbox": [240, 130, 400, 440], "score": 0.54}
    assert narrowed[1:] == figures[1:]
    # The figure without its tail (most of the figure box): the figure box stays.
    assert answered([100, 100, 420, 500]) == figures
    # A title letter above the figures (not inside the box), a person the detector is
    # unsure of, or no person at all: the figure box stays.
    assert answered([120, 20, 220, 140]) == figures
    assert answered([240, 130, 400, 440], score=0.3) == figures
    assert one_person(figures, []) == figures and one_person([], figures) == []


def test_the_detector_bundle_runs_the_person_detector_beside_the_figure_detector(tmp_path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "detector.pt").symlink_to(WEIGHTS / "detector.pt")
    assert load_detectors(str(alone / "detector.pt")).people is None
    both = load_detectors(str(WEIGHTS / "detector.pt"))
    assert both.people is not None
    x = torch.zeros(2, 3, both.size, both.size)
    with torch.no_grad():
        out = both(x)
        assert out.shape == (2, 2, 5, both.size // 8, both.size // 8)
        torch.testing.assert_close(out[:, 0], both.figures(x))
        torch.testing.assert_close(out[:, 1], both.people(x))


def test_loaders_reject_the_wrong_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a"):
        load_pose(str(WEIGHTS / "detector.pt"))
    with pytest.raises(ValueError, match="not a"):
        load_detector(str(WEIGHTS / "pose.pt"))


def test_letterbox_takes_an_image_thinner_than_one_output_pixel() -> None:
    for shape in [(900, 2, 3), (2, 900, 3)]:
        out, _ = letterbox(np.full(shape, 7, np.uint8), 128)
        assert out.shape == (128, 128, 3)
        assert (out == 7).any(), "the image itself must be in the letterbox, not only padding"


def test_a_limb_joint_counts_as_missed_only_beyond_a_tenth_of_the_figure() -> None:
    from animation.skeleton import JOINT_INDEX, JOINTS
    from torchserve.training.evaluate import LIMB_JOINTS, limbs_missed

    rng = np.random.default_rng(0)
    skeleton = rng.uniform(0, 200, (len(JOINTS), 2))
    joints = {name: skeleton[i].copy() for i, name in enumerate(JOINTS)}
    box = np.array([0.0, 0.0, 100.0, 200.0])  # longer side 200: PCK radius 20 px
    assert limbs_missed(skeleton, joints, box) == ()
    near, far = skeleton.copy(), skeleton.copy()
    near[JOINT_INDEX["left_hand"]] += [12, 15]  # 19.2 px away
    far[JOINT_INDEX["left_hand"]] += [12, 17]  # 20.8 px
    far[JOINT_INDEX["neck"]] += [80, 80]  # not a limb joint: the pose's nose, not scored
    assert limbs_missed(near, joints, box) == ()
    assert limbs_missed(far, joints, box) == ("left_hand",)
    assert len(LIMB_JOINTS) == 12 and "neck" not in LIMB_JOINTS


def test_the_pose_is_scored_on_the_real_drawings_annotated_as_people() -> None:
    from torchserve.training import evaluate

    real = real_dev()
    evaluate._load(*(str(WEIGHTS / f"{k}.pt") for k in ("detector", "pose", "segmenter")))
    drawings = evaluate.real_drawings(real)
    scores = evaluate.score_real_pose(drawings)
    people = [d.name for d in drawings if "left_elbow" in d.joints]
    # A bug's six legs and a pig's four are annotated with skeletons of their own.
    assert [s.name for s in scores] == people and "char5" not in people and len(people) >= 4
    assert all(s.box_iou > 0.5 and 0.0 <= s.pck <= 1.0 for s in scores)
    assert np.mean([s.pck for s in scores]) >= 0.75
    table = evaluate.real_pose_report(scores)
    assert table.count("\n| char") == len(scores) and "| mean |" in table
