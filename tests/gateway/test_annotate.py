"""POST /annotate and the `mask` option end to end: real gunicorn, real TorchServe, real storage.

/annotate answers what the service sees in the upload's own pixels; fed back to /animate
(bbox, keypoints, mask: no model runs) it gives the very GIFs the detected path gives; a
mask a person changed is used as it is.
"""

from __future__ import annotations

import base64
import io
import json

import cv2
import numpy as np
import pytest
import requests
from PIL import Image, ImageSequence

from tests.support.gateway_answers import assert_error, model_calls, stages
from tests.support.images import drawing, encode
from tests.support.real_photos import real_dev

pytestmark = pytest.mark.integration
MODELS = ("drawn_humanoid_detector", "drawn_humanoid_pose_estimator", "drawn_humanoid_segmenter")


def mask_of(answer: dict) -> np.ndarray:
    png = base64.b64decode(answer["mask"]["png"])
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return np.asarray(image.convert("L"))


def check_answer(answer: dict, sample, size: tuple[int, int]) -> None:
    """The answer's shape, and that it found the drawn figure (in the upload's pixels)."""
    assert answer["image"] == {"width": size[0], "height": size[1]}
    side = max(size)
    assert np.abs(np.subtract(answer["bbox"], sample.bbox)).max() < 0.05 * side
    assert 0 < answer["bbox_score"] <= 1
    points = np.asarray(answer["keypoints"], float)
    assert points.shape == (17, 3) and ((points[:, 2] >= 0) & (points[:, 2] <= 1)).all()
    # The synthetic figure's joints, from the pose model: close to what was drawn.
    error = np.linalg.norm(points[:, :2] - sample.keypoints[:, :2], axis=1)
    assert np.median(error) < 0.05 * side, error
    left, top, right, bottom = answer["mask"]["box"]
    assert 0 <= left < right <= size[0] and 0 <= top < bottom <= size[1]
    mask = mask_of(answer)
    assert mask.shape == (bottom - top, right - left)
    assert set(np.unique(mask)) == {0, 255}
    # The joints lie on the figure.
    inside = [mask[int(y) - top, int(x) - left] for x, y in points[:, :2].astype(int)
              if left <= x < right and top <= y < bottom]  # fmt: skip
    assert np.mean(np.asarray(inside) > 0) > 0.8
    assert set(answer["quality"]) == {"ok", "warnings"}
    assert answer["quality"]["ok"] == (answer["quality"]["warnings"] == [])


def test_annotate_in_each_request_form(gateway, torchserve_server):
    sample = drawing(31)
    png = encode(sample.image)
    size = (sample.image.shape[1], sample.image.shape[0])
    before = model_calls(torchserve_server)
    replies = [
        requests.post(f"{gateway.url}/annotate", files={"image": ("d.png", png, "image/png")},
                      timeout=60),
        requests.post(f"{gateway.url}/annotate", json={"file": base64.b64encode(png).decode()},
                      timeout=60),
        requests.post(f"{gateway.url}/annotate", data=png, headers={"Content-Type": "image/png"},
                      timeout=60),
    ]  # fmt: skip
    after = model_calls(torchserve_server)
    answers = []
    for reply in replies:
        assert reply.status_code == 200, reply.text
        assert stages(reply) == ["receive", "decode", "queue", "detect", "pose", "segmenter",
                                 "segment"]  # fmt: skip
        check_answer(reply.json(), sample, size)
        answers.append(reply.json())
    assert answers[0] == answers[1] == answers[2]  # the same image, whatever its envelope
    for model in MODELS:
        assert after[model] - before.get(model, 0) == 3  # once each per request


def test_annotate_answers_in_the_upright_upload_pixels(gateway):
    """A photo larger than the models' input and stored on its side with an EXIF turn."""
    sample = drawing(32, size=(1500, 1200))  # (height, width): shrunk to 1000 for the models
    exif = Image.Exif()
    exif[0x0112] = 6  # stored turned: the viewer turns it 90 degrees clockwise to show it
    stored = Image.fromarray(sample.image).transpose(Image.Transpose.ROTATE_90)
    jpeg = encode(stored, "JPEG", quality=92, exif=exif.tobytes())
    reply = requests.post(f"{gateway.url}/annotate", data=jpeg,
                          headers={"Content-Type": "image/jpeg"}, timeout=60)  # fmt: skip
    assert reply.status_code == 200, reply.text
    check_answer(reply.json(), sample, (1200, 1500))


