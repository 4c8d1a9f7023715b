"""From a feature matrix to learning arrays: X, y, groups, a time order and a data hash.

The feature matrix is the contract between :mod:`features` and
:mod:`training` (see ARCHITECTURE.md): one row per (series, candidate),
metadata columns ``series_id, commit, index, timestamp, label, truth_label``
and feature columns ``pre_<name>``, ``after_<name>``, ``norm_mean_pre``,
``norm_mean_after``, ``norm_sd_pre``, ``norm_sd_after`` (names from
:mod:`features.catalogue`). Feature selection and training both read it
through this module, so both see the same rows, columns and values.

Feature columns
    The contract's: ``pre_*``, ``after_*``, the four ``norm_*`` columns, the
    scale-free pair measures ``pair_*`` (:mod:`triage.features.level_shift`),
    the candidate context ``ctx_*`` (:mod:`triage.features.candidate_context`)
    and the detector's own fields ``det_*`` (``det_score_rank``: the score the
    candidate file carried, ranked among the file's). Any other column
    (metadata, a note) is not a feature.
Values
    Float64. NaN is kept (a characteristic undefined on a short window; every
    model here handles missing values). Infinities become NaN: an infinite
    characteristic (a ratio over a constant window, in a matrix built
    elsewhere) says no more than "undefined", and prediction
    (:class:`training.classifier.TriageClassifier`, the compiled predictor,
    the online loop) maps them the same way, so a model is trained, selected
    and applied on the same values.
Target
    ``label == "true_positive"`` (1, a real change a sheriff confirmed)
    against ``label == "false_positive"`` (0). Candidates nobody triaged
    (``not_triaged``, ``under_investigation``) carry no target and are left
    out; they are what a trained model later labels.
Not scorable
    A triaged row :func:`not_scorable` (an alert with no commit before it in
    its window: at its series' first commit or right after a confirmed change
    point) is left out too: ``triage label`` and ``triage score`` never ask a
    model about such an alert (:func:`triage.inference.decide`), and its
    ``pre_*`` / ``norm_*`` columns hold only the catalogue's fill values for an
    empty window. :attr:`TrainingData.left_out` counts them by label.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.errors import InputError
from triage.features.candidate_context import PREFIX as CONTEXT_PREFIX
from triage.features.catalogue import CHARACTERISTICS, METADATA_COLUMNS, NORM_COLUMNS
from triage.features.catalogue import feature_columns as catalogue_columns
from triage.features.feature_sets import read_feature_set
from triage.features.level_shift import PREFIX as PAIR_PREFIX

#: Prefix of a detector's own fields used as features (``det_score_rank``).
DETECTOR_PREFIX = "det_"

#: Class names in ``classes_`` order: y = 1 is the positive class (a real change).
CLASS_NAMES: tuple[str, str] = (labels.FALSE_POSITIVE, labels.TRUE_POSITIVE)

#: Every user of :func:`training_data` splits by series (the grouped hold-out,
#: grouped cross-validation in selection, the classifier's validation split).
#: Rows standing in for series would put a series' candidates on both sides of
#: a split, which overstates every score, so a matrix without the column is refused.
MISSING_SERIES = (
    "feature matrix has no 'series_id' column: the grouped hold-out and cross-validation keep each series' "
    "candidates on one side and need it (without it each row would be its own series, and held-out scores "
    "would be overstated); add each candidate's series as 'series_id' (a matrix built from --data has it)"
)

#: The feature column holding the Pre window's length (commits before the alert in its window).
PRE_LENGTH = "pre_series_length"
#: How a count of :func:`not_scorable` alerts is explained ("3 not scorable: ..."), in every command's summary.
NOT_SCORABLE_WHY = "no commit before the alert in its window"

# ``pre_`` and ``after_``, as the catalogue spells its per-window columns.
_SIDE_PREFIXES: tuple[str, ...] = tuple(
    dict.fromkeys(c.partition("_")[0] + "_" for c in catalogue_columns(CHARACTERISTICS))
)


def is_feature_column(name: object) -> bool:
    """True for a contract feature column (``pre_*``, ``after_*``, ``norm_*``, ``pair_*``, ``ctx_*``, ``det_*``)."""
    return isinstance(name, str) and (
        name.startswith((*_SIDE_PREFIXES, PAIR_PREFIX, CONTEXT_PREFIX, DETECTOR_PREFIX)) or name in NORM_COLUMNS
    )


def feature_columns(matrix: pd.DataFrame) -> list[str]:
    """The contract feature columns of ``matrix``, in its column order."""
    return [c for c in matrix.columns if is_feature_column(c)]


def resolve_features(features: str | Path | Sequence[str] | None, matrix: pd.DataFrame | None) -> list[str] | None:
    """The feature columns to use: a list as given, a feature-set file read, or all of ``matrix``'s."""
    if features is None:
        return feature_columns(matrix) if matrix is not None else None
    if isinstance(features, (str, Path)):
        names = read_feature_set(features)
        # The matrix's metadata are no features: "index" (the candidate's position) or
        # "truth_label" would be learned from silently, "label" blamed on the data.
        other = [n for n in names if n in METADATA_COLUMNS]
        if other:
            raise InputError(features, None, f"names metadata column(s) that are no features: {', '.join(other)} "
                             "(features are pre_*, after_*, norm_*, pair_*, ctx_* and det_* columns)")
        return names
    names = [str(f) for f in features]
    if not names:
        raise InputError(None, None, "the feature list is empty")
    return names


