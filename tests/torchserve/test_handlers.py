"""The TorchServe handlers called in-process, as a worker calls them, with TorchServe's own
Context; decoding of every kind of body the handlers may receive."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from ts.context import Context, RequestProcessor

from torchserve.build_archives import ARCHIVES
from torchserve.handlers.base import pick_device
from torchserve.handlers.detector_handler import DetectorHandler
from torchserve.handlers.images import RequestError, decode_image, request_body
from torchserve.handlers.pose_handler import PoseHandler
from torchserve.training.synth import generate

WEIGHTS = Path(__file__).resolve().parents[2] / "torchserve" / "weights"


def encode(image: np.ndarray | Image.Image, fmt: str, **params) -> bytes:
    out = io.BytesIO()
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    image.save(out, format=fmt, **params)
    return out.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares `width` x `height` pixels but holds almost no data (a pixel bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16))


def rejected(body: bytes, **kwargs) -> RequestError:
    with pytest.raises(RequestError) as caught:
        decode_image(body, **kwargs)
    return caught.value


# --- decoding -------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
def test_decodes_each_accepted_format_to_rgb(fmt):
    image = np.zeros((30, 40, 3), np.uint8)
    image[:, 20:] = (200, 40, 10)
    decoded = decode_image(encode(image, fmt, quality=95) if fmt != "PNG" else encode(image, fmt))
    assert decoded.shape == (30, 40, 3) and decoded.dtype == np.uint8
    assert np.abs(decoded[15, 30].astype(int) - (200, 40, 10)).max() < 12
    assert decoded[15, 5].max() < 12


def test_transparency_becomes_white_paper_and_grey_becomes_rgb():
    rgba = np.zeros((8, 8, 4), np.uint8)  # fully transparent black
    rgba[:4, :, 3] = 255  # top half opaque black
    decoded = decode_image(encode(rgba, "PNG"))
    assert (decoded[:4] == 0).all() and (decoded[4:] == 255).all()
    grey = decode_image(encode(Image.new("L", (5, 4), 77), "PNG"))
    assert grey.shape == (4, 5, 3) and (grey == 77).all()


def test_sixteen_bit_grey_is_scaled_not_clipped():
    wide = Image.fromarray(np.full((4, 4), 32768, np.uint16))
    decoded = decode_image(encode(wide, "PNG"))
    assert 120 <= decoded[0, 0, 0] <= 135  # half of full scale, not 255


def test_exif_orientation_is_applied():
    image = Image.new("RGB", (40, 20), "white")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    decoded = decode_image(encode(image, "JPEG", exif=exif.tobytes()))
    assert decoded.shape == (40, 20, 3)


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"", 400, "empty"),
        (b"hello, this is not an image", 400, "not a PNG, JPEG or WebP"),
        (encode(Image.new("RGB", (9, 9)), "GIF"), 415, "GIF"),
        (encode(np.zeros((64, 64, 3), np.uint8), "PNG")[:60], 400, "truncated"),
        (png_header_only(30000, 30000), 413, "more than 40000000 pixels"),
        (png_header_only(8000, 6000), 413, "8000x6000"),
        (encode(np.zeros((2, 900, 3), np.uint8), "PNG"), 400, "900x2"),
    ],
    ids=["empty", "text", "gif", "truncated", "pixel-bomb", "48-megapixels", "a-line"],
)
def test_bad_bodies_get_a_status_and_a_message(body, status, words):
    error = rejected(body)
    assert error.status == status and words in error.message
    assert error.as_response() == {"code": status, "type": error.kind, "message": error.message}


def test_pixel_limit_is_configurable():
    body = encode(np.zeros((100, 100, 3), np.uint8), "PNG")
    assert rejected(body, max_pixels=5000).status == 413
    assert decode_image(body, max_pixels=10000).shape == (100, 100, 3)


def test_request_body_takes_multipart_data_or_raw_body():
    assert request_body({"data": bytearray(b"abc")}) == b"abc"
    assert request_body({"body": b"xyz"}) == b"xyz"
    assert request_body({"data": b"first", "body": b"second"}) == b"first"
    with pytest.raises(RequestError) as json_body:
        request_body({"body": {"file": "aGVsbG8="}})  # TorchServe parsed a JSON body
    assert json_body.value.status == 415
    with pytest.raises(RequestError) as nothing:
        request_body({"image": b"wrong field"})
    assert nothing.value.status == 400 and "'data'" in nothing.value.message


def test_cpu_workers_use_one_thread():
    previous = torch.get_num_threads()
    try:
        assert pick_device(None) == torch.device("cpu")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(previous)


# --- handlers, called as a TorchServe worker calls them -------------------------------
def worker_context(
    model_name: str, weights: Path, tmp_path: Path, beside: tuple[str, ...] = ()
) -> Context:
    """A worker's context for the archive of `weights`, with the weights files `beside` it."""
    model_dir = tmp_path / model_name
    model_dir.mkdir()
    for path in (weights, *(weights.with_name(name) for name in beside)):
        (model_dir / path.name).symlink_to(path)
    manifest = {"model": {"modelName": model_name, "serializedFile": weights.name}}
    return Context(model_name, str(model_dir), manifest, 8, None, "0.12.0")


