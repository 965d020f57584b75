"""Author the motions the project ships: key poses -> periodic splines -> BVH files.

Run `python bvh/author.py` from the repository root; it rewrites `bvh/*.bvh` and
`bvh/motions.yaml` byte for byte the same every time (no randomness, fixed formatting).

The rig is a standard humanoid in centimetres, Y up, facing +Z, its left side on +X,
rest pose a T-pose with the feet on the floor (y = 0). A key pose says, for a moment in
the clip, where the hips are, how the spine, neck and head turn (Euler degrees), and which
way each limb bone points (a direction in the chest frame for arms, in the hips frame
for legs). Every channel of the key poses is interpolated with a periodic cubic spline, so
a clip's last frame is its first, and a pose keyed twice in a row is held still between;
limb directions are renormalised and turned into joint rotations by the shortest swing
from the parent bone, which never passes a singularity (no bone folds back 180 degrees
onto its parent).

To add a motion: write a function returning (duration_s, [(time_s, Pose), ...]) with the
first key at 0 (the last key is implied, equal to the first), add it to MOTIONS, run this
script, and look at it (`python -m animation render --motion NAME ...`).
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicHermiteSpline, CubicSpline

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from animation.bvh import BVH, axis_rotations, format_bvh, forward_kinematics  # noqa: E402

FPS = 80  # frame time 0.0125 s is exact in decimal, so durations are too

# name, parent, offset (cm). End Sites are the entries named "*_End".
RIG: tuple[tuple[str, str | None, tuple[float, float, float]], ...] = (
    ("Hips", None, (0.0, 95.0, 0.0)),
    ("Spine", "Hips", (0.0, 10.0, 0.0)),
    ("Spine1", "Spine", (0.0, 16.0, 0.0)),
    ("Neck", "Spine1", (0.0, 22.0, 0.0)),
    ("Head", "Neck", (0.0, 9.0, 1.0)),
    ("Head_End", "Head", (0.0, 19.0, 0.0)),
    ("LeftShoulder", "Spine1", (3.0, 18.0, 0.0)),
    ("LeftArm", "LeftShoulder", (14.0, 0.0, 0.0)),
    ("LeftForeArm", "LeftArm", (28.0, 0.0, 0.0)),
    ("LeftHand", "LeftForeArm", (25.0, 0.0, 0.0)),
    ("LeftHand_End", "LeftHand", (16.0, 0.0, 0.0)),
    ("RightShoulder", "Spine1", (-3.0, 18.0, 0.0)),
    ("RightArm", "RightShoulder", (-14.0, 0.0, 0.0)),
    ("RightForeArm", "RightArm", (-28.0, 0.0, 0.0)),
    ("RightHand", "RightForeArm", (-25.0, 0.0, 0.0)),
    ("RightHand_End", "RightHand", (-16.0, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (10.0, -5.0, 0.0)),
    ("LeftLeg", "LeftUpLeg", (0.0, -42.0, 0.0)),
    ("LeftFoot", "LeftLeg", (0.0, -42.0, 0.0)),
    ("LeftToeBase", "LeftFoot", (0.0, -6.0, 13.0)),
    ("LeftToeBase_End", "LeftToeBase", (0.0, 0.0, 6.0)),
    ("RightUpLeg", "Hips", (-10.0, -5.0, 0.0)),
    ("RightLeg", "RightUpLeg", (0.0, -42.0, 0.0)),
    ("RightFoot", "RightLeg", (0.0, -42.0, 0.0)),
    ("RightToeBase", "RightFoot", (0.0, -6.0, 13.0)),
    ("RightToeBase_End", "RightToeBase", (0.0, 0.0, 6.0)),
)
NAMES = tuple(n for n, _, _ in RIG)
PARENTS = np.array([-1 if p is None else NAMES.index(p) for _, p, _ in RIG])
OFFSETS = np.array([o for _, _, o in RIG])

# Limb chains: (anchor joint whose frame the directions are given in, bones in order).
ARMS = {"left": ("Spine1", ("LeftArm", "LeftForeArm", "LeftHand")),
        "right": ("Spine1", ("RightArm", "RightForeArm", "RightHand"))}  # fmt: skip
LEGS = {"left": ("Hips", ("LeftUpLeg", "LeftLeg", "LeftFoot")),
        "right": ("Hips", ("RightUpLeg", "RightLeg", "RightFoot"))}  # fmt: skip
ROTATED = ("Hips", "Spine", "Spine1", "Neck", "Head")

FOOT_FLAT = (0.0, -6.0, 13.0)


def v(x: float, y: float, z: float) -> np.ndarray:
    a = np.array([x, y, z], dtype=np.float64)
    return a / np.linalg.norm(a)


def mirror(d: tuple[float, float, float] | np.ndarray) -> np.ndarray:
    """The same direction for the other side of the body (x flipped)."""
    return np.array([-d[0], d[1], d[2]], dtype=np.float64)


def symmetric(*dirs: tuple[float, float, float]) -> dict[str, tuple[np.ndarray, ...]]:
    """A limb pair's directions given for the left side, mirrored for the right."""
    return {"left": tuple(v(*d) for d in dirs), "right": tuple(mirror(v(*d)) for d in dirs)}


@dataclass
class Pose:
    """One key pose. Euler angles are (about x, about y, about z) in degrees, applied z-x-y."""

    # Hips: sideways and forward displacement, and the height of the lowest foot point
    # above the floor (0 = standing on it), in cm; the hips' height follows from the legs.
    hips: tuple[float, float, float] = (0.0, 0.0, 0.0)
    turn: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # ROTATED
    arms: dict[str, tuple] = field(default_factory=dict)  # side -> (upper, fore[, hand])
    legs: dict[str, tuple] = field(default_factory=dict)  # side -> (thigh, shin[, foot])

    def channels(self) -> np.ndarray:
        """Flat vector of everything that gets a spline."""
        out = [np.array(self.hips, dtype=np.float64)]
        out += [np.array(self.turn.get(j, (0.0, 0.0, 0.0)), dtype=np.float64) for j in ROTATED]
        for side in ARMS:
            upper, fore, *hand = self.arms.get(side, RELAXED_ARMS[side])
            out += [v(*d) for d in (upper, fore, hand[0] if hand else fore)]
        for side in LEGS:
            thigh, shin, *foot = self.legs.get(side, STRAIGHT_LEGS[side])
            out += [v(*d) for d in (thigh, shin, foot[0] if foot else FOOT_FLAT)]
        return np.concatenate(out)


