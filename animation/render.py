"""Character + motion -> GIF, WebP or MP4. The rig is built once per character (the
texture cleaned and paletted, the mesh and the pieces it is drawn from, the factorised ARAP
systems); a motion then costs one ARAP solve for all its frames, one camera for the whole
clip, rasterising and the encoder."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from animation.arap import ArapSolver, build_arap
from animation.character import Character, for_output
from animation.formats import DEFAULT_FORMAT, check_format, encode
from animation.gif import InlineExecutor
from animation.mesh import Mesh, barycentric_matrix, build_mesh, joint_triangles
from animation.morph import fill_holes
from animation.motions import Motion, load_motion
from animation.rasterise import (
    Camera,
    Pieces,
    fit_camera,
    mesh_pieces,
    outline_weights,
    rasterise,
)
from animation.retarget import retarget
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
    arap: ArapSolver
    texture: PalettedTexture  # the cleaned texture: palette, indices, background index
    pieces: Pieces  # the triangles frames are drawn from, back to front
    outline: np.ndarray  # (Q, N) points that, with the vertices, bound the figure's extent


def build_rig(
    character: Character, timings: dict[str, float] | None = None, workers: int = 1
) -> Rig:
    """Mesh, cleaned texture, joint binding and the factorised ARAP systems: once per
    character. With `workers` > 1 the texture is cleaned on a second thread while the mesh
    and the ARAP systems are built (OpenCV and numpy release the GIL)."""
    clock = _Clock(timings)
    joints = character.skeleton.rest
    if np.ptp(joints, axis=0).max() < 2:
        raise ValueError("the skeleton's joints all sit on one point")
    with _executor(min(workers, 2)) as pool:
        cleaning = pool.submit(_clean_texture, character, timings)
        mesh = build_mesh(character.mask, joints)
        pieces = mesh_pieces(mesh)
        outline = outline_weights(mesh, pieces)
        clock.lap("mesh")
        handles = barycentric_matrix(mesh, joints, joint_triangles(mesh, joints))
        arap = build_arap(mesh.vertices, mesh.triangles, handles)
        clock.lap("arap_build")
        texture = cleaning.result().within(mesh.region)
    clock.restart()
    return Rig(
        character=character,
        mesh=mesh,
        arap=arap,
        texture=texture,
        pieces=pieces,
        outline=outline,
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
) -> bytes:
    """(F, 16, 2) joint positions in texture px, one row a frame -> the file's bytes in
    `options.format`.

    Adds each stage's CPU seconds (summed over threads) to `timings`.
    """
    joints = np.asarray(joints, dtype=np.float64)
    if joints.ndim != 3 or joints.shape[1:] != rig.character.skeleton.rest.shape:
        raise ValueError(f"joints must be (frames, 16, 2), got {joints.shape}")
    if not np.isfinite(joints).all():
        raise ValueError("joint positions must be finite")
    clock = _Clock(timings)
    vertices = rig.arap.solve(joints)  # (F, N, 2)
    frames = len(vertices)
    clock.lap("solve")
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
    camera = clip_camera(rig, rig.arap.solve(np.asarray(joints, dtype=np.float64)), size)
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
    joints = retarget(rig.character.skeleton, motion, times_s)
    clock.lap("retarget")
    return render_joints(rig, joints, delays_cs, options, timings)


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
