"""How a candidate stands among the other candidates of its detector run: the ``ctx_*`` columns.

A detector that over-segments (binary segmentation, PELT, the hybrid tests)
often flags two or three commits around one real change. Only one of them can
be the change; the others are duplicates whose own Pre/After windows, bounded
by the neighbouring candidates (:func:`triage.features.windows.candidate_bounds`),
are short and look like a level shift as much as the real one. These columns
let a model see the neighbourhood (issue 10; on the real-data benchmark's fit
part, 60 of binary segmentation's 384 false candidates in 1 in 4 base
histories lie within 10 commits of an injected change):

``ctx_local_shift``
    ``|median(x[p : p + r]) - median(x[p - r : p])| / s``, ``s`` the robust
    scale of the ``r`` commits before ``p``
    (:func:`triage.features.level_shift.robust_scale`, floored by the series'
    resolution as the ``pair_*`` measures are): the level shift at ``p``
    measured on fixed windows of :data:`RADIUS` commits that ignore the
    neighbouring candidates, so duplicates are measured alike.
``ctx_dominance``
    ``ctx_local_shift`` divided by the largest ``ctx_local_shift`` of the
    run's candidates within ``RADIUS`` commits (itself included): 1 for the
    strongest candidate of a cluster, less for the ones it dominates.
``ctx_neighbours``
    How many other candidates of the run lie within ``RADIUS`` commits.

How the candidate's shift stands in its own series (real histories wander,
carry outliers and bimodal noise, so a shift that is large in units of the
ten commits before it may still be ordinary for that series):

``ctx_shift_pct``
    The share of the series' commits whose fixed-window shift (the
    ``ctx_local_shift`` measure at every commit with :data:`RADIUS` commits on
    each side, :func:`shift_profile`) is at most the candidate's.
``ctx_shift_vs_typical``
    ``ctx_local_shift`` over the median of that profile.
``ctx_shift_diffnoise``
    ``|median(After) - median(Pre)|`` on the fixed windows over the series'
    commit-to-commit noise, ``1.4826 MAD(diff(x)) / sqrt(2)``: a noise level
    that a wandering level does not inflate.
``ctx_shift_vs_global``
    The same difference over the whole series' ``1.4826 MAD``.
``ctx_far_shift``
    ``ctx_local_shift`` on windows of :data:`FAR` commits.
``ctx_persist_after``
    ``(median(x[p + r : p + 2r]) - median(Pre)) / (median(After) - median(Pre))``:
    about 1 when the new level holds for the next ``r`` commits, about 0 for
    an excursion that returns (NaN with fewer than 3 such commits).
``ctx_pre_drift``
    The same ratio for ``x[p - 2r : p - r]``: about 0 when the old level was
    flat, negative on a trend through ``p``.
``ctx_after_seen_before``
    ``min |median(w) - median(After)| / |median(After) - median(Pre)|`` over
    the ``r``-commit windows ``w`` that end before ``p - r``: about 0 when the
    series already sat at the new level earlier (a bimodal series flipping
    back, a shared runner's slower machine again), large for a new level.
``ctx_pre_returns``
    ``min |median(w) - median(Pre)| / |median(After) - median(Pre)|`` over the
    windows that start at ``p + 2r`` or later: about 0 when the old level
    comes back later.

These read commits after the candidate (up to ``FAR``), as the candidate's
After window does; none needs a confirmed change point. They were chosen on
the real-data benchmark's development projects only (leave one of
django-asv, emg3d-bench and rhai out; BENCHMARKS.md, "Real data").
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from triage.core.noise import MAD_SCALE, diff_noise, robust_sd
from triage.features.level_shift import resolution, robust_scale

#: Half-width (commits) of the fixed windows and of the neighbourhood.
RADIUS = 10
#: Window length (commits) of ``ctx_far_shift``.
FAR = 30
PREFIX = "ctx_"
CONTEXT_COLUMNS: tuple[str, ...] = (
    "ctx_local_shift",
    "ctx_dominance",
    "ctx_neighbours",
    "ctx_shift_pct",
    "ctx_shift_vs_typical",
    "ctx_shift_diffnoise",
    "ctx_shift_vs_global",
    "ctx_far_shift",
    "ctx_persist_after",
    "ctx_pre_drift",
    "ctx_after_seen_before",
    "ctx_pre_returns",
)
#: The series-relative columns (``ctx_shift_pct`` on), the second group above.
SERIES_COLUMNS: tuple[str, ...] = CONTEXT_COLUMNS[3:]
#: The columns that measure how large the candidate's shift is, on its own or
#: against its neighbours and its series (see ``SHIFT_SIZE_COLUMNS`` in
#: :mod:`triage.features.level_shift`).
SHIFT_SIZE_COLUMNS: tuple[str, ...] = (
    "ctx_local_shift",
    "ctx_dominance",
    "ctx_shift_pct",
    "ctx_shift_vs_typical",
    "ctx_shift_diffnoise",
    "ctx_shift_vs_global",
    "ctx_far_shift",
)
#: Fewest commits a later / earlier window needs for the persistence ratios.
_MIN_RATIO_POINTS = 3
#: Commits from a candidate on (itself included) that ``ctx_persist_after`` needs; with
#: fewer (the newest candidates of a series) it is NaN, which the bundled scoring model
#: learnt to read as "false" (every training change lies >= 20 commits from an end).
HOLD_HORIZON = RADIUS + _MIN_RATIO_POINTS


def local_shift(values: np.ndarray, p: int, radius: int = RADIUS, res: float = 0.0) -> float:
    """The robust level shift at ``p`` on fixed windows of ``radius`` commits (NaN without 2 before it)."""
    x = np.asarray(values, dtype=np.float64)
    pre = x[max(0, p - radius) : p]
    after = x[p : p + radius]
    if pre.size < 2 or after.size < 1:
        return float("nan")
    mp = float(np.median(pre))
    return abs(float(np.median(after)) - mp) / robust_scale(pre, mp, res)


def _window_stats(x: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Median and 1.4826 MAD of ``x[i : i + radius]`` for every ``i``; each shape (max(0, n - radius + 1),)."""
    if x.size < radius:
        return np.zeros(0), np.zeros(0)
    windows = sliding_window_view(x, radius)
    med = np.median(windows, axis=1)
    return med, MAD_SCALE * np.median(np.abs(windows - med[:, None]), axis=1)


