"""Applying a trained model to feature rows: the layer batch labelling, scoring and the CLI share.

* :func:`load_classifier` reads a model directory (checksums verified) and
  checks its feature columns against this installation
  (:func:`model_features`); :func:`model_window` is the Pre/After window it
  was trained with (the manifest's ``window``; adaptive when absent).
* :func:`candidate_matrix` / :func:`point_features` build the feature rows of
  labelled candidates / of any (series, index) point with
  :func:`triage.features.extract.extract_features`, so detector candidates that
  are not labelled in the dataset (:mod:`triage.scoring`) get exactly the
  training columns.
* :func:`decide` gives every row P(false), P(true), the classification under
  the model's threshold (or an override) and the top reasons
  (:mod:`triage.explain`); an alert with no commit before it in its window
  (empty Pre: at its series' first commit or right after a confirmed change
  point) is not scored but marked :data:`NOT_SCORABLE`, with a warning naming
  it (:func:`not_scorable`). ``triage label`` and ``triage score`` both decide
  here; the rule itself, :func:`triage.features.matrix.not_scorable`, is
  imported from the feature-matrix layer, where ``triage train`` /
  ``evaluate`` apply it too (they leave such alerts out of their rows).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.features import catalogue, noise_free
from triage.features.candidate_context import CONTEXT_COLUMNS
from triage.features.extract import extract_features
from triage.features.level_shift import PAIR_COLUMNS
from triage.features.matrix import NOT_SCORABLE_WHY as NOT_SCORABLE_WHY
from triage.features.matrix import PRE_LENGTH as PRE_LENGTH
from triage.features.matrix import not_scorable as not_scorable
from triage.features.windows import ADAPTIVE, CANDIDATE_MAX_LEN

#: The detector's own score, ranked (0-1) among the candidates of its file: a
#: scale-free form of a score whose unit differs from detector to detector.
DETECTOR_SCORE_RANK = "det_score_rank"
#: The feature columns of the default feature matrix (the paper's), in contract order.
ALL_FEATURES: tuple[str, ...] = tuple(catalogue.feature_columns())
#: Every feature column a model may name: the default ones, the pair measures
#: and candidate context of candidate-bounded scoring models, and the detector's score rank.
KNOWN_FEATURES: frozenset[str] = frozenset((*ALL_FEATURES, *PAIR_COLUMNS, *CONTEXT_COLUMNS, DETECTOR_SCORE_RANK))
#: The classification of an alert no model can judge (:func:`not_scorable`), instead of a true / false call.
NOT_SCORABLE = "not_scorable"
#: Its explanation.
NOT_SCORABLE_REASON = ("not scorable: no commit before it in its window (the first commit of its series or right "
                       "after a confirmed change), nothing to compare with")


class NotScorable(UserWarning):
    """Alerts left without P(true) because they cannot be judged (:func:`not_scorable`); the message names them."""


# --------------------------------------------------------------------------- model


def model_window(classifier) -> str | int:
    """The Pre/After window the model was trained with (``"adaptive"`` or an int ``w``)."""
    manifest = getattr(classifier, "manifest_", None) or {}
    window = manifest.get("window")
    if window is None or window == ADAPTIVE:
        return ADAPTIVE
    try:
        return int(window)
    except (TypeError, ValueError):
        raise InputError(manifest.get("_path"), None, f"model manifest has an unknown window {window!r}") from None


def candidate_windowing(classifier) -> dict[str, object] | None:
    """``{"max_len": int, "pair": bool, "context": bool}`` for a model trained on candidate-bounded windows, else None.

    A scoring model (``models/default-scoring``) records in its manifest's
    ``extra`` that its Pre/After stop at the neighbouring candidates of the
    same detector run (:func:`triage.features.windows.candidate_bounds`); it
    must be applied on exactly those windows.
    """
    extra = (getattr(classifier, "manifest_", None) or {}).get("extra") or {}
    if extra.get("windows") != "candidates":
        return None
    return {
        "max_len": int(extra.get("max_len", CANDIDATE_MAX_LEN)),
        "pair": bool(extra.get("pair", False)),
        "context": bool(extra.get("context", False)),
    }


def shift_measures(classifier) -> bool:
    """Whether an adaptive-window model (not candidate-bounded) reads ``pair_*`` columns.

    A labelling model trained with ``triage train --shift-measures`` adds the
    scale-free level-shift measures of its adaptive windows to the paper's
    characteristics; every matrix built for it must hold them too. An online
    model (a fixed window) has them from the online loop's own rows, which
    only ``triage detect`` / ``watch`` build.
    """
    if model_window(classifier) != ADAPTIVE or candidate_windowing(classifier) is not None:
        return False
    return any(name in PAIR_COLUMNS for name in getattr(classifier, "feature_names_", None) or ())


def detector_threshold(classifier, detector: str | None) -> float | None:
    """The model's validation threshold for candidates of ``detector``, None when it has none."""
    extra = (getattr(classifier, "manifest_", None) or {}).get("extra") or {}
    table = extra.get("detector_thresholds") or {}
    if detector is None or detector not in table:
        return None
    return float(table[detector])


