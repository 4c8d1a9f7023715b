"""Scale-free level-shift features of a (Pre, After) pair: the ``pair_*`` columns.

The paper's characteristics (:mod:`triage.features.catalogue`) describe each
window on its own scale; a model trained on synthetic series then meets real
series whose levels and noise differ by orders of magnitude. These measures
compare After with Pre in units of Pre's own noise or level, so they carry
over between series, projects and units (issue 10, item 4; the robust shift
lifted synthetic AUC from 0.875 to 0.964 in the ablation).

Length must not stand in for the label. A Welch t grows with the square root
of the window sizes, and with candidate-bounded windows a false candidate in a
busy stretch gets short windows; so every measure here reads at most the last
:data:`PAIR_CAP` commits of Pre and the first :data:`PAIR_CAP` of After, and
the t statistic is reported per sqrt(commit) (``t / sqrt(n_pre_used +
n_after_used)``, an effect size) rather than raw.

Columns (:data:`PAIR_COLUMNS`), all >= 0 except where said:

``pair_robust_shift``
    ``|median(A) - median(P)| / s(P)``, ``s`` = 1.4826 MAD, floored (below).
``pair_rel_change``
    ``|median(A) / median(P) - 1|`` (NaN when ``median(P) == 0``).
``pair_welch_d``
    Welch t of the means over ``sqrt(n_P + n_A)``, absolute.
``pair_noise_ratio``
    ``s(A) / s(P)`` (both floored): a noise-level change, not a level shift.
``pair_overlap``
    ``|2 U / (n_P n_A) - 1|``, U the Mann-Whitney count: 0 = After
    interleaves with Pre, 1 = every After value beyond every Pre value.
``pair_rel_noise``
    ``s(P) / |median(P)|``: how noisy the series is relative to its level
    (a 3 % shift in a series with 10 % noise is no news).
``pair_after_consistency``
    Share of After values closer to ``median(A)`` than to ``median(P)``: a
    level shift keeps After together, a lone spike does not.

The MAD floor: a nearly deterministic series (memory in bytes) has MAD 0 on
quiet windows; dividing by it would make any one-byte change infinite. The
floor is the series' *resolution* (:func:`resolution`, the smallest step
between its distinct values), and at least ``1e-9 * |median(P)|``.
A Pre of fewer than :data:`MIN_POINTS` values (or an empty After) gives NaN
in every column (undefined, read as missing by every model here); an After
of one commit leaves only the two that need its spread NaN
(``pair_welch_d`` and ``pair_noise_ratio``).

Implementation: :func:`pair_features` runs one compiled kernel (numba,
``cache=True``) per candidate, for the batch feature matrix and the online
loop alike; on arrays of 30 + a few values numpy's per-call overhead, not
arithmetic, was 40 % of the online loop's time (BENCHMARKS.md, "Online loop
speed with the window-4 model"). The kernel sums in numpy's pairwise order
and takes medians as numpy does, so it gives the numbers of
:func:`pair_features_reference`, the readable numpy definition it is tested
against, to the last bit or nearly (``tests/test_level_shift.py``); windows
longer than :data:`KERNEL_MAX` (``cap=0``) or holding a non-finite value go to
the reference.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from triage.core.noise import MAD_SCALE as _MAD_SCALE  # the one constant (a copy of it lived here)
from triage.features.kernel_arrays import kernel_array
from triage.features.pairwise_sum import pairwise_leaf

#: Most commits of each window a pair measure reads (the nearest ones to the candidate).
PAIR_CAP = 30
#: Fewest commits a window needs for the pair measures.
MIN_POINTS = 2
PAIR_COLUMNS: tuple[str, ...] = (
    "pair_robust_shift",
    "pair_rel_change",
    "pair_welch_d",
    "pair_noise_ratio",
    "pair_overlap",
    "pair_rel_noise",
    "pair_after_consistency",
)
#: The columns that measure how large the shift is: with every other column
#: fixed, a larger value never makes a change less likely. A model may be held
#: monotone in them (:func:`triage.training.model_kinds.monotone_increasing`).
SHIFT_SIZE_COLUMNS: tuple[str, ...] = (
    "pair_robust_shift",
    "pair_welch_d",
    "pair_overlap",
    "pair_after_consistency",
)
PREFIX = "pair_"
#: Longest window the compiled kernel takes (numpy's pairwise sum is one
#: leaf up to 128 values; longer windows, only with ``cap=0``, use the reference).
KERNEL_MAX = 128


def resolution(values: np.ndarray) -> float:
    """Smallest positive step between distinct values of the series (0 when constant)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1 and x.size and np.isfinite(x).all():
        return float(_resolution(kernel_array(x)))
    u = np.unique(x)
    if u.size < 2:
        return 0.0
    return float(np.min(np.diff(u)))


