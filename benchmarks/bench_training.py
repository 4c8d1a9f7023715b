"""Training and evaluation on the synthetic benchmark (BENCHMARKS.md, "Training and evaluation").

Steps (each optional, ``--steps``):

``matrix``   generate the preset and extract the feature matrices (cached as
             Parquet under ``--out``, so later steps and reruns skip it)
``fit``      RF training time on every triaged candidate (the < 60 s goal)
``table1``   the paper's protocol for rf, svm, xgb under random, grouped and
             time-ordered splits (``--splits`` each), timed per split kind
``windows``  AUC against the window size w = 0..10 and adaptive (RF)

Usage::

    .venv/bin/python -m benchmarks.bench_training --preset default --splits 100 --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd


def matrix_for(dataset, window, out: Path, n_jobs: int) -> pd.DataFrame:
    from triage.features.extract import extract_features

    cache = out / f"matrix-w{window}.parquet"
    if cache.exists():
        return pd.read_parquet(cache)
    started = time.perf_counter()
    matrix = extract_features(dataset, window=window, n_jobs=n_jobs)
    print(f"features, window {window}: {len(matrix):,} rows in {time.perf_counter() - started:.1f} s", flush=True)
    matrix.to_parquet(cache)
    return matrix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--splits", type=int, default=100)
    ap.add_argument("--time-splits", type=int, default=20,
                    help="repetitions of the time-ordered split (its split is fixed; only model seeds vary)")
    ap.add_argument("--window-splits", type=int, default=20)
    ap.add_argument("--windows", default="0-10,adaptive")
    ap.add_argument("--models", default="rf,svm,xgb")
    ap.add_argument("--kinds", default="random,grouped,time")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--steps", default="matrix,fit,table1,windows")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/training"))
    args = ap.parse_args()
    steps = set(args.steps.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"preset": args.preset, "seed": args.seed}

    from triage.cli.training import parse_windows
    from triage.synthetic import generate

    dataset = None

    def data():
        nonlocal dataset
        if dataset is None:
            started = time.perf_counter()
            dataset = generate(args.preset, seed=args.seed)
            print(f"generated {args.preset}: {len(dataset):,} series in {time.perf_counter() - started:.1f} s", flush=True)
        return dataset

    cache = args.out / "matrix-wadaptive.parquet"
    matrix = pd.read_parquet(cache) if cache.exists() else matrix_for(data(), "adaptive", args.out, args.n_jobs)

    from triage.features.matrix import training_data
    from triage.training.classifier import TriageClassifier

    td = training_data(matrix)
    report["candidates"] = len(td)
    report["true_alerts"] = int(td.y.sum())
    report["series"] = int(len(set(td.groups)))
    report["features"] = len(td.columns)
    print(f"{len(td):,} triaged candidates ({td.y.sum():,} true), {len(td.columns)} features", flush=True)

    if "fit" in steps:
        for n_jobs in (1, args.n_jobs):
            started, cpu = time.perf_counter(), time.process_time()
            TriageClassifier(model="rf", n_jobs=n_jobs).fit(matrix)
            secs = time.perf_counter() - started
            report[f"rf_fit_seconds_njobs{n_jobs}"] = secs
            report[f"rf_fit_cpu_seconds_njobs{n_jobs}"] = time.process_time() - cpu
            print(f"RF fit on all {len(td):,} candidates, n_jobs={n_jobs}: {secs:.1f} s wall, "
                  f"{time.process_time() - cpu:.1f} s CPU", flush=True)

    if "table1" in steps:
        from triage.training.evaluation import evaluate

        frames = []
        for kind in args.kinds.split(","):
            started = time.perf_counter()
            n = args.time_splits if kind == "time" else args.splits
            result = evaluate(td, models=args.models.split(","), splits=[kind], n_splits=n,
                              n_jobs=args.n_jobs, progress=False)
            secs = time.perf_counter() - started
            report[f"protocol_seconds_{kind}"] = secs
            report[f"protocol_cpu_seconds_{kind}"] = float(result.records["cpu_seconds"].sum())
            report[f"protocol_cpu_seconds_per_split_{kind}"] = float(result.records["cpu_seconds"].sum()) / n
            print(f"{kind}: {n} splits x {args.models}: {secs / 60:.1f} min", flush=True)
            frames.append(result.records)
            result.save(args.out / f"table1-{kind}")
        from triage.training.evaluation import EvaluationResult

        combined = EvaluationResult(pd.concat(frames, ignore_index=True), result.settings)
        combined.save(args.out / "table1")
        print(combined.to_markdown(), flush=True)

    if "windows" in steps:
        from triage.training.evaluation import window_markdown, window_study
        from triage.training.plots import window_png

        started = time.perf_counter()
        table = window_study(lambda w: matrix_for(data(), w, args.out, args.n_jobs), parse_windows(args.windows),
                             n_splits=args.window_splits, n_jobs=args.n_jobs, progress=False)
        report["window_study_seconds"] = time.perf_counter() - started
        table.to_csv(args.out / "window_study.csv", index=False)
        window_png(table, args.out / "window_study.png")
        print(window_markdown(table), flush=True)

    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
