"""Accuracy of every detector alone, followed by the triage model, and of the online loop.

One command regenerates the table of BENCHMARKS.md, "Detectors and triage accuracy"::

    .venv/bin/python benchmarks/bench_accuracy.py            # the published configuration

Protocol (Bauer et al., ICPE 2022: learn the human triage of detector alerts;
the Mozilla change-point study: detectors and their ensembles as baselines;
TCPDBench: F1 / precision / recall with a margin):

1. **Data.** The synthetic benchmark (``triage.synthetic``, preset ``default``,
   seed 0: about 7,800 series of 100-600 commits, with ground truth). Its
   series are split once, seeded, *by series*: ``test_share`` (20 %) are held
   out, ``val_share`` (10 %) form a validation part of the training side, the
   rest (70 %) is the fitting part.
2. **Models.** Both triage models learn only from the fitting part's triaged
   candidates (the generator's emulated human labels ``true_positive`` /
   ``false_positive``). The model that scores detector candidates is an RF
   with a fixed After window of ``--window`` (30) commits, and its training
   Pre/After are *not* bounded by the series' confirmed change points
   (``--train-bounds none``): that is the window a candidate gets from the
   scoring code on an unlabelled series (item 5), so training and use see the
   same windows. ``--train-bounds labels`` trains on the matrix ``triage
   features`` builds for ``triage train`` (windows stop at confirmed change
   points) instead. Window 30 and ``none`` were chosen on validation series
   only (BENCHMARKS.md). The online loop's model is an RF with window 0
   (item 6). Each model is saved and
   loaded back through ``training.model_files`` (the manifest carries the
   window the scoring code reads).
3. **Held-out series are unlabelled.** Their labels and ground truth are
   removed before anything runs on them; the ground truth (``true_change``
   indices, one annotator) is kept aside for the metric only.
4. **Detectors alone**: every registered detector with its registry defaults.
   Ensembles (``ensemble`` = at least C=3 of the 8 members within 5 commits,
   ``mozilla_or_ensemble``, and C=2 / C=4 variants) are formed with
   :func:`triage.detectors.ensemble.vote` from the members' detections on the
   same series -- exactly what :class:`~triage.detectors.Ensemble` does after
   running its members (the test checks the equality), without running the
   members twice.
5. **Detector + triage**: each detector's candidates on a series are scored
   with :func:`triage.scoring.score_candidates` (what ``triage score`` runs,
   explanations off) and kept when P(true change) >= the threshold. On an
   unlabelled series the scoring code bounds Pre/After by the series'
   ``true_positive`` labels -- there are none, so **Pre is every commit before
   the candidate and After the candidate plus the ``w`` commits after it**
   (fixed window ``w``; to the end of the series for an adaptive model).
   Two thresholds:
   the model's own (0.5), and one **tuned per detector on the validation part
   of the training side** (never on the test series): the highest threshold
   whose TCPDBench recall there is at least ``keep_recall`` (0.97) times the
   detector's own recall there.
6. **Online loop** (``triage.online.loop.OnlineTriage.replay``, window-0 model
   trained on the fitting part as ``triage train --window 0`` trains it:
   confirmed change points against false alerts and 10 unflagged commits per
   series, :mod:`training.online_matrix`; ``min_pre`` 5) over each held-out series from its first commit; its
   positive decisions are the predictions. Thresholds: the model's own 0.5
   and the one maximising the mean F1 on the validation series.
7. **Metrics**: per series, TCPDBench precision / recall with margin 5
   (``triage.core.metrics.f_measure``, index 0 counted as a trivial change
   point); ``precision`` and ``recall`` are their means over series and
   ``F1`` = 2PR/(P+R) of those means; ``F1 (series mean)`` is the mean of the
   per-series F1 (how TCPDBench and the Mozilla study average). ``alert
   precision`` / ``alert recall`` pool all series without the index-0
   convention: matched alerts / alerts, matched true changes / true changes.
8. **Speed**: on separate synthetic series of exactly 500 commits (preset
   ``small`` at length 500, like ``bench_detectors.py``), one process, the
   median wall time per series of the detector alone and of the detector plus
   scoring its candidates; the ensembles are run as real
   :class:`~triage.detectors.Ensemble` objects there.

``--select`` runs the validation-only study that chose the model window,
the training-window bounds and the recall share instead (tune on one half of
400 validation series, measure on the other; no held-out series).

The slow detectors (``hybrid_cvm`` took about 5 s per 500-point series when
this benchmark was written; about 0.1 s since its p-values are counted once
per pair of window sizes) made the whole held-out set too long for a
30-minute budget on 2 cores, so by default
every method runs on the same seeded subsample of ``--sample`` held-out
series (and ``--val-sample`` validation series). Output: the Markdown tables
on stdout and ``--out`` (JSON with every number).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.core.metrics import f_measure, true_positives
from triage.detectors import defaults, make, names
from triage.detectors.ensemble import vote

#: Ensembles formed from member detections: name -> overrides of the registry's ``ensemble`` parameters.
#: ``ensemble`` and ``mozilla_or_ensemble`` are the registry's own entries.
DERIVED: dict[str, dict[str, object]] = {
    "ensemble": {},
    "mozilla_or_ensemble": {"always": ("perfherder",)},
    "ensemble_c2": {"min_votes": 2},
    "ensemble_c4": {"min_votes": 4},
}

#: Detectors whose triage gain the issue sets a goal for: precision +20 points, >= 95 % of recall kept.
GOAL_DETECTORS: tuple[str, ...] = ("perfherder", "edivisive")
GOAL_PRECISION_GAIN = 0.20
GOAL_RECALL_KEPT = 0.95

#: How the training windows are bounded (see :func:`train_model`).
TRAIN_BOUNDS: tuple[str, ...] = ("labels", "none")


@dataclass
class Config:
    """One benchmark configuration (the command-line options)."""

    preset: str = "default"
    seed: int = 0
    n_series: int | None = None  # override the preset's series count (tests)
    test_share: float = 0.2
    val_share: float = 0.1
    sample: int | None = 300  # held-out series evaluated (None = all)
    val_sample: int | None = 150  # validation series used for threshold tuning (None = all)
    detectors: Sequence[str] = field(default_factory=lambda: list(names()) + ["ensemble_c2", "ensemble_c4"])
    margin: int = 5
    window: str | int = 30  # chosen on validation series (BENCHMARKS.md)
    train_bounds: str = "none"
    keep_recall: float = 0.97
    online: bool = True
    online_ordinary: int = 10  # unflagged commits per series as negatives (triage train --window 0 default)
    speed_series: int = 5
    speed_length: int = 500
    n_jobs: int = 2
    n_estimators: int = 100


# --------------------------------------------------------------------------- data


def split_series(series_ids: Sequence[str], test_share: float, val_share: float, seed: int) -> tuple[list[str], list[str], list[str]]:
    """(fit, validation, test) series ids: one seeded permutation cut by shares; order kept within each part."""
    if not (0 < test_share < 1 and 0 <= val_share < 1 and test_share + val_share < 1):
        raise ValueError("need 0 < test_share, 0 <= val_share and test_share + val_share < 1")
    ids = list(series_ids)
    perm = np.random.default_rng(seed).permutation(len(ids))
    n_test = max(1, int(round(test_share * len(ids))))
    n_val = int(round(val_share * len(ids)))
    test, val = set(perm[:n_test].tolist()), set(perm[n_test : n_test + n_val].tolist())
    fit = [s for i, s in enumerate(ids) if i not in test and i not in val]
    return fit, [s for i, s in enumerate(ids) if i in val], [s for i, s in enumerate(ids) if i in test]


def subsample(ids: Sequence[str], k: int | None, seed: int) -> list[str]:
    """``k`` of ``ids`` drawn without replacement (seeded), in their original order; all when ``k`` is None."""
    if k is None or k >= len(ids):
        return list(ids)
    keep = set(np.random.default_rng(seed).choice(len(ids), k, replace=False).tolist())
    return [s for i, s in enumerate(ids) if i in keep]


def unlabelled(history: History) -> History:
    """The series as a user would hand it over before any triage: values, commits and timestamps only."""
    return History(history.series_id, history.commits.copy(), history.values.copy(), None, history.timestamps)


# --------------------------------------------------------------------------- detectors


def base_detectors(wanted: Sequence[str]) -> list[str]:
    """Registry detectors to run so that every wanted method (ensembles: their members) can be formed."""
    out: list[str] = []
    for name in wanted:
        if name in DERIVED:
            params = defaults("ensemble")
            members = [str(m) for m in params["members"]]
            out.extend(m for m in members if m not in out)
        elif name not in out:
            make(name)  # unknown names fail here, before minutes of work
            out.append(name)
    return out


def ensemble_params(name: str) -> dict[str, object]:
    params = defaults("ensemble")
    params.update(DERIVED[name])
    return params


def derive_ensemble(name: str, member_indices: dict[str, np.ndarray]) -> np.ndarray:
    """Indices flagged by ensemble ``name`` from its members' detections on one series, shape (k,)."""
    p = ensemble_params(name)
    detections = sorted((int(i), m) for m in p["members"] for i in member_indices[str(m)])
    cps = vote(detections, int(p["margin"]), int(p["min_votes"]), set(p["always"]))
    return np.array(sorted({c.index for c in cps}), dtype=np.int64)


