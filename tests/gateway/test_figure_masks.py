"""The figure's mask in the gateway, end to end (real gunicorn, real TorchServe).

With the segmenter served, the mask is the one `animation.segment.choose` picks of the
segmenter's and OpenCV's; without it (AnimatedDrawings' model store) OpenCV's alone; with a
segmenter that fails, OpenCV's, logged and counted. What still looks wrong reaches the
client in `X-Figure-Warnings`, the log and /metrics.
"""

from __future__ import annotations

import base64
import io
import json
import re

import cv2
import numpy as np
import pytest
import requests
import yaml
from PIL import Image

from animation.figure_mask import with_ad_margin
from animation.mask_warnings import WARNINGS
from animation.skeleton import JOINT_INDEX, Skeleton
from gateway.config import DEFAULT_MODEL_TABLE
from tests.support.drawings import drawing as plain_drawing
from tests.support.drawings import model_free_form, post_drawing
from tests.support.gateway_answers import model_calls
from tests.support.images import encode
from tests.support.real_photos import photographed, real_dev
from tests.support.torchserve import make_torchserve
from torchserve.training.evaluate import LIMB_JOINTS, limbs_missed
from torchserve.training.synth import HELD_OUT_STYLES, generate

pytestmark = pytest.mark.integration
SEGMENTER = "drawn_humanoid_segmenter"
LIMB_ENDS = [9, 10, 15, 16]  # wrists and ankles (COCO)


