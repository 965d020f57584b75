"""The shipped motions keep real drawings in shape (animation.distortion), and the measure
itself sees what it is there to see."""

import numpy as np
import pytest

from animation.character import for_output, load_character
from animation.distortion import HEAD_SCALE, TORSO_STRETCH, measure
from animation.motions import motion_table
from animation.parts import BACKING, PARTS
from animation.render import build_rig
from tests.support.real_photos import real_dev
from tests.support.rigs import motion_clip, rig

MOTIONS = list(motion_table())
HEAD, TORSO = PARTS.index("head"), PARTS.index("torso")


@pytest.fixture(scope="module", params=["char1", "char2", "char3", "char4"])
def real_rig(request):
    return build_rig(for_output(load_character(real_dev(request.param)), 256))


@pytest.mark.parametrize("motion", MOTIONS)
def test_every_shipped_motion_keeps_a_real_drawing_in_shape(real_rig, motion):
    report = measure(real_rig, motion_clip(real_rig, motion))
    assert not report.spikes().any(), report.growth.max()
    assert not report.torn.any(), report.torn
    assert not report.flipped.any()
    low, high = HEAD_SCALE
    assert low <= report.squash[:, HEAD].min() <= report.stretch[:, HEAD].max() <= high
    assert report.stretch[:, TORSO].max() <= TORSO_STRETCH


def test_the_measure_sees_a_stretch_a_flip_a_spike_and_a_tear(monkeypatch):
    r = rig("plain")
    rest = r.character.skeleton.rest
    assert not measure(r, rest[None]).spikes().any()
    centre = r.mesh.vertices.mean(axis=0)

    def posed(vertices):
        return lambda joints: np.repeat(vertices[None], len(joints), axis=0)

    # Stretched twice as long: every part stretches, the figure grows past a spike.
    stretched = centre + (r.mesh.vertices - centre) * [1.0, 2.0]
    monkeypatch.setattr(type(r), "pose", lambda self, joints: posed(stretched)(joints))
    report = measure(r, rest[None])
    assert report.stretch[0, HEAD] == pytest.approx(2.0) and report.spikes()[0]
    assert report.summary()["spike_frames"] == 1
    # Mirrored: every part's triangle flipped (the backing, a skin behind them, is no part's).
    mirrored = r.mesh.vertices * [-1.0, 1.0]
    monkeypatch.setattr(type(r), "pose", lambda self, joints: posed(mirrored)(joints))
    assert measure(r, rest[None]).flipped[0] == np.count_nonzero(r.mesh.layer != BACKING)
    # The head carried far off: a piece torn off.
    off = r.mesh.vertices.copy()
    off[r.mesh.binding.part == HEAD] += (0, -200)
    monkeypatch.setattr(type(r), "pose", lambda self, joints: posed(off)(joints))
    assert measure(r, rest[None]).torn[0] >= 1


def test_the_report_names_every_part():
    r = rig("plain")
    summary = measure(r, motion_clip(r, "dab")).summary()
    assert set(summary["stretch"]) == set(PARTS) == set(summary["squash"])
    assert summary["frames"] > 10 and summary["spike_frames"] == 0
    # The parts keep their drawn shape: a turn is no stretch.
    assert max(v for v in summary["stretch"].values() if v is not None) == pytest.approx(1.0)
