"""The synthetic drawing generator: deterministic, labels consistent, styles honoured."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image

from animation import morph
from torchserve.training.synth import (
    HELD_OUT_STYLES,
    STYLE_AXES,
    Sample,
    camera,
    generate,
    generate_batch,
    props,
    scene,
)
from torchserve.training.synth.__main__ import main as synth_cli
from torchserve.training.synth.generator import MASK_MARGIN_PX, fill_enclosed

SEEDS = range(40)


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return generate_batch(SEEDS, size=320)


def test_same_seed_same_bytes():
    for seed in (0, 17, 123456):
        a = generate(seed, exclude=HELD_OUT_STYLES)
        b = generate(seed, exclude=HELD_OUT_STYLES)
        assert a.image.tobytes() == b.image.tobytes()
        assert a.keypoints.tobytes() == b.keypoints.tobytes()
        assert a.bbox.tobytes() == b.bbox.tobytes()
        assert a.mask.tobytes() == b.mask.tobytes()
        assert a.silhouette.tobytes() == b.silhouette.tobytes()
        assert a.style == b.style


def test_same_bytes_in_a_fresh_process():
    """Data-loader workers are separate processes: cached textures must not drift."""
    code = (
        "import hashlib; from torchserve.training.synth import generate; "
        "s = generate(5, size=200); print(hashlib.sha256(s.image.tobytes()).hexdigest())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    here = hashlib.sha256(generate(5, size=200).image.tobytes()).hexdigest()
    assert out.stdout.strip() == here


def test_different_seeds_differ():
    a, b = generate(1, size=256), generate(2, size=256)
    assert a.image.shape != b.image.shape or not np.array_equal(a.image, b.image)
    assert not np.allclose(a.keypoints, b.keypoints)


def test_mask_warped_in_its_window_matches_a_full_warp():
    rng = np.random.default_rng(0)
    for _ in range(20):
        h, w = rng.integers(100, 400, 2)
        mask = np.zeros((h, w), np.uint8)
        x0, y0 = rng.integers(5, w // 2), rng.integers(5, h // 2)
        x1, y1 = rng.integers(x0 + 5, w - 3), rng.integers(y0 + 5, h - 3)
        mask[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < 0.3
        H = camera.homography(rng, int(h), int(w), "angled")
        corners = np.float32([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        full = cv2.warpPerspective(mask, H, (int(w), int(h)), flags=cv2.INTER_NEAREST)
        # The window's shifted matrix rounds differently where a pixel maps exactly halfway
        # between two source pixels: a nearest-neighbour tie, now and then one pixel.
        assert np.count_nonzero(camera.warp_mask(mask, H, corners) != full) <= 2


def test_other_figures_stay_smaller_than_the_main_one():
    boxes = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        canvas = np.ones((400, 600, 3), np.float32)
        layout = scene.Layout(400, 600)
        fig_box = (250.0, 120.0, 330.0, 240.0)  # 120 px tall
        layout.take(fig_box)
        scene.decorate(rng, canvas, layout, "marker", 1.2, 12, fig_box, 15.0, boxes.append)
    assert boxes, "some pages got a second figure"
    assert all(y1 - y0 <= 0.8 * 120 + 1e-6 for _, y0, _, y1 in boxes)


def test_a_crowd_puts_people_of_the_figures_size_beside_it_each_boxed_on_their_ink():
    found = 0
    for seed in range(60):
        alone = generate(seed, exclude=HELD_OUT_STYLES, size=400)
        crowd = generate(seed, exclude=HELD_OUT_STYLES, size=400, crowd=True)
        assert alone.others.shape == (0, 4)
        if len(crowd.others) == 0:
            # Drawn from a generator of their own: a page without them is unchanged.
            assert np.array_equal(alone.image, crowd.image)
            continue
        found += 1
        main_h = crowd.bbox[3] - crowd.bbox[1]
        # What the other people add to the page (the scene keeps clear of them).
        added = np.abs(crowd.image.astype(int) - alone.image.astype(int)).max(axis=2) > 40
        for x0, y0, x1, y1 in crowd.others:
            assert 0 <= x0 < x1 <= 400 and 0 <= y0 < y1 <= 400
            assert y1 - y0 >= 0.4 * main_h  # a person, not the scene's small figures
            inside = added[int(y0) : int(y1), int(x0) : int(x1)]
            assert inside.mean() > 0.01  # drawn there: their box is on their ink
            # Beside or on the figure, not the figure itself.
            assert box_overlap((x0, y0, x1, y1), crowd.bbox) < 0.5
    assert 8 <= found <= 30  # about a quarter of pages (CROWD_ONE + CROWD_TWO, if room)


def box_overlap(a, b) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return iw * ih / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - iw * ih)


def test_types_and_shapes(samples):
    for s in samples:
        h, w = s.image.shape[:2]
        assert s.image.dtype == np.uint8 and s.image.shape == (h, w, 3)
        assert s.image.flags.c_contiguous
        assert s.bbox.dtype == np.float32 and s.bbox.shape == (4,)
        assert s.keypoints.dtype == np.float32 and s.keypoints.shape == (17, 3)
        assert s.mask.dtype == bool and s.mask.shape == (h, w)
        assert s.silhouette.dtype == bool and s.silhouette.shape == (h, w)
        assert set(s.style) == set(STYLE_AXES)
        assert max(h, w) == 320


def test_labels_inside_image_and_box_encloses_figure(samples):
    for s in samples:
        h, w = s.silhouette.shape
        x1, y1, x2, y2 = s.bbox
        assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h
        visible = s.keypoints[s.keypoints[:, 2] > 0]
        assert len(visible) >= 1
        assert (visible[:, 0] >= x1).all() and (visible[:, 0] <= x2).all()
        assert (visible[:, 1] >= y1).all() and (visible[:, 1] <= y2).all()
        ys, xs = np.nonzero(s.silhouette)
        assert len(xs) > 50, "the figure has drawn pixels"
        assert xs.min() >= x1 and xs.max() < x2 and ys.min() >= y1 and ys.max() < y2
        # Tight: the box is the figure's extent, not the page.
        assert xs.min() - x1 <= 1 or visible[:, 0].min() - x1 <= 1
        assert x2 - xs.max() <= 2 or x2 - visible[:, 0].max() <= 1


def test_joints_sit_on_the_figure(samples):
    """Left/right follow the figure's own sides; the head is above the hips and ankles."""
    for s in samples:
        kp = s.keypoints[:, :2]
        head_y = kp[:5, 1].mean()
        assert head_y < kp[11:13, 1].mean() < kp[15:17, 1].mean() + 1e-3
        # The figure faces the viewer: its left eye is on the image's right (small tilt allowed).
        assert kp[1, 0] > kp[2, 0]


