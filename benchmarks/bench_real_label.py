"""Batch labelling on real histories: the bundled models on half-triaged real alerts.

One command regenerates BENCHMARKS.md, "Batch labelling on real data"::

    nice .venv/bin/python benchmarks/bench_real_label.py

Protocol
--------
1. **Data**: the real-data benchmark's parts (:mod:`real_data`, ``stable``
   injection, seed 0; the same parts, split by project, as ``bench_real.py``).
   The figures are on the **test** part (empymod-bench, otel-java), which no
   bundled model was trained, calibrated or tuned on (``--part`` names another
   part, for a look only: ``default-scoring`` learned from fit and validation).
2. **Alerts**: a detector's candidates (``bench_real.py``'s cached detections,
   registry defaults); an alert is a true one when the TCPDBench matching
   (margin 5) pairs it with an injected change (``bench_real.matched``).
3. **A half-triaged history**, as a team has one: in every series, each alert
   is triaged with probability ``--triaged`` (seeded): its truth is its label
   (``true_positive`` / ``false_positive``); the others are ``not_triaged``.
4. **`triage label`'s path**: :func:`triage.batch_label.label_candidates` with
   the bundled ``default-adaptive`` (synthetic ``realnoise`` preset; adaptive
   windows bounded by the *triaged* true alerts, the paper's setting) decides
   the untriaged alerts at its threshold.
5. **`triage score`'s path**, for comparison on the very same untriaged
   alerts: the bundled ``default-scoring`` (real fit projects; honest windows
   bounded by the run's other candidates, no label read) at its threshold for
   that detector (no duplicate suppression: each alert is judged alone).
6. **Figures**: AUC, accuracy, sensitivity (true alerts called true),
   specificity (false alerts called false) against the truth, over the
   untriaged alerts; "all true" is the accuracy of calling every alert true.
   An alert with no commit before it in its window is not scorable for the adaptive model
   and is left out of both rows (counted).

``--thresholds`` adds a sweep of the labelling model's threshold (0.05-0.95):
the mean over the detectors of the balanced accuracy and of the accuracy,
and the threshold with the highest mean balanced accuracy (how
``default-adaptive``'s threshold is chosen, on the validation part).

``--train-real DIR`` (a training choice, BENCHMARKS.md): an adaptive-window
labelling model fitted on the *fit* part's alerts of every registry detector
(injection seeds ``--train-seeds``), each alert once as an untriaged alert of
a half-triaged history (two complementary triage draws), with the windows
`triage label` gives it; XGBoost with ``default-adaptive``'s parameters,
fixed threshold 0.5; ``--with-preset realnoise`` adds that synthetic preset's
triaged candidates. Then measure it with ``--label-model DIR``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_real  # noqa: E402
import real_data  # noqa: E402

from triage.batch_label import label_candidates  # noqa: E402
from triage.core import labels  # noqa: E402
from triage.core.history import Dataset  # noqa: E402
from triage.core.metrics import classification_report  # noqa: E402
from triage.inference import load_classifier  # noqa: E402
from triage.model_lookup import bundled_model  # noqa: E402

DETECTORS: tuple[str, ...] = ("perfherder", "edivisive", "binseg", "ensemble")


def half_triaged(data: Dataset, found: dict, share: float, seed: int) -> Dataset:
    """``data`` with its alerts labelled: triaged ones by their truth, the rest ``not_triaged``.

    ``truth_label`` carries every alert's truth, for scoring the decisions.
    """
    rng = np.random.default_rng(seed)
    return Dataset(
        [labelled(h, found[h.series_id][0], rng.random(len(found[h.series_id][0])) < share) for h in data],
        source=data.source,
    )


def labelled(h, alerts: np.ndarray, triaged: np.ndarray):
    """``h`` with its ``alerts`` labelled: the ``triaged`` ones by their truth, the others ``not_triaged``."""
    idx = np.asarray(alerts, dtype=np.int64)
    lab = np.full(len(h), labels.NONE, dtype=object)
    truth = np.full(len(h), labels.NONE, dtype=object)
    if len(idx):
        said = np.where(bench_real.matched(h.true_change_points(), idx), labels.TRUE_POSITIVE, labels.FALSE_POSITIVE)
        truth[idx] = said
        lab[idx] = np.where(triaged, said, labels.NOT_TRIAGED)
    return dataclasses.replace(h, labels=lab, truth_label=truth, _index=None)


def labelling_rows(data: Dataset, found: dict, seed: int) -> pd.DataFrame:
    """Every alert of every detector once as an untriaged alert: the rows `triage label` builds for it.

    Two complementary triage draws (probability 0.5, seeded): the alerts
    untriaged in one are triaged in the other, so each alert is a row once,
    its adaptive windows bounded by the true alerts triaged in its draw.
    """
    from triage.features.extract import extract_features

    rows = []
    for k, detector in enumerate(sorted(found)):
        rng = np.random.default_rng([seed, k])
        draw = {h.series_id: rng.random(len(found[detector][h.series_id][0])) < 0.5 for h in data}
        for side in (True, False):
            ds = Dataset([labelled(h, found[detector][h.series_id][0], draw[h.series_id] == side) for h in data],
                         source=data.source)
            wanted = {h.series_id: idx for h in ds if len(idx := h.indices_with(labels.UNTRIAGED))}
            if wanted:
                m = extract_features(ds, candidates=wanted, window="adaptive", n_jobs=2)
                m["detector"] = detector
                rows.append(m)
    return pd.concat(rows, ignore_index=True)


def train_real(out: Path, seeds: list[int], n_jobs: int, preset: str | None = None) -> None:
    """``--train-real``: see the module docstring."""
    from triage.training.classifier import TriageClassifier
    from triage.training.model_files import save_model

    started = time.perf_counter()
    reference = load_classifier(bundled_model("default-adaptive"))
    cols = list(reference.feature_names_)
    frames = []
    for seed in seeds:
        fit = real_data.benchmark_parts(mode="stable", seed=seed)["fit"]
        found = bench_real.cached_detections(fit, f"stable_s{seed}_e1_fit", n_jobs, print)
        frames.append(labelling_rows(fit, found, seed))
        print(f"  seed {seed}: {len(frames[-1])} rows ({time.perf_counter() - started:.0f} s)")
    rows = pd.concat(frames, ignore_index=True)
    y = (rows["truth_label"] == labels.TRUE_POSITIVE).to_numpy()
    if preset is not None:
        # The synthetic preset's triaged candidates, as `triage train --preset` builds them.
        from triage.inference import candidate_matrix
        from triage.synthetic import generate

        synthetic = candidate_matrix(generate(preset, seed=0), labels.TRIAGED, window="adaptive", n_jobs=n_jobs)
        synthetic["series_id"] = preset + ":" + synthetic["series_id"].astype(str)
        print(f"  preset {preset}: {len(synthetic)} rows ({time.perf_counter() - started:.0f} s)")
        y = np.concatenate([y, (synthetic["label"] == labels.TRUE_POSITIVE).to_numpy()])
        rows = pd.concat([rows[["series_id", *cols]], synthetic[["series_id", *cols]]], ignore_index=True)
    clf = TriageClassifier(model="xgb", features=cols, threshold="0.5", calibration="none", random_state=0,
                           n_jobs=n_jobs)
    clf.fit(rows[cols], y, groups=rows["series_id"].to_numpy())
    save_model(clf, out, window="adaptive", extra={
        "source": {"real": "fit part (django-asv, emg3d-bench), stable injection", "preset": preset,
                   "injection_seeds": seeds, "detectors": "all registry detectors",
                   "triage_draws": "two complementary draws of probability 0.5"},
        "trained_by": "benchmarks/bench_real_label.py --train-real DIR --train-seeds "
                      + ",".join(str(s) for s in seeds) + (f" --with-preset {preset}" if preset else ""),
    })
    print(f"{len(rows)} rows ({int(y.sum())} true) -> {out} ({time.perf_counter() - started:.0f} s)")


def rates(y: np.ndarray, p: np.ndarray, threshold: float) -> dict[str, float]:
    return classification_report(y, p, threshold=threshold)


def compare(data: Dataset, found: dict, detector: str, adaptive, scoring, share: float, seed: int) -> dict:
    """Both bundled models on one detector's untriaged alerts (see the module docstring)."""
    labelled = half_triaged(data, found[detector], share, seed)
    decisions = label_candidates(labelled, adaptive, which="untriaged", explain_top=0, n_jobs=2)
    scorable = decisions["p_true"].notna().to_numpy()
    decisions = decisions[scorable].reset_index(drop=True)
    y = (decisions["truth_label"] == labels.TRUE_POSITIVE).to_numpy()
    p_adaptive = decisions["p_true"].to_numpy(dtype=float)

    rows = bench_real.candidate_rows(data, found[detector], detector)
    p_all = bench_real.proba_of(scoring, rows)
    key = pd.MultiIndex.from_arrays([rows["series_id"].astype(str), rows["index"].astype(np.int64)])
    where = key.get_indexer(pd.MultiIndex.from_arrays([decisions["series_id"].astype(str),
                                                       decisions["index"].astype(np.int64)]))
    if (where < 0).any():
        raise RuntimeError(f"{detector}: {int((where < 0).sum())} untriaged alerts have no scoring row")
    p_scoring = p_all[where]
    cut = float((scoring.manifest_.get("extra") or {})["detector_thresholds"][detector])
    return {
        "detector": detector,
        "untriaged": len(decisions),
        "true": int(y.sum()),
        "not_scorable": int((~scorable).sum()),
        "triaged_true": int(sum((h.labels == labels.TRUE_POSITIVE).sum() for h in labelled)),
        "adaptive": rates(y, p_adaptive, float(adaptive.threshold_)),
        "scoring": rates(y, p_scoring, cut),
        "scoring_cut": cut,
        "y": y,
        "p_adaptive": p_adaptive,
    }


