"""Command line: render a motion for a character folder, or list the shipped motions.

    python -m animation render --character DIR (--motion NAME | --bvh FILE [--up y|z])
                               --out OUT.gif [--size 256] [--fps 15] [--max-frames 150]
    python -m animation motions [--json]

Errors are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from animation.character import load_character
from animation.motions import load_motion, load_motion_table
from animation.render import RenderOptions, build_rig, render_motion
from animation.timing import frame_schedule

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage block
        raise SystemExit(_fail(f"{self.prog}: {message}"))


def _fail(message: str) -> int:
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m animation", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    render = commands.add_parser("render", help="render one motion for a character to a GIF")
    render.add_argument("--character", required=True, type=Path, help="annotation folder")
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("--motion", help="a motion from the motion table")
    source.add_argument("--bvh", type=Path, help="any BVH file")
    render.add_argument("--up", choices=("x", "y", "z"), help="up axis of --bvh (default: detect)")
    render.add_argument("--out", required=True, type=Path, help="GIF to write")
    render.add_argument("--size", type=int, default=RenderOptions.size, help="longest side, px")
    render.add_argument("--fps", type=float, default=RenderOptions.fps)
    render.add_argument("--max-frames", type=int, default=RenderOptions.max_frames)
    render.add_argument(
        "--workers", type=int, default=min(2, os.cpu_count() or 1), help="threads for drawing"
    )
    listing = commands.add_parser("motions", help="list the shipped motions")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def _render(args: argparse.Namespace) -> None:
    if args.up and not args.bvh:
        raise ValueError("--up applies to --bvh only")
    options = RenderOptions(
        size=args.size, fps=args.fps, max_frames=args.max_frames, workers=args.workers
    )
    character = load_character(args.character)
    motion = load_motion(args.bvh if args.bvh else args.motion, up=args.up)
    gif = render_motion(build_rig(character), motion, options)
    # Write beside the target and rename, so a failure never leaves half a GIF behind.
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(gif)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a GIF is for sharing
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _motions(args: argparse.Namespace) -> None:
    fps = RenderOptions.fps
    rows = []
    for name in load_motion_table():
        motion = load_motion(name)
        times, _ = frame_schedule(motion.duration_s, fps, RenderOptions.max_frames)
        rows.append(
            {
                "name": name,
                "duration_s": round(motion.duration_s, 3),
                "frames": len(times),
                "description": motion.spec.description,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(
            f"{row['name']:<14} {row['duration_s']:6.2f} s  {row['frames']:4d} frames  {row['description']}"
        )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        (_render if args.command == "render" else _motions)(args)
    except (ValueError, OSError) as exc:  # bad folder, unknown motion, malformed BVH, ...
        return _fail(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
