"""Command line: render a motion for a character folder, or list the shipped motions.

    python -m animation render --character DIR (--motion NAME | --bvh FILE [--up AXIS])
                               --out OUT.gif|.webp|.mp4|.png|.zip
                               [--format gif|webp|mp4|sprites|png]
                               [--size 256] [--fps 15] [--max-frames 150]
                               [--background '#ffffff'] [--map ROLE=JOINT ...]
                               [--start S] [--end S] [--joints-out FILE.json]
                               [--report FILE.json] [--motions-dir FOLDER]
    python -m animation sheet FOLDER --out SHEET.png [--motions dab,jumping,...]
                              [--cell 160] [--motions-dir FOLDER]
    python -m animation motions [--json] [--motions-dir FOLDER]

`--report` writes how far the render bends the drawing out of shape (`distortion`): per
body part its worst local stretch and squash, flipped triangles, spikes (the figure grown
past 1.5x its rest extent beyond what its skeleton does) and frames with a piece torn off.

`sheet` lays out a contact sheet of every annotation folder in FOLDER (or FOLDER itself):
one row a drawing, its `photo.*` if the folder has one, the rest pose, and each motion at
its extremes (the frame farthest from the clip's first and the one most bent out of shape).

`--motions-dir` adds every `*.bvh` of FOLDER to the motion table (with an optional
`NAME.yaml` beside each), as the gateway's MOTIONS_DIR does: a bad file fails here too.

The format is `--format`, else the suffix of `--out` (no suffix: GIF); a suffix of another
known format than `--format` is an error, so GIF bytes never land under an .mp4 name.
A clip longer than --max-frames at --fps is cut to its first --max-frames frames, and a
`note:` line on stderr says so. Errors are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

from animation.files import write_atomic
from animation.formats import (
    DEFAULT_FORMAT,
    FORMATS,
    LAYOUT_SUFFIX,
    format_for_path,
    parse_colour,
)
from animation.roles import ROLES

# The defaults of `animation.render.RenderOptions`, repeated so that `--help` and the
# motion table need not import the renderer (numpy, scipy, OpenCV: most of a run's start-up).
SIZE, FPS, MAX_FRAMES = 256, 15.0, 150

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
    render.add_argument(
        "--up", type=_up_axis, help="up axis of --bvh: x, y or z, optionally signed "
        "(-y: upside down; default: detect)",
    )  # fmt: skip
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
    render.add_argument(
        "--report", type=Path, metavar="FILE", help="distortion per body part and frame, JSON"
    )
    render.add_argument(
        "--out", required=True, type=Path,
        help="file to write (.gif, .webp, .mp4; .png: a sprite sheet, its layout beside it "
        "as .json; .zip: numbered PNG frames)",
    )  # fmt: skip
    render.add_argument("--size", type=int, default=SIZE, help="longest side, px")
    render.add_argument("--fps", type=float, default=FPS)
    render.add_argument("--max-frames", type=int, default=MAX_FRAMES)
    render.add_argument(
        "--workers", type=int, default=min(2, os.cpu_count() or 1), help="threads for drawing"
    )
    render.add_argument(
        "--format", choices=tuple(FORMATS), help="output format (default: by --out's suffix)"
    )
    render.add_argument(
        "--background", default="#ffffff", help="colour behind the figure in mp4 (#rrggbb)"
    )
    sheet = commands.add_parser("sheet", help="contact sheet: drawings at each motion's extremes")
    sheet.add_argument("folder", type=Path, help="annotation folder, or a folder of them")
    sheet.add_argument("--out", required=True, type=Path, help="PNG to write")
    sheet.add_argument(
        "--motions", default="", help="comma-separated motion names (default: every shipped one)"
    )
    sheet.add_argument("--cell", type=int, default=160, help="cell size, px")
    listing = commands.add_parser("motions", help="list the shipped motions")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    for command in (render, sheet, listing):
        command.add_argument(
            "--motions-dir", type=Path, metavar="FOLDER", help="add every *.bvh in FOLDER"
        )
    return parser


def _table(motions_dir: Path | None) -> dict:
    """The motion table, with the folder's motions when one is given."""
    from animation.motions import motion_table

    return motion_table(motions_dir or None)


def _role_joint(text: str) -> tuple[str, str]:
    role, sep, joint = text.partition("=")
    if not sep or not joint.strip():
        raise argparse.ArgumentTypeError(f"expected ROLE=JOINT, got {text!r}")
    if role.strip() not in ROLES:
        raise argparse.ArgumentTypeError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    return role.strip(), joint.strip()


