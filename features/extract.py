"""The feature matrix: one row per (series, candidate) (Bauer et al., ICPE 2022).

:func:`extract_features` builds the matrix the ``training`` package consumes
(column contract in ``ARCHITECTURE.md``); :func:`candidate_features` is the
same computation for one candidate of one series, for online and
batch-labelling code that has a value array rather than a
:class:`~triage.core.history.Dataset`.

Which windows: :mod:`triage.features.windows`. Which characteristics and what they
give on empty, short and constant windows: :mod:`triage.features.catalogue`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.history import Dataset, History
from triage.features import candidate_context, catalogue, level_shift, windows
from triage.features.row import RowLayout, feature_row

Implementation = Literal["fast", "reference"]
IMPLEMENTATIONS: tuple[str, ...] = ("fast", "reference")


def _implementation(name: str):
    if name == "fast":
        from triage.features import fast

        return fast
    if name == "reference":
        from triage.features import reference

        return reference
    raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {name!r}")


def matrix_columns(names: Iterable[str] | None = None) -> list[str]:
    """All columns of the feature matrix: metadata, then :func:`catalogue.feature_columns`."""
    return list(catalogue.METADATA_COLUMNS) + catalogue.feature_columns(names)


def _appended_columns(pair: bool, context: bool = False) -> list[str]:
    return (list(level_shift.PAIR_COLUMNS) if pair else []) + (list(candidate_context.CONTEXT_COLUMNS) if context else [])


def _layout(names: Iterable[str] | None) -> RowLayout:
    """Which characteristics go where in a feature row (resolved once per call)."""
    return RowLayout(catalogue.feature_columns(names))


def _row(values: np.ndarray, pre: windows.Bounds, after: windows.Bounds, layout: RowLayout, impl) -> np.ndarray:
    pre_x = values[pre[0] : pre[1]]
    after_x = values[after[0] : after[1]]
    return feature_row(
        layout,
        impl.window_characteristics(pre_x) if layout.needs_pre else None,
        impl.window_characteristics(after_x) if layout.needs_after else None,
        catalogue.normalised_moments(pre_x, after_x) if layout.needs_norm else None,
    )


def _check_finite(values: np.ndarray, start: int, stop: int, series_id: str, p: int) -> None:
    part = values[start:stop]
    bad = ~np.isfinite(part)
    if bad.any():
        j = start + int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"series {series_id!r}, candidate index {p}: its Pre/After windows "
            f"[{start}, {stop}) hold a non-finite value ({values[j]!r}) at index {j}"
        )


def candidate_features(
    values: np.ndarray,
    p: int,
    change_points: Iterable[int] | np.ndarray | None = None,
    window: str | int = "adaptive",
    *,
    names: Iterable[str] | None = None,
    implementation: Implementation = "fast",
    series_id: str = "<values>",
) -> np.ndarray:
    """Feature vector of one candidate.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        The series, one value per commit.
    p : int
        Candidate index, ``0 <= p < n``.
    change_points : iterable of int or None
        Confirmed change points (indices); ``None`` = none.
    window : ``"adaptive"`` or int >= 0
        After window (see :mod:`triage.features.windows`).
    names : iterable of str or None
        Characteristics to compute (``None`` = all).
    implementation : ``"fast"`` (default) or ``"reference"``
    series_id : str
        Only used in error messages.

    Returns
    -------
    ndarray of float64, shape (len(catalogue.feature_columns(names)),)
        In :func:`triage.features.catalogue.feature_columns` order; all finite.

    Raises
    ------
    ValueError
        Bad ``p``, ``window`` or change points, or a NaN/inf in the windows.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        # A table reached the compiled kernels: a numba TypingError, not the caller's mistake.
        raise ValueError(f"series {series_id!r}: values must be one value per commit, shape (n,), got shape {values.shape}")
    pre, after = windows.window_bounds(p, len(values), change_points, window)
    _check_finite(values, pre[0], after[1], series_id, int(p))
    return _row(values, pre, after, _layout(names), _implementation(implementation))


