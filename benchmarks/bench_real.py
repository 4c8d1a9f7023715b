"""Detectors alone and + triage on real histories with injected level shifts (issue 10).

One command regenerates BENCHMARKS.md, "Real data"::

    nice .venv/bin/python benchmarks/bench_real.py --every 1 --train-seeds 1,2,3,4,5,6 --model-kind xgb-mono   # published
    nice .venv/bin/python benchmarks/bench_real.py --every 4       # a quick look (1 in 4 base histories, the forest)
    nice .venv/bin/python benchmarks/bench_real.py --every 1 --train-seeds 1,2,3,4,5,6 --model-kind xgb-mono \
        --save-model models/default-scoring                        # also the bundled model
    nice .venv/bin/python benchmarks/bench_real.py --dev-loso --train-seeds 1,2          # the feature choice
    nice .venv/bin/python benchmarks/bench_real.py --dev-only --train-seeds 1,2,3,4,5,6   # a training choice, test unread
    nice .venv/bin/python benchmarks/bench_real.py --by-size models/default-scoring     # a diagnostic of the bundle
    nice .venv/bin/python benchmarks/bench_real.py --oracle        # perfect triage on the development parts

Protocol
--------
1. **Data** (:mod:`real_data`): the 372 real histories of ``../shared/data/real``,
   seeded multiplicative level shifts (2-30 %, both signs, 0-3 per base
   history) injected into stable stretches (``--mode stable``, the headline)
   or whole series (``--mode whole``), split by source project into fit /
   validation / test. ``--every k`` keeps 1 in k base histories of every
   part (deterministic), to keep the run short on shared machines.
2. **Candidates**: every registry detector (``triage.detectors.names()``,
   registry defaults, all 13) on every base history; the two ensembles are formed by
   :func:`triage.detectors.ensemble.vote` from their members' detections, as
   the ``Ensemble`` detector does, without running the members twice.
3. **Features** exactly as ``triage score`` builds them for a fresh candidate
   file: honest windows (:func:`triage.features.windows.candidate_bounds`,
   bounded by the other candidates of the same detector run, 60 commits at
   most), the paper's characteristics, the scale-free ``pair_*`` measures
   and ``det_score_rank`` (the candidate's score ranked among its run's).
4. **Target**: a candidate is true when the TCPDBench matching (margin 5,
   closest candidate first) pairs it with an injected change.
5. **Model** (:func:`scoring_model`): one random forest
   (:class:`~triage.training.classifier.TriageClassifier`) on the candidates
   of all registry detectors of the *fit* part, isotonic calibration on the
   *validation* part's candidates. Per-detector thresholds (``--thresholds``,
   both choices are computed and reported, the model carries one):
   ``pooled`` (default,
   :func:`triage.training.thresholds.choose_detector_thresholds_grouped`):
   three looks at unseen data -- each fit project scored out of fold by a
   model fitted on the other fit project (calibrated on validation), and the
   validation project scored by the final model; a threshold must raise the
   TCPDBench F1 and keep >= 95 % of the detector's recall on *each* of them,
   the one with the largest worst-project gain wins, else 0 (keep
   everything: triage off). ``validation`` (the first published run,
   :func:`triage.training.thresholds.choose_detector_thresholds`): the best
   F1 on the validation project alone keeping >= 95 % of the recall, 0 when
   none beats the detector alone.
6. **Test**: TCPDBench F1 / precision / recall (margin 5, mean over base
   histories) of each detector alone and + triage, and the no-detection floor.
7. **LOSO AUC**: for each of the five source projects, a model fitted on the
   other four projects' candidates (injected data, same mode) scores the left
   out project's candidates; the pooled out-of-project predictions give one
   AUC per detector (``perfherder``, ``edivisive``, ``binseg``).
8. **Alarm rate**: every detector on the untouched real histories (all 372,
   or 1 in ``--every``): alarms per 100 commits, alone and + triage
   (``--alarm-rates MODEL``: this step alone, for a saved scoring model).
9. **Feature choice** (``--dev-loso``, a separate run): leave one
   *development* project (fit and validation parts) out, with and without
   the series-relative ``ctx_*`` columns; the test part is not read. It is
   the evidence those columns were added on.
10. **Training choices** (``--dev-only``): steps 1-5 only, printing the
   development looks of step 5 (each detector's F1 alone and + triage on
   each look at the chosen thresholds, and their mean, the radius
   criterion); the test part is never read. How many extra injection seeds
   (``--train-seeds``) and which model kind (``--model-kind``) were chosen
   on it. ``--max-len L`` (the honest windows' cap, default 60; only here)
   and ``--model-seed S`` (the forests' random state, default ``--seed``)
   were compared the same way; the spread between model seeds is what a
   choice has to beat. ``--model-seed`` also applies to the full run, to
   see how far the test figures move with the forest's draw.

11. **Training on every development project** (``--train-on dev``, the
   fourteenth session's candidate recipe): steps 5's model is fitted on the
   fit *and* validation projects (the extra seeds of both); each
   development project is scored by a model fitted on the other two, one
   isotonic map on those out-of-project scores calibrates the refitted
   model, and thresholds and radius are chosen on the three out-of-project
   looks (:func:`_dev_trained_model`).

12. **Which changes are found** (``--by-size MODEL``, a diagnostic of a saved
   scoring model with its own thresholds and suppression radius, measured
   after every choice): ``perfherder``, ``ensemble`` and ``pelt`` alone and
   + triage on the test part, and which injected changes the two with
   triage and ``perfherder`` alone find, by shift size in noise units
   (:func:`real_data.recall_by_size`). ``--part validation`` reads the
   validation project instead, and then also the newest candidates
   (:func:`fresh_look`); ``--ramp W`` spreads every injected shift
   over W commits (changes that land gradually, never seen in training).

Online rows: :data:`EXTRA_ROWS` is the hook another benchmark
(``bench_real_online.py``) fills to add its rows to :func:`markdown`.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_data  # noqa: E402

from triage.core.history import Dataset, History  # noqa: E402
from triage.core.metrics import f_measure  # noqa: E402
from triage.detectors import defaults, make, names  # noqa: E402
from triage.detectors.ensemble import vote  # noqa: E402
from triage.features.extract import extract_features  # noqa: E402
from triage.features.windows import CANDIDATE_MAX_LEN  # noqa: E402
from triage.training.thresholds import (  # noqa: E402
    choose_detector_thresholds,
    choose_detector_thresholds_grouped,
    suppress_duplicates,
)

MARGIN = 5
OUT = Path(__file__).resolve().parent / "out"
#: Registry ensembles formed from members' detections (name -> overrides of ``ensemble``'s parameters).
DERIVED: dict[str, dict[str, object]] = {"ensemble": {}, "mozilla_or_ensemble": {"always": ("perfherder",)}}
LOSO_DETECTORS: tuple[str, ...] = ("perfherder", "edivisive", "binseg")
RECALL_KEPT = 0.95
#: Suppression radii tried (commits; 0 = none): one alert per change, chosen on fit + validation.
RADII: tuple[int, ...] = (0, 5, 10)
#: How the per-detector thresholds are chosen (``--thresholds``); see :func:`scoring_model`.
#: Scoring model kinds compared on the development looks (``--model-kind``); see :func:`fit_model`.
#: ``xgb-mono``: XGBoost held monotone in the shift-size columns
#: (:func:`triage.training.model_kinds.monotone_increasing`), the bundled recipe since 2026-11-24.
MODEL_KINDS: tuple[str, ...] = ("rf", "xgb", "xgb-mono")
THRESHOLD_CHOICES: tuple[str, ...] = ("pooled", "validation")
#: What the scoring model is fitted on (``--train-on``); see :func:`scoring_model`.
TRAIN_ON: tuple[str, ...] = ("fit", "dev")
#: The detectors this run uses: every registry detector (``hybrid_cvm`` too, since its
#: p-values are counted once per pair of window sizes: about as fast as the other tests).
SELECTED: list[str] = list(names())
#: Extra rows (dicts with the test-table columns) other benchmarks add, e.g. the online loop.
EXTRA_ROWS: list[dict[str, object]] = []

Candidates = dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]  # detector -> series -> (indices, scores)


# --------------------------------------------------------------------------- detectors


def _members() -> list[str]:
    return [str(m) for m in defaults("ensemble")["members"]]


def base_detectors(selected: Sequence[str]) -> list[str]:
    out = [n for n in selected if n not in DERIVED]
    return out + [m for m in _members() if m not in out]


def _detect_one(values: np.ndarray, selected: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    found = {}
    for name in base_detectors(selected):
        cps = make(name).detect(values)
        found[name] = (np.array([c.index for c in cps], dtype=np.int64), np.array([c.score for c in cps], dtype=float))
    for name, over in DERIVED.items():
        p = defaults("ensemble")
        p.update(over)
        det = sorted((int(i), m) for m in p["members"] for i in found[str(m)][0])
        cps = vote(det, int(p["margin"]), int(p["min_votes"]), set(p["always"]))
        found[name] = (np.array([c.index for c in cps], dtype=np.int64), np.array([c.score for c in cps], dtype=float))
    return found


def _detect_chunk(items, selected):
    # ``selected`` travels with the job: worker processes import this module afresh
    return [(sid, _detect_one(values, selected)) for sid, values in items]


def run_detectors(data: Dataset, n_jobs: int) -> Candidates:
    """detector -> series id -> (unique ascending indices, their scores)."""
    items = [(h.series_id, h.values) for h in data]
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))
    chunks = [[items[i] for i in order[k : k + 4]] for k in range(0, len(order), 4)]
    if n_jobs == 1:
        parts = [_detect_chunk(c, SELECTED) for c in chunks]
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=n_jobs)(delayed(_detect_chunk)(c, list(SELECTED)) for c in chunks)
    by_series = {sid: found for part in parts for sid, found in part}
    out: Candidates = {name: {} for name in SELECTED}
    for sid, found in by_series.items():
        for name in SELECTED:
            idx, sc = found[name]
            # a detector may flag an index twice (ensembles); keep the strongest
            order_ = np.lexsort((-sc, idx))
            idx, sc = idx[order_], sc[order_]
            first = np.r_[True, np.diff(idx) != 0] if idx.size else np.zeros(0, bool)
            out[name][sid] = (idx[first], sc[first])
    return out


def cached_detections(data: Dataset, key: str, n_jobs: int, log: Callable[[str], None]) -> Candidates:
    """Detector output, cached in benchmarks/out (git-ignored) under ``key``."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"real_detections_{key}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            cached = pickle.load(fh)
        if set(SELECTED) <= set(cached) and set(cached[SELECTED[0]]) == {h.series_id for h in data}:
            return {d: cached[d] for d in SELECTED}
    started = time.perf_counter()
    found = run_detectors(data, n_jobs)
    log(f"  detectors on {len(data)} histories ({key}): {time.perf_counter() - started:.0f} s")
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(found, fh)
    tmp.replace(path)
    return found


