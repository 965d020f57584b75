"""Reading BVH motion capture files and forward kinematics over all frames at once.

A BVH file is a joint hierarchy (offsets, channels per joint) followed by a table of
channel values, one row per frame. `End Site` blocks become joints with no channels
(named `<parent>_End`), so the tip of the head or of a hand has a position too.

Conventions followed (those of the common writers: Blender, MotionBuilder, CMU):
- a joint's rotation channels compose in the order they are listed (intrinsic), so
  `Zrotation Xrotation Yrotation` means R = Rz @ Rx @ Ry, angles in degrees;
- a joint's position channels replace the matching components of its OFFSET
  (a root with `Xposition ...` moves to those coordinates);
- world = parent_world_rotation @ (local_translation) + parent_world_position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_CHANNEL_CANON = {c.lower(): c for c in CHANNEL_NAMES}
_AXIS = {"X": 0, "Y": 1, "Z": 2}


@dataclass(frozen=True)
class BVHLimits:
    """Size limits, each checked before anything of that size is read or allocated."""

    max_bytes: int = 64 * 1024 * 1024  # a long mocap take is a few MB; refuse anything absurd
    max_joints: int = 512  # End Sites included; a fingered, twist-boned rig has ~150
    max_frames: int = 1_000_000


FILE_LIMITS = BVHLimits()
# For a file a client uploads: 2 minutes at 120 fps of a 60-joint rig is ~8 MB.
UPLOAD_LIMITS = BVHLimits(max_bytes=8 * 1024 * 1024, max_joints=256, max_frames=15_000)
MAX_BVH_BYTES = FILE_LIMITS.max_bytes


class BVHError(ValueError):
    """A malformed BVH file; the message reads `<source>:<line>: what is wrong`.

    `line` is that 1-based line number (None when the problem is the file as a whole).
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line

    def __reduce__(self) -> tuple:  # pickled whole: it crosses process boundaries
        return type(self), (str(self), self.line)


class BVHLimitError(BVHError):
    """A BVH over one of its BVHLimits; `limit` is 'bytes', 'joints' or 'frames'."""

    def __init__(self, message: str, limit: str, line: int | None = None) -> None:
        super().__init__(message, line)
        self.limit = limit

    def __reduce__(self) -> tuple:
        return type(self), (str(self), self.limit, self.line)


def _error(source: str, line: int, what: str) -> BVHError:
    return BVHError(f"{source}:{line}: {what}", line)


@dataclass(frozen=True)
class BVH:
    """A parsed BVH file. Joints are in file order, so a parent precedes its children."""

    names: tuple[str, ...]
    parents: np.ndarray  # (J,) int64, -1 for the root
    offsets: np.ndarray  # (J, 3) float64, in the file's units
    channels: tuple[tuple[str, ...], ...]  # per joint, canonical names from CHANNEL_NAMES
    frame_time: float  # seconds per frame
    motion: np.ndarray  # (F, C) float64, C = total channel count
    source: str = "<bvh>"

    @property
    def n_frames(self) -> int:
        return int(self.motion.shape[0])

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def channel_start(self) -> np.ndarray:
        """Column of each joint's first channel in `motion`."""
        counts = np.array([len(c) for c in self.channels], dtype=np.int64)
        return np.concatenate([[0], np.cumsum(counts)[:-1]])

    def index(self, name: str) -> int:
        return self.names.index(name)

    def is_end_site(self, j: int) -> bool:
        return not self.channels[j] and self.names[j].endswith("_End")

    def children(self, j: int) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.parents == j)]

    @cached_property
    def positions(self) -> np.ndarray:
        """forward_kinematics(self), computed once per BVH (parse_bvh's arrays are read-only)."""
        pos = forward_kinematics(self)
        pos.flags.writeable = False
        return pos

    def trimmed(self, start: int = 0, end: int | None = None) -> BVH:
        """The same skeleton with frames [start, end) only."""
        if start == 0 and (end is None or end >= self.n_frames):
            return self  # keeps the cached positions
        motion = self.motion[start:end]
        if motion.shape[0] < 1:
            raise BVHError(f"{self.source}: frame range [{start}, {end}) selects no frames")
        out = BVH(self.names, self.parents, self.offsets, self.channels, self.frame_time,
                  motion, self.source)  # fmt: skip
        if "positions" in self.__dict__:  # computed already: a slice of it, not computed again
            out.__dict__["positions"] = self.positions[start:end]
        return out


