"""Steady-state detection: where a run's warm-up ends, before its iterations are aggregated.

Three detectors with one API (fit on one run, read ``start_``; ``None`` means
never steady): :class:`KBKSSD` (Beseda et al., kernel-based, the authors'
configuration), :class:`CPSSD` (Traini et al., change-point based, its
baseline) and :class:`KernelStepSSD` (``kstep``, this project's kernel step
detector with a windowed Welch test). The names
users type are in :data:`METHODS`; :func:`make` builds one, and
:func:`steady_mask` cuts the runs of a measurement table to their steady parts (a run never
steady where the steady runs of its series became steady: :func:`cuts`).
"""

from __future__ import annotations

import warnings

from triage.steady_state.base import (
    NONE,
    SteadyStateDetector,
    cuts,
    steady_mask,
    steady_mask_starts,
    steady_starts,
    too_short_note,
    trim_report,
)
from triage.steady_state.cpssd import CPSSD
from triage.steady_state.kbkssd import KBKSSD
from triage.steady_state.kstep import KernelStepSSD

METHODS: dict[str, type] = {"kbkssd": KBKSSD, "cpssd": CPSSD, "kstep": KernelStepSSD}
CHOICES = (*METHODS, NONE)


def make(name: str, *, rates: bool = False) -> SteadyStateDetector | None:
    """The detector called ``name`` with its defaults; ``None`` for ``none``.

    ``rates``: the runs are rates (higher is better), whose warm-up rises;
    KB-KSSD then looks for a rise (the other two find steps either way).
    """
    key = name.strip().lower()
    if key == NONE:
        return None
    if key not in METHODS:
        raise ValueError(f"unknown steady-state method {name!r} (use one of {', '.join(CHOICES)})")
    if key == "kbkssd":
        return KBKSSD(direction="up" if rates else "down")
    detector: SteadyStateDetector = METHODS[key]()
    return detector


def trim_for(name: str):
    """The warm-up trim of :func:`triage.core.history.dataset_from_long` for method ``name``; None for ``none``.

    ``trim(values, run_id, rising, series)``: each run cut by ``make(name)``, a run of
    a higher-is-better series (a rate, whose warm-up rises) by ``make(name,
    rates=True)``; a series of unknown direction is read as times; a run never
    steady is cut at the median start of its series' steady runs (``series[run]``,
    :func:`~triage.steady_state.base.cuts`). It warns
    (:func:`~triage.steady_state.base.trim_report`) when every run is one
    measurement (nothing to trim: the option did nothing, silently) and when
    runs never became steady (cut at their series' median start or kept whole,
    which summary, convert and candidates never said).
    """
    detector = make(name)
    if detector is None:
        return None
    rate_detector = make(name, rates=True)
    method = name.strip().lower()

    def trim(values, run_id, rising, series):
        keep, lengths, starts, cut = steady_mask_starts(values, run_id, detector, rising, rate_detector, series)
        message = trim_report(method, lengths, starts, min_run=getattr(detector, "min_run", None), cut=cut)
        if message is not None:
            warnings.warn(message, stacklevel=2)
        return keep

    return trim


__all__ = [
    "trim_for",
    "CHOICES",
    "CPSSD",
    "KBKSSD",
    "METHODS",
    "KernelStepSSD",
    "NONE",
    "SteadyStateDetector",
    "cuts",
    "make",
    "steady_mask",
    "steady_starts",
    "too_short_note",
    "trim_report",
]