def _detect_chunk(items: list[tuple[str, np.ndarray]], detectors: Sequence[str]) -> list[tuple[str, dict[str, np.ndarray]]]:
    out = []
    for sid, values in items:
        out.append((sid, {name: make(name).fit(values).indices_ for name in detectors}))
    return out


def run_detectors(histories: Sequence[History], wanted: Sequence[str], n_jobs: int) -> dict[str, dict[str, np.ndarray]]:
    """method -> series id -> detected indices (ascending, shape (k,)) for every wanted method."""
    base = base_detectors(wanted)
    items = [(h.series_id, h.values) for h in histories]
    if n_jobs == 1 or len(items) <= 1:
        results = _detect_chunk(items, base)
    else:
        from joblib import Parallel, delayed

        # Small chunks, longest series first, keep both workers busy to the end
        # (long series cost the most).
        order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))
        chunks = [[items[i] for i in order[k : k + 4]] for k in range(0, len(order), 4)]
        parts = Parallel(n_jobs=n_jobs)(delayed(_detect_chunk)(c, base) for c in chunks)
        results = [r for part in parts for r in part]
    by_series = dict(results)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name in wanted:
        out[name] = {}
        for h in histories:
            found = by_series[h.series_id]
            out[name][h.series_id] = derive_ensemble(name, found) if name in DERIVED else np.unique(found[name])
    return out


