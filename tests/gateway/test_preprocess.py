import io

import numpy as np
import pytest
from PIL import Image

from gateway.errors import ImageTooLarge, InvalidImage
from gateway.preprocess import crop_box, decode_for_models, probe_image, to_rgb
from tests.gateway.images import drawing, encode, png_claiming

LIMIT = 40_000_000


def _photo(width=300, height=200) -> np.ndarray:
    """A dark square in the top-left corner of a white page: orientation is visible."""
    pixels = np.full((height, width, 3), 255, np.uint8)
    pixels[10:60, 10:60] = (200, 20, 20)
    return pixels


def test_scales_to_the_model_input_size_keeping_aspect():
    image = decode_for_models(encode(_photo(2000, 1000)), LIMIT, 1000)
    assert image.rgb.shape == (500, 1000, 3) and image.rgb.dtype == np.uint8
    assert image.scale == pytest.approx(0.5)
    assert Image.open(io.BytesIO(image.jpeg)).size == (1000, 500)


def test_small_images_are_not_enlarged():
    image = decode_for_models(encode(_photo(300, 200)), LIMIT, 1000)
    assert image.rgb.shape == (200, 300, 3) and image.scale == 1.0


def test_large_jpeg_is_decoded_at_reduced_scale():
    image = decode_for_models(encode(_photo(4000, 3000), "JPEG"), LIMIT, 1000)
    assert image.rgb.shape == (750, 1000, 3)
    assert image.rgb[8, 8, 0] > 150 > image.rgb[8, 8, 1]  # the red square survives scaling


def test_exif_orientation_is_applied():
    upright = _photo(300, 200)
    stored = Image.fromarray(np.rot90(upright, k=-1).copy())  # as a phone stores it: rotated
    exif = Image.Exif()
    exif[0x0112] = 8  # the viewer turns it a quarter turn counter-clockwise to show it
    image = decode_for_models(encode(stored, "JPEG", exif=exif.tobytes(), quality=95), LIMIT, 1000)
    assert image.rgb.shape == (200, 300, 3)
    assert image.rgb[30, 30, 0] > 150 and image.rgb[30, 30, 1] < 100  # red square top-left
    assert image.scale == 1.0


@pytest.mark.parametrize("mode", ["L", "1", "P", "CMYK", "RGBA", "LA", "I;16"])
def test_every_colour_mode_becomes_rgb(mode):
    page = Image.fromarray(_photo())
    if mode == "I;16":
        gray = np.asarray(page.convert("L"), np.uint16) * 257
        image = Image.fromarray(gray.astype(np.uint16))
        data = encode(image, "PNG")
    else:
        data = encode(page.convert(mode), "JPEG" if mode == "CMYK" else "PNG")
    decoded = decode_for_models(data, LIMIT, 1000).rgb
    assert decoded.shape == (200, 300, 3)
    assert decoded[150, 250].min() > 200  # the page stays white
    assert decoded[15:55, 15:55].mean() < 128  # the mark stays dark (dithered in mode 1)


def test_sixteen_bit_grayscale_is_scaled_not_clipped():
    gray = np.full((20, 20), 32768, np.uint16)  # mid grey in 16 bits
    image = to_rgb(Image.fromarray(gray))
    assert abs(int(np.asarray(image)[0, 0, 0]) - 128) <= 1


def test_transparent_background_becomes_white_paper():
    rgba = np.zeros((50, 50, 4), np.uint8)  # fully transparent black
    rgba[20:30, 20:30] = (0, 0, 255, 255)
    decoded = decode_for_models(encode(rgba), LIMIT, 1000).rgb
    assert decoded[0, 0].tolist() == [255, 255, 255]
    assert decoded[25, 25].tolist() == [0, 0, 255]


def test_palette_with_transparency():
    palette = Image.fromarray(_photo()).convert("P")
    palette.info["transparency"] = 0
    assert decode_for_models(encode(palette, transparency=0), LIMIT, 1000).rgb.shape == (
        200,
        300,
        3,
    )


def test_pixel_limit_is_checked_from_the_header():
    bomb = png_claiming(30000, 30000)
    with pytest.raises(ImageTooLarge):
        probe_image(bomb, LIMIT)
    with pytest.raises(ImageTooLarge):
        decode_for_models(bomb, LIMIT, 1000)
    assert probe_image(png_claiming(100, 100), LIMIT).width == 100


@pytest.mark.parametrize(
    "data", [b"", b"hello, not an image", encode(_photo())[:300], encode(_photo(), "GIF")]
)
def test_non_images_truncated_images_and_other_formats_are_invalid(data):
    with pytest.raises(InvalidImage):
        decode_for_models(data, LIMIT, 1000)


def test_crop_box_adds_a_margin_and_stays_inside():
    assert crop_box((100, 100, 200, 300), (1000, 1000)) == (90, 80, 210, 320)
    assert crop_box((0, 0, 50, 60), (50, 60)) == (0, 0, 50, 60)
    with pytest.raises(InvalidImage):
        crop_box((500, 500, 502, 502), (1000, 1000))


def test_synth_drawing_decodes_at_its_size():
    sample = drawing()
    decoded = decode_for_models(encode(sample.image), LIMIT, 1000)
    assert decoded.rgb.shape == sample.image.shape
    assert np.array_equal(decoded.rgb, sample.image)
