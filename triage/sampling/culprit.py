"""Which commits to measure to find the culprit of a change between two measured commits.

An alert says the level moved between commit ``before`` (position ``a``, old
level) and commit ``after`` (position ``b``, new level), with unmeasured
commits between them. The culprit is the first commit of the new level, one
of ``a+1 .. b``. Perfherder's sheriffs backfill by hand; these searches say
which commit to measure next:

``bisect``
    measure the middle of the remaining range, call the value old or new by
    whichever level it is nearer, keep the half that still holds the change.
    ``ceil(log2(b - a))`` measurements; one noisy reading can mislead it.
``bayes``
    a posterior over the culprit's position under a one-step model: values
    before the culprit ~ t_dof(old, sigma), from it on ~ t_dof(new, sigma)
    (Student-t: heavy-tailed noise; ``dof=1``, the Cauchy, by default), with
    the levels and sigma from the measured commits around the alert (given by
    the caller, :func:`levels_around`). It measures the unmeasured commit
    nearest the posterior median: a reading only says "old" or "new" with
    the same reliability wherever it is taken, so the median split is the
    one of the largest expected information (probabilistic bisection). It
    stops when ``confidence`` of the mass lies within ``tolerance`` commits of
    one position; when both sides of the best position are measured and the
    mass is still short of it, it measures that position's nearest unmeasured
    neighbours (an ambiguous reading costs an extra measurement instead of a
    wrong answer) and stops when there are none. The answer is the centre of
    the ``2 * tolerance + 1`` commits holding the most mass (``confidence`` of
    :class:`Search`: that mass), the Bayes answer when "within ``tolerance``
    commits" is what counts (with ``tolerance=0``, the MAP position). This is
    the probabilistic bisection algorithm of Horstein (1963), analysed by
    Waeber, Frazier and Henderson ("Bisection search with noisy responses",
    2013), with the readings' full likelihood instead of a binary old/new
    answer.

:func:`culprit_posterior` is that posterior for any set of measured commits
(the benchmark's reference that measures the whole gap uses it).

Both take an *oracle*: a function from a position to a measured value (a
file of measurements, a prompt, a benchmark run). Commits inside the gap that
are measured already (``known``) are evidence from the start: the search
never asks the oracle for them again. :func:`levels_around` gives
the old and new levels and the noise scale from the measured commits on each
side of the alert (the CLI and the benchmark use it alike).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from triage.core.noise import MAD_SCALE

STRATEGIES = ("bisect", "bayes")
#: The posterior mass near one position at which the ``bayes`` search stops (its default ``confidence``).
CONFIDENCE = 0.95


def levels_around(left, right) -> tuple[float, float, float]:
    """(old level, new level, noise scale) from the measured values before and after the alert.

    The levels are the medians of each side; the noise scale is the MAD of
    both sides around their own level, pooled (x 1.4826: the sd of Gaussian
    noise). The neighbours' own spread, not the whole series', is used because
    real histories change their noise with the machine and the benchmark code:
    the noise that matters is the noise where the search measures. A side
    without spread (a deterministic counter) falls back to a tenth of the step.
    """
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    if len(left) == 0 or len(right) == 0:
        raise ValueError("at least one measured commit is needed on each side of the alert")
    for side, values in (("before", left), ("after", right)):
        if not np.all(np.isfinite(values)):
            # A NaN made every level and the noise NaN, and the search on them answered anything.
            bad = values[~np.isfinite(values)][0]
            raise ValueError(f"the measured commits {side} the alert hold {bad!r}: give finite values")
    old, new = float(np.median(left)), float(np.median(right))
    sigma = neighbour_spread(left, right) or abs(new - old) / 10
    return old, new, sigma


def neighbour_spread(left, right) -> float:
    """The pooled MAD (x 1.4826) of both sides around their own medians; 0 when they have no spread.

    0 also when each side holds one commit: one reading has no spread.
    """
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    resid = np.r_[left - np.median(left), right - np.median(right)]
    return float(np.median(np.abs(resid)) * MAD_SCALE)


@dataclass
class Search:
    """The measurements made, in order, and the answer.

    ``span``: ``bisect`` only, the first and last position the culprit can
    still be at (one position once it is found; more when the search stopped
    early, ``culprit`` being the last of them).
    """

    measured: list[tuple[int, float]] = field(default_factory=list)
    culprit: int | None = None
    confidence: float = 0.0
    span: tuple[int, int] | None = None


def find_culprit(
    a: int,
    b: int,
    oracle: Callable[[int], float],
    old: float,
    new: float,
    sigma: float,
    *,
    strategy: str = "bisect",
    confidence: float = CONFIDENCE,
    max_measurements: int | None = None,
    tolerance: int = 0,
    dof: float = 1.0,
    known: Mapping[int, float] | None = None,
) -> Search:
    """Localise the change between positions ``a`` (old level) and ``b`` (new level).

    ``known``: values of commits strictly between ``a`` and ``b`` measured
    before the search (position -> value); they are used as readings and never
    measured again (``Search.measured`` holds only the new measurements).
    """
    if b - a < 1:
        raise ValueError(f"'after' must come after 'before' (positions {a} and {b})")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (use one of {', '.join(STRATEGIES)})")
    if old == new:
        raise ValueError("the old and new levels are equal: there is no change to localise")
    if tolerance < 0 or dof <= 0:
        raise ValueError(f"tolerance must be >= 0 and dof > 0 (got {tolerance} and {dof})")
    _check_model(old, new, sigma)
    if not 0.0 < confidence <= 1.0:
        raise ValueError(f"confidence must be in (0, 1], got {confidence!r}")
    if max_measurements is not None and max_measurements < 0:
        raise ValueError(f"max_measurements must be >= 0 or None, got {max_measurements!r}")
    if b - a == 1:
        return Search([], b, 1.0)
    given = {int(p): float(v) for p, v in (known or {}).items() if a < int(p) < b}
    for p, v in given.items():
        _check_reading(p, v, "known")
    oracle = _checked(oracle)
    limit = (b - a - 1 - len(given)) if max_measurements is None else max_measurements
    if strategy == "bisect":
        return _bisect(a, b, oracle, old, new, limit, given)
    return _bayes(
        a,
        b,
        oracle,
        old,
        new,
        max(sigma, 1e-12 * abs(new - old)),
        confidence,
        limit,
        tolerance,
        dof,
        given,
    )


def _check_model(old: float, new: float, sigma: float) -> None:
    """The levels and the noise scale of the one-step model: finite numbers, sigma >= 0."""
    for name, level in (("old", old), ("new", new)):
        if not math.isfinite(level):
            raise ValueError(f"the {name} level must be a finite number, got {level!r}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")


def _check_reading(position: int, value: float, source: str) -> None:
    if not math.isfinite(value):
        # A failed measurement (NaN) compared as neither level: bisect then named the
        # last commit the culprit with confidence 1, bayes any commit with confidence NaN.
        raise ValueError(
            f"the {source} reading of position {position} is {value!r}: a culprit search "
            "needs finite measurements (measure that commit again)"
        )


def _checked(oracle: Callable[[int], float]) -> Callable[[int], float]:
    """``oracle``, refusing a reading that is not a finite number."""

    def reading(position: int) -> float:
        value = float(oracle(position))
        _check_reading(position, value, "oracle's")
        return value

    return reading


def _bisect(
    a: int, b: int, oracle, old: float, new: float, limit: int, known: dict[int, float]
) -> Search:
    s = Search()
    lo, hi = a, b
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid in known:
            v = known[mid]  # measured before the search: no new measurement
        elif len(s.measured) < limit:
            v = float(oracle(mid))
            s.measured.append((mid, v))
        else:
            break
        if abs(v - new) < abs(v - old):
            hi = mid
        else:
            lo = mid
    s.culprit, s.confidence, s.span = hi, float(hi - lo == 1), (lo + 1, hi)
    return s


def _reading_loglik(
    v: float, cands: np.ndarray, m: int, old: float, new: float, sigma: float, dof: float
) -> np.ndarray:
    """Log-likelihood of reading ``v`` at position ``m`` under each culprit in ``cands``.

    Under culprit c, position m is at the new level iff m >= c. Student-t, not
    Gaussian: real benchmark noise has heavy tails and bimodal stretches, and
    one wild reading must not settle the search. The Cauchy (dof 1) by
    default: on the development series (django-asv, emg3d-bench, shifts
    injected as the real-data benchmark does) it found more culprits than dof
    4 or a Gaussian, and as many as dof 0.5 or 2 (BENCHMARKS.md).
    """
    e = (dof + 1.0) / 2.0
    ll_new = -e * _log1p_square((v - new) / sigma, dof)
    ll_old = -e * _log1p_square((v - old) / sigma, dof)
    return np.where(m >= cands, ll_new, ll_old)


def _log1p_square(z: float, dof: float) -> float:
    """``log(1 + z**2 / dof)``, also for a ``z`` whose square overflows.

    Values in the usable range (up to 1e100) and a noise scale near 1e-100
    put a reading 1e200 noise scales from a level; its square is no float.
    """
    if abs(z) < 1e150:
        return float(np.log1p(z**2 / dof))
    # log(z**2 / dof) + log1p(dof / z**2), the second term below 1e-300 here.
    return 2.0 * math.log(abs(z)) - math.log(dof)


def culprit_posterior(
    a: int, b: int, measured, old: float, new: float, sigma: float, *, dof: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(positions ``a+1 .. b``, posterior of each being the culprit) given ``measured`` (position, value) pairs.

    A flat prior over the gap; the one-step Student-t model of the ``bayes``
    search (see the module docstring).
    """
    if b - a < 1:
        raise ValueError(f"'after' must come after 'before' (positions {a} and {b})")
    _check_model(old, new, sigma)
    cands = np.arange(a + 1, b + 1)
    logp = np.zeros(len(cands))
    sigma = max(sigma, 1e-12 * abs(new - old))
    for m, v in measured:
        _check_reading(int(m), float(v), "measured")  # a NaN made the whole posterior NaN
        logp += _reading_loglik(float(v), cands, int(m), old, new, sigma, dof)
    p = np.exp(logp - logp.max())
    return cands, p / p.sum()