# --------------------------------------------------------------------------- rows


def matched(truth: np.ndarray, indices: np.ndarray, margin: int = MARGIN) -> np.ndarray:
    """Which candidates the TCPDBench matching pairs with a true change, shape (len(indices),)."""
    free = sorted(int(i) for i in indices)
    hit: set[int] = set()
    for tau in sorted(int(t) for t in truth):
        close = [(abs(tau - x), x) for x in free if abs(tau - x) <= margin]
        if close:
            _, best = min(close)
            hit.add(best)
            free.remove(best)
    return np.array([int(i) in hit for i in indices], dtype=bool)


def candidate_rows(data: Dataset, found: dict[str, tuple[np.ndarray, np.ndarray]], detector: str,
                   max_len: int = CANDIDATE_MAX_LEN) -> pd.DataFrame:
    """The feature matrix of one detector run's candidates, with ``det_score_rank`` and ``y``.

    ``max_len``: most commits of each honest window (``--max-len``, a development choice).
    """
    wanted = {sid: idx for sid, (idx, _) in found.items() if len(idx)}
    m = extract_features(data, candidates=wanted, candidate_windows=True, pair=True, context=True, max_len=max_len)
    scores = np.concatenate([found[sid][1] for sid in m["series_id"].unique()]) if len(m) else np.zeros(0)
    m["det_score_rank"] = pd.Series(scores).rank(pct=True).to_numpy() if len(m) else scores
    y = np.zeros(len(m), dtype=bool)
    for sid, rows in m.groupby("series_id", sort=False).groups.items():
        h = data[str(sid)]
        y[np.asarray(rows)] = matched(h.true_change_points(), m.loc[rows, "index"].to_numpy())
    m["y"] = y.astype(np.int64)
    m["detector"] = detector
    return m


def lasting_shift(rows: pd.DataFrame, min_shift: float = 3.0) -> np.ndarray:
    """A shift of >= ``min_shift`` robust sd on 30-commit windows that still holds 10-20 commits later.

    Read off the candidate's ``ctx_far_shift`` and ``ctx_persist_after``; the
    label audit (``audit_stable.py``) counts false candidates that show one.
    """
    persist = rows["ctx_persist_after"].to_numpy(float)
    return (rows["ctx_far_shift"].to_numpy(float) >= min_shift) & (persist >= 0.5) & (persist <= 1.5)


def far_from_injected(data: Dataset, rows: pd.DataFrame, gap: int = 30) -> np.ndarray:
    """Whether each candidate lies more than ``gap`` commits from every injected change of its history."""
    out = np.ones(len(rows), dtype=bool)
    for sid, idx in rows.groupby("series_id", sort=False).groups.items():
        truth = data[str(sid)].true_change_points()
        if len(truth):
            at = rows.loc[idx, "index"].to_numpy()[:, None]
            out[rows.index.get_indexer(idx)] = (np.abs(at - truth[None, :]) > gap).all(axis=1)
    return out


def all_rows(data: Dataset, found: Candidates, max_len: int = CANDIDATE_MAX_LEN) -> pd.DataFrame:
    return pd.concat([candidate_rows(data, found[d], d, max_len) for d in SELECTED], ignore_index=True)


def feature_names(rows: pd.DataFrame) -> list[str]:
    from triage.features.matrix import feature_columns

    return feature_columns(rows)


#: ``--xgb-params``: boosting settings over the bundled recipe's (a development probe; empty = the recipe).
XGB_PARAMS: dict[str, object] = {}


def fit_model(rows: pd.DataFrame, validation: pd.DataFrame | None, seed: int, n_jobs: int, kind: str = "rf"):
    from triage.training.classifier import TriageClassifier

    cols = feature_names(rows)
    if kind in ("xgb", "xgb-mono"):
        # The online models' boosting settings (400 trees of depth 6): about 1 MB on disk.
        params: dict[str, object] = {"n_estimators": 400, "max_depth": 6, "learning_rate": 0.05, **XGB_PARAMS}
        if kind == "xgb-mono":
            from triage.training.model_kinds import monotone_increasing

            # a larger shift, other columns fixed, is never less likely a change (BENCHMARKS.md)
            params["monotone_constraints"] = monotone_increasing(cols)
    elif kind == "rf":
        # 140 trees whose smallest leaf grows with the rows (1 row in 2,000)
        # keep a forest on all fit rows and six augmented seeds under the 5 MB
        # model limit (200 trees gave 6.2 MB with two seeds).
        params = {"n_estimators": 140, "min_samples_leaf": max(3, round(len(rows) / 2000))}
    else:
        raise ValueError(f"model kind {kind!r} is not one of {MODEL_KINDS}")
    clf = TriageClassifier(model=kind.split("-")[0], features=cols, threshold="0.5",
                           calibration="isotonic" if validation is not None else "none",
                           random_state=seed, n_jobs=n_jobs, **params)
    val = None if validation is None else (validation[cols], validation["y"].to_numpy())
    clf.fit(rows[cols], rows["y"].to_numpy(), groups=rows["series_id"].to_numpy(), validation=val)
    return clf


def proba_of(clf, rows: pd.DataFrame) -> np.ndarray:
    if rows.empty:
        return np.zeros(0)
    return clf.predict_proba(rows[clf.feature_names_])[:, 1]


# --------------------------------------------------------------------------- metrics


def tcpd(data: Dataset, predictions: dict[str, np.ndarray]) -> dict[str, float]:
    """TCPDBench F1 / precision / recall, margin 5, means over the base histories."""
    f, p, r = [], [], []
    for h in data:
        s = f_measure({"truth": h.true_change_points().tolist()}, [int(i) for i in predictions.get(h.series_id, ())], MARGIN)
        f.append(s.f)
        p.append(s.precision)
        r.append(s.recall)
    return {"f1": float(np.mean(f)), "precision": float(np.mean(p)), "recall": float(np.mean(r))}


def kept(rows: pd.DataFrame, proba: np.ndarray, threshold: float, radius: int = 0) -> dict[str, np.ndarray]:
    """Series -> kept candidate indices: P(true) >= threshold, then one per ``radius`` commits.

    Threshold 0 is triage off: every candidate, no suppression.
    """
    keep = proba >= threshold
    if threshold > 0 and radius > 0:
        keep = suppress_duplicates(rows["series_id"].to_numpy(), rows["index"].to_numpy(), proba, keep, radius)
    sel = rows[keep]
    return {str(sid): g["index"].to_numpy() for sid, g in sel.groupby("series_id")}


def near_end(data: Dataset, rows: pd.DataFrame) -> np.ndarray:
    """Bool per row: fewer than ``HOLD_HORIZON`` commits from its series' end in ``data``.

    The newest candidates: ``ctx_persist_after`` cannot be measured for them
    yet, and a routed model (``--newest-model``) decides them.
    """
    from triage.features.candidate_context import HOLD_HORIZON
    from triage.scoring import near_end as candidates_near_end

    return candidates_near_end(data, rows["series_id"].astype(str).to_numpy(), rows["index"].to_numpy(), HOLD_HORIZON)


def kept_routed(rows: pd.DataFrame, p_main: np.ndarray, t_main: float, p_new: np.ndarray, t_new: float,
                recent: np.ndarray, radius: int = 0) -> dict[str, np.ndarray]:
    """:func:`kept` with the ``recent`` rows decided by a second model (its P(true) ``p_new``, threshold ``t_new``).

    As ``triage score`` routes (:func:`triage.scoring.score_candidates`): the
    other rows keep the calls they get without routing (the main threshold,
    one alert per ``radius`` commits on the main P(true)); a ``recent`` row
    is called by ``t_new`` (0 keeps it) and, when the main threshold is above
    0, dropped as a duplicate near a kept other row or a stronger kept
    recent one. (Until 2026-11-25 03:20 UTC, and in the rule's two
    development runs, one suppression ran over both models' P(true), which
    let a routed row demote an other one.)
    """
    sid, idx = rows["series_id"].to_numpy(), rows["index"].to_numpy()
    suppress = t_main > 0 and radius > 0
    keep_main = p_main >= t_main
    if suppress:
        keep_main = suppress_duplicates(sid, idx, p_main, keep_main, radius)
    keep = np.where(recent, p_new >= t_new, keep_main)
    if suppress and recent.any():
        keep = suppress_duplicates(sid, idx, np.where(recent, p_new, 2.0 + p_main), keep, radius)
    sel = rows[keep]
    return {str(sid): g["index"].to_numpy() for sid, g in sel.groupby("series_id")}


def routed_look(data: Dataset, rows: pd.DataFrame, p_main: np.ndarray, thresholds: dict[str, float], radius: int,
                p_new: np.ndarray, new_thresholds: dict[str, float]) -> dict[str, tuple[float, float, int]]:
    """Detector -> (TCPDBench F1 + triage by the main model alone, F1 routed, candidates routed) on ``data``."""
    recent = near_end(data, rows)
    out: dict[str, tuple[float, float, int]] = {}
    for d in SELECTED:
        sel = (rows["detector"] == d).to_numpy()
        main = tcpd(data, kept(rows[sel], p_main[sel], thresholds[d], radius))["f1"]
        routed = tcpd(data, kept_routed(rows[sel], p_main[sel], thresholds[d], p_new[sel], new_thresholds[d],
                                        recent[sel], radius))["f1"]
        out[d] = (main, routed, int(recent[sel].sum()))
    return out