def _series_block(
    history: History,
    indices: np.ndarray,
    cps: np.ndarray,
    window: str | int,
    names: Iterable[str] | None,
    implementation: str,
    honest: dict | None = None,
) -> np.ndarray:
    """Feature rows of one series' candidates, shape (len(indices), width).

    ``honest`` (``{"candidate": .., "max_len": .., "pair": .., "context": ..}``):
    ``candidate`` switches to candidate-bounded windows
    (:func:`windows.candidate_bounds`, bounded by the other ``indices``);
    ``pair`` appends the pair block, ``context`` the candidate-context block
    (:mod:`triage.features.candidate_context`, over ``indices``).
    """
    layout = _layout(names)
    impl = _implementation(implementation)
    values = history.values
    pair = bool(honest and honest.get("pair"))
    context = bool(honest and honest.get("context"))
    n_pair = len(level_shift.PAIR_COLUMNS) if pair else 0
    out = np.empty((len(indices), layout.width + n_pair + (len(candidate_context.CONTEXT_COLUMNS) if context else 0)))
    all_bounds = []
    for r, p in enumerate(indices):
        if honest is not None and honest["candidate"]:
            pre, after = windows.candidate_bounds(int(p), len(values), indices, cps, max_len=honest["max_len"])
        else:
            pre, after = windows.window_bounds(int(p), len(values), cps, window)
        _check_finite(values, pre[0], after[1], history.series_id, int(p))
        out[r, : layout.width] = _row(values, pre, after, layout, impl)
        all_bounds.append((pre, after))
    if pair:
        out[:, layout.width : layout.width + n_pair] = level_shift.pair_block(values, all_bounds)
    if context:
        out[:, layout.width + n_pair :] = candidate_context.context_block(values, np.asarray(indices))
    return out


def _chunk_block(jobs, window, names, implementation, honest=None) -> list[np.ndarray]:
    return [_series_block(h, idx, cps, window, names, implementation, honest) for h, idx, cps in jobs]


def _candidate_indices(
    dataset: Dataset, candidates: Mapping[str, Iterable[int]] | Iterable[tuple[str, int]] | None
) -> dict[str, np.ndarray]:
    if candidates is None:
        return {h.series_id: h.candidates() for h in dataset}
    pairs: Iterable[tuple[str, int]]
    if isinstance(candidates, Mapping):
        pairs = ((sid, p) for sid, ps in candidates.items() for p in ps)
    else:
        pairs = candidates
    wanted: dict[str, list[int]] = {}
    for sid, p in pairs:
        if sid not in dataset:
            raise KeyError(f"candidates name unknown series {sid!r}")
        n = len(dataset[sid])
        if isinstance(p, bool) or int(p) != p or not 0 <= int(p) < n:
            raise ValueError(
                f"series {sid!r}: candidate index {p!r} outside the series of {n} commits"
            )
        wanted.setdefault(sid, []).append(int(p))
    # Dataset order, ascending index: the row order does not depend on how
    # the caller listed the candidates.
    return {
        h.series_id: np.unique(np.asarray(wanted[h.series_id], dtype=np.int64))
        for h in dataset
        if h.series_id in wanted
    }


def _confirmed(history: History, change_points: Mapping[str, Iterable[int]] | None) -> np.ndarray:
    if change_points is not None and history.series_id in change_points:
        return windows.confirmed_array(change_points[history.series_id], len(history))
    return history.confirmed().astype(np.int64)


def _chunks(jobs: list, n_chunks: int) -> list[list]:
    """Split series jobs into about ``n_chunks`` groups of similar work (sum of window lengths)."""
    if n_chunks <= 1 or len(jobs) <= 1:
        return [jobs]
    cost = np.array([len(h) * max(len(idx), 1) for h, idx, _ in jobs], dtype=float)
    bounds = np.searchsorted(
        np.cumsum(cost), np.linspace(0, cost.sum(), n_chunks + 1)[1:-1], side="right"
    )
    parts = np.split(np.arange(len(jobs)), bounds)
    return [[jobs[i] for i in part] for part in parts if len(part)]