#: The thresholds ``--thresholds`` compares (BENCHMARKS.md, the rule for ``default-adaptive``'s threshold).
THRESHOLD_GRID: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 20))


def threshold_sweep(results: list[dict]) -> tuple[pd.DataFrame, float]:
    """Mean balanced accuracy and mean accuracy of the labelling model over the detectors, per threshold.

    Returns the table (one row per threshold of :data:`THRESHOLD_GRID`) and
    the threshold with the highest mean balanced accuracy (the lower one on a
    tie). A detector whose untriaged alerts are all of one class gives no
    balanced accuracy and is left out of that mean.
    """
    rows = []
    for t in THRESHOLD_GRID:
        balanced, accuracy = [], []
        for r in results:
            m = rates(r["y"], r["p_adaptive"], t)
            accuracy.append(m["accuracy"])
            if 0 < r["y"].sum() < len(r["y"]):
                balanced.append((m["sensitivity"] + m["specificity"]) / 2)
        rows.append({"threshold": t, "balanced_accuracy": float(np.mean(balanced)), "accuracy": float(np.mean(accuracy))})
    table = pd.DataFrame(rows)
    best = float(table.loc[table["balanced_accuracy"].idxmax(), "threshold"])  # idxmax: the first (lowest) on a tie
    return table, best