def auc(y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan")


# --------------------------------------------------------------------------- run


def scoring_model(parts: dict[str, Dataset], found: dict[str, Candidates], seed: int, n_jobs: int, log=print,
                  choice: str = "pooled", extra_fit: Sequence[pd.DataFrame] = (), kind: str = "rf",
                  max_len: int = CANDIDATE_MAX_LEN, train_on: str = "fit", extra_val: Sequence[pd.DataFrame] = ()):
    """Fit on the fit part, calibrate on validation, choose per-detector thresholds and the radius.

    ``train_on="dev"`` (``--train-on dev``, :func:`_dev_trained_model`): fit
    on every development project instead (fit and validation parts, with
    ``extra_fit`` and ``extra_val``), calibrate on out-of-project scores, and
    choose thresholds and radius on the three out-of-project looks.

    ``extra_fit``: more training rows of the fit part (the same base histories
    with other injection seeds, ``--train-seeds``); they only ever add to a
    model's training rows, never to the rows it is judged on.

    Both threshold choices are computed (fit and validation data only);
    ``choice`` says which the model carries:

    * ``validation`` (the first published run): the best validation F1 keeping
      >= 95 % of the detector's recall, 0 where nothing beats the detector
      (:func:`choose_detector_thresholds`, one project, rhai);
    * ``pooled``: :func:`choose_detector_thresholds_grouped` over three looks at
      unseen data: each fit project scored by a model fitted on the other fit
      project (calibrated on validation, as the final model), and the
      validation project scored by the final model; the threshold must raise
      F1 and keep >= 95 % of recall on each of the three, else 0.

    The suppression radius (:data:`RADII`, one alert per change) is chosen on
    the same three looks: the radius whose ``pooled`` thresholds give the
    highest mean F1 over detectors and looks (ties: the smaller radius).

    Returns ``(clf, thresholds, by_choice, val_rows, fit_rows, dev)``;
    ``dev`` holds the development looks at the chosen radius and ``pooled``
    thresholds: ``{"radius_scores": {radius: mean F1}, "mean": mean F1,
    "looks": {look: {detector: (F1 alone, F1 + triage, recall kept)}}}``.
    """
    if choice not in THRESHOLD_CHOICES:
        raise ValueError(f"threshold choice {choice!r} is not one of {THRESHOLD_CHOICES}")
    if train_on not in TRAIN_ON:
        raise ValueError(f"train_on {train_on!r} is not one of {TRAIN_ON}")
    fit_rows = all_rows(parts["fit"], found["fit"], max_len)
    val_rows = all_rows(parts["validation"], found["validation"], max_len)
    if train_on == "dev":
        return _dev_trained_model(parts, fit_rows, val_rows, seed, n_jobs, log, choice,
                                  [*extra_fit, *extra_val], kind)
    train_rows = pd.concat([fit_rows, *extra_fit], ignore_index=True)
    log(f"  fit rows {len(fit_rows)} ({int(fit_rows['y'].sum())} true), training rows with extra seeds "
        f"{len(train_rows)}, validation rows {len(val_rows)}")
    clf = fit_model(train_rows, val_rows, seed, n_jobs, kind)
    val_p = proba_of(clf, val_rows)
    oof = _out_of_fold_predictions(parts, fit_rows, train_rows, val_rows, seed, n_jobs, kind)
    looks = {s: (data, held, p) for s, (data, held, p) in oof.items()}
    looks["validation"] = (parts["validation"], val_rows, val_p)
    radius, by_choice, dev = _choose_thresholds_and_radius(looks, "validation", log)
    thresholds = by_choice[choice]
    # A detector the model does not know: the most recall-keeping threshold at which triage
    # helps some detector (0 = triage off is skipped, or a mixed file would not be triaged at all).
    active = [t for t in thresholds.values() if t > 0]
    clf.threshold_ = float(min(active)) if active else 0.0
    clf.suppress_radius_ = radius
    if choice == "validation":
        clf.threshold_policy_ = f"tcpd-f1, recall >= {RECALL_KEPT:g} x detector's (validation, per detector)"
    else:
        clf.threshold_policy_ = (f"tcpd-f1 gain and recall >= {RECALL_KEPT:g} x detector's on each of the "
                                 "out-of-fold fit projects and validation (per detector; else 0)")
    return clf, thresholds, by_choice, val_rows, fit_rows, dev


def _choose_thresholds_and_radius(looks: dict[str, tuple[Dataset, pd.DataFrame, np.ndarray]], validation: str,
                                  log) -> tuple[int, dict[str, dict[str, float]], dict]:
    """Per-detector thresholds and the suppression radius from development looks (name -> data, rows, P(true)).

    For each radius of :data:`RADII`: ``pooled`` thresholds (a gain and >= 95 %
    of the recall on each look) and ``validation`` ones (the ``validation``
    look alone); the radius whose ``pooled`` thresholds give the highest
    mean F1 over detectors and looks wins (ties: the smaller). Returns
    ``(radius, {choice: thresholds}, dev)``, ``dev`` as :func:`scoring_model` describes.
    """
    best: tuple[float, int] | None = None
    by_radius: dict[int, dict[str, dict[str, float]]] = {}
    looks_by: dict[int, dict[str, dict[str, object]]] = {}
    scores: dict[int, float] = {}
    for radius in RADII:
        evaluators = {name: _evaluators(data, rows, p, radius) for name, (data, rows, p) in looks.items()}
        pooled = choose_detector_thresholds_grouped(evaluators, recall_kept=RECALL_KEPT)
        by_radius[radius] = {
            "validation": choose_detector_thresholds(evaluators[validation], recall_kept=RECALL_KEPT),
            "pooled": pooled,
        }
        score = float(np.mean([look[d](pooled[d])[0] for look in evaluators.values() for d in look]))  # type: ignore[operator]
        looks_by[radius], scores[radius] = evaluators, score
        log(f"  radius {radius}: mean F1 over detectors and looks {score:.4f}")
        if best is None or score > best[0] + 1e-12:
            best = (score, radius)
    assert best is not None
    radius = best[1]
    by_choice = by_radius[radius]
    dev = {"radius_scores": scores, "mean": scores[radius], "looks": {
        name: {d: _look_row(evaluate, by_choice["pooled"][d]) for d, evaluate in look.items()}
        for name, look in looks_by[radius].items()
    }}
    return radius, by_choice, dev


def _project_of(series_id: object) -> str:
    # extra seeds' rows carry "#s<seed>" after the base history's id
    return real_data.source_of(str(series_id).split("#", 1)[0])


def _dev_trained_model(parts: dict[str, Dataset], fit_rows: pd.DataFrame, val_rows: pd.DataFrame, seed: int,
                       n_jobs: int, log, choice: str, extra: Sequence[pd.DataFrame], kind: str):
    """:func:`scoring_model` with ``train_on="dev"``: every development project trains the model.

    Each development project P (the two fit projects and the validation
    project) is scored by a model fitted on the other two projects' rows
    (seed 0 and the extra seeds): its *out-of-project* look. One isotonic map,
    fitted on the pooled out-of-project scores, is the calibration; the
    model that ships is then refitted on all development rows and carries
    that map (scikit-learn's ``CalibratedClassifierCV(ensemble=False)`` does
    the same with cross-validated predictions). Thresholds (``pooled``: a gain
    and >= 95 % recall on each look; ``validation``: the validation
    project's look alone) and the suppression radius are chosen on the
    three looks, calibrated by the map. Same return value as
    :func:`scoring_model`.
    """
    from sklearn.isotonic import IsotonicRegression

    dev_rows = pd.concat([fit_rows, val_rows], ignore_index=True)
    train_rows = pd.concat([dev_rows, *extra], ignore_index=True)
    dev_src = dev_rows["series_id"].map(_project_of).to_numpy()
    train_src = train_rows["series_id"].map(_project_of).to_numpy()
    log(f"  development rows {len(dev_rows)} ({int(dev_rows['y'].sum())} true), training rows with extra seeds "
        f"{len(train_rows)}; projects {', '.join(sorted(set(dev_src)))}")
    dev_data = [h for p in ("fit", "validation") for h in parts[p]]
    raw: dict[str, tuple[Dataset, pd.DataFrame, np.ndarray]] = {}
    for project in sorted(set(dev_src)):
        held = dev_rows[dev_src == project].reset_index(drop=True)
        other = fit_model(train_rows[train_src != project].reset_index(drop=True), None, seed, n_jobs, kind)
        data = Dataset([h for h in dev_data if real_data.source_of(h.series_id) == project])
        raw[project] = (data, held, proba_of(other, held))
        log(f"  {project}: out-of-project AUC {auc(held['y'].to_numpy(), raw[project][2]):.4f}")
    calibrator = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
        np.concatenate([r[2] for r in raw.values()]), np.concatenate([r[1]["y"].to_numpy() for r in raw.values()]))
    val_project = real_data.source_of(parts["validation"][0].series_id)
    looks = {project: (data, held, calibrator.predict(r)) for project, (data, held, r) in raw.items()}
    radius, by_choice, dev = _choose_thresholds_and_radius(looks, val_project, log)
    thresholds = by_choice[choice]
    clf = fit_model(train_rows, None, seed, n_jobs, kind)
    clf.calibrator_ = calibrator
    clf.calibration = "isotonic"
    active = [t for t in thresholds.values() if t > 0]
    clf.threshold_ = float(min(active)) if active else 0.0
    clf.suppress_radius_ = radius
    clf.threshold_policy_ = (f"tcpd-f1 gain and recall >= {RECALL_KEPT:g} x detector's on each development "
                             "project scored out of project (per detector; else 0)") if choice == "pooled" else (
        f"tcpd-f1, recall >= {RECALL_KEPT:g} x detector's (validation project scored out of project, per detector)")
    return clf, thresholds, by_choice, val_rows, fit_rows, dev


def _look_row(evaluate, threshold: float) -> tuple[float, float, float]:
    """(F1 alone, F1 + triage, recall kept) of one detector on one development look."""
    f0, r0 = evaluate(0.0)
    f, r = evaluate(threshold)
    return f0, f, (r / r0 if r0 > 0 else float("nan"))


