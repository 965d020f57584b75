"""The retargeted 2D skeleton of every output frame, as JSON (DESIGN.md, "Joints out").

    {"fps": 15, "size": [w, h], "joints": [16 names, as in char_cfg.yaml],
     "frames": [[[x, y] x 16] x F]}

in the output's pixels: the same frames, at the same times, placed by the same camera as
the rendered animation, so a game engine can drive its own sprite with it and a test can
check a retarget by numbers.
"""

from __future__ import annotations

import json

import numpy as np

from animation.motions import Motion
from animation.render import RenderOptions, Rig, output_joints
from animation.retarget import retarget
from animation.skeleton import JOINTS


def joints_document(rig: Rig, motion: Motion, options: RenderOptions) -> dict:
    """The joints-out document of `motion` rendered for `rig` with `options`."""
    plan = motion.plan(options.fps, options.max_frames)
    joints = retarget(rig.character.skeleton, motion, plan.times_s)
    placed, (width, height) = output_joints(rig, joints, options.size)
    return {
        "fps": options.fps,
        "size": [width, height],
        "joints": list(JOINTS),
        "frames": np.round(placed, 2).tolist(),
    }


def joints_json(document: dict) -> bytes:
    """The document as compact JSON bytes (write it with animation.files.write_atomic)."""
    return json.dumps(document, separators=(",", ":")).encode()
