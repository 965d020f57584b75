"""The style axes a synthetic drawing is sampled along, and the choice of one value per axis."""

from __future__ import annotations

import numpy as np

# Every axis a drawing varies along. `exclude` / `only` in `generate` may name any of them.
STYLE_AXES: dict[str, tuple[str, ...]] = {
    "paper": ("white", "cream", "coloured", "lined", "squared"),
    "body": ("stick", "outline", "filled", "dress"),
    "medium": ("crayon", "marker", "pencil", "felt_tip"),
    "head": ("normal", "huge"),
    "neck": ("none", "short", "long"),
    "hands": ("none", "mitten", "fingers"),
    "hair": ("none", "scribble", "spiky", "long", "curly"),
    "hat": ("none", "party", "cap", "top"),
    "arms": ("down", "out", "up", "crossed", "hips", "wave", "mixed"),
    "legs": ("together", "apart", "wide", "step", "kick"),
    "scene": ("plain", "some", "busy"),
    "photo": ("scan", "flat", "angled"),
}

# One value per axis that training never sees; the held-out-styles evaluation uses only these.
HELD_OUT_STYLES: dict[str, str] = {"paper": "squared", "body": "dress", "medium": "pencil"}

# Relative frequencies where uniform would be unrealistic (missing values weigh 1).
_WEIGHTS: dict[str, dict[str, float]] = {
    "hat": {"none": 3.0},
    "scene": {"plain": 1.0, "some": 2.0, "busy": 1.5},
    "neck": {"none": 1.5},
}


def _check(styles: dict[str, str] | None, what: str) -> dict[str, str]:
    styles = dict(styles or {})
    for axis, value in styles.items():
        if axis not in STYLE_AXES:
            raise ValueError(f"{what}: unknown style axis {axis!r}; axes are {sorted(STYLE_AXES)}")
        if value not in STYLE_AXES[axis]:
            raise ValueError(
                f"{what}: unknown {axis} style {value!r}; choose from {STYLE_AXES[axis]}"
            )
    return styles


def pick_styles(
    rng: np.random.Generator,
    exclude: dict[str, str] | None = None,
    only: dict[str, str] | None = None,
) -> dict[str, str]:
    """One value per axis: forced by `only`, never one named in `exclude`, else random."""
    exclude = _check(exclude, "exclude")
    only = _check(only, "only")
    for axis, value in only.items():
        if exclude.get(axis) == value:
            raise ValueError(f"style {axis}={value!r} is both forced and excluded")
    styles: dict[str, str] = {}
    for axis, values in STYLE_AXES.items():
        # Draw for every axis, forced or not, so that a seed's other choices stay put.
        allowed = [v for v in values if v != exclude.get(axis)]
        weights = np.array([_WEIGHTS.get(axis, {}).get(v, 1.0) for v in allowed])
        choice = allowed[int(rng.choice(len(allowed), p=weights / weights.sum()))]
        styles[axis] = only.get(axis, choice)
    # Combinations a child would not draw, or that would hide the labelled joints.
    if styles["body"] == "dress" and styles["legs"] in ("kick", "wide") and "legs" not in only:
        under_dress = [v for v in ("apart", "together", "step") if v != exclude.get("legs")]
        styles["legs"] = under_dress[int(rng.integers(len(under_dress)))]
    return styles