def _evaluators(data: Dataset, rows: pd.DataFrame, proba: np.ndarray, radius: int = 0) -> dict[str, object]:
    out: dict[str, object] = {}
    for d in SELECTED:
        sel = (rows["detector"] == d).to_numpy()
        out[d] = _evaluator(data, rows[sel], proba[sel], radius)
    return out


def _out_of_fold_predictions(parts: dict[str, Dataset], fit_rows: pd.DataFrame, train_rows: pd.DataFrame,
                             val_rows: pd.DataFrame, seed: int, n_jobs: int, kind: str = "rf"):
    """Fit project -> (its base histories, its rows, P(true) by a model fitted on the other fit projects)."""
    src = fit_rows["series_id"].map(real_data.source_of)
    train_src = train_rows["series_id"].map(real_data.source_of)
    out = {}
    for s in sorted(src.unique()):
        held = fit_rows[(src == s).to_numpy()].reset_index(drop=True)
        train = train_rows[(train_src != s).to_numpy()].reset_index(drop=True)
        if held.empty or train.empty or train["y"].nunique() < 2:
            continue
        clf = fit_model(train, val_rows, seed, n_jobs, kind)
        data = Dataset([h for h in parts["fit"] if real_data.source_of(h.series_id) == s])
        out[s] = (data, held, proba_of(clf, held))
    return out


def _evaluator(data: Dataset, rows: pd.DataFrame, proba: np.ndarray, radius: int = 0):
    """threshold -> (F1, recall) of the detector + triage on ``data`` (TCPDBench means)."""

    def evaluate(threshold: float) -> tuple[float, float]:
        s = tcpd(data, kept(rows, proba, threshold, radius))
        return s["f1"], s["recall"]

    evaluate.candidates = np.unique(proba)  # type: ignore[attr-defined]
    return evaluate


def extra_seed_rows(real: Dataset, mode: str, seeds: Sequence[int], every: int, part: str, n_jobs: int,
                    log=print, max_len: int = CANDIDATE_MAX_LEN) -> list[pd.DataFrame]:
    """Candidate rows of one part's base histories injected with other seeds (training augmentation).

    The base histories are the same real stretches; only the injected shifts
    differ, so the rows never leave their part (or source project). Series
    ids get ``#s<seed>`` appended so they never collide with seed 0's.
    """
    out = []
    for s in seeds:
        parts = {p: real_data.subsample(d, every) for p, d in real_data.split(real_data.inject(real, mode=mode, seed=s)).items()}
        found = cached_detections(parts[part], f"{mode}_s{s}_e{every}_{part}", n_jobs, log)
        rows = all_rows(parts[part], found, max_len)
        rows["series_id"] = rows["series_id"].astype(str) + f"#s{s}"
        out.append(rows)
    return out


def fresh_rows(data: Dataset, key: str, n_jobs: int, log=print, max_len: int = CANDIDATE_MAX_LEN,
               seed: int = 0) -> pd.DataFrame:
    """Rows of the newest candidates: those of :func:`real_data.truncate_fresh` copies of ``data``.

    Every registry detector runs on the copies (cached under ``key``), and
    only candidates fewer than :data:`~triage.features.candidate_context.HOLD_HORIZON`
    commits from their copy's end are kept: the alerts ``triage score`` sees
    when it runs right after the newest results, whose ``ctx_persist_after``
    cannot be measured yet. Labels as :func:`candidate_rows` gives them.
    """
    cut = real_data.truncate_fresh(data, seed)
    found = cached_detections(cut, f"{key}_fresh{seed}", n_jobs, log)
    rows = all_rows(cut, found, max_len)
    return rows[near_end(cut, rows)].reset_index(drop=True)


def fresh_train_rows(real: Dataset, mode: str, seeds: Sequence[int], every: int, n_jobs: int, log=print,
                     max_len: int = CANDIDATE_MAX_LEN) -> list[pd.DataFrame]:
    """:func:`fresh_rows` of the fit part for injection ``seeds`` (``--fresh-train``): training rows only."""
    out = []
    for s in seeds:
        fit = real_data.subsample(real_data.split(real_data.inject(real, mode=mode, seed=s))["fit"], every)
        rows = fresh_rows(fit, f"{mode}_s{s}_e{every}_fit", n_jobs, log, max_len)
        rows["series_id"] = rows["series_id"].astype(str) + f"#s{s}"
        out.append(rows)
    return out


def fresh_look(clf, thresholds: dict[str, float], data: Dataset, key: str, n_jobs: int, log=print) -> dict:
    """How a scoring model calls the newest candidates of ``data`` (the validation part; the test part never).

    Candidate-level, per detector at its threshold (0: all kept): precision,
    recall and F1 of the kept candidates against the true ones, for the
    detector alone (all kept) and + triage; and the AUC of all detectors'
    fresh candidates pooled. Returns ``{"detectors": {name: (F1 alone, F1 +
    triage, recall + triage, candidates, true)}, "auc": float, "mean": mean
    F1 + triage over detectors}``.
    """
    rows = fresh_rows(data, key, n_jobs, log)
    p = proba_of(clf, rows)
    y = rows["y"].to_numpy().astype(bool)
    out: dict[str, tuple[float, float, float, int, int]] = {}
    for d in SELECTED:
        sel = (rows["detector"] == d).to_numpy()
        yd, pd_ = y[sel], p[sel]

        def f1(keep: np.ndarray, yd=yd) -> tuple[float, float]:
            tp = int((keep & yd).sum())
            prec = tp / keep.sum() if keep.sum() else 0.0
            rec = tp / yd.sum() if yd.sum() else 0.0
            return (2 * prec * rec / (prec + rec) if prec + rec else 0.0), rec

        alone, _ = f1(np.ones(sel.sum(), dtype=bool))
        with_t, rec = f1(pd_ >= thresholds.get(d, 0.0))
        out[d] = (alone, with_t, rec, int(sel.sum()), int(yd.sum()))
    return {"detectors": out, "auc": auc(y, p), "mean": float(np.mean([v[1] for v in out.values()]))}


def development(mode: str, seed: int, every: int, n_jobs: int, log=print, train_seeds: Sequence[int] = (),
                kind: str = "rf", max_len: int = CANDIDATE_MAX_LEN, model_seed: int | None = None,
                train_on: str = "fit", fresh_seeds: Sequence[int] = (), newest_seeds: Sequence[int] = ()) -> dict:
    """Steps 1-5 only (``--dev-only``): the development looks of a training choice; the test part is never read.

    Also :func:`fresh_look` on the validation part. ``fresh_seeds``
    (``--fresh-train``): add the fit part's newest candidates of these
    injection seeds to the training rows (:func:`fresh_train_rows`).
    ``newest_seeds`` (``--newest-model``): also fit a second model, the
    recipe plus those rows, with its own thresholds (:func:`newest_model`),
    and report the validation project routed (:func:`routed_look`) and the
    newest model's fresh look.

    ``max_len``: the honest windows' length cap; ``model_seed``: the models' random
    state (default ``seed``), to see how much of a difference the forest's own draw makes.
    """
    model_seed = seed if model_seed is None else model_seed
    started = time.perf_counter()
    real = real_data.load_real()
    parts = {p: real_data.subsample(d, every) for p, d in real_data.split(real_data.inject(real, mode=mode, seed=seed)).items()
             if p != "test"}
    found = {p: cached_detections(d, f"{mode}_s{seed}_e{every}_{p}", n_jobs, log) for p, d in parts.items()}
    extra_fit = extra_seed_rows(real, mode, train_seeds, every, "fit", n_jobs, log, max_len)
    extra_fit += fresh_train_rows(real, mode, fresh_seeds, every, n_jobs, log, max_len)
    extra_val = extra_seed_rows(real, mode, train_seeds, every, "validation", n_jobs, log, max_len) if train_on == "dev" else []
    clf, thresholds, *_, dev = scoring_model(parts, found, model_seed, n_jobs, log, "pooled", extra_fit, kind, max_len,
                                             train_on, extra_val)
    fresh = fresh_look(clf, thresholds, parts["validation"], f"{mode}_s{seed}_e{every}_validation", n_jobs, log)
    routed = None
    if newest_seeds:
        nclf, nthresholds = newest_model(real, parts, found, mode, every, model_seed, n_jobs, log, extra_fit,
                                         newest_seeds, kind, max_len, train_on, extra_val)
        val_rows = all_rows(parts["validation"], found["validation"], max_len)
        routed = {
            "seeds": list(newest_seeds),
            "validation": routed_look(parts["validation"], val_rows, proba_of(clf, val_rows), thresholds,
                                      int(clf.suppress_radius_), proba_of(nclf, val_rows), nthresholds),
            "fresh": fresh_look(nclf, nthresholds, parts["validation"], f"{mode}_s{seed}_e{every}_validation",
                                n_jobs, log),
        }
    return {"config": {"mode": mode, "seed": seed, "every": every, "train_seeds": list(train_seeds), "kind": kind,
                       "max_len": max_len, "model_seed": model_seed, "train_on": train_on,
                       "fresh_seeds": list(fresh_seeds)},
            "dev": dev, "fresh": fresh, "routed": routed, "seconds": time.perf_counter() - started}


def newest_model(real: Dataset, parts: dict[str, Dataset], found: dict[str, Candidates], mode: str, every: int,
                 model_seed: int, n_jobs: int, log, extra_fit: Sequence[pd.DataFrame], newest_seeds: Sequence[int],
                 kind: str, max_len: int = CANDIDATE_MAX_LEN, train_on: str = "fit",
                 extra_val: Sequence[pd.DataFrame] = ()):
    """The model routed the newest candidates (``--newest-model``): the recipe plus the fit part's fresh rows.

    :func:`scoring_model` with :func:`fresh_train_rows` of ``newest_seeds``
    added to ``extra_fit``; its own ``pooled`` thresholds and radius.
    Returns ``(clf, thresholds)``.
    """
    log(f"newest-candidates model: fresh rows of seeds {list(newest_seeds)}")
    rows = [*extra_fit, *fresh_train_rows(real, mode, newest_seeds, every, n_jobs, log, max_len)]
    nclf, nthresholds, *_ = scoring_model(parts, found, model_seed, n_jobs, log, "pooled", rows, kind, max_len,
                                          train_on, extra_val)
    return nclf, nthresholds


