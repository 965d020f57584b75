"""Adversarial pages: the sample drawing drawn faint on paper full of specks.

    python -m gateway.tools.speckle OUT.jpg [--seed 0] [--specks 6000]

A page like this is easy to make and was once the dearest thing a client could send:
thousands of tiny ink components round a faint figure, each of which the figure stage
used to weigh against every other. The tests and `gateway.tools.bench --speckle` post
them to check that no photo holds a render slot past the figure stage's budget.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

SAMPLE = Path(__file__).resolve().parents[1] / "sample_drawing.jpg"


def speckle_page(seed: int = 0, specks: int = 6_000, faint: float = 0.45) -> bytes:
    """A JPEG: the sample drawing at `faint` of its contrast on greyish paper, with
    `specks` dark dots of 1-3 px scattered over the whole page (the figure too)."""
    rng = np.random.default_rng(seed)
    with Image.open(SAMPLE) as image:
        drawing = np.asarray(image.convert("RGB"), np.float32)
    paper = np.array([228, 224, 214], np.float32)
    page = paper + faint * (drawing - 255)  # ink darkens the paper by a share of its depth
    page += rng.normal(0, 4, page.shape)  # the paper's grain
    height, width = page.shape[:2]
    for x, y, r, shade in zip(
        rng.integers(0, width, specks), rng.integers(0, height, specks),
        rng.integers(1, 3, specks), rng.uniform(60, 160, specks), strict=True,
    ):  # fmt: skip
        cv2.circle(page, (int(x), int(y)), int(r), (shade, shade, shade), -1)
    out = io.BytesIO()
    Image.fromarray(np.clip(page, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--specks", type=int, default=6_000)
    args = parser.parse_args(argv)
    args.out.write_bytes(speckle_page(args.seed, args.specks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
