"""The figure's mask as the rig needs it, whatever made it (the learned segmenter or OpenCV).

    finish_mask(mask, rgb, joints) -> FinishedMask(mask, warnings)

The rig wants one figure: one connected region, every joint on it, no paper and nothing
that is not the figure. A raw mask misses that in known ways on real drawings: a
limb drawn apart from the body (or a stroke broken by a crayon's skip) comes out as a
separate piece; a ball, a caption or the sun lies beside it; a learned mask may spill
onto a shadow. The joints say where the figure is, so they decide:

0. on a learned mask, the inside of an outline round the skeleton is added where the
   segmenter left it out (a broken outline closed by up to OUTLINE_GAP; the strokes its
   mask comes near taken whole, as far as OUTLINE_REACH past the joints' box);
1. paper is dropped (OpenCV's mask): broad patches with no ink near them that no inked
   outline encloses; so are bands the mask fills across the crop's edge (the table
   beyond the page, where the photo ends);
2. the pieces that hold a joint, or that a bone (a joint-to-parent segment) runs through,
   are the figure, and so are hand-sized pieces at a limb's end and things on the head;
   every other piece is dropped; a neighbour's head drawn against the figure's (a face
   as big as its own beside it, holding no joint) goes, with what hangs off it;
3. a blob that only touches the figure at a narrow neck (a ball by the knee, a sun by
   the head) and holds no joint and no bone is cut off, unless the figure holds it: a
   stroke joins it to a hand (a balloon on its string, a sword, a ball in the fist); one
   at a foot up to a big shoe's size is kept apart (`FinishedMask.feet`), for the mask
   chosen to get back; a thin stroke that runs on far to the crop's edge holding no
   joint, no bone and no hand (a page's ruled line) is cut where it leaves the figure,
   and kept apart (`FinishedMask.lines`) for the second crop to look at;
4. the figure's pieces are joined into one: along the bones first (the gap an arm block
   leaves at the shoulder lies on the upper-arm bone), else at their nearest points; a
   speck (a grainy page's grain) joins only a stroke right beside it, unless it is on
   the face (an eye drawn as a dot), and pieces nothing joins are dropped;
5. a joint still outside is joined to the figure if it is near; holes are filled;
6. paper the mask spilled over between the figure's parts is dropped: a patch with no ink
   that reaches the mask's edge (nothing drawn closes it) and that no joint, no bone and
   no head holds: between an arm and the body, the legs, a curled tail and the back;
7. OpenCV's mask gets AD_MARGIN_PX of margin, as the segmenter's has, to be compared with
   it (`segment.choose`).

Once one is chosen, `edge_on_ink` puts its edge on the ink: the rim (EDGE_DEPTH deep) that
is paper is dropped, so the figure ends where its outermost stroke does (issue 26's rule).
The segmenter's margin is a pixel or two of its own 256 px input, so it grew with the
photo's resolution: 2-12 px of paper round every stroke of the real photos.

Then `mask_warnings` says what still looks implausible.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np
from scipy import ndimage

from animation import morph
from animation.mask_warnings import mask_warnings
from animation.morph import fill_holes
from animation.paper import InkMap, ink_map
from animation.skeleton import COCO_KEYPOINTS, JOINT_INDEX, JOINTS, PARENT_INDEX, Skeleton

MAX_GAP = 0.15  # longest bridge between pieces of the figure, of the skeleton's size
MAX_JOINT_GAP = 0.10  # a joint farther than this (of the skeleton's size) is not bridged
NECK_RADIUS = 0.05  # of the skeleton's size: a blob joined through a neck thinner than
# twice this, with no joint and no bone in it, is not the figure (a ball in a hand)...
HAND_REACH = 0.5  # ... unless it lies this close to a hand or foot, in its bone's lengths,
HAND_SIZE = 0.3  # and is no bigger than a hand: this radius, in the same lengths
HEAD_REACH = 2.5  # ... or on the head: this close to its joint, in its bone's lengths
# A thin stroke that runs on to the crop's edge this far from the figure's broad parts, of
# its size, is a line across the page (`_cut_lines_off_the_crop`; real photo 27's: 0.53),
# not a leg the crop cut (real photos 12 and 19: up to 0.15; real-dev's bug, char5, whose
# joints span less than its body: 0.35).
LINE_REACH = 0.45
# A blob at the end of a leg this close and up to this radius, in the shin's lengths, is a
# big shoe (children draw big shoes on short legs: real photos 09, 14, 32). It is added
# after the two masks are compared (`FinishedMask.feet`): compared with it, real photo 13's
# two masks fell under `segment.AGREE_IOU` and the choice flipped to the worse one.
FOOT_REACH, FOOT_SIZE = 0.75, 0.75
# A thing the mask joins to the figure only through a hand, and the ink too (a closing's
# bridge to a ball beside the hand is no hold), up to this share of the mask's area, is
# held (a balloon on its string, a sword); a neighbour holding the hand is as big as it.
HELD_SHARE = 0.5
DEEP = 0.75  # a joint or bone holds a core where it lies this deep in it, of NECK_RADIUS
# AnimatedDrawings' masks lie this far outside the ink (px), and so do the synthetic
# generator's, made like them, and the segmenter's, learned from those. OpenCV's mask gets
# the same margin to be compared with the segmenter's; `edge_on_ink` takes it off the
# mask chosen, and `with_ad_margin` puts it back to score a mask against such truths.
AD_MARGIN_PX = 2
EDGE_BAND = 0.9  # of a crop edge's length: a band the mask fills that far is not the figure
EDGE_CLOSING = 1.5  # px: the grain of a crayon's stroke, closed after the paper round it goes
EDGE_DEPTH, EDGE_DEPTH_PX = 1 / 200, 3  # the rim checked for paper: of the crop's longer
# side, at least so many px (a segmenter's pixel is 1/256 of it: its margin is 1-2 of them)
# Pieces the rim's paper joins round a bend, where a straight bridge would leave the mask,
# stay joined by the mask's paper within the first of these many rim depths of both that
# joins them (real photo 14's wing, whose crayon stops short of the body).
REJOIN_REACH = (2, 4, 8)
# A group of pieces whose biggest is at most SPECK_PX is specks (a grainy page's grain,
# 1-9 px at the models' resolution on the real photos; a stroke's fragment is tens of px or
# more), unless it lies on the face (a dot for an eye: `_face`): it joins a stroke across
# a gap of at most NEAR_STROKES stroke widths, and never another speck. Bridges from speck
# to speck spun a web of lines across the paper round the figure.
SPECK_PX, NEAR_STROKES = 10, 1.0
# Any other bridge but along a bone is at most GAP_SPAN times as long as the group it
# reaches spans (the longer side of its pieces' box), unless that group lies on the face
# or within MAX_JOINT_GAP of a joint: a broken-off stroke is longer than its gap; a crumb of
# the page's grain or a pencil's dust is not, and its bridge was a sliver of paper sticking
# out of the outline (real photos 02 and 32; at 0.5 and at 2.0 too no real photo loses).
GAP_SPAN = 1.0
# The face: within this many head-bone lengths (nose to chest) of the head's joint, and
# nearer the joint than the chest (a drawn head is often wider than its bone is long).
FACE_REACH = 1.5
# Paper spilled between parts (step 6): a patch counts from this share of the mask's area
# (smaller ones are a stroke's soft edge, a gap between fingers) when it meets the outside
# of the mask along at least SPILL_OPENING stroke widths (a pinhole in an outline is not an
# opening) and holds no joint, no SPILL_BONE stroke widths of a bone (the girdle's aside:
# `_GIRDLE`), and no head. A joint holds it from SPILL_JOINT_DEPTH broad stroke widths
# inside it: one nearer its rim is the stroke's there, placed a little off it (a stick
# hand's wrist; real photo 33), and keeps only the paper that near it.
SPILL_SHARE, SPILL_OPENING, SPILL_BONE, SPILL_JOINT_DEPTH = 0.01, 2.0, 2.0, 2.0
# The gaps closed in an outline round the skeleton on a learned mask (step 0), of the crop's
# short side, at least OUTLINE_GAP_PX: twice OpenCV's (`segment.MAX_CLOSING`). Faint pencil
# legs and a cape on the real photos have skips that long (photo 22: IoU 0.66 -> 0.79 at
# 1/20 against 1/40; the worst loss elsewhere 0.008, from the closed outline's fatter rim).
OUTLINE_GAP, OUTLINE_GAP_PX = 1 / 20, 3.0
# ... with the strokes the segmenter's mask comes near taken whole as far as this beyond the
# joints' box, of the figure's size: a drawn figure runs on past its joints (a hem below the
# ankles, a back behind the hips: real photos 38 and 02); a page's ruled line runs on far
# past it (27: at 0.5 the lines of the page and the paper between them came in).
OUTLINE_REACH = 0.3
# A neighbour's face against the head (`_cut_neighbours_faces`): an outline's inside from
# this much to this much of the figure's own face's area (real photo 36's: 0.9; an ear, a
# bun: well under the least), and her head up to this many of her face's radii from its
# middle (her hair round it).
NEIGHBOUR_FACE, NEIGHBOUR_HEAD = (0.6, 1.6), 1.6


Edges = tuple[bool, bool, bool, bool]  # left, top, right, bottom
ALL_EDGES: Edges = (True, True, True, True)


@dataclass(frozen=True)
class FigureJoints:
    """Where the figure's joints are in the crop's pixels, and which pairs are bones."""

    points: np.ndarray  # (N, 2) float64 [x, y]
    bones: np.ndarray  # (B, 2) int64: indices into `points`, child and parent
    head: int = -1  # index of the head's joint (the skeleton's "neck", on the nose); -1: none
    girdle: frozenset[int] = frozenset()  # indices into `bones`: spine to a shoulder
    feet: frozenset[int] = frozenset()  # indices into `points`: the ends of the legs

    @classmethod
    def of(cls, joints: Skeleton | np.ndarray | FigureJoints) -> FigureJoints:
        """From a `Skeleton` (16 joints), 17 COCO keypoints `[x, y(, score)]`, or (N, 2) points.

        Plain points (not 17) have no bones.
        """
        if isinstance(joints, FigureJoints):
            return joints
        if isinstance(joints, Skeleton):
            return cls(joints.rest, _SKELETON_BONES, JOINT_INDEX["neck"], _GIRDLE, _FEET)
        points = np.asarray(joints, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] < 2:
            raise ValueError(f"joints must be (N, 2) or (N, 3), got shape {points.shape}")
        if points.shape[0] == len(COCO_KEYPOINTS):
            rest = Skeleton.from_coco(points).rest
            return cls(rest, _SKELETON_BONES, JOINT_INDEX["neck"], _GIRDLE, _FEET)
        return cls(points[:, :2], np.zeros((0, 2), np.int64))

    @classmethod
    def from_char_cfg(cls, joints: list[dict]) -> FigureJoints:
        """Every joint of a `char_cfg.yaml` `skeleton` list (any names), bones to parents."""
        try:
            names = [str(j["name"]) for j in joints]
            points = np.array([[float(v) for v in j["loc"][:2]] for j in joints])
            index = {n: i for i, n in enumerate(names)}
            bones = [(i, index[j["parent"]]) for i, j in enumerate(joints) if j.get("parent")]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed char_cfg skeleton: {exc}") from exc
        bones = [(a, b) for a, b in bones if np.linalg.norm(points[a] - points[b]) > 0]
        bones = np.array(bones, np.int64).reshape(-1, 2)
        girdle = frozenset(k for k, (a, _) in enumerate(bones) if names[a] in _GIRDLE_JOINTS)
        feet = frozenset(index[n] for n in _FOOT_JOINTS if n in index)
        return cls(points.reshape(-1, 2), bones, index.get("neck", -1), girdle, feet)

    @cached_property
    def bone_samples(self) -> list[np.ndarray]:
        """Points every pixel along each bone, joint to parent, as (n, 2) arrays."""
        samples = []
        for a, b in self.bones:
            p, q = self.points[a], self.points[b]
            n = max(2, int(np.ceil(np.linalg.norm(q - p))) + 1)
            samples.append(p + np.linspace(0.0, 1.0, n)[:, None] * (q - p))
        return samples

    @cached_property
    def skeleton_samples(self) -> np.ndarray:
        """(N, 2): the joints and every bone's samples (`bone_samples`), in one array."""
        return np.concatenate([self.points.reshape(-1, 2), *self.bone_samples])

    def labels_touched(self, labels: np.ndarray, count: int = 0) -> np.ndarray:
        """(max(count, labels.max() + 1),) bool: which labels of an (H, W) label image a
        joint or a bone lies on."""
        touched = np.zeros(max(count, int(labels.max()) + 1), bool)
        touched[_labels_at(labels, self.skeleton_samples).clip(0)] = True
        return touched

    def at_the_ends(
        self, centroids: np.ndarray, areas: np.ndarray, big_feet: bool = False
    ) -> np.ndarray:
        """(P,) bool: which shapes (P, 2) centroids, (P,) areas px) sit where a hand, a foot
        or things on the head go, though no joint or bone lies in them.

        At the end of a limb: within HAND_REACH of the last bone's length, no bigger than
        HAND_SIZE of it (a mitten, a shoe; a ball is bigger); with `big_feet`, at a foot
        within FOOT_REACH and up to FOOT_SIZE (a big shoe). On the head: within HEAD_REACH
        of its bone's length from its joint (ears, hair, a hat).
        """
        parents = set(self.bones[:, 1].tolist())
        radius = np.sqrt(np.asarray(areas, np.float64) / np.pi)
        found = np.zeros(len(centroids), bool)
        for a, b in self.bones:
            bone = float(np.linalg.norm(self.points[a] - self.points[b]))
            distance = np.linalg.norm(centroids - self.points[a], axis=1)
            if a == self.head:
                found |= distance <= HEAD_REACH * bone
            elif a not in parents:
                reach, size = (
                    (FOOT_REACH, FOOT_SIZE)
                    if big_feet and a in self.feet
                    else (HAND_REACH, HAND_SIZE)
                )
                found |= (distance <= reach * bone) & (radius <= size * bone)
        return found

    @cached_property
    def hands(self) -> list[tuple[np.ndarray, float]]:
        """Each hand's joint (2,) (the end of a limb that is neither a foot nor the head)
        and the length of its bone, px."""
        parents = set(self.bones[:, 1].tolist())
        return [
            (self.points[a], float(np.linalg.norm(self.points[a] - self.points[b])))
            for a, b in self.bones
            if a not in parents and a not in self.feet and a != self.head
        ]

    def head_bone(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The head's joint (2,) and the joint it hangs from (the chest), or None."""
        bones = [(a, b) for a, b in self.bones if a == self.head]
        if not bones:
            return None
        a, b = bones[0]
        return self.points[a], self.points[b]

    @property
    def size(self) -> float:
        """The longer side of the joints' bounding box, px (at least 1)."""
        if not len(self.points):
            return 1.0
        return max(1.0, float(np.ptp(self.points, axis=0).max()))


_SKELETON_BONES = np.array(
    [(i, p) for i, p in enumerate(PARENT_INDEX) if p >= 0 and JOINTS[i] != "hip"], np.int64
)  # hip sits on root: a zero-length bone says nothing
# The bones from the spine out to where a limb starts. A stick figure's shoulders sit at
# its arms' roots, off the body's line, so these cross the paper between arm and body.
_GIRDLE_JOINTS = ("left_shoulder", "right_shoulder")
_GIRDLE = frozenset(k for k, (a, _) in enumerate(_SKELETON_BONES) if JOINTS[a] in _GIRDLE_JOINTS)
_FOOT_JOINTS = ("left_foot", "right_foot")
_FEET = frozenset(JOINT_INDEX[n] for n in _FOOT_JOINTS)


@dataclass(frozen=True)
class FinishedMask:
    mask: np.ndarray  # (H, W) bool: one connected figure (or all False when none was found)
    warnings: tuple[str, ...]  # codes from mask_warnings.WARNINGS, most serious first
    source: str = "opencv"  # what made the raw mask: "opencv" or "learned" (the segmenter)
    # (H, W) bool: blobs at the feet bigger than a hand (big shoes), left out of `mask` so
    # that masks are compared without them (`segment.choose`); None when there are none.
    feet: np.ndarray | None = None
    # (H, W) bool: thin strokes cut where they left the figure for the crop's edge
    # (`_cut_lines_off_the_crop`): a line across the page, or a drawing that goes on past
    # the crop, which the second crop looks at (`crop.whole_drawing`); None when none.
    lines: np.ndarray | None = None
    # (H, W) bool: the blobs hanging off OpenCV's mask through a narrow neck that were cut
    # as not the figure's (`_cut_glued_blobs`), which the segmenter's mask may give back
    # (`segment.choose`); None when none were cut, and for the segmenter's own mask.
    cut: np.ndarray | None = None

    @property
    def with_feet(self) -> np.ndarray:
        """(H, W) bool: `mask` with its big feet."""
        return self.mask if self.feet is None else self.mask | self.feet

    @property
    def reaching(self) -> np.ndarray:
        """(H, W) bool: `mask` with the lines cut off it: what runs on to the crop's edge."""
        return self.mask if self.lines is None else self.mask | self.lines


def finish_mask(
    mask: np.ndarray,
    rgb: np.ndarray,
    joints: Skeleton | np.ndarray | FigureJoints | None,
    ink: InkMap | None = None,
    learned: bool = False,
    open_edges: Edges = ALL_EDGES,
) -> FinishedMask:
    """One figure from a raw (H, W) bool `mask` of the (H, W, 3) uint8 crop `rgb`.

    `joints`: the figure's joints in the crop's pixels (see `FigureJoints.of`); `None`
    keeps the largest piece and skips every joint rule. `ink`: the crop's `ink_map`, if
    the caller has it already. `learned`: the mask is the segmenter's, which already says
    what is paper and carries the margin (it learned both from AnimatedDrawings-style
    masks): step 1's broad patches and step 7 are skipped (with the first its masks
    matched the annotated ones worse, on held-out synthetic drawings and on real-dev).
    `open_edges`: which of the crop's edges (left, top, right, bottom) the image goes on
    past; a stroke running to one of the others runs to the upload's own edge, cropped
    tight round the figure, and is the figure's (`_cut_lines_off_the_crop`).
    """
    if mask.shape != rgb.shape[:2]:
        raise ValueError(f"mask {mask.shape} does not match the image {rgb.shape[:2]}")
    ink = ink_map(rgb) if ink is None else ink
    figure = FigureJoints.of(joints) if joints is not None else None
    inked = ink.ink
    out = mask.astype(bool) if learned else _drop_paper(mask.astype(bool), inked, ink.stroke_width)
    out = _drop_edge_bands(out)
    if learned and figure is not None:
        # The inside of an outline round the skeleton, which the segmenter left out where
        # the outline is faint or broken (a body on blue paper, pencil legs): OpenCV's
        # mask gets the same from `segment.drawn_regions`.
        gap = outline_gap(mask.shape)
        out |= outlines_around_joints(_strokes_near(inked, out, gap, figure), figure, gap)
    feet, lines, cut = None, None, None
    if figure is None:
        out = _largest(out)
    else:
        out = _figure_pieces(out, figure)
        out = _cut_neighbours_faces(out, figure, inked)
        # The mask's broad parts, split at its narrow necks: an opening with a disc wider
        # than a limb (steps 3's both rules).
        radius = max(2.0, NECK_RADIUS * figure.size)
        broad = morph.opening(out, radius)
        glued = out
        out, feet = _cut_glued_blobs(out, figure, inked, broad, radius)
        cut = None if learned else glued & ~out  # only OpenCV's is given back (`choose`)
        out, lines = _cut_lines_off_the_crop(out, figure, broad & out, radius, open_edges)
        thickness = max(3, int(round(ink.stroke_width)))
        out = _join_pieces(out, figure, thickness, ink.stroke_width)
        out = _reach_joints(out, figure, thickness)
    out = fill_holes(out)
    if figure is not None:
        out = _drop_spilled_paper(out, inked, figure, ink.stroke_width)
    if not learned:
        out = with_ad_margin(out)
    if feet is not None:
        feet = fill_holes(out | (feet if learned else with_ad_margin(feet))) & ~out
    if lines is not None:
        lines &= ~out
    if cut is not None:
        cut &= ~(out if feet is None else out | feet)
        cut = cut if cut.any() else None
    warnings = mask_warnings(out, inked, figure)
    return FinishedMask(out, warnings, "learned" if learned else "opencv", feet, lines, cut)


def outline_gap(shape: tuple[int, ...]) -> float:
    """Px: the gaps closed in an outline round the skeleton on a learned mask, for a crop
    of `shape` (OUTLINE_GAP of its short side, at least OUTLINE_GAP_PX)."""
    return max(OUTLINE_GAP_PX, OUTLINE_GAP * min(shape[:2]))


def outlines_around_joints(inked: np.ndarray, figure: FigureJoints, gap: float) -> np.ndarray:
    """(H, W) bool: the insides that closing gaps up to `gap` px encloses and a joint or a
    bone lies in, with the closed outline around them.

    A wide closing would glue a caption or a ball to the figure; kept only where it
    closes an outline around the skeleton, it cannot.
    """
    closed = morph.closing(inked, gap / 2)
    insides = fill_holes(closed) & ~closed
    count, labels = cv2.connectedComponents(insides.astype(np.uint8), connectivity=4)
    touched = figure.labels_touched(labels)
    touched[0] = False
    if not touched.any():
        return np.zeros(inked.shape, bool)
    kept = touched[labels]
    return kept | (morph.dilate(kept, gap) & closed)


def _strokes_near(
    inked: np.ndarray, mask: np.ndarray, reach: float, figure: FigureJoints
) -> np.ndarray:
    """(H, W) bool: the ink within `reach` px of `mask`, and the whole of each stroke
    (8-connected) that comes that near, as far as the joints' box grown by OUTLINE_REACH
    of the figure's size (at least `reach`).

    A dress's hem or a body's back that the segmenter's mask stops short of then closes
    the outline as its sides do; a ruled line that runs on across the page is cut off."""
    near = inked & morph.dilate(mask, reach)
    if not len(figure.points):
        return near
    count, labels = cv2.connectedComponents(inked.astype(np.uint8), connectivity=8)
    touched = np.zeros(count, bool)
    touched[labels[near]] = True
    touched[0] = False
    margin = max(reach, OUTLINE_REACH * figure.size)
    (left, top), (right, bottom) = figure.points.min(axis=0), figure.points.max(axis=0)
    height, width = inked.shape
    box = np.zeros(inked.shape, bool)
    box[max(0, int(top - margin)) : min(height, int(bottom + margin) + 1),
        max(0, int(left - margin)) : min(width, int(right + margin) + 1)] = True  # fmt: skip
    return near | (touched[labels] & box)


def with_ad_margin(mask: np.ndarray) -> np.ndarray:
    """(H, W) bool `mask` grown by AD_MARGIN_PX: drawn as AnimatedDrawings' masks are."""
    return morph.dilate(mask, AD_MARGIN_PX)


def edge_on_ink(
    mask: np.ndarray, inked: np.ndarray, figure: FigureJoints | None = None
) -> np.ndarray:
    """(H, W) bool `mask` less the paper round its outermost strokes: the pixels of its rim
    (EDGE_DEPTH deep) that are not `inked`, except those an inked outline encloses.

    Paper that holds the figure together (a bridge `_join_pieces` drew across it) or holds
    a joint of `figure` (a wrist placed on the margin) stays, as far as the rim's depth
    round what it holds, or, joining pieces round a bend, as far as `_rejoined` reaches;
    where even that splits the figure, `mask` stays as it is.
    """
    if not mask.any() or not inked.any():
        return mask  # nothing measurable to check against: trust the source
    depth = max(EDGE_DEPTH_PX, EDGE_DEPTH * max(mask.shape))
    paper_rim = mask & ~morph.erode(mask, depth) & ~inked
    trimmed = fill_holes(morph.closing(mask & ~paper_rim, EDGE_CLOSING)) & mask
    # Grain and specks in the rim come loose with the paper round them: they go with it.
    speck = (2 * depth) ** 2
    trimmed = _without_specks(trimmed, speck)
    kept = np.zeros(mask.shape, bool)
    if figure is not None:
        lost = ~_on(trimmed, figure.points) & _on(mask, figure.points)
        kept = _dots(mask.shape, figure.points[lost])
    if kept.any():
        # The paper round a joint is never a speck: were it dropped as one, the joint would
        # be lost and the whole rim kept, so that a pixel of a joint's place would decide
        # whether the figure wears a band of paper (real photo 16; 19 with its joints moved
        # by 1% of the crop).
        held = (morph.dilate(kept, 2 * depth) & paper_rim) | kept
        trimmed = _without_specks(trimmed | held, speck, keep=held)
    pieces = piece_count(mask)
    if piece_count(trimmed) > pieces:
        trimmed |= _bridges(trimmed, depth) & mask  # pieces joined by paper stay joined
        trimmed = _rejoined(trimmed, mask, depth, pieces)
        if piece_count(trimmed) > pieces:
            return mask
    if figure is not None and points_on(trimmed, figure.points) < points_on(mask, figure.points):
        return mask
    return trimmed


def _rejoined(trimmed: np.ndarray, mask: np.ndarray, depth: float, pieces: int) -> np.ndarray:
    """(H, W) bool `trimmed` with the paper of `mask` it lost between its biggest piece and
    the rest given back, as far as the nearest of REJOIN_REACH rim depths `depth` from
    both that puts it in `pieces` pieces again; `trimmed` itself if none does."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(
        trimmed.astype(np.uint8), connectivity=8
    )
    if count - 1 <= pieces:
        return trimmed
    main = labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    apart = np.maximum(morph.distance_to(main), morph.distance_to(trimmed & ~main))
    for reach in REJOIN_REACH:
        joined = trimmed | (mask & (apart <= reach * depth))
        if piece_count(joined) <= pieces:
            return joined
    return trimmed


def _bridges(mask: np.ndarray, width: float) -> np.ndarray:
    """(H, W) bool: strips `width` px wide that join the pieces of `mask` into one, at
    their nearest points, shortest first (`_nearest_pairs`)."""
    count, labels = cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)
    groups = _Groups(np.ones(count))
    out = np.zeros(mask.shape, np.uint8)
    for _, a, b, p, q in _nearest_pairs(labels):
        if groups.join(a, b):
            cv2.line(out, _px(p), _px(q), 1, max(1, round(width)))
    return out > 0


def _without_specks(mask: np.ndarray, area: float, keep: np.ndarray | None = None) -> np.ndarray:
    """(H, W) bool `mask` less its 8-connected pieces smaller than `area` px, bar those
    that touch `keep` ((H, W) bool)."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(
        mask.astype(np.uint8), connectivity=8
    )
    small = stats[:, cv2.CC_STAT_AREA] < area
    small[0] = False
    if keep is not None:
        small[labels[keep & mask]] = False
    return mask & ~small[labels]


