"""Batch explanations: time of :func:`triage.explain.explain` for 1,000 candidate rows.

The per-row reasons that ``triage label`` / ``triage score --explain`` print
come from this function (tree paths of the model's trees, or a linear
approximation for an SVM). Rows: the candidates of 200 synthetic ``realnoise``
series (seed 0), adaptive windows, the first 1,000. Each bundled model with
adaptive windows (`default-adaptive`, `triage label`'s) explains them, top 3 reasons per row, after one warm-up call;
the median of ``--repeats`` timings is printed (BENCHMARKS.md, "Explanations").

Usage::

    nice .venv/bin/python benchmarks/bench_explain.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", default="default-adaptive", help="models with adaptive windows and the paper's columns")
    args = ap.parse_args()

    from triage.explain import explain
    from triage.features.extract import extract_features
    from triage.model_lookup import resolve_model
    from triage.synthetic import generate, preset_config
    from triage.training.model_files import load_model

    dataset = generate(preset_config("realnoise", n_series=200), seed=0)
    rows = extract_features(dataset, window="adaptive")
    while len(rows) < args.rows:
        rows = pd.concat([rows, rows], ignore_index=True)
    rows = rows.iloc[: args.rows]
    print(f"{len(rows):,} rows from {len(dataset)} series")
    print("| model | trees / kind | seconds for the rows (median) | ms per row |")
    print("| --- | --- | ---: | ---: |")
    for name in args.models.split(","):
        clf = load_model(resolve_model(name))
        explain(clf, rows.iloc[:10], top=3)  # warm-up: the first call compiles and caches
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            reasons = explain(clf, rows, top=3)
            times.append(time.perf_counter() - started)
        assert len(reasons) == len(rows)
        median = statistics.median(times)
        print(f"| {name} | {clf.manifest_.get('model', '?')} | {median:.3f} | {1000 * median / len(rows):.2f} |")


if __name__ == "__main__":
    main()
