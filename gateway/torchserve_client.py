"""Client of the two TorchServe models: detector and pose estimator, over HTTP only.

One pooled `requests.Session`, a timeout on every call, one retry when the connection is
refused (TorchServe restarting), and errors mapped to the API's: 503 `model_unavailable`
when TorchServe is down or has no worker, 504 `model_timeout` past the budget.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
import requests
from requests.adapters import HTTPAdapter

from gateway.config import ModelRole
from gateway.errors import ModelTimeout, ModelUnavailable, NoCharacterDetected, PoseNotFound

log = logging.getLogger("gateway.torchserve")
CONNECT_TIMEOUT_S = 2.0
READY_TIMEOUT_S = 2.0
RETRY_PAUSE_S = 0.2


def _refused(exc: requests.ConnectionError) -> bool:
    return "refused" in str(exc).lower() or isinstance(
        getattr(exc.args[0] if exc.args else None, "reason", None), ConnectionRefusedError
    )


class TorchServeClient:
    def __init__(
        self,
        roles: dict[str, ModelRole],
        timeout_s: float,
        on_error: Callable[[str, str], None] = lambda role, kind: None,
    ) -> None:
        self.roles = roles
        self.timeout_s = timeout_s
        self._on_error = on_error
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=64, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def _predict(self, role: str, image: bytes, content_type: str) -> object:
        model = self.roles[role]
        url = f"{model.inference_url}/predictions/{model.model}"
        for attempt in (1, 2):
            try:
                reply = self.session.post(
                    url, data=image, headers={"Content-Type": content_type},
                    timeout=(CONNECT_TIMEOUT_S, self.timeout_s),
                )  # fmt: skip
                break
            except requests.ConnectionError as exc:
                if attempt == 1 and _refused(exc):
                    time.sleep(RETRY_PAUSE_S)  # a restarting server: worth one more try
                    continue
                self._on_error(role, "unavailable")
                if isinstance(exc, requests.ConnectTimeout):
                    raise ModelUnavailable(f"{model.model}: TorchServe is not reachable") from exc
                raise ModelUnavailable(f"{model.model}: TorchServe is down ({exc})") from exc
            except requests.Timeout as exc:
                self._on_error(role, "timeout")
                raise ModelTimeout(
                    f"{model.model} gave no answer within {self.timeout_s:g} s"
                ) from exc
        if reply.status_code != 200:
            self._on_error(role, f"http_{reply.status_code}")
            raise ModelUnavailable(f"{model.model}: TorchServe answered {reply.status_code}")
        try:
            return reply.json()
        except ValueError as exc:
            self._on_error(role, "bad_reply")
            raise ModelUnavailable(f"{model.model}: TorchServe's reply is not JSON") from exc

    def detect(self, jpeg: bytes) -> tuple[float, float, float, float]:
        """The best box `[left, top, right, bottom]` of a drawn figure, in the image's pixels."""
        boxes = self._predict("detector", jpeg, "image/jpeg")
        min_score = self.roles["detector"].min_score
        try:
            candidates = [
                (float(b.get("score", 1.0)), [float(v) for v in b["bbox"][:4]])
                for b in (boxes if isinstance(boxes, list) else [])
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelUnavailable(f"detector reply is malformed: {boxes!r:.200}") from exc
        good = [
            box
            for score, box in candidates
            if score >= min_score and box[2] > box[0] and box[3] > box[1]
        ]
        if not good:
            raise NoCharacterDetected("no drawn figure was found in the image")
        return tuple(good[0])  # TorchServe lists the best first

    def pose(self, jpeg: bytes) -> np.ndarray:
        """17 COCO keypoints `(x, y, score)` in the posted crop's pixels."""
        reply = self._predict("pose", jpeg, "image/jpeg")
        try:
            keypoints = np.asarray(reply[0]["keypoints"], dtype=np.float64)
        except (IndexError, KeyError, TypeError, ValueError):
            raise PoseNotFound("the pose estimator found no pose in the figure") from None
        if keypoints.shape != (17, 3) or not np.isfinite(keypoints).all():
            raise PoseNotFound(f"the pose estimator returned keypoints of shape {keypoints.shape}")
        if keypoints[:, 2].mean() < self.roles["pose"].min_score:
            raise PoseNotFound("the pose estimator is not confident about this figure's joints")
        return keypoints

    def missing_models(self) -> list[str]:
        """Models without a READY worker, from the management API ([] when all are ready)."""
        missing = []
        for model in self.roles.values():
            url = f"{model.management_url}/models/{model.model}"
            try:
                reply = self.session.get(url, timeout=(CONNECT_TIMEOUT_S, READY_TIMEOUT_S))
                versions = reply.json() if reply.status_code == 200 else []
                ready = any(
                    w.get("status") == "READY" for v in versions for w in v.get("workers", [])
                )
            except (requests.RequestException, ValueError, AttributeError, TypeError):
                ready = False
            if not ready:
                missing.append(model.model)
        return missing