def piece_count(mask: np.ndarray) -> int:
    """How many 8-connected pieces (H, W) bool `mask` is in."""
    return cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)[0] - 1


def _on(mask: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(N,) bool: which of `points` (N, 2) x, y lie on `mask`."""
    return _labels_at(mask, points) > 0


def _dots(shape: tuple[int, int], points: np.ndarray) -> np.ndarray:
    """(H, W) bool of `shape`: the pixels of `points` (N, 2) x, y, each inside it."""
    out = np.zeros(shape, bool)
    x, y = np.round(points).astype(int).T.reshape(2, -1)
    out[y, x] = True
    return out


def points_on(mask: np.ndarray, points: np.ndarray) -> int:
    """How many of `points` (N, 2) x, y lie on `mask`."""
    return int(np.count_nonzero(_on(mask, points)))


def _drop_edge_bands(mask: np.ndarray) -> np.ndarray:
    """`mask` less the rows or columns at the crop's edges it fills across (EDGE_BAND of
    their length or more), up to the first it does not.

    The crop is the figure's box with a margin; a row at its edge that the mask fills
    from side to side is the table beyond the page, the page's edge or its shadow, cut
    off where the photo ends, and a figure that touches it drags it along as a slab.
    """
    out = mask.copy()
    for rows in (out, out[::-1], out.T, out.T[::-1]):  # views: top, bottom, left, right
        full = rows.mean(axis=1) >= EDGE_BAND
        if not full.all():  # a mask over the whole crop is left for the warnings to name
            rows[: int(np.argmin(full))] = False
    return out


def _largest(mask: np.ndarray) -> np.ndarray:
    count, labels, stats, _ = cv2.connectedComponentsWithStats(
        mask.astype(np.uint8), connectivity=8
    )
    if count < 2:
        return np.zeros(mask.shape, bool)
    return labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))


def _drop_paper(mask: np.ndarray, inked: np.ndarray, stroke_width: float) -> np.ndarray:
    """`mask` less the blank paper in it: broad patches neither near ink nor enclosed by an
    inked outline.

    A mask made from the ink loses nothing here; a learned mask that spilled onto a shadow
    or a blank corner of the page loses the spill. A thin unsupported strip stays: it is
    more likely a limb drawn fainter than the ink map can see than paper.
    """
    if not mask.any() or not inked.any():
        return mask  # nothing measurable to check against: trust the source
    near = morph.dilate(mask & inked, max(2.0, min(mask.shape) / 100))
    blank = mask & ~fill_holes(near)
    if not blank.any():
        return mask
    count, labels = cv2.connectedComponents(blank.astype(np.uint8), connectivity=8)
    depth = cv2.distanceTransform(blank.astype(np.uint8), cv2.DIST_L2, 3)
    deepest = np.r_[0.0, ndimage.maximum(depth, labels, np.arange(1, count))]
    broad = deepest > max(3.0, stroke_width)
    broad[0] = False
    return mask & ~broad[labels]


def _drop_spilled_paper(
    mask: np.ndarray, inked: np.ndarray, figure: FigureJoints, stroke_width: float
) -> np.ndarray:
    """`mask` less the paper it spilled over between the figure's parts.

    A segmenter that learned filled silhouettes, or a bridge drawn from a hand to a knee,
    closes the bay between an arm and the body, the legs or a tail and the back; that
    paper then moves with the arm as a slab. Such a patch has no ink, meets the outside
    of the mask where nothing was drawn, and holds nothing of the skeleton; the inside of
    a drawn body, head or dress is closed by its outline, or the spine or a limb's bone
    runs through it (the girdle's bones cross a stick figure's bays). A patch whose loss
    would cut off more of the figure than specks stays.
    """
    blank = mask & ~morph.dilate(inked, 1.5)  # the stroke's soft edge stays the stroke's
    count, labels = cv2.connectedComponents(blank.astype(np.uint8), connectivity=4)
    if count < 2:
        return mask
    area = np.bincount(labels.ravel(), minlength=count)
    opening = np.bincount(labels[morph.dilate(~mask, 2.0) & blank], minlength=count)
    # Broad, as a bay is: a thin strip on blank paper is more likely a limb drawn fainter
    # than the ink map sees. A bone counts where it runs through that broad core, not along
    # the patch's edge (an arm's bone runs along the arm's stroke, at the bay's rim).
    broad = max(3.0, stroke_width)
    depth = cv2.distanceTransform(blank.astype(np.uint8), cv2.DIST_L2, 3)
    core = np.where(depth >= broad, labels, 0)
    bone_px = np.zeros(count)
    for k, samples in enumerate(figure.bone_samples):
        if k not in figure.girdle:
            bone_px += np.bincount(_labels_at(core, samples).clip(0), minlength=count)
    candidate = (
        (area >= SPILL_SHARE * np.count_nonzero(mask))
        & (opening >= SPILL_OPENING * stroke_width)
        & (np.bincount(core.ravel(), minlength=count) > 0)
        & (bone_px < SPILL_BONE * stroke_width)
    )
    candidate[0] = False
    held = np.where(depth >= SPILL_JOINT_DEPTH * broad, labels, 0)
    candidate[_labels_at(held, figure.points).clip(0)] = False
    bone = figure.head_bone()
    out = mask.copy()
    for label in np.flatnonzero(candidate):
        patch = labels == label
        if bone is not None:
            rows, cols = np.nonzero(patch)
            head, chest = bone
            if np.hypot(cols.mean() - head[0], rows.mean() - head[1]) <= np.linalg.norm(
                head - chest
            ):
                continue  # inside a hat or hair drawn round the head
        # A joint near its rim keeps the paper round it, as deep as it would hold the patch.
        joints = _dots(mask.shape, figure.points[_on(patch, figure.points)])
        dropped = patch & ~morph.dilate(joints, SPILL_JOINT_DEPTH * broad)
        # Grain in the patch comes loose with it and goes too; a part cut off stays joined.
        kept = _without_specks(out & ~dropped, (2 * broad) ** 2)
        if piece_count(kept) == 1:
            out = kept
    return out


def _labels_at(labels: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Component label under each (N, 2) point; -1 for points outside the image."""
    height, width = labels.shape
    xy = np.round(points).astype(np.int64)
    inside = (xy[:, 0] >= 0) & (xy[:, 0] < width) & (xy[:, 1] >= 0) & (xy[:, 1] < height)
    out = np.full(len(points), -1, np.int64)
    out[inside] = labels[xy[inside, 1], xy[inside, 0]]
    return out