def check_columns(matrix: pd.DataFrame, columns: Sequence[str], source: str | None = None) -> None:
    """Raise :class:`InputError` naming every requested column ``matrix`` lacks."""
    missing = [c for c in columns if c not in matrix.columns]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        raise InputError(source, None, f"feature matrix lacks column(s) {shown}")


def feature_array(matrix: pd.DataFrame, columns: Sequence[str], source: str | None = None) -> np.ndarray:
    """``matrix[columns]`` as float64, shape (n_rows, n_columns); infinities become NaN."""
    check_columns(matrix, columns, source)
    try:
        X = np.array(matrix[list(columns)].to_numpy(dtype=np.float64, na_value=np.nan), copy=True)
    except (TypeError, ValueError) as exc:
        raise InputError(source, None, _not_numeric(matrix, columns) or f"feature columns must be numeric: {exc}") from None
    X[~np.isfinite(X)] = np.nan
    return X


def _not_numeric(matrix: pd.DataFrame, columns: Sequence[str]) -> str | None:
    """The first feature cell that is no number, as "column C, row R: value V ..." (None if none is found).

    The bare message ("could not convert string to float: 'x'") named neither the
    column nor the row among dozens of features.
    """
    for column in columns:
        cells = matrix[column]
        if isinstance(cells, pd.DataFrame):  # a column name given twice
            continue
        numbers = pd.to_numeric(cells, errors="coerce")
        bad = numbers.isna() & cells.notna()
        if bad.any():
            position = int(np.flatnonzero(bad.to_numpy())[0])
            return (f"feature column {column!r} must be numeric: row {position + 1} (of the matrix, "
                    f"counting from 1) holds {cells.iloc[position]!r}")
    return None


def not_scorable(matrix: pd.DataFrame) -> np.ndarray:
    """Which rows of a feature matrix no model can judge: an alert with an empty Pre window.

    Pre is empty for an alert at its series' first commit and, as Pre starts
    after the previous confirmed change point (adaptive windows, and the
    candidate-bounded windows of ``triage score``), for an alert right after
    a confirmed change point: there is no "before" to compare with, so every
    ``pre_*`` and ``norm_*`` column holds the catalogue's fill value for an
    empty window, and a model would answer from those fills alone. Read from
    the row's ``pre_series_length`` (0: empty); a row at ``index`` 0 is
    never scorable, and a matrix without the length column is judged on
    ``index`` alone. Boolean array, shape (len(matrix),); all False for a
    matrix without either column.

    The one rule: ``triage label`` and ``triage score`` leave such rows
    unscored (:func:`triage.inference.decide`), and :func:`training_data`
    leaves them out of every model's training and held-out rows.
    """
    empty = np.zeros(len(matrix), dtype=bool)
    if PRE_LENGTH in matrix.columns:
        empty |= pd.to_numeric(matrix[PRE_LENGTH], errors="coerce").to_numpy() == 0
    if "index" in matrix.columns:
        empty |= pd.to_numeric(matrix["index"], errors="coerce").to_numpy() == 0
    return empty


