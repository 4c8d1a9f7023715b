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
    before the culprit ~ t4(old, sigma), from it on ~ t4(new, sigma) (Student-t:
    heavy-tailed noise), with the
    levels and sigma from the measured commits around the alert (given by the
    caller). It measures the unmeasured commit nearest the posterior median
    (bisection when readings are clear) and stops when one position holds
    ``confidence`` of the mass and both its neighbours' sides are measured, so
    an ambiguous reading costs an extra measurement instead of a wrong answer.

Both take an *oracle*: a function from a position to a measured value (a
file of measurements, a prompt, a benchmark run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

STRATEGIES = ("bisect", "bayes")


@dataclass
class Search:
    """The measurements made, in order, and the answer."""

    measured: list[tuple[int, float]] = field(default_factory=list)
    culprit: int | None = None
    confidence: float = 0.0


def find_culprit(
    a: int,
    b: int,
    oracle: Callable[[int], float],
    old: float,
    new: float,
    sigma: float,
    *,
    strategy: str = "bisect",
    confidence: float = 0.95,
    max_measurements: int | None = None,
) -> Search:
    """Localise the change between positions ``a`` (old level) and ``b`` (new level)."""
    if b - a < 1:
        raise ValueError(f"'after' must come after 'before' (positions {a} and {b})")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (use one of {', '.join(STRATEGIES)})")
    if old == new:
        raise ValueError("the old and new levels are equal: there is no change to localise")
    if b - a == 1:
        return Search([], b, 1.0)
    limit = (b - a - 1) if max_measurements is None else max_measurements
    if strategy == "bisect":
        return _bisect(a, b, oracle, old, new, limit)
    return _bayes(a, b, oracle, old, new, max(sigma, 1e-12 * abs(new - old)), confidence, limit)


def _bisect(a: int, b: int, oracle, old: float, new: float, limit: int) -> Search:
    s = Search()
    lo, hi = a, b
    while hi - lo > 1 and len(s.measured) < limit:
        mid = (lo + hi) // 2
        v = float(oracle(mid))
        s.measured.append((mid, v))
        if abs(v - new) < abs(v - old):
            hi = mid
        else:
            lo = mid
    s.culprit, s.confidence = hi, float(hi - lo == 1)
    return s


def _bayes(a: int, b: int, oracle, old: float, new: float, sigma: float, conf: float, limit: int) -> Search:
    s = Search()
    cands = np.arange(a + 1, b + 1)  # culprit c: positions >= c are at the new level
    logp = np.zeros(len(cands))
    seen = {a, b}

    def posterior() -> np.ndarray:
        p = np.exp(logp - logp.max())
        return p / p.sum()

    while len(s.measured) < limit:
        p = posterior()
        k = int(np.argmax(p))
        if p[k] >= conf:
            break
        c = int(cands[k])
        if (c - 1) in seen and c in seen:
            # Both sides of the best guess are measured but disagree with the
            # levels: more evidence from the nearest unmeasured neighbours.
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
        # Under culprit c, position m is at the new level iff m >= c.
        # Student-t (4 degrees of freedom), not Gaussian: real benchmark noise
        # has heavy tails, and one wild reading must not settle the search.
        ll_new = -2.5 * np.log1p(((v - new) / sigma) ** 2 / 4.0)
        ll_old = -2.5 * np.log1p(((v - old) / sigma) ** 2 / 4.0)
        logp += np.where(m >= cands, ll_new, ll_old)
    p = posterior()
    k = int(np.argmax(p))
    s.culprit, s.confidence = int(cands[k]), float(p[k])
    return s
