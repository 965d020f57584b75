import io
import json
import sys
import zipfile

import av
import jsonschema
import numpy as np
import pytest
from PIL import Image

from animation.formats import FORMATS, format_for_path
from animation.gif import encode_gif
from animation.motions import load_motion
from animation.mp4 import encode_mp4
from animation.render import RenderOptions, render_motion
from animation.sprites import LAYOUT_SCHEMA, encode_frames_zip, encode_sprites, layout_of
from animation.timing import frame_schedule
from tests.animation.test_render import _frames as decoded_frames
from tests.support.rigs import rig

MOTION = "wave_hello"


def _frames(data: bytes) -> tuple[np.ndarray, list[int]]:
    _, frames, durations = decoded_frames(data)
    return frames, durations


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    motion = load_motion(MOTION)
    return {
        fmt: render_motion(rig("ad"), motion, RenderOptions(size=120, format=fmt))
        for fmt in FORMATS
    }


def test_each_format_is_what_its_name_says(clips):
    assert clips["gif"].startswith(b"GIF89a")
    assert clips["webp"][:4] == b"RIFF" and clips["webp"][8:12] == b"WEBP"
    assert clips["mp4"][4:8] == b"ftyp"
    assert clips["sprites"].startswith(b"\x89PNG\r\n\x1a\n")
    assert clips["png"].startswith(b"PK\x03\x04")
    assert {f.content_type for f in FORMATS.values()} == {
        "image/gif",
        "image/webp",
        "video/mp4",
        "image/png",
        "application/zip",
    }


def test_webp_is_animated_lossless_and_keeps_the_alpha(clips):
    gif, gif_ms = _frames(clips["gif"])
    webp, webp_ms = _frames(clips["webp"])
    assert Image.open(io.BytesIO(clips["webp"])).is_animated
    assert webp_ms == gif_ms
    # Lossless: every frame is the GIF's, pixel for pixel, transparent background included.
    assert webp.shape == gif.shape
    opaque = gif[..., 3] > 0
    assert (~opaque).any() and ((webp[..., 3] > 0) == opaque).all()
    assert (webp[opaque][:, :3] == gif[opaque][:, :3]).all()


def test_mp4_plays_back_with_every_frame_and_the_clip_s_duration(clips):
    motion = load_motion(MOTION)
    times, delays = frame_schedule(motion.duration_s, 15, 150)
    with av.open(io.BytesIO(clips["mp4"])) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264"
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        assert stream.codec_context.pix_fmt == "yuv420p"
        duration = float(container.duration) / 1e6
    assert len(decoded) == len(times)
    assert duration == pytest.approx(sum(delays) / 100, abs=0.01)
    height, width = decoded[0].shape[:2]
    assert width % 2 == 0 and height % 2 == 0
    gif, _ = _frames(clips["gif"])
    assert abs(width - gif.shape[2]) <= 1 and abs(height - gif.shape[1]) <= 1
    # The background is the default white; the figure is drawn on it.
    corner = decoded[0][:4, :4].reshape(-1, 3).astype(int)
    assert (np.abs(corner - 255) <= 6).all()
    assert (np.abs(decoded[0].astype(int) - 255).sum(axis=2) > 60).mean() > 0.05


def test_mp4_takes_the_background_colour():
    data = render_motion(
        rig("ad"),
        load_motion("jumping"),
        RenderOptions(size=64, format="mp4", background=(0, 90, 200)),
    )
    with av.open(io.BytesIO(data)) as container:
        first = next(container.decode(video=0)).to_ndarray(format="rgb24")
    assert np.abs(first[:3, :3].reshape(-1, 3).astype(int) - (0, 90, 200)).max() <= 8