def annotate(url: str, sample) -> dict:
    """/annotate with the drawing's true box and joints: only the mask is found."""
    reply = requests.post(
        f"{url}/annotate",
        files={"image": ("drawing.png", encode(sample.image), "image/png")},
        data={"bbox": json.dumps(sample.bbox.tolist()),
              "keypoints": json.dumps(sample.keypoints[:, :2].tolist())},
        timeout=60,
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    return reply.json()


def page_mask(answer: dict) -> np.ndarray:
    """The answered mask pasted into the upload's pixels, (H, W) bool, given the margin
    round the ink that the truths here have (AnimatedDrawings' and the generator's masks)."""
    size = answer["image"]
    page = np.zeros((size["height"], size["width"]), bool)
    left, top, right, bottom = answer["mask"]["box"]
    png = Image.open(io.BytesIO(base64.b64decode(answer["mask"]["png"])))
    page[top:bottom, left:right] = np.asarray(png.convert("L")) > 127
    return with_ad_margin(page)


def counters(url: str, name: str) -> dict[str, float]:
    """label value -> count of a one-label counter in the gateway's /metrics."""
    text = requests.get(f"{url}/metrics", timeout=5).text
    return {label: float(value)
            for label, value in re.findall(rf'^{name}{{\w+="(\w+)"}} (\S+)$', text, re.M)}  # fmt: skip


def samples(seeds: range, **styles: str) -> list:
    return [generate(seed, exclude=HELD_OUT_STYLES, only=styles) for seed in seeds]


def test_stick_figures_in_thin_strokes_keep_their_limbs(gateway, torchserve_server):
    # Coloured-pencil stick figures: the OpenCV path before issue 9 (a23a430) kept 0.44 of
    # these hands and feet, today's OpenCV path alone 0.72, the gateway with the segmenter
    # all of them (measured on these eight).
    calls = model_calls(torchserve_server).get(SEGMENTER, 0)
    before = counters(gateway.url, "gateway_figure_masks_total")
    inside = []
    for sample in samples(range(7_000_000, 7_000_008), body="stick",
                          medium="coloured_pencil", props="none"):  # fmt: skip
        mask = page_mask(annotate(gateway.url, sample))
        ends = np.round(sample.keypoints[LIMB_ENDS, :2]).astype(int)
        inside.extend(mask[ends[:, 1], ends[:, 0]])
    assert np.mean(inside) >= 0.9, inside
    assert model_calls(torchserve_server)[SEGMENTER] == calls + 8
    after = counters(gateway.url, "gateway_figure_masks_total")
    made = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert sum(made.values()) == 8 and made.get("given", 0) == 0, made
    assert made.get("learned", 0) >= 1, made  # the segmenter's mask won where OpenCV lost limbs


def test_a_faint_figure_on_grey_paper_gets_no_paper_blob(gateway):
    # Coloured pencil on grey paper photographed at an angle (uneven light, often a shadow):
    # the share of the mask 7 px or more away from the figure. Measured on these eight: the
    # gateway 0.055 mean, 0.18 at most; the OpenCV path before issue 9 0.098, 0.68 at most
    # (a blob of paper).
    away = []
    for sample in samples(range(7_100_000, 7_100_008), paper="grey",
                          medium="coloured_pencil", photo="angled", props="none"):  # fmt: skip
        mask = page_mask(annotate(gateway.url, sample))
        near = cv2.dilate(sample.mask.astype(np.uint8), np.ones((15, 15), np.uint8)) > 0
        away.append((mask & ~near).sum() / max(mask.sum(), 1))
    assert np.mean(away) <= 0.12 and max(away) <= 0.3, away


def test_an_implausible_mask_is_named_in_a_header_and_counted(gateway):
    d = plain_drawing(4)
    plain = post_drawing(requests, gateway.url, d, motions="dab", max_frames=4, size=96)
    assert plain.status_code == 200, plain.text
    assert "X-Figure-Warnings" not in plain.headers

    before = counters(gateway.url, "gateway_figure_warnings_total")
    # The joints a person dragged far off the figure, onto blank paper to its right.
    x1, _, x2, _ = d.bbox
    off = np.asarray(d.keypoints) + (1.2 * (x2 - x1), 0)
    moved = requests.post(
        f"{gateway.url}/animate",
        files={"image": ("drawing.png", d.png, "image/png")},
        data=model_free_form(d, motions="dab", max_frames=4, size=96)
        | {"keypoints": json.dumps(off.tolist())},
        timeout=60,
    )
    assert moved.status_code == 200, moved.text
    assert set(moved.json()) == {"dab"}  # the body stays keyed by motion
    codes = moved.headers["X-Figure-Warnings"].split(",")
    assert codes and set(codes) <= set(WARNINGS), (
        codes
    )  # e.g. mostly_paper: a mask reached for them
    after = counters(gateway.url, "gateway_figure_warnings_total")
    assert all(after[code] == before.get(code, 0) + 1 for code in codes), (before, after)
    assert '"figure mask looks implausible' in gateway.log_text()


def test_a_joint_rigging_moved_onto_the_figure_is_named_in_the_header_and_counted(gateway):
    d = plain_drawing(6)
    # The service's own outline of the drawing, then the same with the left wrist (COCO 9)
    # put on the paper in the box's corner: the mask is used as given, so the rig moves the
    # wrist onto the figure, and says so.
    outline = requests.post(f"{gateway.url}/annotate", timeout=60,
                            files={"image": ("drawing.png", d.png, "image/png")},
                            data=model_free_form(d)).json()["mask"]  # fmt: skip
    keypoints = np.asarray(d.keypoints, float)
    keypoints[9] = (outline["box"][0] + 1, outline["box"][1] + 1)
    before = counters(gateway.url, "gateway_figure_warnings_total")
    reply = requests.post(
        f"{gateway.url}/animate",
        files={"image": ("drawing.png", d.png, "image/png")},
        data=model_free_form(d, motions="dab", max_frames=4, size=96)
        | {"keypoints": json.dumps(keypoints.tolist()), "mask": json.dumps(outline)},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["X-Figure-Warnings"].split(",") == ["joint_moved"]
    after = counters(gateway.url, "gateway_figure_warnings_total")
    assert after["joint_moved"] == before.get("joint_moved", 0) + 1
    assert "figure's joints changed to rig it: joint_moved" in gateway.log_text()


def test_a_figure_the_detector_boxed_in_part_is_cropped_again_around_all_of_it(
    gateway, torchserve_server
):
    # real-dev's pig, photographed: the detector (it knows people) boxes its head and
    # front legs, x 320-457 of 600; the body's outline runs off that crop. Cut there, the
    # body was left out and the rig drew long wedges. The whole pig runs from its tail's
    # tip (x 67) to its snout (x 473).
    photo = real_dev("char6", "image.png")
    before = model_calls(torchserve_server)
    grown = crops_grown(gateway.url)
    reply = requests.post(f"{gateway.url}/annotate", timeout=60,
                          files={"image": ("pig.png", photo.read_bytes(), "image/png")})  # fmt: skip
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    left, top, right, bottom = answer["bbox"]
    assert left <= 75 and right >= 465, answer["bbox"]
    mask = page_mask(answer)
    assert mask[:, :300].sum() > 0.4 * mask.sum()  # the body, left of the detector's box
    after = model_calls(torchserve_server)
    calls = {m: after[m] - before.get(m, 0) for m in after}
    assert calls["drawn_humanoid_detector"] == 1, calls
    assert calls["drawn_humanoid_pose_estimator"] == calls[SEGMENTER] == 2, calls  # two crops
    assert crops_grown(gateway.url) == grown + 1
    assert "cropped again" in gateway.log_text()


@pytest.mark.parametrize(("name", "seed"), [
    *((f"char{i}", seed) for i in range(1, 6) for seed in range(4)), ("char6", 3),
])  # fmt: skip
def test_real_drawings_photographed_again_keep_their_outline(gateway, name, seed):
    # Material nobody on the team made: real-dev's crops on a sheet of their own paper,
    # shot at an angle over a table by the generator's camera (light, shadows, blur, JPEG;
    # `torchserve.training.rephoto`). Through the whole gateway, IoU against the annotated mask
    # (the served mask given AnimatedDrawings' margin): 0.784-0.961 for char1-5 (seeds 0-3,
    # mean 0.891). When the served mask carried a margin of its own: 0.830-0.980, mean
    # 0.923; the stick figure char4 lost most (a pixel of edge is a quarter of its stroke,
    # and the photo's blur widens the ink it ends on). The pig's photo of seed 3: 0.939,
    # its body taken in by the second crop (0.38 without it; without setting the
    # shadow's and the table's broad patches aside, the pig reached the photo's border
    # and was not taken in). Its photos of seeds 0-2 are refused, or keep the first crop.
    png, truth = photographed(real_dev(name), seed)
    reply = requests.post(f"{gateway.url}/annotate", timeout=60,
                          files={"image": ("photo.png", png, "image/png")})  # fmt: skip
    assert reply.status_code == 200, reply.text
    mask = page_mask(reply.json())
    assert (mask & truth).sum() / (mask | truth).sum() >= 0.75


def test_a_drawing_cropped_tight_is_seen_with_paper_beyond_its_edges(gateway):
    # real-dev's char1 as AnimatedDrawings cut it: its hands and feet a few pixels from the
    # upload's edges, where the gateway's crop margin would lie. The models see that margin
    # as paper; before, they saw the figure against the edge (as they never did in
    # training): the pose model put both elbows on the body (0.2 of the figure off). Every
    # limb joint now lies near its annotation: within PCK@0.1 but one (the pose network
    # trained on things for bodies, e80207b, puts char1's right elbow 0.135 off; on real-dev
    # it misses as many limb joints as the one before, which missed char4's right elbow),
    # and none as far as that.
    folder = real_dev("char1")
    texture = (folder / "texture.png").read_bytes()
    reply = requests.post(f"{gateway.url}/annotate", timeout=60,
                          files={"image": ("char1.png", texture, "image/png")})  # fmt: skip
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    joints = {j["name"]: np.array(j["loc"], float)
              for j in yaml.safe_load((folder / "char_cfg.yaml").read_text())["skeleton"]}  # fmt: skip
    truth = np.asarray(Image.open(folder / "mask.png").convert("L")) > 127
    rows, cols = np.nonzero(truth)
    box = np.array([cols.min(), rows.min(), cols.max() + 1, rows.max() + 1], float)
    skeleton = Skeleton.from_coco(np.asarray(answer["keypoints"], float)).rest
    assert len(limbs_missed(skeleton, joints, box)) <= 1
    side = max(box[2] - box[0], box[3] - box[1])
    off = [np.hypot(*(skeleton[JOINT_INDEX[name]] - joints[name])) / side for name in LIMB_JOINTS]
    assert max(off) < 0.15, dict(zip(LIMB_JOINTS, np.round(off, 3), strict=True))
    mask = page_mask(answer)
    assert (mask & truth).sum() / (mask | truth).sum() >= 0.95


def crops_grown(url: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=5).text
    return float(re.search(r"^gateway_crops_grown_total (\S+)$", text, re.M).group(1))


@pytest.fixture(scope="module")
def torchserve_without_segmenter(tmp_path_factory):
    """A model store like AnimatedDrawings': the detector and the pose model only."""
    server = make_torchserve(
        tmp_path_factory.mktemp("ts-two-models"),
        names=("drawn_humanoid_detector", "drawn_humanoid_pose_estimator"),
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_without_the_segmenter_the_opencv_path_makes_every_mask(
    torchserve_without_segmenter, gateway_factory, tmp_path
):
    server = torchserve_without_segmenter
    gateway = gateway_factory(
        {"TORCHSERVE_URL": server.inference_url,
         "TORCHSERVE_MANAGEMENT_URL": server.management_url,
         "STORAGE_URL": f"file://{tmp_path}"},
        ready=True,
    )  # fmt: skip
    assert requests.get(f"{gateway.url}/ready", timeout=5).json()["ready"] is True
    sample = samples(range(7_200_000, 7_200_001), props="none", background="paper")[0]
    answer = annotate(gateway.url, sample)
    mask = page_mask(answer)
    assert (mask & sample.mask).sum() / (mask | sample.mask).sum() > 0.5
    photo = encode(sample.image, "JPEG", quality=90)
    reply = requests.post(f"{gateway.url}/animate?motions=dab&max_frames=4&size=96",
                          data=photo, headers={"Content-Type": "image/jpeg"}, timeout=60)  # fmt: skip
    assert reply.status_code == 200, reply.text
    assert counters(gateway.url, "gateway_figure_masks_total") == {"opencv": 2.0}
    assert counters(gateway.url, "gateway_segmenter_fallbacks_total") == {}
    assert "segmenter failed" not in gateway.log_text()


def test_a_failing_segmenter_falls_back_to_opencv(gateway_factory, model_env, tmp_path):
    # Served (its management API says READY) but its inference port refuses: each request
    # goes on with OpenCV's mask, logged and counted, and answers 200.
    table = yaml.safe_load(DEFAULT_MODEL_TABLE.read_text())
    table["segmenter"]["url"] = "http://127.0.0.1:9"  # nothing listens there
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(table))
    gateway = gateway_factory(
        {**model_env, "MODEL_TABLE": str(tmp_path / "models.yaml"),
         "STORAGE_URL": f"file://{tmp_path / 'gifs'}"},
        ready=True,
    )  # fmt: skip
    answer = annotate(gateway.url, samples(range(7_300_000, 7_300_001), props="none")[0])
    assert answer["mask"]["png"]
    assert counters(gateway.url, "gateway_figure_masks_total") == {"opencv": 1.0}
    fallbacks = counters(gateway.url, "gateway_segmenter_fallbacks_total")
    assert fallbacks == {"model_unavailable": 1.0}, fallbacks
    line = next(json.loads(line) for line in gateway.log_text().splitlines()
                if "segmenter failed" in line)  # fmt: skip
    assert line["reason"] == "model_unavailable" and line.get("request_id")
