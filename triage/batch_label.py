"""Batch labelling of untriaged alerts (Bauer et al., ICPE 2022, Section 3.3).

Every candidate nobody triaged yet (``not_triaged`` / ``under_investigation``)
is described by its Pre and After windows, bounded by the neighbouring
*confirmed* change points of its series (the ``true_positive`` labels, see
:mod:`triage.features.windows`), and the trained model decides: true or false alert.

The output follows the layout the paper's replication package published
(``Output/classified_points.csv`` of the ICPE 2022 data-challenge repository:
commit, MongoDB label, Prob. False, Prob. True, Classification), with the
series id in front because one file holds many series, the classification
spelled as a canonical label and the decision's top reasons last::

    series_id, commit, label, p_false, p_true, classification, change_pct, change_kind, explanation

``change_pct`` / ``change_kind`` size the step at the alert (signed per cent
of the level before, and regression / improvement / change when the data
does not say which way is better; :mod:`triage.steps`, the report's step).
``--format published`` writes the replication package's exact spelling
(``;``-separated, ``"Commit Hash";"MongoDB Label";"Prob. False";"Prob. True";
"Classification"`` with ``TRUE``/``FALSE``) for people comparing with it.
An alert no model can judge (``not_scorable``: no commit before it in its
window, at its series' first commit or right after a confirmed change) has
``NA`` there, R's and pandas' missing-value marker, for both probabilities
and the call: it was called neither true nor false.
:func:`agreement` leaves such alerts out and counts them.

Loading the model, building the feature rows with the model's window and
deciding them is :mod:`triage.inference`, shared with :mod:`triage.scoring`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.core.atomic import write_csv_atomic, write_text_atomic
from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.core.metrics import confusion
from triage.features.windows import ADAPTIVE
from triage.inference import (
    NOT_SCORABLE,
    candidate_matrix,
    candidate_windowing,
    decide,
    model_features,
    model_window,
    shift_measures,
)
from triage.steps import step_columns

#: Columns of the batch-labelling output, in file order.
OUTPUT_COLUMNS: tuple[str, ...] = (
    "series_id",
    "commit",
    "label",
    "p_false",
    "p_true",
    "classification",
    "change_pct",
    "change_kind",
    "explanation",
)

#: The replication package's header, for ``--format published``.
PUBLISHED_HEADER: tuple[str, ...] = ("Commit Hash", "MongoDB Label", "Prob. False", "Prob. True", "Classification")
#: ``--format published``'s cell for a missing probability and for the call of a ``not_scorable`` alert.
PUBLISHED_MISSING = "NA"

#: Which candidates :func:`label_candidates` classifies.
SELECTIONS: dict[str, frozenset[str]] = {
    "untriaged": labels.UNTRIAGED,
    "triaged": labels.TRIAGED,
    "all": labels.UNTRIAGED | labels.TRIAGED,
}

# --------------------------------------------------------------------------- labelling


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
    matrix = candidate_matrix(dataset, SELECTIONS[which], window=model_window(classifier),
                              pair=shift_measures(classifier), n_jobs=n_jobs)
    _check_features(classifier, matrix)
    decided = decide(classifier, matrix, threshold=threshold, explain_top=explain_top)
    out = pd.concat([matrix[["series_id", "commit", "label"]], decided], axis=1)
    out["index"] = matrix["index"].to_numpy(dtype=np.int64)
    out["truth_label"] = matrix["truth_label"].to_numpy()
    out["change_pct"], out["change_kind"] = step_columns(dataset, matrix["series_id"], out["index"])
    return out.reset_index(drop=True)


def _check_features(classifier, matrix: pd.DataFrame) -> None:
    """Refuse a model needing columns the labelling matrix lacks (a scoring or online model).

    Their pair / context / detector columns come from a detector's candidates
    (``triage score``) or the online loop (``triage detect``), not from labels.
    """
    source = (getattr(classifier, "manifest_", None) or {}).get("_path")
    missing = [c for c in model_features(classifier, source) if c not in matrix.columns]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        window = model_window(classifier)
        scoring = candidate_windowing(classifier) is not None
        kind = ("a detector-scoring model" if scoring
                else f"an online model (window {window})" if window != ADAPTIVE else "a model for another job")
        # The command that takes it, not both: a scoring model sent to detect / watch was refused there too.
        use = ("use `triage score` with detector candidates" if scoring
               else "use `triage detect` / `triage watch`" if window != ADAPTIVE
               else "use `triage score` with detector candidates or `triage detect` / `triage watch`")
        raise InputError(source, None, f"this model needs features {shown}, which labelling candidates does "
                         f"not compute ({kind}): {use}, or an alerts model (default, default-w0, a `triage train` "
                         "directory)")


def agreement(decisions: pd.DataFrame, reference: str = "label") -> dict[str, float]:
    """How often ``classification`` equals a reference label column (``label`` or ``truth_label``).

    Only rows whose reference is ``true_positive`` / ``false_positive`` count,
    and of those only the ones the model called: a ``not_scorable`` row (no
    commit before it in its window, no P(true)) is neither a true nor a false
    call and is left out. Returns ``n`` (rows counted), ``not_scorable`` (rows with
    a reference left out as not scorable), ``accuracy``, ``sensitivity`` (true
    alerts called true) and ``specificity`` (false alerts called false); NaN
    where undefined.
    """
    ref = decisions[reference].astype(str) if reference in decisions else pd.Series(dtype=str)
    referenced = ref.isin(labels.TRIAGED).to_numpy()
    unjudged = referenced & (decisions["classification"].astype(str).to_numpy() == NOT_SCORABLE)
    mask = referenced & ~unjudged
    y = ref.to_numpy()[mask] == labels.TRUE_POSITIVE
    pred = decisions["classification"].to_numpy()[mask] == labels.TRUE_POSITIVE
    return {"n": int(mask.sum()), "not_scorable": int(unjudged.sum()), **confusion(y, pred).rates()}


# --------------------------------------------------------------------------- writing


def write_decisions(decisions: pd.DataFrame, path: str | Path, *, fmt: str = "csv") -> Path:
    """Write batch-labelling decisions: ``csv`` (:data:`OUTPUT_COLUMNS`) or ``published``.

    Probabilities are rounded to 4 decimals in ``csv`` and to 3 in
    ``published`` (as the replication package's file). In ``published``, a
    missing probability and the call of a ``not_scorable`` alert are
    :data:`PUBLISHED_MISSING` (``NA``), never ``FALSE``.
    """
    if fmt == "csv":
        frame = decisions[list(OUTPUT_COLUMNS)].copy()
        frame[["p_false", "p_true"]] = frame[["p_false", "p_true"]].round(4)
        return write_csv_atomic(frame, path)
    if fmt == "published":
        frame = pd.DataFrame(
            {
                PUBLISHED_HEADER[0]: decisions["commit"].astype(str),
                PUBLISHED_HEADER[1]: decisions["label"].astype(str),
                PUBLISHED_HEADER[2]: decisions["p_false"].round(3),
                PUBLISHED_HEADER[3]: decisions["p_true"].round(3),
                PUBLISHED_HEADER[4]: np.select(
                    [decisions["classification"] == labels.TRUE_POSITIVE, decisions["classification"] == NOT_SCORABLE],
                    ["TRUE", PUBLISHED_MISSING], "FALSE"),
            }
        )
        # The published file quotes the header only.
        header = ";".join(f'"{h}"' for h in PUBLISHED_HEADER) + "\n"
        body = frame.to_csv(sep=";", header=False, index=False, na_rep=PUBLISHED_MISSING)
        return write_text_atomic(header + body, path)
    raise ValueError(f"unknown output format {fmt!r} (use csv or published)")
