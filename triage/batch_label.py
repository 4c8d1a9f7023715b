"""Batch labelling of untriaged alerts (Bauer et al., ICPE 2022, Section 3.3).

Every candidate nobody triaged yet (``not_triaged`` / ``under_investigation``)
is described by its Pre and After windows, bounded by the neighbouring
*confirmed* change points of its series (the ``true_positive`` labels, see
:mod:`features.windows`), and the trained model decides: true or false alert.

The output follows the layout the paper's replication package published
(``Output/classified_points.csv`` of the ICPE 2022 data-challenge repository:
commit, MongoDB label, Prob. False, Prob. True, Classification), with the
series id in front because one file holds many series, the classification
spelled as a canonical label and the decision's top reasons last::

    series_id, commit, label, p_false, p_true, classification, explanation

``--format published`` writes the replication package's exact spelling
(``;``-separated, ``"Commit Hash";"MongoDB Label";"Prob. False";"Prob. True";
"Classification"`` with ``TRUE``/``FALSE``) for people comparing with it.

Features come from :func:`features.extract.extract_features` for any
(series, index) point with the model's window (the manifest's ``window``;
adaptive when absent), so detector candidates that are not labelled in the
dataset (:mod:`triage.scoring`) get exactly the training columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels as L
from triage.core.atomic import write_csv_atomic as write_frame_atomic
from triage.core.atomic import write_text_atomic
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.features import catalogue as C
from triage.features.extract import extract_features
from triage.features.windows import ADAPTIVE

#: Columns of the batch-labelling output, in file order.
OUTPUT_COLUMNS: tuple[str, ...] = (
    "series_id",
    "commit",
    "label",
    "p_false",
    "p_true",
    "classification",
    "explanation",
)

#: The replication package's header, for ``--format published``.
PUBLISHED_HEADER: tuple[str, ...] = ("Commit Hash", "MongoDB Label", "Prob. False", "Prob. True", "Classification")

#: Which candidates :func:`label_candidates` classifies.
SELECTIONS: dict[str, frozenset[str]] = {
    "untriaged": L.UNTRIAGED,
    "triaged": L.TRIAGED,
    "all": L.UNTRIAGED | L.TRIAGED,
}

#: Every feature column this installation computes, in contract order.
ALL_FEATURES: tuple[str, ...] = tuple(C.feature_columns())


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


def model_features(classifier, source: str | Path | None = None) -> list[str]:
    """The model's feature columns, checked against what this installation computes.

    Raises :class:`InputError` naming ``source`` (the model directory) when the
    model lists no feature names or a column this version cannot compute (a
    model from another feature catalogue).
    """
    names = getattr(classifier, "feature_names_", None)
    if not names:
        raise InputError(source, None, "the model lists no feature columns; it was trained on a bare array")
    unknown = [n for n in names if n not in ALL_FEATURES]
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
    wanted: Iterable[str] = SELECTIONS["all"],
    *,
    window: str | int = ADAPTIVE,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """Feature-matrix rows of every candidate whose label is in ``wanted``.

    Rows in dataset order, ascending index within a series; columns of
    :func:`features.extract.extract_features` (``truth_label`` holds the
    ground truth of synthetic data, ``""`` when unknown).
    """
    wanted = frozenset(wanted)
    chosen = {h.series_id: idx for h in dataset if len(idx := h.indices_with(wanted))}
    return extract_features(dataset, candidates=chosen, window=window, n_jobs=n_jobs)


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
    ``explain_top`` is 0). ``threshold`` overrides the model's own.
    """
    out = pd.DataFrame(index=matrix.index)
    if matrix.empty:
        for col in ("p_false", "p_true", "classification", "explanation"):
            out[col] = pd.Series(dtype=float if col.startswith("p_") else object)
        return out
    names = model_features(classifier, (getattr(classifier, "manifest_", None) or {}).get("_path"))
    proba = classifier.predict_proba(matrix[names])
    cut = float(classifier.threshold_ if threshold is None else threshold)
    out["p_false"] = proba[:, 0]
    out["p_true"] = proba[:, 1]
    out["classification"] = np.where(proba[:, 1] >= cut, L.TRUE_POSITIVE, L.FALSE_POSITIVE)
    if explain_top > 0:
        from triage.explain import explain

        reasons = explain(classifier, matrix, top=explain_top)
        out["explanation"] = ["; ".join(r) for r in reasons]
    else:
        out["explanation"] = ""
    return out


