"""Body parts: the drawing cut into the pieces its bones move, each moved whole.

A drawn figure is flat and its head is big: a mesh bent as one sheet crushes a face into
an elbow, drags a sleeve along with the arm lying beside it and stretches a limb into a
line when a joint estimate misses the ink. So the figure moves like a paper puppet:

1. Every triangle belongs to one part (`PARTS`): the part of the bone nearest to it
   *along the figure* (a geodesic Voronoi over the mesh's triangles, seeded on the
   bones), so an arm that touches the head stays an arm. A step across a drawn edge (a
   change of colour: a sleeve against a skirt) counts longer, so the parts' borders keep
   to the drawing's own. The head starts at the mask's narrowest point between the
   shoulders and the face (the drawn neck); a head drawn as a mass wider than where it
   meets the body is the head's round the face joint, however the arms' bones run beside
   it, and a piece of the body drawn joined to the head alone goes with the head
   (`body_pieces_on_the_head`). Where the torso is a blob (a round body, a
   cone, a tree), its thick mass (`body_core`) is the body's alone: a pose model often
   runs an arm's bones across it, and the arm then moves only what is drawn outside the
   body, turning where its bone leaves the body; legs give up the body's far thicker
   mass (a tree's broad base).
2. The mesh is cut between every two parts, and each part turns whole (a rotation and a
   translation, never a stretch) about the joint it hangs from (`PartBinding`): the head
   about the drawn neck, a limb about its shoulder, elbow, hip or knee (moved onto the
   middle of the seam there, `on_seams`; a limb meshed to it through a corner only, with
   no seam, about that corner), carried there by the part it hangs from. A face, a hand,
   a sleeve keeps its drawn shape in every frame.
3. The seams stay closed: around each joint a disk of the parent part's drawing, as wide
   as the limb, turns with the child and is drawn behind every part (`BACKING`), so a
   bent elbow or a raised arm shows a rounded joint where a wedge of paper would open.
4. What does not look like a limb is kept still: a "limb" whose joints miss the ink
   (`joint_guard`), and the upper legs of a skirt (`skirt_parts`: drawn joined along
   their length), which move with the body while the legs below it walk. A forearm drawn
   against the body along more than against its upper arm keeps its arm still
   (`arms_along_body`), so it never swings off the body it lies on; an "arm" drawn
   joined to the head far more than to the body is the head's (`arms_on_the_head`: a
   star on a tree's top, taken for a raised arm).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from animation import morph
from animation.mesh_graph import components, corner_pairs, edge_pairs
from animation.skeleton import JOINT_INDEX, JOINTS, PARENT_INDEX
from animation.texture import delta_e

# Painter's order, back to front: legs behind the body, the head over the torso, arms in
# front of both (a hand waved across the face covers it, as it would).
PARTS: tuple[str, ...] = (
    "left_lower_leg", "left_upper_leg", "right_lower_leg", "right_upper_leg",
    "torso", "head",
    "left_upper_arm", "left_lower_arm", "right_upper_arm", "right_lower_arm",
)  # fmt: skip
PART_INDEX = {name: i for i, name in enumerate(PARTS)}
# Layers a frame is painted in: the joints' backing disks first, then the parts.
BACKING = 0
LAYERS = ("backing", *PARTS)

# The bone (named by its end joint) whose turn each part follows.
DRIVER: dict[str, str] = {
    "torso": "torso", "head": "neck",
    "left_upper_arm": "left_elbow", "left_lower_arm": "left_hand",
    "right_upper_arm": "right_elbow", "right_lower_arm": "right_hand",
    "left_upper_leg": "left_knee", "left_lower_leg": "left_foot",
    "right_upper_leg": "right_knee", "right_lower_leg": "right_foot",
}  # fmt: skip
# The part each hangs from, and the joint it turns about ("neck": the drawn neck).
HANGS_FROM: dict[str, tuple[str, str]] = {
    "head": ("torso", "neck"),
    "left_upper_arm": ("torso", "left_shoulder"),
    "right_upper_arm": ("torso", "right_shoulder"),
    "left_lower_arm": ("left_upper_arm", "left_elbow"),
    "right_lower_arm": ("right_upper_arm", "right_elbow"),
    "left_upper_leg": ("torso", "left_hip"),
    "right_upper_leg": ("torso", "right_hip"),
    "left_lower_leg": ("left_upper_leg", "left_knee"),
    "right_lower_leg": ("right_upper_leg", "right_knee"),
}
# Parents before children: the order parts are posed in.
_POSE_ORDER = (
    "torso",
    "head",
    *(p for p in PARTS if "upper" in p),
    *(p for p in PARTS if "lower" in p),
)
# Each part's bones (end joints) whose points seed its region; the head's bone is split at
# the drawn neck (see `_seed_segments`).
_SEED_BONES: dict[str, tuple[str, ...]] = {
    "torso": ("torso", "left_shoulder", "right_shoulder", "left_hip", "right_hip"),
    **{part: (bone,) for part, bone in DRIVER.items() if part not in ("torso", "head")},
}
# A joint's backing disk: this many of the joining limb's half-widths (at least this share
# of its bone), measured a little way along the limb, clear of the body.
BACKING_WIDTHS, BACKING_BONE_SHARE = 1.0, 0.1
_LIMB_WIDTH_AT = (0.25, 0.6)  # shares of the way along a limb's bone its width is taken at
# Upper legs joined along a seam longer than this share of the thigh's bone are a skirt.
SKIRT_SEAM = 0.5
# A step between triangles whose colours differ by more than FILL_DELTA_E (CIELAB) costs
# more: twice its length at EDGE_DELTA_E more, three times at twice that. The grain within
# one fill and a stroke's share of a triangle differ by a few; a sleeve against a skirt, a
# hand against a face, by tens.
FILL_DELTA_E, EDGE_DELTA_E = 8.0, 10.0
# Search for the drawn neck between these shares of the way from the shoulders' middle
# to the face; where the mask never narrows, the head starts at _NECK_DEFAULT.
_NECK_SEARCH, _NECK_DEFAULT = (0.1, 0.8), 0.4
# The head's seed where its mass is wider than the neck by HEAD_WIDER: every triangle past
# the neck within HEAD_DISC of the face joint's inside distance.
HEAD_DISC, HEAD_WIDER = 0.9, 1.2
# A torso at least this share of the figure's longest side in half-width is drawn as a
# blob (a round body, a cone, a tree), not a stick: its thick mass is the body's alone
# (`body_core`).
BODY_MIN_WIDTH = 0.05
# Legs are often drawn as wide as the body (trousers, a chubby pair joined into one block):
# a leg gives up only the body's mass at least this many times as thick as the torso's
# median (a tree's or a cone's broad base, a flaring coat), where a leg's bones were run.
LEG_BODY_WIDTH = 1.6
# An "arm" joined to the head along more than this many times as long as to the body is
# the head's (`arms_on_the_head`).
ARM_ON_HEAD = 2.0


@dataclass(frozen=True)
class Hinge:
    """Where a part turns about the part it hangs from."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "point", np.asarray(self.point, np.float64))

    parent: int  # index into PARTS
    child: int
    point: np.ndarray  # (2,) texture px, at rest
    radius: float  # px: the backing disk
    depth: float = 0.0  # px from the point to the mask's edge: how deep in its parent it sits


