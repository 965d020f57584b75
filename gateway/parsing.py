"""Reading a POST /animate or /annotate request from its received body: the three forms and
the options.

Forms: multipart (field `image`, `file` or `data`), JSON `{"file": "<base64>"}` (or
`"image"`), or a raw `image/png|jpeg|webp` body. Options come from the query string and
from the form fields / JSON keys (the body wins). A `bvh` file part (or a JSON string
`bvh`) is a motion of the client's own, checked here only for its size: it is parsed in a
render worker (see cpu_tasks.read_motion). Pure functions of bytes: the body was received
(gateway/body.py) before any of this runs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from PIL import Image, UnidentifiedImageError
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser

from animation.bvh import UPLOAD_LIMITS
from animation.formats import DEFAULT_FORMAT, FORMATS, check_format, parse_colour
from animation.motions import MOTION_NAME
from animation.roles import ROLES
from gateway.body import RAW_IMAGE_TYPES, too_large
from gateway.errors import (
    BadRequest,
    InvalidMotion,
    MotionTooLarge,
    UnknownMotion,
    UnsupportedMediaType,
)

IMAGE_FIELDS = ("image", "file", "data")
SIZE_RANGE = (32, 512)
FPS_RANGE = (1, 30)
DEFAULT_SIZE = 256
DEFAULT_FPS = 15
DEFAULT_BACKGROUND = (255, 255, 255)  # behind the figure where a format has no alpha (mp4)
BVH_FIELD = "bvh"
CUSTOM_MOTION = "custom"  # the answer's key for an uploaded motion whose file has no name
MOTION_UPLOAD_OPTIONS = ("map", "up", "start", "end")  # apply to an uploaded motion only
MOTION_UPLOAD_FIELDS = (BVH_FIELD, *MOTION_UPLOAD_OPTIONS)


@dataclass(frozen=True)
class GivenMask:
    """The `mask` option: the figure's outline as a person fixed it, in the upload's pixels."""

    box: tuple[int, int, int, int]  # left, top, right, bottom (right, bottom excluded)
    png: bytes  # a PNG of the box's size; non-zero pixels are the figure (decoded later)

    def key_fields(self) -> dict:
        return {"box": list(self.box), "sha256": hashlib.sha256(self.png).hexdigest()}


@dataclass(frozen=True)
class FigureOptions:
    """What the client already knows about the figure; each one given skips a model."""

    bbox: tuple[float, float, float, float] | None = None  # left, top, right, bottom
    keypoints: tuple[tuple[float, float], ...] | None = None  # 17 COCO [x, y], upload's pixels
    mask: GivenMask | None = None  # skips segmentation (and the detector: it fixes the crop)


@dataclass(frozen=True)
class AnimateOptions:
    motions: tuple[str, ...]
    size: int = DEFAULT_SIZE
    fps: int = DEFAULT_FPS
    keypoints: tuple[tuple[float, float], ...] | None = None  # 17 COCO [x, y], upload's pixels
    bbox: tuple[float, float, float, float] | None = None  # left, top, right, bottom
    mask: GivenMask | None = None
    format: str = DEFAULT_FORMAT  # a key of animation.formats.FORMATS
    background: tuple[int, int, int] = DEFAULT_BACKGROUND  # RGB, used where no alpha (mp4)

    @property
    def figure(self) -> FigureOptions:
        return FigureOptions(self.bbox, self.keypoints, self.mask)

    @property
    def suffix(self) -> str:
        return FORMATS[self.format].suffix

    @property
    def content_type(self) -> str:
        return FORMATS[self.format].content_type

    def render_fields(self) -> dict:
        """Everything but the motion list that decides what a file looks like (for its key);
        the background only where the format shows it."""
        fields = {"size": self.size, "fps": self.fps, "keypoints": self.keypoints,
                  "bbox": self.bbox, "mask": self.mask.key_fields() if self.mask else None,
                  "format": self.format}  # fmt: skip
        if not FORMATS[self.format].transparent:
            fields["background"] = self.background
        return fields


@dataclass(frozen=True)
class MotionUpload:
    """A BVH file the client sent, to animate the drawing with, answered under `name`."""

    name: str  # the part's file name stem, made a safe motion name, else CUSTOM_MOTION
    data: bytes
    joint_map: tuple[tuple[str, str], ...] = ()  # (role, BVH joint) pairs, option `map`
    up: str | None = None  # x | y | z, optionally signed; None: detected from the motion
    start_s: float | None = None  # a segment in seconds
    end_s: float | None = None

    @property
    def source(self) -> str:
        """How errors name the file: `<name>.bvh:<line>: ...` (never the client's own path)."""
        return f"{self.name}.bvh"

    def version(self) -> str:
        """A digest of the file and of how it is retargeted, for the storage key."""
        options = json.dumps([self.joint_map, self.up, self.start_s, self.end_s])
        return hashlib.sha256(self.data + b"\0" + options.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class AnimateRequest:
    image: bytes
    options: AnimateOptions
    motion_upload: MotionUpload | None = None  # rendered after options.motions

    @property
    def motions(self) -> tuple[str, ...]:
        """Every motion answered, in order: the table's, then the uploaded one."""
        upload = (self.motion_upload.name,) if self.motion_upload else ()
        return self.options.motions + upload


@dataclass(frozen=True)
class AnnotateRequest:
    image: bytes
    figure: FigureOptions


@dataclass(frozen=True)
class Upload:
    """What a body carried, whatever its form: the image, the option fields, other files."""

    image: bytes
    fields: dict
    files: dict[str, bytes] = field(default_factory=dict)  # other multipart file parts
    filenames: dict[str, str] = field(default_factory=dict)  # the file name each part gave


def _decode_base64(text: object, limit: int) -> bytes:
    if not isinstance(text, str):
        raise BadRequest("JSON field 'file' must be a base64 string")
    if text.startswith("data:") and "," in text:  # a data: URL, as browsers produce
        text = text.split(",", 1)[1]
    if len(text) * 3 // 4 > limit + 3:
        raise too_large(limit)
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest("JSON field 'file' is not valid base64") from exc


def _multipart(body: bytes, params: dict, limit: int) -> Upload:
    parser = FormDataParser(stream_factory=lambda *args, **kwargs: io.BytesIO(), silent=False)
    try:
        _, form, files = parser.parse(io.BytesIO(body), "multipart/form-data", len(body), params)
    except RequestEntityTooLarge as exc:
        raise too_large(limit) from exc
    except ValueError as exc:  # no boundary, a broken part
        raise BadRequest(f"the multipart body cannot be read: {exc}") from exc
    parts = {name: files[name].stream.getvalue() for name in files}
    filenames = {name: files[name].filename or "" for name in files}
    image_field = next((f for f in IMAGE_FIELDS if f in parts), None)
    if image_field is None:
        raise BadRequest(f"multipart body needs the image in field {IMAGE_FIELDS[0]!r}")
    image = parts.pop(image_field)
    filenames.pop(image_field)
    if len(image) > limit:
        raise too_large(limit)
    return Upload(image, form.to_dict(), parts, filenames)


def _json(body: bytes, limit: int) -> Upload:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("the body is not valid JSON") from exc
    if not isinstance(document, dict):
        raise BadRequest("the JSON body must be an object")
    image_key = next((f for f in ("file", "image") if f in document), None)
    if image_key is None:
        raise BadRequest("the JSON body needs the base64 image in 'file'")
    fields = {k: v for k, v in document.items() if k not in ("file", "image")}
    return Upload(_decode_base64(document[image_key], limit), fields)


def read_upload(body: bytes, mimetype: str, params: dict, max_upload_bytes: int) -> Upload:
    """The image and fields of a received body of type `mimetype` (with its `params`)."""
    if mimetype == "multipart/form-data":
        upload = _multipart(body, params, max_upload_bytes)
    elif mimetype == "application/json":
        upload = _json(body, max_upload_bytes)
    elif mimetype in RAW_IMAGE_TYPES:
        if len(body) > max_upload_bytes:
            raise too_large(max_upload_bytes)
        upload = Upload(body, {})
    else:
        raise UnsupportedMediaType(
            f"Content-Type {mimetype or 'none'!r} is not accepted: send multipart/form-data, "
            "application/json or image/png, image/jpeg, image/webp"
        )
    if not upload.image:
        raise BadRequest("the image is empty")
    return upload


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


def _int_option(name: str, value: object, low: int, high: int) -> int:
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


def parse_figure_options(fields: dict) -> FigureOptions:
    """`bbox`, `keypoints` and `mask`, each optional, from the merged fields."""

    def given(name: str) -> bool:
        return fields.get(name) not in (None, "")

    return FigureOptions(
        bbox=parse_bbox(fields["bbox"]) if given("bbox") else None,
        keypoints=parse_keypoints(fields["keypoints"]) if given("keypoints") else None,
        mask=parse_mask(fields["mask"]) if given("mask") else None,
    )


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


def parse_options(
    fields: dict, known_motions: list[str], default_motions: tuple[str, ...]
) -> AnimateOptions:
    def get(name: str) -> object:
        return fields.get(name)

    figure = parse_figure_options(fields)

    def given(name: str) -> bool:
        return get(name) not in (None, "")

    return AnimateOptions(
        motions=parse_motions(get("motions"), known_motions, default_motions),
        size=DEFAULT_SIZE if get("size") is None else _int_option("size", get("size"), *SIZE_RANGE),
        fps=DEFAULT_FPS if get("fps") is None else _int_option("fps", get("fps"), *FPS_RANGE),
        keypoints=figure.keypoints,
        bbox=figure.bbox,
        mask=figure.mask,
        format=parse_format(get("format")) if given("format") else DEFAULT_FORMAT,
        background=parse_background(get("background")) if given("background")
        else DEFAULT_BACKGROUND,
    )  # fmt: skip


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


def _seconds(name: str, value: object) -> float:
    try:
        seconds = float(value.strip()) if isinstance(value, str) else _number(name, value)
    except ValueError:
        raise BadRequest(f"option {name!r} must be seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise BadRequest(f"option {name!r} must be seconds from 0, got {value!r}")
    return seconds


def parse_motion_upload(upload: Upload, fields: dict) -> MotionUpload | None:
    """The `bvh` part of the body (a file part, or a string field), with the options that
    apply to it; None when the body has none. Only its size is checked here, before
    anything else is done with it."""
    data, filename = upload.files.get(BVH_FIELD), upload.filenames.get(BVH_FIELD, "")
    if data is None and isinstance(upload.fields.get(BVH_FIELD), str):
        data = upload.fields[BVH_FIELD].encode()
    stray = [name for name in MOTION_UPLOAD_OPTIONS if fields.get(name) not in (None, "")]
    if data is None:
        if stray:
            raise BadRequest(f"option(s) {', '.join(stray)} apply to an uploaded 'bvh' only")
        return None
    if len(data) > UPLOAD_LIMITS.max_bytes:
        raise MotionTooLarge(
            f"the BVH file is {len(data)} bytes, more than the limit of {UPLOAD_LIMITS.max_bytes}"
        )
    if not data.strip():
        raise InvalidMotion("the BVH file is empty")
    up = fields.get("up")
    if up not in (None, "") and not (
        isinstance(up, str) and re.fullmatch(r"[+-]?[xyz]", up.strip().lower())
    ):
        raise BadRequest(f"option 'up' must be x, y or z (optionally signed), got {up!r}")
    start = _seconds("start", fields["start"]) if fields.get("start") not in (None, "") else None
    end = _seconds("end", fields["end"]) if fields.get("end") not in (None, "") else None
    if end is not None and end <= (start or 0.0):
        raise BadRequest(f"option 'end' ({end:g} s) must come after 'start' ({start or 0:g} s)")
    return MotionUpload(
        name=motion_name(filename) if filename else CUSTOM_MOTION,
        data=data,
        joint_map=parse_joint_map(fields["map"]) if fields.get("map") not in (None, "") else (),
        up=up.strip().lower().lstrip("+") if up not in (None, "") else None,
        start_s=start,
        end_s=end,
    )


def parse_animate_request(
    upload: Upload, query: dict, known_motions: list[str], default_motions: tuple[str, ...]
) -> AnimateRequest:
    """The image and options of a POST /animate; raises an ApiError on anything wrong.

    With an uploaded motion and no `motions` option, only the uploaded motion is rendered.
    """
    merged = {**query, **upload.fields}
    motion_upload = parse_motion_upload(upload, merged)
    if motion_upload is not None:
        default_motions = ()
    options = parse_options(merged, known_motions, default_motions)
    if motion_upload is not None and motion_upload.name in options.motions:
        raise BadRequest(
            f"the uploaded motion is called {motion_upload.name!r}, as a requested motion is: "
            "rename the file"
        )
    return AnimateRequest(upload.image, options, motion_upload)


def parse_annotate_request(upload: Upload, query: dict) -> AnnotateRequest:
    """The image and the figure's options of a POST /annotate (render options are ignored)."""
    return AnnotateRequest(upload.image, parse_figure_options({**query, **upload.fields}))
