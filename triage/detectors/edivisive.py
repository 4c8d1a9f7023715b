"""E-Divisive means in the form of Hunter / Apache Otava.

E-Divisive (Matteson & James 2014) splits a series top-down at the point that
maximises the energy-distance divergence ``Q-hat`` between the left part and a
right part of any length; MongoDB used it for performance CI (Daly et al.
2020). Hunter (Fleming et al. 2023, now Apache Otava) made it deterministic
and usable on long histories:

1. **Split.** Run E-Divisive on sliding windows of ``window`` points (the
   next window starts at ``max(last change point found, start + window/2)``),
   testing each candidate with a two-sided Student's t-test between its two
   sides inside the current interval instead of a permutation test, at a
   relaxed first-pass level (10 x ``max_pvalue`` below 0.05, 2 x below 0.5).
   Within a window, splitting stops at the first candidate that fails.
   The union of all windows' change points are the *weak* change points.
2. **Merge.** Recompute every weak change point's t-test between its
   neighbours, then repeatedly drop the weakest: the largest p-value while
   any p >= ``max_pvalue``, otherwise the smallest relative magnitude while
   it is <= ``min_magnitude``; after each removal recompute the neighbours.

Written from Otava's published algorithm (``otava/analysis.py``,
``otava/change_point_divisive/``). It reproduces all nine TigerBeetle
expectations of Otava's test suite (``tests/tigerbeetle_test.py``), and on
the 372 real histories of ``shared/data/real`` the same change points as
Otava 0.8.0's ``compute_change_points``, both at these defaults and at
Otava's own (2026-11-24). Notes:

* weak change points are de-duplicated by index, as Otava 0.8's ``split``
  does (versions that compared whole change-point objects could keep one
  index found by two windows with different ``Q-hat`` twice; merging removes
  the twin first, so the result is the same);
* after a removal Otava recomputes the point *after* the removed one and the
  one after that, which leaves the point *before* it with stale statistics.
  ``merge_recompute="otava"`` (default) does the same, to match Otava;
  ``"neighbours"`` recomputes both true neighbours instead (on TigerBeetle it
  still gives 15 and 71 at p = 0.01, but differs from Otava at looser levels).

The incremental mode (:meth:`EDivisive.update`) is exact: windows whose end
lay inside the old series are unaffected by appended points, so only the
windows from the first one the old end truncated (at most two of the old
windows, plus those the new points need) are re-run, then
the merge is redone. :meth:`update` after :meth:`fit` gives the same result as
:meth:`fit` on the whole series (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from triage.detectors.base import NONNEG, PROBABILITY, ChangePoint, Detector, Range, as_series


def qhat_candidate(z: np.ndarray) -> tuple[int, float]:
    """Best split of ``z`` (shape (L,), L >= 2) by E-Divisive's ``Q-hat``, with alpha = 1.

    For every ``tau`` in 1..L-1 and ``kappa`` in tau+1..L, with
    ``X = z[:tau]`` (n values) and ``Y = z[tau:kappa]`` (m values)::

        Q = 2/(n+m) * sum|X-Y| - 2m/((n+m)(n-1)) * sum_{i<k}|X_i-X_k|
                               - 2n/((n+m)(m-1)) * sum_{j<k}|Y_j-Y_k|

    (within-sample terms are 0 for a single value). Returns ``(tau, Q)`` of
    the maximum, ties to the smallest ``tau`` then ``kappa``. O(L^2) memory
    and time through a 2-d prefix sum of the distance matrix.
    """
    L = len(z)
    d = np.abs(z[:, None] - z[None, :])
    # P[a, b] = sum of d[:a, :b]
    P = np.zeros((L + 1, L + 1))
    P[1:, 1:] = d.cumsum(0).cumsum(1)
    tau = np.arange(1, L)[:, None]
    kappa = np.arange(2, L + 1)[None, :]
    valid = kappa > tau
    tt = np.broadcast_to(tau, valid.shape)
    kk = np.broadcast_to(kappa, valid.shape)
    diag = np.diagonal(P)
    p_tt = diag[tt]
    p_kk = diag[kk]
    p_tk = P[tt, kk]
    cross = p_tk - p_tt
    within_x = p_tt / 2.0
    within_y = (p_kk - 2.0 * p_tk + p_tt) / 2.0
    n = tt.astype(float)
    m = (kk - tt).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = 2.0 / (n + m) * cross
        q = q - np.where(n > 1, 2.0 * m / ((n + m) * (n - 1)) * within_x, 0.0)
        q = q - np.where(m > 1, 2.0 * n / ((n + m) * (m - 1)) * within_y, 0.0)
    q = np.where(valid, q, -np.inf)
    flat = int(np.argmax(q))
    i, j = divmod(flat, q.shape[1])
    return int(i + 1), float(q[i, j])


@dataclass(frozen=True)
class TTestStats:
    """Student's t-test between the two sides of a change point (Otava's ``TTestStats``)."""

    pvalue: float
    mean_before: float
    mean_after: float
    std_before: float
    std_after: float
    t: float

    def magnitude(self) -> float:
        """Otava's relative magnitude: max(|after/before - 1|, |before/after - 1|)."""
        fwd = self.mean_after / self.mean_before - 1.0 if self.mean_before != 0 else 0.0
        bwd = self.mean_before / self.mean_after - 1.0 if self.mean_after != 0 else 0.0
        return max(abs(fwd), abs(bwd))


