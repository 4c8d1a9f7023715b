"""Real benchmark histories with known injected level shifts (issue 10, item 1).

The data: ``../shared/data/real/`` (372 real, unlabelled performance histories
of five open-source projects; see its README). Nothing of it is copied into the
project: this module reads it where it lies and raises :class:`RealDataMissing`
(a clear message, the benchmarks print it and exit 0, the tests skip) when the
folder is absent.

Loading
-------
``histories.csv.gz`` is read with pandas. A commit measured more than once
(re-runs in ``rhai`` and ``otel-java``, not always in consecutive rows) is
*one* commit: its values are averaged and it stays at the position of its
first appearance (a later re-run of an old commit must not move the commit
forward in history). :func:`load_real` returns the untouched histories, the
input of the alarm-rate figures.

Split by source project (fixed, documented, never tuned)
--------------------------------------------------------
One project's series share machines, toolchains and code: a split by series
would let a model learn a project's noise on the fitting side and meet the
same noise on the test side. So every project sits on exactly one side:

========== ================================ ======== =============================================
part       projects                         series   why
========== ================================ ======== =============================================
fit        ``django-asv``, ``emg3d-bench``  158      asv on GitHub runners + a one-machine backfill
                                                     with near-deterministic memory series
validation ``rhai``                         49       a github-action-benchmark export (cargo bench):
                                                     another tool than the fitting side
test       ``empymod-bench``, ``otel-java`` 165      both tools, both directions of "better",
                                                     a laptop backfill and runner machine changes
========== ================================ ======== =============================================

The test side is the largest and holds the hardest noise (machine changes,
higher-is-better JMH), so its figures are not flattered; validation is one
project unlike the fitting ones, so a threshold chosen there has already had
to transfer. :data:`LOSO_GROUPS` (one group per project) is for
leave-one-source-project-out studies.

Injection (ground truth)
------------------------
Real histories already hold unlabelled changes. Two modes deal with them:

``stable`` (the default, the headline figures)
    Each series is put in units of its commit-to-commit noise
    (``1.4826 MAD(diff(x)) / sqrt(2)``, which level changes do not inflate),
    lone outliers are pulled to within ``outlier_clip`` (4) noise units of an
    11-commit running median so that no spike can make a segment, and the
    result is segmented by PELT (L2 cost, ``min_size`` 10) with the penalty
    ``penalty_factor * log(n)`` (default 8 log n, in squared noise units).
    The stretches between its change points of at least ``min_stretch`` (80)
    commits become the base histories (``<series_id>@<start>-<stop>``): a
    segmentation that is quick to call a change, so that what it calls stable
    is stable as far as it can tell and the ground truth is complete.
``stable-global``
    The first version (until 2026-11-23): values standardised by the whole
    series' median / MAD, clipped at +-6, PELT with 10 log n. A series with
    several levels has an inflated MAD, so its real changes looked small:
    ``audit_stable.py`` found 46 % of ``perfherder``'s "false" candidates in
    these stretches to be lasting shifts of >= 3 robust sd far from every
    injected change (label noise). On the development projects (django-asv,
    emg3d-bench, rhai; the choice of ``stable`` and of its penalty read only
    them), 185 of its 480 stretches (39 %) hold a position with such a shift,
    against 46 of 661 (7 %) for ``stable`` at 8 log n (4 log n: 6 % of 635,
    16 log n: 9 % of 661; the same stretches shuffled: 1 %), and ``stable``
    keeps 133,060 of their 176,430 commits.
``whole``
    The whole series is the base history and changes are injected anywhere
    (>= 20 commits from its ends): the real, unlabelled changes stay and count
    against every detector as false alarms, and the ground truth is only the
    injected changes. Reported beside ``stable`` to show the effect.

Into each base history, 0-3 (uniform) multiplicative level shifts are
injected: sizes log-uniform on [2 %, 30 %], sign + or - with equal odds
(a shift of size s multiplies by ``1 + s`` or ``1 / (1 + s)``, symmetric in
log), each at least ``min_gap`` (20) commits from the next one and from both
ends; each shift multiplies the rest of the base history. ``ramp`` (a
diagnostic, default off) spreads each shift over that many commits, equal
steps in log, the truth staying at the ramp's first commit: a change that
lands gradually, which the scoring model never saw in training. The random stream of
each series is seeded by ``(seed, crc32(series_id))``, so a subsample of
series sees exactly the injections the full run sees.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.history import Dataset, History
from triage.core.noise import diff_noise, robust_sd
from triage.detectors.costs import CostL2

#: Where the shared real data lies: ``../shared/data/real`` beside the checkout.
REAL_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"

#: source project (``series_id`` prefix) -> part of the fixed split.
SPLIT: dict[str, str] = {
    "django-asv": "fit",
    "emg3d-bench": "fit",
    "rhai": "validation",
    "empymod-bench": "test",
    "otel-java": "test",
}
PARTS: tuple[str, ...] = ("fit", "validation", "test")
#: The groups of leave-one-source-project-out studies.
LOSO_GROUPS: tuple[str, ...] = tuple(SPLIT)
MODES: tuple[str, ...] = ("stable", "whole", "stable-global")


class RealDataMissing(FileNotFoundError):
    """``../shared/data/real`` is absent: benchmarks print this and exit 0, tests skip."""


@dataclass(frozen=True)
class InjectionConfig:
    """How shifts are injected (see the module docstring)."""

    min_size: float = 0.02
    max_size: float = 0.30
    max_shifts: int = 3
    min_gap: int = 20
    min_stretch: int = 80
    #: PELT penalty per change of ``stable``, times log(n), in squared noise units.
    penalty_factor: float = 8.0
    #: Noise units (of the commit-to-commit noise) an outlier is pulled to, around a running median.
    outlier_clip: float = 4.0
    #: PELT penalty of ``stable-global`` (the first version), times log(n), in squared robust-sd units.
    global_penalty_factor: float = 10.0
    #: Commits over which each shift is spread (geometrically; 0 or 1: a step). A diagnostic of
    #: changes that land gradually; the truth stays at the first commit of the ramp.
    ramp: int = 0


def real_dir(path: str | Path | None = None) -> Path:
    """The real-data folder; :class:`RealDataMissing` with a clear message when absent."""
    folder = Path(path) if path is not None else REAL_DIR
    if not (folder / "histories.csv.gz").is_file():
        raise RealDataMissing(
            f"real data not found: {folder / 'histories.csv.gz'} is absent "
            "(the shared folder ../shared/data/real beside the checkout); skipping"
        )
    return folder


def source_of(series_id: str) -> str:
    """The source project of a series (its ``series_id`` prefix)."""
    return str(series_id).split("/", 1)[0]


def part_of(series_id: str) -> str:
    """``fit``, ``validation`` or ``test`` for a series (by its source project)."""
    src = source_of(series_id)
    try:
        return SPLIT[src]
    except KeyError:
        raise ValueError(f"series {series_id!r}: unknown source project {src!r}") from None


def load_meta(path: str | Path | None = None) -> pd.DataFrame:
    """``series_meta.csv`` indexed by ``series_id`` (``lower_is_better``, ``source`` ...)."""
    return pd.read_csv(real_dir(path) / "series_meta.csv").set_index("series_id")


def load_real(path: str | Path | None = None, sources: Iterable[str] | None = None) -> Dataset:
    """The untouched real histories, one value per commit (re-runs averaged in place).

    Parameters
    ----------
    path : folder holding ``histories.csv.gz`` (default :data:`REAL_DIR`)
    sources : keep only these source projects (default: all five)
    """
    frame = pd.read_csv(real_dir(path) / "histories.csv.gz")
    frame["value"] = frame["value"].astype(np.float64)
    if sources is not None:
        keep = set(sources)
        frame = frame[frame["series_id"].map(source_of).isin(keep)]
    histories = []
    for sid, rows in frame.groupby("series_id", sort=False):
        # sort=False keeps each commit at its first appearance (a late re-run
        # of an old commit belongs to that commit, not to the re-run's time).
        per_commit = rows.groupby("commit", sort=False).agg(
            value=("value", "mean"), timestamp=("timestamp", "first"), n=("value", "size")
        )
        ts = pd.to_datetime(per_commit["timestamp"], utc=True).dt.tz_localize(None)
        histories.append(
            History(
                series_id=str(sid),
                commits=per_commit.index.to_numpy(),
                values=per_commit["value"].to_numpy(),
                labels=None,  # type: ignore[arg-type]  # History fills "" (no candidate)
                timestamps=ts.to_numpy(dtype="datetime64[ns]"),
                n_measurements=per_commit["n"].to_numpy(),
            )
        )
    return Dataset(histories, source=str(real_dir(path) / "histories.csv.gz"))


def robust_z(values: np.ndarray, clip: float = 6.0) -> np.ndarray:
    """(x - median) / (1.4826 MAD), clipped to +-clip; a constant series gives zeros."""
    x = np.asarray(values, dtype=np.float64)
    med = float(np.median(x))
    mad = robust_sd(x)
    if mad <= 0:
        # a near-deterministic series: its resolution sets the scale
        sd = float(np.std(x))
        if sd <= 0:
            return np.zeros_like(x)
        mad = sd
    return np.clip((x - med) / mad, -clip, clip)


def _pelt_l2(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    """Segment ends (half-open, last = n) of PELT with the L2 cost (Killick et al. 2012).

    Exact (every commit a candidate) and vectorised over the candidate set;
    ruptures' pure-Python PELT with ``jump=1`` takes minutes on the
    1,655-commit series. The cost is the detectors' :class:`CostL2` (the same
    stretches on all 372 real histories as the sums written out here before).
    """
    n = len(x)
    cost = CostL2().fit(x)
    best = np.full(n + 1, np.inf)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=np.int64)
    cands = np.array([0], dtype=np.int64)
    for t in range(min_size, n + 1):
        ok = cands[t - cands >= min_size]
        if ok.size:
            total = best[ok] + cost.error(ok, t) + penalty
            i = int(np.argmin(total))
            best[t], last[t] = total[i], ok[i]
            # pruning: a start already worse than the optimum now never wins later
            # (starts too close to t to end a segment there stay)
            long = t - cands >= min_size
            seg = np.zeros(len(cands))
            seg[long] = cost.error(cands[long], t)
            cands = cands[(best[cands] + seg <= best[t]) | ~long]
        if np.isfinite(best[t]):
            cands = np.append(cands, t)
    ends = [n]
    t = n
    while last[t] > 0:
        t = int(last[t])
        ends.append(t)
    return sorted(ends)


def noise_z(values: np.ndarray, clip: float = 4.0, window: int = 11) -> np.ndarray:
    """Values in units of the commit-to-commit noise, each outlier pulled to within ``clip`` of a running median.

    The noise is ``1.4826 MAD(diff(x)) / sqrt(2)``: a level change moves one
    difference, so unlike the MAD of the values it does not grow with the
    number and size of the changes. Returns shape (n,), centred on its median.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return np.zeros_like(x)
    scale = diff_noise(x)
    if scale <= 0:
        # a near-deterministic series: its resolution sets the scale
        scale = float(np.std(x))
        if scale <= 0:
            return np.zeros_like(x)
    half = window // 2
    running = np.median(np.lib.stride_tricks.sliding_window_view(np.pad(x, half, mode="edge"), window), axis=1)
    z = (running + np.clip(x - running, -clip * scale, clip * scale)) / scale
    return z - float(np.median(z))