def extract_features(
    dataset: Dataset,
    *,
    candidates: Mapping[str, Iterable[int]] | Iterable[tuple[str, int]] | None = None,
    window: str | int = "adaptive",
    names: Iterable[str] | None = None,
    change_points: Mapping[str, Iterable[int]] | None = None,
    n_jobs: int = 1,
    implementation: Implementation = "fast",
    candidate_windows: bool = False,
    max_len: int = windows.CANDIDATE_MAX_LEN,
    pair: bool = False,
    context: bool = False,
) -> pd.DataFrame:
    """Feature matrix of many candidates.

    Parameters
    ----------
    dataset : Dataset
    candidates : mapping series_id -> indices, iterable of (series_id, index), or None
        Which commits to describe. ``None`` = every labelled candidate
        (non-empty label) of every series.
    window : ``"adaptive"`` or int >= 0
        After window (see :mod:`triage.features.windows`).
    names : iterable of str or None
        Characteristics (:data:`catalogue.CHARACTERISTICS` and ``norm_mean``,
        ``norm_sd``); ``None`` = all.
    change_points : mapping series_id -> indices, or None
        Confirmed change points per series; a series not in the mapping (or
        all series when ``None``) uses its ``true_positive`` labels.
    n_jobs : int
        Processes (joblib, loky) over chunks of series; 1 = in process,
        -1 = all cores.
    implementation : ``"fast"`` (default) or ``"reference"``
    candidate_windows : bool
        Honest windows for fresh candidates (:func:`windows.candidate_bounds`):
        Pre and After stop at the other candidates of the same series (those
        described, i.e. one detector run's) and at confirmed change points,
        and hold at most ``max_len`` commits; ``window`` must be adaptive.
    max_len : int
        The longest candidate-bounded window.
    pair : bool
        Append the scale-free :data:`level_shift.PAIR_COLUMNS`.
    context : bool
        Append :data:`candidate_context.CONTEXT_COLUMNS`: how each candidate
        stands among the other candidates described in its series (one
        detector run's).

    Returns
    -------
    DataFrame, shape (n_candidates, 6 + n_features)
        Columns :func:`matrix_columns` (``names``): ``series_id`` (str),
        ``commit`` (str), ``index`` (int64), ``timestamp`` (datetime64[ns],
        NaT when unknown), ``label``, ``truth_label`` (str, ``""`` when
        unknown), then float64 features, then the ``pair_*`` columns with
        ``pair`` and the ``ctx_*`` columns with ``context``. Rows: dataset
        order, ascending index within a series. Every catalogue feature is
        finite; a ``pair_*`` or ``ctx_*`` value is NaN where it is undefined
        (e.g. ``pair_rel_change`` when Pre's median is 0).

    Raises
    ------
    ValueError
        A NaN/inf inside a candidate's windows (the message names the series
        and the index), a bad window, change point or candidate index.
    KeyError
        ``candidates`` names a series the dataset lacks.
    """
    _implementation(implementation)  # fail early on a bad name
    layout = _layout(names)
    if isinstance(window, str) and window != windows.ADAPTIVE:
        raise ValueError(f"window must be {windows.ADAPTIVE!r} or an integer >= 0, got {window!r}")
    if candidate_windows and window != windows.ADAPTIVE:
        raise ValueError("candidate-bounded windows bound After themselves: leave window adaptive")
    honest = (
        {"candidate": candidate_windows, "max_len": int(max_len), "pair": pair, "context": context}
        if candidate_windows or pair or context
        else None
    )
    wanted = _candidate_indices(dataset, candidates)
    jobs = [
        (dataset[sid], idx, _confirmed(dataset[sid], change_points))
        for sid, idx in wanted.items()
        if len(idx)
    ]

    if n_jobs == 1 or len(jobs) <= 1:
        blocks = _chunk_block(jobs, window, names, implementation, honest)
    else:
        from joblib import Parallel, delayed, effective_n_jobs

        workers = effective_n_jobs(n_jobs)
        # A few chunks per worker evens out series of different lengths.
        chunks = _chunks(jobs, 4 * workers)
        results = Parallel(n_jobs=workers)(
            delayed(_chunk_block)(chunk, window, names, implementation, honest) for chunk in chunks
        )
        blocks = [b for r in results for b in r]

    meta = _metadata(jobs)
    columns = layout.columns + _appended_columns(pair, context)
    feats = np.vstack(blocks) if blocks else np.empty((0, len(columns)))
    frame = pd.concat([meta, pd.DataFrame(feats, columns=columns, index=meta.index)], axis=1)
    return frame


def _metadata(jobs: list) -> pd.DataFrame:
    parts = []
    for h, idx, _ in jobs:
        k = len(idx)
        ts = (
            h.timestamps[idx]
            if h.timestamps is not None
            else np.full(k, np.datetime64("NaT"), dtype="datetime64[ns]")
        )
        truth = (
            h.truth_label[idx] if h.truth_label is not None else np.full(k, labels.NONE, dtype=object)
        )
        parts.append(
            pd.DataFrame(
                {
                    "series_id": np.full(k, h.series_id, dtype=object),
                    "commit": h.commits[idx].astype(object),
                    "index": idx.astype(np.int64),
                    "timestamp": pd.to_datetime(ts),
                    "label": h.labels[idx].astype(object),
                    "truth_label": np.asarray(truth, dtype=object),
                }
            )
        )
    if not parts:
        return pd.DataFrame(
            {
                "series_id": pd.Series(dtype=object),
                "commit": pd.Series(dtype=object),
                "index": pd.Series(dtype=np.int64),
                "timestamp": pd.Series(dtype="datetime64[ns]"),
                "label": pd.Series(dtype=object),
                "truth_label": pd.Series(dtype=object),
            }
        )
    return pd.concat(parts, ignore_index=True)
