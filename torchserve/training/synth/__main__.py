"""Look at the synthetic drawings and time them.

python -m torchserve.training.synth sheet --out sheet.png [--seed 0] [--count 24] [--held-out]
python -m torchserve.training.synth bench [--count 200] [--size 512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from PIL import Image

from . import HELD_OUT_STYLES, STYLE_AXES, generate, generate_batch
from .sheet import contact_sheet

# The per-sample budget training relies on (one core, ~512 px).
BUDGET_MS = 15.0


def _axis_value(text: str) -> tuple[str, str]:
    axis, sep, value = text.partition("=")
    if not sep or axis not in STYLE_AXES or value not in STYLE_AXES[axis]:
        choices = "; ".join(f"{a}: {', '.join(v)}" for a, v in STYLE_AXES.items())
        raise argparse.ArgumentTypeError(f"{text!r} is not AXIS=VALUE of these: {choices}")
    return axis, value


def _styles(args) -> dict:
    only = dict(HELD_OUT_STYLES) if args.held_out else {}
    only.update(args.only)
    exclude = dict(HELD_OUT_STYLES) if args.exclude_held_out else {}
    return {"only": only, "exclude": exclude}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torchserve.training.synth",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("sheet", "write a contact sheet PNG of samples with their labels drawn on"),
        ("bench", "time sample generation and compare with the per-sample budget"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--seed", type=int, default=0, help="first seed")
        p.add_argument("--count", type=int, default=24 if name == "sheet" else 200, help="samples")
        p.add_argument(
            "--size",
            type=int,
            default=None if name == "sheet" else 512,
            help="longer side, px (default: " + ("random 320-1000)" if name == "sheet" else "512)"),
        )
        group = p.add_mutually_exclusive_group()
        group.add_argument("--exclude-held-out", action="store_true", help="training styles only")
        group.add_argument("--held-out", action="store_true", help="held-out styles only")
        p.add_argument(
            "--only",
            type=_axis_value,
            action="append",
            default=[],
            metavar="AXIS=VALUE",
            help="force a style, e.g. --only arms=crossed (repeatable)",
        )
        if name == "sheet":
            p.add_argument("--out", required=True, help="PNG path")
            p.add_argument("--cell", type=int, default=256, help="tile size, px")
            p.add_argument("--columns", type=int, default=6)
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    seeds = range(args.seed, args.seed + args.count)

    if args.command == "sheet":
        samples = generate_batch(seeds, size=args.size, **_styles(args))
        Image.fromarray(contact_sheet(samples, args.cell, args.columns)).save(
            args.out, optimize=True
        )
        print(f"wrote {args.out}: {len(samples)} samples from seed {args.seed}")
        return 0

    import cv2

    cv2.setNumThreads(1)  # the budget is per core
    generate(args.seed, size=args.size)  # warm the cached textures
    # CPU time of this process: the machine is shared, so wall time says more about the
    # neighbours than about the generator.
    times, walls = [], []
    styles = _styles(args)
    for s in seeds:
        t, w = time.process_time(), time.perf_counter()
        generate(s, size=args.size, **styles)
        times.append((time.process_time() - t) * 1000)
        walls.append((time.perf_counter() - w) * 1000)
    med = statistics.median(times)
    mean = statistics.fmean(times)
    print(
        f"{len(times)} samples at {args.size} px, CPU time per sample: median {med:.1f} ms, "
        f"mean {mean:.1f} ms, p95 {sorted(times)[int(0.95 * (len(times) - 1))]:.1f} ms "
        f"(wall median {statistics.median(walls):.1f} ms); "
        f"mean/budget = {mean / BUDGET_MS:.2f} (budget {BUDGET_MS:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
