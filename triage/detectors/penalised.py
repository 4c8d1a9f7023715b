"""Penalised segmentation with ruptures: PELT and binary segmentation.

PELT (Killick et al. 2012) finds the exact minimum of total segment cost plus
a penalty per change point; binary segmentation is the greedy top-down
approximation. Both come from ``ruptures`` (Truong, Oudre & Vayatis); this
module only picks a scale-free default penalty and scores the result.

Default penalty: ``penalty * sigma^2 * log(n)`` for the L2 (mean-shift) cost,
with ``sigma`` the noise level estimated from first differences
(:func:`~triage.core.noise.robust_sigma`), i.e. a BIC-style penalty
inflated by ``penalty / 2`` to keep flat noisy series free of false alarms.

Speed: ruptures' PELT is pure Python and takes about a second on 500 points
when every commit is a candidate (``jump=1``). The default here is ruptures'
own ``jump=5`` (candidates every 5 commits, ~20x faster) followed by an exact
local refinement (our addition): each breakpoint moves to the best L2 split
within ``jump - 1`` commits of it, between its neighbouring breakpoints, and
two breakpoints the grid put on either side of one step become one at the
step where that lowers the penalised cost (:func:`merge_straddling_l2`).
So the result is near, not at, the search's optimum: on the 372 real
histories ruptures with ``jump=1`` and the same penalty finds about a quarter
more change points (``binseg``: 8,606 against 6,905; ``pelt``, on every sixth
series: 1,500 against 1,170). ``jump=1`` searches every commit, at its cost.

Every segment holds at least ``min_size`` commits (ruptures' constraint, in
the exact search too): a step fewer than ``min_size`` commits from either
end of the series is reported ``min_size`` commits in (a step at
commit 1 of 40 at 5, one at commit 39 at 35), and a one-commit spike becomes
two change points ``min_size`` apart around it.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from triage.core.noise import robust_sigma
from triage.detectors.base import COUNT, NONNEG, ChangePoint, Detector, Range
from triage.detectors.costs import CostL2


def refine_l2(x: np.ndarray, ends: list[int], radius: int, min_size: int) -> list[int]:
    """Move each breakpoint to the least-squares split within ``radius`` of it.

    Breakpoints are refined left to right, each between its (already refined)
    left neighbour and its right neighbour, keeping ``min_size`` commits per
    segment; the cost of a segment is :class:`~triage.detectors.costs.CostL2`.
    """
    cost = CostL2().fit(x)
    out = list(ends)
    n = len(x)
    for k, b in enumerate(out):
        lo_seg = out[k - 1] if k > 0 else 0
        hi_seg = out[k + 1] if k + 1 < len(out) else n
        cand = np.arange(max(lo_seg + min_size, b - radius), min(hi_seg - min_size, b + radius) + 1)
        if len(cand) == 0:
            continue
        out[k] = cost.best_split(lo_seg, hi_seg, cand)
    return out


def merge_straddling_l2(x: np.ndarray, ends: list[int], radius: int, min_size: int, pen: float) -> list[int]:
    """Replace two neighbouring breakpoints by one where that lowers the penalised L2 cost.

    On the ``jump`` grid a step between two grid points (a step at 28, grid 25
    and 30) gets a breakpoint on each side, and :func:`refine_l2` cannot move
    either onto it: each is held ``min_size`` away from the other. Any two
    breakpoints at most ``2 * radius + 1`` apart are tried as one, at the best
    split between their neighbours; kept when the cost plus ``pen`` per
    breakpoint (the search's own objective) is no higher than with both.
    """
    cost = CostL2().fit(x)
    out = list(ends)
    n = len(x)
    k = 0
    while k + 1 < len(out):
        a, b = out[k], out[k + 1]
        lo = out[k - 1] if k > 0 else 0
        hi = out[k + 2] if k + 2 < len(out) else n
        cand = np.arange(max(lo + min_size, a - radius), min(hi - min_size, b + radius) + 1)
        if b - a > 2 * radius + 1 or len(cand) == 0:
            k += 1
            continue
        s = cost.best_split(lo, hi, cand)
        one = float(cost.error(lo, s) + cost.error(s, hi)) + pen
        two = float(cost.error(lo, a) + cost.error(a, b) + cost.error(b, hi)) + 2 * pen
        if one <= two:
            out[k: k + 2] = [s]  # the merged one may pair with the next: look again from here
        else:
            k += 1
    return out


#: ruptures' costs that apply to one series of numbers. Left out: ``linear``
#: (a regression on covariates a series does not have: ruptures fails with
#: "Not enough dimensions") and ``cosine`` (the angle between vectors, which
#: for single numbers is only their sign).
MODELS: tuple[str, ...] = ("l2", "l1", "normal", "rbf", "rank", "mahalanobis", "ar", "clinear")


class PenalisedSearch(Detector):
    """Penalised segmentation with one of ruptures' search methods (:attr:`search`).

    Parameters
    ----------
    penalty : penalty factor, see module docstring (3)
    model : ruptures cost name, one of :data:`MODELS` ("l2": shifts in mean)
    min_size : minimum segment length in commits (5)
    jump : candidate grid step (5, ruptures' default), refined to the commit

    ``score`` is the shift between the adjacent segment means in noise
    standard deviations; fields ``mean_before``, ``mean_after``, ``penalty``.
    Subclasses only name the search (:class:`Pelt`, :class:`BinSeg`).
    """

    #: The name of the ruptures search class (``"Pelt"``, ``"Binseg"``), set by subclasses;
    #: ruptures itself (about 1 s to import, with scipy.signal) is imported when a search runs.
    search: ClassVar[str]
    ranges: ClassVar[dict[str, Range]] = {"penalty": NONNEG, "min_size": COUNT, "jump": COUNT}
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"model": MODELS}

    def __init__(self, penalty: float = 3.0, model: str = "l2", min_size: int = 5, jump: int = 5):
        self.penalty = penalty
        self.model = model
        self.min_size = min_size
        self.jump = jump

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        if self.model not in MODELS:  # ruptures' own words name neither the parameter nor the choices
            raise ValueError(f"model={self.model!r} must be one of {', '.join(MODELS)}")
        n = len(x)
        if n < 2 * self.min_size or np.ptp(x) == 0:
            # a series of one value has no change point; ruptures' mahalanobis cost
            # failed on it ("Singular matrix")
            return []
        sigma = robust_sigma(x)
        pen = self.penalty * sigma**2 * math.log(n)
        signal = x
        if self.model != "l2":
            # Other costs are not in squared value units, and some (l1, ar, clinear) are in
            # none that a penalty could follow: on a step of 4 noise units PELT with l1 found
            # one change at a scale of 1, 14 at 100 and 23 at 1e6 (none at 1e-2). They see the
            # series in noise units, where the penalty is penalty * log n.
            pen = self.penalty * math.log(n)
            signal = (x - float(np.median(x))) / sigma
        import ruptures

        algorithm = getattr(ruptures, self.search)
        bkps = algorithm(model=self.model, min_size=self.min_size, jump=self.jump).fit(signal).predict(pen=pen)
        ends = [b for b in bkps if b < n]  # ruptures appends n
        if self.jump > 1 and self.model == "l2":
            ends = refine_l2(x, ends, self.jump - 1, self.min_size)
            ends = merge_straddling_l2(x, ends, self.jump - 1, self.min_size, pen)
        bounds = [0, *ends, n]
        out = []
        for k, idx in enumerate(ends, start=1):
            before = float(np.mean(x[bounds[k - 1] : idx]))
            after = float(np.mean(x[idx : bounds[k + 1]]))
            out.append(
                ChangePoint(
                    int(idx),
                    float(abs(after - before) / sigma),
                    {"mean_before": before, "mean_after": after, "penalty": pen},
                )
            )
        return out


class Pelt(PenalisedSearch):
    """PELT (Killick et al. 2012) via ``ruptures.Pelt``; parameters and score as :class:`PenalisedSearch`."""

    name = "pelt"
    search = "Pelt"


class BinSeg(PenalisedSearch):
    """Binary segmentation via ``ruptures.Binseg``; parameters and score as :class:`PenalisedSearch`."""

    name = "binseg"
    search = "Binseg"
