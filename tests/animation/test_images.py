"""The one image decoding policy (animation/images.py), as the gateway and the handlers use it."""

import io
import time

import numpy as np
import pytest
from PIL import Image

from animation.images import (
    MAX_ASPECT,
    ImageRejected,
    ImageTooLarge,
    InvalidImage,
    UnsupportedImage,
    decode_image,
    read_header,
    to_rgb,
)
from tests.support.images import encode, png_claiming

LIMIT = 40_000_000


def _photo(width=300, height=200) -> np.ndarray:
    """A dark square in the top-left corner of a white page: orientation is visible."""
    pixels = np.full((height, width, 3), 255, np.uint8)
    pixels[10:60, 10:60] = (200, 20, 20)
    return pixels


def test_full_size_unless_a_longest_side_is_given():
    assert decode_image(encode(_photo(2000, 1000))).rgb.shape == (1000, 2000, 3)
    shrunk = decode_image(encode(_photo(2000, 1000)), LIMIT, max_side=1000)
    assert shrunk.rgb.shape == (500, 1000, 3) and shrunk.scale == pytest.approx(0.5)
    small = decode_image(encode(_photo(300, 200)), LIMIT, max_side=1000)
    assert small.rgb.shape == (200, 300, 3) and small.scale == 1.0  # never enlarged


def test_large_jpeg_is_decoded_at_reduced_scale():
    image = decode_image(encode(_photo(4000, 3000), "JPEG"), LIMIT, max_side=1000)
    assert image.rgb.shape == (750, 1000, 3)
    assert image.rgb[8, 8, 0] > 150 > image.rgb[8, 8, 1]  # the red square survives scaling


@pytest.mark.parametrize("max_side", [None, 150])
def test_exif_orientation_is_applied(max_side):
    upright = _photo(300, 200)
    stored = Image.fromarray(np.rot90(upright, k=-1).copy())  # as a phone stores it: rotated
    exif = Image.Exif()
    exif[0x0112] = 8  # the viewer turns it a quarter turn counter-clockwise to show it
    data = encode(stored, "JPEG", exif=exif.tobytes(), quality=95)
    assert (read_header(data).width, read_header(data).height) == (200, 300)  # as stored
    image = decode_image(data, LIMIT, max_side)
    side = 1.0 if max_side is None else 0.5
    assert image.rgb.shape == (round(200 * side), round(300 * side), 3)
    assert image.scale == side
    y = x = round(30 * side)
    assert image.rgb[y, x, 0] > 150 and image.rgb[y, x, 1] < 100  # red square top-left


@pytest.mark.parametrize("mode", ["L", "1", "P", "CMYK", "RGBA", "LA", "I;16"])
def test_every_colour_mode_becomes_rgb(mode):
    page = Image.fromarray(_photo())
    if mode == "I;16":
        gray = np.asarray(page.convert("L"), np.uint16) * 257
        data = encode(Image.fromarray(gray.astype(np.uint16)), "PNG")
    else:
        data = encode(page.convert(mode), "JPEG" if mode == "CMYK" else "PNG")
    decoded = decode_image(data).rgb
    assert decoded.shape == (200, 300, 3) and decoded.dtype == np.uint8
    assert decoded[150, 250].min() > 200  # the page stays white
    assert decoded[15:55, 15:55].mean() < 128  # the mark stays dark (dithered in mode 1)


def test_sixteen_bit_grey_is_scaled_from_its_full_range_not_clipped():
    mid = to_rgb(Image.fromarray(np.full((20, 20), 32768, np.uint16)))
    assert abs(int(np.asarray(mid)[0, 0, 0]) - 128) <= 1
    # A dark 16-bit picture stays dark: its range is 0..65535, whatever its brightest pixel.
    dark = decode_image(encode(Image.fromarray(np.full((8, 8), 200, np.uint16)), "PNG")).rgb
    assert dark.max() <= 1