def test_size_forms():
    assert generate(3, size=(240, 400)).image.shape == (240, 400, 3)
    strip = generate(3, size=(40, 1000))  # a thin strip still holds the whole figure
    assert strip.mask.any() and strip.bbox[3] <= 40 and strip.bbox[2] <= 1000
    assert max(generate(3, size=500).image.shape[:2]) == 500
    longer = [max(generate(s).image.shape[:2]) for s in range(8)]
    assert all(320 <= v <= 1000 for v in longer) and len(set(longer)) > 3
    with pytest.raises(ValueError):
        generate(0, size=5)


def test_exclude_and_only_honoured():
    seeds = range(200, 245)
    trained = generate_batch(seeds, size=64, exclude=HELD_OUT_STYLES)
    for axis, value in HELD_OUT_STYLES.items():
        assert all(s.style[axis] != value for s in trained)
        assert len({s.style[axis] for s in trained}) >= len(STYLE_AXES[axis]) - 2
    held = generate_batch(range(20), size=64, only=HELD_OUT_STYLES)
    assert all(all(s.style[a] == v for a, v in HELD_OUT_STYLES.items()) for s in held)


def test_exclude_several_values_of_an_axis():
    kept = {"white", "cream"}
    papers = {
        s.style["paper"]
        for s in generate_batch(
            range(60),
            size=64,
            exclude={"paper": ("coloured", "lined", "squared", "grey", "kraft", "whiteboard")},
        )
    }
    assert papers == kept


