"""What every steady-state detector shares: the API, the noise level, the trimming of runs.

A *run* is the iterations of one benchmark execution in time order (one JMH
fork, one asv sample series, the repeated CI measurements of one commit). A
detector is fitted on one run and answers with ``start_``: the index of the
first steady iteration, or ``None`` when the run never reaches a steady state.
Parameters are constructor arguments and results are attributes with a
trailing underscore, as in scikit-learn.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from triage.core.noise import robust_sigma

# The detectors' parameter ranges and their check, shared (one home: triage.detectors.base).
from triage.detectors.base import (  # noqa: F401 (COUNT .. PROBABILITY re-exported for the methods)
    COUNT,
    NONNEG,
    NONNEG_INT,
    POSITIVE,
    PROBABILITY,
    Range,
    check_ranges,
    whole_numbers_as_ints,
)

#: A percentile, 0 to 100 (the steady-state methods' own range; see :data:`triage.detectors.base.Range`).
PERCENTILE: Range = ("float", 0, 100, True, True)


def check_params(method: str, detector: object, ranges: dict[str, Range]) -> None:
    """``ValueError`` naming the first parameter of ``detector`` outside its range.

    Called by each detector's ``fit`` (the constructor only stores): a bad
    value otherwise met numpy deep inside (``short_kernel=-1`` an IndexError,
    ``n_boot=0`` "index -1 is out of bounds") or was taken and answered
    nonsense (``kelly_window=0``: never steady; ``t_crit=-1``, ``alpha=nan``).
    """
    check_ranges(method, {key: getattr(detector, key) for key in ranges}, ranges, {}, what="steady-state method")
    whole_numbers_as_ints(detector, ranges)  # CPSSD(n_boot=10.0) failed in numpy

# The names users type (``--trim-warmup``); ``none`` keeps every iteration.
NONE = "none"


class SteadyStateDetector(Protocol):
    """Fit on one run's iterations; ``start_`` is the steady-state start or ``None``."""

    start_: int | None

    def fit(self, x: np.ndarray) -> SteadyStateDetector: ...


def as_run(x: object) -> np.ndarray:
    """One run as a finite float vector; a run with NaN or inf is refused, not guessed.

    A column or row (one axis longer than 1) is a run; a scalar or a table of
    several runs is refused rather than read as one run end to end.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or sum(d > 1 for d in arr.shape) > 1:
        raise ValueError(
            f"a run must be one-dimensional (its iterations in order), got shape {arr.shape}"
        )
    arr = arr.ravel()
    if not np.all(np.isfinite(arr)):
        raise ValueError("a run's iterations must be finite numbers")
    return arr


def noise_level(x: np.ndarray) -> float:
    """Noise standard deviation of a run with steps and a warm-up slope.

    First differences cancel the slow warm-up trend and a step moves only one
    of them, so their median absolute value is a robust noise estimate
    (:func:`triage.core.noise.robust_sigma`); it is floored at a tiny share
    of the level so that a constant run does not divide by zero. The floor is
    relative at every scale (a run in seconds per operation is ~1e-8): an
    absolute floor would swamp the noise of small values.
    """
    s = robust_sigma(x)
    level = float(np.median(np.abs(x))) if len(x) else 0.0
    if level == 0.0 and len(x):
        level = float(np.max(np.abs(x)))
    floor = 1e-9 * level if level > 0 else 1e-9
    return max(s, floor)


def steady_starts(
    values: np.ndarray,
    run_id: np.ndarray,
    detector: SteadyStateDetector,
    rising: np.ndarray | None = None,
    rising_detector: SteadyStateDetector | None = None,
) -> tuple[np.ndarray, list[int | None]]:
    """``(lengths, starts)`` of the runs of a measurement table: each run's length and steady start.

    ``values[i]`` belongs to run ``run_id[i]`` (runs are contiguous, in
    iteration order, numbered 0, 1, ...); ``starts[r]`` is ``None`` when run
    ``r`` never becomes steady. A run whose ``rising[run]`` is true (a rate,
    higher is better) is cut by ``rising_detector`` when one is given.
    """
    if len(run_id) != len(values):
        # A shorter run_id cut only its first values and kept the rest untouched, silently.
        raise ValueError(f"values and run_id must be as long: {len(values)} and {len(run_id)}")
    if len(values) == 0:
        return np.zeros(0, dtype=int), []
    bounds = np.flatnonzero(np.r_[True, run_id[1:] != run_id[:-1], True])
    starts: list[int | None] = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        rate = rising is not None and rising_detector is not None and bool(rising[run_id[a]])
        starts.append((rising_detector if rate else detector).fit(values[a:b]).start_)  # type: ignore[union-attr]
    return np.diff(bounds), starts


def cuts(lengths: np.ndarray, starts: list[int | None], groups: np.ndarray | None = None) -> np.ndarray:
    """How many iterations to drop from the start of each run: its steady start, or a fallback.

    ``lengths[r]`` and ``starts[r]`` are run ``r``'s length and steady start
    (:func:`steady_starts`; ``None``: never steady). ``groups[r]`` names the
    series run ``r`` belongs to (its other forks and commits). A never-steady
    run of several iterations is cut where the steady runs of its series
    became steady (the median of their starts) when that leaves some of it,
    and kept whole when no run of its series is steady (or ``groups`` is None).

    Why: kept whole beside its trimmed siblings, a never-steady fork carried
    its warm-up into its commit's value alone, so whether a commit rose or
    fell depended on a per-fork verdict. JMH histories of 40 commits, 3 forks
    of 60 iterations with a large exponential warm-up: KB-KSSD called 51 of
    120 forks never steady and the commit values spread 6 % where the level
    was flat, which hid a real 3 % change from ``perfherder`` (a walkthrough,
    thirtieth session; ``benchmarks/bench_steady_histories.py``).
    """
    lengths = np.asarray(lengths, dtype=int)
    out = np.array([0 if s is None else s for s in starts], dtype=int)
    unknown = np.array([s is None for s in starts], dtype=bool)
    never = unknown & (lengths > 1)
    if groups is None or not never.any():
        return out
    groups = np.asarray(groups)
    if len(groups) != len(lengths):
        raise ValueError(f"one group per run: {len(lengths)} runs, {len(groups)} groups")
    judged = ~unknown & (lengths > 1)
    for g in np.unique(groups[never]):
        steady = out[judged & (groups == g)]
        if len(steady) == 0:
            continue
        at = int(np.median(steady))
        mine = never & (groups == g) & (lengths > at)
        out[mine] = at
    return out


def steady_mask(
    values: np.ndarray,
    run_id: np.ndarray,
    detector: SteadyStateDetector | None,
    rising: np.ndarray | None = None,
    rising_detector: SteadyStateDetector | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Which measurements to keep when each run is cut to its steady part.

    ``values[i]`` belongs to run ``run_id[i]`` (runs are contiguous, in
    iteration order, numbered 0, 1, ...). A run that never becomes steady is
    cut where the steady runs of its series (``groups[run]``) became steady,
    and kept whole when none of them did (:func:`cuts`): dropping the commit
    would hide it from the detectors altogether. A run
    whose ``rising[run]`` is true (a rate, higher is better) is cut by
    ``rising_detector`` when one is given.
    """
    return steady_mask_starts(values, run_id, detector, rising, rising_detector, groups)[0]


