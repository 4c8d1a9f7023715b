"""Fast (numba) vs reference (tsfeatures) characteristics on the same windows.

Builds ``--n`` realistic performance windows (seeded: level, relative noise,
optional step, drift, spikes and timer rounding) with lengths uniform in
``[--min-len, --max-len]``, computes all characteristics of every window with
both implementations, checks they agree (1e-6 relative, 1e-8 absolute) and
reports wall and CPU time per window and the speed-up.

Run: .venv/bin/python benchmarks/bench_features.py [--n 10000] [--reference-n N]
``--reference-n`` times the reference on the first N windows only (default:
all of them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from triage.features import catalogue as C
from triage.features import fast, reference


def make_windows(n: int, min_len: int, max_len: int, seed: int) -> list[np.ndarray]:
    """Realistic benchmark windows, shape (len_i,) each."""
    rng = np.random.default_rng(seed)
    out = []
    for length in rng.integers(min_len, max_len + 1, n):
        level = rng.uniform(1.0, 1e4)
        x = level * (1 + rng.normal(0, rng.uniform(0.002, 0.08), length))
        if rng.random() < 0.3:
            x[rng.integers(0, length) :] *= 1 + rng.uniform(-0.2, 0.2)
        if rng.random() < 0.2:
            x += np.linspace(0, level * rng.uniform(-0.05, 0.05), length)
        if rng.random() < 0.2:
            k = int(rng.integers(1, 4))
            x[rng.integers(0, length, k)] *= rng.uniform(1.5, 4.0, k)
        if rng.random() < 0.3:
            x = np.round(x, 1)
        out.append(x)
    return out


def timed(fn, windows):
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(windows)
    return result, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--min-len", type=int, default=10)
    parser.add_argument("--max-len", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-n", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/features.json"))
    args = parser.parse_args()

    windows = make_windows(args.n, args.min_len, args.max_len, args.seed)
    lengths = np.array([len(w) for w in windows])
    ref_n = args.n if args.reference_n is None else min(args.reference_n, args.n)
    load_before = os.getloadavg()

    w0 = time.perf_counter()
    fast.window_characteristics(windows[0])  # numba: compile or load the cache
    first_call = time.perf_counter() - w0
    w0 = time.perf_counter()
    reference.window_characteristics(windows[0])  # import tsfeatures once
    ref_import = time.perf_counter() - w0

    fast_out, fast_wall, fast_cpu = timed(fast.many_window_characteristics, windows)
    ref_out, ref_wall, ref_cpu = timed(reference.many_window_characteristics, windows[:ref_n])
    load_after = os.getloadavg()

    close = np.isclose(fast_out[:ref_n], ref_out, rtol=1e-6, atol=1e-8)
    worst = {
        C.CHARACTERISTICS[j]: int((~close[:, j]).sum())
        for j in range(C.N_CHARACTERISTICS)
        if (~close[:, j]).any()
    }
    fast_per = fast_wall / args.n
    ref_per = ref_wall / ref_n
    result = {
        "windows": args.n,
        "lengths": [int(lengths.min()), int(lengths.max()), float(lengths.mean())],
        "reference_windows": ref_n,
        "fast_wall_s": fast_wall,
        "fast_cpu_s": fast_cpu,
        "fast_us_per_window": fast_per * 1e6,
        "reference_wall_s": ref_wall,
        "reference_cpu_s": ref_cpu,
        "reference_ms_per_window": ref_per * 1e3,
        "speedup_wall": ref_per / fast_per,
        "speedup_cpu": (ref_cpu / ref_n) / (fast_cpu / args.n),
        "fast_first_call_s": first_call,
        "reference_import_s": ref_import,
        "disagreements": worst,
        "all_finite": bool(np.isfinite(fast_out).all()),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"machine: {result['machine']}; load average before {load_before}, after {load_after}")
    print(
        f"{args.n:,} windows, lengths {lengths.min()}-{lengths.max()} (mean {lengths.mean():.0f}); "
        f"reference on {ref_n:,}"
    )
    print(
        f"fast:      {fast_wall:8.2f} s wall, {fast_cpu:8.2f} s CPU, {fast_per * 1e6:8.1f} us/window"
    )
    print(
        f"reference: {ref_wall:8.2f} s wall, {ref_cpu:8.2f} s CPU, {ref_per * 1e3:8.2f} ms/window"
    )
    print(f"speed-up: {result['speedup_wall']:.0f}x wall, {result['speedup_cpu']:.0f}x CPU")
    print(
        f"first fast call (compile or cache load): {first_call:.2f} s; tsfeatures import: {ref_import:.2f} s"
    )
    print(
        f"disagreements beyond 1e-6: {worst or 'none'}; all fast values finite: {result['all_finite']}"
    )


if __name__ == "__main__":
    main()