def routed_markdown(routed: dict) -> str:
    """The validation project routed and main alone, and the newest model's fresh look (``--newest-model``)."""
    look = routed["validation"]
    main = float(np.mean([v[0] for v in look.values()]))
    both = float(np.mean([v[1] for v in look.values()]))
    lines = [f"Routing the newest candidates (fewer than 13 commits from the end) to a second model trained with "
             f"the fresh rows of seeds {routed['seeds']}: the validation project over all its candidates, "
             f"TCPDBench F1 + triage by the main model alone -> routed; mean over detectors {main:.4f} -> "
             f"**{both:.4f}** ({both - main:+.4f}):", "",
             "| detector | candidates routed | main alone -> routed |", "| --- | ---: | ---: |"]
    lines += [f"| {d} | {n} | {a:.3f} -> {b:.3f} |" for d, (a, b, n) in look.items()]
    lines += ["", "The newest model on the newest candidates:", "", fresh_markdown(routed["fresh"])]
    return "\n".join(lines)


def development_markdown(result: dict) -> str:
    c, dev = result["config"], result["dev"]
    looks = list(dev["looks"])
    lines = [f"Development looks (`{c['mode']}`, seed {c['seed']}, 1 in {c['every']} base histories; model `{c['kind']}`; "
             f"extra training seeds {c['train_seeds'] or 'none'}; windows of at most {c.get('max_len', CANDIDATE_MAX_LEN)} commits; "
             f"model seed {c.get('model_seed', c['seed'])}"
             + ("; trained on every development project, looks out of project" if c.get("train_on") == "dev" else "")
             + "; the test part not read): F1 alone -> + triage "
             "(recall kept) at the `pooled` thresholds; mean F1 over detectors and looks by suppression radius: "
             + ", ".join(f"{r}: {v:.4f}" for r, v in dev["radius_scores"].items()) + ".", "",
             "| detector | " + " | ".join(looks) + " |", "| --- |" + " ---: |" * len(looks)]
    for d in dev["looks"][looks[0]]:
        cells = []
        for name in looks:
            f0, f, kept_ = dev["looks"][name][d]
            cells.append(f"{f0:.3f} -> {f:.3f} ({100 * kept_:.0f} %)")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    lines += ["", f"Mean F1 over detectors and looks: **{dev['mean']:.4f}**. Run time {result['seconds'] / 60:.1f} min."]
    if result.get("fresh"):
        lines += ["", fresh_markdown(result["fresh"], c.get("fresh_seeds", ()))]
    if result.get("routed"):
        lines += ["", routed_markdown(result["routed"])]
    return "\n".join(lines) + "\n"


def fresh_markdown(fresh: dict, fresh_seeds: Sequence[int] = ()) -> str:
    """The table of a :func:`fresh_look`."""
    lines = ["Newest candidates of the validation part (`fresh_look`: copies cut 1-12 commits after each "
             "injected change and at one random commit; candidates fewer than 13 commits from the end), "
             f"candidate-level F1 alone -> + triage (recall + triage); pooled AUC {fresh['auc']:.3f}, "
             f"mean F1 + triage over detectors **{fresh['mean']:.4f}**"
             + (f"; fresh training rows of seeds {list(fresh_seeds)}" if fresh_seeds else "") + ":", "",
             "| detector | candidates (true) | F1 alone -> + triage (recall) |", "| --- | ---: | ---: |"]
    for d, (f0, f, r, n, t) in fresh["detectors"].items():
        lines.append(f"| {d} | {n} ({t}) | {f0:.3f} -> {f:.3f} ({r:.3f}) |")
    return "\n".join(lines)


def run(mode: str, seed: int, every: int, n_jobs: int, loso: bool, save_model: Path | None, log=print,
        choice: str = "pooled", train_seeds: Sequence[int] = (), kind: str = "rf", model_seed: int | None = None,
        train_on: str = "fit", fresh_seeds: Sequence[int] = (), newest_seeds: Sequence[int] = (),
        save_newest: Path | None = None) -> dict:
    """Steps 1-8 (the published table); ``model_seed``: the scoring model's random state (default ``seed``).

    ``newest_seeds`` (``--newest-model``): also the model routed the newest
    candidates (:func:`newest_model`); the test part, the alarm rates and the
    newest candidates of validation and test are then also reported routed,
    and ``save_model`` saves it beside the scoring model (``<name>-newest``,
    named in the scoring model's manifest).

    ``fresh_seeds``: the fit part's newest candidates of these injection seeds
    join the training rows (:func:`fresh_train_rows`); :func:`fresh_look` on
    the validation part is reported either way.
    """
    started = time.perf_counter()
    model_seed = seed if model_seed is None else model_seed
    real = real_data.load_real()
    injected = real_data.inject(real, mode=mode, seed=seed)
    parts = {p: real_data.subsample(d, every) for p, d in real_data.split(injected).items()}
    for p, d in parts.items():
        log(f"{p}: {len(d)} base histories, {sum(len(h) for h in d)} commits, {sum(int(h.true_change.sum()) for h in d)} injected changes")
    found = {p: cached_detections(d, f"{mode}_s{seed}_e{every}_{p}", n_jobs, log) for p, d in parts.items()}
    extra_fit = extra_seed_rows(real, mode, train_seeds, every, "fit", n_jobs, log)
    extra_fit += fresh_train_rows(real, mode, fresh_seeds, every, n_jobs, log)
    extra_val = extra_seed_rows(real, mode, train_seeds, every, "validation", n_jobs, log) if train_on == "dev" else []
    clf, thresholds, by_choice, _, _, dev = scoring_model(parts, found, model_seed, n_jobs, log, choice, extra_fit, kind,
                                                          train_on=train_on, extra_val=extra_val)
    radius = int(clf.suppress_radius_)
    fresh = fresh_look(clf, thresholds, parts["validation"], f"{mode}_s{seed}_e{every}_validation", n_jobs, log)
    nclf = None
    if newest_seeds:
        nclf, nthresholds = newest_model(real, parts, found, mode, every, model_seed, n_jobs, log, extra_fit,
                                         newest_seeds, kind, train_on=train_on, extra_val=extra_val)

    test = parts["test"]
    test_rows = all_rows(test, found["test"])
    test_p = proba_of(clf, test_rows)
    routed = None
    if nclf is not None:
        val_rows = all_rows(parts["validation"], found["validation"])
        routed = {
            "seeds": list(newest_seeds),
            "validation": routed_look(parts["validation"], val_rows, proba_of(clf, val_rows), thresholds, radius,
                                      proba_of(nclf, val_rows), nthresholds),
            "fresh": fresh_look(nclf, nthresholds, parts["validation"], f"{mode}_s{seed}_e{every}_validation",
                                n_jobs, log),
            # measured once the rule had adopted routing; nothing is chosen on these
            "test": routed_look(test, test_rows, test_p, thresholds, radius, proba_of(nclf, test_rows), nthresholds),
            "test_fresh_main": fresh_look(clf, thresholds, test, f"{mode}_s{seed}_e{every}_test", n_jobs, log),
            "test_fresh": fresh_look(nclf, nthresholds, test, f"{mode}_s{seed}_e{every}_test", n_jobs, log),
        }
    rows = [{"method": "no detection (floor)", **tcpd(test, {}), "threshold": float("nan")}]
    compare: list[dict] = []
    for d in SELECTED:
        sel = (test_rows["detector"] == d).to_numpy()
        alone = tcpd(test, {sid: idx for sid, (idx, _) in found["test"][d].items()})
        with_t = tcpd(test, kept(test_rows[sel], test_p[sel], thresholds[d], radius))
        rows.append({"method": d, **alone, "threshold": float("nan")})
        rows.append({"method": f"{d} + triage", **with_t, "threshold": thresholds[d],
                     "test_auc": auc(test_rows["y"].to_numpy()[sel], test_p[sel])})
        compare.append({"detector": d, "alone": alone, **{
            c: {**tcpd(test, kept(test_rows[sel], test_p[sel], th[d], radius)), "threshold": th[d]}
            for c, th in by_choice.items()
        }})

    loso_rows = loso_auc(injected, mode, seed, every, n_jobs, log, real=real, train_seeds=train_seeds, kind=kind) if loso else []

    # alarm rates on the untouched histories
    untouched = real_data.subsample(real, every)
    found_u = cached_detections(untouched, f"untouched_e{every}", n_jobs, log)
    n_commits = sum(len(h) for h in untouched)
    alarm_rows = []
    for d in SELECTED:
        cands = candidate_rows(untouched, found_u[d], d)
        p = proba_of(clf, cands)
        alarm_rows.append(alarm_rate_row(d, cands, p, thresholds[d], radius, n_commits))
        if nclf is not None:
            n_routed = sum(len(v) for v in kept_routed(cands, p, thresholds[d], proba_of(nclf, cands), nthresholds[d],
                                                       near_end(untouched, cands), radius).values())
            alarm_rows[-1]["routed"] = 100.0 * float(n_routed) / n_commits
    if save_newest is not None and nclf is not None:
        save_scoring_model(nclf, nthresholds, save_newest, mode, seed, every, rows, choice, train_seeds, kind,
                           None if model_seed == seed else model_seed, train_on, fresh_seeds, newest_seeds=newest_seeds,
                           routed=routed)
        log(f"newest-candidates model saved to {save_newest}")
    if save_model is not None:
        newest_entry = None
        if nclf is not None:
            from triage.features.candidate_context import HOLD_HORIZON

            newest_path = save_model.parent / f"{save_model.name}-newest"
            save_scoring_model(nclf, nthresholds, newest_path, mode, seed, every, rows, choice, train_seeds, kind,
                               None if model_seed == seed else model_seed, train_on, fresh_seeds,
                               newest_seeds=newest_seeds, routed=routed)
            newest_entry = {"model": newest_path.name, "horizon": HOLD_HORIZON}
            log(f"newest-candidates model saved to {newest_path}")
        save_scoring_model(clf, thresholds, save_model, mode, seed, every, rows, choice, train_seeds, kind,
                           None if model_seed == seed else model_seed, train_on, fresh_seeds, newest=newest_entry)
        log(f"model saved to {save_model}")
    return {
        "config": {"mode": mode, "seed": seed, "model_seed": model_seed, "max_len": CANDIDATE_MAX_LEN, "every": every,
                   "thresholds": choice, "radius": radius,
                   "train_seeds": list(train_seeds), "kind": kind, "train_on": train_on,
                   "fresh_seeds": list(fresh_seeds)},
        "dev": dev,
        "fresh": fresh,
        "routed": routed,
        "compare": compare,
        "parts": {p: (len(d), sum(len(h) for h in d), sum(int(h.true_change.sum()) for h in d)) for p, d in parts.items()},
        "test": rows + EXTRA_ROWS,
        "loso": loso_rows,
        "alarms": alarm_rows,
        "untouched": (len(untouched), n_commits),
        "seconds": time.perf_counter() - started,
    }