def stable_stretches(
    values: np.ndarray, config: InjectionConfig = InjectionConfig(), scale: str = "noise"
) -> list[tuple[int, int]]:
    """Half-open stretches of at least ``min_stretch`` commits between change points of the segmentation.

    ``scale="noise"`` is mode ``stable``, ``scale="global"`` mode ``stable-global`` (module docstring).
    """
    n = len(values)
    if n < config.min_stretch:
        return []
    if scale == "noise":
        ends = _pelt_l2(noise_z(values, config.outlier_clip), config.penalty_factor * np.log(n), min_size=10)
    elif scale == "global":
        ends = _pelt_l2(robust_z(values), config.global_penalty_factor * np.log(n), min_size=10)
    else:
        raise ValueError(f"scale must be 'noise' or 'global', got {scale!r}")
    starts = [0, *ends[:-1]]
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b - a >= config.min_stretch]


def _rng(seed: int, series_id: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(series_id.encode())])


def inject_shifts(
    values: np.ndarray, rng: np.random.Generator, config: InjectionConfig = InjectionConfig()
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inject 0..max_shifts multiplicative level shifts.

    Returns
    -------
    (shifted values, change indices ascending, relative sizes signed: factor - 1)
    """
    x = np.asarray(values, dtype=np.float64).copy()
    n = len(x)
    k = int(rng.integers(0, config.max_shifts + 1))
    g = config.min_gap
    # k changes need g commits at both ends and g between neighbours: the last
    # may sit at n - 1 - g at the latest, so k - 1 gaps fit in n - 1 - 2g
    k = max(0, min(k, (n - 1 - 2 * g) // g + 1)) if n - 1 >= 2 * g else 0
    if k == 0:
        return x, np.empty(0, dtype=np.int64), np.empty(0)
    # place k points with gaps >= g: draw from the slack, then add the gaps
    slack = (n - 1 - g) - g - (k - 1) * g
    offsets = np.sort(rng.integers(0, slack + 1, size=k))
    at = g + offsets + np.arange(k) * g
    sizes = np.exp(rng.uniform(np.log(config.min_size), np.log(config.max_size), size=k))
    up = rng.random(k) < 0.5
    factors = np.where(up, 1.0 + sizes, 1.0 / (1.0 + sizes))
    for c, f in zip(at, factors, strict=True):
        w = max(1, config.ramp)
        # the factor reached by each of the first w commits, then f for the rest
        x[int(c):] *= np.concatenate([f ** (np.arange(1, w) / w), np.full(max(0, n - int(c) - w + 1), f)])[: n - int(c)]
    return x, at.astype(np.int64), factors - 1.0


def _with_truth(h: History, start: int, stop: int, sid: str, seed: int, config: InjectionConfig) -> History:
    values, at, _ = inject_shifts(h.values[start:stop], _rng(seed, sid), config)
    truth = np.zeros(stop - start, dtype=bool)
    truth[at] = True
    return History(
        series_id=sid,
        commits=h.commits[start:stop],
        values=values,
        labels=None,  # type: ignore[arg-type]
        timestamps=None if h.timestamps is None else h.timestamps[start:stop],
        true_change=truth,
        n_measurements=None if h.n_measurements is None else h.n_measurements[start:stop],
    )


def inject(
    real: Dataset, mode: str = "stable", seed: int = 0, config: InjectionConfig = InjectionConfig()
) -> Dataset:
    """Base histories (per ``mode``) with injected shifts and ``true_change`` ground truth."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    out = []
    for h in real:
        if mode == "whole":
            out.append(_with_truth(h, 0, len(h), h.series_id, seed, config))
            continue
        for a, b in stable_stretches(h.values, config, "global" if mode == "stable-global" else "noise"):
            out.append(_with_truth(h, a, b, f"{h.series_id}@{a}-{b}", seed, config))
    return Dataset(out, source=f"{real.source} ({mode} injection, seed {seed})")


#: Commits from an injected change to the end of a :func:`truncate_fresh` copy: 1 (the change is
#: the newest commit) to 12, the commits before ``ctx_persist_after`` can be measured
#: (:data:`triage.features.candidate_context.HOLD_HORIZON` - 1).
FRESH_REACH: tuple[int, int] = (1, 12)


def truncate_fresh(data: Dataset, seed: int = 0, reach: tuple[int, int] = FRESH_REACH) -> Dataset:
    """Copies of ``data``'s histories cut short, so that changes and candidates are the newest commits.

    Per history: one copy ending ``r`` commits after each injected change
    (``r`` drawn in ``reach``, the change itself counted: ``r = 1`` makes it
    the last commit), and one ending at a random commit at least 40 commits
    in (ordinary fresh commits). A copy keeps every earlier commit and its
    truth. Its id is the history's with ``#end<stop>`` appended. What a
    user's series looks like when ``triage detect`` and ``triage score`` run
    right after the newest results arrive (the scoring model's fresh alerts).
    """
    out = []
    for h in data:
        rng = _rng(seed, f"{h.series_id}#fresh")
        n = len(h)
        stops = {int(c) + int(rng.integers(reach[0], reach[1] + 1)) for c in h.true_change_points()}
        if n > 40:
            stops.add(int(rng.integers(40, n + 1)))
        for stop in sorted(s for s in stops if s <= n):
            out.append(History(
                series_id=f"{h.series_id}#end{stop}",
                commits=h.commits[:stop],
                values=h.values[:stop],
                labels=None,  # type: ignore[arg-type]
                timestamps=None if h.timestamps is None else h.timestamps[:stop],
                true_change=None if h.true_change is None else h.true_change[:stop],
                n_measurements=None if h.n_measurements is None else h.n_measurements[:stop],
            ))
    return Dataset(out, source=f"{data.source} (cut short after changes, seed {seed})")


def split(data: Dataset) -> dict[str, Dataset]:
    """The fixed split by source project: ``{"fit": ..., "validation": ..., "test": ...}``."""
    parts: dict[str, list[History]] = {p: [] for p in PARTS}
    for h in data:
        parts[part_of(h.series_id)].append(h)
    return {p: Dataset(hs, source=f"{data.source} [{p}]") for p, hs in parts.items()}


def benchmark_parts(
    mode: str = "stable", seed: int = 0, path: str | Path | None = None, config: InjectionConfig = InjectionConfig()
) -> dict[str, Dataset]:
    """Load, inject and split in one call: the benchmark's fit / validation / test parts."""
    return split(inject(load_real(path), mode=mode, seed=seed, config=config))


def subsample(data: Dataset, every: int) -> Dataset:
    """Every ``every``-th history (deterministic, order kept), for quick runs; 1 = all."""
    if every <= 1:
        return data
    return Dataset([h for i, h in enumerate(data) if i % every == 0], source=f"{data.source} (1 in {every})")


# --------------------------------------------------------------------------- diagnostics

#: Bins of :func:`recall_by_size`: a shift's size in commit-to-commit noise units.
SIZE_BINS = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 6), (6, 8), (8, 16), (16, np.inf))


