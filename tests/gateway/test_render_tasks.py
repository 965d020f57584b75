"""The figure's mask and the rig as the render workers make them, split for speed: the two
masks finished in two workers then settled (`tasks.finish_one`, `tasks.settle_mask`) give
what one choice between them gives (`animation.figure.choose_mask`), and the rig built once
on two threads (`tasks.rig`) is the rig every worker built for itself before."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from animation.figure import character_of, choose_mask, crop_for, rig_for
from animation.figure_mask import with_ad_margin
from animation.motions import load_motion
from animation.render import RenderOptions, render_motion
from gateway.rendering import tasks

SAMPLE = Path(__file__).resolve().parents[2] / "gateway" / "sample_drawing.jpg"


@pytest.fixture(scope="module")
def sample():
    """The sample drawing's crop, its keypoints in it, and the crop's place."""
    labels = json.loads(SAMPLE.with_suffix(".json").read_text())
    rgb = np.asarray(Image.open(SAMPLE).convert("RGB"))
    where = crop_for(tuple(labels["bbox"]), rgb.shape[1::-1])
    keypoints = np.asarray(labels["keypoints"], np.float64)[:, :2] - where.box[:2]
    return where.pixels(rgb), keypoints, where


def _answer(mask: np.ndarray, where) -> str:
    """`mask` (over the crop) as the segmenter sends it: base64 of a 0/255 PNG over the crop
    it saw, with the paper its margin lacks (`where.pads`)."""
    left, top, right, bottom = where.pads
    seen = np.pad(mask, ((top, bottom), (left, right)))
    ok, png = cv2.imencode(".png", seen.astype(np.uint8) * 255)
    assert ok
    return base64.b64encode(png.tobytes()).decode()


def _settled(sample, answer: str, budget_s: float | None = None) -> tasks.FigureMask:
    crop, keypoints, where = sample
    drawn = tasks.finish_one(tasks.FinishJob(crop, keypoints, where))
    learned = tasks.finish_one(tasks.FinishJob(crop, keypoints, where, answer, budget_s))
    return tasks.settle_mask(tasks.SettleJob(keypoints, where, None, drawn, learned))


def _learned_masks(sample) -> dict[str, np.ndarray]:
    crop, keypoints, _ = sample
    opencv = choose_mask(crop, keypoints).mask
    box = np.zeros_like(opencv)
    box[5:-5, 5:-5] = True  # most of the crop: the two disagree, and it warns
    return {"agreeing": with_ad_margin(opencv), "the crop": box}


@pytest.mark.parametrize("kind", ["agreeing", "the crop"])
def test_two_masks_finished_apart_settle_as_one_choice_between_them(sample, kind):
    crop, keypoints, _ = sample
    learned = _learned_masks(sample)[kind]
    one = choose_mask(crop, keypoints, learned=learned)
    split = _settled(sample, _answer(learned, sample[2]))
    assert split.source == one.source and split.warnings == one.warnings
    assert np.array_equal(split.mask, one.mask)
    assert split.consulted and split.unusable is None and split.cpu_s > 0


def test_past_its_budget_the_segmenters_mask_settles_alone_and_says_so(sample):
    crop, keypoints, _ = sample
    learned = _learned_masks(sample)["the crop"]
    answer = _answer(learned, sample[2])
    assert _settled(sample, answer, budget_s=10.0).source == "opencv"
    spent = _settled(sample, answer, budget_s=0.0)
    one = choose_mask(crop, keypoints, learned=learned, budget_s=0.0)
    assert spent.source == "learned" and spent.warnings[-1] == "over_budget"
    assert spent.warnings == one.warnings and np.array_equal(spent.mask, one.mask)


def test_an_answer_with_no_mask_in_it_leaves_opencvs(sample):
    crop, keypoints, _ = sample
    opencv = choose_mask(crop, keypoints)
    broken = _settled(sample, "not a png")
    assert broken.unusable == "bad_mask" and not broken.consulted
    empty = _settled(sample, "")  # the segmenter saw no figure: asked, and it said so
    assert empty.unusable is None and empty.consulted
    for settled in (broken, empty):
        assert settled.source == "opencv" and np.array_equal(settled.mask, opencv.mask)


def test_the_rig_built_once_on_two_threads_is_the_rig_each_worker_built(sample):
    crop, keypoints, _ = sample
    mask = choose_mask(crop, keypoints).mask
    options = RenderOptions(size=96, max_frames=6)
    shared = tasks.rig(tasks.RigJob(crop, keypoints, mask, options.size))
    own = rig_for(character_of(crop, keypoints, mask), options.size)
    assert np.array_equal(shared.mesh.vertices, own.mesh.vertices)
    assert np.array_equal(shared.mesh.part, own.mesh.part)
    assert np.array_equal(shared.texture.index, own.texture.index)
    assert np.array_equal(shared.texture.palette, own.texture.palette)
    files = tasks.render(tasks.RenderJob(shared, ["dab"], options))
    assert files == {"dab": render_motion(own, load_motion("dab"), options)}