def _tokens(lines: list[str], first: int, last: int) -> list[tuple[str, int]]:
    """Whitespace tokens of lines[first:last] with 1-based line numbers; braces stand alone."""
    out = []
    for i in range(first, last):
        for tok in re.sub(r"([{}])", r" \1 ", lines[i]).split():
            out.append((tok, i + 1))
    return out


def _number(tok: str, line: int, source: str, what: str) -> float:
    try:
        value = float(tok)
    except ValueError:
        raise _error(source, line, f"{what} is not a number: {tok!r}") from None
    if not np.isfinite(value):
        raise _error(source, line, f"{what} is not finite: {tok!r}")
    return value


def _parse_hierarchy(toks: list[tuple[str, int]], source: str, end_line: int, max_joints: int):
    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[tuple[str, ...]] = []
    pos = 0

    def take(expect: str | None = None) -> tuple[str, int]:
        nonlocal pos
        if pos >= len(toks):
            what = f"expected {expect!r}" if expect else "unexpected end of hierarchy"
            raise _error(source, end_line, f"{what} before MOTION (unbalanced braces?)")
        tok, line = toks[pos]
        if expect is not None and tok.upper() != expect.upper():
            raise _error(source, line, f"expected {expect!r}, found {tok!r}")
        pos += 1
        return tok, line

    def joint(parent: int, end_site: bool) -> None:
        # The name runs up to the opening brace (a few writers put spaces in names).
        name_parts = []
        while pos < len(toks) and toks[pos][0] != "{":
            name_parts.append(take()[0])
        if not end_site and not name_parts:
            raise _error(source, toks[pos - 1][1], "joint without a name")
        name = f"{names[parent]}_End" if end_site else " ".join(name_parts)
        take("{")
        index = len(names)
        if index >= max_joints:  # also bounds the recursion depth
            line = toks[pos - 1][1]
            raise BVHLimitError(
                f"{source}:{line}: more than {max_joints} joints (End Sites included)",
                "joints",
                line,
            )
        names.append(name)
        parents.append(parent)
        offsets.append([0.0, 0.0, 0.0])
        channels.append(())
        seen_offset = False
        while True:
            tok, line = take()
            key = tok.upper()
            if key == "}":
                break
            if key == "OFFSET":
                offsets[index] = [_number(take()[0], line, source, "OFFSET") for _ in range(3)]
                seen_offset = True
            elif key == "CHANNELS" and not end_site:
                count_tok, _ = take()
                count = _number(count_tok, line, source, "channel count")
                if count != int(count) or not 0 <= count <= 6:
                    raise _error(source, line, f"bad channel count {count_tok!r}")
                chans = []
                for _ in range(int(count)):
                    ctok, cline = take()
                    canon = _CHANNEL_CANON.get(ctok.lower())
                    if canon is None:
                        raise _error(source, cline, f"unknown channel {ctok!r}")
                    chans.append(canon)
                if len(set(chans)) != len(chans):
                    raise _error(source, line, f"repeated channel in {' '.join(chans)}")
                channels[index] = tuple(chans)
            elif key == "JOINT" and not end_site:
                joint(index, end_site=False)
            elif key == "END" and not end_site:
                take("Site")
                joint(index, end_site=True)
            else:
                raise _error(source, line, f"unexpected {tok!r} in joint {name!r}")
        if not seen_offset:
            raise _error(source, toks[pos - 1][1], f"joint {name!r} has no OFFSET")

    tok, line = take("ROOT")
    joint(-1, end_site=False)
    if pos < len(toks):
        tok, line = toks[pos]
        raise _error(source, line, f"unexpected {tok!r} after the root joint")
    return names, parents, offsets, channels


