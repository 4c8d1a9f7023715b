"""Two-sided CUSUM (Page 1954) with the settings of the performance-history study.

As applied to benchmark histories: the allowed drift (slack) ``k`` is a fixed
fraction of the series' range (5 %), and the alarm threshold ``h`` follows
the noise, ``threshold`` times the standard deviation of a sliding window of
recent values of the current segment. The reference level is the mean of that
same window, so slow drifts inside a segment are absorbed.

When an accumulator crosses ``h`` (the alarm), the change is placed at its
onset. The usual CUSUM estimate, the commit after the accumulator last stood
at zero, is often early by a few commits (noise keeps it above zero), and a
new segment starting early mixes the old level into the new reference and
raises a second alarm. So the onset is refined to the least-squares split of
the current segment up to the alarm, searched from ``window`` commits before
that last zero. The accumulators then restart with the new segment beginning
at the onset.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from triage.detectors.base import NONNEG, ChangePoint, Detector, Range
from triage.detectors.costs import CostL2


class Cusum(Detector):
    """Two-sided tabular CUSUM with a range-based drift and a sliding-window threshold.

    Parameters
    ----------
    drift : slack ``k`` as a fraction of the series range ``max - min`` (0.05)
    threshold : alarm level ``h`` in window standard deviations (12: no alarm on
        30 flat Gaussian series of 500 points; 30 of 30 steps of 3 sigma found
        within 5 commits, with no other alarm)
    window : commits in the sliding reference window (30)
    min_window : commits of a new segment needed before accumulating (8)

    ``score`` is the accumulated excess at the alarm in window standard
    deviations; fields ``alarm_index`` (commit of the alarm), ``direction``
    (+1 up, -1 down), ``mean_before``, ``sigma``.
    """

    name = "cusum"
    ranges: ClassVar[dict[str, Range]] = {
        "drift": NONNEG, "threshold": NONNEG, "window": ("int", 2, None, True, False), "min_window": ("int", 2, None, True, False),
    }

    def __init__(self, drift: float = 0.05, threshold: float = 12.0, window: int = 30, min_window: int = 8):
        self.drift = drift
        self.threshold = threshold
        self.window = window
        self.min_window = min_window

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        if self.min_window < 2 or self.window < self.min_window:
            raise ValueError("need 2 <= min_window <= window")
        n = len(x)
        if n < self.min_window + 1:
            return []
        k = self.drift * float(np.ptp(x))
        # The L2 cost's prefix sums also give each window's mean and standard deviation in O(1);
        # they are sums of x - offset, so the means here are too.
        cost = CostL2().fit(x)
        c1, c2, offset = cost.cumsum, cost.cumsum_sq, cost.offset
        out: list[ChangePoint] = []
        seg = 0
        gp = gn = 0.0
        t = seg + self.min_window
        zp = zn = t - 1  # last commit at which each accumulator stood at zero
        while t < n:
            lo = max(seg, t - self.window)
            m = t - lo
            mu = (c1[t] - c1[lo]) / m
            var = max((c2[t] - c2[lo]) / m - mu * mu, 0.0) * m / (m - 1)
            sigma = np.sqrt(var)
            dev = (x[t] - offset) - mu
            gp = max(0.0, gp + dev - k)
            gn = max(0.0, gn - dev - k)
            if gp == 0.0:
                zp = t
            if gn == 0.0:
                zn = t
            h = self.threshold * sigma
            if sigma > 0 and (gp > h or gn > h):
                up = gp >= gn
                last_zero = zp if up else zn
                # least-squares split of the segment up to the alarm (see the module docstring)
                onset = cost.best_split(seg, t + 1, np.arange(max(seg + 1, last_zero + 1 - self.window), t + 1))
                out.append(
                    ChangePoint(
                        int(onset),
                        float((gp if up else gn) / sigma),
                        {"alarm_index": int(t), "direction": 1 if up else -1, "mean_before": float(mu + offset), "sigma": float(sigma)},
                    )
                )
                seg = onset
                gp = gn = 0.0
                t = max(t + 1, seg + self.min_window)
                zp = zn = t - 1
                continue
            t += 1
        return out
