"""Moving-window two-sample detectors: Mozilla Perfherder's t-test and the hybrid tests.

Both follow the scan of Perfherder's ``detect_changes`` (mozilla/treeherder,
``treeherder/perfalert/perfalert/__init__.py`` and, since the Mozilla
change-point study of Besbes et al., ``treeherder/perf/methods/BaseDetector.py``),
re-implemented here from its description:

* For each revision ``i >= 1`` the *back* window is the values just before
  ``i`` and the *fore* window is ``i`` and the values after it (12 by default).
  The back window holds ``min_back_window`` (12) values normally, and grows by
  one revision per revision since the last hit, up to ``max_back_window`` (24):
  a long quiet stretch gets a longer, steadier baseline.
* A revision is a candidate when both windows are full, its statistic passes
  the threshold, and neither neighbour (``i - 1``, ``i + 1``) is strictly
  stronger -- so among adjacent candidates the strongest one is kept.
* Perfherder then drops alerts whose relative change of the (uniform) window
  means is below the alert threshold (2 %).

One value per commit here (our loaders aggregate replicates first), so window
sizes are counts of commits. Perfherder counts windows in values and weighs
every replicate: on the 95 real histories with re-measured commits, 2 of the
244 alerts here are not its alerts, and it has 5 others.

This is ``detect_changes`` run once over the whole history, as the Mozilla
study ran it; on the 372 real histories of ``shared/data/real`` it gives
the same alerts, t-values and percentages as a literal transcription of
``detect_changes`` and the alert filter given the same values. Two more
differences from what a Perfherder server would have raised:

* A server re-runs the scan at every new result, on the results *after* the
  series' latest alert (``generate_new_alerts_in_series``), and an alert,
  once raised, stays. So a second change within ``min_back_window`` commits
  of an alert is not raised there (a step at 30 and another at 36: both here,
  only 30 there), and a revision is judged as soon as its fore window fills,
  against a neighbour whose fore window is one short. Replayed commit by
  commit on the real histories, that loop raises 662 alerts where this scan
  finds 690 (35 of these not raised, 7 others raised instead).
* The magnitude here is ``100 * |after - before| / |before|``; Perfherder
  divides by the signed ``before``, so on a series whose back-window mean is
  negative its percentage is negative and it never alerts.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from triage.detectors.base import COUNT, NONNEG, PROBABILITY, ChangePoint, Detector, Range

#: Perfherder stores an infinite t (both windows constant) as 1000.
T_CAP = 1000.0
#: -log10 of the smallest normal double: the score of an underflowed p-value.
P_SCORE_CAP = -math.log10(np.finfo(float).tiny)


def _windows(n: int, i: int, back_len: int, fore_window: int) -> tuple[slice, slice]:
    return slice(i - back_len, i), slice(i, min(n, i + fore_window))


def _relative_change_pct(before: float, after: float) -> float:
    """Perfherder's alert magnitude, 100*|after - before| / |before| (0 when before is 0)."""
    if before == 0:
        return 0.0
    return 100.0 * abs(after - before) / abs(before)


def perfherder_t(back: np.ndarray, fore: np.ndarray) -> float:
    """Perfherder's t-value between a back and a fore window (absolute value).

    ``back`` is ordered nearest-first (``x[i-1], x[i-2], ...``) and ``fore``
    from ``x[i]`` on. The means are *linearly weighted* (weight ``(n-k)/n`` for
    the ``k``-th nearest value, Perfherder's bug 879903: changes next to the
    revision count more than the far edge of a window); the variances are the
    plain sum of squares around that weighted mean over ``n - 1``. Returns
    ``inf`` when the means differ and both windows are constant, 0 when the
    means are equal or a window is empty.
    """
    n1, n2 = len(back), len(fore)
    if n1 == 0 or n2 == 0:
        return 0.0
    w1 = (n1 - np.arange(n1)) / n1
    w2 = (n2 - np.arange(n2)) / n2
    m1 = float(back @ w1 / w1.sum())
    m2 = float(fore @ w2 / w2.sum())
    delta = m2 - m1
    if delta == 0:
        return 0.0
    v1 = float(np.sum((back - m1) ** 2) / (n1 - 1)) if n1 > 1 else 0.0
    v2 = float(np.sum((fore - m2) ** 2) / (n2 - 1)) if n2 > 1 else 0.0
    if v1 == 0 and v2 == 0:
        return math.inf
    return abs(delta) / math.sqrt(v1 / n1 + v2 / n2)