def shift_units(h, c: int) -> float:
    """The injected shift at ``c`` in units of the noise before it.

    |median of the 20 commits from c - median of the 20 before| divided by
    the commit-to-commit noise of the 60 commits before
    (:func:`triage.core.noise.diff_noise`, the unit the stable stretches are
    found in).
    """
    before = h.values[max(0, c - 60) : c]
    return float(abs(np.median(h.values[c : c + 20]) - np.median(before[-20:])) / max(diff_noise(before), 1e-12))


def recall_by_size(
    data: Dataset, found: dict[str, list[int]], other: dict[str, list[int]], margin: int = 5
) -> list[tuple[str, int, float, float]]:
    """Per size bin: (bin, changes, share found by ``found``, by ``other``), a change found within ``margin`` commits.

    A diagnostic: each injected change counted once (TCPDBench's recall
    also counts the start of every history).
    """
    rows = []
    for h in data:
        for c in h.true_change_points():
            c = int(c)
            near = [any(abs(i - c) <= margin for i in f.get(h.series_id, [])) for f in (found, other)]
            rows.append((shift_units(h, c), *near))
    table = np.array(rows, dtype=np.float64).reshape(-1, 3)
    out = []
    for lo, hi in SIZE_BINS:
        m = (table[:, 0] >= lo) & (table[:, 0] < hi)
        if m.any():
            out.append((f"{lo}-{hi:g}" if np.isfinite(hi) else f">= {lo}", int(m.sum()), *table[m, 1:].mean(axis=0)))
    out.append(("all", len(table), *table[:, 1:].mean(axis=0)))
    return out
