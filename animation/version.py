"""Versions of what decides a rendered GIF's pixels, for naming stored renders.

Digests of content, never numbers someone must remember to bump: `renderer_version()`
changes with any source file of this library (rig, mesh, parts, retarget, rasterise, GIF,
segmentation, image decoding), `motion_version(spec)` with a motion's table entry or its
BVH file. A service that keeps renders keyed by these never serves a GIF an older
renderer or motion made.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import cache
from pathlib import Path

from animation.motions import MotionSpec

PACKAGE_DIR = Path(__file__).resolve().parent
DIGEST_CHARS = 16


def _digest(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:DIGEST_CHARS]


@cache
def renderer_version() -> str:
    """A digest of every Python source file of the `animation` package."""
    parts = []
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        parts += [source.relative_to(PACKAGE_DIR).as_posix().encode(), source.read_bytes()]
    return _digest(parts)


def motion_version(spec: MotionSpec) -> str:
    """A digest of a motion's table entry and its BVH file (not where the file lies)."""
    entry = dataclasses.replace(spec, file=Path(spec.file.name))
    return _digest([repr(entry).encode(), spec.file.read_bytes()])