class _MovingWindowScan(Detector):
    """The Perfherder scan; subclasses supply the two-sample statistic.

    ``_statistic(back, fore) -> (value, hit)``: ``hit`` says whether the value
    passes the threshold (it also resets the back-window growth).
    ``_stronger(a, b)``: whether statistic ``a`` is strictly stronger than ``b``.
    """

    min_back_window: int
    max_back_window: int
    fore_window: int
    magnitude: float

    def _statistic(self, back: np.ndarray, fore: np.ndarray) -> tuple[float, bool]:
        raise NotImplementedError

    def _stronger(self, a: float, b: float) -> bool:
        raise NotImplementedError

    def _no_evidence(self) -> float:
        raise NotImplementedError

    def _check(self) -> None:
        if not (1 <= self.min_back_window <= self.max_back_window):
            raise ValueError("need 1 <= min_back_window <= max_back_window")
        if self.fore_window < 1:
            raise ValueError("fore_window must be >= 1")

    def scan(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Statistic, back-window length and fore-window length per revision, each shape (n,).

        Revision 0 has no back window: its statistic is the no-evidence value.
        """
        self._check()
        n = len(x)
        stat = np.full(n, self._no_evidence(), dtype=np.float64)
        back_len = np.zeros(n, dtype=np.int64)
        fore_len = np.zeros(n, dtype=np.int64)
        since_hit = 0
        for i in range(1, n):
            b = min(i, min(max(since_hit, self.min_back_window), self.max_back_window))
            bs, fs = _windows(n, i, b, self.fore_window)
            back = x[bs][::-1]  # nearest first, as the weights expect
            fore = x[fs]
            stat[i], hit = self._statistic(back, fore)
            back_len[i], fore_len[i] = b, fs.stop - fs.start
            since_hit = 0 if hit else since_hit + 1
        return stat, back_len, fore_len

    def _passes(self, value: float) -> bool:
        raise NotImplementedError

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        n = len(x)
        stat, back_len, fore_len = self.scan(x)
        found: list[int] = []
        for i in range(1, n):
            if back_len[i] < self.min_back_window or fore_len[i] < self.fore_window:
                continue  # not enough data yet: Perfherder waits for more
            if not self._passes(stat[i]):
                continue
            if self._stronger(stat[i - 1], stat[i]):
                continue
            if i + 1 < n and self._stronger(stat[i + 1], stat[i]):
                continue
            found.append(i)
        found = self._break_ties(found, stat)
        out = []
        for i in found:
            bs, fs = _windows(n, i, int(back_len[i]), self.fore_window)
            before, after = float(np.mean(x[bs])), float(np.mean(x[fs]))
            pct = _relative_change_pct(before, after)
            if pct < self.magnitude:
                continue
            out.append(self._change_point(i, stat[i], before, after, pct))
        return out

    def _break_ties(self, found: list[int], stat: np.ndarray) -> list[int]:
        return found

    def _change_point(self, i: int, value: float, before: float, after: float, pct: float) -> ChangePoint:
        raise NotImplementedError


class Perfherder(_MovingWindowScan):
    """Mozilla Perfherder's alert detector (Student-style t on moving windows).

    Parameters
    ----------
    min_back_window, max_back_window : back window, in commits (12, up to 24)
    fore_window : fore window, in commits (12)
    t_threshold : a candidate needs ``t > t_threshold`` (7)
    magnitude : minimum relative change of the window means, in percent (2)

    ``score`` is the t-value (infinite t stored as 1000, as Perfherder does);
    fields ``t`` (the absolute t, as Perfherder keeps it, and not capped:
    ``inf`` when both windows are constant, ``null`` in JSON lines),
    ``mean_before``, ``mean_after``
    (the plain means of the back and fore windows: Perfherder's
    ``prev_value`` / ``new_value``, whose order gives the direction),
    ``rel_change_pct`` (Perfherder's ``amount_pct``, see the module docstring).
    """

    name = "perfherder"
    ranges: ClassVar[dict[str, Range]] = {
        "min_back_window": COUNT, "max_back_window": COUNT, "fore_window": COUNT, "t_threshold": NONNEG, "magnitude": NONNEG,
    }

    def __init__(
        self,
        min_back_window: int = 12,
        max_back_window: int = 24,
        fore_window: int = 12,
        t_threshold: float = 7.0,
        magnitude: float = 2.0,
    ):
        self.min_back_window = min_back_window
        self.max_back_window = max_back_window
        self.fore_window = fore_window
        self.t_threshold = t_threshold
        self.magnitude = magnitude

    def _no_evidence(self) -> float:
        return 0.0

    def _statistic(self, back: np.ndarray, fore: np.ndarray) -> tuple[float, bool]:
        t = perfherder_t(back, fore)
        return t, t > self.t_threshold

    def _passes(self, value: float) -> bool:
        return value > self.t_threshold

    def _stronger(self, a: float, b: float) -> bool:
        return a > b

    def _change_point(self, i, value, before, after, pct) -> ChangePoint:
        return ChangePoint(
            i,
            min(float(value), T_CAP),
            {"t": float(value), "mean_before": before, "mean_after": after, "rel_change_pct": pct},
        )


def _pvalue(fn: Callable[[np.ndarray, np.ndarray], float]) -> Callable[[np.ndarray, np.ndarray], float]:
    def safe(a: np.ndarray, b: np.ndarray) -> float:
        if len(a) < 2 or len(b) < 2:
            return 1.0
        try:
            # Constant windows make scipy warn (precision loss, 0/0); the
            # resulting NaN is read as "no evidence" just below.
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                p = float(fn(a, b))
        except (ValueError, FloatingPointError, ZeroDivisionError):
            return 1.0
        return 1.0 if math.isnan(p) else p

    return safe


def welch_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Welch t-test p-value, the formula of ``scipy.stats.ttest_ind(equal_var=False)``
    without its per-call overhead (about 20x faster on windows of 12-24 values)."""
    n1, n2 = len(a), len(b)
    v1, v2 = float(np.var(a, ddof=1)) / n1, float(np.var(b, ddof=1)) / n2
    se2 = v1 + v2
    diff = float(np.mean(a)) - float(np.mean(b))
    if se2 == 0:
        return math.nan if diff == 0 else 0.0
    denominator = v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1)
    df = se2 * se2 / denominator if denominator > 0 else math.inf
    if not math.isfinite(df):
        # Squares of variances overflow (values near 1e100) or underflow (near 1e-100):
        # the same degrees of freedom from the variances' shares, which are scale-free.
        r1, r2 = v1 / se2, v2 / se2
        df = 1.0 / (r1 * r1 / (n1 - 1) + r2 * r2 / (n2 - 1))
    from scipy import special

    return float(2.0 * special.stdtr(df, -abs(diff) / math.sqrt(se2)))


def cvm_u4(a: np.ndarray, b: np.ndarray) -> int:
    """Four times Anderson's (1962) rank sum ``U`` of the two-sample Cramer-von Mises test, exactly.

    ``U = n * sum_i (r(a_(i)) - i)^2 + m * sum_j (r(b_(j)) - j)^2`` with
    ``n = len(a)``, ``m = len(b)``, ``a_(i)`` the ``i``-th smallest of ``a``
    and ``r`` the rank in the pooled sample, ties given their average
    (mid-)rank as in scipy's ``cramervonmises_2samp``. Mid-ranks are
    multiples of 1/2, so ``4 U`` is an integer: computed on doubled integer
    ranks it is exact, a key no rounding can split or merge.
    """
    n, m = len(a), len(b)
    z = np.concatenate((a, b))
    order = np.argsort(z, kind="stable")
    zs = z[order]
    starts_flag = np.empty(n + m, dtype=bool)
    starts_flag[0] = True
    np.not_equal(zs[1:], zs[:-1], out=starts_flag[1:])
    group = np.cumsum(starts_flag) - 1
    starts = np.flatnonzero(starts_flag)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:] - 1
    ends[-1] = n + m - 1
    # Twice the 1-based average rank of a tie group spanning sorted places s..e.
    rank2 = np.empty(n + m, dtype=np.int64)
    rank2[order] = (starts + ends + 2)[group]
    dx = np.sort(rank2[:n]) - 2 * np.arange(1, n + 1)
    dy = np.sort(rank2[n:]) - 2 * np.arange(1, m + 1)
    return int(n * int(dx @ dx) + m * int(dy @ dy))


