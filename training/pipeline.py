"""Train, measure, save and log one model: what ``triage train`` does.

1. The triaged rows are split once, grouped by series: 20 % of the series are
   held out (``test_size``). A classifier fitted on the rest is measured there:
   AUC, accuracy, sensitivity, specificity, each with a 95 % bootstrap interval
   that resamples whole held-out series: the hold-out is a sample of series,
   and candidates of one history are not independent (resampling candidates
   gave intervals that held the AUC of fresh series about 70 % of the time,
   not 95 %). Grouping is by ``series_id`` alone: one history under two ids
   sits on both sides, so :func:`data_warnings` names held-out candidates
   whose feature row a training candidate of another series repeats, and a
   feature set chosen on these same candidates (``select-features`` saw the
   held-out series too).
2. The final classifier is refitted on *all* triaged rows (the held-out
   measurement is an estimate for it, slightly pessimistic).
3. It is saved as a model directory (:mod:`training.model_files`) with the
   metrics in its manifest, and logged to MLflow with the held-out ROC and
   confusion matrix, optionally registered under a name.

All or nothing (issue 14): with tracking, the MLflow run is opened first, the
model directory is written beside its target, logged and registered from
there, and only then swapped into place
(:func:`training.tracking.training_run`). Killed at any point, the previous
model and the registry stay consistent; the next start removes the
temporary directory and settles the interrupted run. Before any fitting,
the target and the store are checked, so a bad ``--out`` or a garbage
tracking database fails in a second.

Too little data: the figures of a small hold-out mean little (40 series gave
an AUC of 0.54 with an interval from chance to good). :func:`data_warnings`
says so whenever the hold-out has fewer than :data:`MIN_HELDOUT_PER_CLASS`
candidates of either class or the AUC's 95 % interval is wider than
:data:`MAX_AUC_INTERVAL`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pandas as pd

from triage.core.errors import InputError
from triage.core.metrics import classification_report
from triage.features.matrix import resolve_features, training_data
from triage.training.classifier import TriageClassifier
from triage.training.evaluation import cross_series_twins, split_indices
from triage.training.model_files import (
    check_writable,
    clean_stale_temporaries,
    commit_model,
    save_model,
    stage_model,
)
from triage.training.thresholds import parse_policy

if TYPE_CHECKING:
    from triage.training.tracking import TrainingRun

#: Fewer held-out candidates of a class than this and the metrics are anecdotes.
MIN_HELDOUT_PER_CLASS = 30
#: Fewest alerts of a class the final model should be fitted on before it is called a model.
MIN_FIT_PER_CLASS = 10
#: An AUC interval wider than this does not tell a useful model from chance.
MAX_AUC_INTERVAL = 0.2
#: Fewer held-out series than this and resampling them gives no interval worth printing
#: (one series: every draw is the same, an interval of width 0).
MIN_HELDOUT_SERIES = 5
#: Fewer true alerts than this in the validation part a learned threshold (``fbeta:B``,
#: ``recall:R``) is chosen on, and another seed moves it far: on the ``small`` preset's
#: window-0 rows (about 5 true alerts there) seeds 0-5 gave thresholds 0.11-0.61 and 8-865
#: alarms on 26 true changes (measured 2026-11-24).
MIN_THRESHOLD_POSITIVES = 20


@dataclass
class TrainResult:
    """What :func:`train` produced. ``test`` is (y_true, proba) of the hold-out, or None.

    ``left_out``: triaged rows left out as not scorable, by label
    (:attr:`triage.features.matrix.TrainingData.left_out`; ``{}`` when none).
    """

    classifier: TriageClassifier
    model_dir: Path
    metrics: dict[str, float]
    test: tuple[np.ndarray, np.ndarray] | None
    run: TrainingRun | None
    warnings: list[str]
    left_out: dict[str, int] = field(default_factory=dict)


class ManifestArgs(TypedDict):
    """What :func:`train` puts into the manifest beside the classifier (:func:`save_model`'s keywords)."""

    window: str | int | None
    metrics: dict[str, object]
    feature_set_file: str | None
    extra: dict[str, object]


def data_warnings(
    metrics: Mapping[str, float],
    test: tuple[np.ndarray, np.ndarray] | None,
    *,
    twins: int = 0,
    selected_here: str | None = None,
    learned_threshold: tuple[str, float, int] | None = None,
    fitted: tuple[int, int] | None = None,
) -> list[str]:
    """Plain-words warnings when the held-out figures cannot mean much (see the module docstring).

    ``twins``: held-out candidates whose feature row a training candidate of another series repeats.
    ``selected_here``: the feature-set file, when it was chosen on these same candidates.
    ``learned_threshold``: (policy, threshold, true alerts in the validation part it was chosen
    on) when the threshold was learned, not given. ``fitted``: (true, false) alerts the final
    model was fitted on.
    """
    out = []
    if fitted is not None and min(fitted) < MIN_FIT_PER_CLASS:
        # With --test-size 0 nothing else said it: an SVM fitted on 6 rows, 2 of them false, then
        # called 81 of 82 alerts true.
        out.append(
            f"the model was fitted on {fitted[0]} true and {fitted[1]} false alerts (fewer than "
            f"{MIN_FIT_PER_CLASS} of a class): it has seen too few to tell them apart; train on more triaged series"
        )
    if learned_threshold is not None and learned_threshold[2] < MIN_THRESHOLD_POSITIVES:
        policy, value, n_pos = learned_threshold
        out.append(
            f"the {policy} threshold ({value:.3g}) was chosen on a validation part holding {n_pos} true "
            f"alert{'' if n_pos == 1 else 's'} (fewer than {MIN_THRESHOLD_POSITIVES}): another --seed can move "
            "it far and with it how many alerts are called true; give a fixed --threshold (e.g. 0.5) or "
            "train on more triaged series"
        )
    if test is None:
        return [*out, "no hold-out (test size 0): the model's accuracy was not measured"]
    y = test[0]
    if selected_here:
        out.append(
            f"the feature set {selected_here} was chosen (select-features) on these same candidates, the "
            "held-out ones included: the held-out figures are optimistic; choose features on other series "
            "to measure the choice too"
        )
    if twins:
        out.append(
            f"{twins} of the {len(y)} held-out candidates have a feature row identical to a training "
            "candidate's in another series (the same history under two series ids?): the hold-out keeps "
            "series ids apart, not copies, so its figures are flattered; give each history one series id"
        )
    n_true, n_false = int(y.sum()), int(len(y) - y.sum())
    if min(n_true, n_false) < MIN_HELDOUT_PER_CLASS:
        out.append(
            f"the hold-out has only {n_true} true and {n_false} false alerts (fewer than "
            f"{MIN_HELDOUT_PER_CLASS} of a class): its figures are too uncertain to compare models; "
            "train on more triaged series"
        )
    lo, hi = metrics.get("auc_ci_low"), metrics.get("auc_ci_high")
    n_series = metrics.get("heldout_series")
    if n_series is not None and n_series < MIN_HELDOUT_SERIES:
        out.append(f"the hold-out is {int(n_series)} series (fewer than {MIN_HELDOUT_SERIES}): too few to give "
                   "its figures an interval; train on more series")
    if lo is not None and hi is not None and hi - lo > MAX_AUC_INTERVAL:
        out.append(f"the held-out AUC's 95 % interval [{lo:.2f}, {hi:.2f}] is wider than {MAX_AUC_INTERVAL}: "
                   "the AUC is not known to better than that")
    return out


def _selected_on(features: object, matrix: pd.DataFrame) -> str | None:
    """``features`` as text when it is a feature-set file chosen on ``matrix``'s triaged rows, else None.

    ``select-features`` records the hash of the rows and columns it saw; the
    same hash here means its cross-validation saw the rows the hold-out takes.
    """
    if not isinstance(features, str | Path):
        return None
    from triage.features.feature_sets import load_feature_set

    try:
        recorded = load_feature_set(features).data_hash
    except InputError:  # a bare list of names records no data
        return None
    try:
        return str(features) if recorded == training_data(matrix).data_hash() else None
    except InputError:
        return None


def bootstrap_metrics(
    y: np.ndarray,
    proba: np.ndarray,
    threshold: float,
    *,
    groups: np.ndarray | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """Each metric on (y (n,) 0/1, proba (n,)) plus ``_ci_low`` / ``_ci_high``: bootstrap 2.5/97.5 %.

    With ``groups`` (series ids, shape (n,)) each draw takes as many series as
    there are, with replacement, and all their candidates (a cluster
    bootstrap; fewer than :data:`MIN_HELDOUT_SERIES` series give no interval);
    without, candidates are drawn one by one.
    """
    point = classification_report(y, proba, threshold)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    members: list[np.ndarray] = []
    if groups is not None:
        _, series_of = np.unique(np.asarray(groups), return_inverse=True)
        members = [np.flatnonzero(series_of == i) for i in range(int(series_of.max()) + 1)]
        if len(members) < MIN_HELDOUT_SERIES:
            return dict(point)
    for _ in range(n_boot):
        if members:
            idx = np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
        else:
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
    monotone_shifts: bool = False,
) -> TrainResult:
    """Fit, measure on a grouped hold-out, refit on all, save to ``out``, log to MLflow.

    ``matrix`` is the feature matrix (contract in ARCHITECTURE.md); its triaged
    rows that no model is asked about (:func:`triage.features.matrix.not_scorable`)
    are left out of the fit and the hold-out alike, counted in ``left_out``. Raises
    :class:`~triage.core.errors.InputError` for a matrix without (scorable) triaged rows or
    lacking the requested feature columns; nothing is written then.
    ``monotone_shifts`` (XGBoost only) holds P(true) non-decreasing in the
    shift-size columns (:func:`triage.training.model_kinds.monotone_increasing`),
    the recipe of the bundled ``default-scoring``.
    """
    if not 0 <= test_size < 1:  # NaN fails this too
        raise ValueError(f"test_size must be in [0, 1), got {test_size!r}")
    check_writable(out)  # fail before minutes of training, not after
    clean_stale_temporaries(out)  # left by a writer killed earlier
    if track:
        from triage.training.tracking import check_store, recover_interrupted_runs

        check_store(tracking_uri)
        recover_interrupted_runs(tracking_uri)
    columns = resolve_features(features, matrix)
    if isinstance(features, str | Path) and columns is not None:
        # The feature set's problem, not the data's (selected on another window or version).
        missing = [c for c in columns if c not in matrix.columns]
        if missing:
            raise InputError(features, None, f"names column(s) the feature matrix lacks: {', '.join(missing[:8])}"
                             + (f" and {len(missing) - 8} more" if len(missing) > 8 else ""))
    td = training_data(matrix, columns)
    # Absolute: a relative name told nothing once the model was used from another folder.
    feature_set_file = os.path.abspath(features) if isinstance(features, str | Path) else None
    # The underlying model's own parameters: any values its estimator takes.
    params: dict[str, Any] = dict(model_params or {})
    if monotone_shifts:
        from triage.training.model_kinds import monotone_increasing

        if model != "xgb":
            raise ValueError(f"monotone_shifts needs model='xgb', got {model!r}")
        constraints = monotone_increasing(td.columns)
        if not any(constraints):
            raise InputError(None, None, "no shift-size column (pair_*, ctx_* shift measures) among the features "
                                         "to hold monotone: train with candidate windows, a window K or the shift measures (--shift-measures)")
        columns = list(td.columns)  # the constraints follow this order
        params["monotone_constraints"] = constraints

    def make() -> TriageClassifier:
        return TriageClassifier(model=model, features=columns, threshold=threshold,
                                random_state=random_state, n_jobs=n_jobs, **params)

    metrics: dict[str, float] = {}
    test = None
    twins = 0
    if test_size > 0:
        train_idx, val_idx, test_idx = split_indices(
            "grouped", td.y, td.groups, td.order, seed=random_state, test_size=test_size
        )
        fit_rows = td.rows[np.sort(np.r_[train_idx, val_idx])]
        held = make().fit(matrix.iloc[fit_rows])
        proba = held.predict_proba(td.X[test_idx])[:, 1]
        y_test = td.y[test_idx].astype(np.int64)
        metrics = bootstrap_metrics(y_test, proba, held.threshold_, groups=td.groups[test_idx], seed=random_state)
        metrics["heldout_threshold"] = float(held.threshold_)
        metrics["heldout_series"] = float(len(np.unique(td.groups[test_idx])))
        test = (y_test, proba)
        twins = len(cross_series_twins(td.X, td.groups, np.r_[train_idx, val_idx], test_idx))

    clf = make().fit(matrix)
    metrics["fit_seconds"] = float(clf.fit_seconds_)
    manifest_args = ManifestArgs(
        window=window,
        # The fraction as given: "{:.0%}" wrote --test-size 0.125 as 12% and 0.004 as "0% of series".
        metrics={**metrics, "heldout": f"grouped, {test_size * 100:g}% of series" if test_size > 0 else "none",
                 "test_size": float(test_size)},
        feature_set_file=feature_set_file,
        # Triaged rows left out as not scorable (features.matrix.not_scorable), by label: evaluate's
        # settings recorded them, the model's manifest did not.
        extra={**dict(extra or {}), **({"not_scorable_left_out": dict(td.left_out)} if td.left_out else {})},
    )
    learned = None
    if clf.n_train_.get("validation_positives") is not None and parse_policy(clf.threshold_policy_).needs_validation:
        learned = (clf.threshold_policy_, float(clf.threshold_), int(clf.n_train_["validation_positives"]))
    n_true = int(np.sum(td.y))
    warnings = data_warnings(metrics, test, twins=twins, selected_here=_selected_on(features, matrix),
                             learned_threshold=learned, fitted=(n_true, int(len(td.y)) - n_true))
    if not track:
        model_dir = save_model(clf, out, **manifest_args)
        return TrainResult(classifier=clf, model_dir=model_dir, metrics=metrics, test=test, run=None,
                           warnings=warnings, left_out=td.left_out)

    import shutil

    from triage.training.tracking import log_training_run, training_run

    with training_run(out, tracking_uri) as run_id:
        staged = stage_model(clf, out, run_id=run_id, **manifest_args)
        try:
            run = log_training_run(
                clf,
                staged,
                metrics=metrics,
                params={"test_size": test_size, **{k: v for k, v in (extra or {}).items()}},
                test=test,
                input_example=matrix.iloc[np.sort(td.rows)[:5]],  # rows the model is asked about
                register_as=register_as,
                tracking_uri=tracking_uri,
                run_id=run_id,
            )
            if warnings:
                import mlflow

                mlflow.MlflowClient(run["tracking_uri"]).set_tag(run_id, "triage.warnings", " | ".join(warnings))
            commit_model(staged, out)
        finally:
            # After the swap ``staged`` holds the previous model (or is gone).
            shutil.rmtree(staged, ignore_errors=True)
    return TrainResult(classifier=clf, model_dir=Path(out), metrics=metrics, test=test, run=run, warnings=warnings,
                       left_out=td.left_out)
