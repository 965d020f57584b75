"""A character: an AnimatedDrawings annotation folder (char_cfg.yaml, texture.png, mask.png)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import yaml
from PIL import Image

from animation import morph
from animation.skeleton import Skeleton


@dataclass(frozen=True)
class Character:
    texture: np.ndarray  # (H, W, 4) uint8 RGBA
    mask: np.ndarray  # (H, W) bool, True on the figure
    skeleton: Skeleton

    def __post_init__(self) -> None:
        if self.texture.ndim != 3 or self.texture.shape[2] != 4 or self.texture.dtype != np.uint8:
            raise ValueError(
                f"texture must be (H, W, 4) uint8, got {self.texture.shape} {self.texture.dtype}"
            )
        if self.mask.shape != self.texture.shape[:2]:
            raise ValueError(
                f"mask {self.mask.shape} does not match texture {self.texture.shape[:2]}"
            )
        if not self.mask.any():
            raise ValueError("mask is empty")

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return self.texture.shape[1], self.texture.shape[0]


MAX_PIXELS = 16_000_000  # a character crop is a few megapixels at most; refuse bombs


def _read_image(path: Path, mode: str) -> Image.Image:
    """Open, size-check and decode one image; any failure is a ValueError naming the file."""
    try:
        with Image.open(path) as im:
            if im.width * im.height > MAX_PIXELS:
                raise ValueError(f"{im.width}x{im.height} is over {MAX_PIXELS} pixels")
            return im.convert(mode)
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def load_character(folder: str | Path) -> Character:
    """Read an annotation folder; a missing or malformed file raises ValueError naming it."""
    folder = Path(folder)
    cfg_path = folder / "char_cfg.yaml"
    try:
        cfg = yaml.safe_load(cfg_path.read_text())
        skeleton = Skeleton.from_char_cfg(cfg["skeleton"])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{cfg_path}: {exc}") from exc
    texture = np.asarray(_read_image(folder / "texture.png", "RGBA"))
    mask = np.asarray(_read_image(folder / "mask.png", "L")) > 127
    if mask.shape != texture.shape[:2]:
        # Some tools save the mask at another scale; resample it onto the texture.
        mask = np.asarray(Image.fromarray(mask.astype(np.uint8) * 255).resize(
            (texture.shape[1], texture.shape[0]), Image.NEAREST)) > 127  # fmt: skip
    return Character(texture=texture, mask=mask, skeleton=skeleton)


def save_character(character: Character, folder: str | Path) -> None:
    """Write an annotation folder that AnimatedDrawings' tools can read."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    width, height = character.size
    cfg = {"width": width, "height": height, "skeleton": character.skeleton.to_char_cfg()}
    (folder / "char_cfg.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    Image.fromarray(character.texture).save(folder / "texture.png")
    Image.fromarray(character.mask.astype(np.uint8) * 255).save(folder / "mask.png")


# How many texels a character keeps per output pixel along its figure's longest side. The
# camera fits the whole clip (the figure with its arms up, its stride) into the output, so a
# frame shows the rest figure at most about 1 texel per output px, and a texture finer than
# that is averaged away by the sampling anyway; the half again in reserve is for motions
# that crouch or hug the figure smaller than its rest pose. On the real drawings at 256 px
# the rig of a bigger figure costs much less (texture cleaning and meshing scale with
# pixels), and the files and their colour error barely change (docs/BENCHMARKS.md, section
# output-scale).
OUTPUT_OVERSAMPLE = 1.5
STROKE_FLOOR = 0.5  # of an output pixel: see `with_stroke_floor`


def resampled(character: Character, factor: float) -> Character:
    """The character scaled by `factor` (< 1 shrinks): the texture area-averaged, the mask
    every pixel a quarter covered or more (a stroke thinner than a pixel keeps its line),
    the joints moved with their pixels."""
    width, height = character.size
    new_w, new_h = max(1, round(width * factor)), max(1, round(height * factor))
    texture = cv2.resize(character.texture, (new_w, new_h), interpolation=cv2.INTER_AREA)
    coverage = cv2.resize(
        character.mask.astype(np.uint8) * 255, (new_w, new_h), interpolation=cv2.INTER_AREA
    )
    # Pixel centres: x + 0.5 scales, as OpenCV's resize maps them.
    rest = (character.skeleton.rest + 0.5) * [new_w / width, new_h / height] - 0.5
    return Character(texture=texture, mask=coverage >= 64, skeleton=Skeleton(rest))


def _figure_side(mask: np.ndarray) -> int:
    """The longer side (px) of the (H, W) bool `mask`'s bounding box."""
    _, _, w, h = cv2.boundingRect(mask.astype(np.uint8))
    return max(w, h)


def with_stroke_floor(character: Character, size: int) -> Character:
    """The character with its mask grown by STROKE_FLOOR of an output pixel, at least a
    pixel, for an output `size` px on its longest side.

    The service's masks end on the ink: a stroke a pixel or two wide, drawn at an output
    pixel or less, breaks into dots that come loose from frame to frame.
    """
    radius = max(1.0, STROKE_FLOOR * _figure_side(character.mask) / size)
    return replace(character, mask=morph.dilate(character.mask, radius))


def for_output(character: Character, size: int, oversample: float = OUTPUT_OVERSAMPLE) -> Character:
    """The character at the finest resolution an output `size` px on its longest side can
    show: its figure's longest side at most `oversample` x `size` px. A character already
    that small is returned as it is."""
    factor = oversample * size / _figure_side(character.mask)
    return character if factor >= 1 else resampled(character, factor)