def loso_auc(injected: Dataset, mode: str, seed: int, every: int, n_jobs: int, log=print,
             real: Dataset | None = None, train_seeds: Sequence[int] = (), kind: str = "rf") -> list[dict]:
    """Leave-one-source-project-out AUC of the scoring model per detector.

    Each held-out project is scored on its seed-``seed`` rows by a model fitted
    on the other four projects' rows, with their ``train_seeds`` rows added.
    """
    by_src: dict[str, list[History]] = {}
    for h in injected:
        by_src.setdefault(real_data.source_of(h.series_id), []).append(h)
    # the base histories the parts' subsample holds (and their cached detections)
    parts = {p: real_data.subsample(d, every) for p, d in real_data.split(injected).items()}
    found_parts = {p: cached_detections(d, f"{mode}_s{seed}_e{every}_{p}", n_jobs, log) for p, d in parts.items()}
    rows_by = {}
    for s in by_src:
        part = real_data.SPLIT[s]
        d = Dataset([h for h in parts[part] if real_data.source_of(h.series_id) == s])
        found = {det: {sid: v for sid, v in per.items() if sid in d} for det, per in found_parts[part].items()}
        rows_by[s] = all_rows(d, found)
        # false candidates that look like real lasting changes (label audit; diagnostic only)
        rows_by[s]["suspect"] = (rows_by[s]["y"].to_numpy() == 0) & lasting_shift(rows_by[s]) & far_from_injected(d, rows_by[s])
    extra: list[pd.DataFrame] = []
    if real is not None and train_seeds:
        for part in ("fit", "validation", "test"):
            extra += extra_seed_rows(real, mode, train_seeds, every, part, n_jobs, log)
    extra_rows = pd.concat(extra, ignore_index=True) if extra else None
    preds = []
    for s in rows_by:
        train = pd.concat([r for t, r in rows_by.items() if t != s], ignore_index=True)
        if extra_rows is not None:
            others = extra_rows[(extra_rows["series_id"].map(real_data.source_of) != s).to_numpy()]
            train = pd.concat([train, others], ignore_index=True)
        clf = fit_model(train, None, seed, n_jobs, kind)
        held = rows_by[s]
        preds.append(held.assign(p=proba_of(clf, held), source=s))
    pooled = pd.concat(preds, ignore_index=True)
    out = []
    for d in LOSO_DETECTORS:
        sel = pooled[pooled["detector"] == d]
        per = {s: auc(g["y"].to_numpy(), g["p"].to_numpy()) for s, g in sel.groupby("source")}
        clean = sel[~sel["suspect"].to_numpy(bool)]
        out.append({"detector": d, "auc": auc(sel["y"].to_numpy(), sel["p"].to_numpy()),
                    "candidates": len(sel), "true": int(sel["y"].sum()), **{f"auc_{s}": v for s, v in per.items()},
                    "auc_without_suspect": auc(clean["y"].to_numpy(), clean["p"].to_numpy()),
                    "suspect": len(sel) - len(clean)})
    return out


#: The development projects: the fit and validation parts' sources (never the test part's).
DEV_SOURCES: tuple[str, ...] = tuple(s for s, part in real_data.SPLIT.items() if part != "test")


def dev_loso(seed: int, every: int, n_jobs: int, train_seeds: Sequence[int] = (), log=print) -> list[dict]:
    """Leave-one-development-project-out AUC with and without the series-relative ``ctx_*`` columns.

    The evidence the series-relative columns were chosen on: only the fit
    and validation parts' projects (:data:`DEV_SOURCES`), each held out in
    turn and scored on its seed-``seed`` rows by a model fitted on the
    others' rows (seed ``seed`` and ``train_seeds``). The test part is never
    read.
    """
    from triage.features.candidate_context import SERIES_COLUMNS

    real = real_data.load_real()
    seeds = (seed, *train_seeds)
    rows = []
    for s in seeds:
        for part in ("fit", "validation"):
            (r,) = extra_seed_rows(real, "stable", [s], every, part, n_jobs, log)
            rows.append(r.assign(source=r["series_id"].map(real_data.source_of), seed=s))
    allrows = pd.concat(rows, ignore_index=True)
    out = []
    for label, drop in (("without the series-relative ctx_* columns", list(SERIES_COLUMNS)), ("with them", [])):
        data = allrows.drop(columns=drop)
        preds = []
        for held in DEV_SOURCES:
            clf = fit_model(data[data["source"] != held], None, seed, n_jobs)
            test = data[(data["source"] == held) & (data["seed"] == seed)]
            preds.append(test.assign(p=proba_of(clf, test)))
        pooled = pd.concat(preds, ignore_index=True)
        for d in (*LOSO_DETECTORS, "cusum", "hybrid_welch"):
            sel = pooled[pooled["detector"] == d]
            per = {s: auc(g["y"].to_numpy(), g["p"].to_numpy()) for s, g in sel.groupby("source")}
            out.append({"features": label, "detector": d, "auc": auc(sel["y"].to_numpy(), sel["p"].to_numpy()),
                        **{f"auc_{s}": v for s, v in per.items()}})
        log(f"  {label}: done")
    return out


