"""Robust noise scales of a per-commit series.

One home for the estimators that the context features, the synthetic
noise profiles, the workspace's alert summary and the real-data benchmark
all read: the scaled median absolute deviation, and the commit-to-commit
noise (the MAD of first differences over sqrt 2), and the detectors'
variant of it (:func:`robust_sigma`). A level change moves one
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


def robust_sigma(x: np.ndarray) -> float:
    """The detectors' noise level of shape (n,) values with level shifts, in their unit.

    The median absolute first difference divided by 0.6745*sqrt(2) estimates
    the noise standard deviation of Gaussian noise and is barely moved by a
    few steps, unlike the plain standard deviation (which a step inflates).
    Falls back to the mean absolute difference, then to the standard
    deviation, then to 1, for constant-ish series.

    Unlike :func:`diff_noise` the differences are not centred on their
    median, and it never returns 0 (the detectors divide by it): the
    detectors' penalties and scores, and the figures measured with them,
    were set with this one.
    """
    if len(x) < 3:
        return float(np.std(x)) or 1.0
    d = np.abs(np.diff(x))
    s = float(np.median(d)) / (0.6745 * np.sqrt(2.0))
    if s > 0:
        return s
    s = float(np.mean(d)) * np.sqrt(np.pi) / 2.0  # mean |diff| of N(0, 2s^2) is 2s/sqrt(pi)
    return s if s > 0 else (float(np.std(x)) or 1.0)
