"""Characters and rigs shared by the render-side tests (built once per session)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from animation.character import Character, load_character
from animation.motions import load_motion
from animation.render import Rig, build_rig
from animation.retarget import retarget
from animation.timing import frame_schedule
from animation.tools.testchar import draw_character

AD_CHARACTER = Path(__file__).resolve().parents[1] / "animation" / "data" / "ad_character"

VARIANTS: dict[str, dict[str, bool]] = {
    "plain": {},
    "thin_limbs": {"thin_limbs": True},
    "holes": {"holes": True},
    "joints_outside": {"joints_outside": True},
    "detached_head": {"detached_head": True},
    "everything": {
        "thin_limbs": True,
        "holes": True,
        "joints_outside": True,
        "detached_head": True,
    },
}


@cache
def character(variant: str = "plain", seed: int = 3) -> Character:
    if variant == "ad":
        return load_character(AD_CHARACTER)
    return draw_character(seed, height=240, **VARIANTS[variant])


@cache
def rig(variant: str = "plain") -> Rig:
    return build_rig(character(variant))


def motion_clip(r: Rig, name: str) -> np.ndarray:
    """(F, 16, 2): the shipped motion `name` retargeted onto `r`, at 15 fps as the
    defaults render it."""
    motion = load_motion(name)
    times, _ = frame_schedule(motion.duration_s, 15, 150)
    return retarget(r.character.skeleton, motion, times)