def model_features(classifier, source: str | Path | None = None) -> list[str]:
    """The model's feature columns, checked against what this installation computes.

    Raises :class:`InputError` naming ``source`` (the model directory) when the
    model lists no feature names or a column this version cannot compute (a
    model from another feature catalogue).
    """
    names = getattr(classifier, "feature_names_", None)
    if not names:
        raise InputError(source, None, "the model lists no feature columns; it was trained on a bare array")
    unknown = [n for n in names if n not in KNOWN_FEATURES]
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise InputError(
            source,
            None,
            f"the model's feature set does not match this installation: it expects {shown}, "
            "which features.catalogue does not define (retrain the model with this version)",
        )
    return list(names)


def load_classifier(path: str | Path):
    """A fitted classifier from a model directory (checksums verified), with its source recorded."""
    # Imported on use: scikit-learn / XGBoost take seconds to import.
    from triage.training.model_files import load_model

    clf = load_model(path)
    clf.manifest_["_path"] = str(path)
    model_features(clf, path)
    return clf


# --------------------------------------------------------------------------- features


def point_features(
    history: History,
    indices: Sequence[int] | np.ndarray,
    *,
    window: str | int = ADAPTIVE,
    confirmed: np.ndarray | None = None,
) -> pd.DataFrame:
    """The feature-matrix rows of candidates at ``indices`` of one series.

    Parameters
    ----------
    history : the series
    indices : candidate positions, shape (k,), each in ``[0, len(history))``;
        any order, repeats allowed (rows follow ``indices``)
    window : ``"adaptive"`` or a fixed After width ``w``
    confirmed : confirmed change points bounding the windows; default the
        series' ``true_positive`` labels

    Returns
    -------
    DataFrame, shape (k, 6 + len(ALL_FEATURES)): the columns of
    :func:`features.extract.extract_features`.
    """
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    unique, inverse = np.unique(idx, return_inverse=True)
    frame = extract_features(
        Dataset([history]),
        candidates={history.series_id: unique},
        window=window,
        change_points=None if confirmed is None else {history.series_id: confirmed},
    )
    return frame.iloc[inverse].reset_index(drop=True)


