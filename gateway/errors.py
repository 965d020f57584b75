"""The gateway's errors: one exception type carrying the status and code of DESIGN.md's table.

Every failure a client can see is an `ApiError` (or an image the shared decoding policy
refuses, `animation.images.ImageRejected`, which carries its own status and code); anything
else becomes a 500 `internal_error` whose traceback goes to the log, never to the client.
The animation library and the render workers raise the library's own errors; where the
gateway awaits them, `from_library` turns them into the API's.
"""

from __future__ import annotations

from animation.bvh import BVHError, BVHLimitError
from animation.figure import BadBox, FigureError
from animation.motions import MotionError

MAX_MESSAGE_CHARS = 2000  # of an error about an uploaded motion


class ApiError(Exception):
    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


def _error(name: str, status: int, code: str) -> type[ApiError]:
    return type(name, (ApiError,), {"status": status, "code": code, "__doc__": f"{status} {code}"})


BadRequest = _error("BadRequest", 400, "bad_request")
InvalidImage = _error("InvalidImage", 400, "invalid_image")
UnknownMotion = _error("UnknownMotion", 400, "unknown_motion")
InvalidMotion = _error("InvalidMotion", 400, "invalid_motion")
Unauthorized = _error("Unauthorized", 401, "unauthorized")
NotFound = _error("NotFound", 404, "not_found")
MethodNotAllowed = _error("MethodNotAllowed", 405, "method_not_allowed")
RequestTimeout = _error("RequestTimeout", 408, "request_timeout")
PayloadTooLarge = _error("PayloadTooLarge", 413, "payload_too_large")
ImageTooLarge = _error("ImageTooLarge", 413, "image_too_large")
MotionTooLarge = _error("MotionTooLarge", 413, "motion_too_large")
UnsupportedMediaType = _error("UnsupportedMediaType", 415, "unsupported_media_type")
NoCharacterDetected = _error("NoCharacterDetected", 422, "no_character_detected")
PoseNotFound = _error("PoseNotFound", 422, "pose_not_found")
ModelUnavailable = _error("ModelUnavailable", 503, "model_unavailable")
StorageUnavailable = _error("StorageUnavailable", 503, "storage_unavailable")
Overloaded = _error("Overloaded", 503, "overloaded")
QueueUnavailable = _error("QueueUnavailable", 503, "queue_unavailable")
CallbackRefused = _error("CallbackRefused", 400, "invalid_callback")
ModelTimeout = _error("ModelTimeout", 504, "model_timeout")


def from_library(exc: FigureError | BVHError | MotionError) -> ApiError:
    """The API's error for one the library raised on a request's input: a drawing that
    gives no figure (422), a box with nothing of the image in it (400), an uploaded motion
    past a limit (413) or one that cannot be read or retargeted (400)."""
    if isinstance(exc, BadBox):
        return InvalidImage(str(exc))
    if isinstance(exc, FigureError):
        return NoCharacterDetected(str(exc))
    if isinstance(exc, BVHLimitError):
        return MotionTooLarge(f"{exc} (limit on {exc.limit})")
    # The message may list the file's joint names: the client's own, of any length.
    message = str(exc)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "..."
    return InvalidMotion(message)


def error_document(code: str, message: str, request_id: str) -> dict:
    """The body of every error answer: `{"error": {"code", "message", "request_id"}}`."""
    return {"error": {"code": code, "message": message, "request_id": request_id}}


class ClientGone(Exception):
    """The client closed its connection: the work is abandoned and nothing is answered."""