def markdown(results: list[dict], part: str, n_histories: int, share: float, seed: int,
             label_name: str = "default-adaptive") -> str:
    lines = [
        f"Real histories, `stable` injection, seed 0, {part} part ({n_histories} base histories); each alert "
        f"triaged with probability {share:g} (seed {seed}), the rest decided.",
        "",
        "| detector | untriaged alerts (true) | model (`triage` command) | AUC | accuracy | sensitivity | specificity "
        "| all true |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        base = r["true"] / r["untriaged"] if r["untriaged"] else float("nan")
        for name, what in ((f"{label_name} (`label`)", "adaptive"), ("default-scoring (`score`)", "scoring")):
            m = r[what]
            lines.append(
                f"| {r['detector']} | {r['untriaged']} ({r['true']}) | {name} | {m['auc']:.3f} | {m['accuracy']:.3f} "
                f"| {m['sensitivity']:.3f} | {m['specificity']:.3f} | {base:.3f} |"
            )
    skipped = {r["detector"]: r["not_scorable"] for r in results if r["not_scorable"]}
    if skipped:
        lines += ["", "Left out as not scorable (no commit before the alert in its window): "
                  + ", ".join(f"{d} {n}" for d, n in skipped.items()) + "."]
    lines += ["", f"Thresholds: {label_name} its manifest's; default-scoring its per-detector cut ("
              + ", ".join(f"{r['detector']} {r['scoring_cut']:.3f}" for r in results) + ")."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", default="test", choices=real_data.PARTS)
    ap.add_argument("--triaged", type=float, default=0.5, help="probability that an alert is already triaged")
    ap.add_argument("--seed", type=int, default=0, help="seed of which alerts are triaged")
    ap.add_argument("--detectors", default=",".join(DETECTORS))
    ap.add_argument("--every", type=int, default=1, help="1 in k base histories (the detection cache is per k)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--label-model", type=Path, default=None,
                    help="the labelling model to measure (default: the bundled default-adaptive)")
    ap.add_argument("--train-real", type=Path, default=None, metavar="DIR",
                    help="fit a labelling model on the real fit part and write it to DIR (see the docstring)")
    ap.add_argument("--train-seeds", default="0,1,2,3,4,5,6", help="injection seeds of --train-real")
    ap.add_argument("--with-preset", default=None, help="--train-real: add this synthetic preset's triaged candidates")
    ap.add_argument("--thresholds", action="store_true",
                    help="also sweep the labelling model's threshold (mean balanced accuracy over the detectors)")
    args = ap.parse_args(argv)
    if args.train_real is not None:
        train_real(args.train_real, [int(s) for s in args.train_seeds.split(",")], args.n_jobs, args.with_preset)
        return 0
    if not 0.0 < args.triaged < 1.0:
        ap.error("--triaged must be between 0 and 1 (exclusive)")
    started = time.perf_counter()
    data = real_data.subsample(real_data.benchmark_parts(mode="stable", seed=0)[args.part], args.every)
    found = bench_real.cached_detections(data, f"stable_s0_e{args.every}_{args.part}", args.n_jobs, print)
    adaptive = load_classifier(args.label_model or bundled_model("default-adaptive"))
    scoring = load_classifier(bundled_model("default-scoring"))
    results = [compare(data, found, d, adaptive, scoring, args.triaged, args.seed) for d in args.detectors.split(",")]
    text = markdown(results, args.part, len(data), args.triaged, args.seed,
                    args.label_model.name if args.label_model else "default-adaptive")
    if args.thresholds:
        sweep, best = threshold_sweep(results)
        text += ("\nThreshold sweep of the labelling model (means over the detectors; balanced accuracy = "
                 "(sensitivity + specificity) / 2):\n\n| threshold | mean balanced accuracy | mean accuracy |\n"
                 "| ---: | ---: | ---: |\n"
                 + "".join(f"| {r.threshold:.2f} | {r.balanced_accuracy:.3f} | {r.accuracy:.3f} |\n"
                           for r in sweep.itertuples())
                 + f"\nHighest mean balanced accuracy at {best:.2f}.\n")
    tag = f"_{args.label_model.name}" if args.label_model else ""
    out = bench_real.OUT / f"bench_real_label_{args.part}_t{args.triaged:g}_s{args.seed}{tag}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    print(f"({time.perf_counter() - started:.0f} s; written to {out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
