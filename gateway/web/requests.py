"""The typed request: what a POST /animate or /annotate asks for, read from its received
body (web/upload.py) with each option checked (web/options.py).

A `bvh` file part (or a JSON string `bvh`) is a motion of the client's own, checked here
only for its size: it is parsed in a render worker (gateway/rendering/tasks.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from animation.bvh import UPLOAD_LIMITS
from animation.formats import DEFAULT_FORMAT, FORMATS
from gateway.errors import BadRequest, InvalidMotion, MotionTooLarge
from gateway.web.options import (
    CUSTOM_MOTION,
    DEFAULT_BACKGROUND,
    DEFAULT_FPS,
    DEFAULT_SIZE,
    FPS_RANGE,
    SIZE_RANGE,
    GivenMask,
    motion_name,
    parse_background,
    parse_bbox,
    parse_format,
    parse_int,
    parse_joint_map,
    parse_keypoints,
    parse_mask,
    parse_motions,
    parse_seconds,
)
from gateway.web.upload import Upload

BVH_FIELD = "bvh"
MOTION_UPLOAD_OPTIONS = ("map", "up", "start", "end")  # apply to an uploaded motion only
MOTION_UPLOAD_FIELDS = (BVH_FIELD, *MOTION_UPLOAD_OPTIONS)


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


def parse_figure_options(fields: dict) -> FigureOptions:
    """`bbox`, `keypoints` and `mask`, each optional, from the merged fields."""

    def given(name: str) -> bool:
        return fields.get(name) not in (None, "")

    return FigureOptions(
        bbox=parse_bbox(fields["bbox"]) if given("bbox") else None,
        keypoints=parse_keypoints(fields["keypoints"]) if given("keypoints") else None,
        mask=parse_mask(fields["mask"]) if given("mask") else None,
    )


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
        size=DEFAULT_SIZE if get("size") is None else parse_int("size", get("size"), *SIZE_RANGE),
        fps=DEFAULT_FPS if get("fps") is None else parse_int("fps", get("fps"), *FPS_RANGE),
        keypoints=figure.keypoints,
        bbox=figure.bbox,
        mask=figure.mask,
        format=parse_format(get("format")) if given("format") else DEFAULT_FORMAT,
        background=parse_background(get("background")) if given("background")
        else DEFAULT_BACKGROUND,
    )  # fmt: skip


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
    start = (
        parse_seconds("start", fields["start"]) if fields.get("start") not in (None, "") else None
    )
    end = parse_seconds("end", fields["end"]) if fields.get("end") not in (None, "") else None
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