def left_out_note(left_out: dict[str, int]) -> str | None:
    """One sentence saying which triaged rows :func:`training_data` left out as not scorable, None when none.

    ``left_out``: :attr:`TrainingData.left_out` (label -> rows). The caller
    puts the data's name in front.
    """
    n = sum(left_out.values())
    if not n:
        return None
    by_label = ", ".join(f"{k:,} {label}" for label, k in sorted(left_out.items()) if k)
    return (f"{n:,} triaged row{'' if n == 1 else 's'} ({by_label}) left out: not scorable, {NOT_SCORABLE_WHY} "
            "(at a series' first commit or right after a confirmed change), which triage label and score never "
            "judge")


@dataclass
class TrainingData:
    """Triaged rows of a feature matrix as arrays.

    X : float64, shape (n, p); y : int8 in {0, 1}, shape (n,) (1 = true_positive);
    groups : series ids, shape (n,); order : float64 time key, shape (n,) (see
    :func:`time_key`); columns : the p feature names; rows : positions of the
    rows in the original matrix, shape (n,), ordered by series then index
    (:func:`training_data`); left_out : triaged rows left out as
    :func:`not_scorable`, by label (``{}`` when none).
    """

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    order: np.ndarray
    columns: list[str]
    rows: np.ndarray
    left_out: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.y)

    def data_hash(self) -> str:
        """:func:`data_hash` of these rows."""
        return data_hash(self.X, self.y, self.groups, self.columns)


def triaged_mask(matrix: pd.DataFrame) -> np.ndarray:
    """Boolean mask of rows labelled ``true_positive`` or ``false_positive``."""
    if "label" not in matrix.columns:
        raise InputError(None, None, "feature matrix has no 'label' column")
    return matrix["label"].astype(str).isin(labels.TRIAGED).to_numpy()


