"""Training rows for an online model (window K): the per-commit question.

The online loop (Bauer et al., ICPE 2022, Algorithm 1) asks the model about
*every* new commit, but triaged candidates are already suspicious commits: a
window-0 model that only ever saw candidates calls roughly one ordinary noisy
commit in six a change point (measured while building the online loop, see
``tests/test_online_support.py``). So the online model also learns from
ordinary commits:

* positives: the confirmed change points (``true_positive`` labels), or the
  ground-truth change points of synthetic data when ``use_truth`` is set;
* negatives: the ``false_positive`` candidates and ``ordinary_per_series``
  random commits per series that no detector flagged;
* Pre of every row is bounded by the positives, as the loop bounds it by the
  change points it found; After is the commit and the K commits after it
  (window K, the loop's confirmation delay; K = 0: the commit alone).
* With K > 0, ordinary commits are drawn from those more than K commits away
  from every positive: the K commits before a change see part of the new
  level in their After window and the K after it a Pre the loop has just
  emptied, so their answer is a matter of where exactly the alarm lands (the
  TCPDBench margin), not of whether there is a change; they are left out
  rather than taught as "no change".

With K > 0 the rows also carry the scale-free level-shift measures ``pair_*``
(:mod:`triage.features.level_shift`), computed as the loop computes them
(:func:`triage.features.incremental.online_pair_features`: Pre's last 30
commits and After).

Untriaged candidates are left out: nobody knows their answer.

A known difference from the loop's rows: the eight characteristics the
incremental state bounds (``crossing_points``, ``entropy``, ``flat_spots``,
``max_kl_shift``, ``nonlinearity``, ``arch_lm``, ``unitroot_kpss``,
``unitroot_pp``: :data:`triage.features.incremental.BOUNDED`) are computed
here on all of Pre, and by the loop on Pre's last 64 commits
(``DEFAULT_HORIZON``). The rows are the same while Pre holds at most 64
commits; beyond that those columns differ. Measured by a walkthrough
(twenty-first session) on 40 real histories (21,903 commits), the bundled
loop with its own rows against rows with Pre's bounded columns on all of
Pre: 75 against 73 alarms, 68 in common. Computing them here on the last
64 commits would retrain the bundled online models; not done yet.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.history import Dataset
from triage.features.extract import extract_features
from triage.features.incremental import online_pair_features
from triage.features.level_shift import PAIR_COLUMNS
from triage.features.windows import window_bounds

#: Unflagged commits per series added as negatives unless told otherwise (``train --ordinary-per-series``).
ORDINARY_PER_SERIES = 10


def online_matrix(
    dataset: Dataset,
    *,
    ordinary_per_series: int = ORDINARY_PER_SERIES,
    window: int = 0,
    pairs: bool | None = None,
    use_truth: bool = False,
    seed: int = 0,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """The window-K feature matrix for training an online model.

    Parameters
    ----------
    dataset : histories with triage labels (and ground truth if ``use_truth``)
    ordinary_per_series : int >= 0
        Unflagged commits sampled per series as negatives (0 = candidates only,
        the paper's training data).
    window : K >= 0, the confirmation delay the model is for (After = the
        commit and the K after it).
    pairs : add the ``pair_*`` columns; None = when ``window`` > 0 (with
        After = one commit they describe a spike as a shift: on the ``small``
        preset a window-0 loop with them fired on 129 commits for 26 changes)
    use_truth : take the positives from ``History.true_change`` (synthetic data)
        instead of the ``true_positive`` labels.
    seed : seed of the sampling of ordinary commits
    n_jobs : processes for the feature extraction

    Returns
    -------
    DataFrame in the feature-matrix contract (ARCHITECTURE.md); ``label`` is
    ``true_positive`` for positives and ``false_positive`` for every negative,
    ordinary commits included.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"window must be an integer >= 0, got {window!r}")
    if ordinary_per_series < 0:
        raise ValueError(f"ordinary_per_series must be >= 0, got {ordinary_per_series}")
    rng = np.random.default_rng(seed)
    picks: dict[str, list[int]] = {}
    positives: dict[str, np.ndarray] = {}
    for h in dataset:
        if use_truth:
            if h.true_change is None:
                raise ValueError(f"series {h.series_id!r} has no ground truth (true_change); use its labels")
            pos = np.asarray(h.true_change_points(), dtype=np.int64)
        else:
            pos = np.asarray(h.confirmed(), dtype=np.int64)
        false_alerts = np.flatnonzero(h.labels == labels.FALSE_POSITIVE)
        flagged = np.union1d(pos, h.candidates())
        # With K = 0 the commit after a change point has an empty Pre: the loop never asks about it
        # (min_pre), and training left it out as not scorable, counted as a triaged alert.
        near = (pos[:, None] + np.arange(-window, window + 1)[None, :]).ravel() if window else np.r_[pos, pos + 1]
        unflagged = np.setdiff1d(np.arange(1, len(h)), np.union1d(flagged, near))
        ordinary = rng.choice(unflagged, min(ordinary_per_series, unflagged.size), replace=False)
        rows = np.unique(np.concatenate([pos, false_alerts, ordinary]).astype(np.int64))
        if rows.size:
            picks[h.series_id] = rows.tolist()
            positives[h.series_id] = pos
    if not picks:
        raise ValueError("no confirmed change points or false alerts to learn from")
    if not any(p.size for p in positives.values()):
        # Else the ordinary commits added as negatives reached the one-class check, which said
        # "only false_positive candidates" of a file that had no labelled alert at all.
        what = "true change" if use_truth else "confirmed change point (label true_positive)"
        raise ValueError(f"no {what} to learn from: the ordinary commits added with a fixed --window "
                         "are negatives only")
    matrix = extract_features(dataset, candidates=picks, window=window, change_points=positives, n_jobs=n_jobs)
    is_positive = np.zeros(len(matrix), dtype=bool)
    for sid, group in matrix.groupby("series_id", sort=False).groups.items():
        is_positive[matrix.index.get_indexer(group)] = np.isin(matrix.loc[group, "index"], positives[sid])
    matrix["label"] = np.where(is_positive, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE)
    if pairs or (pairs is None and window > 0):
        matrix = pd.concat([matrix, _pair_columns(dataset, matrix, positives, window)], axis=1)
    return matrix


def _pair_columns(dataset: Dataset, matrix: pd.DataFrame, positives: dict[str, np.ndarray], window: int) -> pd.DataFrame:
    """The ``pair_*`` columns of each row, with the same Pre / After windows as its other features."""
    out = np.full((len(matrix), len(PAIR_COLUMNS)), np.nan)
    by_id = {h.series_id: h for h in dataset}
    sids = matrix["series_id"].to_numpy()
    idx = matrix["index"].to_numpy()
    for r in range(len(matrix)):
        h = by_id[sids[r]]
        (a, b), (c, d) = window_bounds(int(idx[r]), len(h), positives.get(sids[r]), window)
        out[r] = online_pair_features(h.values[a:b], h.values[c:d])
    return pd.DataFrame(out, columns=list(PAIR_COLUMNS), index=matrix.index)