def test_transparency_becomes_white_paper():
    rgba = np.zeros((50, 50, 4), np.uint8)  # fully transparent black
    rgba[20:30, 20:30] = (0, 0, 255, 255)
    decoded = decode_image(encode(rgba)).rgb
    assert decoded[0, 0].tolist() == [255, 255, 255]
    assert decoded[25, 25].tolist() == [0, 0, 255]
    palette = Image.fromarray(_photo()).convert("P")
    transparent = decode_image(encode(palette, transparency=int(np.asarray(palette)[100, 200])))
    assert transparent.rgb[100, 200].tolist() == [255, 255, 255]


def test_limits_are_checked_from_the_header_before_decoding():
    start = time.perf_counter()
    with pytest.raises(ImageTooLarge, match="more than 40000000 pixels"):
        read_header(png_claiming(30000, 30000), LIMIT)
    with pytest.raises(ImageTooLarge):
        decode_image(png_claiming(30000, 30000), LIMIT)
    assert time.perf_counter() - start < 0.5  # nothing was decoded
    assert read_header(png_claiming(100, 100), LIMIT).width == 100
    with pytest.raises(ImageTooLarge):
        read_header(png_claiming(100, 100), max_pixels=5000)


def test_sides_at_most_fifty_to_one_apart():
    assert read_header(encode(np.zeros((4, 4 * MAX_ASPECT, 3), np.uint8))).height == 4
    for shape in ((20, 1200, 3), (1200, 20, 3)):
        with pytest.raises(InvalidImage, match="further apart than 50:1") as refused:
            read_header(encode(np.zeros(shape, np.uint8)))
        assert (refused.value.status, refused.value.code) == (400, "invalid_image")


@pytest.mark.parametrize(
    "data, refusal, status, code",
    [
        (b"", InvalidImage, 400, "invalid_image"),
        (b"hello, not an image", InvalidImage, 400, "invalid_image"),
        (encode(_photo())[:300], InvalidImage, 400, "invalid_image"),
        (encode(_photo(), "GIF"), UnsupportedImage, 415, "unsupported_media_type"),
        (encode(_photo(), "BMP"), UnsupportedImage, 415, "unsupported_media_type"),
    ],
    ids=["empty", "text", "truncated", "gif", "bmp"],
)
def test_refusals_say_how_an_api_answers_them(data, refusal, status, code):
    with pytest.raises(refusal) as refused:
        decode_image(data)
    assert isinstance(refused.value, ImageRejected) and str(refused.value)
    assert (refused.value.status, refused.value.code) == (status, code)


def test_a_refusal_crosses_a_process_boundary():
    """Render workers send exceptions back pickled: class, words and status survive."""
    import pickle

    copy = pickle.loads(pickle.dumps(UnsupportedImage("GIF images are not accepted")))
    assert type(copy) is UnsupportedImage and str(copy) == "GIF images are not accepted"
    assert copy.status == 415


def test_webp_and_mpo_are_accepted():
    webp = decode_image(encode(_photo(), "WEBP", lossless=True)).rgb
    assert webp.shape == (200, 300, 3)
    buf = io.BytesIO()
    Image.fromarray(_photo()).save(buf, "MPO", save_all=True,
                                   append_images=[Image.fromarray(_photo())])  # fmt: skip
    assert read_header(buf.getvalue()).format == "MPO"
    assert decode_image(buf.getvalue()).rgb.shape == (200, 300, 3)


def test_the_policy_needs_nothing_a_model_server_lacks():
    """Model archives carry animation/__init__.py and images.py to a TorchServe that has
    numpy and Pillow only: neither may import more (OpenCV, scipy, the rest of the library)."""
    import ast
    import sys
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "animation"
    for name in ("__init__.py", "images.py"):
        tree = ast.parse((package / name).read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}  # fmt: skip
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}  # fmt: skip
        assert imported <= {"numpy", "PIL", "__future__"} | sys.stdlib_module_names, name