@dataclass(frozen=True)
class PartBinding:
    """How the cut mesh follows the skeleton: each vertex moves with one part."""

    part: np.ndarray  # (N,) int64 index into PARTS
    rest: np.ndarray  # (N, 2) rest positions
    rest_joints: np.ndarray  # (16, 2)
    pivots: np.ndarray  # (P, 2) rest: the point each part turns about (its hinge's)
    still: tuple[int, ...] = ()  # parts that move with the part they hang from
    # (N,) float64: the share of its part's motion each vertex takes; a backing vertex
    # (`cut`) takes the rest from the part its part hangs from. None: every vertex rigid.
    follow: np.ndarray | None = None

    def transforms(self, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F, 16, 2) joints -> each part's rigid motion: turn (F, P) radians, rest pivot
        (P, 2) and posed pivot (F, P, 2), so that a point x of part p goes to
        `pivot[:, p] + R(turn[:, p]) (x - pivot_rest[p])`."""
        angle = _bone_angles(joints) - _bone_angles(self.rest_joints[None])  # (F, 16)
        frames = len(joints)
        turn = np.zeros((frames, len(PARTS)))
        pivot_rest = np.zeros((len(PARTS), 2))
        pivot = np.zeros((frames, len(PARTS), 2))
        for name in _POSE_ORDER:
            p = PART_INDEX[name]
            pivot_rest[p] = self.pivots[p]
            if name == "torso":
                root = JOINT_INDEX["root"]
                turn[:, p] = angle[:, JOINT_INDEX[DRIVER[name]]]
                pivot[:, p] = joints[:, root] + _rotate(
                    pivot_rest[p] - self.rest_joints[root], turn[:, p]
                )
                continue
            parent = PART_INDEX[HANGS_FROM[name][0]]
            own = angle[:, JOINT_INDEX[DRIVER[name]]]
            turn[:, p] = turn[:, parent] if p in self.still else own
            pivot[:, p] = pivot[:, parent] + _rotate(
                pivot_rest[p] - pivot_rest[parent], turn[:, parent]
            )
        return turn, pivot_rest, pivot

    def targets(self, joints: np.ndarray) -> np.ndarray:
        """(F, 16, 2) joint positions -> (F, N, 2) vertex positions."""
        turn, pivot_rest, pivot = self.transforms(joints)
        out = pivot[:, self.part] + _rotate(self.rest - pivot_rest[self.part], turn[:, self.part])
        blend = np.flatnonzero(self.follow < 1.0) if self.follow is not None else []
        if len(blend):
            parent = _PARENT[self.part[blend]]
            held = pivot[:, parent] + _rotate(
                self.rest[blend] - pivot_rest[parent], turn[:, parent]
            )
            share = self.follow[blend][None, :, None]
            out[:, blend] = share * out[:, blend] + (1.0 - share) * held
        return out


# A hand this far behind the chest (in leg lengths) is drawn behind the body, a foot this
# far in front of it in front of the body (a high kick); otherwise arms cover the body
# and legs hang behind it.
ARM_BEHIND, LEG_IN_FRONT = -0.15, 0.5
_LIMB_LAYERS = (
    ("left_upper_arm", "left_lower_arm"), ("right_upper_arm", "right_lower_arm"),
    ("left_lower_leg", "left_upper_leg"), ("right_lower_leg", "right_upper_leg"),
)  # fmt: skip


def layer_ranks(depths: np.ndarray) -> np.ndarray:
    """(F, 4) limb depths (`retarget.retarget_with_depths`: hands then feet, left first) ->
    (F, L) painter's rank of each of `LAYERS` per frame: the backing first, then limbs
    behind the body, the torso, the head, limbs in front. A limb's two parts share a rank
    (where they overlap, at the bent joint, either is the same limb's ink): fewer ranks,
    fewer passes of the rasteriser."""
    frames = len(depths)
    behind = np.zeros((frames, 4), bool)
    behind[:, :2] = depths[:, :2] < ARM_BEHIND
    behind[:, 2:] = depths[:, 2:] < LEG_IN_FRONT
    # Sort key per group of layers (the backing, each limb, the torso, the head); ties keep
    # the groups' order.
    groups = [("backing",), *_LIMB_LAYERS[2:], ("torso",), ("head",), *_LIMB_LAYERS[:2]]
    key = np.zeros((frames, len(groups)))
    key[:, groups.index(("torso",))] = 2
    key[:, groups.index(("head",))] = 3
    for limb, layers in enumerate(_LIMB_LAYERS):
        key[:, groups.index(layers)] = np.where(behind[:, limb], 1, 4)
    order = np.argsort(key + np.arange(len(groups)) / 100, axis=1, kind="stable")
    group_rank = np.empty_like(order)
    np.put_along_axis(group_rank, order, np.arange(len(groups))[None], axis=1)
    group_of = [next(g for g, names in enumerate(groups) if layer in names) for layer in LAYERS]
    return group_rank[:, group_of]


def _rotate(vectors: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(..., 2) vectors turned by (F, ...) angles -> (F, ..., 2)."""
    cos, sin = np.cos(angle), np.sin(angle)
    x, y = vectors[..., 0], vectors[..., 1]
    return np.stack([cos * x - sin * y, sin * x + cos * y], axis=-1)


def _bone_angles(joints: np.ndarray) -> np.ndarray:
    """(F, 16): the angle of the bone ending at each joint (0 for the root)."""
    parent = np.where(PARENT_INDEX < 0, np.arange(len(JOINTS)), PARENT_INDEX)
    d = joints - joints[:, parent]
    return np.arctan2(d[..., 1], d[..., 0])


def neck_point(joints: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """(2,): where the head meets the torso: the narrowest point of the mask (`inside`,
    its (H, W) inside distance) on the way from the shoulders' middle to the face."""
    a, b = joints[JOINT_INDEX["torso"]], joints[JOINT_INDEX["neck"]]
    share = np.linspace(*_NECK_SEARCH, 24)
    points = a + share[:, None] * (b - a)
    width = sample(inside, points)
    if not (width > 0).all() or width.min() > 0.8 * np.median(width):
        return a + _NECK_DEFAULT * (b - a)  # no neck drawn (or the bone leaves the ink)
    return points[np.argmin(width)]


def sample(image: np.ndarray, points: np.ndarray, off: float | None = None) -> np.ndarray:
    """`image` (H, W) at the pixels nearest to `points` (P, 2) x, y: clamped to its edge,
    or `off` for a point off the image when given."""
    h, w = image.shape
    ix = np.clip(np.round(points[:, 0]).astype(int), 0, w - 1)
    iy = np.clip(np.round(points[:, 1]).astype(int), 0, h - 1)
    if off is None:
        return image[iy, ix]
    x, y = points[:, 0], points[:, 1]
    inside = (x >= -0.5) & (x < w - 0.5) & (y >= -0.5) & (y < h - 0.5)
    return np.where(inside, image[iy, ix], off)


def limb_half_width(joints: np.ndarray, inside: np.ndarray, part: str) -> float:
    """The half-width (px) of the mask along `part`'s bone, a little way from its start
    (0 where the bone runs off the mask)."""
    bone = JOINT_INDEX[DRIVER[part]]
    start, end = joints[PARENT_INDEX[bone]], joints[bone]
    width = sample(inside, start + np.linspace(*_LIMB_WIDTH_AT, 8)[:, None] * (end - start))
    width = width[width > 0]
    return float(np.median(width)) if width.size else 0.0


def hinges(joints: np.ndarray, inside: np.ndarray, core: np.ndarray | None = None) -> list[Hinge]:
    """Where each part turns about the part it hangs from, for rest `joints` (16, 2) over
    a mask whose inside distance is `inside` (H, W). With the body's thick mass `core`
    (H, W) bool (`body_core`), an upper arm whose shoulder lies in it turns where its bone
    leaves it: the arm is what is drawn outside the body."""
    lengths = np.linalg.norm(joints - joints[np.maximum(PARENT_INDEX, 0)], axis=1)
    neck = neck_point(joints, inside)
    out = []
    for child, (parent, joint) in HANGS_FROM.items():
        if joint == "neck":
            point, half_width = neck, float(sample(inside, neck[None])[0])
        else:
            point, half_width = joints[JOINT_INDEX[joint]], limb_half_width(joints, inside, child)
            if core is not None and child.endswith("upper_arm"):
                side = child.removesuffix("_upper_arm")
                arm = joints[[JOINT_INDEX[f"{side}_{j}"] for j in ("shoulder", "elbow", "hand")]]
                point = _leaving(core, arm)
        bone = lengths[JOINT_INDEX[DRIVER[child]]]
        radius = max(BACKING_WIDTHS * half_width, BACKING_BONE_SHARE * bone, 2.0)
        depth = float(sample(inside, point[None])[0])
        out.append(Hinge(PART_INDEX[parent], PART_INDEX[child], point, radius, depth))
    return out


def torso_half_width(joints: np.ndarray, inside: np.ndarray) -> float:
    """The median half-width (px) of the mask along the spine (hip to chest) of rest
    `joints` (16, 2), from the mask's inside distance `inside` (H, W)."""
    hip, chest = joints[JOINT_INDEX["hip"]], joints[JOINT_INDEX["torso"]]
    return float(np.median(sample(inside, hip + np.linspace(0.1, 0.9, 9)[:, None] * (chest - hip))))


def body_core(inside: np.ndarray, joints: np.ndarray, width: float = 1.0) -> np.ndarray | None:
    """(H, W) bool: the body's thick mass, or None where the torso is drawn as a stick
    (its half-width under `BODY_MIN_WIDTH` of the figure's side). It is every pixel a disk
    `width` times as wide as the torso's median half-width fits round inside the mask (a
    morphological opening), in the piece that holds the spine's middle: a limb narrower
    than the torso is left out of it, a round body, a cone's scoop, a tree's crown are in
    it. `inside` (H, W) is the mask's inside distance, `joints` (16, 2) the rest skeleton."""
    half_width = torso_half_width(joints, inside)
    ys, xs = np.nonzero(inside > 0)
    if not len(ys) or half_width < BODY_MIN_WIDTH * (max(np.ptp(ys), np.ptp(xs)) + 1):
        return None
    radius = width * half_width
    deep = inside >= radius  # the mask eroded by the disk, from its inside distance
    if not deep.any():
        return None
    opened = morph.dilate(deep, radius) & (inside > 0)
    _, pieces = cv2.connectedComponents(opened.astype(np.uint8), connectivity=8)
    spine = joints[[JOINT_INDEX["hip"], JOINT_INDEX["torso"]]]
    middle = int(sample(pieces, spine.mean(axis=0)[None])[0])
    return pieces == middle if middle else None


def _leaving(core: np.ndarray, chain: np.ndarray) -> np.ndarray:
    """(2,): where the polyline `chain` (K, 2) first leaves `core` (H, W) bool, when it
    starts on it; otherwise (or if it never leaves) its start."""
    share = np.linspace(0, 1, 32)[:, None]
    points = np.concatenate(
        [a + share * (b - a) for a, b in zip(chain[:-1], chain[1:], strict=True)]
    )
    off = ~sample(core, points)
    return points[np.argmax(off)] if off.any() and not off[0] else chain[0]


def _seed_segments(
    joints: np.ndarray, neck: np.ndarray
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(part, start, end) segments whose points seed each part's region."""
    segments = []
    for part, bones in _SEED_BONES.items():
        for bone in bones:
            j = JOINT_INDEX[bone]
            segments.append((PART_INDEX[part], joints[PARENT_INDEX[j]], joints[j]))
    segments.append((PART_INDEX["torso"], joints[JOINT_INDEX["torso"]], neck))
    segments.append((PART_INDEX["head"], neck, joints[JOINT_INDEX["neck"]]))
    return segments


def label_triangles(
    vertices: np.ndarray,
    triangles: np.ndarray,
    cover: np.ndarray,
    joints: np.ndarray,
    neck: np.ndarray,
    inside: np.ndarray,
    colours: np.ndarray | None = None,
    core: np.ndarray | None = None,
) -> np.ndarray:
    """(T,) part of each triangle: the part whose bones are nearest along the mesh.

    `cover` (H, W) int: the triangle covering each pixel (-1 for none); `inside` (H, W):
    the mask's inside distance. Each bone seeds
    the triangles its points lie on (a bone off the ink, the triangle nearest its end);
    every other triangle takes the part of the nearest seed, walking from triangle to
    neighbouring triangle, so a region never jumps a gap in the drawing. With each
    triangle's drawn colour (T, 3) uint8, a step between two triangles costs more the
    more their colours differ (`EDGE_DELTA_E`): a region spreads through its own fill and
    stops at a drawn edge, so a hand lying on a skirt leaves the skirt to the body. (A leg
    under a skirt then reaches its hip only from the skirt's edge: `attach_pieces` counts
    its reach from there.)

    With the body's thick mass `core` (H, W) bool (`body_core`), no arm takes a triangle
    in it, however its bones run: an arm placed across a round body, or up into an ice
    cream's scoop, moves only what is drawn outside the body and never carves the body.
    No leg takes a triangle where the body is `LEG_BODY_WIDTH` times as thick (a tree's
    broad base, where the pose put the legs' bones).
    """
    centres = vertices[triangles].mean(axis=1)
    seed_part = np.full(len(triangles), -1)
    seed_dist = np.full(len(triangles), np.inf)
    face = joints[JOINT_INDEX["neck"]]
    head_reach = np.linalg.norm(face - neck)
    for part, a, b in _seed_segments(joints, neck):
        steps = max(2, int(np.ceil(np.linalg.norm(b - a))) + 1)
        points = a + np.linspace(0, 1, steps)[:, None] * (b - a)
        if PARTS[part] in HANGS_FROM and PARTS[part] != "head":
            # A limb's bone starts at a joint drawn inside its parent (a shoulder inside a
            # round body, under a big head): only where it has left the parent, and is off
            # the head, does it mark the limb.
            clear = np.linalg.norm(points - a, axis=1) > float(sample(inside, a[None])[0])
            clear &= np.linalg.norm(points - face, axis=1) > head_reach
            points = points[clear] if clear.any() else points[-1:]
        hit = np.unique(sample(cover, points))
        hit = hit[hit >= 0]
        if not len(hit):
            hit = np.array([np.argmin(np.linalg.norm(centres - b, axis=1))])
        # A triangle two bones pass over goes to the one that runs nearer its centre.
        dist = _segment_distance(centres[hit], a, b)
        better = dist < seed_dist[hit]
        seed_part[hit[better]], seed_dist[hit[better]] = part, dist[better]
    # A head drawn as a mass wider than where it meets the body is the head's round the
    # face joint, however low the joint sits in it and however the arms' bones run beside
    # it: with no neck drawn the neck lies a share of the way up the bone, inside the face,
    # and the face's sides went to the body, a wedge opening across the head as it turned
    # (real photo 31). A face drawn on a blob (a jar, a cone) is no wider there than at the
    # neck: the body's mass is not carved into a head.
    face_width, neck_width = sample(inside, np.array([face, neck]))
    if face_width >= HEAD_WIDER * neck_width:
        past_neck = (centres - neck) @ (face - neck) > 0
        disc = np.linalg.norm(centres - face, axis=1) <= HEAD_DISC * face_width
        seed_part[(seed_part < 0) & past_neck & disc] = PART_INDEX["head"]
    arms = [PART_INDEX[p] for p in PARTS if p.endswith("arm")]
    in_core = np.zeros(len(triangles), bool) if core is None else sample(core, centres)
    seed_part[in_core & np.isin(seed_part, arms)] = PART_INDEX["torso"]
    label = _geodesic_labels(triangles, centres, seed_part, colours)
    label[in_core & np.isin(label, arms)] = PART_INDEX["torso"]
    broad = None if core is None else body_core(inside, joints, LEG_BODY_WIDTH)
    if broad is not None:
        legs = [PART_INDEX[p] for p in PARTS if p.endswith("leg")]
        label[sample(broad, centres) & np.isin(label, legs)] = PART_INDEX["torso"]
    for side in ("left", "right"):
        upper, lower = PART_INDEX[f"{side}_upper_arm"], PART_INDEX[f"{side}_lower_arm"]
        if core is not None and not (label == upper).any():
            # The upper arm's bone lies wholly in the body: what is drawn of the arm
            # hangs from the body where the arm leaves it (`hinges`).
            label[label == lower] = upper
    return label


def _segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    t = np.clip(((points - a) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


def _geodesic_labels(
    triangles: np.ndarray,
    centres: np.ndarray,
    seed: np.ndarray,
    colours: np.ndarray | None = None,
) -> np.ndarray:
    """Each triangle's label: that of the nearest seeded triangle (seed >= 0) by paths
    between neighbouring triangles (through a shared edge, or at three times the cost
    through a shared corner only), lengths between centres, each lengthened by the change
    of `colours` (T, 3) it crosses when they are given. Relaxed over every pair at once
    until no path shortens (as many rounds as the longest path has steps)."""
    a, b, cost = _neighbours(triangles)
    length = cost * np.linalg.norm(centres[a] - centres[b], axis=1)
    if colours is not None:
        change = np.maximum(delta_e(colours[a], colours[b]) - FILL_DELTA_E, 0)
        length *= 1 + change / EDGE_DELTA_E
    a, b, length = np.r_[a, b], np.r_[b, a], np.r_[length, length]
    label = seed.copy()
    dist = np.where(seed >= 0, 0.0, np.inf)
    while True:
        through = dist[a] + length
        better = np.flatnonzero(through < dist[b] - 1e-9)
        if not len(better):
            break
        # Per triangle reached, its shortest way in this round.
        better = better[np.lexsort((through[better], b[better]))]
        first = better[np.r_[True, b[better][1:] != b[better][:-1]]]
        dist[b[first]], label[b[first]] = through[first], label[a[first]]
    label[label < 0] = PART_INDEX["torso"]  # no path from any bone: rides with the body
    return label


def _neighbours(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a, b) of neighbouring triangles, each once, and the cost factor of the step:
    1 across a shared edge, 3 across a shared corner only."""
    pairs = corner_pairs(triangles)
    edge = np.sort(edge_pairs(triangles), axis=1)
    n = len(triangles)
    cost = np.where(np.isin(pairs[:, 0] * n + pairs[:, 1], edge[:, 0] * n + edge[:, 1]), 1.0, 3.0)
    return pairs[:, 0], pairs[:, 1], cost


def attach_pieces(
    vertices: np.ndarray,
    triangles: np.ndarray,
    part: np.ndarray,
    joins: list[Hinge],
    joints: np.ndarray,
) -> np.ndarray:
    """`part` with every piece of a limb that does not reach the joint its limb turns
    about, or does not come near its bone, or is not drawn joined to the part the limb
    hangs from, given to the part it borders most: a stroke the bone does not run along
    (a second arm stroke beside the one the joints lie on, a foot drawn onto the body, an
    ear beside a shoulder set deep in a big body) stays with what it is drawn joined to,
    rather than swing away from it and tear; so does a piece that alone holds two
    stretches of the rest of the figure together, unless what it holds are scraps of the
    part it hangs from (`_scraps`), which go with it. A piece is a run of triangles of one
    part joined through edges; `joints` (16, 2) are the rest skeleton's."""
    part = part.copy()
    pairs = edge_pairs(triangles)
    reach = {h.child: h for h in joins}
    # `_held_apart`'s answers, kept while no triangle moves into or out of what it reads (the
    # piece's part and the parts hanging from it): a stray piece given to the body makes
    # the loop go round again, and needs only its own limb checked anew.
    held: dict[tuple[int, bytes], list[np.ndarray]] = {}
    for _ in range(len(PARTS)):
        same = pairs[part[pairs[:, 0]] == part[pairs[:, 1]]]
        piece = components(len(triangles), same)
        changed = False
        for p in np.unique(piece):
            members = np.flatnonzero(piece == p)
            label = int(part[members[0]])
            hinge = reach.get(label)
            if hinge is None or PARTS[label] == "head":
                continue
            inside = np.isin(pairs, members)
            border = pairs[inside[:, 0] ^ inside[:, 1]]
            others = part[np.where(np.isin(border[:, 0], members), border[:, 1], border[:, 0])]
            others = others[others != label]
            corners = vertices[np.unique(triangles[members])]
            # Reached from the edge of the parent the joint sits in: a stick arm drawn out
            # of a dress starts at the dress's edge, not at the shoulder inside it.
            end = JOINT_INDEX[DRIVER[PARTS[label]]]
            near = (
                np.linalg.norm(corners - hinge.point, axis=1).min()
                <= _REACH * hinge.radius + hinge.depth
                and _segment_distance(corners, joints[PARENT_INDEX[end]], joints[end]).min()
                <= _REACH * hinge.radius
            )
            if near and (hinge.parent in others or not others.size):
                key = (label, members.tobytes())
                if key not in held:
                    held[key] = _held_apart(members, label, part, pairs, len(triangles))
                stretches = held[key]
                if not stretches:
                    continue
                if _scraps(stretches, part, len(members), hinge.parent):
                    # Scraps of the part it hangs from that hang from the limb alone (a few
                    # body triangles in the crotch, reached only through a thigh) are its.
                    part[np.concatenate(stretches)] = label
                    held = {}  # rare: every answer is read again
                    changed = True
                    continue
                others = np.array([hinge.parent])  # it holds the body together: body it is
            if others.size:
                given = int(np.bincount(others).argmax())
                moved = {label, given}
                held = {k: v for k, v in held.items() if not moved & {k[0], *_CHILDREN[k[0]]}}
                part[members] = given
                changed = True
        if not changed:
            break
    return part


_REACH = 2.0  # a limb's piece reaches its joint within this many backing radii of it
# What a limb's piece alone holds to the rest of the figure, up to this share of its own
# triangles, is scraps of the labelling (3 body triangles in real-dev char1's crotch, held
# by a thigh of 23), the limb's; more is a stretch of the body (a hood's side held by an
# arm of 56 in real photo 06: 17), and the limb is the body's.
_SCRAP = 0.15
# Each part's index -> the index of the part it hangs from (the torso's own).
_PARENT = np.array(
    [PART_INDEX[HANGS_FROM[p][0]] if p in HANGS_FROM else k for k, p in enumerate(PARTS)]
)
# Each part's index -> the indices of the parts hanging from it.
_CHILDREN = {
    PART_INDEX[part]: {PART_INDEX[c] for c, (parent, _) in HANGS_FROM.items() if parent == part}
    for part in PARTS
}


def _scraps(stretches: list[np.ndarray], part: np.ndarray, size: int, parent: int) -> bool:
    """Whether the `stretches` a limb's piece of `size` triangles holds (`_held_apart`) are
    scraps of the `parent` part it hangs from: each of the parent's alone, at most `_SCRAP`
    of the piece, and a small share of the parent, which lies mostly elsewhere (an upper
    arm drawn as one triangle is no scrap of itself)."""
    whole = np.count_nonzero(part == parent)
    return all(
        (part[s] == parent).all() and len(s) <= _SCRAP * size and whole > 2 * len(s)
        for s in stretches
    )


def _held_apart(
    members: np.ndarray, label: int, part: np.ndarray, pairs: np.ndarray, n: int
) -> list[np.ndarray]:
    """The stretches of the rest of the figure (besides the limb below it) that the piece
    `members` (of part `label`) alone joins to the rest: each the (K,) indices of its
    triangles, all but the biggest of those it holds together; none when it holds nothing
    together. A "limb" drawn along the body's line, with the body going on past its end,
    holds a long stretch of body: moved, it would tear it off."""
    below = _CHILDREN[label]
    rest = ~np.isin(part, [label, *below])
    rest[members] = False
    kept = pairs[rest[pairs[:, 0]] & rest[pairs[:, 1]]]
    before = components(n, pairs[~np.isin(part[pairs], list(below)).any(axis=1)])
    after = components(n, kept)
    stretches = []
    for whole in np.unique(before[rest]):
        split = after[rest & (before == whole)]
        labels, sizes = np.unique(split, return_counts=True)
        for cut_off in labels[np.argsort(sizes)[:-1]]:
            stretches.append(np.flatnonzero(rest & (after == cut_off)))
    return stretches


def arms_along_body(
    vertices: np.ndarray, triangles: np.ndarray, part: np.ndarray
) -> tuple[str, ...]:
    """The parts of each arm whose lower arm is drawn joined to the torso along more than
    to its upper arm (a sleeve drawn against a jacket, its upper arm part of the body's
    mass; a wing with a tail below it): such an arm is kept still. Its forearm would swing
    about an elbow away from the body it lies against and tear off it; turned whole at
    the shoulder, a sleeve as long as the body sweeps across the face."""
    pairs = edge_pairs(triangles)
    torso = PART_INDEX["torso"]
    still: tuple[str, ...] = ()
    for side in ("left", "right"):
        upper, lower = PART_INDEX[f"{side}_upper_arm"], PART_INDEX[f"{side}_lower_arm"]
        if _seam_length(vertices, triangles, pairs, part, lower, torso) > _seam_length(
            vertices, triangles, pairs, part, lower, upper
        ):
            still += (PARTS[upper], PARTS[lower])
    return still


def arms_on_the_head(vertices: np.ndarray, triangles: np.ndarray, part: np.ndarray) -> np.ndarray:
    """`part` with each arm that is drawn joined to the head along more than `ARM_ON_HEAD`
    times as long as to the body given to the head: what the pose took for an arm there is
    the head's (a star on a tree's top, a bow, hair), and swung as an arm it would tear the
    head apart. (A hand drawn touching the head joins it about as long as the arm joins the
    body: it stays an arm.)"""
    part = part.copy()
    pairs = edge_pairs(triangles)
    head, torso = PART_INDEX["head"], PART_INDEX["torso"]
    for side in ("left", "right"):
        arm = np.isin(part, [PART_INDEX[f"{side}_upper_arm"], PART_INDEX[f"{side}_lower_arm"]])
        whole = np.where(arm, -1, part)  # the arm as one part, -1
        if _seam_length(vertices, triangles, pairs, whole, -1, head) > ARM_ON_HEAD * _seam_length(
            vertices, triangles, pairs, whole, -1, torso
        ):
            part[arm] = head
    return part


def body_pieces_on_the_head(triangles: np.ndarray, part: np.ndarray) -> np.ndarray:
    """`part` with each piece of the torso but its biggest that is drawn joined to the head
    alone given to the head: a stick arm kept as the body's that hangs from the face's side
    would be left behind, torn off, as the head turns. A piece is a run of triangles joined
    through edges."""
    part = part.copy()
    torso, head = PART_INDEX["torso"], PART_INDEX["head"]
    pairs = edge_pairs(triangles)
    same = pairs[(part[pairs[:, 0]] == torso) & (part[pairs[:, 1]] == torso)]
    piece = np.where(part == torso, components(len(triangles), same), -1)
    labels, sizes = np.unique(piece[piece >= 0], return_counts=True)
    for label in labels[np.argsort(sizes)[:-1]]:  # every piece but the biggest
        members = piece == label
        border = pairs[members[pairs[:, 0]] ^ members[pairs[:, 1]]]
        others = part[np.where(members[border[:, 0]], border[:, 1], border[:, 0])]
        if others.size and (others == head).all():
            part[members] = head
    return part


def _seam_length(
    vertices: np.ndarray, triangles: np.ndarray, pairs: np.ndarray, part: np.ndarray, a: int, b: int
) -> float:
    ends = seam_edges(vertices, triangles, pairs, part, a, b)
    return float(np.linalg.norm(ends[:, 0] - ends[:, 1], axis=1).sum())


def skirt_parts(
    vertices: np.ndarray, triangles: np.ndarray, part: np.ndarray, joints: np.ndarray
) -> tuple[str, ...]:
    """The upper legs, when they are drawn joined to each other along more than
    `SKIRT_SEAM` of the thigh (a skirt, a dress, shorts): the skirt then moves with the
    body, and the legs below it still walk."""
    left, right = PART_INDEX["left_upper_leg"], PART_INDEX["right_upper_leg"]
    seam = _seam_length(vertices, triangles, edge_pairs(triangles), part, left, right)
    lengths = np.linalg.norm(joints - joints[np.maximum(PARENT_INDEX, 0)], axis=1)
    thigh = min(lengths[JOINT_INDEX["left_knee"]], lengths[JOINT_INDEX["right_knee"]])
    return ("left_upper_leg", "right_upper_leg") if seam > SKIRT_SEAM * max(thigh, 1e-6) else ()


def seam_edges(
    vertices: np.ndarray, triangles: np.ndarray, pairs: np.ndarray, part: np.ndarray, a: int, b: int
) -> np.ndarray:
    """(K, 2, 2): the two ends of every edge between a triangle of part `a` and one of
    part `b` (the seam where the mesh is cut between them); `pairs` are the triangles'
    `mesh_graph.edge_pairs`."""
    sides = part[pairs]
    pairs = pairs[
        ((sides[:, 0] == a) & (sides[:, 1] == b)) | ((sides[:, 0] == b) & (sides[:, 1] == a))
    ]
    first, second = triangles[pairs[:, 0]], triangles[pairs[:, 1]]
    shared = (first[:, :, None] == second[:, None, :]).any(axis=2)  # two corners of each
    return vertices[first[shared].reshape(-1, 2)]


def on_seams(
    vertices: np.ndarray,
    triangles: np.ndarray,
    part: np.ndarray,
    joins: list[Hinge],
    joints: np.ndarray,
) -> list[Hinge]:
    """`joins` with each limb's hinge moved onto the middle of the stretch of seam, as wide
    as the limb, that it shares with the part it hangs from nearest its joint. A part turns
    whole about its hinge, so only a hinge on the seam keeps the two joined: an elbow placed
    on the edge of a wide sleeve swings the forearm like a door on its edge hinge (the seam's
    far side opens by its width times the turn), and an elbow placed where the forearm does
    not touch the upper arm lets the hand come off. An arm drawn against the body, whose
    seam is as long as the arm, still turns at its shoulder. `joints` (16, 2) give the
    limbs' directions."""
    pairs = edge_pairs(triangles)
    out = []
    for hinge in joins:
        name = PARTS[hinge.child]
        ends = seam_edges(vertices, triangles, pairs, part, hinge.child, hinge.parent)
        if name == "head":
            out.append(hinge)  # the head turns at the drawn neck
            continue
        if not len(ends):
            out.append(replace(hinge, point=_contact(vertices, triangles, part, hinge)))
            continue
        bone = JOINT_INDEX[DRIVER[name]]
        along = joints[bone] - joints[PARENT_INDEX[bone]]
        along = along / max(float(np.linalg.norm(along)), 1e-9)
        across = np.array([-along[1], along[0]])
        offset = ends.mean(axis=1) - hinge.point
        length = np.linalg.norm(ends[:, 0] - ends[:, 1], axis=1)
        # The seam's stretch across the limb (as wide as the limb's backing disk) from its
        # point nearest to the joint.
        step = offset - offset[np.argmin(np.linalg.norm(offset, axis=1))]
        beside = (np.abs(step @ along) <= hinge.radius) & (
            np.abs(step @ across) <= 2 * hinge.radius
        )
        middle = (offset[beside] * length[beside, None]).sum(axis=0) / max(
            length[beside].sum(), 1e-9
        )
        out.append(replace(hinge, point=hinge.point + middle))
    return out


def _contact(
    vertices: np.ndarray, triangles: np.ndarray, part: np.ndarray, hinge: Hinge
) -> np.ndarray:
    """(2,): where the limb `hinge.child`, which shares no edge with the part it hangs from,
    comes nearest to that part (or, where that part has no triangle, to the rest of the
    figure above it): a stick meshed to the body through a corner turns about that corner,
    not about a knee placed halfway down it. A limb with no triangle of its own, or drawn
    apart (farther than its backing disk's radius), turns at its joint."""
    own = triangles[part == hinge.child]
    rest = triangles[part == hinge.parent]
    if not len(rest):
        # A limb's parts below it are its lower part at most: limbs are two deep.
        rest = triangles[~np.isin(part, [hinge.child, *_CHILDREN[hinge.child]])]
    if not len(own) or not len(rest):
        return hinge.point
    a, b = vertices[np.unique(own)], vertices[np.unique(rest)]
    gap = np.linalg.norm(a[:, None] - b[None], axis=2)
    i, j = np.unravel_index(np.argmin(gap), gap.shape)
    return (a[i] + b[j]) / 2 if gap[i, j] <= hinge.radius else hinge.point


def _joined(pairs: np.ndarray, chosen: np.ndarray, to: np.ndarray) -> np.ndarray:
    """(T,) bool: the triangles of `chosen` joined through edges (`pairs`, over chosen and
    `to` triangles) to a triangle of `to`."""
    among = chosen | to
    links = pairs[among[pairs[:, 0]] & among[pairs[:, 1]]]
    piece = components(len(chosen), links)
    return chosen & np.isin(piece, piece[to])


def pivots(joins: list[Hinge], joints: np.ndarray) -> np.ndarray:
    """(P, 2): the rest point each part turns about: its hinge's, the root for the torso."""
    out = np.tile(joints[JOINT_INDEX["root"]], (len(PARTS), 1)).astype(np.float64)
    for hinge in joins:
        out[hinge.child] = hinge.point
    return out


@dataclass(frozen=True)
class CutMesh:
    """The mesh cut into parts, with the joints' backing disks."""

    vertices: np.ndarray  # (N', 2)
    triangles: np.ndarray  # (T + B, 3): the T triangles in their order, then B backing ones
    part: np.ndarray  # (T + B,) the part each triangle moves with
    layer: np.ndarray  # (T + B,) index into LAYERS: painter's order
    vertex_part: np.ndarray  # (N',) the part each vertex moves with
    vertex_follow: np.ndarray  # (N',) the share of its motion (`PartBinding.follow`)


def cut(
    vertices: np.ndarray, triangles: np.ndarray, part: np.ndarray, joins: list[Hinge]
) -> CutMesh:
    """Cut the mesh between every two parts (a vertex shared by triangles of k parts
    becomes k vertices), and add each joint's backing: the parent's triangles within the
    hinge's radius and along the seam, copied to move with the child, painted behind every
    part.

    A backing is a skin, not a plate: on the seam it moves with the child, so no crack of
    paper opens between child and parent, and a hinge's radius from the seam with the
    parent, blended between. Turned rigidly with an arm raised high, the body's half-disk
    at the shoulder swung out past the body's outline as a spike."""
    centres = vertices[triangles].mean(axis=1)
    pairs = edge_pairs(triangles)
    backing = []
    follow = np.ones((len(PARTS), len(vertices)))  # share of the child's motion, per child
    for hinge in joins:
        # Along the whole seam too: where a limb is drawn against its parent, the strip of
        # the parent beside it turns with it, so no crack of paper opens between them.
        on_seam = np.zeros(len(vertices), bool)
        on_seam[triangles[part == hinge.child].ravel()] = True
        near = np.linalg.norm(centres - hinge.point, axis=1) < hinge.radius
        beside = on_seam[triangles].any(axis=1)
        chosen = (part == hinge.parent) & (near | beside)
        # Only what is joined to the limb through edges: a scrap of the parent touching
        # it at a corner only would be carried off beside it as a loose piece.
        kept = _joined(pairs, chosen, part == hinge.child)
        backing += [(t, hinge.child) for t in np.flatnonzero(kept)]
        used = np.unique(triangles[kept])
        if len(used) and on_seam.any():
            # A few hundred vertices each way at most: pairwise in numpy (no scipy here).
            gap = np.sqrt(
                ((vertices[used, None] - vertices[None, on_seam]) ** 2).sum(axis=-1).min(axis=1)
            )
            follow[hinge.child, used] = np.clip(1.0 - gap / max(hinge.radius, 1e-9), 0.0, 1.0)
    mover = np.r_[part, [c for _, c in backing]].astype(np.int64)
    source = np.r_[np.arange(len(triangles)), [t for t, _ in backing]].astype(np.int64)
    corners = triangles[source]  # (T + B, 3)
    # One vertex per (vertex, part moving it).
    key = corners * len(PARTS) + mover[:, None]
    unique, index = np.unique(key.ravel(), return_inverse=True)
    layer = np.r_[part + 1, np.full(len(backing), BACKING)].astype(np.int64)
    vertex, vertex_part = unique // len(PARTS), (unique % len(PARTS)).astype(np.int64)
    # A vertex a part's own triangle uses moves with that part alone.
    own = np.zeros(len(unique), bool)
    own[index[: 3 * len(triangles)]] = True
    share = np.where(own, 1.0, follow[vertex_part, vertex])
    return CutMesh(
        vertices=vertices[vertex],
        triangles=index.reshape(-1, 3).astype(np.int64),
        part=mover,
        layer=layer,
        vertex_follow=share,
        vertex_part=vertex_part,
    )