def robust_scale(x: np.ndarray, med: float, floor: float) -> float:
    """1.4826 MAD of ``x`` around ``med``, floored by ``floor`` and ``1e-9 * |med|`` (the module docstring)."""
    s = _MAD_SCALE * float(np.median(np.abs(x - med)))
    return max(s, floor, 1e-9 * abs(med), 1e-300)


def pair_features(
    pre: np.ndarray, after: np.ndarray, res: float | None = 0.0, cap: int = PAIR_CAP
) -> np.ndarray:
    """The :data:`PAIR_COLUMNS` of one candidate.

    Parameters
    ----------
    pre, after : ndarray of float
        The Pre window (commits before the candidate, in order) and the After
        window (the candidate and after it).
    res : float or None
        The series' resolution (:func:`resolution`), the floor of the noise
        scale; None = the resolution of the values read (the capped windows),
        as the online loop has no more of the series at hand.
    cap : int
        Most commits read from each window (Pre's last, After's first).

    Returns
    -------
    ndarray of float64, shape (len(PAIR_COLUMNS),)
    """
    p = np.asarray(pre, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)
    if cap > 0:
        p, a = p[-cap:], a[:cap]
    out = np.empty(len(PAIR_COLUMNS))
    if p.ndim == 1 and a.ndim == 1 and p.size <= KERNEL_MAX and a.size <= KERNEL_MAX:
        p, a = kernel_array(p), kernel_array(a)
        if res is None:
            if _pair_own_floor(p, a, out):
                return out
        elif _pair_kernel(p, a, float(res), out):
            return out
    if res is None:
        res = resolution(np.concatenate([p, a]))
    return pair_features_reference(p, a, res, 0)


def pair_features_reference(
    pre: np.ndarray, after: np.ndarray, res: float = 0.0, cap: int = PAIR_CAP
) -> np.ndarray:
    """:func:`pair_features` in numpy: the readable definition the kernel is held to.

    Same parameters and result as :func:`pair_features`, except that ``res``
    must be given (a float, the series' resolution).
    """
    p = np.asarray(pre, dtype=np.float64)[-cap:] if cap > 0 else np.asarray(pre, dtype=np.float64)
    a = np.asarray(after, dtype=np.float64)[:cap] if cap > 0 else np.asarray(after, dtype=np.float64)
    out = np.full(len(PAIR_COLUMNS), np.nan)
    if p.size < MIN_POINTS or a.size < 1:
        return out
    mp, ma = float(np.median(p)), float(np.median(a))
    sp = robust_scale(p, mp, res)
    out[0] = abs(ma - mp) / sp
    out[1] = abs(ma / mp - 1.0) if mp != 0 else np.nan
    if a.size >= MIN_POINTS:
        vp, va = float(np.var(p, ddof=1)), float(np.var(a, ddof=1))
        se = np.sqrt(vp / p.size + va / a.size)
        floor_se = max(res, 1e-9 * abs(mp), 1e-300) / np.sqrt(p.size + a.size)
        t = abs(float(np.mean(a)) - float(np.mean(p))) / max(se, floor_se)
        out[2] = t / np.sqrt(p.size + a.size)
        out[3] = robust_scale(a, ma, res) / sp
    # Mann-Whitney U via ranks of the merged sample (ties get mid-ranks)
    merged = np.concatenate([p, a])
    order = np.argsort(merged, kind="mergesort")
    ranks = np.empty(merged.size)
    ranks[order] = np.arange(1, merged.size + 1)
    _, inv, counts = np.unique(merged, return_inverse=True, return_counts=True)
    if counts.max() > 1:
        sums = np.bincount(inv, weights=ranks)
        ranks = (sums / counts)[inv]
    u = float(ranks[p.size :].sum()) - a.size * (a.size + 1) / 2.0
    out[4] = abs(2.0 * u / (p.size * a.size) - 1.0)
    out[5] = sp / abs(mp) if mp != 0 else np.nan
    out[6] = float(np.mean(np.abs(a - ma) < np.abs(a - mp))) if ma != mp else 0.0
    return out


def pair_block(
    values: np.ndarray, bounds: list[tuple[tuple[int, int], tuple[int, int]]], cap: int = PAIR_CAP
) -> np.ndarray:
    """Pair features of many candidates of one series, shape (len(bounds), len(PAIR_COLUMNS)).

    ``bounds`` holds each candidate's half-open ``((pre_start, pre_stop),
    (after_start, after_stop))`` (:mod:`triage.features.windows`).
    """
    x = np.asarray(values, dtype=np.float64)
    res = resolution(x)
    out = np.empty((len(bounds), len(PAIR_COLUMNS)))
    for r, ((a0, a1), (b0, b1)) in enumerate(bounds):
        out[r] = pair_features(x[a0:a1], x[b0:b1], res, cap)
    return out


