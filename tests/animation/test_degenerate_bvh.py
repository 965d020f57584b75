"""Files that parse but make no sense, as an upload may carry: extreme Frame Times must not
blow up the retargeter's smoothing over time (a 10^12-tap kernel, a zero sigma), and a
skeleton without bone lengths is a MotionError, not a crash while rendering."""

import re
import time

import numpy as np
import pytest

from animation.bvh import parse_bvh
from animation.motions import MotionError, motion_from_bvh
from animation.retarget import motion_axes
from tests.support.rigs import AD_CHARACTER

WALK = (AD_CHARACTER.parent / "conventions" / "cmu_walk.bvh").read_text()


@pytest.mark.parametrize("frame_time", ["1e-12", "0.0001", "1000", "1e300"])
def test_extreme_frame_times_give_finite_axes_quickly(frame_time):
    text = re.sub(r"Frame Time:\s*\S+", f"Frame Time: {frame_time}", WALK)
    motion = motion_from_bvh(parse_bvh(text, "walk.bvh"), "walk")
    start = time.process_time()
    axes = motion_axes(motion)
    assert time.process_time() - start < 2.0  # a bounded kernel, not 10^12 taps
    assert np.isfinite(axes.lateral).all() and np.isfinite(axes.forward).all()
    assert np.allclose(np.linalg.norm(axes.lateral, axis=1), 1.0)


def test_bones_without_length_are_a_motion_error():
    # Mixamo's names alone give every role (CMU's need the hierarchy's shape, gone here).
    mixamo = (AD_CHARACTER.parent / "conventions" / "mixamo_walk.bvh").read_text()
    head, motion = mixamo.split("MOTION")
    flat = re.sub(r"OFFSET\s+\S+\s+\S+\s+\S+", "OFFSET 0 0 0", head) + "MOTION" + motion
    with pytest.raises(MotionError, match=r"walk\.bvh: the bones for .*left_elbow.* no length"):
        motion_from_bvh(parse_bvh(flat, "walk.bvh"), "walk")
