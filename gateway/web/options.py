"""The options of a request, one validator each: a value from a form field, a JSON key or the
query string in, the checked value out, or a 400 naming the option.

Lists come as JSON or as comma-separated text; numbers as numbers or text. The typed
request they make up is web/requests.py's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from PIL import Image, UnidentifiedImageError

from animation.formats import check_format, parse_colour
from animation.motions import MOTION_NAME
from animation.roles import ROLES
from gateway.errors import BadRequest, UnknownMotion

SIZE_RANGE = (32, 512)
FPS_RANGE = (1, 30)
DEFAULT_SIZE = 256
DEFAULT_FPS = 15
DEFAULT_BACKGROUND = (255, 255, 255)  # behind the figure where a format has no alpha (mp4)
CUSTOM_MOTION = "custom"  # the answer's key for an uploaded motion whose file has no name


@dataclass(frozen=True)
class GivenMask:
    """The `mask` option: the figure's outline as a person fixed it, in the upload's pixels."""

    box: tuple[int, int, int, int]  # left, top, right, bottom (right, bottom excluded)
    png: bytes  # a PNG of the box's size; non-zero pixels are the figure (decoded later)

    def key_fields(self) -> dict:
        return {"box": list(self.box), "sha256": hashlib.sha256(self.png).hexdigest()}


def _json_value(name: str, value: object) -> object:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            # Also accept "1,2,3,4" for a flat list of numbers.
            try:
                return [float(v) for v in value.split(",")]
            except ValueError:
                raise BadRequest(f"option {name!r} must be a JSON list") from None
    return value


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"option {name!r} must contain finite numbers, got {value!r}")
    return float(value)


def parse_int(name: str, value: object, low: int, high: int) -> int:
    try:
        number = int(str(value).strip()) if isinstance(value, str) else value
    except ValueError:
        raise BadRequest(f"option {name!r} must be an integer, got {value!r}") from None
    if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
        raise BadRequest(f"option {name!r} must be an integer from {low} to {high}, got {value!r}")
    return number


def parse_motions(value: object, known: list[str], default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None or value == "" or value == []:
        return default
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
    elif isinstance(value, list) and all(isinstance(n, str) for n in value):
        names = [n.strip() for n in value]
    else:
        raise BadRequest("option 'motions' must be a list of names or a comma-separated string")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownMotion(f"unknown motion(s) {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(known)}")  # fmt: skip
    return tuple(dict.fromkeys(names)) or default


def parse_keypoints(value: object) -> tuple[tuple[float, float], ...]:
    points = _json_value("keypoints", value)
    if isinstance(points, list) and len(points) == 34 and not isinstance(points[0], list):
        points = [points[i : i + 2] for i in range(0, 34, 2)]  # a flat x0,y0,x1,y1,... list
    if not isinstance(points, list) or len(points) != 17:
        raise BadRequest("option 'keypoints' must be 17 COCO [x, y] pairs")
    out = []
    for point in points:
        if not isinstance(point, list | tuple) or len(point) not in (2, 3):
            raise BadRequest(f"each keypoint must be [x, y], got {point!r}")
        out.append((_number("keypoints", point[0]), _number("keypoints", point[1])))
    return tuple(out)


def parse_bbox(value: object) -> tuple[float, float, float, float]:
    box = _json_value("bbox", value)
    if not isinstance(box, list | tuple) or len(box) != 4:
        raise BadRequest("option 'bbox' must be [left, top, right, bottom]")
    left, top, right, bottom = (_number("bbox", v) for v in box)
    if right <= left or bottom <= top or min(left, top) < 0:
        raise BadRequest(f"option 'bbox' {list(box)} must have left < right and top < bottom")
    return left, top, right, bottom


def parse_mask(value: object) -> GivenMask:
    """`{"box": [l, t, r, b], "png": "<base64 PNG of the box's size>"}` (or that as JSON text).

    Only the PNG's header is read here; its pixels are decoded in a render worker."""
    document = value
    if isinstance(value, str):
        try:
            document = json.loads(value)
        except ValueError:
            raise BadRequest("option 'mask' must be a JSON object {box, png}") from None
    if not isinstance(document, dict) or not {"box", "png"} <= set(document):
        raise BadRequest("option 'mask' must be an object with 'box' and 'png'")
    box = document["box"]
    if (not isinstance(box, list | tuple) or len(box) != 4
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in box)):  # fmt: skip
        raise BadRequest("mask 'box' must be [left, top, right, bottom] in whole pixels")
    left, top, right, bottom = box
    if min(left, top) < 0 or right <= left or bottom <= top:
        raise BadRequest(
            f"mask 'box' {list(box)} must have 0 <= left < right and 0 <= top < bottom"
        )
    text = document["png"]
    if not isinstance(text, str):
        raise BadRequest("mask 'png' must be a base64 string")
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    try:
        png = base64.b64decode("".join(text.split()), validate=True)
        with Image.open(io.BytesIO(png)) as image:  # lazy: the header only
            format_, size = image.format, image.size
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError):
        raise BadRequest("mask 'png' is not a base64 PNG") from None
    if format_ != "PNG":
        raise BadRequest(f"mask 'png' must be a PNG, got {format_}")
    if size != (right - left, bottom - top):
        raise BadRequest(f"mask 'png' is {size[0]}x{size[1]}, its box {list(box)} is "
                         f"{right - left}x{bottom - top}")  # fmt: skip
    return GivenMask((left, top, right, bottom), png)


