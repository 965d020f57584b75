"""Command line: render a motion for a character folder, or list the shipped motions.

    python -m animation render --character DIR (--motion NAME | --bvh FILE [--up y|z])
                               --out OUT.gif [--size 256] [--fps 15] [--max-frames 150]
                               [--map ROLE=JOINT ...] [--start S] [--end S]
                               [--joints-out FILE.json]
    python -m animation motions [--json]

Errors are one line on stderr and exit status 2. A clip longer than --max-frames at --fps
is cut to its first --max-frames frames, and a `note:` line on stderr says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from animation.character import load_character
from animation.files import write_atomic
from animation.joints_out import joints_document, joints_json
from animation.motions import load_motion, load_motion_table, motion_summary
from animation.render import RenderOptions, build_rig, render_motion
from animation.roles import ROLES

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
    render.add_argument(
        "--map",
        action="append",
        default=[],
        type=_role_joint,
        metavar="ROLE=JOINT",
        help=f"which BVH joint plays a role the names do not give away; roles: {', '.join(ROLES)}",
    )
    render.add_argument("--start", type=float, metavar="S", help="segment start, seconds")
    render.add_argument("--end", type=float, metavar="S", help="segment end, seconds")
    render.add_argument("--joints-out", type=Path, metavar="FILE", help="2D joints per frame, JSON")
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


def _role_joint(text: str) -> tuple[str, str]:
    role, sep, joint = text.partition("=")
    if not sep or not joint.strip():
        raise argparse.ArgumentTypeError(f"expected ROLE=JOINT, got {text!r}")
    if role.strip() not in ROLES:
        raise argparse.ArgumentTypeError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    return role.strip(), joint.strip()


def _render(args: argparse.Namespace) -> None:
    if args.up and not args.bvh:
        raise ValueError("--up applies to --bvh only")
    options = RenderOptions(
        size=args.size, fps=args.fps, max_frames=args.max_frames, workers=args.workers
    )
    character = load_character(args.character)
    motion = load_motion(
        args.bvh if args.bvh else args.motion,
        up=args.up,
        joint_map=dict(args.map),
        start_s=args.start,
        end_s=args.end,
    )
    rig = build_rig(character)
    gif = render_motion(rig, motion, options)
    document = joints_document(rig, motion, options) if args.joints_out else None
    write_atomic(args.out, gif)
    if document is not None:
        write_atomic(args.joints_out, joints_json(document))
    note = motion.plan(options.fps, options.max_frames).note()
    if note:
        print(f"note: {note}", file=sys.stderr)


def _motions(args: argparse.Namespace) -> None:
    rows = [
        motion_summary(load_motion(name), RenderOptions.fps, RenderOptions.max_frames)
        for name in load_motion_table()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        cut = f"  (cut after {row['rendered_s']:.2f} s)" if row["cut_s"] else ""
        print(
            f"{row['name']:<14} {row['duration_s']:6.2f} s  {row['frames']:4d} frames"
            f"{cut}  {row['description']}"
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
