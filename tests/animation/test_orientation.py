import numpy as np
import pytest
from scipy.ndimage import gaussian_filter1d

from animation.orientation import gaussian_smooth


@pytest.mark.parametrize(
    ("frames", "sigma"), [(600, 3.7), (40, 0.2), (5, 10.0), (1, 2.0), (30, 0.1)]
)
def test_gaussian_smooth_is_scipy_s_filter_with_nearest_ends(frames, sigma):
    values = np.random.default_rng(frames).normal(size=(frames, 3))
    expected = gaussian_filter1d(values, sigma, axis=0, mode="nearest")
    np.testing.assert_allclose(gaussian_smooth(values, sigma), expected, atol=1e-12)
