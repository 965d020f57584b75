import shutil
import uuid

import pytest
import requests

from gateway.backends.storage import FileStorage, S3Storage, animation_key, open_storage
from gateway.errors import StorageUnavailable

SHA = "ab" * 32
OPTIONS = {"size": 256, "fps": 15, "keypoints": None, "bbox": None}


def test_keys_depend_on_image_fields_and_motion_only():
    key = animation_key(SHA, OPTIONS, "dab", "v1")
    assert key == animation_key(SHA, dict(reversed(OPTIONS.items())), "dab", "v1")
    assert key.endswith("/v1/dab.gif") and key[:2] == key.split("/")[1][:2]
    others = {
        animation_key("cd" * 32, OPTIONS, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "size": 128}, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "fps": 10}, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "bbox": (1, 2, 3, 4)}, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "keypoints": ((1.0, 2.0),) * 17}, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "models": {"pose": "1.0.a"}}, "dab", "v1"),
        animation_key(SHA, {**OPTIONS, "renderer": "c0ffee"}, "dab", "v1"),
        animation_key(SHA, OPTIONS, "dab", "v2"),
    }
    assert key not in others and len(others) == 8
    # The motions of one request share a folder, so one listing shows them together.
    assert animation_key(SHA, OPTIONS, "zombie", "v7").split("/")[:2] == key.split("/")[:2]


def test_keys_end_in_the_formats_suffix():
    webp = animation_key(SHA, {**OPTIONS, "format": "webp"}, "dab", "v1", ".webp")
    mp4 = animation_key(SHA, {**OPTIONS, "format": "mp4"}, "dab", "v1", ".mp4")
    assert webp.endswith("/v1/dab.webp") and mp4.endswith("/v1/dab.mp4")
    assert len({webp.split("/")[1], mp4.split("/")[1], animation_key(SHA, OPTIONS, "dab", "v1")
                .split("/")[1]}) == 3  # fmt: skip


def test_file_storage_writes_atomically_and_builds_urls(tmp_path):
    storage = FileStorage(tmp_path / "gifs")
    key = animation_key(SHA, OPTIONS, "dab", "v1")
    assert storage.missing() is None and not storage.exists(key)
    storage.put(key, b"GIF89a...", "image/gif")
    assert storage.exists(key) and (tmp_path / "gifs" / key).read_bytes() == b"GIF89a..."
    assert not [p for p in (tmp_path / "gifs").rglob(".tmp-*")]
    assert storage.url(key, "http://h:5000/") == f"http://h:5000/files/{key}"
    assert (
        FileStorage(tmp_path, "https://cdn.x").url(key, "http://h/") == f"https://cdn.x/files/{key}"
    )


def test_file_storage_refuses_keys_outside_its_folder(tmp_path):
    storage = FileStorage(tmp_path / "gifs")
    with pytest.raises(ValueError):
        storage.put("../escape.gif", b"x", "image/gif")
    assert not (tmp_path / "escape.gif").exists()


def test_file_storage_failure_is_storage_unavailable(tmp_path):
    (tmp_path / "gifs").write_text("a file where the folder should be")
    storage = FileStorage(tmp_path / "gifs")
    assert storage.missing() is not None
    with pytest.raises(StorageUnavailable):
        storage.put(animation_key(SHA, OPTIONS, "dab", "v1"), b"x", "image/gif")


def test_file_storage_is_not_ready_below_its_free_space_floor(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    assert FileStorage(tmp_path, min_free_bytes=0).missing() is None
    problem = FileStorage(tmp_path, min_free_bytes=free + 2**40).missing()
    assert "STORAGE_MIN_FREE_BYTES" in problem and str(tmp_path) in problem


def test_open_storage_picks_the_backend(tmp_path):
    assert isinstance(open_storage(f"file://{tmp_path}"), FileStorage)
    assert isinstance(
        open_storage("s3://bucket/prefix", endpoint_url="http://127.0.0.1:1"), S3Storage
    )
    with pytest.raises(ValueError):
        open_storage("s3:///no-bucket")


@pytest.mark.integration
def test_s3_storage_round_trip_with_presigned_urls(s3_server, monkeypatch):
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    bucket = f"gifs-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    storage = open_storage(f"s3://{bucket}/anim", endpoint_url=s3_server.endpoint_url,
                           presign_expiry_s=60)  # fmt: skip
    key = animation_key(SHA, OPTIONS, "dab", "v1")
    assert storage.missing() is None and not storage.exists(key)
    storage.put(key, b"GIF89a-bytes", "image/gif")
    assert storage.exists(key)
    url = storage.url(key, "http://ignored/")
    assert "X-Amz-Signature=" in url and f"/{bucket}/anim/{key}" in url
    reply = requests.get(url, timeout=5)
    assert reply.status_code == 200 and reply.content == b"GIF89a-bytes"
    assert reply.headers["Content-Type"] == "image/gif"
    # Each object keeps the content type it was stored with.
    video = animation_key(SHA, {**OPTIONS, "format": "mp4"}, "dab", "v1", ".mp4")
    storage.put(video, b"\0\0\0\x18ftypisom", "video/mp4")
    reply = requests.get(storage.url(video, "http://ignored/"), timeout=5)
    assert reply.status_code == 200 and reply.headers["Content-Type"] == "video/mp4"
    public = open_storage(f"s3://{bucket}/anim", endpoint_url=s3_server.endpoint_url,
                          public_base_url="https://cdn.example")  # fmt: skip
    assert public.url(key, "http://ignored/") == f"https://cdn.example/anim/{key}"


@pytest.mark.integration
def test_s3_storage_missing_bucket_or_server(s3_server, monkeypatch):
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    storage = open_storage("s3://no-such-bucket", endpoint_url=s3_server.endpoint_url)
    assert "no-such-bucket" in storage.missing()
    with pytest.raises(StorageUnavailable):
        storage.put("aa/k/dab.gif", b"x", "image/gif")
    down = open_storage("s3://b", endpoint_url="http://127.0.0.1:9", timeout_s=1)
    assert down.missing() is not None
    with pytest.raises(StorageUnavailable):
        down.exists("aa/k/dab.gif")


@pytest.mark.integration
def test_s3_readiness_is_a_real_write_whose_answer_is_reused_briefly(s3_server, monkeypatch):
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    bucket = f"late-{uuid.uuid4().hex[:8]}"
    storage = open_storage(f"s3://{bucket}/anim", endpoint_url=s3_server.endpoint_url)
    assert "takes no write" in storage.missing()
    s3_server.create_bucket(bucket)
    assert "takes no write" in storage.missing()  # asked again only after WRITE_CHECK_TTL_S
    monkeypatch.setattr("gateway.backends.storage.WRITE_CHECK_TTL_S", 0.0)
    assert storage.missing() is None
    listed = s3_server.client().list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["anim/.ready-check"]  # the write it made