# --------------------------------------------------------------------------- metrics


def metrics(truth: dict[str, np.ndarray], predictions: dict[str, np.ndarray], margin: int) -> dict[str, float]:
    """TCPDBench means over series and pooled alert precision / recall (module docstring, item 7).

    ``truth`` and ``predictions`` map series id -> indices; every series of ``truth`` counts.
    """
    ps, rs, fs = [], [], []
    matched = n_alerts = n_true = 0
    for sid, cps in truth.items():
        pred = [int(i) for i in predictions.get(sid, ())]
        s = f_measure({"truth": [int(c) for c in cps]}, pred, margin=margin)
        ps.append(s.precision)
        rs.append(s.recall)
        fs.append(s.f)
        matched += len(true_positives(set(int(c) for c in cps), set(pred), margin))
        n_alerts += len(set(pred))
        n_true += len(cps)
    p, r = float(np.mean(ps)), float(np.mean(rs))
    return {
        "f1": 2 * p * r / (p + r) if p + r > 0 else 0.0,
        "precision": p,
        "recall": r,
        "f1_series_mean": float(np.mean(fs)),
        "alert_precision": matched / n_alerts if n_alerts else float("nan"),
        "alert_recall": matched / n_true if n_true else float("nan"),
        "alerts_per_series": n_alerts / len(truth),
        "series": len(truth),
    }