def best_position(p: np.ndarray, tolerance: int) -> tuple[int, float]:
    """(index, mass): the position whose +-``tolerance`` neighbourhood holds the most posterior mass."""
    mass = np.convolve(p, np.ones(2 * tolerance + 1), mode="same") if tolerance else p
    k = int(np.argmax(mass))
    return k, float(mass[k])


def _bayes(
    a: int,
    b: int,
    oracle,
    old: float,
    new: float,
    sigma: float,
    conf: float,
    limit: int,
    tol: int,
    dof: float,
    known: dict[int, float],
) -> Search:
    s = Search()
    cands = np.arange(a + 1, b + 1)  # culprit c: positions >= c are at the new level
    logp = np.zeros(len(cands))
    seen = {a, b, *known}
    for m, v in known.items():
        logp += _reading_loglik(v, cands, m, old, new, sigma, dof)

    def posterior() -> np.ndarray:
        p = np.exp(logp - logp.max())
        return p / p.sum()

    while len(s.measured) < limit:
        p = posterior()
        k, mass = best_position(p, tol)
        if mass >= conf:
            break
        c = int(cands[k])
        if (c - 1) in seen and c in seen:
            # Both sides of the best guess are measured but disagree with the
            # levels: more evidence from the nearest unmeasured neighbours (and
            # none left: more readings elsewhere would not settle it).
            extra = [x for x in (c + 1, c - 2, c + 2, c - 3) if a < x < b and x not in seen]
            if not extra:
                break
            m = extra[0]
        else:
            # Measuring m splits the culprits into c <= m and c > m: take the
            # posterior median, so that each reading halves the mass.
            m = int(cands[min(int(np.searchsorted(np.cumsum(p), 0.5)), len(cands) - 1)])
            if m >= b or m in seen:
                free = np.array([x for x in range(a + 1, b) if x not in seen])
                if len(free) == 0:
                    break
                m = int(free[np.argmin(np.abs(free - m))])
        v = float(oracle(m))
        seen.add(m)
        s.measured.append((m, v))
        logp += _reading_loglik(v, cands, m, old, new, sigma, dof)
    k, mass = best_position(posterior(), tol)
    s.culprit, s.confidence = int(cands[k]), mass
    return s