def label_candidates(
    dataset: Dataset,
    classifier,
    *,
    which: str = "untriaged",
    threshold: float | None = None,
    explain_top: int = 3,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """Classify the candidates of ``dataset`` selected by ``which`` (untriaged, triaged, all).

    ``n_jobs``: processes for the feature extraction (joblib; -1 = all cores).

    Returns
    -------
    DataFrame, one row per candidate in series then commit order, columns
    :data:`OUTPUT_COLUMNS` plus ``index`` and ``truth_label`` (kept for
    checks; :func:`write_decisions` leaves them out of the file).
    """
    if which not in SELECTIONS:
        raise ValueError(f"which must be one of {', '.join(SELECTIONS)}, got {which!r}")
    matrix = candidate_matrix(dataset, SELECTIONS[which], window=model_window(classifier), n_jobs=n_jobs)
    decided = decide(classifier, matrix, threshold=threshold, explain_top=explain_top)
    out = pd.concat([matrix[["series_id", "commit", "label"]], decided], axis=1)
    out["index"] = matrix["index"].to_numpy(dtype=np.int64)
    out["truth_label"] = matrix["truth_label"].to_numpy()
    return out.reset_index(drop=True)


def agreement(decisions: pd.DataFrame, reference: str = "label") -> dict[str, float]:
    """How often ``classification`` equals a reference label column (``label`` or ``truth_label``).

    Only rows whose reference is ``true_positive`` / ``false_positive`` count.
    Returns ``n``, ``accuracy``, ``sensitivity`` (true alerts called true) and
    ``specificity`` (false alerts called false); NaN where undefined.
    """
    ref = decisions[reference].astype(str) if reference in decisions else pd.Series(dtype=str)
    mask = ref.isin(L.TRIAGED).to_numpy()
    y = ref.to_numpy()[mask] == L.TRUE_POSITIVE
    pred = decisions["classification"].to_numpy()[mask] == L.TRUE_POSITIVE
    n = int(mask.sum())

    def rate(num: int, den: int) -> float:
        return float(num / den) if den else float("nan")

    return {
        "n": n,
        "accuracy": rate(int((y == pred).sum()), n),
        "sensitivity": rate(int((y & pred).sum()), int(y.sum())),
        "specificity": rate(int((~y & ~pred).sum()), int((~y).sum())),
    }


# --------------------------------------------------------------------------- writing


def write_decisions(decisions: pd.DataFrame, path: str | Path, *, fmt: str = "csv") -> Path:
    """Write batch-labelling decisions: ``csv`` (:data:`OUTPUT_COLUMNS`) or ``published``.

    Probabilities are rounded to 4 decimals (the published file used 3).
    """
    if fmt == "csv":
        frame = decisions[list(OUTPUT_COLUMNS)].copy()
        frame[["p_false", "p_true"]] = frame[["p_false", "p_true"]].round(4)
        return write_frame_atomic(frame, path)
    if fmt == "published":
        frame = pd.DataFrame(
            {
                PUBLISHED_HEADER[0]: decisions["commit"].astype(str),
                PUBLISHED_HEADER[1]: decisions["label"].astype(str),
                PUBLISHED_HEADER[2]: decisions["p_false"].round(3),
                PUBLISHED_HEADER[3]: decisions["p_true"].round(3),
                PUBLISHED_HEADER[4]: np.where(decisions["classification"] == L.TRUE_POSITIVE, "TRUE", "FALSE"),
            }
        )
        # The published file quotes the header only.
        header = ";".join(f'"{h}"' for h in PUBLISHED_HEADER) + "\n"
        return write_text_atomic(header + frame.to_csv(sep=";", header=False, index=False), path)
    raise ValueError(f"unknown output format {fmt!r} (use csv or published)")