def run_batch(handler, context: Context, bodies: list[dict]) -> tuple[list, list[int]]:
    """One TorchServe batch: the answers and each request's HTTP status."""
    context.request_processor = [RequestProcessor({}) for _ in bodies]
    answers = handler.handle(bodies, context)
    return answers, [context.get_response_status(i)[0] for i in range(len(bodies))]


def loaded(handler_class, model_name: str, weights: Path, tmp_path: Path):
    beside = ARCHIVES[model_name].more_weights
    context = worker_context(model_name, weights, tmp_path, beside)
    handler = handler_class()
    handler.initialize(context)
    return handler, context


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    folder = tmp_path_factory.mktemp("detector")
    return loaded(DetectorHandler, "drawn_humanoid_detector", WEIGHTS / "detector.pt", folder)


@pytest.fixture(scope="module")
def pose(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pose")
    return loaded(PoseHandler, "drawn_humanoid_pose_estimator", WEIGHTS / "pose.pt", folder)


def test_detector_answers_boxes_in_image_pixels_best_first(detector):
    handler, context = detector
    assert handler.model.people is not None  # the person detector, from beside the weights
    sample = generate(101)
    height, width = sample.image.shape[:2]
    answers, statuses = run_batch(handler, context, [{"body": encode(sample.image, "PNG")}])
    assert statuses == [200]
    figures = answers[0]
    assert figures and all(set(f) == {"bbox", "score"} for f in figures)
    scores = [f["score"] for f in figures]
    assert scores == sorted(scores, reverse=True) and 0 <= scores[-1] <= scores[0] <= 1
    for x1, y1, x2, y2 in (f["bbox"] for f in figures):
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height


def test_pose_answers_17_joints_in_crop_pixels(pose):
    handler, context = pose
    sample = generate(102)
    x1, y1, x2, y2 = sample.bbox.astype(int)
    crop = np.ascontiguousarray(sample.image[y1:y2, x1:x2])
    answers, statuses = run_batch(handler, context, [{"data": encode(crop, "JPEG")}])
    assert statuses == [200]
    [figure] = answers[0]
    keypoints = np.array(figure["keypoints"])
    assert keypoints.shape == (17, 3)
    assert (keypoints[:, 0] > -crop.shape[1] * 0.1).all()
    assert (keypoints[:, 0] < crop.shape[1] * 1.1).all()
    assert (keypoints[:, 2] >= 0).all() and (keypoints[:, 2] <= 1).all()


@pytest.mark.parametrize("model", ["detector", "pose"])
def test_a_bad_request_fails_alone_and_batching_changes_no_answer(model, request):
    handler, context = request.getfixturevalue(model)
    images = [generate(seed, size=300).image for seed in (103, 104)]
    bodies = [{"body": encode(images[0], "PNG")}, {"body": b"not an image"}]
    bodies.append({"data": encode(images[1], "WEBP", lossless=True)})
    answers, statuses = run_batch(handler, context, bodies)
    assert statuses == [200, 400, 200]
    assert answers[1]["code"] == 400 and "not a PNG, JPEG or WebP" in answers[1]["message"]
    alone, _ = run_batch(handler, context, [bodies[2]])
    assert alone[0] == answers[2] or np.allclose(flatten(alone[0]), flatten(answers[2]), atol=0.5)


def test_a_batch_of_only_bad_requests_answers_each(detector):
    handler, context = detector
    answers, statuses = run_batch(handler, context, [{"body": b""}, {"body": "text"}])
    assert statuses == [400, 415]
    assert [a["code"] for a in answers] == [400, 415]


def flatten(answer: list[dict]) -> list[float]:
    numbers: list[float] = []
    for item in answer:
        for value in item.values():
            numbers.extend(np.ravel(value).tolist())
    return numbers


def test_an_image_the_model_cannot_take_fails_alone(detector):
    handler, context = detector

    class Fragile(DetectorHandler):
        def prepare(self, image):
            if image.shape[0] == 13:
                raise RuntimeError("cannot prepare")
            return super().prepare(image)

    fragile = Fragile()
    fragile.model, fragile.device = handler.model, handler.device
    good = encode(generate(105, size=256).image, "PNG")
    odd = encode(np.zeros((13, 40, 3), np.uint8), "PNG")
    answers, statuses = run_batch(fragile, context, [{"body": good}, {"body": odd}])
    assert statuses == [200, 500]
    assert answers[1]["message"] == "could not prepare image" and isinstance(answers[0], list)


@pytest.mark.parametrize("model", ["detector", "pose"])
def test_the_thinnest_accepted_image_still_fits_the_model(model, request):
    handler, context = request.getfixturevalue(model)
    thinnest = np.full((4, 200, 3), 255, np.uint8)  # 50:1, the limit
    answers, statuses = run_batch(handler, context, [{"body": encode(thinnest, "PNG")}])
    assert statuses == [200] and isinstance(answers[0], list)