def keep(predictions: dict[str, np.ndarray], proba: dict[str, np.ndarray], threshold: float) -> dict[str, np.ndarray]:
    """The predictions whose P(true change) reaches ``threshold``, per series."""
    return {sid: idx[proba[sid] >= threshold] for sid, idx in predictions.items()}


def tune_threshold(
    truth: dict[str, np.ndarray],
    predictions: dict[str, np.ndarray],
    proba: dict[str, np.ndarray],
    margin: int,
    keep_recall: float,
) -> float:
    """The highest threshold whose mean TCPDBench recall is >= ``keep_recall`` x the unfiltered recall.

    Candidate thresholds are the distinct probabilities (and 0, which keeps
    everything); recall only falls as the threshold rises, so the scan stops
    at the first threshold that falls short.
    """
    target = keep_recall * metrics(truth, predictions, margin)["recall"]
    levels = np.unique(np.concatenate([np.zeros(1), *[p for p in proba.values() if len(p)]]))
    best = 0.0
    # Bisection over the sorted levels: recall is monotone non-increasing in the threshold.
    lo, hi = 0, len(levels) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if metrics(truth, keep(predictions, proba, levels[mid]), margin)["recall"] >= target - 1e-12:
            best = float(levels[mid])
            lo = mid + 1
        else:
            hi = mid - 1
    return best


# --------------------------------------------------------------------------- models


def train_model(
    dataset: Dataset,
    window: str | int,
    out: Path,
    n_jobs: int,
    n_estimators: int,
    bounds: str = "labels",
    ordinary_per_series: int = 0,
):
    """Fit the RF on the triaged candidates of ``dataset`` with ``window``; save and load it back.

    With ``window == 0`` and ``ordinary_per_series > 0`` the rows are those of
    an online model, as ``triage train --window 0`` builds them
    (:func:`training.online_matrix.online_matrix`: confirmed change points
    against false alerts and that many unflagged commits per series).

    ``bounds="labels"``: Pre/After stop at the series' confirmed change points,
    the matrix ``triage features`` builds for ``triage train``. ``"none"``: no
    change point bounds them -- the windows :func:`triage.scoring.score_candidates`
    gives a candidate on a series without confirmed labels.
    """
    from triage.features.extract import extract_features
    from triage.training.classifier import TriageClassifier
    from triage.training.model_files import load_model, save_model

    if bounds not in TRAIN_BOUNDS:
        raise ValueError(f"bounds must be one of {', '.join(TRAIN_BOUNDS)}, got {bounds!r}")
    if window == 0 and ordinary_per_series > 0:
        from triage.training.online_matrix import online_matrix

        matrix = online_matrix(dataset, ordinary_per_series=ordinary_per_series, n_jobs=n_jobs)
    else:
        change_points = {s: [] for s in dataset.series_ids} if bounds == "none" else None
        matrix = extract_features(dataset, window=window, change_points=change_points, n_jobs=n_jobs)
    matrix = matrix[matrix["label"].isin(L.TRIAGED)].reset_index(drop=True)
    clf = TriageClassifier(model="rf", n_jobs=n_jobs, random_state=0, n_estimators=n_estimators).fit(matrix)
    save_model(clf, out, window=window, extra={"trained_on": "bench_accuracy fitting part", "train_bounds": bounds})
    loaded = load_model(out)
    loaded.manifest_["_path"] = str(out)
    return loaded, len(matrix)


def _table(histories: Sequence[History], predictions: dict[str, np.ndarray]):
    from triage.scoring import CandidateTable

    sids, idx = [], []
    for h in histories:
        for i in predictions.get(h.series_id, ()):
            sids.append(h.series_id)
            idx.append(int(i))
    fields = pd.DataFrame({"series_id": sids, "index": idx})
    return CandidateTable(fields, [(s,) for s in sids], [None] * len(sids), idx, list(range(2, len(sids) + 2)),
                          "candidates", "<bench_accuracy>")