def steady_mask_starts(
    values: np.ndarray,
    run_id: np.ndarray,
    detector: SteadyStateDetector | None,
    rising: np.ndarray | None,
    rising_detector: SteadyStateDetector | None,
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, list[int | None], np.ndarray]:
    """:func:`steady_mask` with the runs' lengths, starts (:func:`steady_starts`; none without a
    detector) and cuts (:func:`cuts`: the iterations dropped from each)."""
    if len(run_id) != len(values):
        raise ValueError(f"values and run_id must be as long: {len(values)} and {len(run_id)}")
    keep = np.ones(len(values), dtype=bool)
    if detector is None or len(values) == 0:
        return keep, np.zeros(0, dtype=int), [], np.zeros(0, dtype=int)
    lengths, starts = steady_starts(values, run_id, detector, rising, rising_detector)
    cut = cuts(lengths, starts, groups)
    first = np.r_[0, np.cumsum(lengths)[:-1]]
    for a, drop in zip(first, cut, strict=True):
        if drop:
            keep[a : a + drop] = False
    return keep, lengths, starts, cut


def too_short_note(method: str, lengths: np.ndarray, min_run: int | None) -> str:
    """``"; N of them ..."`` when never-steady runs of these ``lengths`` are shorter than ``min_run``
    (the fewest iterations ``method`` judges, :attr:`KBKSSD.min_run`), else ``""``."""
    if not min_run:
        return ""
    short = int(np.sum((np.asarray(lengths) > 1) & (np.asarray(lengths) < min_run)))
    if not short:
        return ""
    return (
        f"; {short:,} of them shorter than the {min_run} iterations {method} needs "
        "(not judged; cpssd judges short runs)"
    )


def trim_report(
    method: str,
    lengths: np.ndarray,
    starts: list[int | None],
    runs: str = "runs (a commit's measurements; each fork's apart with a fork column)",
    min_run: int | None = None,
    cut: np.ndarray | None = None,
) -> str | None:
    """What a user of ``--trim-warmup METHOD`` must be told about these runs, or ``None``.

    Two things the values alone do not show: the data was one value per commit
    already (every run one measurement: nothing can be cut, the option did
    nothing), and runs that never became steady: how many were cut at their
    series' median steady start and how many kept whole (``cut``, from
    :func:`cuts`; all kept whole without it), with how many of them
    were too short for the method to judge (``min_run``: its fewest
    iterations, KB-KSSD's :attr:`~triage.steady_state.kbkssd.KBKSSD.min_run`).
    ``runs`` names what a run is for the reader (``forks`` for JMH results).
    """
    lengths = np.asarray(lengths)
    if len(lengths) == 0:
        return None
    several = lengths > 1
    one = runs.split(" (")[0].removesuffix("s")  # "run", "fork"
    if not several.any():
        return (
            f"--trim-warmup {method}: every {one} holds a single measurement (the data is "
            "one value per commit already, or single-shot forks): there is no warm-up to cut, nothing was trimmed"
        )
    cut = np.zeros(len(lengths), dtype=int) if cut is None else np.asarray(cut)
    never = [(int(n), int(c)) for n, s, c in zip(lengths, starts, cut, strict=True) if n > 1 and s is None]
    if not never:
        return None
    single = int((~several).sum())
    whole = sum(c == 0 for _, c in never)
    if whole == len(never):
        fate = "kept whole, every measurement of them in their commit's value"
    else:
        fate = (f"{len(never) - whole:,} cut where the steady {one}s of their series became steady (the median "
                f"of their starts)" + (f", {whole:,} kept whole (no {one} of their series steady)" if whole else ""))
    return (
        f"--trim-warmup {method}: {len(never):,} of {int(several.sum()):,} {runs} never steady by {method} "
        f"(still moving, or too short to tell): {fate}"
        + too_short_note(method, np.array([n for n, _ in never]), min_run)
        + (f" ({single:,} more {'holds' if single == 1 else 'hold'} a single measurement: nothing to cut)"
           if single else "")
    )
