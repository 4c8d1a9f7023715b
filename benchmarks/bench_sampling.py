"""Active revision sampling and culprit search on the real histories, hiding commits.

Muehlbauer, Apel and Siegmund estimate a performance history from a few
measured commits with a Gaussian process (Brownian kernel) and pick the next
commit by its uncertainty. This benchmark hides commits of the 372 real
histories in ``../shared/data/real/`` (a commit measured twice is one commit:
its measurements are averaged) and measures:

1. **History estimate.** For 1%, 3% and 5% of the commits measured (at least
   3: the first, the last and one more), the MAPE of the GP's estimate on the
   hidden commits, with the measured commits chosen *actively* (largest
   posterior variance, refitting the hyperparameters up to 4 times) or
   *randomly* (first and last commit plus random ones), and a one-sided
   Wilcoxon signed-rank test across series (active < random).
   ``--kernels`` adds the comparison of the four kernels (active, 3%).
2. **Culprit search.** Injected steps of ``k`` noise sd (the standard
   deviation of first differences over sqrt 2, heavy tails included) at a random commit inside a random gap of 4 to 64 unmeasured
   commits; the old and new levels are the medians of the 5 measured commits
   before and after the gap; the oracle returns the real value plus the step.
   Success: culprit within 1 commit using at most ``log2(gap) + 1``
   measurements (the search gets ``floor(log2(gap)) + 1``). The histories'
   own, unlabelled changes stay in: a real change near the gap counts against
   the search.

    nice .venv/bin/python benchmarks/bench_sampling.py               # everything
    nice .venv/bin/python benchmarks/bench_sampling.py --sample 80   # a seeded random 80 series
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from triage.detectors.base import robust_sigma
from triage.sampling import KERNELS, HistoryGP, find_culprit

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "histories.csv.gz"


def load_real(path: Path, limit: int | None) -> list[tuple[str, np.ndarray]]:
    frame = pd.read_csv(path)
    # A re-run of a commit belongs to that commit: one value per commit, first-appearance order.
    per_commit = frame.groupby(["series_id", "commit"], sort=False)["value"].mean().reset_index()
    out = [(str(s), g["value"].to_numpy(dtype=float)) for s, g in per_commit.groupby("series_id", sort=False)]
    return out[:limit] if limit else out


def mape(y: np.ndarray, est: np.ndarray, hidden: np.ndarray) -> float:
    return float(np.mean(np.abs(est[hidden] - y[hidden]) / np.abs(y[hidden])) * 100)


def run_active(y: np.ndarray, m: int, kernel: str) -> float:
    n = len(y)
    measured = [0, n - 1]
    batch = max(1, int(np.ceil((m - 2) / 4)))
    gp = HistoryGP(kernel).fit(n, measured, y[measured])
    while len(measured) < m:
        measured += gp.next_positions(min(batch, m - len(measured)))
        gp = HistoryGP(kernel).fit(n, measured, y[measured])
    hidden = np.ones(n, dtype=bool)
    hidden[measured] = False
    return mape(y, gp.predict()[0], hidden)


def run_random(y: np.ndarray, m: int, kernel: str, rng: np.random.Generator) -> float:
    n = len(y)
    measured = [0, n - 1, *rng.choice(np.arange(1, n - 1), size=m - 2, replace=False).tolist()]
    gp = HistoryGP(kernel).fit(n, measured, y[measured])
    hidden = np.ones(n, dtype=bool)
    hidden[measured] = False
    return mape(y, gp.predict()[0], hidden)


def history_study(series, fractions, kernel, rng) -> None:
    print(f"\n1. History estimate, kernel {kernel}: MAPE (%) on hidden commits, {len(series)} series")
    print(f"{'measured':>9} {'commits':>8} {'active median':>14} {'random median':>14} "
          f"{'active mean':>12} {'random mean':>12} {'active better':>14} {'Wilcoxon p':>11}")
    for f in fractions:
        act, rnd, ms = [], [], []
        for _, y in series:
            m = max(3, round(f * len(y)))
            ms.append(m)
            act.append(run_active(y, m, kernel))
            rnd.append(run_random(y, m, kernel, rng))
        a, r = np.array(act), np.array(rnd)
        p = stats.wilcoxon(a, r, alternative="less").pvalue
        print(f"{f:9.0%} {np.median(ms):8.0f} {np.median(a):14.2f} {np.median(r):14.2f} "
              f"{np.mean(a):12.2f} {np.mean(r):12.2f} {np.mean(a < r):14.1%} {p:11.2g}")


def kernel_study(series, fraction) -> None:
    print(f"\n   Kernels (active, {fraction:.0%} measured): median / mean MAPE (%)")
    for kernel in KERNELS:
        vals = [run_active(y, max(3, round(fraction * len(y))), kernel) for _, y in series]
        print(f"   {kernel:9} {np.median(vals):7.2f} {np.mean(vals):7.2f}")


def culprit_study(series, steps, trials, rng) -> None:
    print(f"\n2. Culprit search: {trials} injected steps per series, gaps of 4-64 commits")
    print(f"{'step (sd)':>9} {'strategy':>9} {'found':>8} {'mean meas.':>11} {'mean budget':>12} {'cases':>6}")
    for k in steps:
        for strategy in ("bisect", "bayes"):
            ok = meas = budget = cases = 0
            srng = np.random.default_rng(rng.integers(1 << 31))  # same cases for both strategies
            for _, y in series:
                n = len(y)
                sigma = robust_sigma(y)  # the scale of the search's Student-t noise
                # Step sizes in the noise sd with its tails (first differences / sqrt 2):
                # the robust sigma is 1.5 to 4.4 times smaller on these histories.
                noise_sd = float(np.std(np.diff(y))) / np.sqrt(2.0)
                for _ in range(trials):
                    gap = int(srng.integers(4, min(64, n // 2 - 10) + 1))
                    a = int(srng.integers(5, n - gap - 5))
                    b = a + gap
                    c = int(srng.integers(a + 1, b + 1))
                    step = float(srng.choice([-1.0, 1.0])) * k * noise_sd
                    z = y + np.where(np.arange(n) >= c, step, 0.0)
                    old, new = float(np.median(z[a - 4 : a + 1])), float(np.median(z[b : b + 5]))
                    lim = int(np.floor(np.log2(gap))) + 1
                    if old == new:
                        continue
                    s = find_culprit(a, b, lambda i, z=z: z[i], old, new, sigma,
                                     strategy=strategy, max_measurements=lim)
                    cases += 1
                    meas += len(s.measured)
                    budget += lim
                    ok += abs(s.culprit - c) <= 1 and len(s.measured) <= np.log2(gap) + 1
            print(f"{k:9.1f} {strategy:>9} {ok / cases:8.1%} {meas / cases:11.2f} {budget / cases:12.2f} {cases:6d}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REAL)
    ap.add_argument("--limit", type=int, default=None, help="first N series only")
    ap.add_argument("--sample", type=int, default=None, help="a seeded random sample of N series (all sources)")
    ap.add_argument("--kernel", default="brownian", choices=KERNELS)
    ap.add_argument("--kernels", action="store_true", help="also compare the four kernels")
    ap.add_argument("--fractions", default="0.01,0.03,0.05")
    ap.add_argument("--steps", default="3,5", help="injected step sizes in noise sd")
    ap.add_argument("--trials", type=int, default=10, help="injected steps per series")
    ap.add_argument("--skip-history", action="store_true")
    ap.add_argument("--skip-culprit", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the real histories live in ../shared/data/real/)")
        sys.exit(0)
    t0 = time.perf_counter()
    series = load_real(args.data, args.limit)
    rng = np.random.default_rng(args.seed)
    if args.sample:
        series = [series[i] for i in sorted(rng.choice(len(series), size=min(args.sample, len(series)), replace=False))]
    print(f"{len(series)} real series, {sum(len(y) for _, y in series)} commits; seed {args.seed}")
    if not args.skip_history:
        history_study(series, [float(f) for f in args.fractions.split(",")], args.kernel, rng)
        if args.kernels:
            kernel_study(series, 0.03)
    if not args.skip_culprit:
        culprit_study(series, [float(s) for s in args.steps.split(",")], args.trials, rng)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