def parse_bvh(text: str, source: str = "<bvh>", limits: BVHLimits = FILE_LIMITS) -> BVH:
    """Parse BVH text; anything malformed raises BVHError naming the line, anything over
    `limits` (joints, frames) BVHLimitError."""
    lines = text.splitlines()
    first = next((i for i, s in enumerate(lines) if s.strip()), None)
    if first is None or lines[first].strip().upper() != "HIERARCHY":
        raise _error(source, (first or 0) + 1, "expected 'HIERARCHY'")
    motion_at = next((i for i, s in enumerate(lines) if s.strip().upper() == "MOTION"), None)
    if motion_at is None:
        raise _error(source, len(lines), "no MOTION section (truncated file?)")
    names, parents, offsets, channels = _parse_hierarchy(
        _tokens(lines, first + 1, motion_at), source, motion_at + 1, limits.max_joints
    )

    # MOTION header: "Frames: N" and "Frame Time: t", then one row per frame.
    header = {}
    i = motion_at + 1
    for key in ("frames", "frame time"):
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines):
            raise _error(source, i, f"missing '{key.title()}:' line (truncated file?)")
        label, _, value = lines[i].partition(":")
        if label.strip().lower() != key:
            found = lines[i][:40]
            raise _error(source, i + 1, f"expected '{key.title()}:', found {found!r}")
        header[key] = (_number(value.strip(), i + 1, source, key), i + 1)
        i += 1
    n_frames, frames_line = header["frames"]
    frame_time, time_line = header["frame time"]
    if n_frames != int(n_frames) or n_frames < 1:
        raise _error(source, frames_line, "frame count must be a positive integer")
    if n_frames > limits.max_frames:
        raise BVHLimitError(
            f"{source}:{frames_line}: {int(n_frames)} frames, more than the limit of "
            f"{limits.max_frames}", "frames", frames_line
        )  # fmt: skip
    if frame_time <= 0:
        raise _error(source, time_line, "frame time must be positive")
    motion = _frame_table(lines, i, int(n_frames), sum(len(c) for c in channels), source)
    arrays = np.array(parents, dtype=np.int64), np.array(offsets, dtype=np.float64), motion
    for a in arrays:  # shared through caches: nobody may change them in place
        a.flags.writeable = False
    return BVH(
        names=tuple(names),
        parents=arrays[0],
        offsets=arrays[1],
        channels=tuple(channels),
        frame_time=float(frame_time),
        motion=motion,
        source=source,
    )


def _frame_table(lines: list[str], first: int, n_frames: int, n_channels: int, source: str):
    """(n_frames, n_channels) float64 from the rows after the MOTION header.

    All rows convert in one call; only when that fails are they walked one by one, to
    name the line that is wrong.
    """
    rows = [(k + 1, s) for k, s in enumerate(lines[first:], start=first) if s.strip()]
    if len(rows) < n_frames:
        raise _error(
            source, len(lines), f"{len(rows)} frame rows, header says {n_frames} (truncated?)"
        )
    if len(rows) > n_frames:
        raise _error(source, rows[n_frames][0], f"more frame rows than 'Frames: {n_frames}'")
    values = " ".join(row for _, row in rows).split()
    try:
        if len(values) != n_frames * n_channels:
            raise ValueError("count")
        motion = np.array(values, dtype=np.float64).reshape(n_frames, n_channels)
    except ValueError:
        for f, (line_no, row) in enumerate(rows):
            row_values = row.split()
            if len(row_values) != n_channels:
                raise _error(
                    source,
                    line_no,
                    f"frame {f} has {len(row_values)} values, expected {n_channels}",
                ) from None
            try:
                np.array(row_values, dtype=np.float64)
            except ValueError:
                bad = next(v for v in row_values if not _is_float(v))
                raise _error(source, line_no, f"not a number in frame {f}: {bad!r}") from None
        raise AssertionError("a row failed as a block but not alone") from None  # unreachable
    if not np.all(np.isfinite(motion)):
        bad_row = int(np.flatnonzero(~np.all(np.isfinite(motion), axis=1))[0])
        raise _error(source, rows[bad_row][0], f"non-finite value in frame {bad_row}")
    return motion