def test_given_box_and_joints_skip_the_detector_and_the_pose_model(gateway, torchserve_server):
    sample = drawing(33)
    before = model_calls(torchserve_server)
    reply = requests.post(
        f"{gateway.url}/annotate",
        files={"image": ("d.png", encode(sample.image), "image/png")},
        data={"bbox": json.dumps(sample.bbox.tolist()),
              "keypoints": json.dumps(sample.keypoints[:, :2].tolist())},
        timeout=60,
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    after = model_calls(torchserve_server)
    for model in MODELS[:2]:  # the segmenter still runs: only a given mask skips it
        assert after[model] == before[model]
    assert after[MODELS[2]] == before.get(MODELS[2], 0) + 1
    answer = reply.json()
    assert answer["bbox"] == pytest.approx(sample.bbox.tolist())
    assert answer["bbox_score"] is None
    assert np.asarray(answer["keypoints"])[:, :2] == pytest.approx(sample.keypoints[:, :2])
    assert all(point[2] is None for point in answer["keypoints"])


def frames(url: str) -> list[np.ndarray]:
    reply = requests.get(url, timeout=10)
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "image/gif"
    gif = Image.open(io.BytesIO(reply.content))
    return [np.asarray(f.convert("RGBA")) for f in ImageSequence.Iterator(gif)]


def figure_options(answer: dict) -> dict[str, str]:
    """What the page sends back: the box, the joints (without scores) and the mask."""
    return {
        "bbox": json.dumps(answer["bbox"]),
        "keypoints": json.dumps([p[:2] for p in answer["keypoints"]]),
        "mask": json.dumps(answer["mask"]),
    }


def test_what_annotate_gave_fed_back_gives_the_same_gifs(gateway, torchserve_server):
    sample = drawing(34, size=1400)  # larger than the models' input: scaled both ways
    png = encode(sample.image)
    upload = {"image": ("d.png", png, "image/png")}
    options = {"motions": "dab,zombie", "size": "160", "fps": "8"}
    detected = requests.post(f"{gateway.url}/animate", files=upload, data=options, timeout=60)
    assert detected.status_code == 200, detected.text
    answer = requests.post(f"{gateway.url}/annotate", files=upload, timeout=60).json()

    before = model_calls(torchserve_server)
    given = requests.post(f"{gateway.url}/animate", files=upload,
                          data={**options, **figure_options(answer)}, timeout=60)  # fmt: skip
    assert given.status_code == 200, given.text
    assert model_calls(torchserve_server) == before  # the three given: no model runs
    assert not {"detect", "pose"} & set(stages(given))
    assert given.json() != detected.json()  # stored apart: really rendered again
    for motion in ("dab", "zombie"):
        ours, theirs = frames(given.json()[motion]), frames(detected.json()[motion])
        assert len(ours) == len(theirs) > 5
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)