# What a key pose that leaves a limb out does with it: arms hang relaxed, legs stand.
RELAXED_ARMS = symmetric((0.15, -1, 0.05), (0.1, -1, 0.15))
STRAIGHT_LEGS = symmetric((0, -1, 0), (0, -1, 0), FOOT_FLAT)


# ---- rotations ------------------------------------------------------------------------


def euler_matrix(deg: np.ndarray) -> np.ndarray:
    """(F, 3) degrees about x, y, z -> (F, 3, 3) rotations R = Rz @ Rx @ Ry."""
    x, y, z = deg.T
    return axis_rotations(2, z) @ axis_rotations(0, x) @ axis_rotations(1, y)


def swing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(F, 3, 3) shortest rotations taking unit vectors a onto b (never near-opposite here)."""
    axis = np.cross(a, b)
    cos = np.einsum("fi,fi->f", a, b)
    k = np.zeros((a.shape[0], 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k = k - k.transpose(0, 2, 1)
    if np.any(cos < -0.9):
        raise ValueError("a bone folds back onto its parent; change the key pose")
    # Rodrigues for unnormalised axis: I + K + K^2 / (1 + cos)
    return np.eye(3) + k + (k @ k) / (1 + cos)[:, None, None]


def to_euler(r: np.ndarray, order: str) -> np.ndarray:
    """(F, 3, 3) -> (F, 3) degrees for R = R_order[0] @ R_order[1] @ R_order[2]."""
    i, j, k = ("XYZ".index(c) for c in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    b = np.arcsin(np.clip(s * r[:, i, k], -1, 1))
    a = np.arctan2(-s * r[:, j, k], r[:, k, k])
    c = np.arctan2(-s * r[:, i, j], r[:, i, i])
    return np.degrees(np.stack([a, b, c], axis=1))


def _unwrap(deg: np.ndarray) -> np.ndarray:
    return np.degrees(np.unwrap(np.radians(deg), axis=0))


# Orders whose largest middle angle is within this of the best one count as equally good.
# Ties are common and exact in theory (an order and its reverse always have the same middle
# angle; a joint turning about one axis gives 0 for several orders), so comparing the raw
# floats let rounding noise (1e-12 degrees, different from one machine's BLAS to another's)
# pick the order, and the files were not reproducible.
_ORDER_TIE_DEGREES = 1e-3


def best_order(local: np.ndarray) -> str:
    """The Euler order whose middle angle stays furthest from gimbal lock over the clip;
    of orders equally good (within _ORDER_TIE_DEGREES), the first in XYZ, XZY, YXZ, ... ."""
    orders = ["".join(p) for p in itertools.permutations("XYZ")]
    worst = {o: float(np.max(np.abs(to_euler(local, o)[:, 1]))) for o in orders}
    best = min(worst.values())
    return next(o for o in orders if worst[o] <= best + _ORDER_TIE_DEGREES)


# ---- clip -> BVH --------------------------------------------------------------------


def world_rotations(track: np.ndarray) -> dict[str, np.ndarray]:
    """Per-frame world rotations (F, 3, 3) of the joints the key poses turn or aim."""
    n = track.shape[0]
    turns, limb_dirs = track[:, 3:18], track[:, 18:]
    world: dict[str, np.ndarray] = {}
    for k, joint in enumerate(ROTATED):
        local = euler_matrix(turns[:, 3 * k : 3 * k + 3])
        parent = NAMES[PARENTS[NAMES.index(joint)]] if joint != "Hips" else None
        world[joint] = local if parent is None else world[parent] @ local
    dirs = limb_dirs.reshape(n, -1, 3)
    dirs = dirs / np.linalg.norm(dirs, axis=2, keepdims=True)
    col = 0
    for chains in (ARMS, LEGS):
        for anchor, bones in chains.values():
            first = bones[0]
            parent = NAMES[PARENTS[NAMES.index(first)]]
            world.setdefault(parent, world[anchor])
            current = world[parent]
            for bone in bones:
                child = next(c for c in range(len(NAMES)) if PARENTS[c] == NAMES.index(bone))
                rest_dir = OFFSETS[child] / np.linalg.norm(OFFSETS[child])
                now = current @ rest_dir
                target = np.einsum("fab,fb->fa", world[anchor], dirs[:, col])
                current = swing(now, target) @ current
                world[bone] = current
                col += 1
    return world


def clip_to_bvh(duration: float, keys: list[tuple[float, Pose]], fps: float = FPS) -> BVH:
    """The key poses as a BVH clip of this rig sampled at `fps`, last frame = first."""
    times = np.array([t for t, _ in keys] + [duration])
    values = np.stack([p.channels() for _, p in keys] + [keys[0][1].channels()])
    slopes = CubicSpline(times, values, bc_type="periodic", axis=0)(times, 1)
    # A pose held (the same key twice in a row) is held still: no drift between its keys,
    # so its frames are the same (and cost a GIF nothing).
    same = np.all(values[1:] == values[:-1], axis=1)
    held = np.r_[same, False] | np.r_[False, same]
    held[[0, -1]] = held[0] | held[-1]  # the clip's first and last key are one
    slopes[held] = 0.0
    spline = CubicHermiteSpline(times, values, slopes, axis=0)
    n_frames = int(round(duration * fps)) + 1
    track = spline(np.arange(n_frames) / fps)
    hips = track[:, :3]  # sideways, lift of the lowest foot, forward
    world = world_rotations(track)

    channels: list[tuple[str, ...]] = []
    columns: list[np.ndarray] = []
    for j, name in enumerate(NAMES):
        if name.endswith("_End"):
            channels.append(())
            continue
        w = world.get(name)
        if w is None:  # clavicles and toes ride on their parents
            w = world[NAMES[PARENTS[j]]]
            world[name] = w
        parent = NAMES[PARENTS[j]] if PARENTS[j] >= 0 else None
        local = w if parent is None else np.einsum("fba,fbc->fac", world[parent], w)
        order = best_order(local)
        chans = tuple(f"{c}rotation" for c in order)
        if parent is None:
            chans = ("Xposition", "Yposition", "Zposition", *chans)
            columns.append(OFFSETS[0] + hips * [1, 0, 1])
        channels.append(chans)
        columns.append(_unwrap(to_euler(local, order)))
    motion = np.concatenate(columns, axis=1)
    offsets = OFFSETS.copy()
    offsets[0] = 0.0  # the root's position channels carry its height
    standing = BVH(NAMES, PARENTS.copy(), offsets, tuple(channels), 1.0 / fps, motion, "author")
    # Put the lowest foot point at the key poses' lift above the floor, so that grounded
    # feet neither sink nor float whatever the legs do (and never below where the spline dips).
    feet = [NAMES.index(n) for n in NAMES if "Foot" in n or "Toe" in n]
    lowest = forward_kinematics(standing)[:, feet, 1].min(axis=1)
    motion = motion.copy()
    motion[:, 1] += np.maximum(hips[:, 1], 0.0) - lowest
    return replace(standing, motion=motion)


# ---- the motions ----------------------------------------------------------------------


def dab() -> tuple[float, list[tuple[float, Pose]]]:
    """Stand, dab to the left, stand, dab to the right. Made for a drawn figure: the head
    stays nearly upright (a drawn head is big and flat) and the bent arm crosses in front of
    the chest, its forearm parallel to the straight arm, clear of the face."""
    stand = Pose(legs={s: (v(0, -1, 0), v(0, -1, 0)) for s in ("left", "right")})
    # Dab to the figure's left: left arm straight up-out; right upper arm level across the
    # chest, in front of it; right forearm up-out beside the left shoulder.
    straight = v(0.72, 0.62, 0.2)
    across_upper = v(0.85, -0.1, 0.5)
    left_dab = Pose(
        hips=(-2.0, 0.0, 0.0),
        turn={"Spine": (4, 0, -3), "Spine1": (4, 0, -2), "Neck": (10, 0, -8), "Head": (6, 0, -4)},
        arms={"left": (straight, straight), "right": (across_upper, straight)},
        legs={"left": (v(0.25, -1, 0.1), v(0.1, -1, 0)),
              "right": (v(-0.12, -1, 0.1), v(-0.12, -1, -0.05))},
    )  # fmt: skip
    right_dab = mirror_pose(left_dab)
    return 4.0, [
        (0.0, stand),
        (0.55, left_dab),
        (1.0, left_dab),
        (1.45, left_dab),
        (2.0, stand),
        (2.55, right_dab),
        (3.0, right_dab),
        (3.45, right_dab),
    ]


def mirror_pose(p: Pose) -> Pose:
    """The pose with left and right swapped (x mirrored)."""
    hx, hy, hz = p.hips

    def turn(t):  # mirroring in x negates rotations about y and z
        return (t[0], -t[1], -t[2])

    def flip(dirs):
        return tuple(mirror(d) for d in dirs)

    other = {"left": "right", "right": "left"}
    return Pose(
        hips=(-hx, hy, hz),
        turn={j: turn(t) for j, t in p.turn.items()},
        arms={other[s]: flip(d) for s, d in p.arms.items()},
        legs={other[s]: flip(d) for s, d in p.legs.items()},
    )


def jumping() -> tuple[float, list[tuple[float, Pose]]]:
    """Crouch, take off with an arm swing, airborne tuck, land, absorb, stand."""
    stand = Pose()
    crouch = Pose(
        hips=(0.0, 0.0, -4.0),
        turn={"Spine": (18, 0, 0), "Spine1": (10, 0, 0), "Neck": (-12, 0, 0)},
        arms=symmetric((0.35, -0.8, -0.5), (0.3, -0.7, -0.6)),
        legs=symmetric((0.5, -0.5, 0.7), (0.25, -1, -0.45), (0.1, -0.4, 1)),
    )
    takeoff = Pose(
        hips=(0.0, 2.0, 0.0),
        turn={"Spine": (-4, 0, 0)},
        arms=symmetric((0.45, 1, 0.2), (0.4, 1, 0.1)),
        legs=symmetric((0, -1, 0), (0, -1, -0.05), (0, -1, 0.5)),
    )
    apex = Pose(
        hips=(0.0, 38.0, 0.0),
        turn={"Spine": (-2, 0, 0)},
        arms=symmetric((1, 0.9, 0.1), (1, 1.2, 0)),
        legs=symmetric((0.45, -0.7, 0.5), (0.3, -1, -0.3), (0, -0.5, 1)),
    )
    land = Pose(
        arms=symmetric((1, 0.2, 0.2), (1, 0.1, 0.2)),
        legs=symmetric((0, -1, 0.02), (0, -1, 0), (0, -0.5, 1)),
    )
    absorb = Pose(
        hips=(0.0, 0.0, -3.0),
        turn={"Spine": (14, 0, 0), "Neck": (-8, 0, 0)},
        arms=symmetric((0.8, -0.5, 0.3), (0.6, -0.4, 0.7)),
        legs=symmetric((0.45, -0.6, 0.6), (0.2, -1, -0.4), (0.1, -0.4, 1)),
    )
    return 2.2, [
        (0.0, stand),
        (0.45, crouch),
        (0.7, takeoff),
        (0.95, apex),
        (1.2, land),
        (1.45, absorb),
    ]


def wave_hello() -> tuple[float, list[tuple[float, Pose]]]:
    """The right hand up, the forearm swinging side to side at the elbow, the body swaying."""
    upper = mirror(v(0.85, 0.35, 0.15))
    out, inn = mirror(v(0.95, 0.8, 0.15)), mirror(v(-0.5, 1, 0.15))

    def pose(fore, sway):
        return Pose(
            hips=(2.5 * sway, 0.0, 0.0),
            turn={"Spine": (0, 0, 3 * sway), "Spine1": (0, 0, 2 * sway),
                  "Neck": (4, 0, -6 * sway), "Head": (0, 8, -6)},
            arms={"right": (upper, fore, fore)},
            legs={"left": (v(-0.03 * sway, -1, 0), v(0, -1, 0)),
                  "right": (v(-0.03 * sway, -1, 0), v(0, -1, 0))},
        )  # fmt: skip

    keys = []
    n_swings = 6
    for k in range(n_swings):
        sway = np.cos(2 * np.pi * k / n_swings)
        keys.append((0.4 * k, pose(out if k % 2 == 0 else inn, sway)))
    return 0.4 * n_swings, keys


def zombie() -> tuple[float, list[tuple[float, Pose]]]:
    """A shambling step-and-drag walk in place: arms stretched forward, stiff legs, lurching.

    The left leg takes a stiff-kneed step forward and the body lurches onto it; the right
    leg, left behind, drags its toe up to meet it. The body leans the way the figure faces,
    the head hangs forward and lolls. The arms reach straight forward, nearly level, and
    bob out of step. Arms and legs are shown from the side (see LIMB_PROJECTION), so both
    arms point the same way in the picture, as in a zombie seen half in profile.
    """

    def pose(lead, drag, sway: float, lurch: float, bob: float) -> Pose:
        # lead, drag: (thigh, shin[, foot]) directions of the stepping and the dragged leg;
        # sway: hips sideways, cm (+ = onto the stepping leg); lurch: 0..1; bob: -1..1.
        # Arm directions are in the chest frame, which pitches forward about 18 degrees:
        # raised by most of that here, the arms are about level in the world. The right arm,
        # which crosses the body in the picture, reaches a little lower, under the chin.
        arms = {
            "left": (v(0.05, 0.22 + 0.1 * bob, 1), v(0.0, 0.12 + 0.06 * bob, 1)),
            "right": (mirror(v(0.05, 0.02 - 0.08 * bob, 1)),
                      mirror(v(0.0, 0.02 - 0.06 * bob, 1))),
        }  # fmt: skip
        return Pose(
            hips=(sway, 0.0, 0.0),
            turn={"Hips": (0, 6 * lurch, -3 * lurch),
                  "Spine": (12, -4 * lurch, -7 - 7 * lurch), "Spine1": (6, 0, -4),
                  "Neck": (18 + 6 * lurch, 6, -8 - 2 * lurch), "Head": (8, 4, -3 - 2 * lurch)},
            arms=arms,
            legs={"left": lead, "right": drag},
        )  # fmt: skip

    toe_down = (-0.03, -1, 0.4)  # the dragged foot scrapes along on its toe
    lifted = pose(
        lead=(v(0.05, -1, 0.5), v(0.04, -1, 0.22), v(0.05, -0.6, 1)),
        drag=(v(-0.03, -1, -0.22), v(-0.03, -1, -0.28), toe_down),
        sway=-3.0, lurch=0.2, bob=1.0,
    )  # fmt: skip
    landed = pose(
        lead=(v(0.05, -1, 0.36), v(0.05, -1, 0.34)),
        drag=(v(-0.03, -1, -0.3), v(-0.03, -1, -0.36), toe_down),
        sway=4.0, lurch=1.0, bob=-0.5,
    )  # fmt: skip
    dragging = pose(
        lead=(v(0.04, -1, 0.14), v(0.04, -1, 0.12)),
        drag=(v(-0.03, -1, -0.08), v(-0.03, -1, -0.12), toe_down),
        sway=2.0, lurch=0.6, bob=0.6,
    )  # fmt: skip
    gathered = pose(
        lead=(v(0.03, -1, 0.05), v(0.03, -1, 0.04)),
        drag=(v(-0.03, -1, -0.04), v(-0.03, -1, -0.04)),
        sway=0.0, lurch=0.3, bob=-0.8,
    )  # fmt: skip
    return 3.0, [(0.0, lifted), (0.75, landed), (1.5, dragging), (2.25, gathered)]


def clap() -> tuple[float, list[tuple[float, Pose]]]:
    """Clapping in front of the chest: the arms open, then the hands meet at the middle,
    four times, the body bobbing a little with each clap."""
    open_ = Pose(arms=symmetric((0.55, -0.55, 0.6), (0.8, 0.2, 0.55)))
    together = Pose(
        hips=(0.0, 0.0, 0.0),
        turn={"Spine": (3, 0, 0), "Neck": (-3, 0, 0)},
        arms=symmetric((0.3, -0.6, 0.75), (-0.6, 0.1, 0.8)),
        legs=symmetric((0.02, -1, 0.08), (0.02, -1, -0.06)),
    )
    return 1.6, [(0.2 * k, together if k % 2 else open_) for k in range(8)]


def cheer() -> tuple[float, list[tuple[float, Pose]]]:
    """Both arms thrown up in a V, bouncing on the knees: a cheer."""
    up = Pose(arms=symmetric((0.6, 0.8, 0.1), (0.5, 0.86, 0.05)))
    bounce = Pose(
        turn={"Spine": (4, 0, 0), "Neck": (-4, 0, 0)},
        arms=symmetric((0.85, 0.45, 0.15), (0.35, 0.95, 0.1)),
        legs=symmetric((0.08, -1, 0.3), (0.05, -1, -0.25)),
    )
    return 2.0, [(0.0, up), (0.5, bounce), (1.0, up), (1.5, bounce)]


def wave_both() -> tuple[float, list[tuple[float, Pose]]]:
    """Both arms raised, the forearms swinging side to side together: waving from afar."""
    upper = v(0.85, 0.35, 0.15)

    def pose(lean: float) -> Pose:
        left = v(0.55 * lean, 1, 0.1)  # lean +1: out to the figure's left, -1: to its right
        right = v(0.55 * lean, 1, 0.1)
        return Pose(
            hips=(1.5 * lean, 0.0, 0.0),
            turn={"Spine": (0, 0, 2 * lean)},
            arms={"left": (upper, left, left), "right": (mirror(upper), right, right)},
        )

    return 2.4, [(0.4 * k, pose(1.0 if k % 2 == 0 else -1.0)) for k in range(6)]


def bow() -> tuple[float, list[tuple[float, Pose]]]:
    """A bow: the body bends forward from the hips, holds, and straightens; the arms hang.
    Seen from the side (LIMB_PROJECTION), so the bend shows; the head stays on the torso."""
    bent = Pose(
        hips=(0.0, 0.0, -4.0),
        turn={"Spine": (60, 0, 0), "Spine1": (15, 0, 0), "Neck": (-10, 0, 0)},
        arms=symmetric((0.1, -0.85, 0.55), (0.05, -0.75, 0.65)),
    )
    return 3.0, [(0.0, Pose()), (0.5, Pose()), (1.2, bent), (1.8, bent), (2.5, Pose())]


def kick() -> tuple[float, list[tuple[float, Pose]]]:
    """A side kick with each leg: the knee comes up, the leg shoots out sideways above the
    other knee, and comes back; the arms up in a guard, the body leaning away a little."""
    guard = symmetric((0.55, -0.55, 0.5), (0.05, 1, 0.35))

    def kicking(side: str, out: bool) -> Pose:
        lean = 1.0 if side == "right" else -1.0  # lean away from the kicking leg
        thigh, shin = (
            ((0.9, 0.25, 0.1), (1, 0.3, 0.05)) if out else ((0.6, -0.2, 0.7), (0.2, -1, 0))
        )
        leg = (v(*thigh), v(*shin), v(0.3, -0.2, 1))
        legs = {side: leg if side == "left" else tuple(mirror(d) for d in leg)}
        return Pose(hips=(3.0 * lean, 0.0, 0.0), turn={"Spine": (0, 0, 8 * lean)}, arms=guard,
                    legs=legs)  # fmt: skip

    stand = Pose(arms=guard)
    return 3.2, [
        (0.0, stand), (0.35, kicking("right", False)), (0.7, kicking("right", True)),
        (0.95, kicking("right", True)), (1.3, kicking("right", False)), (1.6, stand),
        (1.95, kicking("left", False)), (2.3, kicking("left", True)),
        (2.55, kicking("left", True)), (2.9, kicking("left", False)),
    ]  # fmt: skip


def hop() -> tuple[float, list[tuple[float, Pose]]]:
    """Hopping on the right leg, the left knee bent and its foot held up: three hops."""
    # The left foot tucked up and out to its side, so a flat figure shows it held up (a
    # shin folded straight back points at the camera and would show nothing).
    held = (v(0.45, -1, 0.3), v(0.85, 0.25, -0.45), v(0.3, 0.2, 1))

    def pose(air: float) -> Pose:  # air: 0 crouched on the ground .. 1 at the top
        bend = 1.0 - air
        return Pose(
            hips=(0.0, 14.0 * air, 0.0),
            turn={"Spine": (6 * bend, 0, 0)},
            arms=symmetric((0.45, -0.7 + 0.5 * air, 0.3), (0.4, -0.4 + 0.8 * air, 0.5)),
            legs={"left": held,
                  "right": (mirror(v(0.05, -1, 0.45 * bend)), mirror(v(0.05, -1, -0.4 * bend)),
                            mirror(v(0.05, -0.3, 1)))},
        )  # fmt: skip

    return 2.1, [(0.35 * k, pose(1.0 if k % 2 else 0.0)) for k in range(6)]


def stomp() -> tuple[float, list[tuple[float, Pose]]]:
    """Stomping like a giant: each knee lifted high out to its side, then the foot stamped
    down, the body dipping onto it and the fists swinging. In the picture plane throughout."""

    def lifted(side: str) -> Pose:
        lean = 1.0 if side == "right" else -1.0  # onto the standing leg
        leg = (v(0.75, -0.45, 0.2), v(0.1, -1, 0.05))
        legs = {side: leg if side == "left" else tuple(mirror(d) for d in leg)}
        return Pose(hips=(3.0 * lean, 0.0, 0.0), turn={"Spine": (0, 0, 6 * lean)},
                    arms=symmetric((0.7, -0.5, 0.2), (0.2, 0.9, 0.2)), legs=legs)  # fmt: skip

    stamped = Pose(
        turn={"Spine": (6, 0, 0), "Neck": (-4, 0, 0)},
        arms=symmetric((0.5, -0.85, 0.1), (0.45, -0.9, 0.1)),
        legs=symmetric((0.25, -1, 0.2), (0.05, -1, -0.15)),
    )
    return 2.4, [(0.0, lifted("left")), (0.6, stamped), (1.2, lifted("right")), (1.8, stamped)]


def box() -> tuple[float, list[tuple[float, Pose]]]:
    """Boxing: from a guard (fists up before the chin), a punch straight out to each side
    in turn, the body turning into it. Out to the side, the punches stay in the picture."""
    guard = ((0.45, -0.6, 0.55), (-0.2, 0.9, 0.4))
    punch = ((1, 0.1, 0.15), (1, 0.1, 0.1))

    def pose(jab: str | None) -> Pose:
        arms = {}
        for side in ("left", "right"):
            dirs = punch if side == jab else guard
            arms[side] = tuple(v(*d) if side == "left" else mirror(v(*d)) for d in dirs)
        lean = {"left": 1.0, "right": -1.0}.get(jab or "", 0.0)  # toward the punch
        return Pose(hips=(2.0 * lean, 0.0, 0.0), turn={"Spine": (0, 0, -5 * lean)}, arms=arms,
                    legs=symmetric((0.15, -1, 0.1), (0.08, -1, -0.05)))  # fmt: skip

    return 2.0, [(0.0, pose(None)), (0.3, pose("left")), (0.8, pose(None)), (1.3, pose("right"))]


def walk() -> tuple[float, list[tuple[float, Pose]]]:
    """Walking on the spot, seen from the side (LIMB_PROJECTION): each leg strides forward
    in turn, the arms swinging against the legs."""

    def stride(lead: str) -> Pose:
        back = "right" if lead == "left" else "left"
        legs = {
            lead: (v(0, -1, 0.42), v(0, -1, 0.2), v(0, -0.4, 1)),
            back: (v(0, -1, -0.38), v(0, -1, -0.5), v(0, -0.7, 1)),
        }
        arms = {
            back: (v(0.05, -1, 0.45), v(0.0, -0.8, 0.75)),
            lead: (v(0.05, -1, -0.4), v(0.0, -1, -0.25)),
        }
        return Pose(turn={"Spine": (3, 0, 0)}, arms={s: tuple(d if s == "left" else mirror(d)
                    for d in arms[s]) for s in arms}, legs={s: tuple(d if s == "left" else
                    mirror(d) for d in legs[s]) for s in legs})  # fmt: skip

    passing = Pose(turn={"Spine": (3, 0, 0)}, legs={"left": (v(0, -1, 0.15), v(0, -1, -0.15)),
                   "right": (v(0, -1, -0.05), v(0, -1, -0.05))})  # fmt: skip
    return 2.0, [(0.0, stride("left")), (0.5, passing), (1.0, stride("right")),
                 (1.5, mirror_pose(passing))]  # fmt: skip


def run() -> tuple[float, list[tuple[float, Pose]]]:
    """Running on the spot, seen from the side: knees driven high in turn, the bent arms
    pumping against them, the body leaning a little into the run."""

    def drive(lead: str) -> Pose:
        back = "right" if lead == "left" else "left"
        legs = {
            lead: (v(0, -0.2, 1), v(0, -1, 0.1), v(0, -0.3, 1)),
            back: (v(0, -1, -0.3), v(0, -0.6, -1), v(0, 0.2, 1)),
        }
        arms = {
            back: (v(0.05, -0.7, 0.7), v(0, 0.6, 0.8)),
            lead: (v(0.05, -0.6, -0.8), v(0, -0.3, 1)),
        }
        mirror_side = {
            s: (lambda d, s=s: d if s == "left" else mirror(d)) for s in ("left", "right")
        }
        return Pose(turn={"Spine": (8, 0, 0), "Neck": (-6, 0, 0)},
                    arms={s: tuple(mirror_side[s](d) for d in arms[s]) for s in arms},
                    legs={s: tuple(mirror_side[s](d) for d in legs[s]) for s in legs})  # fmt: skip

    return 0.9, [(0.0, drive("left")), (0.45, drive("right"))]


def jump_rope() -> tuple[float, list[tuple[float, Pose]]]:
    """Skipping a rope: little hops on both feet, the hands out by the hips turning it."""

    def pose(air: float, turn: float) -> Pose:
        fore = (0.9 * np.cos(turn), -0.35 + 0.35 * np.sin(turn), 0.3)  # never above level
        return Pose(hips=(0.0, 7.0 * air, 0.0),
                    arms=symmetric((0.35, -1, 0.05), fore),
                    legs=symmetric((0.04, -1, 0.12 * (1 - air)), (0.02, -1, -0.1 * (1 - air)),
                                   (0.05, -0.6 + 0.3 * air, 1)))  # fmt: skip

    return 2.4, [(0.3 * k, pose(float(k % 2), np.pi * k / 2)) for k in range(8)]


def shrug() -> tuple[float, list[tuple[float, Pose]]]:
    """A shrug: elbows at the sides, the forearms turned out with the palms up, the head
    tipped a little: "I don't know" (twice)."""
    shrugged = Pose(turn={"Neck": (0, 0, 8), "Head": (0, 0, 6)},
                    arms=symmetric((0.25, -1, 0.1), (1, 0.45, 0.25), (1, 0.6, 0.2)))  # fmt: skip
    return 3.0, [(0.0, Pose()), (0.5, shrugged), (1.1, shrugged), (1.5, Pose()),
                 (2.0, mirror_pose(shrugged)), (2.6, mirror_pose(shrugged))]  # fmt: skip


def robot() -> tuple[float, list[tuple[float, Pose]]]:
    """The robot: upper arms out level, the forearms snapping square at the elbow, one up and
    one down, then swapped; each pose held still a moment (keyed twice)."""

    def pose(left_up: bool) -> Pose:
        up, down = v(0, 1, 0.05), v(0, -1, 0.05)
        return Pose(arms={"left": (v(1, 0, 0.05), up if left_up else down),
                          "right": (mirror(v(1, 0, 0.05)), down if left_up else up)})  # fmt: skip

    a, b = pose(True), pose(False)
    return 2.4, [(0.0, a), (0.45, a), (0.6, b), (1.05, b), (1.2, a), (1.65, a), (1.8, b),
                 (2.25, b)]  # fmt: skip


def swim() -> tuple[float, list[tuple[float, Pose]]]:
    """Swimming on dry land: the arms windmill in turn in the picture plane, over the head
    and down past the hips, as in a front crawl seen from ahead."""

    def pose(phase: float) -> Pose:
        # each arm goes round a circle at its side, the right half a turn behind the left
        def arm(angle: float) -> tuple:
            d = (0.35 + 0.65 * np.cos(angle), np.sin(angle), 0.15)
            return (d, d)

        left, right = arm(phase), arm(phase + np.pi)
        return Pose(turn={"Spine": (0, 0, 4 * np.sin(phase))},
                    arms={"left": tuple(v(*d) for d in left),
                          "right": tuple(mirror(v(*d)) for d in right)})  # fmt: skip

    return 2.4, [(0.3 * k, pose(np.pi * k / 4)) for k in range(8)]


def dizzy() -> tuple[float, list[tuple[float, Pose]]]:
    """Dizzy: the body wobbling round in a slow circle, arms flopping out for balance, the
    head lolling a little the other way."""

    def pose(angle: float) -> Pose:
        sx, sz = np.cos(angle), np.sin(angle)
        return Pose(hips=(5.0 * sx, 0.0, 3.0 * sz),
                    turn={"Spine": (5 * sz, 0, -9 * sx), "Neck": (0, 0, 10 * sx)},
                    arms=symmetric((0.8, -0.5 + 0.3 * sx, 0.2), (0.7, -0.3 - 0.3 * sx, 0.3)),
                    legs=symmetric((0.1 - 0.05 * sx, -1, 0.05), (0.05, -1, 0)))  # fmt: skip

    return 3.2, [(0.4 * k, pose(np.pi * k / 4)) for k in range(8)]


def sneak() -> tuple[float, list[tuple[float, Pose]]]:
    """Sneaking on tiptoe: crouched low, hands up like paws before the chest, creeping one
    slow step after the other (legs seen from the side)."""

    def step(lead: str) -> Pose:
        back = "right" if lead == "left" else "left"
        legs = {
            lead: (v(0, -0.55, 0.85), v(0, -1, -0.35), v(0, -0.7, 1)),
            back: (v(0, -0.9, -0.45), v(0, -0.55, -0.85), v(0, -0.9, 0.6)),
        }
        flip = {s: (lambda d, s=s: d if s == "left" else mirror(d)) for s in ("left", "right")}
        return Pose(hips=(0.0, 0.0, 2.0), turn={"Spine": (14, 0, 0), "Neck": (-10, 0, 0)},
                    arms=symmetric((0.3, -0.6, 0.7), (0.15, 0.9, 0.3), (0.1, -0.6, 0.8)),
                    legs={s: tuple(flip[s](d) for d in legs[s]) for s in legs})  # fmt: skip

    return 3.0, [(0.0, step("left")), (1.5, step("right"))]


def star_jump() -> tuple[float, list[tuple[float, Pose]]]:
    """Star jumps: jump out into a star, arms up and legs apart, and back in, three times."""
    star = Pose(hips=(0.0, 6.0, 0.0), arms=symmetric((0.75, 0.7, 0.05), (0.6, 0.8, 0.0)),
                legs=symmetric((0.4, -1, 0.05), (0.35, -1, 0)))  # fmt: skip
    closed = Pose(arms=symmetric((0.12, -1, 0.05), (0.08, -1, 0.1)),
                  legs=symmetric((0.02, -1, 0.1), (0.02, -1, -0.08)))  # fmt: skip
    return 2.4, [(0.4 * k, star if k % 2 else closed) for k in range(6)]


def disco() -> tuple[float, list[tuple[float, Pose]]]:
    """Disco: the right arm points up across to the left, then down across to the right,
    the other hand on the hip, the hips swaying with it; then the same with the left arm."""
    on_hip = (v(0.75, -0.55, 0.1), v(-0.55, -0.5, 0.3))

    def point(side: str, up: bool) -> Pose:
        arm = (
            (v(0.55, 0.85, 0.15), v(0.5, 0.85, 0.1))
            if up
            else (v(0.75, -0.65, 0.15), v(0.7, -0.7, 0.1))
        )
        other = "left" if side == "right" else "right"
        flip = (lambda d: d) if side == "left" else mirror
        oflip = (lambda d: d) if other == "left" else mirror
        sway = (1.0 if up else -1.0) * (1.0 if side == "left" else -1.0)
        return Pose(hips=(3.0 * sway, 0.0, 0.0), turn={"Spine": (0, 0, -4 * sway)},
                    arms={side: tuple(flip(d) for d in arm), other: tuple(oflip(d) for d in on_hip)},
                    legs=symmetric((0.12 + 0.05 * sway, -1, 0.05), (0.05, -1, 0)))  # fmt: skip

    return 3.2, [(0.0, point("left", True)), (0.4, point("left", False)),
                 (0.8, point("left", True)), (1.2, point("left", False)),
                 (1.6, point("right", True)), (2.0, point("right", False)),
                 (2.4, point("right", True)), (2.8, point("right", False))]  # fmt: skip


def skip() -> tuple[float, list[tuple[float, Pose]]]:
    """Skipping: a hop on one foot with the other knee up out to its side, then the other
    way, the arms swinging up with each knee."""

    def pose(side: str, air: float) -> Pose:
        knee = (v(0.55, -0.55, 0.35), v(0.15, -1, 0.1), v(0.3, -0.2, 1))
        legs = {side: knee if side == "left" else tuple(mirror(d) for d in knee)}
        lift = 0.6 * air
        arms = symmetric((0.5, -0.7 + lift, 0.2), (0.45, -0.4 + lift, 0.3))
        return Pose(hips=(0.0, 10.0 * air, 0.0), arms=arms, legs=legs)

    # From the ground, as every clip that leaves it starts and ends.
    return 1.6, [(0.0, pose("right", 0.0)), (0.4, pose("left", 1.0)), (0.8, pose("left", 0.0)),
                 (1.2, pose("right", 1.0))]  # fmt: skip


def stretch() -> tuple[float, list[tuple[float, Pose]]]:
    """A morning stretch: the arms reach high overhead, the body rising tall, then they open
    wide and come down slowly."""
    high = Pose(turn={"Neck": (-6, 0, 0)}, arms=symmetric((0.2, 1, 0.05), (0.12, 1, 0.0)))
    wide = Pose(arms=symmetric((1, 0.35, 0.05), (1, 0.3, 0.0)))
    return 4.0, [(0.0, Pose()), (1.0, high), (1.8, high), (2.6, wide), (3.2, Pose())]


MOTIONS = {  # name: (make, description, group, rendered when a request names none)
    "dab": (dab, "a dab to each side: one arm up and out, the other bent across the chest",
            "dance", True),
    "jumping": (jumping, "crouch, take off, airborne, land, absorb", "sport", True),
    "wave_hello": (wave_hello, "a friendly wave with the right hand, body swaying",
                   "everyday", True),
    "zombie": (zombie, "a shambling zombie walk in place, arms stretched forward", "silly", True),
    "clap": (clap, "clapping in front of the chest, four claps", "everyday", False),
    "cheer": (cheer, "both arms thrown up in a V, bouncing on the knees", "dance", False),
    "wave_both": (wave_both, "both arms up, waving side to side together", "everyday", False),
    "bow": (bow, "a bow from the hips, seen from the side", "everyday", False),
    "kick": (kick, "a side kick with each leg, fists up in a guard", "sport", False),
    "hop": (hop, "three hops on the right foot, the left one tucked up", "sport", False),
    "stomp": (stomp, "stomping like a giant: each knee lifted high, the foot stamped down",
              "silly", False),
    "box": (box, "boxing: from a guard, a punch out to each side in turn", "sport", False),
    "walk": (walk, "walking on the spot, seen from the side", "everyday", False),
    "run": (run, "running on the spot, knees high, arms pumping, seen from the side",
            "sport", False),
    "jump_rope": (jump_rope, "little hops over a rope the hands turn", "sport", False),
    "shrug": (shrug, "a shrug: forearms out, palms up, \"I don't know\"", "everyday", False),
    "robot": (robot, "the robot: forearms snapping square, one up, one down", "dance", False),
    "swim": (swim, "swimming on dry land: the arms windmilling in turn", "sport", False),
    "dizzy": (dizzy, "dizzy: wobbling round in a slow circle, arms out", "silly", False),
    "sneak": (sneak, "sneaking on tiptoe, crouched, hands up like paws", "silly", False),
    "star_jump": (star_jump, "star jumps: out into a star and back in", "sport", False),
    "disco": (disco, "disco: an arm pointing up across and down across, hips swaying",
              "dance", False),
    "skip": (skip, "skipping: a hop with the other knee up, side to side", "dance", False),
    "stretch": (stretch, "a morning stretch: arms high overhead, then wide and down",
                "everyday", False),
}  # fmt: skip
# Limb groups not seen from the front. The zombie's arms and legs are seen from the side:
# both arms reach the same way in the picture (a per-limb best_fit plane would send each
# arm to its own side, a scarecrow), and the step-and-drag stride shows; so do a walk's, a
# run's and a sneak's. The bow's torso and arms too: bending forward is what it is.
_SIDE_VIEW = {
    "left_arm": "sagittal", "right_arm": "sagittal",
    "left_leg": "sagittal", "right_leg": "sagittal",
}  # fmt: skip
LIMB_PROJECTION = {
    "zombie": _SIDE_VIEW,
    "bow": {"torso": "sagittal", "left_arm": "sagittal", "right_arm": "sagittal"},
    "walk": _SIDE_VIEW,
    "run": _SIDE_VIEW,
    "sneak": _SIDE_VIEW,
}  # fmt: skip

BONES = {
    "hip": ("Hips", "Spine1"), "torso": ("Hips", "Spine1"), "neck": ("Neck", "Head_End"),
    "left_shoulder": ("RightArm", "LeftArm"), "left_elbow": ("LeftArm", "LeftForeArm"),
    "left_hand": ("LeftForeArm", "LeftHand"),
    "right_shoulder": ("LeftArm", "RightArm"), "right_elbow": ("RightArm", "RightForeArm"),
    "right_hand": ("RightForeArm", "RightHand"),
    "left_hip": ("RightUpLeg", "LeftUpLeg"), "left_knee": ("LeftUpLeg", "LeftLeg"),
    "left_foot": ("LeftLeg", "LeftFoot"),
    "right_hip": ("LeftUpLeg", "RightUpLeg"), "right_knee": ("RightUpLeg", "RightLeg"),
    "right_foot": ("RightLeg", "RightFoot"),
}  # fmt: skip


def motion_table() -> str:
    """The text of bvh/motions.yaml (written by hand-rolled YAML to keep it stable)."""
    lines = [
        "# Motions the service ships. Generated by bvh/author.py; edit that, then rerun it.",
        "# bones: character joint -> [from, to] BVH joints; the character bone ending at that",
        "# joint points the way from -> to does, projected onto the picture plane.",
        "# An End Site is named after its joint: Head_End is the tip of Head.",
        "# projection: front | best_fit | sagittal (side view: the figure's forward is the",
        "# image's right), per limb group in limb_projection.",
        "motions:",
    ]
    for name, (_, description, group, default) in MOTIONS.items():
        lines += [
            f"  {name}:",
            f"    file: {name}.bvh",
            f"    description: {json.dumps(description)}",
            f"    group: {group}",
            *([] if default else ["    default: false"]),
            "    start_frame: 0",
            "    end_frame: null",
            "    up: y",
            "    projection: front",
        ]
        limbs = LIMB_PROJECTION.get(name)
        if limbs:
            lines.append(
                "    limb_projection: {" + ", ".join(f"{k}: {v}" for k, v in limbs.items()) + "}"
            )
        lines.append("    bones:")
        lines += [f"      {j}: [{a}, {b}]" for j, (a, b) in BONES.items()]
    return "\n".join(lines) + "\n"


def main(out_dir: Path = ROOT) -> None:
    """Write every motion's BVH file and the motion table into out_dir."""
    out_dir = Path(out_dir)
    for name, (make, *_) in MOTIONS.items():
        duration, keys = make()
        (out_dir / f"{name}.bvh").write_text(format_bvh(clip_to_bvh(duration, keys)))
    (out_dir / "motions.yaml").write_text(motion_table())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