def score(dataset: Dataset, predictions: dict[str, np.ndarray], classifier) -> dict[str, np.ndarray]:
    """P(true change) of every prediction, per series (same order as ``predictions``), via ``triage.scoring``."""
    from triage.scoring import score_candidates

    histories = [dataset[s] for s in predictions]
    table = _table(histories, predictions)
    out = {sid: np.empty(0) for sid in predictions}
    if len(table) == 0:
        return out
    scored = score_candidates(dataset, table, classifier, explain_top=0)
    p = scored["p_true"].to_numpy(dtype=np.float64)
    k = 0
    for sid, idx in predictions.items():
        out[sid] = p[k : k + len(idx)]
        k += len(idx)
    return out


def online_predictions(dataset: Dataset, model_dir: Path, threshold: float | None = None) -> dict[str, np.ndarray]:
    """Change points the online loop declares on every series of ``dataset`` (replayed from scratch), per series."""
    from triage.online.loop import OnlineTriage

    loop = OnlineTriage.from_model_dir(model_dir, explain="none")
    if threshold is not None:
        loop.threshold = float(threshold)
    found = loop.replay(dataset)
    out: dict[str, list[int]] = {h.series_id: [] for h in dataset}
    for d in found:
        out[d.series].append(d.index)
    return {s: np.array(sorted(v), dtype=np.int64) for s, v in out.items()}


# --------------------------------------------------------------------------- speed


def speed(methods: Sequence[str], classifier, model0_dir: Path | None, n_series: int, length: int, seed: int) -> dict[str, dict[str, float]]:
    """Median ms per series of ``length`` commits: each method alone and followed by scoring; the online loop."""
    from triage.synthetic import generate, preset_config

    config = preset_config("small", n_series=n_series, length_min=length, length_max=length)
    data = Dataset([unlabelled(h) for h in generate(config, seed=seed + 1)])
    out: dict[str, dict[str, float]] = {}
    for name in methods:
        alone, total = [], []
        params = ensemble_params(name) if name in DERIVED else {}
        for h in data:
            det = make("ensemble", **params) if name in DERIVED else make(name)
            t0 = time.perf_counter()
            idx = det.fit(h.values).indices_
            t1 = time.perf_counter()
            if classifier is not None and len(idx):
                score(data, {h.series_id: idx}, classifier)
            t2 = time.perf_counter()
            alone.append(1e3 * (t1 - t0))
            total.append(1e3 * (t2 - t0))
        out[name] = {"alone_ms": float(np.median(alone)), "with_triage_ms": float(np.median(total))}
    if model0_dir is not None:
        from triage.online.loop import OnlineTriage

        loop = OnlineTriage.from_model_dir(model0_dir, explain="none")
        loop.replay(Dataset([unlabelled(next(iter(data)))]))  # numba compilation is not per-series work
        per = []
        for h in data:
            loop.states.clear()
            t0 = time.perf_counter()
            loop.replay(Dataset([h]))
            per.append(1e3 * (time.perf_counter() - t0))
        out["online"] = {"alone_ms": float(np.median(per)), "with_triage_ms": float(np.median(per))}
    return out


# --------------------------------------------------------------------------- the run


