"""Genetic feature selection on the default synthetic benchmark (BENCHMARKS.md, "Genetic feature selection").

Generates the preset, extracts the feature matrix (cached as Parquet under
``--out``; the training benchmark's cache is reused when present), times one
fitness evaluation with all columns, then runs the GA and writes the feature
set, its wall time and the per-generation history.

Usage (the paper's settings; about 30 hours of CPU on the default preset)::

    .venv/bin/python -m benchmarks.bench_selection --preset default --window adaptive \\
        --population 200 --generations 71 --trees 100 --folds 5 --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd


def load_matrix(preset: str, seed: int, window: str | int, out: Path, n_jobs: int) -> tuple[pd.DataFrame, dict]:
    info: dict[str, object] = {}
    name = f"matrix-w{window}.parquet"
    for cache in (out / name, Path("benchmarks/out/training") / name):
        if cache.exists() and preset == "default" and seed == 0:
            info["matrix_from"] = str(cache)
            return pd.read_parquet(cache), info
    from triage.features.extract import extract_features
    from triage.synthetic import generate

    t0 = time.perf_counter()
    dataset = generate(preset, seed=seed)
    info["generate_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    matrix = extract_features(dataset, window=window, n_jobs=n_jobs)
    info["extract_s"] = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    matrix.to_parquet(out / name)
    print(f"matrix {matrix.shape} (generate {info['generate_s']:.1f} s, extract {info['extract_s']:.1f} s)", flush=True)
    return matrix, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", default="adaptive")
    ap.add_argument("--metric", default="accuracy")
    ap.add_argument("--population", type=int, default=200)
    ap.add_argument("--generations", type=int, default=71)
    ap.add_argument("--patience", type=int, default=10)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/selection"))
    args = ap.parse_args()
    window: str | int = args.window if args.window == "adaptive" else int(args.window)

    from triage.features.feature_sets import save_feature_set
    from triage.features.matrix import training_data
    from triage.features.selection import GeneticSelector, cv_score, grouped_splits, select_features

    matrix, report = load_matrix(args.preset, args.seed, window, args.out, args.n_jobs)
    rows = training_data(matrix)
    X, y, groups, columns = rows.X, rows.y.astype(np.int64), rows.groups, rows.columns
    report.update({"rows": int(len(y)), "columns": len(columns), "series": int(len(np.unique(groups)))})
    t0 = time.perf_counter()
    splits = grouped_splits(y, groups, args.folds, args.seed)
    everything = cv_score(X, y, splits, np.arange(len(columns)), n_estimators=args.trees, seed=args.seed, metric=args.metric)
    report["one_evaluation_s"] = time.perf_counter() - t0
    report["all_columns_fitness"] = everything
    print(f"{len(y)} triaged rows x {len(columns)} columns; one evaluation (all columns) "
          f"{report['one_evaluation_s']:.1f} s, {args.metric} {everything:.4f}", flush=True)

    selector = GeneticSelector(
        population=args.population, generations=args.generations, patience=args.patience, metric=args.metric,
        n_splits=args.folds, n_estimators=args.trees, seed=args.seed, n_jobs=args.n_jobs,
    )

    def progress(gen: int, total: int, best: float, n_eval: int) -> None:
        print(f"generation {gen}/{total}: best {best:.4f}, {n_eval} subsets, "
              f"{time.perf_counter() - started:.0f} s", flush=True)

    started = time.perf_counter()
    fs = select_features(matrix, selector=selector, callback=progress)
    report["ga_wall_s"] = time.perf_counter() - started
    fs.extra["window"] = args.window
    args.out.mkdir(parents=True, exist_ok=True)
    save_feature_set(fs, args.out / "feature_set.json")
    report.update({k: v for k, v in fs.to_dict().items() if k != "history"})
    report["args"] = {k: str(v) for k, v in vars(args).items()}
    (args.out / "report.json").write_text(json.dumps(report, indent=2))
    print(f"GA {report['ga_wall_s']:.0f} s: {len(fs.names)} columns, {args.metric} {fs.fitness:.4f}, "
          f"{fs.generations} generations, {fs.n_evaluated} subsets", flush=True)
    print(", ".join(fs.names))


if __name__ == "__main__":
    main()