def _figure_pieces(mask: np.ndarray, figure: FigureJoints) -> np.ndarray:
    """The pieces of `mask` that hold a joint, that a bone runs through, or that sit where
    a hand, a foot or things on the head go (`FigureJoints.at_the_ends`)."""
    count, labels, stats, centroids = cv2.connectedComponentsWithStats(
        mask.astype(np.uint8), connectivity=8
    )
    if count < 2:
        return mask
    touched = figure.labels_touched(labels, count)
    touched[0] = False
    if not touched.any():
        return _largest(mask)  # the joints miss everything: the best guess is the biggest
    # What the crop's edge cuts through lies beyond the figure's box: the table, the
    # page's edge, the next drawing; never a hand.
    left, top = stats[:, cv2.CC_STAT_LEFT], stats[:, cv2.CC_STAT_TOP]
    right = left + stats[:, cv2.CC_STAT_WIDTH]
    bottom = top + stats[:, cv2.CC_STAT_HEIGHT]
    inner = (left > 0) & (top > 0) & (right < mask.shape[1]) & (bottom < mask.shape[0])
    touched |= inner & figure.at_the_ends(centroids, stats[:, cv2.CC_STAT_AREA])
    touched[0] = False
    return touched[labels]


def _cut_neighbours_faces(mask: np.ndarray, figure: FigureJoints, inked: np.ndarray) -> np.ndarray:
    """`mask` less a neighbour's head drawn against the figure's, and what hangs off the
    figure only through it (her neck, her body).

    Children draw families side by side, heads touching: the two heads are one blob, so no
    neck parts them, and the head's reach keeps the other. A face is an outline's inside
    (paper the `inked` strokes enclose). The figure's is the one its head joint lies in; a
    neighbour's is another one beside it at its height, about as big (NEIGHBOUR_FACE),
    with no joint and no bone in it and no hand near it (a balloon held up). An ear or a
    bun is smaller; a hat sits above. Her head is what lies nearer her face than the
    figure's (each distance in its face's radius), up to NEIGHBOUR_HEAD of her radius.
    """
    bone = figure.head_bone()
    if bone is None:
        return mask
    head, chest = bone
    strokes = mask & inked
    insides = (fill_holes(strokes) & ~strokes).astype(np.uint8)
    count, labels, stats, centroids = cv2.connectedComponentsWithStats(insides, connectivity=4)
    own = int(_labels_at(labels, head[None])[0])
    if own <= 0:
        return mask
    area = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
    radius = np.sqrt(area / np.pi)
    up = (head - chest) / max(1e-9, float(np.linalg.norm(head - chest)))
    offset = centroids - centroids[own]
    height, aside = np.abs(offset @ up), np.abs(offset @ np.array([-up[1], up[0]]))
    faces = (
        (area >= NEIGHBOUR_FACE[0] * area[own]) & (area <= NEIGHBOUR_FACE[1] * area[own])
        & (height <= radius[own]) & (aside >= 1.5 * radius[own])
        & ~figure.labels_touched(labels, count)
    )  # fmt: skip
    for point, bone_length in figure.hands:
        faces &= np.linalg.norm(centroids - point, axis=1) > HAND_REACH * bone_length + radius
    faces[[0, own]] = False
    if not faces.any():
        return mask
    rows, cols = np.nonzero(mask)
    points = np.stack([cols, rows], axis=1).astype(np.float64)
    mine = np.linalg.norm(points - centroids[own], axis=1) / radius[own]
    cut = np.zeros(mask.shape, bool)
    for label in np.flatnonzero(faces):
        theirs = np.linalg.norm(points - centroids[label], axis=1) / radius[label]
        near = (theirs < mine) & (theirs <= NEIGHBOUR_HEAD)
        cut[rows[near], cols[near]] = True
    # What the cut left apart from the figure, against her head, is hers.
    rest = mask & ~cut
    count, pieces = cv2.connectedComponents(rest.astype(np.uint8), connectivity=8)
    hers = np.zeros(count, bool)
    hers[np.unique(pieces[morph.dilate(cut, 1.5) & rest])] = True
    keep = figure.labels_touched(pieces, count) | ~hers
    keep[0] = False
    return keep[pieces]