#: Both sizes at most this: scipy's ``method="auto"`` takes the exact p-value
#: (its documented rule); above it, the asymptotic one.
CVM_EXACT_MAX = 20


def _merge_counts(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and their summed counts (integer sums: exact)."""
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    first = np.empty(len(values), dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return values[starts], np.add.reduceat(counts, starts)


@functools.cache
def cvm_null_tail(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact null distribution of the two-sample Cramer-von Mises statistic for sizes (m, n).

    Under the null hypothesis every interleaving of the two sorted samples is
    equally likely: a monotone lattice path from (0, 0) to (m, n), ``i`` steps
    taken from the first sample and ``j`` from the second. With ``L`` the least
    common multiple of m and n, the statistic in integer units (Xiao, Gordon &
    Yakovlev 2006, after Anderson 1962) is ``zeta = sum over the path's points
    (L*i/m - L*j/n)^2``. Counted here by dynamic programming over the lattice,
    a (values, counts) table per point, one row kept at a time.

    Returns the distinct ``zeta`` values ascending and, for each, the number
    of paths with a ``zeta`` at least as large (exact integers; the total is
    ``comb(m + n, m)``).
    """
    lcm = math.lcm(m, n)
    step_i, step_j = lcm // m, lcm // n
    empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    row: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(m + 1):
        new_row: list[tuple[np.ndarray, np.ndarray]] = []
        for j in range(n + 1):
            if i == 0 and j == 0:
                vals, cnts = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)
            else:
                from_i = row[j] if i > 0 else empty  # a step of the first sample into (i, j)
                from_j = new_row[j - 1] if j > 0 else empty  # a step of the second
                vals, cnts = _merge_counts(
                    np.concatenate((from_i[0], from_j[0])), np.concatenate((from_i[1], from_j[1]))
                )
            vals = vals + (step_i * i - step_j * j) ** 2
            new_row.append((vals, cnts))
        row = new_row
    vals, cnts = row[n]
    tail = np.cumsum(cnts[::-1])[::-1]
    if int(tail[0]) != math.comb(m + n, m):
        raise AssertionError("lattice paths miscounted")  # int64 overflow would show here
    return vals, tail


