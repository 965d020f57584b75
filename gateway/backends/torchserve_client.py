"""Client of the TorchServe models: detector, pose estimator and (optional) segmenter,
over HTTP only.

One pooled `requests.Session`, a timeout on every call, one retry when the connection is
refused (TorchServe restarting), and errors mapped to the API's: a handler's refusal of
the image (its 400, 413 or 415) is the client's error with the handler's words; 503
`model_unavailable` when TorchServe is down, has no worker or refuses us (auth, unknown
model); 504 `model_timeout` past the budget.

The management API says which version of each model serves (`modelVersion`) and whether an
optional model (the segmenter) is served at all: a 404 for it means "not served", and a
model without a READY worker is not used either. Both are read at start, with each
readiness check, and again in a request when older than VERSIONS_TTL_S; the versions name
stored GIFs. /ready never waits for an optional model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

import numpy as np
import requests
from gevent.lock import Semaphore
from requests.adapters import HTTPAdapter

from gateway.backends.model_table import ModelRole
from gateway.errors import (
    ApiError,
    ImageTooLarge,
    InvalidImage,
    ModelTimeout,
    ModelUnavailable,
    NoCharacterDetected,
    PoseNotFound,
    UnsupportedMediaType,
)
from gateway.greenlets import run_all

log = logging.getLogger("gateway.torchserve")
CONNECT_TIMEOUT_S = 2.0
READY_TIMEOUT_S = 2.0
RETRY_PAUSE_S = 0.2
VERSIONS_TTL_S = 5.0
# A model whose management API never answered (TorchServe not up yet, or served elsewhere).
UNKNOWN_VERSION = "unknown"
# The segmenter's answer when it is not confident there is a figure in the crop.
NO_FIGURE = ""
# The management API's answer for a model TorchServe does not serve (its 404).
NOT_SERVED: dict = {}
# A handler refusing the image it was sent answers these; the client's error, not ours.
REFUSALS: dict[int, type[ApiError]] = {
    400: InvalidImage, 413: ImageTooLarge, 415: UnsupportedMediaType,
}  # fmt: skip


def _handler_refusal(model: str, reply: requests.Response) -> ApiError | None:
    """The client's error when TorchServe's handler refused the image itself, else None.

    TorchServe's own front end also answers 4xx (token auth, unknown model, bad routing),
    with a Java exception's name as `type`: those are ours to fix, never the client's.
    """
    if reply.status_code not in REFUSALS:
        return None
    try:
        body = reply.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or str(body.get("type", "")).endswith("Exception"):
        return None
    reason = str(body.get("message") or "no reason given")
    return REFUSALS[reply.status_code](f"{model} refused the image: {reason}")


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
        self._versions: dict[str, str] = {}  # role -> modelVersion, as last read
        self._serving: dict[str, bool] = {}  # role -> has a READY worker, as last read
        self._versions_read_at = -VERSIONS_TTL_S
        self._refreshing = Semaphore()  # one refresh at a time; the others wait for it
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=64, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def _predict(self, role: str, image: bytes, content_type: str) -> object:
        model = self.roles[role]
        url = f"{model.inference_url}/predictions/{model.model}"
        timeout_s = model.timeout_s or self.timeout_s
        for attempt in (1, 2):
            try:
                reply = self.session.post(
                    url, data=image, headers={"Content-Type": content_type},
                    timeout=(CONNECT_TIMEOUT_S, timeout_s),
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
                raise ModelTimeout(f"{model.model} gave no answer within {timeout_s:g} s") from exc
        if refusal := _handler_refusal(model.model, reply):
            raise refusal  # the image's fault: not a model error in /metrics
        if reply.status_code != 200:
            if reply.status_code == 404 and model.optional:
                self._serving[role] = False  # unregistered since last read: not asked again
            self._on_error(role, f"http_{reply.status_code}")
            raise ModelUnavailable(f"{model.model}: TorchServe answered {reply.status_code}")
        try:
            return reply.json()
        except ValueError as exc:
            self._on_error(role, "bad_reply")
            raise ModelUnavailable(f"{model.model}: TorchServe's reply is not JSON") from exc

    def detect(self, jpeg: bytes) -> tuple[float, float, float, float]:
        """The best box `[left, top, right, bottom]` of a drawn figure, in the image's pixels."""
        return self.detect_scored(jpeg)[0]

    def detect_scored(self, jpeg: bytes) -> tuple[tuple[float, float, float, float], float]:
        """The best box of a drawn figure (as `detect`) and the detector's score for it."""
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
            (tuple(box), score)
            for score, box in candidates
            if score >= min_score and box[2] > box[0] and box[3] > box[1]
        ]
        if not good:
            raise NoCharacterDetected("no drawn figure was found in the image")
        return good[0]  # TorchServe lists the best first

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

    def segment(self, jpeg: bytes) -> str:
        """The segmenter's mask of the posted crop: base64 text of a 0/255 PNG of the crop's
        size (decoded and checked in a render worker, off the hub); NO_FIGURE when its score
        is below the role's `min_score` (it draws a blob on a blank page, less sure of it)."""
        reply = self._predict("segmenter", jpeg, "image/jpeg")
        answer = reply if isinstance(reply, dict) else {}
        mask, score = answer.get("mask"), answer.get("score", 1.0)
        if not isinstance(mask, str) or not isinstance(score, int | float):
            self._on_error("segmenter", "bad_reply")
            raise ModelUnavailable(f"segmenter reply is malformed: {reply!r:.200}")
        return mask if score >= self.roles["segmenter"].min_score else NO_FIGURE

    def _describe(self, model: ModelRole) -> dict | None:
        """The management API's description of the version that serves; NOT_SERVED when it
        answers 404 (no such model); None when it gives no usable answer."""
        url = f"{model.management_url}/models/{model.model}"
        try:
            reply = self.session.get(url, timeout=(CONNECT_TIMEOUT_S, READY_TIMEOUT_S))
            if reply.status_code == 404:
                return NOT_SERVED
            described = reply.json() if reply.status_code == 200 else None
            return described[0] if isinstance(described, list) and described else None
        except (requests.RequestException, ValueError):
            return None

    def _read(self, roles: Iterable[str]) -> dict[str, dict | None]:
        """Each role's description, asked side by side; versions learnt are remembered."""
        roles = list(roles)
        answers = run_all(self._describe, [(self.roles[r],) for r in roles])
        described = dict(zip(roles, answers, strict=True))
        for role, description in described.items():
            if isinstance(description, dict) and description.get("modelVersion"):
                self._versions[role] = str(description["modelVersion"])
            if description is not None:  # no answer: what was last read stands
                self._serving[role] = _has_ready_worker(description)
        # Also after a failure: a hung management API costs one wait per TTL, not per request.
        self._versions_read_at = time.monotonic()
        return described

    def missing_models(self) -> list[str]:
        """Needed models without a READY worker, from the management API ([] when all are
        ready). Optional ones are read too (whether they serve) but never missing."""
        described = self._read(self.roles)
        return [self.roles[role].model for role, description in described.items()
                if not self.roles[role].optional and not _has_ready_worker(description)]  # fmt: skip

    def serves(self, role: str) -> bool:
        """Whether `role` can be asked now: a needed role always (its calls fail or tell);
        an optional one when it is in the model table and has a READY worker, as read at
        most VERSIONS_TTL_S ago (False until the management API has said so)."""
        model = self.roles.get(role)
        if model is None:
            return False
        if not model.optional:
            return True
        self._refresh()
        return self._serving.get(role, False)

    def versions(self, roles: Iterable[str]) -> dict[str, str]:
        """role -> the serving model's version, for `roles`; re-read when older than
        VERSIONS_TTL_S. The last versions read stand in while TorchServe does not answer;
        a model never described is `UNKNOWN_VERSION` (its calls will fail or tell)."""
        roles = tuple(roles)
        if roles:
            self._refresh()
        return {role: self._versions.get(role, UNKNOWN_VERSION) for role in roles}

    def _refresh(self) -> None:
        """Read every role's description again when the last read is older than the TTL."""

        def stale() -> bool:
            return time.monotonic() - self._versions_read_at >= VERSIONS_TTL_S

        if stale():
            with self._refreshing:
                if stale():
                    self._read(self.roles)


def _has_ready_worker(description: dict | None) -> bool:
    workers = (description or {}).get("workers") or []
    return any(isinstance(w, dict) and w.get("status") == "READY" for w in workers)