def ttest_sides(left: np.ndarray, right: np.ndarray) -> TTestStats:
    """Two-sided Student's t-test (pooled variance) from the sides' means and
    population standard deviations, as Otava computes it; p = 1 with fewer than 3 points."""
    if len(left) == 0 or len(right) == 0:
        raise ValueError("empty side")
    m1, m2 = float(np.mean(left)), float(np.mean(right))
    s1 = float(np.std(left)) if len(left) > 1 else 0.0
    s2 = float(np.std(right)) if len(right) > 1 else 0.0
    t, p = 0.0, 1.0
    if len(left) + len(right) > 2:
        # Imported here: scipy.stats takes about 1 s to import, which every command paid.
        from scipy import stats

        with np.errstate(divide="ignore", invalid="ignore"):
            res = stats.ttest_ind_from_stats(m1, s1, len(left), m2, s2, len(right))
        t, p = float(res.statistic), float(res.pvalue)
        if math.isnan(p):  # both sides constant and equal
            t, p = 0.0, 1.0
    return TTestStats(p, m1, m2, s1, s2, t)


def divisive_window(z: np.ndarray, max_pvalue: float) -> list[int]:
    """E-Divisive on one window with the t-test stopping rule; change indices (ascending)."""
    cps: list[int] = []
    while True:
        bounds = [0, *cps, len(z)]
        best: tuple[float, int, int, int] | None = None  # (qhat, index, lo, hi)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            if hi - lo < 2:
                continue
            tau, q = qhat_candidate(z[lo:hi])
            if best is None or q > best[0]:
                best = (q, lo + tau, lo, hi)
        if best is None:
            return cps
        _, idx, lo, hi = best
        if ttest_sides(z[lo:idx], z[idx:hi]).pvalue > max_pvalue:
            return cps
        cps.append(idx)
        cps.sort()


def first_pass_pvalue(max_pvalue: float) -> float:
    """Otava's relaxed level for weak change points."""
    if max_pvalue < 0.05:
        return max_pvalue * 10
    if max_pvalue < 0.5:
        return max_pvalue * 2
    return max_pvalue


#: How the merge step recomputes after deleting a weak point (module docstring).
MERGE_RECOMPUTE: tuple[str, ...] = ("otava", "neighbours")


