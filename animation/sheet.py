"""Contact sheets: a folder of drawings, one row each: the photo (when the folder has one),
the rest pose, and each motion at its extremes, so a person sees at a glance what a motion
does to each drawing where it does the most (a first frame hides most of it).

Per motion two frames: the one farthest from the clip's first (a dab at its deepest, a
jump at its top) and the one the motion bends most out of shape (`distortion`), or the next
farthest when that is the same frame. Each cell is drawn at the cell's size from one
camera per motion, so a limb stretched across the picture shows as a shrunken figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from animation.character import Character, load_character
from animation.distortion import measure
from animation.figure import rig_for
from animation.motions import Motion
from animation.rasterise import rasterise
from animation.render import Rig, frame_geometry
from animation.retarget import retarget
from animation.timing import frame_schedule

_LABEL_PX = 14  # the caption strip under each cell
_PAPER = (236, 236, 236)  # behind transparent pixels: a light grey, so white paper shows


@dataclass(frozen=True)
class Row:
    """One drawing's cells, left to right, and their captions."""

    name: str
    cells: list[np.ndarray]  # (h, w, 3) uint8 each
    captions: list[str]


def extreme_frames(rig: Rig, joints: np.ndarray) -> list[tuple[int, str]]:
    """(frame, why) of the two frames of (F, 16, 2) `joints` worth looking at: the deepest
    (farthest from the clip's first frame, jumps included: a figure drawn with its arms up
    is farthest from its drawing when it merely stands) and the most bent out of shape."""
    depth = np.linalg.norm(joints - joints[0], axis=2).sum(axis=1)
    report = measure(rig, joints)
    worst = np.nan_to_num(report.stretch, nan=1.0).max(axis=1) / np.maximum(
        np.nan_to_num(report.squash, nan=1.0).min(axis=1), 1e-3
    )
    worst = worst + 10.0 * (report.flipped > 0) + 10.0 * (report.torn > 0) + 10 * report.spikes()
    deepest = int(np.argmax(depth))
    bent = int(np.argmax(worst))
    if bent == deepest:
        bent = int(np.argsort(depth)[-2]) if len(depth) > 1 else deepest
    return [(deepest, "deepest"), (bent, "most bent")]


def draw_frames(rig: Rig, joints: np.ndarray, cell: int) -> list[np.ndarray]:
    """(F, 16, 2) joints -> F RGB frames `cell` px on their longest side, one camera."""
    vertices = rig.pose(joints)
    camera, placed = frame_geometry(rig, vertices, cell)
    index = rasterise(
        rig.pieces,
        rig.mesh,
        rig.texture.index,
        placed,
        camera.width,
        camera.height,
        rig.texture.transparent,
    )
    palette = np.vstack([rig.texture.palette[:, :3], np.zeros((256, 3), np.uint8)])[:256].copy()
    palette[rig.texture.transparent] = _PAPER
    return [palette[frame] for frame in index]


def character_row(
    name: str,
    character: Character,
    motions: Sequence[Motion],
    cell: int = 160,
    photo: Image.Image | None = None,
    fps: float = 15.0,
) -> Row:
    """The cells of one drawing: photo, rest, and two per motion."""
    rig = rig_for(character, cell)  # as the service rigs it
    cells, captions = [], []
    if photo is not None:
        thumb = photo.convert("RGB")
        thumb.thumbnail((cell, cell))
        cells.append(np.asarray(thumb))
        captions.append("photo")
    rest = rig.character.skeleton.rest[None]
    cells.append(draw_frames(rig, rest, cell)[0])
    captions.append("rest")
    for motion in motions:
        times, _ = frame_schedule(motion.duration_s, fps, 150)
        joints = retarget(rig.character.skeleton, motion, times)
        picks = extreme_frames(rig, joints)
        frames = draw_frames(rig, joints[[f for f, _ in picks]], cell)
        for (frame, why), image in zip(picks, frames, strict=True):
            cells.append(image)
            captions.append(f"{motion.name} {frame} {why}")
    return Row(name=name, cells=cells, captions=captions)


def layout(rows: Sequence[Row], cell: int = 160) -> Image.Image:
    """The rows as one sheet: a cell per frame, its caption under it, the name on the left."""
    name_px = 120
    width = name_px + cell * max((len(r.cells) for r in rows), default=1)
    height = (cell + _LABEL_PX) * max(len(rows), 1)
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for r, row in enumerate(rows):
        top = r * (cell + _LABEL_PX)
        draw.text((4, top + cell // 2), row.name[:18], fill=(0, 0, 0))
        for c, (image, caption) in enumerate(zip(row.cells, row.captions, strict=True)):
            left = name_px + c * cell
            h, w = image.shape[:2]
            sheet.paste(Image.fromarray(image), (left + (cell - w) // 2, top + (cell - h) // 2))
            draw.text((left + 2, top + cell), caption[:26], fill=(80, 80, 80))
        draw.line(
            [(0, top + cell + _LABEL_PX - 1), (width, top + cell + _LABEL_PX - 1)],
            fill=(200, 200, 200),
        )
    return sheet


def character_folders(folder: Path) -> list[Path]:
    """The annotation folders in `folder` (itself, if it is one), sorted by name."""
    if (folder / "char_cfg.yaml").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if (p / "char_cfg.yaml").is_file())


def folder_sheet(
    folder: Path, motions: Sequence[Motion], cell: int = 160
) -> tuple[Image.Image, list[str]]:
    """The sheet of every annotation folder in `folder`, and a line for each folder left
    out (one that cannot be read or rigged). A folder's `photo.*` leads its row."""
    rows, skipped = [], []
    for path in character_folders(folder):
        photos = sorted(path.glob("photo.*"))
        try:
            character = load_character(path)
            with Image.open(photos[0]) if photos else nullcontext() as photo:
                rows.append(character_row(path.name, character, motions, cell, photo))
        except (ValueError, OSError) as exc:
            skipped.append(f"{path.name}: {exc}")
    if not rows:
        raise ValueError(f"{folder}: no annotation folder (char_cfg.yaml) that could be drawn")
    return layout(rows, cell), skipped
