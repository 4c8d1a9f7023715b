"""Robust noise scales of a per-commit series.

One home for the two estimators that the context features, the synthetic
noise profiles, the workspace's alert summary and the real-data benchmark
all read: the scaled median absolute deviation, and the commit-to-commit
noise (the MAD of first differences over sqrt 2). A level change moves one
first difference, so unlike the MAD of the values the commit-to-commit
noise does not grow with the number and size of a series' changes.
"""

from __future__ import annotations

import numpy as np

#: Scales a median absolute deviation to the standard deviation of a normal sample.
MAD_SCALE = 1.4826


def robust_sd(values: np.ndarray) -> float:
    """``1.4826 * median(|x - median(x)|)`` of shape (n,) values, in their units; 0.0 when empty."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return 0.0
    return MAD_SCALE * float(np.median(np.abs(x - np.median(x))))


def diff_noise(values: np.ndarray) -> float:
    """The commit-to-commit noise ``robust_sd(diff(x)) / sqrt(2)``, in the values' units; 0.0 below 3 values.

    (Two values give one difference, whose MAD is 0.)
    """
    return robust_sd(np.diff(np.asarray(values, dtype=np.float64))) / np.sqrt(2.0)