# ---------------------------------------------------------------------- compiled kernel
#
# The helpers below are local to this module because numba's on-disk cache of
# a kernel does not notice when a callee in another module changes; the one
# shared with the online Pre kernels, numpy's pairwise sum, lives in
# features/pairwise_sum.py (its docstring says how to refresh the cache).


@numba.njit(cache=True)
def _sorted_median(s):
    """Median of an ascending array, as numpy takes it (mean of the two middle values when even)."""
    n = s.size
    h = n // 2
    if n % 2:
        return s[h]
    return (s[h - 1] + s[h]) / 2.0


@numba.njit(cache=True)
def _mean_var(x):
    """numpy's mean and var(ddof=1) of x: pairwise sums, two passes."""
    n = x.size
    m = pairwise_leaf(x, 0, n) / n
    d = np.empty(n)
    for i in range(n):
        d[i] = (x[i] - m) * (x[i] - m)
    return m, pairwise_leaf(d, 0, n) / (n - 1)


@numba.njit(cache=True)
def _robust_scale(x, med, floor):
    dev = np.empty(x.size)
    for i in range(x.size):
        dev[i] = abs(x[i] - med)
    dev.sort()
    s = _MAD_SCALE * _sorted_median(dev)
    return max(s, floor, 1e-9 * abs(med), 1e-300)


@numba.njit(cache=True)
def _resolution(x):
    s = np.sort(x)
    best = np.inf
    for i in range(s.size - 1):
        d = s[i + 1] - s[i]
        if d > 0.0 and d < best:
            best = d
    return 0.0 if best == np.inf else best


@numba.njit(cache=True)
def _pair_kernel(p, a, res, out):
    """:func:`pair_features_reference` of capped windows into ``out``; False (out untouched) on a non-finite value."""
    n_p = p.size
    n_a = a.size
    for i in range(n_p):
        if not np.isfinite(p[i]):
            return False
    for i in range(n_a):
        if not np.isfinite(a[i]):
            return False
    out[:] = np.nan
    if n_p < MIN_POINTS or n_a < 1:
        return True
    sp_sorted = np.sort(p)
    sa_sorted = np.sort(a)
    mp = _sorted_median(sp_sorted)
    ma = _sorted_median(sa_sorted)
    sp = _robust_scale(p, mp, res)
    out[0] = abs(ma - mp) / sp
    out[1] = abs(ma / mp - 1.0) if mp != 0 else np.nan
    n_all = n_p + n_a
    if n_a >= MIN_POINTS:
        mean_p, vp = _mean_var(p)
        mean_a, va = _mean_var(a)
        se = math.sqrt(vp / n_p + va / n_a)
        floor_se = max(res, 1e-9 * abs(mp), 1e-300) / math.sqrt(n_all)
        t = abs(mean_a - mean_p) / max(se, floor_se)
        out[2] = t / math.sqrt(n_all)
        out[3] = _robust_scale(a, ma, res) / sp
    # Mann-Whitney U from mid-ranks of the merged sample: half-integers, so
    # every sum below is exact whatever its order.
    merged = np.empty(n_all)
    merged[:n_p] = p
    merged[n_p:] = a
    order = np.argsort(merged, kind="mergesort")
    ranks = np.empty(n_all)
    i = 0
    while i < n_all:
        j = i
        while j + 1 < n_all and merged[order[j + 1]] == merged[order[i]]:
            j += 1
        mid = (i + 1 + j + 1) / 2.0
        for k in range(i, j + 1):
            ranks[order[k]] = mid
        i = j + 1
    u = 0.0
    for k in range(n_p, n_all):
        u += ranks[k]
    u -= n_a * (n_a + 1) / 2.0
    out[4] = abs(2.0 * u / (n_p * n_a) - 1.0)
    out[5] = sp / abs(mp) if mp != 0 else np.nan
    if ma != mp:
        closer = 0
        for k in range(n_a):
            if abs(a[k] - ma) < abs(a[k] - mp):
                closer += 1
        out[6] = closer / n_a
    else:
        out[6] = 0.0
    return True


@numba.njit(cache=True)
def _pair_own_floor(p, a, out):
    """:func:`_pair_kernel` with the floor the resolution of ``p`` and ``a`` merged."""
    merged = np.empty(p.size + a.size)
    merged[: p.size] = p
    merged[p.size :] = a
    for i in range(merged.size):
        if not np.isfinite(merged[i]):
            return False
    return _pair_kernel(p, a, _resolution(merged), out)
