"""The style axes a synthetic drawing is sampled along, and the choice of one value per axis."""

from __future__ import annotations

import numpy as np

# Every axis a drawing varies along. `exclude` / `only` in `generate` may name any of them.
STYLE_AXES: dict[str, tuple[str, ...]] = {
    "paper": ("white", "cream", "coloured", "lined", "squared", "grey", "kraft", "whiteboard"),
    "body": ("stick", "outline", "filled", "dress"),
    "medium": ("crayon", "marker", "pencil", "felt_tip", "coloured_pencil"),
    "head": ("normal", "huge"),
    "neck": ("none", "short", "long"),
    "hands": ("none", "mitten", "fingers"),
    "hair": ("none", "scribble", "spiky", "long", "curly", "pigtails", "bun"),
    "hat": ("none", "party", "cap", "top", "crown"),
    "arms": ("down", "out", "up", "crossed", "hips", "wave", "mixed"),
    "legs": ("together", "apart", "wide", "step", "kick"),
    "scene": ("plain", "some", "busy"),
    "photo": ("scan", "flat", "angled"),
    # Arms (and sometimes legs) drawn as blocks beside the body, not touching it.
    "limbs": ("joined", "detached"),
    # Things drawn or lying against the figure: a ball, a balloon, a caption, a pen.
    "props": ("none", "touching"),
    # The page coloured in all over (sky, grass, one colour), around or over the figure.
    "background": ("paper", "coloured"),
    # A drawn body (outline or filled) of ordinary proportions, a big round belly, or a
    # thing with stick limbs (a tree, an ice cream, a star, a blob, a box).
    "build": ("slim", "round", "thing"),
}

# One value per axis that training never sees; the held-out-styles evaluation uses only these.
HELD_OUT_STYLES: dict[str, str] = {"paper": "squared", "body": "dress", "medium": "pencil"}

# Relative frequencies where uniform would be unrealistic (missing values weigh 1).
_WEIGHTS: dict[str, dict[str, float]] = {
    "hat": {"none": 4.0},
    "scene": {"plain": 1.0, "some": 2.0, "busy": 1.5},
    "neck": {"none": 1.5},
    "paper": {"whiteboard": 0.6, "grey": 0.8, "kraft": 0.7},
    "limbs": {"joined": 3.0},
    "props": {"none": 1.5},
    "background": {"paper": 4.0},
    "build": {"slim": 3.0},
}


def _check(styles, what: str) -> dict[str, frozenset[str]]:
    """Validate {axis: value or values} and normalise it to {axis: {values}}."""
    checked: dict[str, frozenset[str]] = {}
    for axis, value in dict(styles or {}).items():
        if axis not in STYLE_AXES:
            raise ValueError(f"{what}: unknown style axis {axis!r}; axes are {sorted(STYLE_AXES)}")
        values = frozenset([value] if isinstance(value, str) else value)
        unknown = sorted(values - set(STYLE_AXES[axis]))
        if unknown:
            raise ValueError(
                f"{what}: unknown {axis} style {unknown[0]!r}; choose from {STYLE_AXES[axis]}"
            )
        checked[axis] = values
    return checked


def allowed_values(axis: str, exclude=None) -> list[str]:
    """The values of `axis` that `exclude` leaves in, in STYLE_AXES order."""
    out = _check(exclude, "exclude").get(axis, frozenset())
    return [v for v in STYLE_AXES[axis] if v not in out]


def pick_styles(
    rng: np.random.Generator,
    exclude: dict[str, str] | None = None,
    only: dict[str, str] | None = None,
) -> dict[str, str]:
    """One value per axis: forced by `only`, never one named in `exclude`, else random.

    `exclude` may name one value per axis or a collection of them."""
    excluded = _check(exclude, "exclude")
    forced = {axis: value for axis, value in dict(only or {}).items()}
    for axis, values in _check(only, "only").items():
        if len(values) != 1:
            raise ValueError(f"only: give one {axis} style, not {sorted(values)}")
        if values & excluded.get(axis, frozenset()):
            raise ValueError(f"style {axis}={forced[axis]!r} is both forced and excluded")
    styles: dict[str, str] = {}
    for axis, values in STYLE_AXES.items():
        # Draw for every axis, forced or not, so that a seed's other choices stay put.
        allowed = [v for v in values if v not in excluded.get(axis, ())]
        if not allowed:
            raise ValueError(f"exclude: leaves no {axis} style to draw")
        cumulative = np.cumsum([_WEIGHTS.get(axis, {}).get(v, 1.0) for v in allowed])
        choice = allowed[int(np.searchsorted(cumulative, rng.random() * cumulative[-1], "right"))]
        styles[axis] = forced.get(axis, choice)
    # Combinations a child would not draw, or that would hide the labelled joints.
    if styles["body"] == "dress" and styles["legs"] in ("kick", "wide") and "legs" not in forced:
        legs_out = excluded.get("legs", ())
        under_dress = [v for v in ("apart", "together", "step") if v not in legs_out] or ["apart"]
        styles["legs"] = under_dress[int(rng.integers(len(under_dress)))]
    if styles["paper"] == "whiteboard":
        # Whiteboard markers, and nobody colours a whole whiteboard in.
        if "medium" not in forced and "marker" not in excluded.get("medium", ()):
            styles["medium"] = "marker"
        if "background" not in forced:
            styles["background"] = "paper"
    return styles