def dev_loso_markdown(rows: list[dict], seed: int, every: int, train_seeds: Sequence[int]) -> str:
    head = ["features", "detector", "pooled", *DEV_SOURCES]
    lines = [f"Leave one development project out (held-out rows: injection seed {seed}; training rows: seeds "
             f"{[seed, *train_seeds]}; 1 in {every} base histories); candidate AUC:", "",
             "| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for r in rows:
        lines.append(f"| {r['features']} | {r['detector']} | {r['auc']:.3f} | "
                     + " | ".join(f"{r.get(f'auc_{s}', float('nan')):.3f}" for s in DEV_SOURCES) + " |")
    return "\n".join(lines) + "\n"


BY_SIZE_DETECTORS = ("perfherder", "ensemble", "pelt")


def alarm_rate_row(detector: str, cands: pd.DataFrame, proba: np.ndarray, threshold: float, radius: int,
                   n_commits: int) -> dict[str, object]:
    """Alarms per 100 commits of one detector's candidates ``cands``, alone and kept by triage."""
    n_kept = sum(len(v) for v in kept(cands, proba, threshold, radius).values())
    return {"detector": detector, "alone": 100.0 * len(cands) / n_commits, "triage": 100.0 * float(n_kept) / n_commits}


def alarm_rates(model: Path, every: int, n_jobs: int, log=print) -> str:
    """Markdown: a saved scoring model's alarms per 100 commits on the untouched real histories
    (``--alarm-rates``; the main run's table, without training a model)."""
    from triage.training.model_files import load_model

    clf = load_model(model)
    extra = clf.manifest_.get("extra") or {}
    thresholds, radius = extra["detector_thresholds"], int(extra.get("suppress_radius", 0))
    untouched = real_data.subsample(real_data.load_real(), every)
    found = cached_detections(untouched, f"untouched_e{every}", n_jobs, log)
    n_commits = sum(len(h) for h in untouched)
    lines = [f"`{model}`: alarms per 100 commits on {len(untouched)} untouched real histories ({n_commits:,} commits; "
             f"thresholds and suppression radius {radius} of the model):", "",
             "| detector | alone | + triage |", "| --- | ---: | ---: |"]
    for d in SELECTED:
        cands = candidate_rows(untouched, found[d], d)
        r = alarm_rate_row(d, cands, proba_of(clf, cands), float(thresholds[d]), radius, n_commits)
        lines.append(f"| {d} | {r['alone']:.2f} | {r['triage']:.2f} |")
    return "\n".join(lines) + "\n"


def by_size(model: Path, mode: str, seed: int, every: int, n_jobs: int, log=print, part: str = "test",
            ramp: int = 0) -> str:
    """Markdown: a saved scoring model on one part (see ``--by-size`` in the module docstring).

    ``ramp`` > 1 spreads each injected shift over that many commits
    (:class:`real_data.InjectionConfig`): changes that land gradually, which
    the scoring model never saw in training.
    """
    from triage.training.model_files import load_model

    clf = load_model(model)
    extra = clf.manifest_.get("extra") or {}
    thresholds, radius = extra["detector_thresholds"], int(extra.get("suppress_radius", 0))
    config = real_data.InjectionConfig(ramp=ramp)
    test = real_data.subsample(real_data.benchmark_parts(mode=mode, seed=seed, config=config)[part], every)
    shape = f"_r{ramp}" if ramp > 1 else ""
    found = cached_detections(test, f"{mode}_s{seed}_e{every}_{part}{shape}", n_jobs, log)
    spread = f"; each shift spread over {ramp} commits" if ramp > 1 else ""
    lines = [f"`{model}` on the {part} part ({len(test)} base histories; thresholds and suppression radius {radius} "
             f"of the model{spread})", "", "| method | F1 | precision | recall |", "| --- | ---: | ---: | ---: |"]
    perfherder = {sid: [int(i) for i in idx] for sid, (idx, _) in found["perfherder"].items()}
    picked = {}
    for det in BY_SIZE_DETECTORS:
        rows = candidate_rows(test, found[det], det)
        alone = {sid: idx for sid, (idx, _) in found[det].items()}
        picked[det] = kept(rows, proba_of(clf, rows), float(thresholds[det]), radius)
        for name, pred in ((det, alone), (f"{det} + triage", picked[det])):
            m = tcpd(test, pred)
            lines.append(f"| {name} | {m['f1']:.3f} | {m['precision']:.3f} | {m['recall']:.3f} |")
    # Where the alarms point: a sheriff bisects from the commit an alarm names (the ensemble's
    # placement, thirtieth session: 268 -> 289 of the test part's 371 at their own commit).
    lines += ["", "Injected changes with an alarm at their own commit (within 5 commits):", "",
              "| detector | changes | at the commit | within 5 |", "| --- | ---: | ---: | ---: |"]
    for det in BY_SIZE_DETECTORS:
        at = near = total = 0
        for h in test:
            idx = np.asarray(found[det][h.series_id][0], dtype=np.int64)
            for tau in h.true_change_points():
                total += 1
                at += int(np.any(idx == tau))
                near += int(np.any(np.abs(idx - tau) <= MARGIN))
        lines.append(f"| {det} | {total} | {at} | {near} |")
    for det in BY_SIZE_DETECTORS[1:]:
        tri = {sid: [int(i) for i in idx] for sid, idx in picked[det].items()}
        lines += ["", f"Injected changes found within {MARGIN} commits, by shift size in noise units:", "",
                  f"| size | changes | {det} + triage | `perfherder` alone |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {b} | {n} | {a:.2f} | {q:.2f} |" for b, n, a, q in real_data.recall_by_size(test, tri, perfherder)]
    if part == "validation" and ramp <= 1:
        # the newest candidates (copies cut short after each change): read on validation only
        lines += ["", fresh_markdown(fresh_look(clf, thresholds, test, f"{mode}_s{seed}_e{every}_{part}", n_jobs, log))]
    return "\n".join(lines) + "\n"


def oracle(mode: str, seed: int, every: int, n_jobs: int, log=print) -> str:
    """F1 of each detector with a perfect triage on the development parts (a diagnostic; the test part is not read).

    The perfect triage keeps exactly the candidates the TCPDBench matching
    pairs with an injected change: the most triage could give a detector's
    candidates. ``all detectors`` pools every detector's matched candidates:
    the most any candidate generator of the registry could give.
    """
    real = real_data.load_real()
    parts = {p: real_data.subsample(d, every) for p, d in real_data.split(real_data.inject(real, mode=mode, seed=seed)).items()
             if p != "test"}
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for p, data in parts.items():
        found = cached_detections(data, f"{mode}_s{seed}_e{every}_{p}", n_jobs, log)
        pooled: dict[str, set[int]] = {h.series_id: set() for h in data}
        for d in SELECTED:
            perfect = {}
            for h in data:
                idx = found[d].get(h.series_id, (np.zeros(0, np.int64), None))[0]
                perfect[h.series_id] = idx[matched(h.true_change_points(), idx)]
                pooled[h.series_id].update(int(i) for i in perfect[h.series_id])
            alone = tcpd(data, {sid: idx for sid, (idx, _) in found[d].items()})["f1"]
            table.setdefault(d, {})[p] = (alone, tcpd(data, perfect)["f1"])
        best = {}
        for h in data:
            cand = np.array(sorted(pooled[h.series_id]), dtype=np.int64)
            best[h.series_id] = cand[matched(h.true_change_points(), cand)]
        table.setdefault("all detectors", {})[p] = (float("nan"), tcpd(data, best)["f1"])
    lines = [f"Perfect triage on the development parts (`{mode}`, seed {seed}, 1 in {every}; the test part not "
             "read): TCPDBench F1 alone -> with every true candidate kept and every false one dropped.", "",
             "| detector | " + " | ".join(parts) + " |", "| --- |" + " ---: |" * len(parts)]
    for d, row in table.items():
        cells = [f"{a:.3f} -> {o:.3f}" if np.isfinite(a) else f"{o:.3f}" for a, o in (row[p] for p in parts)]
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def save_scoring_model(clf, thresholds: dict[str, float], path: Path, mode: str, seed: int, every: int, rows,
                       choice: str = "pooled", train_seeds: Sequence[int] = (), kind: str = "rf",
                       model_seed: int | None = None, train_on: str = "fit", fresh_seeds: Sequence[int] = (),
                       newest: dict[str, object] | None = None, newest_seeds: Sequence[int] = (),
                       routed: dict | None = None) -> None:
    """Save a scoring model with its thresholds, radius and how it was made in the manifest's ``extra``.

    ``newest``: the manifest entry naming its newest-candidates model
    (:data:`triage.scoring.NEWEST_KEY`); ``newest_seeds``: this *is* that
    model, trained with the fresh rows of these seeds; ``routed``: its
    figures (:func:`run`'s ``routed``), which become its manifest's metrics.
    """
    from triage.scoring import NEWEST_KEY
    from triage.training.model_files import save_model

    test = {r["method"]: r for r in rows}
    metrics = {f"test_f1_{d}": test[d]["f1"] for d in SELECTED}
    if routed is None:
        metrics.update({f"test_f1_{d}_triage": test[f"{d} + triage"]["f1"] for d in SELECTED})
    else:
        # the newest-candidates model: the test part routed through it, and its newest candidates alone
        metrics.update({f"test_f1_{d}_triage_routed": routed["test"][d][1] for d in SELECTED})
        metrics.update({f"test_newest_f1_{d}_triage": routed["test_fresh"]["detectors"][d][1] for d in SELECTED})
    save_model(
        clf,
        path,
        window="adaptive",
        metrics=metrics,
        extra={
            "windows": "candidates",
            "max_len": CANDIDATE_MAX_LEN,
            "pair": True,
            "context": True,
            "suppress_radius": int(getattr(clf, "suppress_radius_", 0)),
            "detector_thresholds": thresholds,
            "threshold_choice": choice,
            "trained_on": "fit and validation projects; isotonic map on out-of-project scores"
                          if train_on == "dev" else "fit projects; isotonic map on the validation project",
            "trained_by": f"benchmarks/bench_real.py --mode {mode} --seed {seed} --every {every} --thresholds {choice}"
                          + (f" --train-seeds {','.join(str(t) for t in train_seeds)}" if train_seeds else "")
                          + (f" --model-kind {kind}" if kind != "rf" else "")
                          + (f" --model-seed {model_seed}" if model_seed is not None else "")
                          + (f" --train-on {train_on}" if train_on != "fit" else "")
                          + (f" --fresh-train {','.join(str(t) for t in fresh_seeds)}" if fresh_seeds else "")
                          + (f" --newest-model {','.join(str(t) for t in newest_seeds)} (the newest-candidates model)"
                             if newest_seeds else ""),
            **({NEWEST_KEY: newest} if newest else {}),
            **({"fresh_rows": f"the fit part's candidates fewer than 13 commits from the end of copies cut short "
                              f"after each change, injection seeds {list(newest_seeds)}"} if newest_seeds else {}),
        },
    )


# --------------------------------------------------------------------------- output


def markdown(result: dict) -> str:
    c = result["config"]
    lines = [
        f"Real histories, `{c['mode']}` injection, seed {c['seed']}, 1 in {c['every']} base histories; "
        f"TCPDBench margin 5, means over base histories; thresholds `{c.get('thresholds', 'validation')}`; "
        f"suppression radius {c.get('radius', 0)} (chosen on fit + validation); extra training seeds "
        f"{c.get('train_seeds') or 'none'}; model seed {c.get('model_seed', c['seed'])}"
        + ("; trained on every development project (`--train-on dev`)" if c.get("train_on") == "dev" else "") + ".",
        "",
        "| part | base histories | commits | injected changes |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {p} | {n} | {m:,} | {k} |" for p, (n, m, k) in result["parts"].items()]
    lines += ["", "| method (test part) | F1 | precision | recall | threshold | candidate AUC |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["test"]:
        th = "" if not np.isfinite(r.get("threshold", float("nan"))) else f"{r['threshold']:.3f}"
        a = r.get("test_auc")
        lines.append(f"| {r['method']} | {r['f1']:.3f} | {r['precision']:.3f} | {r['recall']:.3f} | {th} | {'' if a is None else f'{a:.3f}'} |")
    if result["loso"]:
        srcs = real_data.LOSO_GROUPS
        lines += ["", "| LOSO AUC | pooled | candidates (true) | " + " | ".join(srcs) + " |", "| --- | ---: | ---: | " + " | ".join("---:" for _ in srcs) + " |"]
        for r in result["loso"]:
            lines.append(f"| {r['detector']} | {r['auc']:.3f} | {r['candidates']} ({r['true']}) | "
                         + " | ".join(f"{r.get(f'auc_{s}', float('nan')):.3f}" for s in srcs) + " |")
        lines += ["", "Diagnostic (label audit, not a goal figure): pooled LOSO AUC without the false candidates that "
                  "carry a lasting shift far from every injected change (`lasting_shift`, `far_from_injected`): "
                  + ", ".join(f"{r['detector']} {r.get('auc_without_suspect', float('nan')):.3f} "
                              f"({r.get('suspect', 0)} left out)" for r in result["loso"]) + "."]
    if result.get("compare"):
        choices = [k for k in result["compare"][0] if k not in ("detector", "alone")]
        lines += ["", "Threshold choices on the test part (F1 / recall kept = triage recall / detector recall):", "",
                  "| detector | alone F1 | " + " | ".join(f"{name}: threshold | F1 | recall kept" for name in choices) + " |",
                  "| --- | ---: | " + " | ".join("---: | ---: | ---:" for _ in choices) + " |"]
        for r in result["compare"]:
            a = r["alone"]
            cells = []
            for name in choices:
                x = r[name]
                kept_ = x["recall"] / a["recall"] if a["recall"] > 0 else float("nan")
                cells.append(f"{x['threshold']:.3f} | {x['f1']:.3f} | {100 * kept_:.0f} %")
            lines.append(f"| {r['detector']} | {a['f1']:.3f} | " + " | ".join(cells) + " |")
    n, m = result["untouched"]
    lines += ["", f"Alarms per 100 commits on {n} untouched real histories ({m:,} commits):", "",
              "| detector | alone | + triage |", "| --- | ---: | ---: |"]
    lines += [f"| {r['detector']} | {r['alone']:.2f} | {r['triage']:.2f} |" for r in result["alarms"]]
    if (routed := result.get("routed")) is not None:
        test = routed["test"]
        main = float(np.mean([v[0] for v in test.values()]))
        both = float(np.mean([v[1] for v in test.values()]))
        lines += ["", f"Routed (the newest candidates decided by the second model): the test part, TCPDBench F1 + "
                  f"triage by the main model alone -> routed, mean over detectors {main:.4f} -> **{both:.4f}**; "
                  "alarms per 100 untouched commits + triage routed:", "",
                  "| detector | candidates routed (test) | test F1 main -> routed | alarms + triage routed |",
                  "| --- | ---: | ---: | ---: |"]
        alarms = {r["detector"]: r.get("routed", float("nan")) for r in result["alarms"]}
        lines += [f"| {d} | {n} | {a:.3f} -> {b:.3f} | {alarms.get(d, float('nan')):.2f} |"
                  for d, (a, b, n) in test.items()]
        lines += ["", "The newest candidates of the **test** part, main model:", "",
                  fresh_markdown(routed["test_fresh_main"]).replace("of the validation part", "of the test part"),
                  "", "and the newest-candidates model:", "",
                  fresh_markdown(routed["test_fresh"]).replace("of the validation part", "of the test part")]
    if result.get("dev"):
        lines += ["", development_markdown({"config": {**c, "kind": c.get("kind", "rf")}, "dev": result["dev"],
                                            "fresh": result.get("fresh"), "routed": result.get("routed"),
                                            "seconds": result["seconds"]})
                  .replace(f" Run time {result['seconds'] / 60:.1f} min.", "")]
    lines += ["", f"Run time {result['seconds'] / 60:.1f} min."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=real_data.MODES, default="stable", help="where shifts are injected (default stable)")
    ap.add_argument("--seed", type=int, default=0, help="injection and model seed (default 0)")
    ap.add_argument("--every", type=int, default=1, help="keep 1 in k base histories of each part (default 1: all)")
    ap.add_argument("--n-jobs", type=int, default=2, help="processes for the detectors (default 2)")
    ap.add_argument("--no-loso", action="store_true", help="skip the leave-one-project-out AUC (5 more fits)")
    ap.add_argument("--save-model", type=Path, default=None, help="also save the scoring model to this directory")
    ap.add_argument("--thresholds", choices=THRESHOLD_CHOICES, default="pooled",
                    help="per-detector threshold choice the model carries: 'pooled' (out-of-fold fit projects + "
                         "validation, gain on each; default) or 'validation' (validation only, the first published "
                         "run); both are reported")
    ap.add_argument("--train-seeds", default="",
                    help="comma-separated extra injection seeds whose fit-part rows are added to the training rows "
                         "(augmentation; the same base histories, other injected shifts), e.g. 1,2")
    ap.add_argument("--dev-loso", action="store_true",
                    help="only the leave-one-development-project-out AUC with and without the series-relative "
                         "ctx_* columns (fit and validation projects; the test part is not read)")
    ap.add_argument("--dev-only", action="store_true",
                    help="only the development looks of a training choice (--train-seeds, --model-kind): fit, "
                         "out-of-fold and validation; the test part is not read")
    ap.add_argument("--fresh-train", default="",
                    help="comma-separated injection seeds whose fit-part newest candidates (copies cut short after "
                         "the changes, fresh_train_rows) are added to the training rows, e.g. 0,1,2")
    ap.add_argument("--newest-model", default="",
                    help="comma-separated injection seeds: also fit a second model (the recipe plus the fit part's "
                         "newest candidates of these seeds) and route the candidates fewer than 13 commits from "
                         "their series' end to it, e.g. 0,1,2")
    ap.add_argument("--save-newest", type=Path, default=None,
                    help="with --newest-model: also save the newest-candidates model alone to this directory (an "
                         "opt-in model for `triage score --newest-model`; --save-model's manifest does not name it)")
    ap.add_argument("--model-kind", choices=MODEL_KINDS, default="rf", help="scoring model kind (default rf)")
    ap.add_argument("--xgb-params", default="",
                    help="with --dev-only and an xgb kind: boosting settings over the recipe's, e.g. "
                         "max_depth=4,n_estimators=800 (numbers only; a development probe)")
    ap.add_argument("--max-len", type=int, default=CANDIDATE_MAX_LEN,
                    help=f"with --dev-only: most commits of each honest window (default {CANDIDATE_MAX_LEN})")
    ap.add_argument("--model-seed", type=int, default=None,
                    help="the scoring models' random state (default --seed)")
    ap.add_argument("--train-on", choices=TRAIN_ON, default="fit",
                    help="'fit': the model learns from the fit projects, calibrated and thresholded on validation "
                         "(default); 'dev': from every development project, calibrated and thresholded on "
                         "out-of-project looks (--train-seeds then augment the validation project too)")
    ap.add_argument("--by-size", type=Path, default=None, metavar="MODEL",
                    help="only a diagnostic of a saved scoring model on the test part: F1 of perfherder, ensemble and "
                         "pelt alone and + triage, and the changes found by shift size")
    ap.add_argument("--alarm-rates", type=Path, default=None, metavar="MODEL",
                    help="only a saved scoring model's alarms per 100 commits on the untouched real histories, every "
                         "detector alone and + triage (no injection, no training)")
    ap.add_argument("--part", choices=real_data.PARTS[1:], default="test",
                    help="with --by-size: the part it reads (default test)")
    ap.add_argument("--ramp", type=int, default=0,
                    help="with --by-size: spread each injected shift over this many commits (default 0: a step)")
    ap.add_argument("--oracle", action="store_true",
                    help="only a diagnostic: each detector's F1 with a perfect triage on the development parts")
    args = ap.parse_args(argv)
    train_seeds = [int(t) for t in args.train_seeds.split(",") if t.strip()]
    fresh_seeds = [int(t) for t in args.fresh_train.split(",") if t.strip()]
    newest_seeds = [int(t) for t in args.newest_model.split(",") if t.strip()]
    try:
        real_data.real_dir()
    except real_data.RealDataMissing as exc:
        print(exc)
        return
    if args.by_size is None and (args.part != "test" or args.ramp):
        ap.error("--part and --ramp go with --by-size")
    if args.alarm_rates is not None:
        _publish(alarm_rates(args.alarm_rates, args.every, args.n_jobs), f"bench_real_alarms_e{args.every}.md")
        return
    if args.by_size is not None:
        tag = ("" if args.part == "test" else f"_{args.part}") + (f"_r{args.ramp}" if args.ramp > 1 else "")
        _publish(by_size(args.by_size, args.mode, args.seed, args.every, args.n_jobs, part=args.part, ramp=args.ramp),
                 f"bench_real_bysize_{args.mode}_s{args.seed}_e{args.every}{tag}.md")
        return
    if args.oracle:
        _publish(oracle(args.mode, args.seed, args.every, args.n_jobs), f"bench_real_oracle_{args.mode}_s{args.seed}_e{args.every}.md")
        return
    if args.dev_loso:
        text = dev_loso_markdown(dev_loso(args.seed, args.every, args.n_jobs, train_seeds), args.seed, args.every,
                                 train_seeds)
        _publish(text, f"bench_real_devloso_s{args.seed}_e{args.every}.md")
        return
    aug = (f"_t{'-'.join(str(t) for t in train_seeds)}" if train_seeds else "") + (
        f"_{args.model_kind}" if args.model_kind != "rf" else "")
    if args.max_len != CANDIDATE_MAX_LEN and not args.dev_only:
        ap.error("--max-len is a development choice: it goes with --dev-only")
    if args.xgb_params:
        if not args.dev_only or not args.model_kind.startswith("xgb"):
            ap.error("--xgb-params is a development probe of an xgb kind: it goes with --dev-only")
        try:
            XGB_PARAMS.update({k.strip(): float(v) if "." in v or "e" in v else int(v)
                               for k, v in (item.split("=", 1) for item in args.xgb_params.split(","))})
        except ValueError:
            ap.error(f"--xgb-params: expected name=number,... got {args.xgb_params!r}")
        aug += "_x" + "-".join(f"{k}{v}" for k, v in XGB_PARAMS.items())
    aug += (f"_l{args.max_len}" if args.max_len != CANDIDATE_MAX_LEN else "") + (
        f"_m{args.model_seed}" if args.model_seed is not None else "") + ("_dev" if args.train_on == "dev" else "") + (
        f"_f{'-'.join(str(t) for t in fresh_seeds)}" if fresh_seeds else "") + (
        f"_n{'-'.join(str(t) for t in newest_seeds)}" if newest_seeds else "")
    if args.dev_only:
        dev = development(args.mode, args.seed, args.every, args.n_jobs, train_seeds=train_seeds, kind=args.model_kind,
                          max_len=args.max_len, model_seed=args.model_seed, train_on=args.train_on,
                          fresh_seeds=fresh_seeds, newest_seeds=newest_seeds)
        _publish(development_markdown(dev), f"bench_real_dev_{args.mode}_s{args.seed}_e{args.every}{aug}.md")
        return
    if args.save_newest is not None and (not newest_seeds or args.dev_only):
        ap.error("--save-newest goes with --newest-model, in a full run")
    result = run(args.mode, args.seed, args.every, args.n_jobs, not args.no_loso, args.save_model, choice=args.thresholds,
                 train_seeds=train_seeds, kind=args.model_kind, model_seed=args.model_seed, train_on=args.train_on,
                 fresh_seeds=fresh_seeds, newest_seeds=newest_seeds, save_newest=args.save_newest)
    _publish(markdown(result), f"bench_real_{args.mode}_s{args.seed}_e{args.every}{aug}.md")


def _publish(text: str, name: str) -> None:
    """Print ``text`` and write it to ``benchmarks/out/name`` (through a temporary file)."""
    OUT.mkdir(exist_ok=True)
    out = OUT / name
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
