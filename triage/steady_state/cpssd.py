"""CP-SSD: change-point based steady-state detection (Traini et al.), the KB-KSSD baseline.

Traini et al. ("Towards effective assessment of steady state performance in
Java software: are we there yet?", EMSE 2022) segment each fork's iterations
with PELT and look back from the last segment for the latest one whose mean
differs meaningfully from it. This module is written from their published
description (no code of theirs is used).

What follows Traini et al.:

* PELT (Killick et al.) with the normal mean-and-variance cost, as R's
  ``changepoint::cpt.meanvar`` (test statistic Normal): a segment of ``m``
  iterations costs ``m log(var)``, ``var`` the maximum-likelihood variance
  about the segment mean (constants dropped); minimum segment length 2;
* the penalty chosen per run between ``4 log n`` and ``1e5 log n`` (CROPS's
  range) by the elbow (Kneedle, Satopaa et al. 2011) of the number of change
  points against the penalty, each count taken once at the smallest penalty
  giving it (as CROPS reports each segmentation), penalties and counts
  normalised to [0, 1] and the elbow maximising ``1 - x - y``; ``15 log n``
  when fewer than two distinct counts occur;
* from the segment before the last one backwards, the first segment whose
  mean differs from the last segment's by more than 5 % (bootstrap 95 %
  confidence interval of mean(last) / mean(segment) entirely outside
  [0.95, 1.05]) ends the warm-up: the steady state starts at the change point
  that ends it, or at 0 when no segment differs;
* never steady when that start lies in the last 10 % of the run (in their
  forks of 1,000 iterations, steady iff the start is at most 899).

This project's choices:

* the penalty search approximates CROPS (Haynes et al.) with a geometric grid
  of ``n_penalties`` (25) penalties over the range, all fitted in one
  vectorised PELT pass (exact PELT per penalty; pruning keeps a start while
  any penalty still needs it). CROPS finds every segmentation that is optimal
  somewhere in the range, with the smallest penalty where it is; the grid
  sees only those optimal at some grid penalty, each placed at the first
  such grid penalty (at most one grid step, x 1.53, above CROPS's), so the
  elbow can differ when segmentations fall between grid points. With exactly
  two points (both on the chord) the one with more change points is taken;
* the cost runs on the run standardised by its noise level (first
  differences, :func:`~triage.steady_state.base.noise_level`), with the
  variance floored at ``1e-8`` of that noise variance so that a constant
  stretch costs a finite amount instead of minus infinity;
* the bootstrap uses 1,000 resamples from a seeded generator
  (``random_state``), so a fit is deterministic; the last segment's
  resampled means are drawn once and reused for every earlier segment;
* a ratio of means needs positive values: for a run with any value <= 0
  (differences, negated rates) the test is on the difference
  mean(last) - mean(segment), whose bootstrap interval must lie entirely
  outside +-5 % of |mean(last)|;
* no outlier filtering: that is one of the things KB-KSSD adds;
* runs longer than ``exact_max`` (5,000) iterations are an approximation.
  PELT prunes nothing inside a long segment, so at the high penalties of the
  grid (few change points) it costs time quadratic in the run's length:
  about 40 s for 50,000 iterations. Such a run is segmented with change
  points restricted to multiples of ``step = ceil(n / exact_max)``
  iterations (segment costs still over every iteration, so the work is that
  of a run of at most ``exact_max``), the elbow is taken over those counts,
  and each change point of the chosen segmentation then moves to its best
  position within ``step - 1`` iterations, its neighbours held (0.7 s for
  50,000). A segment shorter than ``step`` cannot be represented, so counts
  at the low penalties, and with them the elbow, can differ from the exact
  search. On 16 generated runs of 12,000 and 25,000 iterations (lattices of
  3 and 5) start and change points equalled the exact search's; with a
  lattice of 6 on 3,000-iteration runs the start agreed on 43 of 50, five of
  the other seven gradual (exponential) warm-ups, whose change points are
  ill defined. Runs up to ``exact_max`` are segmented exactly, as before.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from triage.detectors.base import Range, in_range
from triage.steady_state.base import (
    COUNT,
    NONNEG,
    NONNEG_INT,
    POSITIVE,
    PROBABILITY,
    as_run,
    check_params,
    noise_level,
)

# Variance floor in units of the run's noise variance (see module docstring).
_VAR_FLOOR = 1e-8


def pelt_meanvar(
    x: np.ndarray, penalties: np.ndarray, min_size: int = 2, var_floor: float = 0.0, step: int = 1
) -> list[list[int]]:
    """Change points (segment starts, excluding 0) for each penalty, normal mean-and-variance cost.

    A segment of ``m`` iterations costs ``m log(max(var, var_floor))``, ``var``
    the mean squared deviation from the segment mean; each change point costs
    the penalty. Every penalty is solved exactly (PELT) in one pass over the
    run: the candidate last change points are shared, and a candidate is
    pruned once no penalty can use it any more (Killick et al.'s rule with
    K = 0, valid for a likelihood cost). The floor must be positive when the
    run may hold a constant stretch.

    ``step`` > 1 restricts the change points to multiples of ``step`` (the
    costs stay those of the iterations): the exact optimum over that lattice,
    at the price of a run ``step`` times shorter. ``step`` = 1 is the exact
    optimum over all positions.
    """
    pens = np.asarray(penalties, dtype=float).ravel()
    n, p = len(x), len(pens)
    if n < 2 * min_size:
        return [[] for _ in range(p)]
    # The positions a segment may end at (0 and n always), and the prefix sums there.
    pos = np.arange(n + 1) if step == 1 else np.r_[np.arange(0, n, step), n]
    c1 = np.r_[0.0, np.cumsum(x)][pos]
    c2 = np.r_[0.0, np.cumsum(x * x)][pos]
    n_pos = len(pos)
    tiny = max(var_floor, np.finfo(float).tiny)
    best = np.full((p, n_pos), np.inf)  # optimal cost of x[:pos[i]] per penalty
    best[:, 0] = -pens
    last = np.zeros((n_pos, p), dtype=np.int64)  # the index (into pos) of its last change point
    # The candidate last change points (indices into pos), compact in the
    # first k columns, with their best[] per penalty alongside (penalties in
    # rows: the reductions below run along contiguous rows). Scratch buffers
    # avoid reallocation.
    starts = np.zeros(n_pos, dtype=np.int64)
    cand_best = np.empty((p, n_pos))
    total_buf = np.empty((p, n_pos))
    keep_buf = np.empty((p, n_pos), dtype=bool)
    rows = np.arange(p)
    k = 0
    admitted = 0  # positions pos[:admitted] have been candidates
    for i in range(1, n_pos):
        t = pos[i]
        # A start becomes a candidate once a segment from it to t is long
        # enough (its best[] is inf until it has been an end).
        while admitted < i and pos[admitted] <= t - min_size:
            starts[k] = admitted
            cand_best[:, k] = best[:, admitted]
            k += 1
            admitted += 1
        if k == 0:
            continue
        s = starts[:k]
        m = t - pos[s]
        mean = (c1[i] - c1[s]) / m
        var = (c2[i] - c2[s]) / m - mean * mean
        seg = m * np.log(np.maximum(var, tiny))
        total = np.add(cand_best[:, :k], seg, out=total_buf[:, :k])
        j = np.argmin(total, axis=1)
        opt = total[rows, j] + pens
        best[:, i] = opt
        last[i] = s[j]
        # PELT pruning: a start that cannot beat the optimum now never will,
        # whatever the penalty; it leaves once no penalty can use it.
        keep = np.logical_or.reduce(np.less_equal(total, opt[:, None], out=keep_buf[:, :k]), axis=0)
        if not keep.all():
            idx = np.flatnonzero(keep)
            k = len(idx)
            starts[:k] = s[idx]
            cand_best[:, :k] = cand_best[:, idx]
    out: list[list[int]] = []
    for j in range(p):
        cps = []
        i = n_pos - 1
        while i > 0:
            i = int(last[i, j])
            if i > 0:
                cps.append(int(pos[i]))
        out.append(sorted(cps))
    return out


def refine_change_points(
    x: np.ndarray, cps: list[int], step: int, min_size: int = 2, var_floor: float = 0.0
) -> list[int]:
    """Change points found on a lattice of ``step`` iterations, each moved to its best position nearby.

    From the first to the last, each change point moves to the position
    within ``step - 1`` iterations of it that minimises the cost of the two
    segments it bounds (cost as in :func:`pelt_meanvar`), its neighbours held
    where they are (the one before already moved). Positions in iterations.
    """
    n = len(x)
    c1 = np.r_[0.0, np.cumsum(x)]
    c2 = np.r_[0.0, np.cumsum(x * x)]
    tiny = max(var_floor, np.finfo(float).tiny)

    def cost(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        m = np.asarray(b) - np.asarray(a)
        mean = (c1[b] - c1[a]) / m
        var = (c2[b] - c2[a]) / m - mean * mean
        return m * np.log(np.maximum(var, tiny))

    bounds = [0, *cps, n]
    for i in range(1, len(bounds) - 1):
        lo = max(bounds[i - 1] + min_size, bounds[i] - step + 1)
        hi = min(bounds[i + 1] - min_size, bounds[i] + step - 1)
        if hi <= lo:
            continue
        at = np.arange(lo, hi + 1)
        bounds[i] = int(at[np.argmin(cost(bounds[i - 1], at) + cost(at, bounds[i + 1]))])
    return bounds[1:-1]


def elbow(penalties: np.ndarray, counts: np.ndarray) -> int | None:
    """Index (into ``penalties``) of the Kneedle elbow of the change-point count curve, ``None`` when flat.

    ``counts[i]`` is the number of change points at ``penalties[i]``
    (ascending). As in CROPS's output, each count is kept once, at the
    smallest penalty giving it. Those penalties and counts are normalised to
    [0, 1]; for this convex decreasing curve the elbow is the point farthest
    below the chord from the first point to the last, maximising
    ``1 - x - y`` (the first such point on ties, so with only two points the
    one with more change points). Fewer than two distinct counts: ``None``.
    """
    pen = np.asarray(penalties, dtype=float)
    cnt = np.asarray(counts, dtype=float)
    if len(pen) == 0:
        return None
    first = np.flatnonzero(np.r_[True, cnt[1:] != cnt[:-1]])
    if len(first) < 2:
        return None
    px, py = pen[first], cnt[first]
    xn = (px - px.min()) / np.ptp(px)
    yn = (py - py.min()) / np.ptp(py)
    return int(first[np.argmax(1.0 - xn - yn)])


class CPSSD:
    """Change-point based steady-state detection on one run, after Traini et al. (see module docstring).

    Parameters
    ----------
    penalty_range : lowest and highest penalty factor on ``log n`` ((4, 1e5))
    n_penalties : geometric grid size approximating CROPS (25)
    fallback_penalty : factor on ``log n`` when the count curve is flat (15)
    min_size : minimum segment length in iterations (2)
    effect : smallest relative change of the mean that ends a warm-up (0.05)
    confidence : bootstrap confidence level (0.95)
    n_boot : bootstrap resamples (1000)
    max_start : never steady when the start is at or beyond this share of the run (0.9)
    random_state : seed of the bootstrap's generator (0)
    exact_max : longest run segmented exactly (5000 iterations); a longer run
        is segmented on a lattice of change-point positions (see module docstring)

    Attributes
    ----------
    start_ : first steady iteration, or ``None`` (never steady)
    change_points_ : the segment starts PELT found at the chosen penalty
    penalty_ : the chosen penalty (the elbow, or the fallback)
    """

    def __init__(
        self,
        penalty_range: tuple[float, float] = (4.0, 1e5),
        n_penalties: int = 25,
        fallback_penalty: float = 15.0,
        min_size: int = 2,
        effect: float = 0.05,
        confidence: float = 0.95,
        n_boot: int = 1000,
        max_start: float = 0.9,
        random_state: int = 0,
        exact_max: int = 5000,
    ):
        self.penalty_range = penalty_range
        self.n_penalties = n_penalties
        self.fallback_penalty = fallback_penalty
        self.min_size = min_size
        self.effect = effect
        self.confidence = confidence
        self.n_boot = n_boot
        self.max_start = max_start
        self.random_state = random_state
        self.exact_max = exact_max

    ranges: ClassVar[dict[str, Range]] = {
        "n_penalties": COUNT,
        "fallback_penalty": POSITIVE,
        "min_size": COUNT,
        "effect": NONNEG,
        "confidence": PROBABILITY,
        "n_boot": COUNT,
        "max_start": ("float", 0, 1, False, True),
    }

    def fit(self, x: object) -> CPSSD:
        check_params("cpssd", self, self.ranges)
        low_high = self.penalty_range
        if not (
            isinstance(low_high, tuple | list)
            and len(low_high) == 2
            and all(in_range(v, POSITIVE) for v in low_high)
            and low_high[0] <= low_high[1]
        ):
            raise ValueError(
                f"parameter penalty_range={low_high!r} of steady-state method 'cpssd' must be two "
                "finite numbers > 0, the lower first"
            )
        if self.random_state is not None and not in_range(self.random_state, NONNEG_INT):
            raise ValueError(
                f"parameter random_state={self.random_state!r} of steady-state method 'cpssd' must be "
                "None or a whole number >= 0"
            )
        if (
            isinstance(self.exact_max, bool)
            or not isinstance(self.exact_max, (int, np.integer))
            or self.exact_max < 1
        ):
            raise ValueError(
                f"exact_max must be a positive number of iterations, got {self.exact_max!r}"
            )
        run = as_run(x)
        n = len(run)
        log_n = float(np.log(max(n, 2)))
        lo, hi = self.penalty_range
        grid = np.geomspace(lo * log_n, hi * log_n, self.n_penalties)
        fallback = self.fallback_penalty * log_n
        if n:
            sigma = noise_level(run)
            z = (run - float(np.median(run))) / sigma
        else:
            z = run
        # Exact PELT is quadratic in the run's length when change points are
        # few (nothing is pruned inside a long segment): a long run is
        # segmented on a lattice of at most exact_max positions instead.
        step = 1 if n <= self.exact_max else -(-n // self.exact_max)
        segs = pelt_meanvar(z, np.r_[grid, fallback], self.min_size, _VAR_FLOOR, step)
        counts = np.array([len(s) for s in segs[:-1]])
        k = elbow(grid, counts)
        self.penalty_ = fallback if k is None else float(grid[k])
        cps = segs[-1] if k is None else segs[k]
        self.change_points_ = (
            cps if step == 1 else refine_change_points(z, cps, step, self.min_size, _VAR_FLOOR)
        )
        start = self._walk_back(run, [0, *self.change_points_, n]) if n else 0
        self.start_ = start if start < self.max_start * n else None
        return self

    def _walk_back(self, run: np.ndarray, bounds: list[int]) -> int:
        """Start of the segment after the latest one that differs from the last segment."""
        if len(bounds) < 3:
            return 0
        rng = np.random.default_rng(self.random_state)
        alpha = (1.0 - self.confidence) / 2.0
        last = run[bounds[-2] :]
        last_means = _boot_means(last, self.n_boot, rng)
        ratio = bool(np.all(run > 0))
        scale = abs(float(np.mean(last)))
        for k in range(len(bounds) - 3, -1, -1):
            means = _boot_means(run[bounds[k] : bounds[k + 1]], self.n_boot, rng)
            if ratio:
                low, high = np.quantile(last_means / means, [alpha, 1.0 - alpha])
                differs = high < 1.0 - self.effect or low > 1.0 + self.effect
            else:
                low, high = np.quantile(last_means - means, [alpha, 1.0 - alpha])
                differs = high < -self.effect * scale or low > self.effect * scale
            if differs:
                return bounds[k + 1]
        return 0


#: Resampled values drawn at a time: the whole (n_boot, len(x)) draw of a
#: 50,000-iteration segment would take 800 MB (indices and values).
_BOOT_CHUNK = 1 << 22


def _boot_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``x``.

    Drawn a block of resamples at a time (at most about :data:`_BOOT_CHUNK`
    values): the generator yields the same numbers in the same order as one
    ``(n_boot, len(x))`` draw, so the means are those of that draw.
    """
    rows = max(1, _BOOT_CHUNK // max(1, len(x)))
    means = np.empty(n_boot)
    for a in range(0, n_boot, rows):
        b = min(a + rows, n_boot)
        means[a:b] = x[rng.integers(0, len(x), size=(b - a, len(x)))].mean(axis=1)
    return means
