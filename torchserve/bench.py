"""Latency of the three models on TorchServe: p50/p95 per call, sequential and 8 clients at once.

    python -m torchserve.bench                  # starts its own TorchServe (make models first)
    python -m torchserve.bench --url http://127.0.0.1:8080 --n 200 [--format png]

Bodies are generated drawings encoded as JPEG like the gateway sends them (or PNG: --format;
the detector gets the page, the pose model the figure's crop, the segmenter the crop the
gateway cuts: the box grown by 10% per side), so decoding, letterboxing, the network, the
mask's PNG and the JSON all count: this is the latency the gateway sees. A server without
the segmenter (AnimatedDrawings' archives) is measured on the other two. The last column is p50 against the target of 50 ms per model call
(<= 1.00 meets it). With 8 clients one worker serves them all, so a call's latency includes
its wait in the queue; ms/call (wall time / calls) is then the cost of one call in a batch.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from torchserve.server import DEFAULT_MODEL_STORE, private_instance
from torchserve.training.synth import generate

TARGET_P50_MS = 50.0
DETECTOR = "drawn_humanoid_detector"
POSE = "drawn_humanoid_pose_estimator"
SEGMENTER = "drawn_humanoid_segmenter"
CROP_MARGIN = 0.1  # the gateway's, per side
SEEDS = range(7_000_000, 7_000_032)
WARMUP = 10
ROW = "{:<31} {:>7} {:>5} {:>7} {:>7} {:>7} {:>8} {:>8}"
HEADER = ROW.format("model", "clients", "n", "p50 ms", "p95 ms", "calls/s", "ms/call", "p50/50ms")


def encode(image: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format=fmt, quality=90)
    return out.getvalue()


def bodies_per_model(fmt: str) -> dict[str, list[bytes]]:
    """Pages for the detector and the figures cut out of them for the pose model."""
    samples = [generate(seed) for seed in SEEDS]
    crops, margin_crops = [], []
    for sample in samples:
        x1, y1, x2, y2 = sample.bbox.astype(int)
        crops.append(np.ascontiguousarray(sample.image[y1:y2, x1:x2]))
        dx, dy = round((x2 - x1) * CROP_MARGIN), round((y2 - y1) * CROP_MARGIN)
        window = sample.image[max(y1 - dy, 0) : y2 + dy, max(x1 - dx, 0) : x2 + dx]
        margin_crops.append(np.ascontiguousarray(window))
    return {
        DETECTOR: [encode(s.image, fmt) for s in samples],
        POSE: [encode(c, fmt) for c in crops],
        SEGMENTER: [encode(c, fmt) for c in margin_crops],
    }


def served(management_url: str | None, model: str) -> bool:
    """Whether the server has `model` (asked of the management API; assumed without one)."""
    if management_url is None:
        return True
    try:
        with urllib.request.urlopen(f"{management_url}/models/{model}", timeout=5):
            return True
    except urllib.error.HTTPError:
        return False


def timed_call(url: str, body: bytes, content_type: str) -> float:
    """Milliseconds for one prediction; raises on anything but 200."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()
    return (time.perf_counter() - start) * 1000


def run(
    url: str, bodies: list[bytes], content_type: str, n: int, clients: int
) -> tuple[list[float], float]:
    """Latencies of `n` calls made by `clients` threads, and the calls per second overall."""
    work = [bodies[i % len(bodies)] for i in range(n)]
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(lambda body: timed_call(url, body, content_type), work))
    return latencies, n / (time.perf_counter() - start)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def bench(inference_url: str, n: int, fmt: str, management_url: str | None = None) -> None:
    """Print one row per model served and number of clients."""
    bodies = bodies_per_model(fmt)
    content_type = f"image/{fmt.lower()}"
    print(HEADER, flush=True)
    for model, model_bodies in bodies.items():
        if not served(management_url, model):
            print(f"{model}: not served, skipped", flush=True)
            continue
        url = f"{inference_url}/predictions/{model}"
        run(url, model_bodies, content_type, WARMUP, 1)
        for clients in (1, 8):
            latencies, rate = run(url, model_bodies, content_type, n, clients)
            p50 = statistics.median(latencies)
            p95 = percentile(latencies, 95)
            ratio = p50 / TARGET_P50_MS
            figures = (p50, p95, rate, 1000 / rate)
            row = ROW.format(model, clients, n, *(f"{v:.1f}" for v in figures), f"{ratio:.2f}")
            print(row, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="inference URL of a running TorchServe (default: start one)")
    parser.add_argument(
        "--management-url", help="its management URL, to skip a model it does not serve"
    )
    parser.add_argument("--n", type=int, default=200, help="calls per model and mode")
    parser.add_argument("--format", choices=("JPEG", "PNG"), default="JPEG", type=str.upper)
    parser.add_argument("--model-store", type=Path, default=DEFAULT_MODEL_STORE)
    args = parser.parse_args(argv)
    if args.url:
        bench(args.url.rstrip("/"), args.n, args.format, args.management_url)
        return
    with tempfile.TemporaryDirectory(prefix="torchserve-bench-") as root:
        server = private_instance(Path(root), args.model_store.resolve())
        try:
            server.start()
            bench(server.inference_url, args.n, args.format, server.management_url)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
