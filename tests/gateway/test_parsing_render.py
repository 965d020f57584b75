"""The output format, its background, and a motion of the client's own (a `bvh` part)."""

import io

import pytest
from werkzeug.datastructures import FileStorage
from werkzeug.test import encode_multipart

from animation.bvh import UPLOAD_LIMITS
from gateway.errors import BadRequest, InvalidMotion, MotionTooLarge, UnknownMotion
from gateway.web.options import CUSTOM_MOTION, motion_name
from gateway.web.requests import parse_animate_request
from gateway.web.upload import Upload, read_upload

KNOWN = ["dab", "jumping", "wave_hello", "zombie"]
DEFAULT = ("dab", "jumping")
IMAGE = b"\x89PNG fake image bytes"
BVH = b"HIERARCHY\nROOT Hips\n{...}\n"  # parsed later, in a render worker


def job(fields=None, query=None, bvh=None, filename="walk.bvh"):
    files = {} if bvh is None else {"bvh": bvh}
    names = {} if bvh is None else {"bvh": filename}
    upload = Upload(IMAGE, dict(fields or {}), files, names)
    return parse_animate_request(upload, dict(query or {}), KNOWN, DEFAULT)


def test_format_defaults_to_gif_and_goes_into_suffix_content_type_and_key_fields():
    options = job().options
    assert (options.format, options.suffix, options.content_type) == ("gif", ".gif", "image/gif")
    webp = job({"format": "webp"}).options
    assert (webp.suffix, webp.content_type) == (".webp", "image/webp")
    mp4 = job(query={"format": "MP4 "}).options
    assert (mp4.format, mp4.suffix, mp4.content_type) == ("mp4", ".mp4", "video/mp4")
    assert webp.render_fields()["format"] == "webp"
    assert webp.render_fields() != options.render_fields()


def test_background_counts_only_where_the_format_shows_it():
    red_mp4 = job({"format": "mp4", "background": "#ff0000"}).options
    assert red_mp4.background == (255, 0, 0)
    assert red_mp4.render_fields() != job({"format": "mp4"}).options.render_fields()
    # GIF and WebP keep their transparency: a background changes neither file nor key.
    red_gif = job({"background": "#ff0000"}).options
    assert red_gif.render_fields() == job().options.render_fields()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"format": "avi"}, "choose one of gif, webp, mp4"),
        ({"format": 3}, "format"),
        ({"background": "blue"}, "#rrggbb"),
        ({"background": "#12345"}, "#rrggbb"),
    ],
)
def test_bad_format_or_background(fields, message):
    with pytest.raises(BadRequest, match=message):
        job(fields)


def test_uploaded_motion_alone_unless_motions_are_named():
    alone = job(bvh=BVH)
    assert alone.options.motions == () and alone.motions == ("walk",)
    assert alone.motion_upload.data == BVH and alone.motion_upload.source == "walk.bvh"
    both = job({"motions": "zombie"}, bvh=BVH)
    assert both.motions == ("zombie", "walk")
    assert job().motion_upload is None and job().motions == DEFAULT


@pytest.mark.parametrize(
    "filename, name",
    [
        ("walk.bvh", "walk"),
        ("Zombie Walk.BVH", "Zombie_Walk"),
        ("C:\\mocap\\take-01.bvh", "take-01"),
        ("../../etc/passwd", "passwd"),
        ("..bvh", CUSTOM_MOTION),
        ("élan.bvh", "lan"),
        ("___.bvh", CUSTOM_MOTION),
        ("x" * 100 + ".bvh", "x" * 64),
    ],
)
def test_motion_name_is_a_safe_stem(filename, name):
    assert motion_name(filename) == name


def test_a_bvh_part_without_a_name_or_as_a_json_string_is_custom():
    assert job(bvh=BVH, filename="").motions == (CUSTOM_MOTION,)
    as_text = parse_animate_request(Upload(IMAGE, {"bvh": BVH.decode()}), {}, KNOWN, DEFAULT)
    assert as_text.motions == (CUSTOM_MOTION,) and as_text.motion_upload.data == BVH


