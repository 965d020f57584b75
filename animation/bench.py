"""Benchmark: `python -m animation.bench [--runs 5]`.

Renders the project's generated character (`testchar.draw_character`) with

* every shipped motion at the defaults (256 px, 15 fps, one thread, as a gateway worker
  does), setup included: target at most 0.4 CPU-seconds for the four together;
* the same work AnimatedDrawings does for its `dab` example: 339 frames at 500x500 (dab's
  4 s at 84.75 fps), setup included and the GIF written to disk, two threads: target at
  most 1.1 s wall (AnimatedDrawings: 56 s on a machine of this kind).

Each case runs in a fresh process, so its peak RSS (target < 300 MB) is its own. Prints
per-stage CPU medians over the runs (rasterising and encoding overlap on threads, so
stages are CPU, not wall), wall and CPU totals, and the ratios to the targets. On a shared
machine wall times are noisy; CPU-seconds are steadier.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from animation.character import load_character, save_character
from animation.motions import default_motions, load_motion, load_motion_table
from animation.render import RenderOptions, build_rig, render_motion_timed
from animation.testchar import draw_character
from animation.timing import frame_schedule

SAME_WORK = {"motion": "dab", "frames": 339, "size": 500}
TARGETS = {"default_cpu_s": 0.4, "same_work_wall_s": 1.1, "peak_rss_mb": 300.0}
AD_SAME_WORK_S = 56.0
STAGES = ("load", "mesh", "arap_build", "retarget", "solve", "rasterise", "encode")


def _run_case(case: str, character_dir: Path, out_dir: Path) -> dict:
    """One timed run of a case in this process: stage seconds, wall and CPU totals."""
    timings: dict[str, float] = {}
    wall0, cpu0, load0 = time.perf_counter(), time.process_time(), time.thread_time()
    character = load_character(character_dir)
    if case == "default":
        names = [n for n in default_motions() if n in load_motion_table()]
        motions = [load_motion(n) for n in names]
        options = RenderOptions()
    else:
        motions = [load_motion(SAME_WORK["motion"])]
        fps = SAME_WORK["frames"] / motions[0].duration_s
        options = RenderOptions(
            size=SAME_WORK["size"], fps=fps, max_frames=SAME_WORK["frames"], workers=2
        )
    timings["load"] = time.thread_time() - load0
    rig = build_rig(character, timings)
    frames = 0
    for motion in motions:
        gif = render_motion_timed(rig, motion, options, timings)
        (out_dir / f"{case}_{motion.name}.gif").write_bytes(gif)
        frames += len(frame_schedule(motion.duration_s, options.fps, options.max_frames)[0])
    return {
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "frames": frames,
        "motions": [m.name for m in motions],
        "stages": timings,
    }


def _child(case: str, runs: int) -> None:
    """Entry point of a case's process: print its runs and peak RSS as JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        character_dir = Path(tmp) / "character"
        save_character(draw_character(seed=0), character_dir)
        results = [_run_case(case, character_dir, Path(tmp)) for _ in range(runs)]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"runs": results, "peak_rss_mb": peak_mb}))


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _report(case: str, data: dict) -> dict[str, float]:
    runs = data["runs"]
    print(
        f"\n{case}: {', '.join(runs[0]['motions'])}; {runs[0]['frames']} frames; {len(runs)} runs"
    )
    print("  stage        CPU, threads summed (median)")
    for stage in STAGES:
        values = [r["stages"].get(stage, 0.0) for r in runs]
        print(f"  {stage:<11} {1000 * statistics.median(values):8.1f} ms")
    summary = {
        "wall_s": _median(runs, "wall_s"),
        "cpu_s": _median(runs, "cpu_s"),
        "peak_rss_mb": data["peak_rss_mb"],
    }
    print(
        f"  total       {1000 * summary['wall_s']:8.1f} ms wall, "
        f"{1000 * summary['cpu_s']:.1f} ms CPU; peak RSS {summary['peak_rss_mb']:.0f} MB"
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m animation.bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--case", choices=("default", "same_work"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        _child(args.case, args.runs)
        return 0
    summaries = {}
    for case in ("default", "same_work"):
        cmd = [sys.executable, "-m", "animation.bench", "--case", case, "--runs", str(args.runs)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        summaries[case] = _report(case, json.loads(out.strip().splitlines()[-1]))
    default, same = summaries["default"], summaries["same_work"]
    peak = max(default["peak_rss_mb"], same["peak_rss_mb"])
    print("\nratios (ours / target; <= 1 meets it):")
    print(
        f"  default motions CPU    {default['cpu_s']:.3f} s / {TARGETS['default_cpu_s']} s"
        f" = {default['cpu_s'] / TARGETS['default_cpu_s']:.2f}"
    )
    print(
        f"  same-work wall         {same['wall_s']:.3f} s / {TARGETS['same_work_wall_s']} s"
        f" = {same['wall_s'] / TARGETS['same_work_wall_s']:.2f}"
        f"  (AnimatedDrawings {AD_SAME_WORK_S:.0f} s: {AD_SAME_WORK_S / same['wall_s']:.0f}x faster)"
    )
    print(
        f"  same-work CPU          {same['cpu_s']:.3f} s"
        f" ({AD_SAME_WORK_S / same['cpu_s']:.0f}x less than AnimatedDrawings' wall)"
    )
    print(
        f"  peak RSS               {peak:.0f} MB / {TARGETS['peak_rss_mb']:.0f} MB = {peak / TARGETS['peak_rss_mb']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