def training_data(
    matrix: pd.DataFrame,
    features: str | Path | Sequence[str] | None = None,
    *,
    source: str | None = None,
) -> TrainingData:
    """X, y, groups and time order of the triaged rows of a feature matrix, the not scorable ones left out.

    A triaged row :func:`not_scorable` (no commit before the alert in its
    window) is never judged by ``triage label`` / ``triage score``, so no
    model learns from it or is measured on it; ``left_out`` counts them. The rows come ordered by ``series_id``, then ``index`` (ties: the
    matrix's order), so the same rows give the same model whatever the order
    of the series in the file; ``rows`` maps them back to the matrix.
    ``features``: the columns (a list, or a feature-set file); default every
    contract feature column. Raises :class:`InputError` when a column is
    missing or not numeric, no row is triaged, every triaged row is not
    scorable, only one class is present (nothing to learn), or there is no
    ``series_id`` (:data:`MISSING_SERIES`).
    """
    columns = resolve_features(features, matrix)
    if not columns:
        raise InputError(source, None, "feature matrix has no feature columns (pre_*, after_*, norm_*, pair_*, ctx_*, det_*)")
    mask = triaged_mask(matrix)
    if not mask.any():
        raise InputError(source, None, "no triaged candidates (label true_positive or false_positive) to train on")
    if PRE_LENGTH not in matrix.columns and "index" not in matrix.columns:
        # A hand-made matrix: nothing tells which alerts no model is asked about, so all are kept
        # (a walkthrough's matrix without both trained on 42 rows where the full one gave 32).
        warnings.warn(f"{source or 'the feature matrix'}: neither {PRE_LENGTH} nor index is a column, so the "
                      "alerts label and score call not scorable (no commit before them) cannot be told apart: "
                      "every triaged row is trained on", UserWarning, stacklevel=2)
    unscorable = mask & not_scorable(matrix)
    left_out: dict[str, int] = {}
    if unscorable.any():
        named, counts = np.unique(matrix["label"].astype(str).to_numpy()[unscorable], return_counts=True)
        left_out = {str(k): int(c) for k, c in zip(named, counts, strict=True)}
        mask = mask & ~unscorable
        if not mask.any():
            raise InputError(source, None, f"no scorable triaged candidates to train on: {left_out_note(left_out)}; "
                                           "train on alerts with commits before them in their window")
    rows = np.flatnonzero(mask)
    if "series_id" in matrix.columns:
        # One model for one set of rows, whatever the order of the series in the file: a forest's
        # bootstrap and a booster's subsampling draw row positions. By series, then position.
        series = matrix["series_id"].astype(str).to_numpy()[rows]
        position = (pd.to_numeric(matrix["index"].iloc[rows], errors="coerce").fillna(-1).to_numpy(dtype=np.float64)
                    if "index" in matrix.columns else np.zeros(rows.size))
        rows = rows[np.lexsort((position, series))]
    sub = matrix.iloc[rows]
    X = feature_array(sub, columns, source)
    y = (sub["label"].astype(str).to_numpy() == labels.TRUE_POSITIVE).astype(np.int8)
    if y.min() == y.max():
        only = labels.TRUE_POSITIVE if y[0] else labels.FALSE_POSITIVE
        # A 0/1 label column lands here: its numbers are read as Perfherder's status codes.
        # (Not when the false ones were all left out as not scorable: that is the cause, said below.)
        codes = (" (a label column of 0 and 1 reads as Perfherder's status codes: 0 untriaged, 1 downstream, "
                 "a true alert; write false_positive / true_positive)"
                 if y[0] and not left_out.get(labels.FALSE_POSITIVE) else "")
        dropped = f" ({left_out_note(left_out)})" if left_out else ""
        raise InputError(source, None, f"only {only} candidates: need both true and false alerts to learn from"
                                       f"{codes}{dropped}")
    if "series_id" not in sub.columns:
        raise InputError(source, None, MISSING_SERIES)
    groups = sub["series_id"].astype(str).to_numpy()
    return TrainingData(X=X, y=y, groups=groups, order=time_key(sub), columns=columns, rows=rows, left_out=left_out)


def time_key(matrix: pd.DataFrame) -> np.ndarray:
    """A sortable time key per row, float64, shape (n,).

    The timestamp (nanoseconds since the epoch) when every row has one;
    otherwise the candidate's commit position ``index`` in its series. The
    fallback assumes series start together and advance at a similar pace (one
    product, one commit stream), so position approximates time; mixing the two
    scales would be meaningless, hence all-or-nothing. Without either column the
    row order is used.
    """
    if "timestamp" in matrix.columns:
        ts = pd.to_datetime(matrix["timestamp"], errors="coerce", utc=True)
        if len(ts) and ts.notna().all():
            return ts.astype("int64").to_numpy().astype(np.float64)
    if "index" in matrix.columns:
        return pd.to_numeric(matrix["index"], errors="coerce").fillna(-1).to_numpy(dtype=np.float64)
    return np.arange(len(matrix), dtype=np.float64)


def data_hash(X: np.ndarray, y: np.ndarray, groups: np.ndarray, columns: Sequence[str]) -> str:
    """SHA-256 (hex) of training rows: column names, values, targets (as int64), series ids.

    A feature set (:mod:`features.selection`) and a model
    (:class:`training.classifier.TriageClassifier`) computed on the same rows
    carry the same hash.
    """
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, columns)).encode())
    h.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    h.update("\x1f".join(map(str, groups)).encode())
    return h.hexdigest()
