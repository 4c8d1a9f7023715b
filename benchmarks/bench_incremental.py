"""Per-commit cost of the online Pre state (BENCHMARKS.md, "Features: incremental update").

One series grows Pre from 0 to ``--n`` commits without a change point; each
commit costs ``features_one(x)`` (the row the window-0 model would classify)
plus ``learn_one(x)`` (x joins Pre), timed with ``perf_counter_ns``. Reported:
the median and 90th percentile per bucket of Pre sizes, for the paper's
characteristics and for the whole catalogue, the JSON size of the state, and,
for scale, the cost of recomputing Pre's characteristics from scratch
(``features.fast.window_characteristics``) at a few sizes.

Usage::

    .venv/bin/python -m benchmarks.bench_incremental --n 5000 --repeats 3 \\
        --png benchmarks/incremental_latency.png
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from triage.features import catalogue as C
from triage.features.fast import window_characteristics
from triage.features.incremental import DEFAULT_HORIZON, PAPER_CHARACTERISTICS, PreState

CONFIGS = {
    "paper (7 + norm pair, 18 columns)": list(PAPER_CHARACTERISTICS),
    "full catalogue (44 columns)": None,
    "full catalogue without max_kl_shift (42 columns)": [
        n for n in C.CHARACTERISTICS + C.PAIR_CHARACTERISTICS if n != "max_kl_shift"
    ],
}


def history(n: int, seed: int) -> np.ndarray:
    """A level with slow drift and measurement noise, rounded like real results."""
    rng = np.random.default_rng(seed)
    drift = np.cumsum(rng.standard_normal(n)) * 0.02
    return np.round(100.0 + drift + rng.standard_normal(n), 3)


def per_commit_ns(names, values: np.ndarray, horizon: int) -> np.ndarray:
    """Nanoseconds of features_one + learn_one for each commit; shape (len(values),)."""
    state = PreState(names, horizon=horizon, series_id="bench")
    out = np.empty(len(values), dtype=np.int64)
    clock = time.perf_counter_ns
    for i, x in enumerate(values.tolist()):
        t0 = clock()
        state.features_one(x)
        state.learn_one(x)
        out[i] = clock() - t0
    return out


def split_ns(names, values: np.ndarray, horizon: int) -> tuple[float, float]:
    """Median ns of learn_one alone and of features_one alone (Pre's cache cold)."""
    state = PreState(names, horizon=horizon)
    learn, feats = [], []
    clock = time.perf_counter_ns
    for x in values.tolist():
        t0 = clock()
        state.features_one(x)
        t1 = clock()
        state.learn_one(x)
        t2 = clock()
        feats.append(t1 - t0)
        learn.append(t2 - t1)
    return float(np.median(learn)), float(np.median(feats))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bucket", type=int, default=250)
    ap.add_argument("--horizon", type=int, default=DEFAULT_HORIZON)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--png", type=Path, default=Path("benchmarks/out/incremental_latency.png"))
    ap.add_argument("--json", type=Path, default=Path("benchmarks/out/incremental.json"))
    args = ap.parse_args()
    values = history(args.n, args.seed)

    report: dict[str, object] = {"n": args.n, "repeats": args.repeats, "horizon": args.horizon, "configs": {}}
    curves = {}
    for label, names in CONFIGS.items():
        per_commit_ns(names, values[:300], args.horizon)  # compile / load the numba cache
        runs = np.stack([per_commit_ns(names, values, args.horizon) for _ in range(args.repeats)])
        best = runs.min(axis=0)  # per commit, the least disturbed of the repeats
        edges = np.arange(0, args.n + 1, args.bucket)
        rows = []
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            chunk = runs[:, a:b].ravel() / 1000.0
            rows.append({"pre": f"{a}-{b - 1}", "median_us": float(np.median(chunk)), "p90_us": float(np.percentile(chunk, 90))})
        state = PreState(names, horizon=args.horizon).learn_many(values)
        learn_ns, feats_ns = split_ns(names, values, args.horizon)
        info = {
            "median_us_all": float(np.median(runs) / 1000.0),
            "median_us_first_1000": float(np.median(runs[:, :1000]) / 1000.0),
            "median_us_last_1000": float(np.median(runs[:, -1000:]) / 1000.0),
            "median_us_learn_one": learn_ns / 1000.0,
            "median_us_features_one": feats_ns / 1000.0,
            "state_json_bytes": len(json.dumps(state.to_dict())),
            "buckets": rows,
        }
        report["configs"][label] = info
        curves[label] = (edges[:-1] + args.bucket / 2, [r["median_us"] for r in rows], best)
        print(f"{label}: median {info['median_us_all']:.1f} us (first 1000: {info['median_us_first_1000']:.1f}, "
              f"last 1000: {info['median_us_last_1000']:.1f}); learn_one {info['median_us_learn_one']:.1f} us, "
              f"features_one {info['median_us_features_one']:.1f} us; state {info['state_json_bytes']} B", flush=True)

    recompute = {}
    for size in (100, 1000, 5000):
        if size > args.n:
            continue
        pre = values[:size]
        window_characteristics(pre)
        times = []
        for _ in range(3):
            t0 = time.perf_counter_ns()
            window_characteristics(pre)
            times.append(time.perf_counter_ns() - t0)
        recompute[size] = float(np.median(times) / 1000.0)
        print(f"recompute all characteristics of Pre, n={size}: {recompute[size]:.0f} us", flush=True)
    report["recompute_us"] = recompute

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, (x, med, _) in curves.items():
        ax.plot(x, med, marker="o", ms=3, label=label)
    ax.axhline(50, color="grey", ls="--", lw=1, label="goal: 50 µs")
    ax.set_xlabel("commits in Pre")
    ax.set_ylabel(f"median µs per commit (bucket of {args.bucket})")
    ax.set_title("PreState: features_one + learn_one per commit")
    ax.set_ylim(bottom=0)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    args.png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png} and {args.json}")


if __name__ == "__main__":
    main()
