"""Segment costs, each written once (``ruptures`` style: fit a cost on a signal, then ask it about segments).

A cost measures how badly one segment ``x[start:end]`` (half-open) is
described by a single model; a change point splits a segment where the two
parts together cost least. Detectors that need a cost take it from here
rather than writing the formula again.
"""

from __future__ import annotations

import numpy as np


class CostL2:
    """The L2 (mean-shift) cost: sum of squared deviations from the segment mean.

    After :meth:`fit` (O(n) prefix sums) the cost of any segment is O(1):
    ``sum(x^2) - sum(x)^2 / length``. Same cost as ruptures' ``"l2"``.

    The prefix sums are of ``x - offset`` (the cost does not change when a
    constant is added): ``sum(x^2) - sum(x)^2 / length`` of raw values cancels
    catastrophically when the level is large against the noise (1e9 ns with a
    noise of 1 ns put PELT's change 4 commits off and hid CUSUM's).

    Attributes (after :meth:`fit`)
    ------------------------------
    offset : the mean of ``x``, subtracted before the sums (0 for an empty signal)
    cumsum : prefix sums of ``x - offset``, shape (n + 1,), ``cumsum[0] = 0``
    cumsum_sq : prefix sums of ``(x - offset)**2``, shape (n + 1,)
    """

    model = "l2"

    def fit(self, signal: np.ndarray) -> CostL2:
        x = np.asarray(signal, dtype=np.float64)
        self.offset = float(np.mean(x)) if len(x) else 0.0
        x = x - self.offset
        self.cumsum = np.concatenate([[0.0], np.cumsum(x)])
        self.cumsum_sq = np.concatenate([[0.0], np.cumsum(x * x)])
        return self

    def error(self, start: np.ndarray | int, end: np.ndarray | int) -> np.ndarray:
        """Cost of ``x[start:end]``; ``start`` / ``end`` may be arrays (broadcast), with ``end > start``."""
        length = np.asarray(end) - np.asarray(start)
        s = self.cumsum[end] - self.cumsum[start]
        return self.cumsum_sq[end] - self.cumsum_sq[start] - s * s / length

    def best_split(self, start: int, end: int, candidates: np.ndarray) -> int:
        """The split ``j`` among ``candidates`` (each in ``(start, end)``) minimising the cost of both sides."""
        cost = self.error(start, candidates) + self.error(candidates, end)
        return int(candidates[int(np.argmin(cost))])
