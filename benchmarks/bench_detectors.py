"""Speed of every registered detector on series of 500 points, and their F1 against ground truth.

Series come from the synthetic generator (preset ``small`` with every series
500 commits long: realistic noise, spikes, drifts, true change points), so
the same run also reports each detector's TCPDBench F1 / precision / recall
(margin 5) against the true change points. Also times E-Divisive's
incremental mode per appended point on TigerBeetle when ../shared is there.

``--cvm-real N`` instead times ``hybrid_cvm`` on N real histories of
../shared/data/real (spread evenly over the 372: every 372 // N-th) with
scipy's ``cramervonmises_2samp(a, b).pvalue`` per window (the old path) and
with :func:`triage.detectors.windowed.cvm_pvalue` (exact null distribution
counted once per pair of sizes, memoised statistic), and checks that every
scan p-value is bit-identical and the change points are the same.

Run: .venv/bin/python benchmarks/bench_detectors.py [--series 20] [--length 500] [--only name,name]
     nice .venv/bin/python benchmarks/bench_detectors.py --cvm-real 20
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_data  # noqa: E402

from triage.core.metrics import f_measure  # noqa: E402
from triage.detectors import EDivisive, make, names, windowed  # noqa: E402
from triage.synthetic import generate, preset_config  # noqa: E402

TIGERBEETLE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tigerbeetle.json"


def cvm_real(n_series: int) -> int:
    """Old (scipy per window) vs new ``hybrid_cvm`` on real histories; returns the number of mismatches."""
    histories = list(real_data.load_real())
    step = max(1, len(histories) // n_series)
    chosen = histories[::step][:n_series]
    fast = windowed.HYBRID_TESTS["cvm"]
    old = windowed._pvalue(windowed._scipy_cvm_pvalue)
    windowed._CVM_CACHE.clear()
    windowed.cvm_null_tail.cache_clear()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f} at start")
    print(f"hybrid_cvm on {len(chosen)} real histories (every {step}th of {len(histories)}), "
          f"{sum(len(h.values) for h in chosen)} commits; new path timed first, from empty caches\n")
    print("| series | commits | scipy s | new s | speed-up | scan p-values equal | change points (equal) |")
    print("| --- | ---: | ---: | ---: | ---: | :---: | ---: |")
    total_old = total_new = 0.0
    mismatches = 0
    for h in chosen:
        x = np.asarray(h.values, dtype=np.float64)
        try:
            t0 = time.perf_counter()
            det_new = make("hybrid_cvm").fit(x)
            t_new = time.perf_counter() - t0
            p_new = det_new.scan(x)[0]
            windowed.HYBRID_TESTS["cvm"] = old
            t0 = time.perf_counter()
            det_old = make("hybrid_cvm").fit(x)
            t_old = time.perf_counter() - t0
            p_old = det_old.scan(x)[0]
        finally:
            windowed.HYBRID_TESTS["cvm"] = fast
        same_p = bool(np.array_equal(p_new, p_old))
        same_cp = list(det_new.indices_) == list(det_old.indices_)
        mismatches += (not same_p) + (not same_cp)
        total_old += t_old
        total_new += t_new
        print(f"| {h.series_id[:60]} | {len(x)} | {t_old:.2f} | {t_new:.3f} | {t_old / t_new:.0f}x | "
              f"{'yes' if same_p else 'NO'} | {len(det_new.indices_)} ({'yes' if same_cp else 'NO'}) |")
    print(f"| **total** | | **{total_old:.1f}** | **{total_new:.2f}** | **{total_old / total_new:.0f}x** | | |")
    print(f"\nmismatching series (p-values or change points): {mismatches}; "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    return mismatches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=20)
    parser.add_argument("--length", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated detector names (default: all)")
    parser.add_argument("--cvm-real", type=int, default=0, metavar="N",
                        help="only compare hybrid_cvm's old and new p-value paths on N real histories")
    args = parser.parse_args()
    if args.cvm_real:
        try:
            mismatches = cvm_real(args.cvm_real)
        except real_data.RealDataMissing as exc:
            raise SystemExit(str(exc)) from None
        raise SystemExit(1 if mismatches else 0)

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