def run(config: Config, workdir: Path | None = None, log=print) -> dict[str, object]:
    """Run the whole benchmark; returns every number (the JSON written by ``main``)."""
    from triage.synthetic import generate, preset_config

    started = time.perf_counter()
    overrides = {"n_series": config.n_series} if config.n_series else {}
    data = generate(preset_config(config.preset, **overrides), seed=config.seed)
    fit_ids, val_ids, test_ids = split_series(data.series_ids, config.test_share, config.val_share, config.seed)
    test_ids = subsample(test_ids, config.sample, config.seed + 1)
    val_ids = subsample(val_ids, config.val_sample, config.seed + 2)
    log(f"series: {len(data)} generated, fit part {len(fit_ids)}, validation {len(val_ids)} used, test {len(test_ids)} used")

    truth = {s: data[s].true_change_points() for s in test_ids}
    val_truth = {s: data[s].true_change_points() for s in val_ids}
    test = Dataset([unlabelled(data[s]) for s in test_ids], source="held-out")
    val = Dataset([unlabelled(data[s]) for s in val_ids], source="validation")

    tmp = tempfile.TemporaryDirectory(prefix="bench_accuracy.") if workdir is None else None
    root = Path(tmp.name) if tmp is not None else Path(workdir)
    fit = data.subset(fit_ids)
    t0 = time.perf_counter()
    clf, n_rows = train_model(fit, config.window, root / "model", config.n_jobs, config.n_estimators, config.train_bounds)
    log(f"triage model (window {config.window}, training windows bounded by {config.train_bounds}): "
        f"{n_rows} triaged candidates, {time.perf_counter() - t0:.1f} s")
    model0_dir = None
    n_rows0 = 0
    if config.online:
        t0 = time.perf_counter()
        _, n_rows0 = train_model(fit, 0, root / "model_w0", config.n_jobs, config.n_estimators,
                                 ordinary_per_series=config.online_ordinary)
        model0_dir = root / "model_w0"
        log(f"window-0 model: {n_rows0} rows (ordinary commits per series: {config.online_ordinary}), "
            f"{time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    det_test = run_detectors(list(test), config.detectors, config.n_jobs)
    log(f"detectors on {len(test)} held-out series: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    det_val = run_detectors(list(val), config.detectors, config.n_jobs)
    log(f"detectors on {len(val)} validation series: {time.perf_counter() - t0:.1f} s")

    rows: list[dict[str, object]] = []
    t0 = time.perf_counter()
    for name in config.detectors:
        alone = metrics(truth, det_test[name], config.margin)
        rows.append({"method": name, "triage": "none", "threshold": None, **alone})
        proba = score(test, det_test[name], clf)
        own = float(clf.threshold_)
        rows.append({"method": name, "triage": "model", "threshold": own,
                     **metrics(truth, keep(det_test[name], proba, own), config.margin)})
        vproba = score(val, det_val[name], clf)
        tuned = tune_threshold(val_truth, det_val[name], vproba, config.margin, config.keep_recall)
        rows.append({"method": name, "triage": "tuned", "threshold": tuned,
                     **metrics(truth, keep(det_test[name], proba, tuned), config.margin)})
    log(f"scoring and metrics: {time.perf_counter() - t0:.1f} s")

    if model0_dir is not None:
        t0 = time.perf_counter()
        pred = online_predictions(test, model0_dir)
        rows.append({"method": "online", "triage": "model", "threshold": 0.5, **metrics(truth, pred, config.margin)})
        # Threshold maximising the mean F1 on the validation series (a coarse grid: each point is a replay).
        best_t, best_f = 0.5, -1.0
        for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
            vp = online_predictions(val, model0_dir, threshold=t)
            f = metrics(val_truth, vp, config.margin)["f1"]
            if f > best_f:
                best_t, best_f = t, f
        pred = online_predictions(test, model0_dir, threshold=best_t)
        rows.append({"method": "online", "triage": "tuned", "threshold": best_t, **metrics(truth, pred, config.margin)})
        log(f"online loop: {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    timing = speed(config.detectors, clf, model0_dir, config.speed_series, config.speed_length, config.seed) if config.speed_series else {}
    log(f"speed on {config.speed_series} series of {config.speed_length} points: {time.perf_counter() - t0:.1f} s")
    for row in rows:
        t = timing.get(str(row["method"]), {})
        row["ms_per_series"] = t.get("alone_ms" if row["triage"] == "none" else "with_triage_ms", float("nan"))

    if tmp is not None:
        tmp.cleanup()
    return {
        "config": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in vars(config).items()},
        "series": {"generated": len(data), "fit": len(fit_ids), "validation_used": len(val_ids), "test_used": len(test_ids),
                   "true_change_points_test": int(sum(len(v) for v in truth.values()))},
        "training_rows": {"model": n_rows, "window0": n_rows0},
        "rows": rows,
        "goals": goals(rows),
        "seconds": time.perf_counter() - started,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }


def goals(rows: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """Triage gain per goal detector and policy: precision points gained, share of recall kept, met or not."""
    out = []
    by = {(r["method"], r["triage"]): r for r in rows}
    for name in GOAL_DETECTORS:
        if (name, "none") not in by:
            continue
        base = by[(name, "none")]
        for policy in ("model", "tuned"):
            r = by[(name, policy)]
            gain = float(r["precision"]) - float(base["precision"])
            kept = float(r["recall"]) / float(base["recall"]) if base["recall"] else float("nan")
            out.append({"method": name, "triage": policy, "precision_gain": gain, "recall_kept": kept,
                        "met": bool(gain >= GOAL_PRECISION_GAIN and kept >= GOAL_RECALL_KEPT)})
    return out


# --------------------------------------------------------------------------- model selection

#: Model variants of the selection study: (window, training-window bounds).
SELECTION_VARIANTS: tuple[tuple[str | int, str], ...] = (
    ("adaptive", "labels"), (10, "labels"), (20, "labels"), (30, "labels"), (60, "labels"), (30, "none"),
)
SELECTION_DETECTORS: tuple[str, ...] = ("perfherder", "edivisive", "binseg")
SELECTION_KEEPS: tuple[float, ...] = (0.95, 0.96, 0.97)


def selection_study(config: Config, n_val: int = 400, workdir: Path | None = None, log=print) -> list[dict[str, object]]:
    """Choose the model window, training bounds and recall share on validation series only.

    ``n_val`` validation series (seeded) are cut in two halves: thresholds are
    tuned on the first, gains measured on the second; no held-out series is
    touched. Returns one row per (variant, detector, keep share).
    """
    from triage.synthetic import generate, preset_config

    overrides = {"n_series": config.n_series} if config.n_series else {}
    data = generate(preset_config(config.preset, **overrides), seed=config.seed)
    fit_ids, val_ids, _ = split_series(data.series_ids, config.test_share, config.val_share, config.seed)
    val_ids = subsample(val_ids, n_val, config.seed + 7)
    halves = val_ids[::2], val_ids[1::2]
    truth = [{s: data[s].true_change_points() for s in half} for half in halves]
    sets = [Dataset([unlabelled(data[s]) for s in half]) for half in halves]
    found = [run_detectors(list(d), SELECTION_DETECTORS, config.n_jobs) for d in sets]
    fit = data.subset(fit_ids)
    tmp = tempfile.TemporaryDirectory(prefix="bench_accuracy_select.") if workdir is None else None
    root = Path(tmp.name) if tmp is not None else Path(workdir)
    rows: list[dict[str, object]] = []
    for window, bounds in SELECTION_VARIANTS:
        clf, _ = train_model(fit, window, root / f"model_{window}_{bounds}", config.n_jobs, config.n_estimators, bounds)
        for name in SELECTION_DETECTORS:
            proba = [score(d, f[name], clf) for d, f in zip(sets, found, strict=True)]
            base = metrics(truth[1], found[1][name], config.margin)
            for share in SELECTION_KEEPS:
                t = tune_threshold(truth[0], found[0][name], proba[0], config.margin, share)
                m = metrics(truth[1], keep(found[1][name], proba[1], t), config.margin)
                rows.append({"window": window, "bounds": bounds, "method": name, "keep_recall": share, "threshold": t,
                             "precision_gain": m["precision"] - base["precision"],
                             "recall_kept": m["recall"] / base["recall"] if base["recall"] else float("nan")})
        log(f"variant window {window}, bounds {bounds} done")
    if tmp is not None:
        tmp.cleanup()
    return rows


def selection_markdown(rows: Sequence[dict[str, object]], share: float = 0.97) -> str:
    """Precision gain (points) and recall kept per variant and detector, at one recall share."""
    lines = ["| model window, training windows bounded by | " + " | ".join(SELECTION_DETECTORS) + " |",
             "| --- |" + " ---: |" * len(SELECTION_DETECTORS)]
    for window, bounds in SELECTION_VARIANTS:
        cells = []
        for name in SELECTION_DETECTORS:
            r = next(r for r in rows if r["window"] == window and r["bounds"] == bounds
                     and r["method"] == name and r["keep_recall"] == share)
            cells.append(f"{100 * r['precision_gain']:+.1f}, {100 * r['recall_kept']:.1f} %")
        lines.append(f"| {window}, {bounds} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- output


def markdown(result: dict[str, object]) -> str:
    """The result as the Markdown tables of BENCHMARKS.md."""
    lines = [
        "| method | triage (threshold) | alerts / series | F1 | precision | recall | F1 (series mean) "
        "| alert precision | alert recall | ms / series (500 pts) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        how = "alone" if r["triage"] == "none" else f"{r['triage']} ({r['threshold']:.3f})"
        lines.append(
            f"| {r['method']} | {how} | {r['alerts_per_series']:.2f} | {r['f1']:.3f} | {r['precision']:.3f} "
            f"| {r['recall']:.3f} | {r['f1_series_mean']:.3f} | {r['alert_precision']:.3f} | {r['alert_recall']:.3f} "
            f"| {r['ms_per_series']:.1f} |"
        )
    if result["goals"]:
        lines += ["", "| detector | triage | precision gain (points) | recall kept | goal (+20 points, >= 95 %) |",
                  "| --- | --- | ---: | ---: | --- |"]
        for g in result["goals"]:
            lines.append(f"| {g['method']} | {g['triage']} | {100 * g['precision_gain']:+.1f} | "
                         f"{100 * g['recall_kept']:.1f} % | {'met' if g['met'] else 'missed'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Config()
    parser.add_argument("--preset", default=d.preset)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--n-series", type=int, default=None, help="override the preset's number of series")
    parser.add_argument("--sample", type=int, default=d.sample, help="held-out series evaluated (0 = all)")
    parser.add_argument("--val-sample", type=int, default=d.val_sample, help="validation series for tuning (0 = all)")
    parser.add_argument("--detectors", default="", help="comma-separated methods (default: all registered + ensemble_c2, ensemble_c4)")
    parser.add_argument("--window", default=str(d.window), help="model window: adaptive or an integer w")
    parser.add_argument("--train-bounds", choices=TRAIN_BOUNDS, default=d.train_bounds,
                        help="training Pre/After bounded by confirmed labels (as triage train) or by nothing (as scoring sees unlabelled series)")
    parser.add_argument("--keep-recall", type=float, default=d.keep_recall)
    parser.add_argument("--no-online", action="store_true")
    parser.add_argument("--online-ordinary", type=int, default=d.online_ordinary,
                        help="window-0 model: unflagged commits per series as negatives (0 = triaged candidates only)")
    parser.add_argument("--speed-series", type=int, default=d.speed_series)
    parser.add_argument("--n-jobs", type=int, default=d.n_jobs)
    parser.add_argument("--out", default="benchmarks/out/accuracy.json")
    parser.add_argument("--select", action="store_true",
                        help="run the validation-only model selection study instead (writes benchmarks/out/accuracy_selection.json)")
    args = parser.parse_args(argv)
    config = Config(
        preset=args.preset, seed=args.seed, n_series=args.n_series, sample=args.sample or None,
        val_sample=args.val_sample or None, window=args.window if args.window == "adaptive" else int(args.window),
        train_bounds=args.train_bounds, keep_recall=args.keep_recall, online=not args.no_online, online_ordinary=args.online_ordinary, speed_series=args.speed_series, n_jobs=args.n_jobs,
    )
    if args.detectors:
        config.detectors = [n.strip() for n in args.detectors.split(",") if n.strip()]
    if args.select:
        rows = selection_study(config, log=lambda msg: print(msg, flush=True))
        out = Path(args.out).with_name("accuracy_selection.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows, indent=2, default=float) + "\n")
        for share in SELECTION_KEEPS:
            print(f"\nthreshold tuned to keep {share:.0%} of the recall on half A, measured on half B:\n")
            print(selection_markdown(rows, share))
        return
    result = run(config, log=lambda msg: print(msg, flush=True))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    print()
    print(markdown(result))
    print(f"\n{result['machine']}; {result['seconds']:.0f} s in all; numbers in {out}")


if __name__ == "__main__":
    main()
