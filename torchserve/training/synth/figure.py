"""A child's drawing of a person: a random skeleton, the shapes drawn around it, its joints.

The figure is built in its own units (head centre at the origin, y down, about 1 tall),
as a list of `Shape`s plus the 17 COCO keypoints where an annotator would click them,
then placed on the page and drawn with inks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ink import FAINT_MEDIA, Ink, pick_colour

# COCO keypoint order.
NOSE, L_EYE, R_EYE, L_EAR, R_EAR = range(5)
L_SHOULDER, R_SHOULDER, L_ELBOW, R_ELBOW, L_WRIST, R_WRIST = range(5, 11)
L_HIP, R_HIP, L_KNEE, R_KNEE, L_ANKLE, R_ANKLE = range(11, 17)

# Limb directions are angles from straight down, positive = away from the body's midline.
# The figure faces the viewer, so its left side (+1) is the image's right (+x).
ARM_POSES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    # (upper-arm angle range, forearm bend range relative to the upper arm), degrees
    "down": ((16, 45), (-20, 25)),
    "out": ((65, 115), (-35, 35)),
    "up": ((125, 175), (-25, 25)),
    "crossed": ((15, 45), (-150, -95)),
    "hips": ((35, 70), (-110, -60)),
    "flex": ((75, 105), (60, 100)),
}
LEG_POSES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "together": ((0, 7), (-4, 4)),
    "apart": ((9, 30), (-10, 10)),
    "wide": ((30, 55), (-20, 10)),
    "straight": ((-3, 12), (-6, 6)),
    "kick": ((45, 95), (-90, -30)),
}


@dataclass
class Shape:
    """One thing drawn: a stroke along `points`, or a filled region inside them."""

    role: str  # which ink: line, arm, leg, fill, leg_fill, skin, pattern, hair, hat, hat_fill, face
    points: np.ndarray  # (N, 2) figure units
    closed: bool = False
    filled: bool = False
    width: float = 1.0  # stroke width multiplier
    # What the line goes round is part of the figure even where the line is open (a limb
    # drawn as two lines); a closed line always encloses its inside.
    encloses: bool = False


@dataclass
class Figure:
    keypoints: np.ndarray  # (17, 2) figure units
    shapes: list[Shape] = field(default_factory=list)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        pts = np.concatenate([s.points for s in self.shapes] + [self.keypoints])
        return pts.min(axis=0), pts.max(axis=0)


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _dir(angle_deg: float, side: int) -> np.ndarray:
    a = np.radians(angle_deg)
    return np.array([np.sin(a) * side, np.cos(a)])


def ellipse(centre, rx: float, ry: float, n: int = 28, start: float = 0.0, tilt: float = 0.0):
    t = start + np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = np.stack([rx * np.cos(t), ry * np.sin(t)], 1)
    c, s = np.cos(tilt), np.sin(tilt)
    return pts @ np.array([[c, s], [-s, c]]) + np.asarray(centre, float)


def tube(path: np.ndarray, half_width: float, cap: bool = True) -> np.ndarray:
    """The outline of a limb of constant thickness around a centre line."""
    path = np.asarray(path, float)
    d = np.gradient(path, axis=0)
    d /= np.linalg.norm(d, axis=1, keepdims=True) + 1e-9
    n = np.stack([-d[:, 1], d[:, 0]], 1)
    left, right = path + n * half_width, path - n * half_width
    if cap:
        end_dir, end_n = d[-1], n[-1]
        t = np.linspace(0, np.pi, 7)[1:-1]
        arc = (
            path[-1]
            + np.outer(np.cos(t), end_n) * half_width
            + np.outer(np.sin(t), end_dir) * half_width
        )
        return np.concatenate([left, arc, right[::-1]])
    return np.concatenate([left, right[::-1]])


def _limb(rng, root: np.ndarray, side: int, pose, lengths) -> tuple[np.ndarray, np.ndarray]:
    (a_lo, a_hi), (b_lo, b_hi) = pose
    a = _u(rng, a_lo, a_hi)
    b = a + _u(rng, b_lo, b_hi)
    mid = root + _dir(a, side) * lengths[0]
    end = mid + _dir(b, side) * lengths[1]
    return mid, end


def _crosses_head(path: np.ndarray, rx: float, ry: float) -> bool:
    """Whether an arm (shoulder, elbow, wrist) passes over the head, bar where it starts."""
    t = np.linspace(0.0, 1.0, 9)[:, None]
    shoulder, elbow, wrist = path
    pts = np.concatenate(
        [shoulder + (elbow - shoulder) * (0.5 + t / 2), elbow + (wrist - elbow) * t]
    )
    return bool((((pts[:, 0] / rx) ** 2 + (pts[:, 1] / ry) ** 2) < 1.0).any())


def _arm_poses(rng, arms: str) -> tuple[str, str]:
    """(figure's left, figure's right) arm pose names for an `arms` style."""
    if arms == "wave":
        other = ["down", "out", "hips"][int(rng.integers(3))]
        return ("up", other) if rng.random() < 0.5 else (other, "up")
    if arms == "mixed":
        names = list(ARM_POSES)
        return names[int(rng.integers(len(names)))], names[int(rng.integers(len(names)))]
    return arms, arms


def _leg_poses(rng, legs: str) -> tuple[str, str]:
    if legs == "step":
        return ("apart", "straight") if rng.random() < 0.5 else ("straight", "apart")
    if legs == "kick":
        return ("kick", "straight") if rng.random() < 0.5 else ("straight", "kick")
    return legs, legs


def build_figure(rng: np.random.Generator, styles: dict[str, str]) -> Figure:
    """A random figure in the given styles: proportions, pose, and what is drawn where."""
    body = styles["body"]
    kp = np.zeros((17, 2))
    shapes: list[Shape] = []
    tubes = body != "stick" and rng.random() < (0.45 if body == "dress" else 0.6)

    # A body that is a thing (a tree, an ice cream, a star): the face is often drawn on it.
    thing = styles["build"] == "thing" and body in ("outline", "filled")
    face_on_body = thing and rng.random() < 0.55
    rx, ry, rot = _head(rng, styles, kp, shapes, outline=not face_on_body)

    # Neck, shoulders, torso.
    neck = {"none": 0.0, "short": _u(rng, 0.02, 0.05), "long": _u(rng, 0.05, 0.1)}[styles["neck"]]
    neck_top = np.array([0.0, ry]) @ rot
    if body == "stick":
        sw = _u(rng, 0.0, 0.035)
        y_sh = neck_top[1] + neck + _u(rng, 0.0, 0.07)
        hw = _u(rng, 0.0, 0.05)
    else:
        sw = _u(rng, 0.07, 0.18) * (1.0 if styles["head"] == "normal" else _u(rng, 0.7, 1.2))
        y_sh = neck_top[1] + neck + _u(rng, 0.0, 0.02)
        hw = sw * _u(rng, 0.45, 0.95)
    torso = _u(rng, 0.15, 0.4)
    if body != "stick":  # a body wider than it is tall reads as a table, not a person
        sw = min(sw, torso * _u(rng, 0.45, 0.7))
        hw = min(hw, sw)
    round_body = styles["build"] == "round" and body in ("outline", "filled")
    if round_body:  # a big round belly: a wide, tall oval with mostly bare paper inside
        torso = _u(rng, 0.3, 0.55)
        sw = torso * _u(rng, 0.45, 0.85)
        hw = sw * _u(rng, 0.75, 1.0)
    lean = _u(rng, -0.06, 0.06)
    x_sh = neck_top[0] + _u(rng, -0.02, 0.02)
    kp[L_SHOULDER], kp[R_SHOULDER] = (x_sh + sw, y_sh), (x_sh - sw, y_sh)
    y_hip = y_sh + torso
    kp[L_HIP], kp[R_HIP] = (x_sh + lean + hw, y_hip), (x_sh + lean - hw, y_hip)
    if thing:
        _thing_body(rng, body, kp, rx, ry, neck_top, face_on_body, shapes)
    elif neck > 0:
        shapes.append(Shape("line", np.array([neck_top, (x_sh, y_sh)])))

    # Limbs.
    # Children's limbs run from stubs to noodles; each side drawn a little differently.
    arm_len, leg_len = _u(rng, 0.17, 0.44), _u(rng, 0.26, 0.6)
    arms = [(arm_len * f, arm_len * (1 - f)) for f in rng.uniform(0.4, 0.62, 2) * _u(rng, 0.9, 1.1)]
    legs = [(leg_len * f, leg_len * (1 - f)) for f in rng.uniform(0.42, 0.6, 2)]
    limb_w = _u(rng, 0.015, 0.035)
    if thing:  # a thing's limbs are mostly sticks poking out of it
        tubes = rng.random() < 0.25
    arm_poses = _arm_poses(rng, styles["arms"])
    if thing:  # arms hanging down or held in would be lost against the thing's outline
        arm_poses = tuple("out" if p in ("down", "crossed", "hips") else p for p in arm_poses)
    for (s_i, e_i, w_i, side), pose in zip(
        ((L_SHOULDER, L_ELBOW, L_WRIST, 1), (R_SHOULDER, R_ELBOW, R_WRIST, -1)),
        arm_poses,
        strict=True,
    ):
        # Children draw arms around the head, not across the face: re-draw, then give up
        # on raised arms for this head.
        for attempt in range(6):
            kp[e_i], kp[w_i] = _limb(rng, kp[s_i], side, ARM_POSES[pose], arms[side < 0])
            if face_on_body or not _crosses_head(kp[[s_i, e_i, w_i]], rx * 1.15, ry * 1.15):
                break
            if attempt == 2:
                pose = "out"
    for (h_i, k_i, a_i, side), pose in zip(
        ((L_HIP, L_KNEE, L_ANKLE, 1), (R_HIP, R_KNEE, R_ANKLE, -1)),
        _leg_poses(rng, styles["legs"]),
        strict=True,
    ):
        kp[k_i], kp[a_i] = _limb(rng, kp[h_i], side, LEG_POSES[pose], legs[side < 0])

    if not thing:
        _torso(rng, body, kp, neck_top, limb_w, tubes, shapes, round_body)
    hem = _dress(rng, kp, limb_w, shapes) if body == "dress" else None
    # Limbs drawn as separate blocks: each starts a little way off the body, not touching it.
    detached = styles["limbs"] == "detached"
    arm_gap = _u(rng, 0.3, 0.55) if detached else 0.0
    leg_gap = _u(rng, 0.2, 0.4) if detached and rng.random() < 0.5 else 0.0
    for s_i, e_i, w_i, side in (
        (L_SHOULDER, L_ELBOW, L_WRIST, 1),
        (R_SHOULDER, R_ELBOW, R_WRIST, -1),
    ):
        path = _detach(kp[[s_i, e_i, w_i]], arm_gap)
        _draw_limb(rng, path, limb_w, tubes, body, shapes, "arm", "fill")
        _hand(rng, styles["hands"], kp[w_i], kp[w_i] - kp[e_i], limb_w, side, shapes)
    for h_i, k_i, a_i, side in ((L_HIP, L_KNEE, L_ANKLE, 1), (R_HIP, R_KNEE, R_ANKLE, -1)):
        path = kp[[h_i, k_i, a_i]]
        if hem is not None:
            path = _below(path, hem)
        _draw_limb(
            rng, _detach(path, leg_gap), limb_w * 1.15, tubes, body, shapes, "leg", "leg_fill"
        )
        _foot(rng, kp[a_i], side, limb_w, shapes)
    return Figure(kp, shapes)


def _detach(path: np.ndarray, gap: float) -> np.ndarray:
    """The limb along `path` with its first `gap` (a fraction of its first segment) left
    undrawn: a limb drawn as a block beside the body rather than out of it."""
    if gap <= 0:
        return path
    out = path.astype(float).copy()
    out[0] = path[0] + (path[1] - path[0]) * gap
    return out


def _head(rng, styles, kp, shapes, outline: bool = True) -> tuple[float, float, np.ndarray]:
    """The head, face, hair and hat around the origin; sets the five face keypoints.
    Returns the head's radii and its tilt (a rotation matrix).

    `outline=False`: only the face, hat and no hair, as drawn on a body that is a thing."""
    # Head: children draw it big; "huge" is a head as tall as the rest of the body.
    ry = _u(rng, 0.085, 0.13) if styles["head"] == "normal" else _u(rng, 0.15, 0.26)
    rx = ry * _u(rng, 0.78, 1.15)
    head_tilt = np.radians(_u(rng, -12, 12))
    head = ellipse((0, 0), rx, ry, 30, _u(rng, 0, 6.3), head_tilt)
    if rng.random() < (0.35 if styles["body"] == "filled" else 0.12) and outline:
        shapes.append(Shape("skin", head, True, True))
    if outline:
        shapes.append(Shape("line", head, True))
    rot = np.array(
        [[np.cos(head_tilt), np.sin(head_tilt)], [-np.sin(head_tilt), np.cos(head_tilt)]]
    )

    # Face keypoints where an annotator clicks them; the drawn face is near, not on, them.
    ex, ey = _u(rng, 0.25, 0.45) * rx, _u(rng, -0.3, 0.05) * ry
    face = np.array(
        [
            (_u(rng, -0.08, 0.08) * rx, _u(rng, 0.08, 0.35) * ry),  # nose: centre-lower
            (ex, ey),
            (-ex * _u(rng, 0.85, 1.15), ey + _u(rng, -0.04, 0.04) * ry),
            (_u(rng, 0.88, 1.0) * rx, _u(rng, -0.15, 0.15) * ry),
            (-_u(rng, 0.88, 1.0) * rx, _u(rng, -0.15, 0.15) * ry),
        ]
    )
    kp[:5] = face @ rot
    eye_r = _u(rng, 0.06, 0.2) * rx
    for i in (L_EYE, R_EYE):
        c = kp[i] + rng.normal(0, 0.03 * rx, 2)
        if rng.random() < 0.6:
            shapes.append(
                Shape("face", ellipse(c, eye_r, eye_r * _u(rng, 0.8, 1.3), 10), True, True)
            )
        else:
            shapes.append(Shape("face", ellipse(c, eye_r, eye_r, 10), True, False, 0.7))
    if rng.random() < 0.4:  # a nose
        n = kp[NOSE]
        shapes.append(Shape("face", np.array([n + (0, -0.12 * ry), n + (0.04 * rx, 0)]), width=0.7))
    mouth_y = kp[NOSE, 1] + _u(rng, 0.15, 0.35) * ry
    if mouth_y < ry * 0.85:
        t = np.linspace(0.15 * np.pi, 0.85 * np.pi, 8)
        mw = _u(rng, 0.25, 0.55) * rx
        mouth = np.stack([np.cos(t) * mw, np.sin(t) * mw * _u(rng, 0.2, 0.7) + mouth_y], 1)
        shapes.append(Shape("face", mouth @ rot, width=0.8))
    if rng.random() < 0.25 and outline:  # ears drawn as bumps
        for i, side in ((L_EAR, 1), (R_EAR, -1)):
            c = kp[i] + (side * 0.08 * rx, 0)
            shapes.append(Shape("line", ellipse(c, 0.12 * rx, 0.2 * ry, 10), True))

    _hair_and_hat(rng, styles if outline else {**styles, "hair": "none"}, rx, ry, head_tilt, shapes)
    return rx, ry, rot


THINGS = ("tree", "ice_cream", "star", "blob", "box")


def _thing_body(rng, body, kp, rx, ry, neck_top, face_on_body, shapes) -> None:
    """A body that is a thing: a tree, an ice cream, a star, a blob or a box, with the face
    on it (`face_on_body`: the head's outline is not drawn) or a head on top. The shoulders
    and hips move to where the stick limbs leave its outline, as an annotator clicks them;
    the limbs are then drawn from there, out of the thing."""
    kind = THINGS[int(rng.integers(len(THINGS)))]
    head = max(rx, ry)
    if face_on_body:  # the face in the thing's upper part, with room round it
        top = -head * _u(rng, 1.3, 1.9)
        height = _u(rng, 0.5, 0.85) - top
    else:
        top = neck_top[1] + _u(rng, -0.02, 0.02)
        height = _u(rng, 0.35, 0.7)
    half = max(height * _u(rng, 0.28, 0.55), head * 1.35)
    bottom = top + height
    if kind == "tree":  # a triangle, point up, wide enough at the face for it
        if face_on_body:
            half = max(half, head * 1.35 * height / -top)
        outline = np.array([(0.0, top), (half, bottom), (-half, bottom)])
    elif kind == "ice_cream":  # a round scoop on a cone that points down
        scoop = half
        centre = np.array([0.0, 0.0 if face_on_body else top + scoop])
        t = np.linspace(np.pi * 0.95, np.pi * 2.05, 16)
        arc = centre + np.stack([np.cos(t), np.sin(t)], 1) * scoop
        tip = (0.0, max(bottom, centre[1] + scoop * 1.6))
        outline = np.concatenate([arc, [tip]])
    elif kind == "star":
        radius = max(height / 2, head * 2.2)
        centre = np.array([0.0, (top + radius) if not face_on_body else head * 0.2])
        inner = radius * _u(rng, 0.45, 0.6)
        angle = -np.pi / 2 + np.arange(10) * np.pi / 5 + _u(rng, -0.15, 0.15)
        r = np.where(np.arange(10) % 2 == 0, radius, inner)
        outline = centre + np.stack([np.cos(angle) * r, np.sin(angle) * r], 1)
    elif kind == "blob":  # a wobbly round lump
        centre = np.array([0.0, (top + bottom) / 2])
        t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
        wobble = 1 + 0.08 * np.sin(t * int(rng.integers(2, 5)) + _u(rng, 0, 6.3))
        outline = centre + np.stack([np.cos(t) * half, np.sin(t) * height / 2], 1) * wobble[:, None]
    else:  # a box: a robot, a book, a carton
        outline = np.array([(-half, top), (half, top), (half, bottom), (-half, bottom)])
    if body == "filled":
        shapes.append(Shape("fill", outline, True, True))
    shapes.append(Shape("line", outline, True))
    lo, hi = outline.min(axis=0), outline.max(axis=0)
    if face_on_body:  # the arms leave it below the face
        y_sh = max(lo[1] + (hi[1] - lo[1]) * _u(rng, 0.3, 0.55), kp[NOSE, 1] + head * 0.6)
    else:  # near its top, below the head, as a dress's shoulders are
        y_sh = lo[1] + (hi[1] - lo[1]) * _u(rng, 0.1, 0.35)
    for joint, side in ((L_SHOULDER, 1), (R_SHOULDER, -1)):
        kp[joint] = _edge(outline, np.array([0.0, y_sh]), np.array([side, 0.0]))
    spread = (hi[0] - lo[0]) / 2 * _u(rng, 0.15, 0.5)
    for joint, side in ((L_HIP, 1), (R_HIP, -1)):
        kp[joint] = _edge(outline, np.array([side * spread, lo[1]]), np.array([0.0, 1.0]))


def _edge(outline: np.ndarray, start: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """The last point where the ray from `start` along `direction` crosses the closed
    `outline` (where a limb leaves the body); `start` if it crosses none."""
    a, b = outline, np.roll(outline, -1, axis=0)
    edge = b - a
    denom = direction[0] * edge[:, 1] - direction[1] * edge[:, 0]
    ok = np.abs(denom) > 1e-12
    rel = a - start
    t = np.where(ok, (rel[:, 0] * edge[:, 1] - rel[:, 1] * edge[:, 0]) / np.where(ok, denom, 1), -1)
    u = np.where(
        ok, (rel[:, 0] * direction[1] - rel[:, 1] * direction[0]) / np.where(ok, denom, 1), -1
    )
    hit = ok & (t >= 0) & (u >= 0) & (u <= 1)
    if not hit.any():
        return start.copy()
    return start + direction * t[hit].max()


def _torso(rng, body, kp, neck_top, limb_w, tubes, shapes, round_body=False) -> None:
    sh = (kp[L_SHOULDER] + kp[R_SHOULDER]) / 2
    hip = (kp[L_HIP] + kp[R_HIP]) / 2
    if body == "stick":
        top = neck_top if rng.random() < 0.8 else sh
        shapes.append(Shape("line", np.array([top, sh, hip])))
        if abs(kp[L_SHOULDER, 0] - kp[R_SHOULDER, 0]) > 0.02:
            shapes.append(Shape("line", kp[[R_SHOULDER, L_SHOULDER]]))
        if abs(kp[L_HIP, 0] - kp[R_HIP, 0]) > 0.02:
            shapes.append(Shape("line", kp[[R_HIP, L_HIP]]))
        return
    if body == "dress":
        return
    kind = 0 if round_body else rng.integers(3)
    pad = limb_w * _u(rng, 0.5, 1.5)
    top_w = abs(kp[L_SHOULDER, 0] - kp[R_SHOULDER, 0]) / 2 + pad
    bot_w = abs(kp[L_HIP, 0] - kp[R_HIP, 0]) / 2 + pad + limb_w
    top_y, bot_y = sh[1] - pad * 0.5, hip[1] + _u(rng, 0.0, 0.04)
    if kind == 0:  # an oval body
        centre = (sh + hip) / 2 + (0, (bot_y - top_y) * 0.02)
        outline = ellipse(centre, max(top_w, bot_w) * 1.08, (bot_y - top_y) / 2 * 1.08, 26)
    else:  # a box or trapezoid, sometimes with rounded corners
        outline = np.array(
            [
                (sh[0] - top_w, top_y),
                (sh[0] + top_w, top_y),
                (hip[0] + bot_w, bot_y),
                (hip[0] - bot_w, bot_y),
            ]
        )
    if body == "filled":
        shapes.append(Shape("fill", outline, True, True))
    if body == "outline" or rng.random() < 0.7:
        shapes.append(Shape("line", outline, True))
    pattern = rng.random()
    if pattern < 0.3:  # buttons
        for t in np.linspace(0.25, 0.75, int(rng.integers(2, 4))):
            c = sh + (hip - sh) * t
            shapes.append(Shape("face", ellipse(c, limb_w * 0.5, limb_w * 0.5, 8), True, True))
    elif pattern < 0.5:  # a striped jumper
        _stripes(rng, outline, shapes)


def _stripes(rng, outline: np.ndarray, shapes) -> None:
    """Horizontal stripes across a closed outline, from edge to edge."""
    closed = np.concatenate([outline, outline[:1]])
    top, bottom = outline[:, 1].min(), outline[:, 1].max()
    for y in np.linspace(top, bottom, int(rng.integers(3, 7)))[1:-1]:
        a, b = closed[:-1], closed[1:]
        crosses = (a[:, 1] - y) * (b[:, 1] - y) < 0
        if crosses.sum() < 2:
            continue
        t = (y - a[crosses, 1]) / (b[crosses, 1] - a[crosses, 1])
        xs = a[crosses, 0] + (b[crosses, 0] - a[crosses, 0]) * t
        shapes.append(Shape("pattern", np.array([(xs.min(), y), (xs.max(), y)]), width=0.9))


def _dress(rng, kp, limb_w, shapes) -> float:
    """A triangle or trapezoid dress from the shoulders to a hem between hips and knees."""
    sh = (kp[L_SHOULDER] + kp[R_SHOULDER]) / 2
    knee_y = min(kp[L_KNEE, 1], kp[R_KNEE, 1])
    hip_y = (kp[L_HIP, 1] + kp[R_HIP, 1]) / 2
    hem = hip_y + (knee_y - hip_y) * _u(rng, 0.2, 0.95)
    legs_at_hem = [
        float(np.interp(hem, kp[[h, k], 1], kp[[h, k], 0]))
        for h, k in ((L_HIP, L_KNEE), (R_HIP, R_KNEE))
    ]
    half = max(abs(x - sh[0]) for x in legs_at_hem) + limb_w * 2 + _u(rng, 0.02, 0.12)
    top = abs(kp[L_SHOULDER, 0] - kp[R_SHOULDER, 0]) / 2 * _u(rng, 0.6, 1.1)
    waist = (
        []
        if rng.random() < 0.5
        else [(sh[0] + top * 0.7, hip_y - 0.05), (sh[0] - top * 0.7, hip_y - 0.05)]
    )
    right_side = [(sh[0] - top, sh[1] - 0.01)]
    outline = np.array(
        [(sh[0] + top, sh[1] - 0.01)]
        + waist[:1]
        + [(sh[0] + half, hem), (sh[0] - half, hem)]
        + waist[1:]
        + right_side
    )
    if rng.random() < 0.7:
        shapes.append(Shape("fill", outline, True, True))
    shapes.append(Shape("line", outline, True))
    return hem


def _below(path: np.ndarray, y: float) -> np.ndarray:
    """The part of a downward limb below height `y` (what shows under a dress)."""
    out = []
    for a, b in zip(path[:-1], path[1:], strict=True):
        if a[1] >= y:
            out.append(a)
        elif b[1] > y:
            t = (y - a[1]) / (b[1] - a[1])
            out.append(a + (b - a) * t)
    out.append(path[-1])
    return np.array(out) if len(out) >= 2 else path[-2:]


def _bend(path: np.ndarray) -> np.ndarray:
    """A smooth curve through shoulder-elbow-wrist (or hip-knee-ankle): a "noodle" limb."""
    a, b, c = path
    control = 2 * b - (a + c) / 2  # a quadratic Bezier that passes through b halfway
    t = np.linspace(0, 1, 12)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * control + t**2 * c


def _draw_limb(rng, path, half_width, tubes, body, shapes, role, fill_role) -> None:
    if len(path) == 3 and rng.random() < 0.35:
        path = _bend(path)
    if not tubes:
        shapes.append(Shape(role, path, width=1.0))
        return
    # Some limbs are two lines left open at the hand or foot.
    outline = tube(path, half_width, cap=rng.random() < 0.8)
    if body == "filled" or (body == "dress" and rng.random() < 0.3):
        shapes.append(Shape(fill_role, outline, True, True))
    shapes.append(Shape(role, outline, encloses=True))


def _hand(rng, hands: str, wrist, direction, limb_w, side, shapes) -> None:
    d = direction / (np.linalg.norm(direction) + 1e-9)
    r = _u(rng, 0.018, 0.04)
    if hands == "mitten":
        c = wrist + d * r * 0.9
        tilt = np.arctan2(d[1], d[0])
        shapes.append(
            Shape(
                "arm",
                ellipse(c, r * 1.1, r * 0.85, 14, _u(rng, 0, 6), tilt),
                True,
                rng.random() < 0.4,
            )
        )
    elif hands == "fingers":
        n = int(rng.integers(3, 6))
        base = np.arctan2(d[1], d[0])
        for a in base + np.linspace(-0.9, 0.9, n):
            shapes.append(
                Shape(
                    "arm",
                    np.array([wrist, wrist + np.array([np.cos(a), np.sin(a)]) * r * 1.7]),
                    width=0.7,
                )
            )


def _foot(rng, ankle, side, limb_w, shapes) -> None:
    kind = rng.integers(4)
    length = _u(rng, 0.03, 0.07)
    if kind == 0:
        return
    facing = side if rng.random() < 0.7 else -side
    if kind == 1:  # a short line
        shapes.append(Shape("leg", np.array([ankle, ankle + (facing * length, 0.005)])))
    else:  # a shoe
        c = ankle + (facing * length * 0.5, length * 0.15)
        shapes.append(Shape("leg", ellipse(c, length * 0.65, length * 0.3, 12), True, kind == 3))


def _hair_and_hat(rng, styles, rx, ry, tilt, shapes) -> None:
    rot = np.array([[np.cos(tilt), np.sin(tilt)], [-np.sin(tilt), np.cos(tilt)]])
    hair = styles["hair"]
    # Angles measured on the head outline; -pi/2 is the top.
    if hair == "scribble":
        t = np.linspace(-np.pi * 0.95, -np.pi * 0.05, int(rng.integers(12, 24)))
        r = np.where(np.arange(len(t)) % 2 == 0, 1.0, _u(rng, 1.1, 1.3))
        pts = np.stack([np.cos(t) * rx * r, np.sin(t) * ry * r], 1)
        shapes.append(Shape("hair", pts @ rot))
    elif hair == "spiky":
        for a in np.linspace(-np.pi * 0.85, -np.pi * 0.15, int(rng.integers(4, 10))):
            p = np.array([np.cos(a) * rx, np.sin(a) * ry])
            shapes.append(Shape("hair", np.array([p, p * _u(rng, 1.25, 1.6)]) @ rot))
    elif hair == "long":
        for side in (1, -1):
            t = np.linspace(-np.pi / 2, 0.0, 8)
            arc = np.stack([side * np.cos(t) * rx * 1.1, np.sin(t) * ry * 1.1], 1)
            drop = arc[-1] + (side * 0.02, _u(rng, 0.1, 0.35))
            shapes.append(Shape("hair", np.concatenate([arc, [drop]]) @ rot))
    elif hair == "curly":
        for a in np.linspace(-np.pi * 0.95, -np.pi * 0.05, int(rng.integers(4, 8))):
            c = np.array([np.cos(a) * rx, np.sin(a) * ry]) * 1.05
            shapes.append(Shape("hair", ellipse(c, 0.28 * rx, 0.28 * ry, 10) @ rot, True))
    elif hair == "pigtails":
        t = np.linspace(-np.pi * 0.9, -np.pi * 0.1, 10)
        shapes.append(Shape("hair", np.stack([np.cos(t) * rx, np.sin(t) * ry * 1.05], 1) @ rot))
        for side in (1, -1):
            c = np.array([side * rx * _u(rng, 1.15, 1.4), -ry * _u(rng, 0.0, 0.4)])
            tail = ellipse(c, 0.22 * rx, 0.4 * ry, 12, 0.0, side * 0.5)
            shapes.append(Shape("hair", tail @ rot, True, rng.random() < 0.5))
    elif hair == "bun":
        c = np.array([0.0, -ry * 1.2])
        shapes.append(Shape("hair", ellipse(c, 0.35 * rx, 0.3 * ry, 12) @ rot, True, True))

    hat = styles["hat"]
    top = -ry * (1.25 if hair in ("spiky", "scribble", "curly", "bun") else 0.95)
    if hat == "party":
        h, w = _u(rng, 0.6, 1.1) * ry, _u(rng, 0.5, 0.8) * rx
        pts = np.array([(-w, top + 0.15 * ry), (0, top - h), (w, top + 0.15 * ry)])
        shapes.append(Shape("hat_fill", pts @ rot, True, True))
        shapes.append(Shape("hat", pts @ rot, True))
        shapes.append(
            Shape("hat", ellipse((0, top - h - 0.08 * ry), 0.1 * rx, 0.1 * ry, 8) @ rot, True, True)
        )
    elif hat == "cap":
        t = np.linspace(np.pi, 2 * np.pi, 10)
        dome = np.stack([np.cos(t) * rx * 0.95, np.sin(t) * ry * 0.6 + top + 0.35 * ry], 1)
        side = 1 if rng.random() < 0.5 else -1
        brim = np.array([(side * rx * 0.95, top + 0.35 * ry), (side * rx * 1.7, top + 0.4 * ry)])
        shapes.append(Shape("hat_fill", dome @ rot, True, True))
        shapes.append(Shape("hat", dome @ rot, True))
        shapes.append(Shape("hat", brim @ rot, width=1.3))
    elif hat == "top":
        w, h = rx * _u(rng, 0.55, 0.8), ry * _u(rng, 0.7, 1.2)
        body = np.array([(-w, top + 0.2 * ry), (-w, top - h), (w, top - h), (w, top + 0.2 * ry)])
        brim = np.array([(-w * 1.6, top + 0.2 * ry), (w * 1.6, top + 0.2 * ry)])
        shapes.append(Shape("hat_fill", body @ rot, True, True))
        shapes.append(Shape("hat", body @ rot, True))
        shapes.append(Shape("hat", brim @ rot, width=1.3))
    elif hat == "crown":
        w, h = rx * _u(rng, 0.5, 0.8), ry * _u(rng, 0.4, 0.7)
        n = int(rng.integers(3, 6))
        xs = np.linspace(-w, w, 2 * n + 1)
        ys = np.where(np.arange(2 * n + 1) % 2 == 0, top - h, top - h * 0.45)
        crown = np.concatenate(
            [[(-w, top + 0.15 * ry)], np.stack([xs, ys], 1), [(w, top + 0.15 * ry)]]
        )
        shapes.append(Shape("hat_fill", crown @ rot, True, True))
        shapes.append(Shape("hat", crown @ rot, True))


def draw_figure(
    rng: np.random.Generator,
    figure: Figure,
    shape: tuple[int, int],
    medium: str,
    scale: float,
    to_px,
    stroke_scale: float = 1.0,
    silhouette: bool = False,
) -> list[Ink]:
    """Draw a placed figure into inks (fills first, then lines); returns them in paint order.

    `silhouette`: the inks also keep what was meant to be drawn (`Ink.silhouette`)."""

    def new_ink(colour: np.ndarray) -> Ink:
        return Ink(rng, shape, medium, colour, scale, silhouette=silhouette)

    line = new_ink(pick_colour(rng, medium, dark=rng.random() < 0.6))
    line.width *= stroke_scale
    inks = {"line": line}
    inks["face"] = line if rng.random() < 0.7 else new_ink(pick_colour(rng, medium))
    inks["fill"] = new_ink(pick_colour(rng, medium))
    inks["leg_fill"] = inks["fill"] if rng.random() < 0.5 else new_ink(pick_colour(rng, medium))
    # Some children switch pens for the arms or the legs.
    for part in ("arm", "leg"):
        inks[part] = line if rng.random() < 0.75 else new_ink(pick_colour(rng, medium))
    inks["pattern"] = new_ink(pick_colour(rng, medium))
    inks["skin"] = new_ink(pick_colour(rng, medium, skin=True))
    inks["hair"] = new_ink(pick_colour(rng, medium, dark=rng.random() < 0.4))
    hat = new_ink(pick_colour(rng, medium))
    inks["hat"] = hat if rng.random() < 0.5 else line
    inks["hat_fill"] = hat if rng.random() < 0.6 else new_ink(pick_colour(rng, medium))
    if medium in FAINT_MEDIA and rng.random() < 0.4:  # a light hand: barely there
        light = rng.uniform(0.4, 0.75)
        for each in {id(i): i for i in inks.values()}.values():
            each.opacity *= light
    retrace = rng.random() < 0.1  # some children go over every line twice
    for s in sorted(figure.shapes, key=lambda s: not s.filled):
        ink = inks[s.role]
        pts = to_px(s.points)
        if s.filled:
            ink.fill(pts)
            continue
        for _ in range(2 if retrace else 1):
            ink.stroke(pts, s.closed, ink.width * s.width, encloses=s.closed or s.encloses)
    fills = ("skin", "fill", "leg_fill", "hat_fill")
    order = [inks[r] for r in fills + ("pattern", "hat", "hair", "face", "arm", "leg")]
    order.append(line)
    unique: list[Ink] = []
    for ink in order:
        if all(ink is not u for u in unique):
            unique.append(ink)
    return unique
