"""CP-SSD: change-point based steady-state detection (Traini et al.), the KB-KSSD baseline.

Traini et al. ("Towards effective assessment of steady state performance in
Java software: are we there yet?") segment each fork's iterations with PELT
and call the part after the last change point the steady state, provided it is
long enough. This module implements that idea from the description; the
choices are this project's:

* PELT (Killick et al.) with the L2 (shift in mean) cost, written here with
  numpy (exact, with PELT's pruning; ruptures' pure-Python PELT takes about a
  second per 500 iterations, too slow for thousands of forks);
* penalty ``penalty * sigma^2 * log(n)`` (``penalty`` = 2, BIC's value),
  ``sigma`` the noise level from first differences; ``min_size`` = 10
  iterations per segment;
* segments before the last one whose mean lies within ``tolerance`` noise
  standard deviations of the last segment's mean are merged into the steady
  state (a change point between two nearly equal levels is not a warm-up);
* never steady when the steady part is shorter than ``min_steady`` of the run.

No outlier filtering: that is one of the things KB-KSSD adds.
"""

from __future__ import annotations

import numpy as np

from triage.steady_state.base import as_run, noise_level


def pelt_l2(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    """Change points (segment starts, excluding 0) minimising L2 cost + ``penalty`` each."""
    n = len(x)
    if n < 2 * min_size:
        return []
    c1 = np.r_[0.0, np.cumsum(x)]
    c2 = np.r_[0.0, np.cumsum(x * x)]
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=int)
    cands = np.array([0])
    for t in range(min_size, n + 1):
        s = cands[t - cands >= min_size]
        if len(s) == 0:
            continue
        length = t - s
        seg = c2[t] - c2[s] - (c1[t] - c1[s]) ** 2 / length
        total = best[s] + seg + penalty
        k = int(np.argmin(total))
        best[t] = total[k]
        last[t] = s[k]
        # PELT pruning: a start that cannot beat the optimum now never will.
        keep = best[s] + seg <= best[t]
        cands = np.r_[cands[t - cands < min_size], s[keep], t - min_size + 1]
        cands = np.unique(cands[cands <= t])
    out = []
    t = n
    while t > 0:
        t = int(last[t])
        if t > 0:
            out.append(t)
    return sorted(out)


class CPSSD:
    """Change-point based steady-state detection on one run (see module docstring).

    Parameters
    ----------
    penalty : PELT penalty factor on ``sigma^2 log n`` (2.0)
    min_size : minimum segment length in iterations (10)
    tolerance : merge earlier segments within this many sigma of the last one (1.0)
    min_steady : shortest steady part, as a share of the run (0.1)

    Attributes
    ----------
    start_ : first steady iteration, or ``None`` (never steady)
    change_points_ : the segment starts PELT found
    """

    def __init__(
        self,
        penalty: float = 2.0,
        min_size: int = 10,
        tolerance: float = 1.0,
        min_steady: float = 0.1,
    ):
        self.penalty = penalty
        self.min_size = min_size
        self.tolerance = tolerance
        self.min_steady = min_steady

    def fit(self, x: object) -> CPSSD:
        run = as_run(x)
        n = len(run)
        sigma = noise_level(run)
        pen = self.penalty * sigma**2 * np.log(max(n, 2))
        self.change_points_ = pelt_l2(run, pen, self.min_size)
        bounds = [0, *self.change_points_, n]
        last_mean = float(np.mean(run[bounds[-2] :])) if n else 0.0
        k = len(bounds) - 2  # index of the last segment's start in bounds
        while k > 0:
            seg = run[bounds[k - 1] : bounds[k]]
            if abs(float(np.mean(seg)) - last_mean) > self.tolerance * sigma:
                break
            k -= 1
        start = bounds[k]
        min_len = max(self.min_size, int(np.ceil(self.min_steady * n)))
        self.start_ = start if n - start >= min_len else None
        return self