def _cut_glued_blobs(
    mask: np.ndarray, figure: FigureJoints, inked: np.ndarray, broad: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray | None]:
    """`mask` less the blobs hanging off it through a narrow neck that are not the figure's,
    and the blobs of those at the end of a leg that may be big shoes (None if none): (H, W)
    bool each.

    `broad`, the mask opened with a disc `radius` px wide (wider than a limb), splits it at
    its narrow necks into cores (body, head, a ball...); strokes thinner than the disc
    vanish from the cores but stay in the mask, attached to whatever they touch. A core is
    the figure's when a joint or a bone lies in it, when it is hand-sized and sits at the
    end of a limb (a mitten, a shoe), when it sits on the head (ears, a hat), or when the
    figure holds it (`_held_in_hands`: a balloon on its string, a sword, a ball in the
    fist: issue 26's rule); anything else (a ball by the knee, a sun a closing glued to a
    hand) is cut off with its part of the mask. Of those, a core at a foot up to FOOT_SIZE
    (`FigureJoints.at_the_ends` with `big_feet`) is kept apart: a big shoe, or a ball at
    the feet.
    """
    if not len(figure.bones):
        return mask, None
    cores = broad.astype(np.uint8)
    count, labels, stats, centroids = cv2.connectedComponentsWithStats(cores, connectivity=8)
    if count < 3:
        return mask, None  # one core (or none): nothing hangs off the figure through a neck
    # A joint or bone counts where it lies deep in a core: where a held ball touches a
    # hand, the end of the forearm bone pokes into the ball's core, but only by a little.
    depth = cv2.distanceTransform(cores, cv2.DIST_L2, 3)
    held = figure.labels_touched(np.where(depth >= DEEP * radius, labels, 0), count)
    areas = stats[:, cv2.CC_STAT_AREA]
    held |= figure.at_the_ends(centroids, areas)
    held[0] = True
    held |= _held_in_hands(mask, labels, held, figure, inked, radius)
    if held.all():
        return mask, None
    kept = _figure_pieces(mask & ~morph.dilate(~held[labels], radius), figure)
    shoes = held | figure.at_the_ends(centroids, areas, big_feet=True)
    if (shoes == held).all():
        return kept, None
    with_shoes = _figure_pieces(mask & ~morph.dilate(~shoes[labels], radius), figure)
    return kept, with_shoes & ~kept


