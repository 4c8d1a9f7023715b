"""Warm-up trimming judged by what it is for: commit values a detector can read.

``bench_steady_state.py`` scores each method's steady-state start on single
runs. Here whole JMH-like histories are generated (per series: 40 commits, 3
or 5 forks of 40-500 iterations, one warm-up shape whose amplitude and length
vary from fork to fork, 3 % of forks drifting and never steady, heavy tails
and GC spikes in some series, times and rates; a level shift of 1-5 % at a
random commit in half of the series), each fork is cut by each method, the
forks' kept iterations are pooled into the commit's value, and two things are
measured on the commit values:

* **spread**: the standard deviation of the commit values before the change
  (commits 5 onward), relative to the level; what a detector has to see
  through;
* **F1** of ``perfherder`` on the commit values (TCPDBench's, margin 5,
  averaged over series; the change is the only true change point).

Each method is run with both treatments of a fork it calls never steady:
``whole`` (kept whole, the rule before the thirtieth session) and ``series``
(cut at the median start of its series' steady forks, kept whole when none is
steady: :func:`triage.steady_state.base.cuts`, the rule now). ``oracle`` cuts
each fork at its true onset (a drifting fork whole); ``none`` cuts nothing.

    nice .venv/bin/python benchmarks/bench_steady_histories.py --series 200 --seed 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from triage.core.metrics import f_measure
from triage.detectors.registry import make as make_detector
from triage.steady_state import METHODS, cuts, make

COMMITS = 40


def make_series(rng: np.random.Generator) -> dict:
    """One generated history: ``forks[c]`` the runs of commit ``c``, ``onsets[c]`` their true onsets."""
    iterations = int(rng.choice([40, 60, 100, 200, 500]))
    n_forks = int(rng.choice([3, 5]))
    level = float(rng.uniform(1.0, 1000.0))
    sd = level * float(rng.uniform(0.005, 0.05))
    rate = bool(rng.random() < 0.5)
    kind = str(rng.choice(["exp", "step", "flat"], p=[0.5, 0.3, 0.2]))
    # Half the warm-ups a few noise sd high, half a share of the level (a JIT's first iterations
    # 1.1-4x slower): in noise units the second are far larger.
    amp = float(rng.uniform(3.0, 30.0)) * sd if rng.random() < 0.5 else level * float(rng.uniform(0.1, 3.0))
    tau = float(rng.uniform(0.03, 0.15)) * iterations
    step_at = int(rng.uniform(0.1, 0.4) * iterations)
    heavy, spikes = bool(rng.random() < 0.3), bool(rng.random() < 0.3)
    change = int(rng.integers(12, 29)) if rng.random() < 0.5 else None
    size = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(0.01, 0.05))
    t = np.arange(iterations, dtype=float)
    forks, onsets = [], []
    for c in range(COMMITS):
        here = level * (1.0 + size) if change is not None and c >= change else level
        runs, ons = [], []
        for _ in range(n_forks):
            noise = (rng.standard_t(4, iterations) / np.sqrt(2.0) if heavy else rng.standard_normal(iterations)) * sd
            onset: int | None
            if rng.random() < 0.03:  # a fork that never settles
                shape = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(6.0, 15.0)) * sd * t / iterations
                onset = None
            elif kind == "exp":
                a, ta = amp * float(rng.uniform(0.7, 1.3)), tau * float(rng.uniform(0.7, 1.3))
                shape = a * np.exp(-t / ta)
                onset = int(min(iterations - 1, np.ceil(ta * np.log(max(a / (0.5 * sd), 1.0)))))
            elif kind == "step":
                onset = int(np.clip(step_at * rng.uniform(0.8, 1.2), 1, iterations - 1))
                shape = np.where(t < onset, amp / 2, 0.0)
            else:
                shape, onset = np.zeros(iterations), 0
            values = here + (-shape if rate else shape) + noise  # a warm-up is slower: a rate lower
            if spikes:
                k = max(1, iterations // 100)
                idx = rng.choice(iterations, size=k, replace=False)
                values[idx] += (-1.0 if rate else 1.0) * rng.uniform(6.0, 15.0, size=k) * sd
            runs.append(values)
            ons.append(onset)
        forks.append(runs)
        onsets.append(ons)
    return {"forks": forks, "onsets": onsets, "rate": rate, "change": change, "level": level}


def commit_values(series: dict, starts: list[int | None], policy: str) -> np.ndarray:
    runs = [run for commit in series["forks"] for run in commit]
    lengths = np.array([len(r) for r in runs])
    cut = cuts(lengths, starts, np.zeros(len(runs), dtype=int) if policy == "series" else None)
    out, k = [], 0
    for commit in series["forks"]:
        kept = [run[cut[k + j]:] for j, run in enumerate(commit)]
        k += len(commit)
        out.append(np.concatenate(kept).mean())
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=200, help="generated histories (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    histories = [make_series(rng) for _ in range(args.series)]
    changes = sum(h["change"] is not None for h in histories)
    forks = sum(len(c) for h in histories for c in h["forks"])
    print(f"{args.series} histories of {COMMITS} commits ({forks:,} forks), {changes} with a change, seed {args.seed}")
    perfherder = make_detector("perfherder")
    print("| method | never steady | treatment | spread before the change: median | p90 | perfherder F1 | CPU s |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for method in ("oracle", "none", *METHODS):
        t0 = time.process_time()
        starts_by_series = []
        for h in histories:
            if method == "oracle":
                starts = [s for ons in h["onsets"] for s in ons]
            elif method == "none":
                starts = [0 for c in h["forks"] for _ in c]
            else:
                detector = make(method, rates=h["rate"])
                assert detector is not None
                starts = [detector.fit(run).start_ for c in h["forks"] for run in c]
            starts_by_series.append(starts)
        cpu = time.process_time() - t0
        never = sum(s is None for starts in starts_by_series for s in starts) / forks
        for policy in ("whole", "series") if method in METHODS else ("whole",):
            spreads, f1 = [], []
            for h, starts in zip(histories, starts_by_series, strict=True):
                v = commit_values(h, starts, policy)
                before = v[5: h["change"]] if h["change"] is not None else v[5:]
                spreads.append(float(np.std(before)) / h["level"])
                found = [int(i) for i in perfherder.fit(v).indices_]
                f1.append(f_measure({1: [] if h["change"] is None else [h["change"]]}, found, margin=5).f)
            print(f"| {method} | {never:.1%} | {policy if method in METHODS else '-'} | {np.median(spreads):.3%} | "
                  f"{np.quantile(spreads, 0.9):.3%} | {np.mean(f1):.3f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
