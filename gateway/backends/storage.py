"""Where the animations go: a local folder (served by the gateway at /files/) or an S3 bucket.

Keys come from the image's content hash and everything else that decides the file
(`animation_key`: render options, renderer, motion and model versions), so a repeated
request finds its animations already stored, and a changed renderer or model renders anew.
A key ends in its format's suffix (`.gif`, `.webp`, `.mp4`, `.png`, `.zip`; a sprite
sheet's layout `.json`); the content type goes with the object (S3) or is read from that
suffix (/files/).
Writes are atomic (a local file appears complete or not at all; an S3 PUT is
all-or-nothing) and a URL is only handed out for an object that was stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlparse

from animation.formats import LAYOUT_SUFFIX
from gateway.errors import StorageUnavailable

MB = 1024 * 1024
# /ready asks S3 with a real write; answers are reused this long, so probes stay cheap.
WRITE_CHECK_TTL_S = 10.0
WRITE_CHECK_KEY = ".ready-check"


def animation_key(
    image_sha256: str, fields: dict, motion: str, motion_version: str, suffix: str = ".gif"
) -> str:
    """`<2 hex>/<digest>/<motion_version>/<motion><suffix>`, the digest over the image and
    every field given (JSON-able: render options, renderer and model versions) in any order.

    One folder per drawing and options; the file keeps the motion's name for downloads."""
    canonical = json.dumps({"image": image_sha256, **fields}, sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:40]
    return f"{digest[:2]}/{digest}/{motion_version}/{motion}{suffix}"


def layout_key(key: str) -> str:
    """Where a sprite sheet's layout is stored: the sheet's key with `.json` for its suffix
    (stored before the sheet, so a sheet found in storage has its layout)."""
    return key.rsplit(".", 1)[0] + LAYOUT_SUFFIX


class FileStorage:
    """Animations under a local folder; URLs point at the gateway's own /files/ route, which
    serves each with the content type its suffix names."""

    def __init__(
        self, root: str | Path, public_base_url: str | None = None, min_free_bytes: int = 0
    ) -> None:
        self.root = Path(root).resolve()
        self.public_base_url = public_base_url
        self.min_free_bytes = min_free_bytes

    def path_of(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root):
            raise ValueError(f"key {key!r} leaves the storage folder")
        return path

    def exists(self, key: str) -> bool:
        return self.path_of(key).is_file()

    def put(self, key: str, data: bytes, content_type: str) -> None:
        """Store `data` under `key` (its suffix says its type when served; `content_type`
        is for backends that keep it beside the object)."""
        path = self.path_of(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(tmp, path)  # readers see the whole file or none
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            raise StorageUnavailable(f"could not store the animation: {exc.strerror}") from exc

    def url(self, key: str, host_url: str) -> str:
        base = self.public_base_url or host_url.rstrip("/")
        return f"{base}/files/{quote(key)}"

    def missing(self) -> str | None:
        """Why storage cannot take a write now (no folder, read-only, too little space), or None."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(self.root).free  # what this (non-root) user may fill
        except OSError as exc:
            return f"storage folder {self.root}: {exc.strerror}"
        if not os.access(self.root, os.W_OK | os.X_OK):
            return f"storage folder {self.root} is not writable"
        if free < self.min_free_bytes:
            return (f"storage folder {self.root} has {free / MB:.1f} MB free, less than "
                    f"STORAGE_MIN_FREE_BYTES ({self.min_free_bytes / MB:.1f} MB)")  # fmt: skip
        return None


class S3Storage:
    """Animations in `s3://bucket/prefix`, each with its content type; presigned GET URLs unless PUBLIC_BASE_URL is set.

    Credentials come from the standard AWS chain (environment, profile, instance role).
    """

    def __init__(
        self,
        url: str,
        endpoint_url: str | None,
        public_base_url: str | None,
        presign_expiry_s: int,
        timeout_s: float,
    ) -> None:
        import boto3
        from botocore.config import Config as BotoConfig

        parsed = urlparse(url)
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.public_base_url = public_base_url
        self.presign_expiry_s = presign_expiry_s
        self.client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            config=BotoConfig(
                connect_timeout=min(timeout_s, 3.0),
                read_timeout=timeout_s,
                retries={"max_attempts": 2, "mode": "standard"},
                signature_version="s3v4",
                s3={"addressing_style": "path" if endpoint_url else "auto"},
                max_pool_connections=32,
            ),
        )
        from botocore.exceptions import BotoCoreError, ClientError

        self._errors = (BotoCoreError, ClientError)
        self._write_check: tuple[float, str | None] = (-WRITE_CHECK_TTL_S, None)

    def _object(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._object(key))
            return True
        except self._errors as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code in ("404", "NoSuchKey", "NotFound"):
                return False
            self._write_check = (-WRITE_CHECK_TTL_S, None)  # /ready asks again
            raise StorageUnavailable(f"storage lookup failed: {exc}") from exc

    def put(self, key: str, data: bytes, content_type: str) -> None:
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self._object(key), Body=data, ContentType=content_type,
                CacheControl="public, max-age=31536000, immutable",
            )  # fmt: skip
        except self._errors as exc:
            self._write_check = (-WRITE_CHECK_TTL_S, None)  # /ready asks again
            raise StorageUnavailable(f"could not store the animation: {exc}") from exc

    def url(self, key: str, host_url: str) -> str:
        if self.public_base_url:
            return f"{self.public_base_url}/{quote(self._object(key))}"
        return self.client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": self._object(key)},
            ExpiresIn=self.presign_expiry_s,
        )

    def missing(self) -> str | None:
        """Why the bucket cannot take a write, or None: a tiny PUT under the prefix, whose
        answer is reused for WRITE_CHECK_TTL_S (probes come every few seconds)."""
        checked_at, problem = self._write_check
        if time.monotonic() - checked_at < WRITE_CHECK_TTL_S:
            return problem
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._object(WRITE_CHECK_KEY), Body=b"")
            problem = None
        except self._errors as exc:
            problem = f"bucket {self.bucket} takes no write: {exc}"
        self._write_check = (time.monotonic(), problem)
        return problem


Storage = FileStorage | S3Storage


def open_storage(
    url: str,
    *,
    endpoint_url: str | None = None,
    public_base_url: str | None = None,
    presign_expiry_s: int = 86400,
    timeout_s: float = 10.0,
    min_free_bytes: int = 0,
) -> Storage:
    """The backend STORAGE_URL names: `file://PATH` or `s3://bucket/prefix`."""
    if url.startswith("file://"):
        return FileStorage(url.removeprefix("file://"), public_base_url, min_free_bytes)
    if url.startswith("s3://") and urlparse(url).netloc:
        return S3Storage(url, endpoint_url, public_base_url, presign_expiry_s, timeout_s)
    raise ValueError(f"STORAGE_URL must be file://PATH or s3://bucket/prefix, got {url!r}")
