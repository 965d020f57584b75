"""How a parent photographs the drawing: light, shadow, angle, table, blur, noise, JPEG."""

from __future__ import annotations

import functools

import cv2
import numpy as np

from .ink import BRIGHT, texture_crop

TABLES = [
    (150, 105, 65),
    (185, 140, 95),
    (110, 75, 45),
    (200, 200, 195),
    (90, 90, 95),
    (235, 235, 230),
    (60, 55, 50),
]

# How far from a flat, square-on scan each kind of photo strays.
PHOTO = {
    # rotation deg, corner jitter (fraction of side), zoom range, light strength, shadow chance
    "scan": (1.5, 0.005, (0.98, 1.04), 0.04, 0.0),
    "flat": (6.0, 0.025, (0.9, 1.08), 0.15, 0.35),
    "angled": (12.0, 0.07, (0.7, 1.02), 0.3, 0.5),
}


@functools.cache
def fibre_and_noise() -> np.ndarray:
    """Fixed zero-mean texture: soft paper fibre plus pixel noise, cropped at random."""
    rng = np.random.default_rng(777)
    pixel = rng.standard_normal((1024, 1024)).astype(np.float32)
    fibre = cv2.GaussianBlur(rng.standard_normal((1024, 1024)).astype(np.float32), (0, 0), 1.5)
    return pixel * 0.7 + fibre * (0.7 / fibre.std())


def light(rng: np.random.Generator, img: np.ndarray, photo: str, fibre: float) -> None:
    """Uneven light, a colour cast, a soft shadow, paper fibre and sensor noise, in place.

    Everything on the sheet multiplies the paper, so all of it folds into one per-pixel
    factor and one pass over the image (this is the generator's hot spot)."""
    h, w = img.shape[:2]
    strength, shadow_p = PHOTO[photo][3], PHOTO[photo][4]
    # Lighting varies slowly: compute it on a coarse grid and upsample.
    gh, gw = 48, 48
    coarse = 1.0 + rng.uniform(-strength, strength * 0.3, (3, 3)).astype(np.float32)
    field = cv2.resize(coarse, (gw, gh), interpolation=cv2.INTER_CUBIC)
    if rng.random() < shadow_p:
        shade = np.zeros((gh, gw), np.float32)
        # A shadow of the phone or a hand reaching in from one edge.
        edge = int(rng.integers(4))
        depth = rng.uniform(0.15, 0.5)
        a, b = sorted(rng.uniform(0, 1, 2))
        pts = np.array(
            [
                (a, 0),
                (b, 0),
                (b + rng.uniform(-0.2, 0.2), depth),
                (a + rng.uniform(-0.2, 0.2), depth),
            ]
        )
        pts = pts if edge < 2 else pts[:, ::-1]
        if edge % 2:
            pts = 1 - pts
        cv2.fillPoly(shade, [np.round(pts * (gw - 1, gh - 1)).astype(np.int32)], 1.0)
        # Soft (a distant lamp) or nearly hard-edged (the sun, a hand close to the sheet).
        shade = cv2.GaussianBlur(shade, (0, 0), rng.uniform(0.6, 5))
        field *= 1.0 - shade * rng.uniform(0.15, 0.6)
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32) / np.float32(gh - 1) - np.float32(0.5)
    if rng.random() < shadow_p * 0.8 + 0.05:  # light falling off across the whole page
        a = rng.uniform(0, 2 * np.pi)
        ramp = np.cos(a) * xx + np.sin(a) * yy + np.float32(0.5)
        field *= 1.0 - np.clip(ramp, 0, 1) * rng.uniform(0.15, 0.5)
    field *= 1.0 - rng.uniform(0.0, 0.5) * (xx**2 + yy**2)  # lens vignetting
    if rng.random() < 0.12:  # the flash's hot spot, burnt out at its centre
        cx, cy = rng.uniform(-0.3, 0.3, 2)
        spot = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / rng.uniform(0.01, 0.05))
        field += spot * rng.uniform(0.1, 0.35)
    if rng.random() < 0.15:  # a fold: the two halves of the sheet catch the light differently
        a, c = rng.uniform(0, np.pi), rng.uniform(-0.3, 0.3)
        side = (np.cos(a) * xx + np.sin(a) * yy) > c
        field *= np.where(side, np.float32(rng.uniform(0.92, 0.98)), np.float32(1.0))
    # Exposure: mostly about right, now and then bright, or a dim room's dull grey photo.
    roll = rng.random()
    field *= (
        rng.uniform(0.82, 1.02)
        if roll < 0.78
        else (rng.uniform(1.05, 1.2) if roll < 0.88 else rng.uniform(0.55, 0.8))
    )
    factor = cv2.resize(field, (w, h), interpolation=cv2.INTER_LINEAR)
    grain = texture_crop(rng, fibre_and_noise(), h, w)
    iso = rng.uniform(0.004, 0.02) if rng.random() < 0.9 else rng.uniform(0.02, 0.045)
    factor *= 1.0 + grain * np.float32(fibre + iso)
    np.multiply(img, cv2.merge([factor, factor, factor]), out=img)


