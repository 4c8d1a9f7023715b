"""Choosing which commits to measure: active revision sampling and culprit search.

:class:`~triage.sampling.gp.HistoryGP` estimates a whole history (with its
uncertainty band) from a few measured commits and says which commit to
measure next (Muehlbauer, Apel and Siegmund); :func:`~triage.sampling.culprit.find_culprit`
localises a change between two measured commits with few measurements.
"""

from __future__ import annotations

from triage.sampling.culprit import (
    STRATEGIES,
    Search,
    best_position,
    culprit_posterior,
    find_culprit,
    levels_around,
)
from triage.sampling.gp import KERNELS, HistoryGP
from triage.sampling.kernels import Brownian

__all__ = [
    "KERNELS",
    "STRATEGIES",
    "Brownian",
    "HistoryGP",
    "Search",
    "best_position",
    "culprit_posterior",
    "find_culprit",
    "levels_around",
]
