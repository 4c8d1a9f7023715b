"""Train, measure, save and log one model: what ``triage train`` does.

1. The triaged rows are split once, grouped by series: 20 % of the series are
   held out (``test_size``). A classifier fitted on the rest is measured there:
   AUC, accuracy, sensitivity, specificity, each with a 95 % bootstrap interval
   over the held-out candidates.
2. The final classifier is refitted on *all* triaged rows (the held-out
   measurement is an estimate for it, slightly pessimistic).
3. It is saved as a model directory (:mod:`training.model_files`) with the
   metrics in its manifest, and logged to MLflow with the held-out ROC and
   confusion matrix, optionally registered under a name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.metrics import classification_report
from triage.features.matrix import resolve_features, training_data
from triage.training.classifier import TriageClassifier
from triage.training.evaluation import split_indices
from triage.training.model_files import check_writable, save_model


@dataclass
class TrainResult:
    """What :func:`train` produced. ``test`` is (y_true, proba) of the hold-out, or None."""

    classifier: TriageClassifier
    model_dir: Path
    metrics: dict[str, float]
    test: tuple[np.ndarray, np.ndarray] | None
    run: dict[str, object] | None


def bootstrap_metrics(
    y: np.ndarray, proba: np.ndarray, threshold: float, *, n_boot: int = 200, seed: int = 0
) -> dict[str, float]:
    """Each metric on (y (n,) 0/1, proba (n,)) plus ``_ci_low`` / ``_ci_high``: bootstrap 2.5/97.5 %."""
    point = classification_report(y, proba, threshold)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    for _ in range(n_boot):
        idx = rng.integers(0, len(y), len(y))
        if len(np.unique(y[idx])) < 2:
            continue
        for k, v in classification_report(y[idx], proba[idx], threshold).items():
            draws[k].append(v)
    out = dict(point)
    for k, values in draws.items():
        if values:
            out[f"{k}_ci_low"], out[f"{k}_ci_high"] = (float(q) for q in np.percentile(values, [2.5, 97.5]))
    return out


def train(
    matrix: pd.DataFrame,
    out: str | Path,
    *,
    model: str = "rf",
    features: str | Path | Sequence[str] | None = None,
    threshold: object = "0.5",
    window: str | int | None = None,
    test_size: float = 0.2,
    random_state: int = 0,
    n_jobs: int | None = None,
    model_params: Mapping[str, object] | None = None,
    track: bool = True,
    tracking_uri: str | None = None,
    register_as: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> TrainResult:
    """Fit, measure on a grouped hold-out, refit on all, save to ``out``, log to MLflow.

    ``matrix`` is the feature matrix (contract in ARCHITECTURE.md). Raises
    :class:`~triage.core.errors.InputError` for a matrix without triaged rows or
    lacking the requested feature columns; nothing is written then.
    """
    check_writable(out)  # fail before minutes of training, not after
    columns = resolve_features(features, matrix)
    td = training_data(matrix, columns)
    feature_set_file = str(features) if isinstance(features, str | Path) else None
    params = dict(model_params or {})

    def make() -> TriageClassifier:
        return TriageClassifier(model=model, features=columns, threshold=threshold,
                                random_state=random_state, n_jobs=n_jobs, **params)

    metrics: dict[str, float] = {}
    test = None
    if test_size > 0:
        train_idx, val_idx, test_idx = split_indices(
            "grouped", td.y, td.groups, td.order, seed=random_state, test_size=test_size
        )
        fit_rows = td.rows[np.sort(np.r_[train_idx, val_idx])]
        held = make().fit(matrix.iloc[fit_rows])
        proba = held.predict_proba(td.X[test_idx])[:, 1]
        y_test = td.y[test_idx].astype(np.int64)
        metrics = bootstrap_metrics(y_test, proba, held.threshold_, seed=random_state)
        metrics["heldout_threshold"] = float(held.threshold_)
        test = (y_test, proba)

    clf = make().fit(matrix)
    metrics["fit_seconds"] = float(clf.fit_seconds_)
    model_dir = save_model(
        clf,
        out,
        window=window,
        metrics={**metrics, "heldout": f"grouped, {test_size:.0%} of series" if test_size > 0 else "none"},
        feature_set_file=feature_set_file,
        extra=dict(extra or {}),
    )
    run = None
    if track:
        from triage.training.tracking import log_training_run

        run = log_training_run(
            clf,
            model_dir,
            metrics=metrics,
            params={"test_size": test_size, **{k: v for k, v in (extra or {}).items()}},
            test=test,
            input_example=matrix.iloc[:5],
            register_as=register_as,
            tracking_uri=tracking_uri,
        )
    return TrainResult(classifier=clf, model_dir=model_dir, metrics=metrics, test=test, run=run)