def candidate_matrix(
    dataset: Dataset,
    wanted: Iterable[str] = labels.UNTRIAGED | labels.TRIAGED,
    *,
    window: str | int = ADAPTIVE,
    pair: bool = False,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """Feature-matrix rows of every candidate whose label is in ``wanted``.

    Rows in dataset order, ascending index within a series; columns of
    :func:`features.extract.extract_features` (``truth_label`` holds the
    ground truth of synthetic data, ``""`` when unknown), with the ``pair_*``
    shift measures of the same windows when ``pair`` (a model for which
    :func:`shift_measures` holds).
    """
    wanted = frozenset(wanted)
    chosen = {h.series_id: idx for h in dataset if len(idx := h.indices_with(wanted))}
    return extract_features(dataset, candidates=chosen, window=window, pair=pair, n_jobs=n_jobs)


# --------------------------------------------------------------------------- decisions


def decide(
    classifier,
    matrix: pd.DataFrame,
    *,
    threshold: float | None = None,
    explain_top: int = 3,
) -> pd.DataFrame:
    """P(false), P(true), the classification and the explanation of every row of ``matrix``.

    Returns a DataFrame with the same index as ``matrix`` and columns
    ``p_false, p_true, classification, explanation`` (explanation ``""`` when
    ``explain_top`` is 0, except for the not-scorable and noise-free rows
    below, whose explanation always says why the model was not asked).
    ``threshold`` overrides the model's own.

    A row :func:`not_scorable` (an alert with an empty Pre: at its series'
    first commit or right after a confirmed change point) is not given to the
    model: its P(false) and P(true) are NaN, its classification :data:`NOT_SCORABLE` (``true_positive`` at threshold 0,
    which calls every alert true) and its explanation says why; a
    :class:`NotScorable` warning names each such series and commit.

    A row in a noise-free stretch (:func:`triage.features.noise_free.verdict`:
    Pre one repeated value, After one repeated value) is decided without the
    model: P(true) 1 for a step, 0 for no change, and the explanation says so.
    """
    out = pd.DataFrame(index=matrix.index)
    if matrix.empty:
        for col in ("p_false", "p_true", "classification", "explanation"):
            out[col] = pd.Series(dtype=float if col.startswith("p_") else object)
        return out
    names = model_features(classifier, (getattr(classifier, "manifest_", None) or {}).get("_path"))
    cut = float(classifier.threshold_ if threshold is None else threshold)
    unscorable = not_scorable(matrix)
    scorable = matrix[~unscorable]
    out["p_false"] = np.nan
    out["p_true"] = np.nan
    # Threshold 0 calls every alert true (triage off, e.g. a scoring model's for some detector):
    # an alert that cannot be judged is kept as the detector gave it.
    kept = cut <= 0.0
    out["classification"] = labels.TRUE_POSITIVE if kept else NOT_SCORABLE
    out["explanation"] = NOT_SCORABLE_REASON + ("; called true: threshold 0 calls every alert true" if kept else "")
    if unscorable.any():
        _warn_not_scorable(matrix[unscorable], kept)
    if scorable.empty:
        return out
    proba, flat = probabilities(classifier, scorable, names)
    ruled = flat != noise_free.NOT_NOISE_FREE
    out.loc[~unscorable, "p_false"] = proba[:, 0]
    out.loc[~unscorable, "p_true"] = proba[:, 1]
    out.loc[~unscorable, "classification"] = np.where(proba[:, 1] >= cut, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE)
    reasons = [""] * len(scorable)
    if explain_top > 0 and not ruled.all():
        from triage.explain import explain  # on use: SHAP and the forest walkers are heavy

        modelled = np.flatnonzero(~ruled)  # a rule-decided row is explained by its rule, below
        for j, r in zip(modelled, explain(classifier, scorable.iloc[modelled], top=explain_top), strict=True):
            reasons[j] = "; ".join(r)
    if ruled.any():
        pre = pd.to_numeric(scorable[PRE_LENGTH], errors="coerce").to_numpy()
        after = pd.to_numeric(scorable["after_series_length"], errors="coerce").to_numpy()
        for j in np.flatnonzero(ruled):
            reasons[j] = noise_free.reason(int(flat[j]), pre[j], after[j])
    out.loc[~unscorable, "explanation"] = reasons
    return out


def probabilities(classifier, rows: pd.DataFrame, names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """P(false), P(true) of each row, shape (n, 2), and its noise-free verdict, shape (n,).

    The model's answer, except for rows in a noise-free stretch
    (:func:`triage.features.noise_free.verdict` is not ``NOT_NOISE_FREE``):
    1 for a step, 0 for no change. ``names``: the model's feature columns
    (default :func:`model_features`).
    """
    names = model_features(classifier) if names is None else names
    proba = np.array(classifier.predict_proba(rows[names]), dtype=np.float64)
    flat = noise_free.verdict(rows)
    ruled = flat != noise_free.NOT_NOISE_FREE
    proba[ruled, 1] = (flat[ruled] == noise_free.STEP).astype(np.float64)
    proba[ruled, 0] = 1.0 - proba[ruled, 1]
    return proba, flat


def _warn_not_scorable(rows: pd.DataFrame, kept: bool) -> None:
    """One warning naming every alert :func:`not_scorable` left without P(true) (the first 5, then a count)."""
    named = [f"series {sid!r}, commit {commit!r}" for sid, commit in zip(
        rows.get("series_id", pd.Series(["?"] * len(rows))).astype(str),
        rows.get("commit", pd.Series(["?"] * len(rows))).astype(str), strict=True)]
    shown = "; ".join(named[:5]) + (f"; and {len(named) - 5} more" if len(named) > 5 else "")
    if len(named) == 1:
        what = "an alert with no commit before it in its window (at the first commit of its series"
    else:
        what = f"{len(named)} alerts with no commit before them in their window (at the first commit of their series"
    warnings.warn(NotScorable(f"{shown}: {what} or right after a confirmed change) cannot be judged (nothing to "
                              "compare with): reported without P(true), "
                              + ("called true at threshold 0" if kept else f"as {NOT_SCORABLE}")),
                  stacklevel=3)