def test_joints_the_pose_model_put_past_the_crop_are_kept_on_it(gateway):
    # real-dev's pig: the pose model (it knows people) put two ankles below its crop, in
    # the letterbox's padding. Fed back, those joints made the crop grow to hold them, and
    # the GIFs changed. Kept on the crop's edge, the answer fed back gives the same GIFs.
    photo = real_dev("char6", "image.png")
    upload = {"image": ("pig.png", photo.read_bytes(), "image/png")}
    options = {"motions": "dab", "size": "160", "fps": "8"}
    detected = requests.post(f"{gateway.url}/animate", files=upload, data=options, timeout=60)
    assert detected.status_code == 200, detected.text
    answer = requests.post(f"{gateway.url}/annotate", files=upload, timeout=60).json()
    left, top, right, bottom = answer["mask"]["box"]
    points = np.asarray(answer["keypoints"], float)[:, :2]
    assert ((points >= (left, top)) & (points <= (right - 1, bottom - 1))).all(), points
    given = requests.post(f"{gateway.url}/animate", files=upload,
                          data={**options, **figure_options(answer)}, timeout=60)  # fmt: skip
    assert given.status_code == 200, given.text
    ours, theirs = frames(given.json()["dab"]), frames(detected.json()["dab"])
    assert len(ours) == len(theirs) > 5
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_fixed_mask_is_used_as_given(gateway):
    sample = drawing(35)
    upload = {"image": ("d.png", encode(sample.image), "image/png")}
    answer = requests.post(f"{gateway.url}/annotate", files=upload, timeout=60).json()
    mask = mask_of(answer).copy()
    # A person paints a blob beside the figure and rubs out a patch of it: no clean-up may
    # undo either (segmentation would drop a blob touching nothing, fill a hole).
    height, width = mask.shape
    mask[: height // 6, : width // 6] = 255
    ys, xs = np.nonzero(mask[height // 3 : 2 * height // 3])
    mask[height // 3 + ys[len(ys) // 2] - 4 : height // 3 + ys[len(ys) // 2] + 4,
         xs[len(xs) // 2] - 4 : xs[len(xs) // 2] + 4] = 0  # fmt: skip
    fixed = {"box": answer["mask"]["box"],
             "png": base64.b64encode(encode(Image.fromarray(mask))).decode()}  # fmt: skip
    keypoints = json.dumps([p[:2] for p in answer["keypoints"]])
    again = requests.post(f"{gateway.url}/annotate", files=upload,
                          data={"mask": json.dumps(fixed), "keypoints": keypoints}, timeout=60)  # fmt: skip
    assert again.status_code == 200, again.text
    np.testing.assert_array_equal(mask_of(again.json()), mask)

    # Painted along the whole outline, the figure is fatter in every frame of the GIF.
    fatter = cv2.dilate(mask_of(answer), np.ones((9, 9), np.uint8))
    painted = {"box": answer["mask"]["box"],
               "png": base64.b64encode(encode(Image.fromarray(fatter))).decode()}  # fmt: skip
    options = {"motions": "dab", "size": "128", "fps": "5", "keypoints": keypoints}
    replies = [
        requests.post(f"{gateway.url}/animate", files=upload, timeout=60,
                      data={**options, "mask": json.dumps(m)})
        for m in (answer["mask"], painted)
    ]  # fmt: skip
    assert [r.status_code for r in replies] == [200, 200], replies[1].text
    opaque = [sum((f[..., 3] > 0).sum() for f in frames(r.json()["dab"])) for r in replies]
    assert opaque[1] > opaque[0] * 1.1


@pytest.mark.parametrize(
    ("mask", "words"),
    [
        ({"box": [0, 0, 10, 10]}, "'box' and 'png'"),
        ({"box": [0, 0, 10], "png": ""}, "left, top, right, bottom"),
        ({"box": [0, 0, 4, 4], "png": "not base64!"}, "not a base64 PNG"),
        ({"box": [0, 0, 5, 4], "png": base64.b64encode(encode(np.zeros((4, 4), np.uint8))).decode()},
         "its box"),
        ({"box": [500, 500, 900, 900],
          "png": base64.b64encode(encode(np.zeros((400, 400), np.uint8))).decode()},
         "outside the image"),
    ],
)  # fmt: skip
def test_a_bad_mask_is_a_clear_400(gateway, mask, words):
    sample = drawing(31)  # 512 px
    for route in ("/annotate", "/animate"):
        reply = requests.post(
            f"{gateway.url}{route}", files={"image": ("d.png", encode(sample.image), "image/png")},
            data={"mask": json.dumps(mask)}, timeout=60,
        )  # fmt: skip
        assert words in assert_error(reply, 400, "bad_request")["message"]


def test_annotate_errors_as_animate(gateway):
    blank = encode(np.full((400, 300, 3), 255, np.uint8))
    reply = requests.post(f"{gateway.url}/annotate", data=blank,
                          headers={"Content-Type": "image/png"}, timeout=60)  # fmt: skip
    assert_error(reply, 422, "no_character_detected")
    reply = requests.post(f"{gateway.url}/annotate", data=b"not an image",
                          headers={"Content-Type": "image/png"}, timeout=60)  # fmt: skip
    assert_error(reply, 400, "invalid_image")
    reply = requests.post(f"{gateway.url}/annotate", data=b"{}",
                          headers={"Content-Type": "text/plain"}, timeout=60)  # fmt: skip
    assert_error(reply, 415, "unsupported_media_type")
