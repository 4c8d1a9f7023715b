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

All three depend on the run's candidates in the same series only, so a fresh
candidate file gets them without any confirmed change point.
"""

from __future__ import annotations

import numpy as np

from triage.features.level_shift import resolution, robust_scale

#: Half-width (commits) of the fixed windows and of the neighbourhood.
RADIUS = 10
PREFIX = "ctx_"
CONTEXT_COLUMNS: tuple[str, ...] = ("ctx_local_shift", "ctx_dominance", "ctx_neighbours")


def local_shift(values: np.ndarray, p: int, radius: int = RADIUS, res: float = 0.0) -> float:
    """The robust level shift at ``p`` on fixed windows of ``radius`` commits (NaN without 2 before it)."""
    x = np.asarray(values, dtype=np.float64)
    pre = x[max(0, p - radius) : p]
    after = x[p : p + radius]
    if pre.size < 2 or after.size < 1:
        return float("nan")
    mp = float(np.median(pre))
    return abs(float(np.median(after)) - mp) / robust_scale(pre, mp, res)


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
    idx = np.asarray(indices, dtype=np.int64)
    out = np.empty((idx.size, len(CONTEXT_COLUMNS)))
    if idx.size == 0:
        return out
    res = resolution(values)
    shift = np.array([local_shift(values, int(p), radius, res) for p in idx])
    known = np.nan_to_num(shift, nan=0.0)
    for r, p in enumerate(idx):
        close = np.abs(idx - p) <= radius
        strongest = float(known[close].max())
        out[r, 0] = shift[r]
        out[r, 1] = known[r] / strongest if strongest > 0 else 1.0
        out[r, 2] = float(close.sum() - 1)
    return out
