"""The TorchServe client's reading of replies, against a small local HTTP server."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import numpy as np
import pytest

from gateway.backends.model_table import ModelRole
from gateway.backends.torchserve_client import NO_FIGURE, TorchServeClient
from gateway.errors import (
    ImageTooLarge,
    InvalidImage,
    ModelUnavailable,
    NoCharacterDetected,
    PoseNotFound,
    UnsupportedMediaType,
)
from tests.support.http import JSONHandler
from tests.support.s3 import free_port

KEYPOINTS = [[float(i), float(i), 0.9] for i in range(17)]


class Replies:
    """What the fake server answers per path: (status, JSON body)."""

    def __init__(self) -> None:
        self.by_path: dict[str, tuple[int, object]] = {}
        self.seen: list[tuple[str, str]] = []


@pytest.fixture
def server():
    replies = Replies()

    class Handler(JSONHandler):
        def _answer(self) -> None:
            self.reply_json(*replies.by_path.get(self.path, (404, {"code": 404})))

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers["Content-Length"]))
            replies.seen.append((self.path, self.headers["Content-Type"]))
            self._answer()

        do_GET = _answer  # noqa: N815

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    roles = {
        "detector": ModelRole("detector", "det", url, url, min_score=0.3),
        "pose": ModelRole("pose", "pose", url, url, min_score=0.2),
        "segmenter": ModelRole("segmenter", "seg", url, url, min_score=0.8, optional=True),
    }
    try:
        yield replies, TorchServeClient(roles, timeout_s=2)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_best_box_above_the_minimum_score(server):
    replies, client = server
    replies.by_path["/predictions/det"] = (200, [{"bbox": [1, 2, 30, 40], "score": 0.9},
                                                 {"bbox": [5, 5, 9, 9], "score": 0.5}])  # fmt: skip
    assert client.detect(b"jpeg") == (1, 2, 30, 40)
    assert replies.seen == [("/predictions/det", "image/jpeg")]
    replies.by_path["/predictions/det"] = (200, [{"bbox": [1, 2, 30, 40], "score": 0.1}])
    with pytest.raises(NoCharacterDetected):
        client.detect(b"jpeg")
    replies.by_path["/predictions/det"] = (200, [])
    with pytest.raises(NoCharacterDetected):
        client.detect(b"jpeg")


def test_malformed_or_failed_replies_are_model_unavailable(server):
    replies, client = server
    for reply in [(200, [{"box": [1, 2, 3, 4]}]), (503, {"message": "Prediction failed"}),
                  (404, {"message": "Model not found"})]:  # fmt: skip
        replies.by_path["/predictions/det"] = reply
        with pytest.raises(ModelUnavailable):
            client.detect(b"jpeg")


def test_a_handler_refusing_the_image_is_the_clients_error_and_no_model_error(server):
    replies, client = server
    errors = []
    client._on_error = lambda role, kind: errors.append(kind)
    for status, kind, error in [(400, "InvalidImage", InvalidImage),
                                (413, "ImageTooLarge", ImageTooLarge),
                                (415, "UnsupportedImage", UnsupportedMediaType)]:  # fmt: skip
        reason = f"{kind}: image is 1200x20: sides further apart than 50:1"
        replies.by_path["/predictions/pose"] = (status, {"code": status, "type": kind,
                                                         "message": reason})  # fmt: skip
        with pytest.raises(error) as refused:
            client.pose(b"jpeg")
        assert refused.value.status == status and reason in refused.value.message
    assert errors == []
    # TorchServe's front end refusing *us* (token auth, no such model) is ours to fix: a 503.
    for status, kind in [(400, "InvalidKeyException"), (404, "ModelNotFoundException")]:
        replies.by_path["/predictions/pose"] = (status, {"code": status, "type": kind,
                                                         "message": "no"})  # fmt: skip
        with pytest.raises(ModelUnavailable):
            client.pose(b"jpeg")
    assert errors == ["http_400", "http_404"]


def test_versions_come_from_the_management_api_and_are_kept_while_it_is_down(server, monkeypatch):
    replies, client = server
    replies.by_path["/models/det"] = (200, [{"modelName": "det", "modelVersion": "1.0.aa"}])
    # The pose model was never described: its calls will fail or tell, its key says so.
    assert client.versions(["detector", "pose"]) == {"detector": "1.0.aa", "pose": "unknown"}
    assert client.versions([]) == {}
    replies.by_path["/models/pose"] = (200, [{"modelName": "pose", "modelVersion": "2.0"}])
    assert client.versions(["pose"]) == {"pose": "unknown"}  # read again only after the TTL
    monkeypatch.setattr("gateway.backends.torchserve_client.VERSIONS_TTL_S", 0.0)
    assert client.versions(["pose"]) == {"pose": "2.0"}
    replies.by_path.clear()  # the management API answers 404 for everything now
    assert client.versions(["detector", "pose"]) == {"detector": "1.0.aa", "pose": "2.0"}


def test_pose_keypoints_and_confidence(server):
    replies, client = server
    replies.by_path["/predictions/pose"] = (200, [{"keypoints": KEYPOINTS}])
    keypoints = client.pose(b"jpeg")
    assert keypoints.shape == (17, 3) and np.allclose(keypoints[5], [5, 5, 0.9])
    unsure = [[x, y, 0.05] for x, y, _ in KEYPOINTS]
    for body in ([{"keypoints": unsure}], [{"keypoints": KEYPOINTS[:5]}], [], {"oops": 1}):
        replies.by_path["/predictions/pose"] = (200, body)
        with pytest.raises(PoseNotFound):
            client.pose(b"jpeg")


def test_readiness_needs_a_ready_worker_per_model(server):
    replies, client = server
    replies.by_path["/models/det"] = (200, [{"modelName": "det", "workers": [{"status": "READY"}]}])
    replies.by_path["/models/pose"] = (
        200,
        [{"modelName": "pose", "workers": [{"status": "UNLOADING"}]}],
    )
    assert client.missing_models() == ["pose"]
    replies.by_path["/models/pose"] = (
        200,
        [{"modelName": "pose", "workers": [{"status": "READY"}]}],
    )
    assert client.missing_models() == []


def test_refused_connection_fails_fast_after_one_retry():
    url = f"http://127.0.0.1:{free_port()}"
    roles = {r: ModelRole(r, r, url, url) for r in ("detector", "pose")}
    errors = []
    client = TorchServeClient(roles, timeout_s=5, on_error=lambda role, kind: errors.append(kind))
    with pytest.raises(ModelUnavailable, match="down"):
        client.detect(b"jpeg")
    assert errors == ["unavailable"]
    assert client.missing_models() == ["detector", "pose"]


def test_the_segmenter_is_optional_and_its_unsure_masks_are_no_figure(server, monkeypatch):
    replies, client = server
    monkeypatch.setattr("gateway.backends.torchserve_client.VERSIONS_TTL_S", 0.0)
    replies.by_path["/models/det"] = (200, [{"modelName": "det", "workers": [{"status": "READY"}]}])
    replies.by_path["/models/pose"] = (
        200,
        [{"modelName": "pose", "workers": [{"status": "READY"}]}],
    )
    assert client.missing_models() == []  # not served (404): never missing, just not asked
    assert not client.serves("segmenter") and client.serves("pose")
    replies.by_path["/models/seg"] = (200, [{"modelName": "seg", "workers": [{"status": "READY"}]}])
    assert client.serves("segmenter")

    replies.by_path["/predictions/seg"] = (200, {"mask": "iVBOR", "score": 0.93})
    assert client.segment(b"jpeg") == "iVBOR"
    replies.by_path["/predictions/seg"] = (200, {"mask": "iVBOR", "score": 0.72})
    assert client.segment(b"jpeg") == NO_FIGURE  # a blank page's blob
    for body in ({"score": 0.9}, {"mask": 3, "score": 0.9}, {"mask": "x", "score": "high"}, []):
        replies.by_path["/predictions/seg"] = (200, body)
        with pytest.raises(ModelUnavailable):
            client.segment(b"jpeg")