def test_bad_style_names_rejected():
    with pytest.raises(ValueError, match="paper"):
        generate(0, only={"paper": "papyrus"})
    with pytest.raises(ValueError, match="axis"):
        generate(0, exclude={"colour": "red"})
    with pytest.raises(ValueError, match="both forced and excluded"):
        generate(0, only={"body": "dress"}, exclude={"body": "dress"})
    with pytest.raises(ValueError, match="no medium"):
        generate(0, exclude={"medium": STYLE_AXES["medium"]})


def test_contact_sheet_cli(tmp_path):
    out = tmp_path / "sheet.png"
    assert (
        synth_cli(["sheet", "--out", str(out), "--count", "4", "--size", "200", "--held-out"]) == 0
    )
    with Image.open(out) as img:
        assert img.format == "PNG" and img.width >= 4 * 64
        pixels = np.asarray(img.convert("RGB"))
    # The labels are drawn on: the bbox green appears.
    assert ((pixels[..., 1] > 200) & (pixels[..., 0] < 40) & (pixels[..., 2] < 40)).any()


def test_cli_forces_styles_and_rejects_unknown_ones(tmp_path, capsys):
    out = tmp_path / "dresses.png"
    assert synth_cli(["sheet", "--out", str(out), "--count", "2", "--only", "body=dress"]) == 0
    assert out.stat().st_size > 0
    with pytest.raises(SystemExit):
        synth_cli(["sheet", "--out", str(out), "--only", "body=robot"])
    assert "AXIS=VALUE" in capsys.readouterr().err


# --- the mask label and the styles of issue 9 --------------------------------------------
def test_fill_enclosed_fills_a_ring_and_leaves_an_open_arc():
    ring = np.zeros((60, 60), np.uint8)
    cv2.circle(ring, (30, 30), 20, 1, 2)
    filled = fill_enclosed(ring)
    assert filled[30, 30] == 1 and filled[5, 5] == 0
    assert filled.sum() == pytest.approx(np.pi * 21**2, rel=0.1)
    arc = np.zeros((60, 60), np.uint8)
    cv2.ellipse(arc, (30, 30), (20, 20), 0, 30, 330, 1, 2)  # open on the right
    assert np.array_equal(fill_enclosed(arc), arc)


def test_mask_is_the_filled_silhouette_without_holes_with_animateddrawings_margin():
    """The head's inside is figure, nothing in the silhouette is an island of background
    (bar what an opaque pen lying on it hides), and the mask is the silhouette grown by
    MASK_MARGIN_PX, holes filled, as AnimatedDrawings' masks are."""
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * MASK_MARGIN_PX + 1,) * 2)
    for seed in range(300, 330):
        s = generate(seed, size=400, only={"props": "none"})
        for label in (s.silhouette, s.mask):
            assert np.array_equal(fill_enclosed(label.astype(np.uint8)), label), seed
        face = np.round(s.keypoints[:3, :2]).astype(int)  # nose and eyes, inside the head
        assert s.silhouette[face[:, 1], face[:, 0]].all(), f"seed {seed}: face not in it"
        grown = fill_enclosed(cv2.dilate(s.silhouette.astype(np.uint8), disc)) > 0
        assert np.array_equal(s.mask, grown) and (s.mask >= s.silhouette).all()


