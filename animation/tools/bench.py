"""Benchmark: `python -m animation.tools.bench [--runs 5] [--real DIR] [--quick] [--shape DIR
[--jitter SIGMA --seeds N]]`.

Four parts, each case in a fresh process so that its peak RSS is its own:

1. the project's generated character (`testchar.draw_character`), in process, per stage:
   every shipped motion at the defaults (256 px, 15 fps, one thread, as a gateway worker
   does), target at most 0.4 CPU-seconds for the four; and the same work as
   AnimatedDrawings' `dab` example (339 frames at 500x500, two threads);
2. the same work on a photographed drawing, `char1` of the real drawings (AnimatedDrawings'
   own example, paper grain and all), run as a user runs it: `python -m animation render
   ... --size 500 --fps 84.75 --max-frames 339 --out dab.gif`, a fresh interpreter each
   run, timed from start to the file written: whole-process wall, CPU (user + system) and
   peak RSS; targets 1.1 s wall (30x AnimatedDrawings side by side), at most the 4,171,362
   bytes of AnimatedDrawings' own GIF, 300 MB;
3. the defaults (256 px, 15 fps, each of the four motions, one CLI run each) for the real
   drawings `char1`..`char4` and for a character built from `gateway/sample_drawing.jpg`
   the way the service builds one (its labelled box grown by the gateway's margin, the
   OpenCV segmentation, the labelled keypoints): bytes per format, and the GIF's ratio to
   the bytes main's renderer wrote before the texture was cleaned (commit a23a430, in
   `TODAY_GIF_BYTES`: target at least 3x smaller) and WebP's ratio to the GIF (target at
   most 0.5). The MP4 is decoded back: frame count and duration.

4. the shape the shipped motions leave the real drawings in (`animation.distortion`): per
   drawing and motion, spike and torn frames, flipped triangles, the head's local scale and
   the torso's worst stretch, against the bounds the tests hold (every clip in bounds).

Prints medians and the ratios to the targets; a missing real-drawing folder is said, not
skipped silently. Wall times on a shared machine are noisy: quote them with the load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from animation.character import Character

REPO = Path(__file__).resolve().parents[2]
REAL_DRAWINGS = REPO.parent / "shared" / "real-dev"
SAMPLE_PHOTO = REPO / "gateway" / "sample_drawing.jpg"
MOTIONS = ("dab", "jumping", "wave_hello", "zombie")
FORMATS = ("gif", "webp", "mp4")
SAME_WORK = {"motion": "dab", "frames": 339, "size": 500, "fps": 84.75}  # dab lasts 4 s
TARGETS = {
    "default_cpu_s": 0.4,
    "same_work_wall_s": 1.1,
    "same_work_gif_bytes": 4_171_362,  # AnimatedDrawings' own dab GIF of char1
    "peak_rss_mb": 300.0,
    "gif_shrink": 3.0,
    "webp_of_gif": 0.5,
}
AD_SAME_WORK_S = 32.5  # AnimatedDrawings' render.py, char1 dab, side by side (issue 12)
# GIF bytes that main's renderer (a23a430, 255-colour median cut of the raw photo) wrote at
# the defaults: python -m animation render --character C --motion M --out M.gif
TODAY_GIF_BYTES = {
    "char1": {"dab": 1286828, "jumping": 640430, "wave_hello": 806717, "zombie": 1110898},
    "char2": {"dab": 896663, "jumping": 437933, "wave_hello": 560693, "zombie": 680081},
    "char3": {"dab": 966230, "jumping": 571920, "wave_hello": 764036, "zombie": 973840},
    "char4": {"dab": 688793, "jumping": 338771, "wave_hello": 433496, "zombie": 552154},
    "sample": {"dab": 578192, "jumping": 278479, "wave_hello": 357690, "zombie": 548906},
}
STAGES = ("load", "mesh", "texture", "retarget", "pose", "rasterise", "encode")


# --- 1. the generated character, in process --------------------------------------------


def _run_case(case: str, character_dir: Path, out_dir: Path) -> dict:
    """One timed run of a case in this process: stage seconds, wall and CPU totals."""
    from animation.character import for_output, load_character
    from animation.motions import default_motions, load_motion, load_motion_table
    from animation.render import RenderOptions, build_rig, render_motion_timed
    from animation.timing import frame_schedule

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
    rig = build_rig(for_output(character, options.size), timings, options.workers)
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
    from animation.character import save_character
    from animation.tools.testchar import draw_character

    with tempfile.TemporaryDirectory() as tmp:
        character_dir = Path(tmp) / "character"
        save_character(draw_character(seed=0), character_dir)
        results = [_run_case(case, character_dir, Path(tmp)) for _ in range(runs)]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"runs": results, "peak_rss_mb": peak_mb}))


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _report_synthetic(case: str, data: dict) -> dict[str, float]:
    runs = data["runs"]
    print(f"\nsynthetic {case}: {', '.join(runs[0]['motions'])}; {runs[0]['frames']} frames")
    stages = ", ".join(
        f"{s} {1000 * statistics.median(r['stages'].get(s, 0.0) for r in runs):.0f}" for s in STAGES
    )
    print(f"  CPU ms per stage (threads summed, median of {len(runs)}): {stages}")
    summary = {
        "wall_s": _median(runs, "wall_s"),
        "cpu_s": _median(runs, "cpu_s"),
        "peak_rss_mb": data["peak_rss_mb"],
    }
    print(
        f"  in process: {summary['wall_s']:.3f} s wall, {summary['cpu_s']:.3f} s CPU; "
        f"peak RSS {summary['peak_rss_mb']:.0f} MB"
    )
    return summary


def bench_synthetic(runs: int) -> None:
    summaries = {}
    for case in ("default", "same_work"):
        cmd = [sys.executable, "-m", "animation.tools.bench", "--case", case, "--runs", str(runs)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        summaries[case] = _report_synthetic(case, json.loads(out.strip().splitlines()[-1]))
    cpu = summaries["default"]["cpu_s"]
    target = TARGETS["default_cpu_s"]
    print(f"  ratio: default motions CPU {cpu:.3f} s / {target} s = {cpu / target:.2f}")


# --- 2. and 3. real drawings, whole process --------------------------------------------


def run_cli(args: list[str]) -> dict[str, float]:
    """`python -m animation ARGS` in a fresh interpreter: wall, CPU (user + system) and
    peak RSS of that process alone (from wait4, not the children's running maximum)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "animation", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"python -m animation {' '.join(args)} failed: {stderr.strip()}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def real_characters(real_dir: Path) -> dict[str, Path]:
    """The humanoid real drawings that are there; says which are missing."""
    found = {}
    for name in ("char1", "char2", "char3", "char4"):
        folder = real_dir / name
        if (folder / "char_cfg.yaml").is_file():
            found[name] = folder
        else:
            print(f"  MISSING: {folder} (real drawing not found; its rows are left out)")
    return found


def build_sample_character(out_dir: Path) -> Path:
    """A character folder from gateway/sample_drawing.jpg built as the service builds one
    without its models (`animation.figure.character_from_photo`): the labelled box grown by
    the crop margin, the OpenCV mask, the labelled joints."""
    import numpy as np
    from PIL import Image

    from animation.character import save_character
    from animation.figure import character_from_photo

    labels = json.loads(SAMPLE_PHOTO.with_suffix(".json").read_text())
    rgb = np.asarray(Image.open(SAMPLE_PHOTO).convert("RGB"))
    keypoints = np.asarray(labels["keypoints"], np.float64)
    save_character(character_from_photo(rgb, keypoints, bbox=labels["bbox"]), out_dir)
    return out_dir


def mp4_plays(path: Path) -> tuple[int, float]:
    """(frames decoded, duration in s) of an MP4, read back through PyAV."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        return frames, float(container.duration or 0) / 1e6


def bench_same_work(char1: Path, runs: int, tmp: Path) -> None:
    out = tmp / "same_work_dab.gif"
    args = ["render", "--character", str(char1), "--motion", SAME_WORK["motion"]]
    args += ["--size", str(SAME_WORK["size"]), "--fps", str(SAME_WORK["fps"])]
    args += ["--max-frames", str(SAME_WORK["frames"]), "--out", str(out)]
    results = [run_cli(args) for _ in range(runs)]
    wall = statistics.median(r["wall_s"] for r in results)
    cpu = statistics.median(r["cpu_s"] for r in results)
    rss = max(r["peak_rss_mb"] for r in results)
    size = out.stat().st_size
    print(
        f"\nsame work on {char1.name} (dab, 339 frames, 500 px, GIF), whole process, {runs} runs:"
    )
    print(f"  python -m animation {' '.join(args[:-2])} --out dab.gif")
    each = ", ".join(f"{r['wall_s']:.2f}" for r in results)
    print(f"  wall {wall:.3f} s (median; runs {each})")
    print(f"  CPU {cpu:.3f} s; peak RSS {rss:.0f} MB; GIF {size:,} bytes")
    print("  ratios (ours / target; <= 1 meets it):")
    print(
        f"    wall     {wall:.3f} / {TARGETS['same_work_wall_s']} s = "
        f"{wall / TARGETS['same_work_wall_s']:.2f}   (AnimatedDrawings side by side: "
        f"{AD_SAME_WORK_S} s, {AD_SAME_WORK_S / wall:.0f}x)"
    )
    print(
        f"    GIF      {size:,} / {TARGETS['same_work_gif_bytes']:,} bytes = "
        f"{size / TARGETS['same_work_gif_bytes']:.2f}"
    )
    print(
        f"    peak RSS {rss:.0f} / {TARGETS['peak_rss_mb']:.0f} MB = {rss / TARGETS['peak_rss_mb']:.2f}"
    )


def bench_defaults(characters: dict[str, Path], tmp: Path) -> None:
    print("\ndefaults (256 px, 15 fps), one CLI run per motion and format:")
    print("  character motion         gif B   today B shrink   webp B webp/gif    mp4 B"
          "      mp4 plays   gif: wall    CPU  RSS")  # fmt: skip
    shrinks, webp_ratios, walls, cpus, rss = [], [], [], [], []
    for name, folder in characters.items():
        for motion in MOTIONS:
            sizes, usage = {}, {}
            for fmt in FORMATS:
                out = tmp / f"{name}_{motion}.{fmt}"
                usage[fmt] = run_cli(
                    ["render", "--character", str(folder), "--motion", motion, "--out", str(out)]
                )
                sizes[fmt] = out.stat().st_size
            frames, seconds = mp4_plays(tmp / f"{name}_{motion}.mp4")
            today = TODAY_GIF_BYTES.get(name, {}).get(motion)
            shrink = today / sizes["gif"] if today else float("nan")
            webp_ratio = sizes["webp"] / sizes["gif"]
            shrinks.append(shrink)
            webp_ratios.append(webp_ratio)
            gif_usage = usage["gif"]
            walls.append(gif_usage["wall_s"])
            cpus.append(gif_usage["cpu_s"])
            rss.append(gif_usage["peak_rss_mb"])
            print(
                f"  {name:<9} {motion:<10} {sizes['gif']:>9,} {today or 0:>9,} {shrink:>5.1f}x "
                f"{sizes['webp']:>8,} {webp_ratio:>8.2f} {sizes['mp4']:>8,} "
                f"{f'{frames} fr {seconds:.2f} s':>14} "
                f"{gif_usage['wall_s']:>6.2f}s {gif_usage['cpu_s']:>5.2f}s "
                f"{gif_usage['peak_rss_mb']:>4.0f}MB"
            )
    if not shrinks:
        return
    print("  ratios (medians over characters and motions):")
    shrink = statistics.median(shrinks)
    print(
        f"    GIF shrink vs today {shrink:.1f}x (min {min(shrinks):.1f}x) / target "
        f"{TARGETS['gif_shrink']:.0f}x: target / ours = {TARGETS['gif_shrink'] / shrink:.2f}"
    )
    webp = statistics.median(webp_ratios)
    print(
        f"    WebP / GIF {webp:.2f} (max {max(webp_ratios):.2f}) / target "
        f"{TARGETS['webp_of_gif']}: {webp / TARGETS['webp_of_gif']:.2f}"
    )
    print(
        f"    one GIF motion, whole process: wall {statistics.median(walls):.2f} s, "
        f"CPU {statistics.median(cpus):.2f} s, peak RSS {max(rss):.0f} MB"
    )


def jittered(character: Character, sigma: float, seed: int) -> Character:
    """`character` with each rest joint moved by a normal offset of `sigma` times the
    figure's longest side (seeded; root stays on the hip, every joint on the texture): a
    pose a few pixels off, as another crop or another model's weights would give."""
    import numpy as np

    from animation.skeleton import JOINT_INDEX, Skeleton

    rest = character.skeleton.rest
    rows, cols = np.nonzero(character.mask)
    side = max(np.ptp(rows), np.ptp(cols)) + 1 if rows.size else 1
    moved = rest + np.random.default_rng(seed).normal(0.0, sigma * side, rest.shape)
    moved[JOINT_INDEX["root"]] = moved[JOINT_INDEX["hip"]]
    height, width = character.mask.shape
    moved = np.clip(moved, 0, (width - 1, height - 1))
    return dataclasses.replace(character, skeleton=Skeleton(moved))


def bench_shape(
    characters: dict[str, Path],
    motions: tuple[str, ...] = MOTIONS,
    jitter: float = 0.0,
    seeds: int = 1,
) -> list[dict]:
    """4. What every shipped motion does to the real drawings' shape (animation.distortion),
    at the defaults: spikes, pieces torn off, flipped triangles, the head's local scale
    and the torso's worst stretch. Target: every clip within the bounds the tests hold.
    With `jitter`, each drawing is rigged `seeds` times with its joints moved (`jittered`):
    how the rig holds a pose a few pixels off."""
    import numpy as np

    from animation.character import load_character
    from animation.distortion import HEAD_SCALE, TORSO_STRETCH, measure
    from animation.figure import rig_for
    from animation.motions import load_motion
    from animation.parts import PARTS
    from animation.retarget import retarget

    print("\nshape kept (distortion per clip; head scale within 0.9-1.1, torso stretch <= 1.5):")
    if jitter:
        print(f"  joints moved by {jitter:g} of the figure's side, seeds 0-{seeds - 1}")
    head, torso = PARTS.index("head"), PARTS.index("torso")
    rows = []
    poses = range(seeds if jitter else 1)  # unmoved joints give one rig whatever the seed
    runs = [(name, folder, seed) for name, folder in characters.items() for seed in poses]
    for name, folder, seed in runs:
        character = load_character(folder)
        if jitter:
            character = jittered(character, jitter, seed)
            name = f"{name}/{seed}"
        try:
            rig = rig_for(character, 256)  # as the service rigs it
        except ValueError as exc:  # no humanoid skeleton, nothing to mesh
            print(f"  {name:<9} left out: {exc}")
            continue
        for motion in motions:
            clip = load_motion(motion)
            joints = retarget(rig.character.skeleton, clip, clip.plan(15, 150).times_s)
            d = measure(rig, joints)
            row = {
                "drawing": name,
                "motion": motion,
                "spike_frames": int(d.spikes().sum()),
                "torn_frames": int((d.torn > 0).sum()),
                "flipped": int(d.flipped.max(initial=0)),
                # A part with no triangle (no head drawn) cannot be bent: 1.
                "head": (
                    float(np.nan_to_num(d.squash[:, head], nan=1.0).min()),
                    float(np.nan_to_num(d.stretch[:, head], nan=1.0).max()),
                ),
                "torso": float(np.nan_to_num(d.stretch[:, torso], nan=1.0).max()),
            }
            row["ok"] = (
                not row["spike_frames"] and not row["torn_frames"] and not row["flipped"]
                and HEAD_SCALE[0] <= row["head"][0] <= row["head"][1] <= HEAD_SCALE[1]
                and row["torso"] <= TORSO_STRETCH
            )  # fmt: skip
            rows.append(row)
            print(
                f"  {name:<9} {motion:<10} spikes {row['spike_frames']:>2}  torn {row['torn_frames']:>2}"
                f"  flipped {row['flipped']:>2}  head {row['head'][0]:.2f}-{row['head'][1]:.2f}"
                f"  torso {row['torso']:.2f}  {'ok' if row['ok'] else 'OUT OF BOUNDS'}"
            )
    if rows:
        kept = sum(r["ok"] for r in rows)
        print(f"  clips in bounds: {kept} / {len(rows)} = {kept / len(rows):.2f} (target 1.00)")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m animation.tools.bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs of each timed case")
    parser.add_argument("--real", type=Path, default=REAL_DRAWINGS, help="real drawings' folder")
    parser.add_argument("--quick", action="store_true", help="skip the defaults table (3.)")
    parser.add_argument(
        "--shape", type=Path, metavar="DIR",
        help="only part 4, on every annotation folder in DIR (gateway.tools.characters), "
        "every shipped motion",
    )  # fmt: skip
    parser.add_argument(
        "--jitter", type=float, default=0.0, metavar="SIGMA",
        help="with --shape: move each joint by SIGMA of the figure's side (e.g. 0.02)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, default=1, help="with --jitter: poses per drawing")
    parser.add_argument("--case", choices=("default", "same_work"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        _child(args.case, args.runs)
        return 0
    if args.shape:
        from animation.motions import load_motion_table
        from animation.sheet import character_folders

        rows = bench_shape(
            {folder.name: folder for folder in character_folders(args.shape)},
            tuple(load_motion_table()),
            args.jitter,
            args.seeds,
        )
        return 0 if rows else 1
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bench_synthetic(args.runs)
    print(f"\nreal drawings from {args.real}:")
    characters = real_characters(args.real)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if "char1" in characters:
            bench_same_work(characters["char1"], args.runs, tmp)
        else:
            print("  the same-work case needs char1: not run")
        bench_shape(dict(characters))
        if not args.quick:
            characters["sample"] = build_sample_character(tmp / "sample")
            bench_defaults(characters, tmp)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