def parse_format(value: object) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"option 'format' must be a name, got {value!r}")
    try:
        return check_format(value.strip().lower()).name
    except ValueError as exc:
        raise BadRequest(f"option 'format': {exc}") from None


def parse_background(value: object) -> tuple[int, int, int]:
    if not isinstance(value, str):
        raise BadRequest(f"option 'background' must be '#rrggbb', got {value!r}")
    try:
        return parse_colour(value)
    except ValueError as exc:
        raise BadRequest(f"option {exc}") from None


def motion_name(filename: str) -> str:
    """A safe motion name from an uploaded file's name: its stem, with anything but letters,
    digits, '_' and '-' made '_' (e.g. `C:\\mocap\\Zombie Walk.bvh` -> `Zombie_Walk`);
    CUSTOM_MOTION when nothing usable is left."""
    stem = PurePosixPath(filename.replace("\\", "/")).name
    if stem.lower().endswith(".bvh"):
        stem = stem[: -len(".bvh")]
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_-")[:64]
    return name if MOTION_NAME.match(name) else CUSTOM_MOTION


def parse_joint_map(value: object) -> tuple[tuple[str, str], ...]:
    """Option `map`: `{"role": "JOINT", ...}` (JSON) or `role=JOINT,role=JOINT`."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            pairs = [item.partition("=") for item in value.split(",") if item.strip()]
            if not all(sep and joint.strip() for _, sep, joint in pairs):
                raise BadRequest("option 'map' must be role=JOINT pairs or a JSON object") from None
            value = {role.strip(): joint.strip() for role, _, joint in pairs}
    if not isinstance(value, dict) or not all(
        isinstance(j, str) and j.strip() and len(j) <= 256 for j in value.values()
    ):
        raise BadRequest("option 'map' must be role=JOINT pairs or a JSON object")
    unknown = [role for role in value if role not in ROLES]
    if unknown:
        raise BadRequest(f"option 'map': unknown roles {unknown}; roles: {', '.join(ROLES)}")
    return tuple((role, joint.strip()) for role, joint in value.items())


def parse_seconds(name: str, value: object) -> float:
    try:
        seconds = float(value.strip()) if isinstance(value, str) else _number(name, value)
    except ValueError:
        raise BadRequest(f"option {name!r} must be seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise BadRequest(f"option {name!r} must be seconds from 0, got {value!r}")
    return seconds
