"""Characters and rigs shared by the render-side tests (built once per session)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from animation.character import Character, load_character
from animation.render import Rig, build_rig
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
