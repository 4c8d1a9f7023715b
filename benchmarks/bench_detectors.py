"""Speed of every registered detector on series of 500 points, and their F1 against ground truth.

Series come from the synthetic generator (preset ``small`` with every series
500 commits long: realistic noise, spikes, drifts, true change points), so
the same run also reports each detector's TCPDBench F1 / precision / recall
(margin 5) against the true change points. Also times E-Divisive's
incremental mode per appended point on TigerBeetle when ../shared is there.

Run: .venv/bin/python benchmarks/bench_detectors.py [--series 20] [--length 500] [--only name,name]
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from triage.core.metrics import f_measure
from triage.detectors import EDivisive, make, names
from triage.synthetic import generate, preset_config

TIGERBEETLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tigerbeetle.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=20)
    parser.add_argument("--length", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated detector names (default: all)")
    args = parser.parse_args()

    config = preset_config("small", n_series=args.series, length_min=args.length, length_max=args.length)
    dataset = generate(config, seed=args.seed)
    histories = list(dataset)
    n_true = sum(len(h.true_change_points()) for h in histories)
    wanted = [n for n in args.only.split(",") if n] or names()

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{len(histories)} synthetic series x {args.length} commits (preset small, seed {args.seed}), "
          f"{n_true} true change points\n")
    print("| detector | ms / series (median) | ms / series (max) | candidates / series | F1 | precision | recall |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in wanted:
        times, found, scores = [], 0, []
        for h in histories:
            det = make(name)
            t0 = time.perf_counter()
            det.fit(h.values)
            times.append(time.perf_counter() - t0)
            found += len(det.change_points_)
            scores.append(f_measure({0: list(h.true_change_points())}, list(det.indices_), margin=5))
        f1 = np.mean([s.f for s in scores])
        p = np.mean([s.precision for s in scores])
        r = np.mean([s.recall for s in scores])
        print(f"| {name} | {1000 * np.median(times):.1f} | {1000 * np.max(times):.1f} | "
              f"{found / len(histories):.1f} | {f1:.3f} | {p:.3f} | {r:.3f} |")

    if TIGERBEETLE.exists():
        x = np.array(json.loads(TIGERBEETLE.read_text()), dtype=float)
        det = EDivisive(window=30, max_pvalue=0.01, min_magnitude=0.05).fit(x[:30])
        per_point = []
        for v in x[30:]:
            t0 = time.perf_counter()
            det.update(v)
            per_point.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        EDivisive(window=30, max_pvalue=0.01, min_magnitude=0.05).fit(x)
        batch = time.perf_counter() - t0
        print(f"\nE-Divisive incremental on TigerBeetle ({len(x)} points, window 30, p 0.01, magnitude 0.05): "
              f"median {1000 * np.median(per_point):.2f} ms, p95 {1000 * np.percentile(per_point, 95):.2f} ms per appended point "
              f"(full refit at 365 points: {1000 * batch:.1f} ms); final change points {[int(i) for i in det.indices_]}")


if __name__ == "__main__":
    main()