def parse_bvh_bytes(
    data: bytes, source: str = "<upload>", limits: BVHLimits = UPLOAD_LIMITS
) -> BVH:
    """Parse a BVH file's bytes (e.g. an upload) within `limits`.

    More than `limits.max_bytes` raises BVHLimitError(limit='bytes') before anything is
    decoded; text is UTF-8 (a byte-order mark is dropped), or Latin-1 when it is not UTF-8.
    Everything else as parse_bvh: BVHError naming the line, BVHLimitError for joints/frames.
    """
    if len(data) > limits.max_bytes:
        raise BVHLimitError(
            f"{source}: {len(data)} bytes, more than the limit of {limits.max_bytes}", "bytes"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_bvh(text, source=source, limits=limits)


def _is_float(s: str) -> bool:
    try:
        np.float64(s)  # what np.array(..., dtype=float64) accepts
    except ValueError:
        return False
    return True


def load_bvh(path: str | Path, limits: BVHLimits = FILE_LIMITS) -> BVH:
    """Read and parse a BVH file; unreadable or malformed files raise BVHError."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise BVHLimitError(
                f"{path}: {size} bytes, more than the limit of {limits.max_bytes}", "bytes"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise BVHError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return parse_bvh_bytes(data, source=str(path), limits=limits)


def axis_rotations(axis: int, degrees: np.ndarray) -> np.ndarray:
    """(F, 3, 3) rotation matrices about one coordinate axis."""
    a = np.radians(degrees)
    c, s = np.cos(a), np.sin(a)
    m = np.zeros((a.shape[0], 3, 3))
    i, j = (axis + 1) % 3, (axis + 2) % 3  # cyclic, so that Ry has +sin at [0, 2]
    m[:, axis, axis] = 1.0
    m[:, i, i] = c
    m[:, j, j] = c
    m[:, j, i] = s
    m[:, i, j] = -s
    return m


def local_transforms(bvh: BVH) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame local rotations (F, J, 3, 3) and translations (F, J, 3) of every joint.

    All rotation channels of the clip become matrices in one batched construction; a
    joint's first, second and third rotations are then multiplied in for all joints at once.
    """
    n_frames, n_joints = bvh.n_frames, len(bvh.names)
    trans = np.broadcast_to(bvh.offsets, (n_frames, n_joints, 3)).copy()
    slot_joint, slot_index, slot_axis, slot_column = [], [], [], []
    for j, (chans, start) in enumerate(zip(bvh.channels, bvh.channel_start, strict=True)):
        rotations = [(k, c) for k, c in enumerate(chans) if c.endswith("rotation")]
        if len(rotations) > 3:
            raise BVHError(f"{bvh.source}: joint {bvh.names[j]!r} has more than 3 rotations")
        for slot, (k, chan) in enumerate(rotations):
            slot_joint.append(j)
            slot_index.append(slot)
            slot_axis.append(_AXIS[chan[0]])
            slot_column.append(start + k)
        for k, chan in enumerate(chans):
            if chan.endswith("position"):
                trans[:, j, _AXIS[chan[0]]] = bvh.motion[:, start + k]
    rot = np.broadcast_to(np.eye(3), (n_frames, n_joints, 3, 3)).copy()
    if not slot_joint:
        return rot, trans
    angles = np.radians(bvh.motion[:, slot_column])  # (F, S)
    c, s = np.cos(angles), np.sin(angles)
    axis = np.array(slot_axis)
    i, k = (axis + 1) % 3, (axis + 2) % 3  # cyclic, so that Ry has +sin at [0, 2]
    cols = np.arange(len(slot_axis))
    m = np.zeros((n_frames, len(slot_axis), 3, 3))
    m[:, cols, axis, axis] = 1.0
    m[:, cols, i, i] = c
    m[:, cols, k, k] = c
    m[:, cols, k, i] = s
    m[:, cols, i, k] = -s
    slot_joint, slot_index = np.array(slot_joint), np.array(slot_index)
    for slot in range(3):  # R = R_first @ R_second @ R_third, in the listed order
        pick = np.flatnonzero(slot_index == slot)
        joints = slot_joint[pick]
        rot[:, joints] = m[:, pick] if slot == 0 else _mul33(rot[:, joints], m[:, pick])
    return rot, trans


def _mul33(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for stacks of 3x3 matrices, written out: matmul is slow on tiny matrices."""
    return (
        a[..., :, 0, None] * b[..., None, 0, :]
        + a[..., :, 1, None] * b[..., None, 1, :]
        + a[..., :, 2, None] * b[..., None, 2, :]
    )


def _depth_levels(parents: np.ndarray) -> list[np.ndarray]:
    """Joints grouped by depth below the root, shallowest first."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for j, p in enumerate(parents):  # parents precede children
        depth[j] = depth[p] + 1 if p >= 0 else 0
    return [np.flatnonzero(depth == d) for d in range(depth.max() + 1)]


def world_transforms(bvh: BVH) -> tuple[np.ndarray, np.ndarray]:
    """World rotations (F, J, 3, 3) and positions (F, J, 3) of every joint in every frame.

    Loops over depth levels of the hierarchy only (about ten), each step vectorised over
    all frames and all joints at that depth.
    """
    rot, trans = local_transforms(bvh)
    world_rot = np.empty_like(rot)
    world_pos = np.empty_like(trans)
    for level in _depth_levels(bvh.parents):
        parent = bvh.parents[level]
        if parent[0] < 0:
            world_rot[:, level] = rot[:, level]
            world_pos[:, level] = trans[:, level]
            continue
        parent_rot = world_rot[:, parent]
        world_rot[:, level] = _mul33(parent_rot, rot[:, level])
        world_pos[:, level] = world_pos[:, parent] + (parent_rot * trans[:, level, None, :]).sum(-1)
    return world_rot, world_pos


def forward_kinematics(bvh: BVH) -> np.ndarray:
    """World positions (F, J, 3) of every joint in every frame, in the file's units."""
    return world_transforms(bvh)[1]


def rest_positions(bvh: BVH) -> np.ndarray:
    """World positions (J, 3) of the rest pose: offsets only, no rotation, root at its OFFSET."""
    pos = np.zeros((len(bvh.names), 3))
    for j, p in enumerate(bvh.parents):
        pos[j] = bvh.offsets[j] + (pos[p] if p >= 0 else 0.0)
    return pos


def format_bvh(bvh: BVH, decimals: int = 4) -> str:
    """BVH text for `bvh`; parse_bvh(format_bvh(b)) reproduces b to `decimals` places."""
    out = ["HIERARCHY"]

    def num(v: float) -> str:
        s = f"{v:.{decimals}f}"
        return "0." + "0" * decimals if s == "-0." + "0" * decimals else s

    def write(j: int, depth: int) -> None:
        pad = "\t" * depth
        if bvh.is_end_site(j):
            out.append(f"{pad}End Site")
        else:
            out.append(f"{pad}{'ROOT' if bvh.parents[j] < 0 else 'JOINT'} {bvh.names[j]}")
        out.append(f"{pad}{{")
        out.append(f"{pad}\tOFFSET {' '.join(num(v) for v in bvh.offsets[j])}")
        if not bvh.is_end_site(j):
            chans = bvh.channels[j]
            out.append(f"{pad}\tCHANNELS {len(chans)} {' '.join(chans)}".rstrip())
        for c in bvh.children(j):
            write(c, depth + 1)
        out.append(f"{pad}}}")

    write(0, 0)
    out.append("MOTION")
    out.append(f"Frames: {bvh.n_frames}")
    out.append(f"Frame Time: {bvh.frame_time:.6f}")
    out.extend(" ".join(num(v) for v in row) for row in bvh.motion)
    return "\n".join(out) + "\n"
