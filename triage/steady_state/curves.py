"""Synthetic runs with a known steady-state onset, for tests and the benchmark.

Each run is ``level * (1 + warm-up(t)) + noise`` over ``n`` iterations. Kinds:

``flat``
    steady from the first iteration (onset 0).
``exp``
    exponential warm-up: the excess ``a * exp(-t / tau)`` decays; the onset is
    the first iteration where the excess is at most half a noise standard
    deviation (below that, nobody can tell it from noise in one iteration).
``step``
    one or two plateaus then the steady level (JIT tiers switching in); the
    onset is the last step.
``drift``
    never steady: the level moves linearly through the whole run by 6 to 15
    noise standard deviations.
``late``
    never steady: a step in the last 5% of the run.

Outliers (GC pauses) are upward spikes of 6 to 15 noise sd on 1% of the
iterations of a chosen share of runs; they do not move the onset. Noise is
Gaussian or, for ``heavy_share`` of the runs (0.3), Student-t with 4 degrees
of freedom (heavy tails).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("flat", "exp", "step", "drift", "late")


@dataclass(frozen=True)
class Run:
    """One generated run and what is true about it (``onset`` None: never steady)."""

    values: np.ndarray
    onset: int | None
    kind: str


def make_run(
    kind: str,
    rng: np.random.Generator,
    n: int | None = None,
    outliers: bool = False,
    heavy_share: float = 0.3,
) -> Run:
    """One run of ``kind`` (see module docstring) with ``n`` iterations (300-1500 if None)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (use one of {', '.join(KINDS)})")
    n = int(rng.integers(300, 1501)) if n is None else n
    t = np.arange(n, dtype=float)
    level = float(rng.uniform(1.0, 100.0))
    cv = float(rng.uniform(0.005, 0.05))  # noise sd as a share of the level
    sd = level * cv
    heavy = rng.random() < heavy_share
    noise = (rng.standard_t(4, n) / np.sqrt(2.0) if heavy else rng.standard_normal(n)) * sd
    shape = np.zeros(n)
    onset: int | None
    if kind == "flat":
        onset = 0
    elif kind == "exp":
        amp = float(rng.uniform(3.0, 30.0)) * sd
        tau = float(rng.uniform(0.02, 0.15)) * n
        shape = amp * np.exp(-t / tau)
        onset = int(np.ceil(tau * np.log(amp / (0.5 * sd))))
    elif kind == "step":
        onset = int(rng.integers(int(0.05 * n), int(0.5 * n)))
        shape[:onset] = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(3.0, 20.0)) * sd
        if rng.random() < 0.5:
            first = int(rng.integers(max(1, onset // 4), max(2, onset * 3 // 4)))
            shape[:first] += float(rng.uniform(3.0, 15.0)) * sd * np.sign(shape[0])
    elif kind == "drift":
        onset = None
        shape = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(6.0, 15.0)) * sd * t / n
    else:  # late
        onset = None
        at = int(rng.integers(int(0.95 * n), n - 3))
        shape[at:] = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(5.0, 20.0)) * sd
    values = level + shape + noise
    if outliers:
        k = max(1, n // 100)
        idx = rng.choice(n, size=k, replace=False)
        values[idx] += rng.uniform(6.0, 15.0, size=k) * sd
    return Run(values=values, onset=onset, kind=kind)
