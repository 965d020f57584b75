"""The three models served by a real TorchServe built from this repository (config, handlers,
model code, weights), answering generated drawings over HTTP, one at a time and in batches;
and a model store without the segmenter (like AnimatedDrawings') served all the same."""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
import pytest
import requests
from PIL import Image

from animation.crop import crop_box
from tests.support.masks import gateway_crop, mask_of
from tests.support.torchserve import make_torchserve
from torchserve.server import TorchServe
from torchserve.training.metrics import share_inside
from torchserve.training.synth import HELD_OUT_STYLES, generate

pytestmark = pytest.mark.integration

DETECTOR = "drawn_humanoid_detector"
POSE = "drawn_humanoid_pose_estimator"
SEGMENTER = "drawn_humanoid_segmenter"
REPO = Path(__file__).resolve().parents[2]
SEEDS = range(5_000_000, 5_000_016)  # seen by neither training nor the models' evaluation
# Below what the trained models reach on held-out drawings of the training styles (mean IoU
# 0.93, recall at IoU 0.5 0.99, PCK@0.1 0.99), with room for a 16-drawing sample and a
# retraining; a broken decode, letterbox or coordinate mapping fails them by far.
MIN_MEAN_IOU, MIN_RECALL = 0.80, 15 / 16
MIN_PCK = 0.90
# Below what the segmenter reaches on held-out drawings of the training styles (mean mask
# IoU 0.90 on the gateway's crop of the true box in EVAL.md, 0.90 on these 16), with room
# for a 16-drawing sample; a mask off by a few pixels or at the wrong scale fails it by far.
MIN_MASK_IOU = 0.80
LIMB_ENDS = [9, 10, 15, 16]  # wrists and ankles
THIN_SEEDS = range(7_000_000, 7_000_008)
MIN_LIMB_ENDS = 0.80  # of the wrists and ankles inside the mask; measured 0.88 (the gateway, which also finishes it: 1.0)
GREY_SEEDS = range(7_100_000, 7_100_008)
MAX_PAPER_AWAY = 0.10  # share of the mask 7+ px from the figure; measured 0.06 mean, 0.19 at most


def encode(image: np.ndarray, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format=fmt, quality=90)
    return out.getvalue()


def predict(server: TorchServe, model: str, body: bytes, fmt: str = "png") -> requests.Response:
    return requests.post(
        f"{server.inference_url}/predictions/{model}",
        data=body,
        headers={"Content-Type": f"image/{fmt}"},
        timeout=30,
    )


def iou(a, b) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih
    return iw * ih / union