def _held_in_hands(
    mask: np.ndarray, cores: np.ndarray, held: np.ndarray, figure: FigureJoints,
    inked: np.ndarray, radius: float,
) -> np.ndarray:  # fmt: skip
    """(count,) bool over the labels of the (H, W) label image `cores` (`mask`'s cores, cut
    apart at necks `radius` px wide): those the figure holds. `mask` joins each to the
    `held` cores only at a hand (within HAND_REACH of its bone's length of the wrist, as
    far again as the neck's width where the core lies against it: a ball in the fist), or
    only through one (a balloon's string, a sword's hilt), or only by thin strokes that
    meet the figure near a hand, as far again as two necks' widths (a string leaving a
    drawn mitten past the wrist: `_strung_from_a_hand`); an `inked` stroke runs on from
    it into the figure (a closing's bridge to a ball beside the hand is no hold); and it is
    no bigger than HELD_SHARE of the mask (a neighbour holding the figure's hand is as
    big)."""
    found = np.zeros(len(held), bool)
    if not figure.hands or held.all():
        return found
    hands, near = _at_hands(mask.shape, figure), _at_hands(mask.shape, figure, radius)
    _, pieces = cv2.connectedComponents((mask & ~hands).astype(np.uint8), connectivity=8)
    _, strokes = cv2.connectedComponents((mask & inked).astype(np.uint8), connectivity=8)
    held_cores = held[cores] & (cores > 0)
    figure_pieces = np.unique(pieces[held_cores])
    _, thin = cv2.connectedComponents((mask & (cores == 0)).astype(np.uint8), connectivity=8)
    grip = _at_hands(mask.shape, figure, 2 * radius)
    piece_area, stroke_area = np.bincount(pieces.ravel()), np.bincount(strokes.ravel())
    limit = HELD_SHARE * np.count_nonzero(mask)
    pad = int(np.ceil(radius)) + 3
    height, width = mask.shape
    for label in np.flatnonzero(~held):
        # Each core's own window: its box grown by the neck's width and a little.
        rows, cols = np.nonzero(cores == label)
        top, left = max(0, rows.min() - pad), max(0, cols.min() - pad)
        window = np.s_[
            top : min(height, rows.max() + pad + 1), left : min(width, cols.max() + pad + 1)
        ]
        core, inside = cores[window] == label, mask[window]
        region = morph.dilate(core, radius) & inside
        own = np.setdiff1d(strokes[window][core], [0])
        in_region = np.bincount(strokes[window][region], minlength=len(stroke_area))
        if not (stroke_area[own] > in_region[own]).any():
            continue  # no stroke runs on from it into the figure
        under = np.setdiff1d(pieces[window][core], [0])
        through = under.size > 0 and not np.isin(under, figure_pieces).any()
        contact = morph.dilate(region, 1.5) & inside & ~region
        at = contact.any() and bool(near[window][contact].all())
        if through or at:
            found[label] = (np.count_nonzero(region) if at else piece_area[under].sum()) <= limit
        else:  # a string leaving a drawn hand past the wrist's reach
            found[label] = np.count_nonzero(region) <= limit and _strung_from_a_hand(
                cores == label, thin, held_cores, grip
            )
    return found


