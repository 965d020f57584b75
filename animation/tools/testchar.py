"""A child-like figure drawn procedurally: the character the tests and the benchmark use.

Seeded, so every run draws the same figure; the options make the awkward cases real
drawings have: limbs a few pixels thin, holes in the mask, joints a little outside the
mask, a head drawn apart from its body.
"""

from __future__ import annotations

import cv2
import numpy as np

from animation.character import Character
from animation.skeleton import JOINTS, Skeleton

_OUTLINE = (20, 20, 20)


def _colour(rng: np.random.Generator) -> tuple[int, int, int]:
    hue = int(rng.integers(0, 180))
    hsv = np.uint8([[[hue, int(rng.integers(150, 255)), int(rng.integers(150, 240))]]])
    return tuple(int(v) for v in cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0])


def draw_character(
    seed: int = 0,
    *,
    height: int = 400,
    thin_limbs: bool = False,
    holes: bool = False,
    joints_outside: bool = False,
    detached_head: bool = False,
) -> Character:
    """Draw a figure about `height` px tall on a transparent crop and rig it."""
    rng = np.random.default_rng(seed)
    u = height / 400.0  # every length below is for a 400 px tall crop
    width = int(round(300 * u))
    cx = width / 2

    def jitter(scale: float) -> float:  # in 400 px units, like the lengths it perturbs
        return rng.uniform(-scale, scale)

    head_r = (38 + jitter(6)) * u
    head = np.array([cx + jitter(5) * u, 60 * u])
    neck_y = head[1] + head_r + (10 * u if detached_head else -4 * u)
    hip_y = (225 + jitter(10)) * u
    shoulder_dx, hip_dx = (42 + jitter(5)) * u, (24 + jitter(4)) * u
    spread = rng.uniform(0.3, 0.9)  # arms from hanging (0) to straight out (pi/2)
    arm = (62 + jitter(8)) * u
    joints = {
        "neck": head + [0, 0.25 * head_r],
        "torso": np.array([cx, neck_y + 12 * u]),
        "root": np.array([cx, hip_y]),
        "hip": np.array([cx, hip_y]),
    }
    for side, sign in (("right", -1), ("left", 1)):  # the character's right is image left
        shoulder = np.array([cx + sign * shoulder_dx, neck_y + 14 * u])
        direction = np.array([sign * np.sin(spread), np.cos(spread)])
        bend = np.array([sign * np.sin(spread + 0.3), np.cos(spread + 0.3)])
        joints[f"{side}_shoulder"] = shoulder
        joints[f"{side}_elbow"] = shoulder + arm * direction
        joints[f"{side}_hand"] = shoulder + arm * direction + arm * bend
        hip = np.array([cx + sign * hip_dx, hip_y])
        joints[f"{side}_hip"] = hip
        joints[f"{side}_knee"] = hip + [sign * 6 * u, (72 + jitter(6)) * u]
        joints[f"{side}_foot"] = hip + [sign * 12 * u, (145 + jitter(6)) * u]

    limb = (4 if thin_limbs else 16) * u
    colours = {k: _colour(rng) for k in ("shirt", "trousers", "skin", "hair")}
    texture = np.zeros((int(round(400 * u)), width, 3), np.uint8)
    mask = np.zeros(texture.shape[:2], np.uint8)

    def pts(*names: str) -> np.ndarray:
        return np.round(np.array([joints[n] for n in names]) * 16).astype(np.int32)

    def stroke(names: tuple[str, ...], colour: tuple[int, int, int], thickness: float) -> None:
        t = max(1, int(round(thickness)))
        for target, value in ((texture, _OUTLINE), (mask, 1)):
            cv2.polylines(
                target, [pts(*names)], False, value, t + max(2, int(3 * u)), cv2.LINE_AA, 4
            )
        cv2.polylines(texture, [pts(*names)], False, colour, max(1, t - int(2 * u)), cv2.LINE_AA, 4)

    for side in ("right", "left"):
        stroke((f"{side}_hip", f"{side}_knee", f"{side}_foot"), colours["trousers"], limb * 1.1)
        # Shoes: a blob at the end of each leg.
        foot = joints[f"{side}_foot"]
        for target, value, grow in (
            (mask, 1, 3),
            (texture, _OUTLINE, 3),
            (texture, colours["hair"], 0),
        ):
            cv2.ellipse(target, tuple(int(v) for v in foot + [0, 4 * u]),
                        (int((14 + grow) * u), int((7 + grow) * u)), 0, 0, 360, value, -1)  # fmt: skip
    # Body: a trapezoid shirt from the shoulders to the hips.
    top, bottom = neck_y, hip_y + 12 * u
    body = np.array([[cx - shoulder_dx - 6 * u, top + 6 * u], [cx + shoulder_dx + 6 * u, top + 6 * u],
                     [cx + hip_dx + 22 * u, bottom], [cx - hip_dx - 22 * u, bottom]])  # fmt: skip
    body_i = np.round(body).astype(np.int32)
    cv2.fillPoly(mask, [body_i], 1)
    cv2.fillPoly(texture, [body_i], colours["shirt"])
    cv2.polylines(texture, [body_i], True, _OUTLINE, max(2, int(3 * u)), cv2.LINE_AA)
    for side in ("right", "left"):
        stroke((f"{side}_shoulder", f"{side}_elbow", f"{side}_hand"), colours["shirt"], limb)
        hand = tuple(int(v) for v in joints[f"{side}_hand"])
        cv2.circle(mask, hand, int(9 * u), 1, -1)
        cv2.circle(texture, hand, int(9 * u), _OUTLINE, -1)
        cv2.circle(texture, hand, int(7 * u), colours["skin"], -1)
    # Head with hair, eyes and a smile.
    hc, hr = tuple(int(v) for v in head), int(head_r)
    cv2.circle(mask, hc, hr + 2, 1, -1)
    cv2.circle(texture, hc, hr + 2, _OUTLINE, -1)
    cv2.circle(texture, hc, hr - 1, colours["skin"], -1)
    cv2.ellipse(texture, hc, (hr - 1, hr - 1), 0, 180, 360, colours["hair"], -1)
    for dx in (-0.35, 0.35):
        cv2.circle(
            texture, (int(hc[0] + dx * hr), int(hc[1] + 0.1 * hr)), max(2, int(4 * u)), _OUTLINE, -1
        )
    cv2.ellipse(texture, (hc[0], int(hc[1] + 0.35 * hr)), (int(0.4 * hr), int(0.25 * hr)), 0, 10, 170,
                _OUTLINE, max(1, int(2 * u)), cv2.LINE_AA)  # fmt: skip
    if detached_head:
        # Keep the drawn gap between head and shirt: two blobs.
        mask[int(head[1] + head_r + 3) : int(neck_y + 5 * u), :] = 0
    if holes:
        # A button hole and a gap between arm and body, as a drawing's outline leaves them.
        belly = (int(cx), int((neck_y + hip_y) / 2))
        cv2.circle(mask, belly, int(9 * u), 0, -1)
        cv2.circle(mask, (int(cx + 10 * u), int(hip_y - 20 * u)), max(1, int(2 * u)), 0, -1)
    if joints_outside:
        for name in ("right_hand", "left_foot", "neck"):
            joints[name] = (
                joints[name] + rng.normal(0, 1, 2) * 4 * u + [0, -head_r if name == "neck" else 0]
            )
    rgba = np.dstack([texture, mask * 255]).astype(np.uint8)
    skeleton = Skeleton(np.stack([joints[n] for n in JOINTS]))
    return Character(texture=rgba, mask=mask.astype(bool), skeleton=skeleton)