def cvm_exact_pvalue(m: int, n: int, u4: int) -> float:
    """scipy's exact two-sample Cramer-von Mises p-value for sizes (m, n) and statistic ``U = u4 / 4``.

    ``zeta = floor(L^2 (m + n) (6 U - m n (4 m n - 1)) / (6 m^2 n^2))``, in
    integers here (exact for tied, fractional ``U`` too; scipy's floating
    floor division is exact at these magnitudes), and the p-value is the
    share of paths with a statistic ``>= zeta``: one division of two exact
    integers, the same correctly rounded double scipy returns.
    """
    lcm = math.lcm(m, n)
    mn = m * n
    zeta = lcm * lcm * (m + n) * (3 * u4 - 2 * mn * (4 * mn - 1)) // (12 * mn * mn)
    vals, tail = cvm_null_tail(m, n)
    k = int(np.searchsorted(vals, zeta, side="left"))
    count = int(tail[k]) if k < len(tail) else 0
    return float(np.float64(count) / np.float64(math.comb(m + n, m)))


#: p-values by (len(a), len(b), 4U): a p-value is a function of the sizes and
#: the statistic, and the statistic of (sizes, U), so a hit is exactly what
#: the computation gave for that key. Bounded: cleared when full (a miss
#: only costs time, never a different value).
_CVM_CACHE: dict[tuple[int, int, int], float] = {}
_CVM_CACHE_MAX = 200_000


def _stats() -> Any:
    """``scipy.stats``, imported on first use: it takes about 1 s, which every command that
    imports the detectors paid, though only these tests and E-Divisive use it."""
    from scipy import stats

    return stats


def _scipy_cvm_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    return float(_stats().cramervonmises_2samp(a, b).pvalue)