def crop_of(sample, margin: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The figure cut out with a small margin, as the gateway sends it, and the crop's origin."""
    x1, y1, x2, y2 = sample.bbox
    pad = margin * max(x2 - x1, y2 - y1)
    height, width = sample.image.shape[:2]
    left, top = int(max(0, x1 - pad)), int(max(0, y1 - pad))
    right, bottom = int(min(width, x2 + pad)), int(min(height, y2 + pad))
    return np.ascontiguousarray(sample.image[top:bottom, left:right]), np.array([left, top])


@pytest.fixture(scope="module")
def drawings():
    # The styles the models learnt from: the unseen ones are the models' evaluation's business.
    return [generate(seed, exclude=HELD_OUT_STYLES) for seed in SEEDS]


def test_models_serve_with_the_configured_batching(torchserve_server):
    for model in (DETECTOR, POSE, SEGMENTER):
        reply = requests.get(f"{torchserve_server.management_url}/models/{model}", timeout=5)
        [described] = reply.json()
        assert described["batchSize"] == 8 and described["maxBatchDelay"] == 2
        assert [w["status"] for w in described["workers"]] == ["READY"]


def test_detector_boxes_the_drawn_figure(torchserve_server, drawings):
    ious = []
    for sample in drawings:
        reply = predict(torchserve_server, DETECTOR, encode(sample.image))
        assert reply.status_code == 200, reply.text
        figures = reply.json()
        assert figures, f"no figure found in a {sample.style} drawing"
        ious.append(iou(figures[0]["bbox"], sample.bbox))
    assert np.mean(ious) >= MIN_MEAN_IOU, ious
    assert np.mean(np.array(ious) >= 0.5) >= MIN_RECALL, ious


def test_pose_finds_the_joints_in_the_crop(torchserve_server, drawings):
    hits = []
    for sample in drawings:
        crop, origin = crop_of(sample)
        reply = predict(torchserve_server, POSE, encode(crop))
        assert reply.status_code == 200, reply.text
        [figure] = reply.json()
        found = np.array(figure["keypoints"])[:, :2]
        truth = sample.keypoints[:, :2] - origin
        visible = sample.keypoints[:, 2] > 0
        x1, y1, x2, y2 = sample.bbox
        reach = 0.1 * max(x2 - x1, y2 - y1)  # PCK@0.1 of the box's longer side
        hits.extend((np.linalg.norm(found - truth, axis=1) <= reach)[visible])
    assert np.mean(hits) >= MIN_PCK


def test_segmenter_masks_match_the_generators_labels(torchserve_server, drawings):
    ious = []
    for mask, truth, _ in served_masks(torchserve_server, drawings):
        assert mask.shape == truth.shape
        ious.append((mask & truth).sum() / (mask | truth).sum())
    assert np.mean(ious) >= MIN_MASK_IOU, ious


def served_masks(server: TorchServe, samples) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(served mask, true mask, joints in the crop's pixels) of each sample's gateway crop."""
    out = []
    for sample in samples:
        crop, truth = gateway_crop(sample)
        reply = predict(server, SEGMENTER, encode(crop))
        assert reply.status_code == 200, reply.text
        left, top, _, _ = crop_box(tuple(sample.bbox), sample.image.shape[1::-1])
        joints = sample.keypoints[:, :2] - (left, top)
        out.append((mask_of(reply.json()), truth, joints))
    return out


def test_stick_figures_drawn_in_thin_strokes_keep_their_limbs(torchserve_server):
    # Thin coloured-pencil stick figures: the OpenCV path before issue 9 (a23a430) kept 0.44
    # of the hands and feet of these; the segmenter alone 0.88.
    styles = {"body": "stick", "medium": "coloured_pencil", "props": "none"}
    samples = [generate(seed, exclude=HELD_OUT_STYLES, only=styles) for seed in THIN_SEEDS]
    ends = [
        share_inside(mask, joints[LIMB_ENDS])
        for mask, _, joints in served_masks(torchserve_server, samples)
    ]
    assert np.mean(ends) >= MIN_LIMB_ENDS, ends


def test_a_faint_figure_on_grey_paper_gets_no_paper_blob(torchserve_server):
    # Coloured pencil on grey paper photographed at an angle (uneven light, often a
    # shadow): little of the mask may lie away from the figure.
    styles = {"paper": "grey", "medium": "coloured_pencil", "photo": "angled", "props": "none"}
    samples = [generate(seed, exclude=HELD_OUT_STYLES, only=styles) for seed in GREY_SEEDS]
    away = []
    for mask, truth, _ in served_masks(torchserve_server, samples):
        near = cv2.dilate(truth.astype(np.uint8), np.ones((15, 15), np.uint8)) > 0
        away.append((mask & ~near).sum() / max(mask.sum(), 1))
    assert np.mean(away) <= MAX_PAPER_AWAY and max(away) <= 2 * MAX_PAPER_AWAY, away


@pytest.mark.parametrize(("height", "width", "fmt"), [(517, 233, "png"), (90, 640, "jpeg")])
def test_segmenter_answers_a_base64_png_mask_of_the_crops_size(
    torchserve_server, drawings, height, width, fmt
):
    crop = np.array(Image.fromarray(gateway_crop(drawings[2])[0]).resize((width, height)))
    reply = predict(torchserve_server, SEGMENTER, encode(crop, fmt.upper()), fmt)
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert set(answer) == {"mask", "score"} and 0 < answer["score"] <= 1
    assert mask_of(answer).shape == (height, width)


@pytest.mark.parametrize("fmt", ["jpeg", "webp"])
def test_jpeg_and_webp_find_what_png_finds_raw_or_multipart(torchserve_server, drawings, fmt):
    image = drawings[1].image
    [png_box, *_] = predict(torchserve_server, DETECTOR, encode(image)).json()
    body = encode(image, fmt.upper())
    raw = predict(torchserve_server, DETECTOR, body, fmt)
    multipart = requests.post(
        f"{torchserve_server.inference_url}/predictions/{DETECTOR}",
        files={"data": (f"drawing.{fmt}", body, f"image/{fmt}")},
        timeout=30,
    )
    for reply in (raw, multipart):
        assert reply.status_code == 200, reply.text
    assert raw.json() == multipart.json()
    assert iou(raw.json()[0]["bbox"], png_box["bbox"]) >= 0.8  # the same figure, lossy pixels


def test_eight_concurrent_requests_all_succeed(torchserve_server, drawings):
    jobs = [(DETECTOR, encode(s.image)) for s in drawings[:4]]
    jobs += [(POSE, encode(crop_of(s)[0])) for s in drawings[4:8]]
    with ThreadPoolExecutor(len(jobs)) as pool:
        replies = list(pool.map(lambda job: predict(torchserve_server, *job), jobs))
    assert [r.status_code for r in replies] == [200] * 8
    assert all(r.json() for r in replies[:4])
    assert all(len(r.json()[0]["keypoints"]) == 17 for r in replies[4:])


def mixed_batches(log: Path, since: int) -> list[tuple[int, int, int]]:
    """(size, answered, rejected) of the batches logged after byte `since` with both kinds."""
    with open(log, "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    found = re.findall(r"batch of (\d+): (\d+) answered, (\d+) rejected", text)
    return [(int(n), int(a), int(r)) for n, a, r in found if int(a) and int(r)]


def post_together(server: TorchServe, count: int, model: str = DETECTOR):
    """A poster for `count` threads that all send at the same moment, so requests queue up."""
    start = threading.Barrier(count)

    def post(body: bytes) -> requests.Response:
        start.wait()
        return predict(server, model, body)

    return post


@pytest.mark.parametrize("model", [DETECTOR, SEGMENTER])
def test_a_non_image_fails_alone_in_its_batch(torchserve_server, drawings, model):
    log = torchserve_server.log_dir / "model_log.log"
    if model == DETECTOR:
        bodies = [encode(s.image) for s in drawings[:7]]
    else:
        bodies = [encode(gateway_crop(s)[0]) for s in drawings[:7]]
    bodies.insert(3, b"this is a text file, not a drawing")
    seen: list[tuple[int, int, int]] = []
    for _ in range(3):  # a batch forms when requests wait for a busy worker: almost always
        since = log.stat().st_size
        with ThreadPoolExecutor(len(bodies)) as pool:
            replies = list(pool.map(post_together(torchserve_server, len(bodies), model), bodies))
        bad = replies.pop(3)
        assert bad.status_code == 400
        assert bad.json()["message"] == "not a PNG, JPEG or WebP image"
        assert [r.status_code for r in replies] == [200] * 7
        assert all(r.json() for r in replies)
        time.sleep(0.5)  # the worker's log line reaches the file shortly after the reply
        seen = mixed_batches(log, since)
        if seen:
            break
    assert seen, "the bad request never shared a batch with good ones"


def processes_of(state_dir: Path) -> list[str]:
    """Command lines of the processes (Java frontend, workers) that belong to one instance."""
    listing = subprocess.run(["pgrep", "-af", str(state_dir)], capture_output=True, text=True)
    return [line for line in listing.stdout.splitlines() if "pgrep" not in line]


def test_a_killed_server_restarts_on_the_same_ports(torchserve_server, drawings):
    assert processes_of(torchserve_server.state_dir)
    try:
        torchserve_server.kill()
        assert torchserve_server.pid is None
        assert processes_of(torchserve_server.state_dir) == []
        with pytest.raises(requests.ConnectionError):
            predict(torchserve_server, DETECTOR, encode(drawings[0].image))
    finally:
        torchserve_server.ensure_running()
    assert predict(torchserve_server, DETECTOR, encode(drawings[0].image)).status_code == 200


def script_env(instance: TorchServe, **extra: str) -> dict[str, str]:
    """The environment that points torchserve/start.sh and stop.sh at `instance`."""
    return {
        **os.environ,
        "TS_CONFIG": str(instance.config),
        "TS_MODEL_STORE": str(instance.model_store),
        "TS_STATE_DIR": str(instance.state_dir),
        **extra,
    }


def test_start_and_stop_scripts_leave_nothing_running(tmp_path):
    instance = make_torchserve(tmp_path)  # its own archives, config on free ports, state dir
    env = script_env(instance)
    try:
        started = subprocess.run(
            [REPO / "torchserve/start.sh"], env=env, capture_output=True, text=True, timeout=200
        )
        assert started.returncode == 0, started.stderr
        assert "ready" in started.stdout and instance.pid is not None
        assert all(instance.model_ready(model) for model in (DETECTOR, POSE, SEGMENTER))
        assert (instance.temp_dir / ".model_server.pid").is_file()  # its own TEMP, not /tmp
    finally:
        stopped = subprocess.run([REPO / "torchserve/stop.sh"], env=env, timeout=60)
    assert stopped.returncode == 0
    assert instance.pid is None
    assert processes_of(instance.state_dir) == []


def test_a_model_store_without_the_segmenter_is_served_and_ready(tmp_path, drawings):
    # AnimatedDrawings' archives: a detector and a pose estimator, no segmenter.
    instance = make_torchserve(tmp_path, names=(DETECTOR, POSE))
    env = script_env(instance)
    try:
        started = subprocess.run(
            [REPO / "torchserve/start.sh"], env=env, capture_output=True, text=True, timeout=200
        )
        assert started.returncode == 0, started.stderr
        assert instance.served_models == (DETECTOR, POSE)
        assert not instance.model_ready(SEGMENTER)
        status = subprocess.run(
            [REPO / ".venv/bin/python", "-m", "torchserve.server", "status"]
            + ["--config", str(instance.config), "--model-store", str(instance.model_store)]
            + ["--state-dir", str(instance.state_dir)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert status.returncode == 0 and "ready" in status.stdout
        sample = drawings[0]
        assert predict(instance, DETECTOR, encode(sample.image)).json()
        assert predict(instance, SEGMENTER, encode(sample.image)).status_code == 404
    finally:
        subprocess.run([REPO / "torchserve/stop.sh"], env=env, timeout=60)
    assert processes_of(instance.state_dir) == []


def test_start_script_fails_with_the_log_tail_when_torchserve_cannot_start(tmp_path):
    instance = make_torchserve(tmp_path)
    port = int(instance.inference_url.rsplit(":", 1)[1])
    env = script_env(instance, TS_READY_TIMEOUT="60")
    with socket.create_server(("127.0.0.1", port)):  # someone else holds the inference port
        try:
            started = subprocess.run(
                [REPO / "torchserve/start.sh"], env=env, capture_output=True, text=True, timeout=90
            )
        finally:
            subprocess.run([REPO / "torchserve/stop.sh"], env=env, timeout=60)
    assert started.returncode != 0
    assert "exited during start-up" in started.stderr and "ts_log.log" in started.stderr
    assert processes_of(instance.state_dir) == []


def test_handlers_decode_with_the_policy_their_archive_carries(torchserve_server):
    """The archive's copy of animation/images.py is what the workers import, not this
    checkout's (a TorchServe image has no `animation` of its own)."""
    log = (torchserve_server.log_dir / "model_log.log").read_text(errors="replace")
    loaded = re.findall(r"(\w+) loaded from .* image decoding policy from (\S+)", log)
    assert {model for model, _ in loaded} >= {DETECTOR, POSE}
    for _, path in loaded:
        assert path.endswith("/animation/images.py")
        assert Path(path).is_relative_to(torchserve_server.temp_dir), path  # unpacked archive
    # ...and it is the policy: a line 60 times longer than thick is refused in its words.
    line = predict(torchserve_server, DETECTOR, encode(np.full((20, 1200, 3), 255, np.uint8)))
    assert line.status_code == 400
    assert line.json() == {"code": 400, "type": "InvalidImage",
                           "message": "image is 1200x20: sides further apart than 50:1"}  # fmt: skip
