"""Active revision sampling and culprit search on the real histories, hiding commits.

Muehlbauer, Apel and Siegmund estimate a performance history from a few
measured commits with a Gaussian process (Brownian kernel) and pick the next
commit by its uncertainty. This benchmark hides commits of the 372 real
histories in ``../shared/data/real/`` (a commit measured twice is one commit:
its measurements are averaged) and measures:

1. **History estimate.** For 1%, 3% and 5% of the commits measured (at least
   3: the first, the last and one more), the MAPE of the GP's estimate on the
   hidden commits, with the measured commits chosen *actively* (the first and
   last commit, then ``HistoryGP.next_positions``: by default the largest
   integrated variance reduction, Cohn's ALC, under the prior's
   hyperparameters; ``--acquisition variance --design fitted`` is the first
   version's rule), *randomly* (first and last commit plus random ones, each
   series seeded by ``(seed, fraction, crc32(id))``) or on an *even grid* (a
   reference design), and one-sided Wilcoxon signed-rank tests across series.
   The rule was chosen on the development sources (``--dev-sources``,
   django-asv and emg3d-bench); the tables repeat the figures for the other
   sources alone. ``--kernels`` adds the comparison of the four kernels
   (active, 3%).
2. **Culprit search** in a random gap of 4 to 64 unmeasured commits (the
   history otherwise measured); the old and new levels and the noise scale
   come from the 5 measured commits on each side (``levels_around``, as
   ``triage culprit`` does); the oracle returns the real value with the
   change. Success: culprit within 1 commit using at most ``log2(gap) + 1``
   measurements (the search gets ``floor(log2(gap)) + 1``). The histories'
   own, unlabelled changes stay in: a real change near the gap counts against
   the search. Two kinds of injected change:

   a. ``sd``: additive steps of ``k`` noise sd (the standard deviation of
      first differences over sqrt 2, heavy tails included);
   b. ``real``: multiplicative shifts drawn as ``benchmarks/real_data.py``
      injects them (2-30 %, log-uniform, up or down), reported for all of
      them and for those the ``perfherder`` detector flags within 5 commits
      of the gap (an alert needs a culprit only when a detector alerted).

   ``--neighbours-every K`` runs (b) on the history a CI measuring one
   commit in K sees: the gap is the K commits between two measured ones, the
   neighbours K apart (:func:`real_cases`).

   Searches: ``bisect``, the Bayesian search (probabilistic bisection)
   answering within 1 commit or one exact commit, and ``scan``, a reference
   outside the budget (the whole gap measured, the same posterior's answer).
   Each run also tabulates success by the injected shift over the local noise
   scale (where the goal can hold at all), and, with ``--dev-sources``, the
   held-out sources alone. ``--culprit variants`` compares the Bayesian
   search's variants (tails, neighbours, noise scale, budget use): run it on
   the development sources to choose.

    nice .venv/bin/python benchmarks/bench_sampling.py               # everything
    nice .venv/bin/python benchmarks/bench_sampling.py --sample 80   # a seeded random 80 series
    nice .venv/bin/python benchmarks/bench_sampling.py --skip-history --sources django-asv,emg3d-bench --culprit variants
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from triage.detectors.registry import make
from triage.sampling import (
    KERNELS,
    HistoryGP,
    best_position,
    culprit_posterior,
    find_culprit,
    levels_around,
)
from triage.sampling.gp import ACQUISITIONS, DESIGNS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_data import InjectionConfig  # noqa: E402  (the real-data benchmark's injection, read-only)

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "histories.csv.gz"


def load_real(path: Path, limit: int | None) -> list[tuple[str, np.ndarray]]:
    frame = pd.read_csv(path)
    # A re-run of a commit belongs to that commit: one value per commit, first-appearance order.
    per_commit = frame.groupby(["series_id", "commit"], sort=False)["value"].mean().reset_index()
    out = [(str(s), g["value"].to_numpy(dtype=float)) for s, g in per_commit.groupby("series_id", sort=False)]
    return out[:limit] if limit else out


def mape(y: np.ndarray, est: np.ndarray, hidden: np.ndarray) -> float:
    return float(np.mean(np.abs(est[hidden] - y[hidden]) / np.abs(y[hidden])) * 100)


def run_active(y: np.ndarray, m: int, kernel: str, acquisition: str = "alc", design: str = "prior") -> float:
    n = len(y)
    measured = [0, n - 1]
    gp = HistoryGP(kernel, acquisition, design).fit(n, measured, y[measured])
    # Choosing with the prior's hyperparameters does not depend on the values:
    # one greedy sequence. With fitted ones, refit up to 4 times on the way.
    batch = m - 2 if design == "prior" else max(1, int(np.ceil((m - 2) / 4)))
    while len(measured) < m:
        measured += gp.next_positions(min(batch, m - len(measured)))
        gp = HistoryGP(kernel, acquisition, design).fit(n, measured, y[measured])
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


def run_even(y: np.ndarray, m: int, kernel: str) -> float:
    """A reference design: ``m`` evenly spaced commits, ends included."""
    n = len(y)
    measured = np.unique(np.round(np.linspace(0, n - 1, m)).astype(int))
    gp = HistoryGP(kernel).fit(n, measured, y[measured])
    hidden = np.ones(n, dtype=bool)
    hidden[measured] = False
    return mape(y, gp.predict()[0], hidden)


def _history_table(title: str, rows: list[dict]) -> None:
    print(f"\n   {title}")
    print(f"{'measured':>9} {'series':>7} {'commits':>8} {'active med':>11} {'random med':>11} {'even med':>9} "
          f"{'active mean':>12} {'random mean':>12} {'even mean':>10} {'act<rnd':>8} {'p act<rnd':>10} "
          f"{'act<even':>9} {'p act<even':>11} {'p even<rnd':>11}")
    for r in rows:
        a, rn, ev = r["active"], r["random"], r["even"]
        w = lambda x, z: stats.wilcoxon(x, z, alternative="less").pvalue  # noqa: E731
        print(f"{r['f']:9.0%} {len(a):7d} {np.median(r['m']):8.0f} {np.median(a):11.2f} {np.median(rn):11.2f} "
              f"{np.median(ev):9.2f} {np.mean(a):12.2f} {np.mean(rn):12.2f} {np.mean(ev):10.2f} "
              f"{np.mean(a < rn):8.1%} {w(a, rn):10.2g} {np.mean(a < ev):9.1%} {w(a, ev):11.2g} {w(ev, rn):11.2g}")


def history_study(series, fractions, kernel, seed, acquisition, design, dev_sources) -> None:
    print(f"\n1. History estimate, kernel {kernel}, acquisition {acquisition} ({design} hyperparameters): "
          f"MAPE (%) on hidden commits; one-sided Wilcoxon signed-rank across series")
    rows, t0 = [], time.perf_counter()
    for f in fractions:
        act, rnd, even, ms = [], [], [], []
        for sid, y in series:
            m = max(3, round(f * len(y)))
            ms.append(m)
            act.append(run_active(y, m, kernel, acquisition, design))
            # Each series' random draws are seeded by (seed, fraction, crc32(id)): a subset sees the same draws.
            rnd.append(run_random(y, m, kernel, np.random.default_rng([seed, round(f * 1000), zlib.crc32(sid.encode())])))
            even.append(run_even(y, m, kernel))
        rows.append({"f": f, "active": np.array(act), "random": np.array(rnd), "even": np.array(even),
                     "m": np.array(ms), "src": np.array([sid.split("/", 1)[0] for sid, _ in series])})
        print(f"   ({f:.0%} done, {time.perf_counter() - t0:.0f} s)", flush=True)
    _history_table(f"all {len(series)} series", rows)
    if dev_sources:
        dev = set(dev_sources.split(","))
        for name, keep in ((f"held out (not {dev_sources})", False), (f"development ({dev_sources})", True)):
            sub = [{**r, **{k: r[k][np.isin(r["src"], list(dev)) == keep] for k in ("active", "random", "even", "m")}}
                   for r in rows]
            if len(sub[0]["active"]):
                _history_table(name, sub)


def kernel_study(series, fraction) -> None:
    print(f"\n   Kernels (active, {fraction:.0%} measured, {len(series)} series): median / mean MAPE (%)")
    out: dict[str, np.ndarray] = {}
    for kernel in KERNELS:
        vals = [run_active(y, max(3, round(fraction * len(y))), kernel) for _, y in series]
        print(f"   {kernel:9} {np.median(vals):7.2f} {np.mean(vals):7.2f}", flush=True)
        out[kernel] = np.array(vals)
    ref = out["brownian"]
    for kernel in KERNELS[1:]:
        print(f"   brownian better than {kernel} on {np.mean(ref < out[kernel]):.1%} of series, "
              f"Wilcoxon p (brownian < {kernel}) {stats.wilcoxon(ref, out[kernel], alternative='less').pvalue:.2g}")


@dataclass
class Case:
    """One injected change: the history ``z`` with the change at ``c``, inside the gap ``a`` .. ``b``."""

    z: np.ndarray
    a: int
    b: int
    c: int
    size: float  # sd mode: in noise sd; real mode: the relative size |factor - 1|
    shift: float  # the injected shift in the series' units (real mode: at the old level, the median of 5 before the gap)
    source: str  # the source project (the series id's prefix)
    flagged: bool | None = None  # real mode: perfherder alerts at the gap (see culprit_real_study)
    every: int = 1  # the history measured at every k-th commit only (--neighbours-every): neighbours k apart


def _gap(rng: np.random.Generator, n: int) -> tuple[int, int, int]:
    gap = int(rng.integers(4, min(64, n // 2 - 10) + 1))
    a = int(rng.integers(5, n - gap - 5))
    return a, a + gap, int(rng.integers(a + 1, a + gap + 1))


def sd_cases(series, k: float, trials: int, rng: np.random.Generator) -> list[Case]:
    """Additive steps of ``k`` noise sd (first differences / sqrt 2, heavy tails included)."""
    out = []
    for sid, y in series:
        noise_sd = float(np.std(np.diff(y))) / np.sqrt(2.0)
        for _ in range(trials):
            a, b, c = _gap(rng, len(y))
            step = float(rng.choice([-1.0, 1.0])) * k * noise_sd
            out.append(Case(y + np.where(np.arange(len(y)) >= c, step, 0.0), a, b, c, k, abs(step), _source(sid)))
    return out


def _source(sid: str) -> str:
    return sid.split("/", 1)[0]


def _sparse_gap(rng: np.random.Generator, n: int, every: int) -> tuple[int, int, int]:
    """A gap of ``every`` commits between two measured ones, with room for 5 measured neighbours a side."""
    a = int(rng.integers(4 * every, n - 5 * every))
    return a, a + every, int(rng.integers(a + 1, a + every + 1))


def real_cases(series, trials: int, seed: int, margin: int = 5, every: int = 1) -> list[Case]:
    """Multiplicative shifts drawn as ``benchmarks/real_data.py`` injects them, with perfherder's verdict.

    Size log-uniform on [2 %, 30 %] (:class:`real_data.InjectionConfig`), up or
    down with equal odds (factor ``1 + s`` or ``1 / (1 + s)``); each series'
    draws are seeded by ``(seed, crc32(series_id))``, so a subset of series
    sees the same cases. ``flagged``: the ``perfherder`` detector (registry
    defaults), run on the history as the sheriff sees it (every commit
    measured except the gap's interior), reports a change within ``margin``
    measured commits of the gap's right end ``b``.

    ``every`` > 1: the history as a CI that measures one commit in ``every``
    sees it (the sheriff's usual case): the gap is the ``every`` commits
    between two measured ones, the levels come from the measured commits
    ``every`` apart on each side, and ``perfherder`` runs on those measured
    commits only. Draws then differ from ``every`` = 1's.
    """
    cfg = InjectionConfig()
    det = make("perfherder")
    out = []
    for sid, y in series:
        rng = np.random.default_rng([seed, zlib.crc32(sid.encode())])
        n = len(y)
        if every > 1 and n < 10 * every + 1:
            continue  # too short for 5 measured commits a side and a gap
        for _ in range(trials):
            a, b, c = _gap(rng, n) if every == 1 else _sparse_gap(rng, n, every)
            size = float(np.exp(rng.uniform(np.log(cfg.min_size), np.log(cfg.max_size))))
            factor = 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)
            z = y * np.where(np.arange(n) >= c, factor, 1.0)
            if every == 1:
                seen, at_b = np.delete(z, np.arange(a + 1, b)), a + 1  # b sits at a + 1 here
            else:
                seen, at_b = z[a % every :: every], (b - a % every) // every
            idx = np.asarray(det.fit(seen).indices_)
            before = y[a - 4 * every : a + 1 : every]
            shift = abs(factor - 1.0) * abs(float(np.median(before)))
            out.append(Case(z, a, b, c, size, shift, _source(sid), bool(np.any(np.abs(idx - at_b) <= margin)),
                            every=every))
    return out


#: The searches compared: bisection; the Bayesian search (probabilistic bisection) answering
#: within 1 commit (the goal's criterion, ``tolerance=1``) and answering one exact commit
#: (``tolerance=0``, the CLI's default, the MAP position); ``scan``, a reference outside the
#: budget: every commit of the gap measured, the answer of the same posterior (what the
#: readings allow at all under the one-step model). Keys other than ``find_culprit``'s:
#: ``levels`` (measured neighbours on each side for the levels and noise) and ``scale``
#: (the noise scale multiplied by it).
SEARCHES: dict[str, dict] = {
    "bisect": {"strategy": "bisect"},
    "bayes": {"strategy": "bayes", "tolerance": 1},
    "bayes-t0": {"strategy": "bayes", "tolerance": 0},
    "scan": {"scan": True},
}

#: The variants of the Bayesian search compared on the development sources (``--culprit variants``).
VARIANTS: dict[str, dict] = {
    "bisect": {"strategy": "bisect"},
    "bayes (Cauchy, 5 levels)": {"strategy": "bayes", "tolerance": 1},
    "bayes t, dof 0.5": {"strategy": "bayes", "tolerance": 1, "dof": 0.5},
    "bayes t, dof 2": {"strategy": "bayes", "tolerance": 1, "dof": 2.0},
    "bayes t, dof 4": {"strategy": "bayes", "tolerance": 1, "dof": 4.0},
    "bayes Gaussian (dof 1e6)": {"strategy": "bayes", "tolerance": 1, "dof": 1e6},
    "bayes, 3 levels": {"strategy": "bayes", "tolerance": 1, "levels": 3},
    "bayes, 10 levels": {"strategy": "bayes", "tolerance": 1, "levels": 10},
    "bayes, noise x 0.7": {"strategy": "bayes", "tolerance": 1, "scale": 0.7},
    "bayes, noise x 1.5": {"strategy": "bayes", "tolerance": 1, "scale": 1.5},
    "bayes, whole budget": {"strategy": "bayes", "tolerance": 1, "confidence": 1.0},
    "bayes-t0 (MAP)": {"strategy": "bayes", "tolerance": 0},
    "scan (whole gap)": {"scan": True},
}

#: Bins of shift / local noise (the injected shift over the noise scale of ``levels_around``).
SNR_BINS = (0.0, 1.0, 2.0, 3.0, 5.0, 8.0, np.inf)


def case_levels(case: Case, levels: int = 5) -> tuple[float, float, float]:
    """(old, new, noise scale) from the ``levels`` measured commits on each side of the gap (``every`` apart)."""
    z, a, b, k = case.z, case.a, case.b, case.every
    return levels_around(z[max(a % k, a - k * (levels - 1)) : a + 1 : k], z[b : b + k * levels : k])


def shift_to_noise(case: Case) -> float:
    """The injected shift over the local noise scale the search works with (5 neighbours a side)."""
    sigma = case_levels(case)[2]
    return case.shift / sigma if sigma > 0 else np.inf


def run_search(case: Case, search: str | dict) -> tuple[bool, int, int]:
    """(success, measurements made, budget) of one search on one case."""
    spec = dict(SEARCHES[search] if isinstance(search, str) else search)
    z, a, b = case.z, case.a, case.b
    old, new, sigma = case_levels(case, spec.pop("levels", 5))
    sigma *= spec.pop("scale", 1.0)
    gap = b - a
    lim = int(np.floor(np.log2(gap))) + 1
    if old == new:
        return False, 0, lim
    if spec.pop("scan", False):
        # Outside the budget: every unmeasured commit of the gap read once.
        seen = [(i, z[i]) for i in range(a + 1, b)]
        cands, p = culprit_posterior(a, b, seen, old, new, sigma)
        return abs(int(cands[best_position(p, 1)[0]]) - case.c) <= 1, len(seen), lim
    s = find_culprit(a, b, lambda i: z[i], old, new, sigma, max_measurements=lim, **spec)
    assert s.culprit is not None
    ok = abs(s.culprit - case.c) <= 1 and len(s.measured) <= np.log2(gap) + 1
    return bool(ok), len(s.measured), lim


def _tally(cases: list[Case], search: str | dict) -> tuple[float, float, float, int]:
    runs = [run_search(c, search) for c in cases]
    if not runs:
        return float("nan"), float("nan"), float("nan"), 0
    ok, meas, lim = (np.array(v, dtype=float) for v in zip(*runs, strict=True))
    return float(ok.mean()), float(meas.mean()), float(lim.mean()), len(runs)


def _groups(cases: list[Case], dev_sources: str) -> list[tuple[str, list[Case]]]:
    """The cases, and (with development sources named) those of the other sources alone."""
    dev = [s for s in dev_sources.split(",") if s]
    out = [("all", cases)]
    if dev:
        out += [("held out", [c for c in cases if c.source not in dev]), ("development", [c for c in cases if c.source in dev])]
    return out


def snr_table(title: str, cases: list[Case], dev_sources: str, searches=("bisect", "bayes", "scan")) -> None:
    """Success by shift / local noise: where the 95 % goal can hold at all."""
    print(f"\n{title}: found within 1 commit, by injected shift / local noise scale (5 neighbours a side)")
    ratio = np.array([shift_to_noise(c) for c in cases])
    print(f"{'cases':>12} {'shift/noise':>12} {'n':>6} " + " ".join(f"{s:>8}" for s in searches))
    for name, group in _groups(cases, dev_sources):
        r = np.array([shift_to_noise(c) for c in group]) if group is not cases else ratio
        for lo, hi in zip(SNR_BINS[:-1], SNR_BINS[1:], strict=True):
            sel = [c for c, x in zip(group, r, strict=True) if lo <= x < hi]
            cells = " ".join(f"{_tally(sel, s)[0]:8.1%}" for s in searches)
            print(f"{name:>12} {f'{lo:g}-{hi:g}':>12} {len(sel):6d} {cells}")


def culprit_study(series, steps, trials, rng, dev_sources: str = "") -> None:
    print(f"\n2a. Culprit search: {trials} injected steps per series (k noise sd), gaps of 4-64 commits")
    print(f"{'cases':>12} {'step (sd)':>9} {'strategy':>9} {'found':>8} {'mean meas.':>11} {'mean budget':>12} {'cases':>6}")
    pooled: list[Case] = []
    for k in steps:
        cases = sd_cases(series, k, trials, np.random.default_rng(rng.integers(1 << 31)))
        pooled += cases
        for name, group in _groups(cases, dev_sources):
            for search in SEARCHES:
                ok, meas, lim, n = _tally(group, search)
                print(f"{name:>12} {k:9.1f} {search:>9} {ok:8.1%} {meas:11.2f} {lim:12.2f} {n:6d}")
    snr_table("2a, all steps pooled", pooled, dev_sources)


def culprit_real_study(series, trials, seed, dev_sources: str = "", every: int = 1) -> None:
    cases = real_cases(series, trials, seed, every=every)
    flagged = [c for c in cases if c.flagged]
    sparse = f"; the history measured at every {every}th commit only, the gap {every} commits" if every > 1 else ""
    print(f"\n2b. Culprit search, shifts as real_data.py injects them (2-30 %, log-uniform, both signs): "
          f"{trials} per series, {len(cases)} cases, {len(flagged)} flagged by perfherder within 5 commits{sparse}")
    print(f"{'cases':>26} {'strategy':>9} {'found':>8} {'mean meas.':>11} {'mean budget':>12} {'cases':>6}")
    groups = [("all", cases), ("flagged by perfherder", flagged)]
    for lo, hi in ((0.02, 0.05), (0.05, 0.10), (0.10, 0.30)):
        groups.append((f"all, size {lo:.0%}-{hi:.0%}", [c for c in cases if lo <= c.size < hi or (hi == 0.30 and c.size == hi)]))
    dev = [s for s in dev_sources.split(",") if s]
    if dev:
        held = [c for c in cases if c.source not in dev]
        groups += [("held out: all", held), ("held out: flagged", [c for c in held if c.flagged])]
    for name, group in groups:
        for search in SEARCHES:
            ok, meas, lim, n = _tally(group, search)
            print(f"{name:>26} {search:>9} {ok:8.1%} {meas:11.2f} {lim:12.2f} {n:6d}")
    snr_table("2b, all real-sized cases", cases, dev_sources)
    snr_table("2b, flagged by perfherder", flagged, dev_sources)


def culprit_variants(series, steps, trials, seed, rng) -> None:
    """The Bayesian search's variants side by side (run it on the development sources to choose)."""
    real = real_cases(series, trials, seed)
    flagged = [c for c in real if c.flagged]
    sds = {k: sd_cases(series, k, trials, np.random.default_rng(rng.integers(1 << 31))) for k in steps}
    print(f"\n2c. Variants of the culprit search: {len(real)} real-sized cases ({len(flagged)} flagged), "
          f"{trials} steps per series at each of {', '.join(f'{k:g}' for k in steps)} sd")
    print(f"{'search':>26} {'real: all':>10} {'flagged':>8} " + " ".join(f"{f'{k:g} sd':>7}" for k in steps)
          + f" {'mean meas. (real)':>18}")
    for name, spec in VARIANTS.items():
        ok, meas, _, _ = _tally(real, spec)
        cells = " ".join(f"{_tally(sds[k], spec)[0]:7.1%}" for k in steps)
        print(f"{name:>26} {ok:10.1%} {_tally(flagged, spec)[0]:8.1%} {cells} {meas:18.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REAL)
    ap.add_argument("--limit", type=int, default=None, help="first N series only")
    ap.add_argument("--sample", type=int, default=None, help="a seeded random sample of N series (all sources)")
    ap.add_argument("--kernel", default="brownian", choices=KERNELS)
    ap.add_argument("--kernels", action="store_true", help="also compare the four kernels (active, 3 %%)")
    ap.add_argument("--kernel-sample", type=int, default=None, help="the kernel comparison on a seeded sample of N series")
    ap.add_argument("--acquisition", default="alc", choices=ACQUISITIONS)
    ap.add_argument("--design", default="prior", choices=DESIGNS)
    ap.add_argument("--dev-sources", default="django-asv,emg3d-bench",
                    help="the sources the sampling rule was developed on: tables also for the others alone ('' = none)")
    ap.add_argument("--fractions", default="0.01,0.03,0.05")
    ap.add_argument("--sources", default=None, help="comma-separated source projects to keep (default: all five)")
    ap.add_argument("--exclude-sources", default=None, help="comma-separated source projects to leave out")
    ap.add_argument("--steps", default="3,5,8", help="injected step sizes in noise sd (2a)")
    ap.add_argument("--culprit", default="sd,real",
                    help="which culprit runs: sd (2a), real (2b), variants (2c: the Bayesian search's variants), comma-separated")
    ap.add_argument("--trials", type=int, default=10, help="injected steps per series")
    ap.add_argument("--neighbours-every", type=int, default=1, metavar="K",
                    help="2b on a history measured at every K-th commit only (the gap K commits, the neighbours "
                         "K apart; default 1: every commit but the gap's)")
    ap.add_argument("--skip-history", action="store_true")
    ap.add_argument("--skip-culprit", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.neighbours_every < 1:
        ap.error("--neighbours-every must be >= 1")
    if args.neighbours_every > 1 and "real" not in args.culprit.split(","):
        ap.error("--neighbours-every applies to the culprit run 'real' (2b): give --culprit real")
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the real histories live in ../shared/data/real/)")
        sys.exit(0)
    t0 = time.perf_counter()
    series = load_real(args.data, args.limit)
    rng = np.random.default_rng(args.seed)
    if args.sources:
        series = [(sid, y) for sid, y in series if sid.split("/", 1)[0] in args.sources.split(",")]
    if args.exclude_sources:
        series = [(sid, y) for sid, y in series if sid.split("/", 1)[0] not in args.exclude_sources.split(",")]
    if args.sample:
        series = [series[i] for i in sorted(rng.choice(len(series), size=min(args.sample, len(series)), replace=False))]
    print(f"{len(series)} real series, {sum(len(y) for _, y in series)} commits; seed {args.seed}")
    if not args.skip_history:
        history_study(series, [float(f) for f in args.fractions.split(",")], args.kernel, args.seed,
                      args.acquisition, args.design, args.dev_sources)
    if args.kernels:
        ks = series
        if args.kernel_sample:
            krng = np.random.default_rng([args.seed, 3])
            ks = [series[i] for i in sorted(krng.choice(len(series), size=min(args.kernel_sample, len(series)), replace=False))]
        kernel_study(ks, 0.03)
    if not args.skip_culprit:
        steps = [float(s) for s in args.steps.split(",")]
        if "sd" in args.culprit.split(","):
            culprit_study(series, steps, args.trials, rng, args.dev_sources)
        if "real" in args.culprit.split(","):
            culprit_real_study(series, args.trials, args.seed, args.dev_sources, every=args.neighbours_every)
        if "variants" in args.culprit.split(","):
            culprit_variants(series, steps, args.trials, args.seed, rng)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
