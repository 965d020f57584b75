"""Character + motion -> GIF, WebP or MP4. The rig is built once per character (the joints
checked against the drawing, the texture cleaned and paletted, the mesh cut into body parts
and the pieces it is drawn from); a motion then costs each part's turn per frame (a few
array operations for all frames), one camera for the whole clip, rasterising and the
encoder."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from animation.character import Character, for_output
from animation.formats import DEFAULT_FORMAT, check_format, encode
from animation.gif import InlineExecutor
from animation.joint_guard import guard_joints
from animation.mesh import Mesh, build_mesh
from animation.morph import fill_holes
from animation.motions import Motion, load_motion
from animation.parts import layer_ranks
from animation.rasterise import (
    Camera,
    Pieces,
    fit_camera,
    mesh_pieces,
    outline_weights,
    rasterise,
)
from animation.retarget import retarget_with_depths
from animation.skeleton import Skeleton
from animation.texture import PalettedTexture, clean_texture
from animation.timing import frame_schedule

MAX_SIZE = 1024  # output px: bounds memory (~250 MB at 1024), far above what a phone shows
# Output pixels rasterised together: each chunk of frames costs a few hundred numpy calls
# whatever its size, and holds ~20 bytes a pixel while it is drawn (40 MB).
_CHUNK_PIXELS = 2_000_000


@dataclass(frozen=True)
class RenderOptions:
    size: int = 256  # longest side of the output, px
    fps: float = 15
    max_frames: int = 150
    workers: int = 1  # threads for rasterising and LZW; 1 inside a pool already using every core
    format: str = DEFAULT_FORMAT  # a key of `formats.FORMATS`: gif, webp or mp4
    background: tuple[int, int, int] = (255, 255, 255)  # RGB behind the figure where a
    # format has no transparency (mp4); gif and webp stay transparent

    def __post_init__(self) -> None:
        check_format(self.format)
        if len(self.background) != 3 or not all(0 <= int(c) <= 255 for c in self.background):
            raise ValueError(f"background must be three 0..255 values, got {self.background}")
        if not 8 <= self.size <= MAX_SIZE:
            raise ValueError(f"size must be 8..{MAX_SIZE} px, got {self.size}")
        if not (np.isfinite(self.fps) and 0 < self.fps <= 100):
            raise ValueError(f"fps must be in (0, 100], got {self.fps}")
        if self.max_frames < 2:
            raise ValueError(f"max_frames must be at least 2, got {self.max_frames}")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")


@dataclass(frozen=True)
class Rig:
    """Everything about a character that no motion changes."""

    character: Character
    mesh: Mesh
    texture: PalettedTexture  # the cleaned texture: palette, indices, background index
    pieces: Pieces  # the triangles frames are drawn from, back to front
    outline: np.ndarray  # (Q, N) points that, with the vertices, bound the figure's extent
    warnings: tuple[str, ...] = ()  # what was done about the joints (joint_guard codes)

    def pose(self, joints: np.ndarray) -> np.ndarray:
        """(F, 16, 2) joint positions in texture px -> (F, N, 2) mesh vertices, all frames
        in one solve."""
        return self.mesh.binding.targets(np.asarray(joints, dtype=np.float64))


def build_rig(
    character: Character, timings: dict[str, float] | None = None, workers: int = 1
) -> Rig:
    """Guarded joints, cleaned texture, the mesh cut into parts: once per character. With
    `workers` > 1 the texture is cleaned on a second thread while the mesh is built
    (OpenCV and numpy release the GIL)."""
    clock = _Clock(timings)
    if np.ptp(character.skeleton.rest, axis=0).max() < 2:
        raise ValueError("the skeleton's joints all sit on one point")
    # Joints off the figure moved onto it; the rig, the retargeting and the joints out all
    # use the skeleton as guarded.
    guarded = guard_joints(character.mask, character.skeleton.rest)
    character = replace(character, skeleton=Skeleton(guarded.rest))
    joints = character.skeleton.rest
    with _executor(min(workers, 2)) as pool:
        cleaning = pool.submit(_clean_texture, character, timings)
        mesh = build_mesh(
            character.mask, joints, still=guarded.still, texture=character.texture[..., :3]
        )
        pieces = mesh_pieces(mesh)
        outline = outline_weights(mesh, pieces)
        clock.lap("mesh")
        texture = cleaning.result().within(mesh.region)
    clock.restart()
    return Rig(
        character=character,
        mesh=mesh,
        texture=texture,
        pieces=pieces,
        outline=outline,
        warnings=guarded.warnings,
    )


def _clean_texture(character: Character, timings: dict[str, float] | None) -> PalettedTexture:
    """The texture cleaned over the mask with its holes filled: a superset of the mesh's
    region (which fills only pinholes), known before the mesh is."""
    start = time.thread_time()
    texture = clean_texture(character.texture, fill_holes(character.mask))
    if timings is not None:
        timings["texture"] = timings.get("texture", 0.0) + time.thread_time() - start
    return texture


def render_joints(
    rig: Rig,
    joints: np.ndarray,
    delays_cs: np.ndarray,
    options: RenderOptions = RenderOptions(),
    timings: dict[str, float] | None = None,
    ranks: np.ndarray | None = None,
) -> bytes:
    """(F, 16, 2) joint positions in texture px, one row a frame -> the file's bytes in
    `options.format`; `ranks` (F, len(parts.LAYERS)): each frame's painter's order of the
    layers (`parts.layer_ranks`; default: `parts.LAYERS`' own).

    Adds each stage's CPU seconds (summed over threads) to `timings`.
    """
    joints = np.asarray(joints, dtype=np.float64)
    if joints.ndim != 3 or joints.shape[1:] != rig.character.skeleton.rest.shape:
        raise ValueError(f"joints must be (frames, 16, 2), got {joints.shape}")
    if not np.isfinite(joints).all():
        raise ValueError("joint positions must be finite")
    clock = _Clock(timings)
    vertices = rig.pose(joints)  # (F, N, 2)
    frames = len(vertices)
    clock.lap("pose")
    camera, placed = frame_geometry(rig, vertices, options.size)
    background = rig.texture.transparent
    clock.lap("rasterise")
    chunk_frames = max(1, _CHUNK_PIXELS // (camera.width * camera.height))

    def draw(start: int) -> tuple[np.ndarray, float]:
        began = time.thread_time()
        stop = start + chunk_frames
        chunk = rasterise(
            rig.pieces,
            rig.mesh,
            rig.texture.index,
            placed[start:stop],
            camera.width,
            camera.height,
            background,
            None if ranks is None else ranks[start:stop],
        )
        return chunk, time.thread_time() - began

    # Rasterising and encoding are pipelined over chunks of frames, on one pool of threads
    # (numpy, OpenCV and Pillow release the GIL), so memory holds a few chunks, not the clip.
    with _executor(options.workers) as pool:
        queued: deque[Future] = deque()

        def chunks() -> Iterator[np.ndarray]:
            for start in range(0, frames, chunk_frames):
                queued.append(pool.submit(draw, start))
                if len(queued) > options.workers:
                    yield _collect(queued.popleft(), timings)
            while queued:
                yield _collect(queued.popleft(), timings)

        data = encode(
            options.format,
            chunks(),
            rig.texture.palette,
            background,
            delays_cs,
            options.background,
            pool,
            options.workers,
            timings,
        )
    clock.restart()
    return data


def frame_geometry(rig: Rig, vertices: np.ndarray, size: int) -> tuple[Camera, np.ndarray]:
    """For (F, N, 2) posed vertices in texture px: the clip's camera and the vertices in
    output px."""
    camera = clip_camera(rig, vertices, size)
    return camera, vertices * camera.scale + camera.offset


def clip_camera(rig: Rig, vertices: np.ndarray, size: int) -> Camera:
    """The one camera of a clip: fitted to the figure's outline over all frames
    (vertices: (F, N, 2) deformed mesh in texture px), longest side `size` px."""
    points = np.concatenate([vertices, rig.outline @ vertices], axis=1)  # (F, N + Q, 2)
    return fit_camera(points.min(axis=(0, 1)), points.max(axis=(0, 1)), size)


def output_joints(rig: Rig, joints: np.ndarray, size: int) -> tuple[np.ndarray, tuple[int, int]]:
    """Joint positions (F, 16, 2) in texture px -> the same in the output's pixels, placed by
    the camera render_joints uses for these frames, and the output's (width, height)."""
    joints = np.asarray(joints, dtype=np.float64)
    camera = clip_camera(rig, rig.pose(joints), size)
    return joints * camera.scale + camera.offset, (camera.width, camera.height)


def _collect(future: Future, timings: dict[str, float] | None) -> np.ndarray:
    chunk, seconds = future.result()
    if timings is not None:
        timings["rasterise"] = timings.get("rasterise", 0.0) + seconds
    return chunk


def _executor(workers: int) -> Executor:
    return ThreadPoolExecutor(workers) if workers > 1 else InlineExecutor()


def render_motion(rig: Rig, motion: Motion, options: RenderOptions = RenderOptions()) -> bytes:
    """One motion for a rigged character -> the bytes of a file in `options.format`
    (`formats.FORMATS[options.format]` gives its suffix and content type)."""
    return render_motion_timed(rig, motion, options)


def render_motion_timed(
    rig: Rig, motion: Motion, options: RenderOptions, timings: dict[str, float] | None = None
) -> bytes:
    """`render_motion`, adding each stage's seconds to `timings`."""
    clock = _Clock(timings)
    times_s, delays_cs = frame_schedule(motion.duration_s, options.fps, options.max_frames)
    joints, depths = retarget_with_depths(rig.character.skeleton, motion, times_s)
    ranks = layer_ranks(depths)
    clock.lap("retarget")
    return render_joints(rig, joints, delays_cs, options, timings, ranks)


def render_motions(
    character: Character,
    motions: Sequence[str | Motion],
    options: RenderOptions = RenderOptions(),
) -> dict[str, bytes]:
    """Each motion (a name from the motion table, a BVH path, or a loaded Motion) -> the
    bytes of a file in `options.format`, from one rig at the output's resolution."""
    loaded = [m if isinstance(m, Motion) else load_motion(m) for m in motions]
    rig = build_rig(for_output(character, options.size))
    return {m.name: render_motion(rig, m, options) for m in loaded}


class _Clock:
    """Adds this thread's CPU seconds since the last lap to `timings[stage]` (no-op
    without a dict)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.restart()

    def restart(self) -> None:
        self.last = time.thread_time()

    def lap(self, stage: str) -> None:
        now = time.thread_time()
        if self.timings is not None:
            self.timings[stage] = self.timings.get(stage, 0.0) + now - self.last
        self.last = now