class EDivisive(Detector):
    """E-Divisive means with Hunter/Otava's t-test, sliding windows and merge.

    Parameters
    ----------
    window : sliding window length in points (30, the default of Otava's
        ``split``; ``otava analyze --window`` and ``compute_change_points``
        default to 50)
    max_pvalue : final significance level (0.01; Otava's ``-P`` defaults to 0.001)
    min_magnitude : minimum relative change ``max(|b/a-1|, |a/b-1|)`` of the
        side means, a fraction (0.05 = 5 %; Otava's ``--magnitude`` defaults to 0)
    merge_recompute : ``"otava"`` (default) or ``"neighbours"``, see the module docstring

    So ``otava analyze`` with its defaults is ``window=50 max_pvalue=0.001
    min_magnitude=0``.

    ``score`` is ``-log10(p)`` (an underflowed p scores ~307.7); fields
    ``p_value``, ``t`` (Student's t of ``before`` against ``after``, so
    *negative when the level rises*), ``mean_before``, ``mean_after``,
    ``std_before``, ``std_after`` (population standard deviations, Otava's),
    ``magnitude`` (the relative change above, a fraction, not a percentage).
    The sides of each change point run from the previous change point to the
    next one. After :meth:`fit`, ``weak_change_points_`` holds the weak indices.
    """

    name = "edivisive"
    ranges: ClassVar[dict[str, Range]] = {
        "window": ("int", 2, None, True, False), "max_pvalue": PROBABILITY, "min_magnitude": NONNEG,
    }
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"merge_recompute": MERGE_RECOMPUTE}

    def __init__(
        self,
        window: int = 30,
        max_pvalue: float = 0.01,
        min_magnitude: float = 0.05,
        merge_recompute: str = "otava",
    ):
        self.window = window
        self.max_pvalue = max_pvalue
        self.min_magnitude = min_magnitude
        self.merge_recompute = merge_recompute

    # -- split ---------------------------------------------------------------

    def _split_from(self, x: np.ndarray, start: int, windows: list[tuple[int, list[int]]]) -> None:
        """Run the sliding windows from ``start``, appending ``(start, indices)`` per window."""
        if self.window < 2:
            raise ValueError("window must be at least 2")
        step = self.window // 2
        p1 = first_pass_pvalue(self.max_pvalue)
        n = len(x)
        while start < n:
            end = min(start + self.window, n)
            found = [start + i for i in divisive_window(x[start:end], p1)]
            windows.append((start, found))
            start = max(found[-1] if found else 0, start + step)

    @staticmethod
    def _weak(windows: list[tuple[int, list[int]]]) -> list[int]:
        seen: set[int] = set()
        for _, found in windows:
            seen.update(found)
        return sorted(seen)

    # -- merge ---------------------------------------------------------------

    @staticmethod
    def _side_stats(x: np.ndarray, cps: list[int], k: int) -> TTestStats:
        lo = cps[k - 1] if k > 0 else 0
        hi = cps[k + 1] if k + 1 < len(cps) else len(x)
        return ttest_sides(x[lo : cps[k]], x[cps[k] : hi])

    def _merge(self, x: np.ndarray, weak: list[int]) -> list[tuple[int, TTestStats]]:
        if self.merge_recompute not in MERGE_RECOMPUTE:
            raise ValueError(f"merge_recompute must be one of {', '.join(MERGE_RECOMPUTE)}")
        # After deleting position k, the old k+1 sits at k. Its true neighbours
        # are k-1 and k; Otava refreshes k and k+1.
        refresh = (0, 1) if self.merge_recompute == "otava" else (-1, 0)
        cps = list(weak)
        st = [self._side_stats(x, cps, k) for k in range(len(cps))]
        while cps:
            k = max(range(len(cps)), key=lambda j: st[j].pvalue)  # first of equal maxima
            if st[k].pvalue < self.max_pvalue:
                k = min(range(len(cps)), key=lambda j: st[j].magnitude())
                if st[k].magnitude() > self.min_magnitude:
                    break
            del cps[k], st[k]
            for j in (k + refresh[0], k + refresh[1]):
                if 0 <= j < len(cps):
                    st[j] = self._side_stats(x, cps, j)
        return list(zip(cps, st, strict=True))

    # -- API -----------------------------------------------------------------

    def _result(self, x: np.ndarray) -> list[ChangePoint]:
        self.weak_change_points_ = self._weak(self._windows)
        out = []
        for idx, s in self._merge(x, self.weak_change_points_):
            score = -math.log10(s.pvalue) if s.pvalue > np.finfo(float).tiny else -math.log10(np.finfo(float).tiny)
            out.append(
                ChangePoint(
                    idx,
                    score,
                    {
                        "p_value": s.pvalue,
                        "t": s.t,
                        "mean_before": s.mean_before,
                        "mean_after": s.mean_after,
                        "std_before": s.std_before,
                        "std_after": s.std_after,
                        "magnitude": s.magnitude(),
                    },
                )
            )
        return out

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        self._windows: list[tuple[int, list[int]]] = []
        self._split_from(x, 0, self._windows)
        self._x = x
        return self._result(x)

    def update(self, new_values) -> EDivisive:
        """Append ``new_values`` (shape (k,)) to the fitted series and update
        ``change_points_`` without re-running the unaffected windows."""
        if not hasattr(self, "_x"):
            raise RuntimeError("call fit() before update()")
        add = as_series(np.atleast_1d(new_values))
        if len(add) == 0:
            return self
        old_n = len(self._x)
        x = np.concatenate([self._x, add])
        # A window [s, s + window) that ended inside the old series saw exactly
        # the same values then as now; the first one that was truncated by the
        # old end must be re-run, and every window after it.
        keep = 0
        while keep < len(self._windows) and self._windows[keep][0] + self.window <= old_n:
            keep += 1
        if keep < len(self._windows):
            restart = self._windows[keep][0]
        elif self._windows:
            s, found = self._windows[-1]
            restart = max(found[-1] if found else 0, s + self.window // 2)
        else:
            restart = 0
        self._windows = self._windows[:keep]
        self._split_from(x, restart, self._windows)
        self._x = x
        self.n_ = len(x)
        self.change_points_ = self._result(x)
        return self
