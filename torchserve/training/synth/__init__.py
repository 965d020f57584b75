"""Synthetic training data: photos of children's drawings of people, with exact labels.

    from torchserve.training.synth import generate, HELD_OUT_STYLES
    s = generate(7, exclude=HELD_OUT_STYLES)   # s.image, s.bbox, s.keypoints, s.mask, s.style

Deterministic by seed. numpy, OpenCV and Pillow only (no torch), so any part of the
project can make test drawings.
"""

from .generator import Sample, generate, generate_batch
from .styles import HELD_OUT_STYLES, STYLE_AXES

__all__ = ["HELD_OUT_STYLES", "STYLE_AXES", "Sample", "generate", "generate_batch"]
