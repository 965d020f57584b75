"""Where the gateway's motions come from: the shipped table, MOTIONS_DIR, and uploads
(read in a render worker by rendering.tasks.read_motion, whose library errors the gateway
answers as the API's). Unit tests: no server."""

import pickle
import shutil

import pytest

from animation.bvh import UPLOAD_LIMITS, BVHError, BVHLimitError
from animation.motions import MotionError, load_motion_table, motion_table
from gateway.config import Config, ConfigError
from gateway.errors import InvalidMotion, MotionTooLarge, from_library
from gateway.rendering import tasks
from gateway.rendering.catalogue import MotionCatalogue
from gateway.web.requests import MotionUpload
from tests.support.motion_files import (
    CONVENTIONS,
    convention,
    frames_only,
    lengthened,
    with_bad_number,
)


def upload(data: bytes, **options) -> MotionUpload:
    return MotionUpload(name="walk", data=data, **options)


def read_motion(motion: MotionUpload):
    """The task, and what the gateway answers for the library's errors it raises."""
    try:
        return tasks.read_motion(motion)
    except (BVHError, MotionError) as exc:
        raise from_library(exc) from None


def test_an_upload_is_read_with_its_options():
    whole = read_motion(upload(convention("mixamo_walk")))
    assert whole.name == "walk" and whole.duration_s == pytest.approx(2.2, abs=0.01)
    part = read_motion(upload(convention("mixamo_walk"), start_s=0.5, end_s=1.5, up="y"))
    assert part.duration_s == pytest.approx(1.0, abs=0.02) and part.up == "y"


def test_a_malformed_upload_names_its_line():
    data, line = with_bad_number(convention("cmu_walk"))
    with pytest.raises(InvalidMotion, match=rf"^walk\.bvh:{line}: .*'oops'"):
        read_motion(upload(data))


def test_an_upload_without_limbs_says_what_is_missing():
    with pytest.raises(InvalidMotion, match="cannot find the joints for .*left_elbow"):
        read_motion(upload(frames_only(10)))
    # The map names a joint the file lacks: still the client's error, not a crash.
    with pytest.raises(InvalidMotion):
        read_motion(upload(convention("cmu_walk"), joint_map=(("left_elbow", "Nowhere"),)))
    # Joint names of any length come back in the message, which stays short.
    long_names = frames_only(10).replace(b"ROOT Hips", b"ROOT " + b"H" * 100_000)
    with pytest.raises(InvalidMotion) as refused:
        read_motion(upload(long_names))
    assert len(refused.value.message) <= 2003 and refused.value.message.endswith("...")


@pytest.mark.parametrize(
    "data, limit",
    [(frames_only(UPLOAD_LIMITS.max_frames + 1), "frames"),
     (b" " * (UPLOAD_LIMITS.max_bytes + 1), "bytes")],
)  # fmt: skip
def test_an_upload_past_a_limit_is_too_large(data, limit):
    with pytest.raises(MotionTooLarge, match=f"limit on {limit}"):
        read_motion(upload(data))


def test_the_errors_cross_the_worker_boundary():
    # A render worker pickles what a task raises; the gateway must get the same error back.
    error = pickle.loads(pickle.dumps(InvalidMotion("walk.bvh:3: bad")))
    assert type(error) is InvalidMotion and error.status == 400 and error.code == "invalid_motion"
    assert pickle.loads(pickle.dumps(MotionTooLarge("x"))).status == 413
    # The task raises the library's errors: they cross it whole, with what they carry.
    limit = pickle.loads(pickle.dumps(BVHLimitError("walk.bvh: 9 frames", "frames", 4)))
    assert type(limit) is BVHLimitError and (limit.limit, limit.line) == ("frames", 4)
    assert str(from_library(limit)) == "walk.bvh: 9 frames (limit on frames)"


@pytest.fixture
def motions_dir(tmp_path):
    folder = tmp_path / "motions"
    folder.mkdir()
    shutil.copy(CONVENTIONS / "rokoko_zombie.bvh", folder / "shamble.bvh")
    (folder / "shamble.yaml").write_text("description: a slow zombie walk\n")
    (folder / "long_dance.bvh").write_bytes(lengthened(convention("rokoko_dance"), 4))
    return folder


def test_motions_dir_joins_the_shipped_table(motions_dir):
    table = motion_table(motions_dir)
    assert list(table) == [*load_motion_table(), "long_dance", "shamble"]
    assert motion_table(None) == load_motion_table()


def test_the_catalogue_says_what_a_long_clip_loses(motions_dir):
    catalogue = MotionCatalogue((), motions_dir)
    rows = {row["name"]: row for row in catalogue.summary}
    assert rows["shamble"]["description"] == "a slow zombie walk"
    assert rows["shamble"]["cut_s"] == 0 and rows["shamble"]["frames"] == 45
    long = rows["long_dance"]
    assert long["duration_s"] == pytest.approx((4 * 121 - 1) / 30, abs=0.01)  # 4 loops of 121
    assert (long["fps"], long["frames"], long["rendered_s"]) == (15, 150, 10.0)
    assert long["cut_s"] == pytest.approx(long["duration_s"] - 10.0, abs=0.01)
    assert set(catalogue.versions) == set(catalogue.table)


def test_motions_dir_setting(motions_dir, tmp_path):
    assert Config.from_env({"MOTIONS_DIR": str(motions_dir)}).motions_dir == motions_dir
    assert Config.from_env({}).motions_dir is None
    with pytest.raises(ConfigError, match="MOTIONS_DIR .* is not a directory"):
        Config.from_env({"MOTIONS_DIR": str(tmp_path / "nowhere")})