def test_mp4_odd_sides_are_padded_to_even():
    palette = np.array([[200, 0, 0]], np.uint8)
    frames = np.ones((3, 7, 9), np.uint8)  # index 1 is the background
    frames[:, 2:5, 3:6] = 0
    data = encode_mp4([frames], palette, 1, [5, 5, 5], (255, 255, 255))
    with av.open(io.BytesIO(data)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(decoded) == 3 and decoded[0].shape == (8, 10, 3)


def test_mp4_without_pyav_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # as if PyAV were not installed
    with pytest.raises(ImportError, match="pip install"):
        encode_mp4([np.zeros((2, 4, 4), np.uint8)], np.zeros((1, 3), np.uint8), 1, [5, 5])


def test_format_by_file_name():
    assert format_for_path("out/dab.MP4") == "mp4"
    assert format_for_path("dab.webp") == "webp"
    assert format_for_path("dab.gif") == "gif"
    assert format_for_path("dab.png") == "sprites" and format_for_path("dab.zip") == "png"
    assert format_for_path("dab.bmp") is None and format_for_path("dab") is None


def test_bad_format_options_are_refused():
    with pytest.raises(ValueError, match="format"):
        RenderOptions(format="avi")
    for bad in ((0, 0), (0, 0, 256), (-1, 0, 0)):
        with pytest.raises(ValueError, match="background"):
            RenderOptions(background=bad)


def test_gif_with_a_small_palette_uses_short_codes_and_decodes():
    palette = np.array([[200, 30, 30], [30, 200, 30], [30, 30, 200]], np.uint8)
    frames = np.full((4, 20, 30), 3, np.uint8)  # index 3 = len(palette): transparent
    for i in range(4):
        frames[i, 5:15, 2 + 5 * i : 12 + 5 * i] = i % 3
    gif = encode_gif(frames, palette, [5] * 4, 3)
    assert gif[10] & 0x07 == 1  # global colour table of 2**(1+1) = 4 entries
    first_image = 13 + 3 * 4 + 19 + 8  # header, colour table, loop, control extension
    assert gif[first_image] == 0x2C and gif[first_image + 10] == 2  # LZW codes from 2 bits
    decoded, _ = _frames(gif)
    for frame, rgba in zip(frames, decoded, strict=True):
        opaque = frame != 3
        assert ((rgba[..., 3] > 0) == opaque).all()
        assert (rgba[..., :3][opaque] == palette[frame[opaque]]).all()


def _rgba(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGBA"))


def _same_after_alpha(frames: np.ndarray, gif: np.ndarray) -> None:
    """Equal where the GIF is opaque, transparent where it is."""
    assert frames.shape == gif.shape
    opaque = gif[..., 3] > 0
    assert (~opaque).any() and ((frames[..., 3] > 0) == opaque).all()
    assert (frames[opaque][:, :3] == gif[opaque][:, :3]).all()


def test_a_sprite_sheet_holds_the_gif_s_frames_where_its_layout_says(clips):
    gif, gif_ms = _frames(clips["gif"])
    layout = layout_of(clips["sprites"])
    jsonschema.validate(layout, LAYOUT_SCHEMA)
    sheet = _rgba(clips["sprites"])
    height, width = gif.shape[1:3]
    assert layout["frame"] == {"width": width, "height": height}
    assert layout["count"] == len(gif) and len(layout["frames"]) == len(gif)
    assert layout["columns"] * layout["rows"] >= len(gif) > layout["columns"] * (layout["rows"] - 1)
    assert sheet.shape[:2] == (layout["rows"] * height, layout["columns"] * width)
    frames = np.stack([sheet[f["y"] : f["y"] + f["h"], f["x"] : f["x"] + f["w"]]
                       for f in layout["frames"]])  # fmt: skip
    _same_after_alpha(frames, gif)
    assert [f["duration_ms"] for f in layout["frames"]] == gif_ms
    assert layout["fps"] == pytest.approx(1000 * len(gif) / sum(gif_ms), abs=1e-3)
    # A cell the frames do not fill is left transparent.
    assert (sheet[..., 3] > 0).sum() == (gif[..., 3] > 0).sum()


def test_png_frames_come_numbered_in_a_zip_with_their_layout(clips):
    gif, gif_ms = _frames(clips["gif"])
    with zipfile.ZipFile(io.BytesIO(clips["png"])) as archive:
        names = archive.namelist()
        frames = np.stack([_rgba(archive.read(n)) for n in names if n.endswith(".png")])
        layout = json.loads(archive.read("layout.json"))
    assert names[:-1] == [f"frame_{i:04d}.png" for i in range(1, len(gif) + 1)]
    assert names[-1] == "layout.json"
    jsonschema.validate(layout, LAYOUT_SCHEMA)
    _same_after_alpha(frames, gif)
    assert [f["duration_ms"] for f in layout["frames"]] == gif_ms


def test_the_same_frames_give_the_same_bytes():
    # Storage keys the outputs by their inputs: a zip's dates must not make two answers.
    frames = np.zeros((3, 4, 5), np.uint8)
    palette = np.zeros((256, 3), np.uint8)
    first = encode_frames_zip([frames], palette, 0, [7, 7, 6])
    assert encode_frames_zip([frames], palette, 0, [7, 7, 6]) == first
    assert encode_sprites([frames], palette, 0, [7, 7, 6]) == encode_sprites(
        [frames], palette, 0, [7, 7, 6]
    )


def test_a_png_without_a_layout_is_no_sprite_sheet():
    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, "PNG")
    with pytest.raises(ValueError, match="no layout"):
        layout_of(buf.getvalue())