def _strung_from_a_hand(
    core: np.ndarray, thin: np.ndarray, held_cores: np.ndarray, near: np.ndarray
) -> bool:
    """Whether the (H, W) bool `core` hangs off the figure by thin strokes alone (`thin`,
    the label image of the mask's parts outside every core) that meet the figure's cores
    (`held_cores`) only `near` a hand: a balloon on its string from a drawn hand. Not a
    core on the crop's rim: what runs on past the crop is no thing held whole (a hose
    leading off to a fire)."""
    if core[0].any() or core[-1].any() or core[:, 0].any() or core[:, -1].any():
        return False
    strings = np.setdiff1d(thin[morph.dilate(core, 1.5)], [0])
    if not strings.size:
        return False
    contact = morph.dilate(np.isin(thin, strings), 1.5) & held_cores
    return bool(contact.any()) and bool(near[contact].all())


def _at_hands(shape: tuple[int, int], figure: FigureJoints, beyond: float = 0.0) -> np.ndarray:
    """(H, W) bool: within HAND_REACH of its bone's length of each hand's joint, and
    `beyond` px further."""
    out = np.zeros(shape, np.uint8)
    for point, bone in figure.hands:
        cv2.circle(out, _px(point), max(1, int(round(HAND_REACH * bone + beyond))), 1, -1)
    return out > 0