def test_the_part_and_its_file_name_come_through_multipart():
    boundary, body = encode_multipart(
        {
            "image": FileStorage(io.BytesIO(IMAGE), "d.png"),
            "bvh": FileStorage(io.BytesIO(BVH), "Jumping Jack.bvh"),
            "format": "webp",
        },
        boundary="b0undary",
    )
    upload = read_upload(body, "multipart/form-data", {"boundary": boundary}, 10_000)
    assert upload.filenames == {"bvh": "Jumping Jack.bvh"} and upload.files == {"bvh": BVH}
    request = parse_animate_request(upload, {}, KNOWN, DEFAULT)
    assert request.motions == ("Jumping_Jack",) and request.options.format == "webp"


def test_retarget_options_of_the_upload():
    upload = job(
        {"map": "left_elbow=LeftForeArm, right_elbow=RightForeArm", "up": "Z",
         "start": "1.5", "end": 4},
        bvh=BVH,
    ).motion_upload  # fmt: skip
    assert upload.joint_map == (("left_elbow", "LeftForeArm"), ("right_elbow", "RightForeArm"))
    assert (upload.up, upload.start_s, upload.end_s) == ("z", 1.5, 4.0)
    as_json = job({"map": '{"left_hand": "lhand"}', "up": "-y"}, bvh=BVH).motion_upload
    assert as_json.joint_map == (("left_hand", "lhand"),) and as_json.up == "-y"


def test_the_uploads_version_follows_its_bytes_and_options():
    base = job(bvh=BVH).motion_upload.version()
    assert base == job(bvh=BVH).motion_upload.version()
    others = {
        job(bvh=BVH + b" ").motion_upload.version(),
        job({"start": "1"}, bvh=BVH).motion_upload.version(),
        job({"up": "z"}, bvh=BVH).motion_upload.version(),
        job({"map": "left_hand=lhand"}, bvh=BVH).motion_upload.version(),
    }
    assert base not in others and len(others) == 4


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"map": "left_elbow"}, "role=JOINT"),
        ({"map": "elbow=LeftForeArm"}, "unknown roles"),
        ({"map": "[1, 2]"}, "role=JOINT"),
        ({"up": "w"}, "'up'"),
        ({"start": "soon"}, "'start'"),
        ({"start": "-1"}, "'start'"),
        ({"end": "nan"}, "'end'"),
        ({"start": "3", "end": "2"}, "after 'start'"),
    ],
)
def test_bad_retarget_options(fields, message):
    with pytest.raises(BadRequest, match=message):
        job(fields, bvh=BVH)


def test_the_uploaded_motion_is_not_a_motion_name_to_ask_for():
    with pytest.raises(UnknownMotion, match="'walk'"):
        job({"motions": "walk,dab"}, bvh=BVH)


def test_retarget_options_without_a_bvh_are_refused():
    with pytest.raises(BadRequest, match="map, start apply to an uploaded 'bvh' only"):
        job({"map": "left_hand=lhand", "start": "1"})


def test_uploaded_name_may_not_shadow_a_requested_motion():
    with pytest.raises(BadRequest, match="'zombie'"):
        job({"motions": "zombie"}, bvh=BVH, filename="zombie.bvh")
    assert job({"motions": "dab"}, bvh=BVH, filename="zombie.bvh").motions == ("dab", "zombie")


def test_bvh_size_is_checked_first_and_empty_is_invalid():
    with pytest.raises(MotionTooLarge, match=str(UPLOAD_LIMITS.max_bytes)):
        job({"map": "nonsense"}, bvh=b"x" * (UPLOAD_LIMITS.max_bytes + 1))
    with pytest.raises(InvalidMotion, match="empty"):
        job(bvh=b" \n")