def homography(rng: np.random.Generator, h: int, w: int, photo: str) -> np.ndarray:
    """Where the camera puts the sheet: rotation, zoom, shift and perspective."""
    rot, jitter, zoom, _, _ = PHOTO[photo]
    theta = np.radians(rng.uniform(-rot, rot))
    s = rng.uniform(*zoom)
    corners = np.float32([(0, 0), (w, 0), (w, h), (0, h)])
    centre = np.float32([w / 2, h / 2])
    c, si = np.cos(theta), np.sin(theta)
    rotated = (corners - centre) @ np.float32([[c, si], [-si, c]]) * s + centre
    rotated += rng.uniform(-jitter, jitter, (4, 2)).astype(np.float32) * np.float32([w, h])
    rotated += rng.uniform(-0.03, 0.03, 2).astype(np.float32) * np.float32([w, h])
    return cv2.getPerspectiveTransform(corners, rotated.astype(np.float32))


def table(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """What lies under the sheet: a table top, sometimes with crayons left lying about
    (the sheet then covers most of them)."""
    colour = np.array(TABLES[int(rng.integers(len(TABLES)))], np.float32) + rng.normal(0, 10, 3)
    coarse = np.clip(colour[None, None] * rng.uniform(0.75, 1.1, (2, 2, 1)), 0, 255).astype(
        np.uint8
    )
    out = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_LINEAR)
    if rng.random() < 0.3:
        s = max(h, w) / 512
        for _ in range(int(rng.integers(1, 4))):
            a = rng.uniform(0, np.pi)
            c = rng.uniform(0, 1, 2) * (w, h)
            d = np.array([np.cos(a), np.sin(a)]) * rng.uniform(30, 70) * s
            crayon = tuple(int(v) for v in BRIGHT[int(rng.integers(len(BRIGHT)))])
            thick = max(2, int(rng.uniform(5, 10) * s))
            p0, p1 = np.round(c - d).astype(int), np.round(c + d).astype(int)
            cv2.line(out, tuple(p0.tolist()), tuple(p1.tolist()), crayon, thick, cv2.LINE_AA)
            tip = tuple(np.round(c + d * 1.12).astype(int).tolist())
            cv2.line(
                out,
                tuple(p1.tolist()),
                tip,
                tuple(v // 2 for v in crayon),
                max(1, thick // 2),
                cv2.LINE_AA,
            )
    return out


def shoot(rng: np.random.Generator, sheet: np.ndarray, H: np.ndarray, photo: str) -> np.ndarray:
    """The photo of `sheet` (uint8 RGB) seen through homography H, over a table."""
    h, w = sheet.shape[:2]
    background = table(rng, h, w)
    if rng.random() < 0.6:  # the sheet's shadow on the table, to one side
        quad = cv2.perspectiveTransform(np.float32([[(0, 0), (w, 0), (w, h), (0, h)]]), H)[0]
        quad += rng.uniform(-1, 1, 2).astype(np.float32) * rng.uniform(2, 6) * max(h, w) / 512
        dark = (background[0, 0] * rng.uniform(0.5, 0.8)).astype(np.uint8)
        cv2.fillPoly(
            background, [np.round(quad * 4).astype(np.int32)], dark.tolist(), cv2.LINE_AA, 2
        )
    out = cv2.warpPerspective(
        sheet, H, (w, h), dst=background, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_TRANSPARENT
    )
    if rng.random() < 0.45:  # out of focus
        sigma = rng.uniform(0.4, 1.4) * max(h, w) / 512
        out = cv2.GaussianBlur(out, (0, 0), sigma)
    elif rng.random() < 0.25:  # the phone's own sharpening
        soft = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.8, 2.0))
        amount = rng.uniform(0.3, 1.0)
        out = cv2.addWeighted(out, 1 + amount, soft, -amount, 0)
    if rng.random() < 0.08:  # a shaky hand
        n = max(3, int(rng.uniform(3, 9) * max(h, w) / 512)) | 1
        kernel = np.zeros((n, n), np.float32)
        a = rng.uniform(0, np.pi)
        c = n // 2
        d = np.array([np.cos(a), np.sin(a)]) * c
        cv2.line(
            kernel,
            (int(round(c - d[0])), int(round(c - d[1]))),
            (int(round(c + d[0])), int(round(c + d[1]))),
            1.0,
            1,
        )
        out = cv2.filter2D(out, -1, kernel / kernel.sum())
    return out


def jpeg(rng: np.random.Generator, img: np.ndarray) -> np.ndarray:
    """Round-trip through JPEG at a random quality, as a phone or a messenger would
    (now and then from a grey-scale scan)."""
    if rng.random() < 0.04:
        img = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    if rng.random() < 0.3:
        return img
    quality = int(rng.integers(30, 96))
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def warp_mask(mask: np.ndarray, H: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """`mask` (uint8) through homography H, as cv2.warpPerspective with nearest neighbour,
    when all its set pixels lie inside the quadrilateral `corners` (4, 2): only that
    window of the output is computed (the whole image would cost as much as the photo)."""
    h, w = mask.shape
    moved = cv2.perspectiveTransform(np.float32(corners)[None], H)[0]
    x0, y0 = np.floor(moved.min(axis=0)).astype(int) - 2
    x1, y1 = np.ceil(moved.max(axis=0)).astype(int) + 3
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    out = np.zeros((h, w), np.uint8)
    if x1 <= x0 or y1 <= y0:
        return out
    shift = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], float)
    out[y0:y1, x0:x1] = cv2.warpPerspective(
        mask, shift @ H, (x1 - x0, y1 - y0), flags=cv2.INTER_NEAREST
    )
    return out
