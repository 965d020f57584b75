"""BVH files for the gateway's tests, made from the project's own convention files
(tests/animation/data/conventions): as they are, broken at a known line, too long, or
lengthened past the frame cap."""

from __future__ import annotations

from pathlib import Path

CONVENTIONS = Path(__file__).resolve().parents[1] / "animation" / "data" / "conventions"


def convention(name: str) -> bytes:
    """e.g. convention("cmu_jumping_jack"): the file's bytes."""
    return (CONVENTIONS / f"{name}.bvh").read_bytes()


def _motion_line(lines: list[bytes]) -> int:
    """0-based index of the `MOTION` line."""
    return next(i for i, line in enumerate(lines) if line.strip() == b"MOTION")


def with_bad_number(data: bytes, frame: int = 5) -> tuple[bytes, int]:
    """The file with one value of frame `frame` made `oops`, and that line's 1-based number."""
    lines = data.split(b"\n")
    index = _motion_line(lines) + 3 + frame  # MOTION, Frames:, Frame Time:, then the frames
    values = lines[index].split()
    values[len(values) // 2] = b"oops"
    lines[index] = b" ".join(values)
    return b"\n".join(lines), index + 1


def lengthened(data: bytes, times: int) -> bytes:
    """The clip played `times` times over, one frame table after another."""
    lines = data.rstrip(b"\n").split(b"\n")
    start = _motion_line(lines)
    frames = [line for line in lines[start + 3 :] if line.strip()]
    header = [*lines[: start + 1], f"Frames: {len(frames) * times}".encode(), lines[start + 2]]
    return b"\n".join(header + frames * times) + b"\n"


def frames_only(n_frames: int) -> bytes:
    """A one-joint file with `n_frames` frames: small in bytes, long in frames."""
    head = (
        "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition Zposition\n"
        "  End Site\n  {\n    OFFSET 0 1 0\n  }\n}\n"
        f"MOTION\nFrames: {n_frames}\nFrame Time: 0.008333\n"
    )
    return head.encode() + b"0 0 0\n" * n_frames