def _up_axis(text: str) -> str:
    """`--up`: x, y or z, optionally signed, as the API's `up` option takes it."""
    axis = text.strip().lower()
    if len(axis.lstrip("+-")) != 1 or axis.lstrip("+-") not in "xyz" or len(axis) > 2:
        raise argparse.ArgumentTypeError(f"expected x, y or z, optionally signed, got {text!r}")
    return axis.lstrip("+")


def _joined_values(argv: list[str]) -> list[str]:
    """`--up -y` as `--up=-y`: argparse would take `-y` for an option of its own."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--up":
            out[i : i + 2] = [f"--up={out[i + 1]}"]
            break
    return out


def output_format(out: Path, asked: str | None) -> str:
    """The format to write `out` in: `asked`, else by the suffix; ValueError when the two
    disagree or the suffix is not one of ours."""
    by_suffix = format_for_path(out)
    if asked is not None:
        if by_suffix is not None and by_suffix != asked:
            raise ValueError(f"--out {out.name} is a {by_suffix} name but --format is {asked}")
        return asked
    if by_suffix is None and out.suffix:
        suffixes = ", ".join(f.suffix for f in FORMATS.values())
        raise ValueError(f"--out {out.name}: unknown suffix; use {suffixes} or --format")
    return by_suffix or DEFAULT_FORMAT


def _render(args: argparse.Namespace) -> None:
    if args.up and not args.bvh:
        raise ValueError("--up applies to --bvh only")
    fmt = output_format(args.out, args.format)
    background = parse_colour(args.background)
    from animation.character import for_output, load_character
    from animation.joints_out import joints_document, joints_json
    from animation.motions import load_motion
    from animation.render import RenderOptions, build_rig, render_motion

    options = RenderOptions(
        size=args.size,
        fps=args.fps,
        max_frames=args.max_frames,
        workers=args.workers,
        format=fmt,
        background=background,
    )
    character = load_character(args.character)
    motion = load_motion(
        args.bvh if args.bvh else args.motion,
        table=None if args.bvh else _table(args.motions_dir),
        up=args.up,
        joint_map=dict(args.map),
        start_s=args.start,
        end_s=args.end,
    )
    rig = build_rig(for_output(character, options.size), workers=args.workers)
    data = render_motion(rig, motion, options)
    document = joints_document(rig, motion, options) if args.joints_out else None
    report = _report(rig, motion, options) if args.report else None
    # Written beside the target and renamed: a failure never leaves half a file behind.
    if fmt == "sprites":  # the layout first: a sheet on disk always has its layout beside it
        from animation.sprites import layout_of

        layout = json.dumps(layout_of(data), indent=1).encode()
        write_atomic(args.out.with_suffix(LAYOUT_SUFFIX), layout)
    write_atomic(args.out, data)
    if document is not None:
        write_atomic(args.joints_out, joints_json(document))
    if report is not None:
        write_atomic(args.report, json.dumps(report, indent=1).encode())
    note = motion.plan(options.fps, options.max_frames).note()
    if note:
        print(f"note: {note}", file=sys.stderr)


def _report(rig, motion, options) -> dict:
    """The distortion report of `motion` as rendered for `rig` with `options`."""
    from animation.distortion import measure
    from animation.retarget import retarget

    joints = retarget(
        rig.character.skeleton, motion, motion.plan(options.fps, options.max_frames).times_s
    )
    return {"motion": motion.name, **measure(rig, joints, options.size).summary()}


def _sheet(args: argparse.Namespace) -> None:
    from animation.motions import load_motion
    from animation.sheet import folder_sheet

    if not 32 <= args.cell <= 512:
        raise ValueError(f"--cell must be 32..512 px, got {args.cell}")
    table = _table(args.motions_dir)
    names = [n.strip() for n in args.motions.split(",") if n.strip()] or list(table)
    motions = [load_motion(name, table=table) for name in names]
    image, skipped = folder_sheet(args.folder, motions, args.cell)
    for line in skipped:
        print(f"note: left out {line}", file=sys.stderr)
    suffix = args.out.suffix.lower() or ".png"
    data = io.BytesIO()
    image.save(data, format="PNG" if suffix == ".png" else suffix.lstrip(".").upper())
    write_atomic(args.out, data.getvalue())


def _motions(args: argparse.Namespace) -> None:
    from animation.motions import load_motion, motion_summary

    table = _table(args.motions_dir)
    rows = [motion_summary(load_motion(name, table=table), FPS, MAX_FRAMES) for name in table]
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
    args = _parser().parse_args(_joined_values(sys.argv[1:] if argv is None else argv))
    try:
        {"render": _render, "sheet": _sheet, "motions": _motions}[args.command](args)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head` read what it wanted and left: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        return 0
    except (ValueError, OSError, ImportError) as exc:  # bad folder, unknown motion, no PyAV...
        return _fail(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