def test_detached_limbs_are_separate_blocks_of_the_mask():
    blocks = []
    for seed in range(400, 412):
        s = generate(seed, size=500, only={"limbs": "detached", "props": "none"})
        count, _ = cv2.connectedComponents(s.silhouette.astype(np.uint8), connectivity=8)
        blocks.append(count - 1)
    # Mostly apart; a crossed arm or a hand on the hip may still touch the body.
    assert min(blocks) >= 1 and np.mean(np.array(blocks) >= 2) > 0.5, blocks


def test_a_things_limbs_leave_its_outline_where_its_shoulders_and_hips_are():
    """A body that is a thing (a tree, an ice cream, a star...): the limbs poke out of it,
    and its shoulders and hips are labelled where they leave its outline, as an annotator
    clicks them; its hands and feet are out on the limbs, off the thing."""
    ends_off, checked = [], 0
    for seed in range(500, 540):
        s = generate(seed, size=600, only={"build": "thing", "body": "filled", "props": "none"})
        x0, y0, x1, y1 = s.bbox
        if max(x1 - x0, y1 - y0) < 150:
            continue  # a tiny figure's strokes are as wide as its limbs are long
        checked += 1
        # Opened by a disc wider than a limb, the silhouette keeps the thing and the head.
        body = morph.opening(s.silhouette, 0.045 * max(x1 - x0, y1 - y0))
        off_body = cv2.distanceTransform((~body).astype(np.uint8), cv2.DIST_L2, 5)
        in_body = cv2.distanceTransform(body.astype(np.uint8), cv2.DIST_L2, 5)
        kp = s.keypoints[:, :2].round().astype(int)
        to_edge = np.maximum(off_body, in_body)[kp[:, 1], kp[:, 0]]
        reach = 0.06 * max(x1 - x0, y1 - y0)
        assert (to_edge[[5, 6, 11, 12]] <= reach).all(), (seed, s.style, to_edge[[5, 6, 11, 12]])
        ends_off.extend(off_body[kp[[9, 10, 15, 16], 1], kp[[9, 10, 15, 16], 0]] > 0)
    assert checked >= 10 and np.mean(ends_off) >= 0.9, (checked, ends_off)


def test_props_touch_the_figure_and_an_opaque_pen_is_cut_out_of_the_label():
    figure = np.zeros((300, 240), bool)
    figure[60:240, 90:150] = True  # a body
    keypoints = np.zeros((17, 2))
    keypoints[:, 0], keypoints[:, 1] = 120, 150
    keypoints[[9, 10], 0] = 92, 148  # wrists at the body's sides
    touching, hidden_any = 0, False
    for seed in range(12):
        rng = np.random.default_rng(seed)
        sheet = np.ones((300, 240, 3), np.float32)
        hidden = props.add_props(rng, sheet, figure, keypoints, (90, 60, 150, 240), "marker", 1.0)
        drawn = (sheet < 0.97).any(axis=2) & ~figure
        near = cv2.dilate(figure.astype(np.uint8), np.ones((7, 7), np.uint8)) > 0
        touching += bool((drawn & near).any())
        hidden_any |= bool((hidden & figure).any())
        # Only what was painted hides (a white pen's barrel may be paper-white in places).
        painted = cv2.dilate((drawn | figure).astype(np.uint8), np.ones((9, 9), np.uint8)) > 0
        assert not (hidden & ~painted).any()
    assert touching >= 10 and hidden_any


def test_a_coloured_page_is_coloured_all_over_mostly_around_the_figure():
    figure = np.zeros((300, 240), bool)
    figure[60:240, 90:150] = True
    around = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        inks = scene.colour_in_page(rng, (300, 240), "crayon", 1.0, figure)
        covered = np.maximum.reduce([ink.layer for ink in inks]) > 0
        assert covered[~figure].mean() > 0.3, seed  # hatching leaves gaps, not half the page
        around += covered[figure].mean() < 0.05
    assert 6 <= around < 12  # usually coloured around the figure, sometimes over it