def _profile(med: np.ndarray, mad: np.ndarray, radius: int, res: float) -> np.ndarray:
    """:func:`shift_profile` from the window statistics of :func:`_window_stats`."""
    if med.size < radius + 2:  # fewer than 2 * radius + 1 commits
        return np.zeros(0)
    p = np.arange(radius, med.size)
    before, after = med[p - radius], med[p]
    scale = np.maximum(np.maximum(mad[p - radius], res), np.maximum(1e-9 * np.abs(before), 1e-300))
    return np.abs(after - before) / scale


def shift_profile(values: np.ndarray, radius: int = RADIUS, res: float = 0.0) -> np.ndarray:
    """:func:`local_shift` at every commit ``p`` with ``radius`` commits on each side.

    Returns
    -------
    ndarray of float64, shape (n_commits - 2 * radius + 1,), empty below 2 * radius + 1 commits
        Entry ``i`` is the shift at commit ``p = radius + i``.
    """
    return _profile(*_window_stats(np.asarray(values, dtype=np.float64), radius), radius, res)


def _step_ratio(x: np.ndarray, lo: int, hi: int, m_pre: float, step: float) -> float:
    """``(median(x[lo:hi]) - m_pre) / step``; NaN for a short window or no step."""
    part = x[max(0, lo) : max(0, hi)]
    if part.size < _MIN_RATIO_POINTS or step == 0:
        return float("nan")
    return (float(np.median(part)) - m_pre) / step


def _series_columns(x: np.ndarray, idx: np.ndarray, radius: int, res: float, shift: np.ndarray) -> np.ndarray:
    """The series-relative columns (:data:`SERIES_COLUMNS`) of candidates ``idx``."""
    out = np.full((idx.size, len(SERIES_COLUMNS)), np.nan)
    med, mad = _window_stats(x, radius)
    profile = np.sort(_profile(med, mad, radius, res))
    typical = float(np.median(profile)) if profile.size else float("nan")
    floor = max(res, 1e-300)
    commit_noise = max(diff_noise(x), floor)
    global_noise = max(robust_sd(x), floor)
    for r, p in enumerate(idx):
        pre, after = x[max(0, p - radius) : p], x[p : p + radius]
        if pre.size < 2 or after.size < 1:
            continue
        m_pre = float(np.median(pre))
        m_after = float(np.median(after))
        step = m_after - m_pre
        if profile.size:
            out[r, 0] = np.searchsorted(profile, shift[r], side="right") / profile.size
            out[r, 1] = shift[r] / typical if typical > 0 else np.nan
        out[r, 2] = abs(step) / commit_noise
        out[r, 3] = abs(step) / global_noise
        out[r, 4] = local_shift(x, int(p), FAR, res)
        out[r, 5] = _step_ratio(x, p + radius, p + 2 * radius, m_pre, step)
        out[r, 6] = _step_ratio(x, p - 2 * radius, p - radius, m_pre, step)
        if step != 0:
            earlier = med[: max(0, p - 2 * radius + 1)]
            later = med[p + 2 * radius :]
            if earlier.size:
                out[r, 7] = float(np.min(np.abs(earlier - m_after))) / abs(step)
            if later.size:
                out[r, 8] = float(np.min(np.abs(later - m_pre))) / abs(step)
    return out


def context_block(values: np.ndarray, indices: np.ndarray, radius: int = RADIUS) -> np.ndarray:
    """The :data:`CONTEXT_COLUMNS` of one run's candidates in one series.

    Parameters
    ----------
    values : ndarray of float, shape (n_commits,)
    indices : ndarray of int, shape (k,)
        The run's candidates in this series (any order, unique).
    radius : int
        Half-width of the windows and of the neighbourhood, in commits.

    Returns
    -------
    ndarray of float64, shape (k, len(CONTEXT_COLUMNS))
    """
    raw = np.asarray(indices)
    x = np.asarray(values, dtype=np.float64)
    if raw.size and (raw.dtype.kind not in "iuf" or not np.all(np.isfinite(raw) & (raw == np.round(raw)))):
        raise ValueError(f"candidate indices must be whole commit positions, got {raw[:5].tolist()!r}")
    idx = raw.astype(np.int64)
    outside = idx[(idx < 0) | (idx >= len(x))]
    if outside.size:
        # An index past the series (or -1) gave a row of NaN, silently; 30.7 was read as 30.
        raise ValueError(f"candidate index {int(outside[0])} outside the series of {len(x)} commits")
    out = np.empty((idx.size, len(CONTEXT_COLUMNS)))
    if idx.size == 0:
        return out
    res = resolution(x)
    shift = np.array([local_shift(x, int(p), radius, res) for p in idx])
    known = np.nan_to_num(shift, nan=0.0)
    for r, p in enumerate(idx):
        close = np.abs(idx - p) <= radius
        strongest = float(known[close].max())
        out[r, 0] = shift[r]
        out[r, 1] = known[r] / strongest if strongest > 0 else 1.0
        out[r, 2] = float(close.sum() - 1)
    out[:, 3:] = _series_columns(x, idx, radius, res, shift)
    return out