def _cut_lines_off_the_crop(
    mask: np.ndarray,
    figure: FigureJoints,
    broad: np.ndarray,
    radius: float,
    open_edges: Edges = ALL_EDGES,
) -> tuple[np.ndarray, np.ndarray | None]:
    """`mask` less its thin strokes that run on to the crop's `open_edges` (see
    `finish_mask`) holding no joint and no bone, as far as LINE_REACH of the figure's size
    from its broad parts, unless they leave the figure at a hand: a page's ruled line or a
    ground line is cut where it leaves the figure (issue 26's rule; real photo 27); a pole
    or a string the figure holds stays. Also what was cut (None if nothing): a drawing
    that goes on past the crop (a pig's body the detector left out) looks the same here,
    and the second crop (`crop.whole_drawing`) tells the two apart.

    Thin is what `broad` (the mask opened with a disc `radius` px wide) leaves out of the
    mask, farther than `radius` from it: a stick limb is thin too, but holds its joints."""
    rims = (mask[:, 0], mask[0], mask[:, -1], mask[-1])
    if not len(figure.bones) or not any(
        rim.any() for rim, side in zip(rims, open_edges, strict=True) if side
    ):
        return mask, None
    far = cv2.distanceTransform((~broad).astype(np.uint8), cv2.DIST_L2, 3)
    thin = mask & (far > radius)
    count, labels = cv2.connectedComponents(thin.astype(np.uint8), connectivity=8)
    edge = np.zeros(count, bool)
    sides = (labels[:, 0], labels[0], labels[:, -1], labels[-1])
    for rim, side in zip(sides, open_edges, strict=True):
        edge[rim] |= side
    edge &= ~figure.labels_touched(labels, count)
    edge[0] = False
    edge[labels[_at_hands(mask.shape, figure)]] = False
    if not edge.any():
        return mask, None
    # A line runs on far past the figure; a leg the crop cuts off ends nearer (LINE_REACH).
    on_edge = edge[labels]
    reach = np.zeros(count)
    np.maximum.at(reach, labels[on_edge], far[on_edge])
    edge &= reach >= LINE_REACH * figure.size
    if not edge.any():
        return mask, None
    cut = edge[labels]
    return mask & ~cut, cut


def _join_pieces(
    mask: np.ndarray, figure: FigureJoints, thickness: int, stroke_width: float
) -> np.ndarray:
    """Join the figure's pieces into one, with bridges `thickness` px wide: across the
    gaps along bones first, else at the nearest points (the shortest bridges that join
    the most to the biggest group), for as long as a bridge is at most MAX_GAP long (to
    specks, NEAR_STROKES `stroke_width`s; at the nearest points, at most GAP_SPAN of what
    it reaches spans); a piece no such bridge reaches is not the figure's and is dropped."""
    count, labels, stats, centroids = cv2.connectedComponentsWithStats(
        mask.astype(np.uint8), connectivity=8
    )
    if count < 3:
        return mask
    area = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
    on_face = _labels_at(_face(labels, area, figure).astype(np.int64), centroids) > 0
    groups = _Groups(np.where(on_face, np.inf, area), stats, _held(labels, on_face, figure))
    near = NEAR_STROKES * stroke_width
    max_gap = MAX_GAP * figure.size
    bridges = []  # (a, b, p, q): pieces a and b joined by a line from p to q
    # Gaps along bones: where a bone leaves one piece and enters another through paper.
    gaps = []
    for samples in figure.bone_samples:
        along = _labels_at(labels, samples)
        last = -1
        for k, label in enumerate(along):
            if label <= 0:
                continue
            if last >= 0 and along[last] != label:
                gaps.append((k - last, int(along[last]), int(label), samples[last], samples[k]))
            last = k
    for length, a, b, p, q in sorted(gaps, key=lambda g: g[0]):
        if length <= max_gap and groups.join(a, b):
            bridges.append((a, b, p, q))
    # The rest at their nearest points, shortest bridge first; the biggest group then
    # keeps whatever those bridges reached.
    group = groups.roots()[labels]
    main = int(np.argmax(np.bincount(group.ravel(), weights=(labels > 0).ravel(), minlength=count)))
    for length, a, b, p, q in _nearest_pairs(group):
        if length > max_gap:
            break
        specks = (groups.biggest(a) <= SPECK_PX) + (groups.biggest(b) <= SPECK_PX)
        if specks == 2 or (specks and length > near):
            continue
        if length > max(near, GAP_SPAN * min(groups.span(a), groups.span(b))):
            continue
        if groups.join(a, b):
            bridges.append((a, b, p, q))
    roots = groups.roots()
    kept = roots == roots[main]
    kept[0] = False
    out = kept[labels].astype(np.uint8)
    for a, _, p, q in bridges:
        if kept[a]:
            cv2.line(out, _px(p), _px(q), 1, thickness)
    return out > 0