def cvm_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """``scipy.stats.cramervonmises_2samp(a, b).pvalue``, bit for bit, without its per-call cost.

    scipy's exact p-value (both sizes <= 20) re-counts the whole null
    distribution on every call (~20-30 ms on windows of 12-20: it made
    ``hybrid_cvm`` 20x slower than every other detector together); here it is
    counted once per pair of sizes (:func:`cvm_null_tail`). The asymptotic
    p-value (a size above 20) is scipy's own, memoised on the exact statistic.
    Windows with a NaN go straight to scipy (its NaN propagation decides).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if np.isnan(a).any() or np.isnan(b).any():
        return _scipy_cvm_pvalue(a, b)
    m, n = len(a), len(b)
    key = (m, n, cvm_u4(a, b))
    p = _CVM_CACHE.get(key)
    if p is None:
        if m <= CVM_EXACT_MAX and n <= CVM_EXACT_MAX:
            p = cvm_exact_pvalue(m, n, key[2])
        else:
            p = _scipy_cvm_pvalue(a, b)
        if len(_CVM_CACHE) >= _CVM_CACHE_MAX:
            _CVM_CACHE.clear()
        _CVM_CACHE[key] = p
    return p


#: The two-sample tests of the Mozilla change-point study, as p-value functions.
HYBRID_TESTS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "welch": _pvalue(welch_pvalue),
    "mwu": _pvalue(lambda a, b: _stats().mannwhitneyu(a, b, alternative="two-sided").pvalue),
    "ks": _pvalue(lambda a, b: _stats().ks_2samp(a, b).pvalue),
    "cvm": _pvalue(cvm_pvalue),
    "levene": _pvalue(lambda a, b: _stats().levene(a, b).pvalue),
}


class HybridTest(_MovingWindowScan):
    """Perfherder's windows with another two-sample test (the Mozilla change-point study).

    Besbes et al. replaced Perfherder's t by Welch's t-test, Mann-Whitney U,
    Kolmogorov-Smirnov, Cramer-von Mises or Levene (scipy) and kept the rest
    of the scan: a revision is a candidate when ``p < alpha`` and no
    neighbour has a strictly smaller p, then the 2 % magnitude filter applies.

    Strong changes make p underflow to exactly 0 on several adjacent
    revisions, and discrete tests (``ks``) give equal p-values to neighbours;
    all of them survive the "no neighbour strictly smaller" rule. Here only
    the *last* of such a run of equal p-values is kept. (That places a very
    strong step up to a few commits late; Perfherder's own t does not
    saturate and has no such tie.) The study's published scripts and
    treeherder's ``perf/methods`` detectors keep every revision of the run:
    on the 372 real histories they would give ``hybrid_ks`` 10,911
    candidates where this gives 8,837 (``hybrid_welch``: 8,131 and 8,130).

    Parameters
    ----------
    test : one of ``welch``, ``mwu``, ``ks``, ``cvm``, ``levene``
    alpha : p-value threshold (0.05)
    magnitude : minimum relative change of the window means, in percent (2);
        0 disables the filter (useful for ``levene``, which tests variances)
    min_back_window, max_back_window, fore_window : as :class:`Perfherder`

    ``score`` is ``-log10(p)`` (an underflowed p scores ~307.7); fields
    ``p_value``, ``test``, ``mean_before``, ``mean_after``, ``rel_change_pct``.
    """

    name = "hybrid"
    ranges: ClassVar[dict[str, Range]] = {
        "min_back_window": COUNT, "max_back_window": COUNT, "fore_window": COUNT, "alpha": PROBABILITY, "magnitude": NONNEG,
    }
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"test": tuple(HYBRID_TESTS)}

    def __init__(
        self,
        test: str = "welch",
        alpha: float = 0.05,
        magnitude: float = 2.0,
        min_back_window: int = 12,
        max_back_window: int = 24,
        fore_window: int = 12,
    ):
        self.test = test
        self.alpha = alpha
        self.magnitude = magnitude
        self.min_back_window = min_back_window
        self.max_back_window = max_back_window
        self.fore_window = fore_window

    def _check(self) -> None:
        super()._check()
        if self.test not in HYBRID_TESTS:
            raise ValueError(f"unknown test {self.test!r} (use one of {', '.join(HYBRID_TESTS)})")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be in (0, 1)")

    def _no_evidence(self) -> float:
        return 1.0

    def _statistic(self, back: np.ndarray, fore: np.ndarray) -> tuple[float, bool]:
        p = HYBRID_TESTS[self.test](back, fore)
        return p, p < self.alpha

    def _passes(self, value: float) -> bool:
        return value < self.alpha

    def _stronger(self, a: float, b: float) -> bool:
        return a < b

    def _break_ties(self, found: list[int], stat: np.ndarray) -> list[int]:
        # Adjacent candidates can only coexist when their p-values are equal
        # (in practice both underflowed to 0): keep the last of each run.
        keep = []
        for k, i in enumerate(found):
            nxt = found[k + 1] if k + 1 < len(found) else None
            if nxt == i + 1 and stat[nxt] == stat[i]:
                continue
            keep.append(i)
        return keep

    def _change_point(self, i, value, before, after, pct) -> ChangePoint:
        p = float(value)
        score = -math.log10(p) if p > np.finfo(float).tiny else P_SCORE_CAP
        return ChangePoint(
            i,
            score,
            {"p_value": p, "test": self.test, "mean_before": before, "mean_after": after, "rel_change_pct": pct},
        )