def _held(labels: np.ndarray, on_face: np.ndarray, figure: FigureJoints) -> np.ndarray:
    """(count,) bool: the labelled pieces `on_face` and those within MAX_JOINT_GAP of a
    joint, which any bridge up to MAX_GAP may reach (see GAP_SPAN)."""
    held = on_face.copy()
    near = np.zeros(labels.shape, np.uint8)
    radius = max(1, int(round(MAX_JOINT_GAP * figure.size)))
    for x, y in np.round(figure.points).astype(int):
        cv2.circle(near, (int(x), int(y)), radius, 1, -1)
    held[np.bincount(labels[near > 0], minlength=len(held)) > 0] = True
    return held


def _face(labels: np.ndarray, area: np.ndarray, figure: FigureJoints) -> np.ndarray:
    """(H, W) bool: the hull of the strokes (pieces bigger than specks) within FACE_REACH
    of the head's joint and nearer it than the chest: the face, where its eyes and mouth
    are drawn."""
    face = np.zeros(labels.shape, np.uint8)
    bone = figure.head_bone()
    if bone is None:
        return face > 0
    head, chest = bone
    along = chest - head
    reach2 = float(along @ along)
    rows, cols = np.nonzero((area[labels] > SPECK_PX) & (labels > 0))
    offset = np.stack([cols, rows], axis=1) - head
    near = ((offset**2).sum(axis=1) <= (FACE_REACH**2) * reach2) & (offset @ along < 0.5 * reach2)
    if np.count_nonzero(near) >= 3:
        cv2.fillConvexPoly(
            face, cv2.convexHull(np.stack([cols[near], rows[near]], axis=1).astype(np.int32)), 1
        )
    return face > 0


class _Groups:
    """Which pieces are joined (union-find over piece labels), each group's biggest piece
    and, given the pieces' `stats` (connectedComponentsWithStats), how far it spans: the
    longer side of its pieces' box, infinite once it holds a `held` piece."""

    def __init__(
        self, areas: np.ndarray, stats: np.ndarray | None = None, held: np.ndarray | None = None
    ) -> None:
        self.parent = list(range(len(areas)))
        self._biggest = [float(a) for a in areas]  # at each root: its group's biggest piece, px
        self._box = None if stats is None else _boxes(stats)  # at each root: its group's box
        self._held = np.zeros(len(areas), bool) if held is None else held.copy()

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> bool:
        """Join a's group and b's; False if they were one already."""
        a, b = self.root(a), self.root(b)
        if a == b:
            return False
        self.parent[a] = b
        self._biggest[b] = max(self._biggest[a], self._biggest[b])
        self._held[b] |= self._held[a]
        if self._box is not None:
            self._box[b, :2] = np.minimum(self._box[a, :2], self._box[b, :2])
            self._box[b, 2:] = np.maximum(self._box[a, 2:], self._box[b, 2:])
        return True

    def biggest(self, i: int) -> float:
        """The area (px) of the biggest piece in i's group."""
        return self._biggest[self.root(i)]

    def span(self, i: int) -> float:
        """How far i's group spans, px (infinite when it holds a held piece)."""
        r = self.root(i)
        if self._held[r] or self._box is None:
            return float("inf")
        left, top, right, bottom = self._box[r]
        return float(max(right - left, bottom - top))

    def roots(self) -> np.ndarray:
        """(count,) int: each piece's group."""
        return np.array([self.root(i) for i in range(len(self.parent))], np.int64)


def _boxes(stats: np.ndarray) -> np.ndarray:
    """(count, 4) float: each piece's box (left, top, right, bottom) from its `stats`."""
    left, top = stats[:, cv2.CC_STAT_LEFT], stats[:, cv2.CC_STAT_TOP]
    right, bottom = left + stats[:, cv2.CC_STAT_WIDTH], top + stats[:, cv2.CC_STAT_HEIGHT]
    return np.stack([left, top, right, bottom], axis=1).astype(np.float64)


def _nearest_pairs(labels: np.ndarray) -> list[tuple[float, int, int, np.ndarray, np.ndarray]]:
    """Between each two labelled regions of `labels` (0: none) that are neighbours in the
    Voronoi diagram of the regions, the nearest pair of their pixels, shortest first:
    (length, a, b, p, q) with p on a and q on b, [x, y].

    One distance transform of the whole image finds them all, whatever the number of
    regions (a speckled page has thousands); the shortest bridges that join every region
    (a minimum spanning tree) are among them, to within a pixel.
    """
    _, (iy, ix) = ndimage.distance_transform_edt(labels == 0, return_indices=True)
    owner = labels[iy, ix]
    found = []
    for here, there in (
        (np.s_[:, :-1], np.s_[:, 1:]), (np.s_[:-1, :], np.s_[1:, :]),
    ):  # fmt: skip
        a, b = owner[here], owner[there]
        differ = a != b
        found.append(np.stack([
            a[differ], b[differ], ix[here][differ], iy[here][differ],
            ix[there][differ], iy[there][differ],
        ], axis=1))  # fmt: skip
    pairs = np.concatenate(found)
    swap = pairs[:, 0] > pairs[:, 1]
    pairs[swap] = pairs[swap][:, [1, 0, 4, 5, 2, 3]]
    length = np.hypot(pairs[:, 2] - pairs[:, 4], pairs[:, 3] - pairs[:, 5])
    key = pairs[:, 0] * (int(labels.max()) + 1) + pairs[:, 1]
    order = np.lexsort((length, key))
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(order) else order
    first = first[np.argsort(length[first], kind="stable")]
    return [
        (float(length[i]), int(pairs[i, 0]), int(pairs[i, 1]), pairs[i, 2:4], pairs[i, 4:6])
        for i in first
    ]


def _reach_joints(mask: np.ndarray, figure: FigureJoints, thickness: int) -> np.ndarray:
    """Bridge each joint that lies near but outside the mask to it (a stick hand's tip)."""
    if not mask.any():
        return mask
    height, width = mask.shape
    xy = np.round(figure.points).astype(np.int64)
    inside = (xy[:, 0] >= 0) & (xy[:, 0] < width) & (xy[:, 1] >= 0) & (xy[:, 1] < height)
    missing = [i for i in np.flatnonzero(inside) if not mask[xy[i, 1], xy[i, 0]]]
    if not missing:
        return mask
    out = mask.astype(np.uint8)
    # The nearest mask pixel of each missing joint, from the mask's outline (a few
    # thousand points): a distance transform of the whole crop cost far more
    # (docs/BENCHMARKS.md, section refusal-path).
    contours, _ = cv2.findContours(out, cv2.RETR_LIST, cv2.CHAIN_APPROX_NONE)
    outline = np.concatenate([c.reshape(-1, 2) for c in contours])
    for i in missing:
        x, y = xy[i]
        nx, ny = outline[np.argmin(((outline - (x, y)) ** 2).sum(axis=1))]
        if np.hypot(nx - x, ny - y) <= MAX_JOINT_GAP * figure.size:
            cv2.line(out, (int(x), int(y)), (int(nx), int(ny)), 1, thickness)
            cv2.circle(out, (int(x), int(y)), max(1, thickness // 2), 1, -1)
    return out > 0


def _px(p: np.ndarray) -> tuple[int, int]:
    return int(round(p[0])), int(round(p[1]))
