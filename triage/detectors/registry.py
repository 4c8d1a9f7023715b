"""Detectors by name, with default parameters, for the CLI and the benchmarks.

``make("hybrid_ks", alpha=0.01)`` builds a detector (and the detectors an
ensemble names); :func:`parse_params` turns ``key=value`` strings (grammar:
:mod:`triage.core.params`) into typed keyword arguments, checked against the
detector's parameters (the type of each default decides how a value parses).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triage.core import params
from triage.detectors.base import Detector
from triage.detectors.bocpd import Bocpd
from triage.detectors.cusum import Cusum
from triage.detectors.edivisive import EDivisive
from triage.detectors.ensemble import Ensemble
from triage.detectors.penalised import BinSeg, Pelt
from triage.detectors.windowed import HybridTest, Perfherder

#: name -> (class, parameters that differ from the class defaults)
REGISTRY: dict[str, tuple[type[Detector], dict[str, Any]]] = {
    "perfherder": (Perfherder, {}),
    "hybrid_welch": (HybridTest, {"test": "welch"}),
    "hybrid_mwu": (HybridTest, {"test": "mwu"}),
    "hybrid_ks": (HybridTest, {"test": "ks"}),
    "hybrid_cvm": (HybridTest, {"test": "cvm"}),
    "hybrid_levene": (HybridTest, {"test": "levene"}),
    "edivisive": (EDivisive, {}),
    "cusum": (Cusum, {}),
    "bocpd": (Bocpd, {}),
    "pelt": (Pelt, {}),
    "binseg": (BinSeg, {}),
    "ensemble": (Ensemble, {}),
    "mozilla_or_ensemble": (Ensemble, {"always": ("perfherder",)}),
}


def names() -> list[str]:
    return list(REGISTRY)


def _entry(name: str) -> tuple[type[Detector], dict[str, Any]]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown detector {name!r} (known: {', '.join(REGISTRY)})") from None


def defaults(name: str) -> dict[str, Any]:
    """All parameters of detector ``name`` with their default values."""
    cls, overrides = _entry(name)
    params = cls().get_params()
    params.update(overrides)
    return params


def make(name: str, **params: Any) -> Detector:
    """Detector ``name`` with its defaults, overridden by ``params``.

    An ensemble's members may be registry names: the ensemble builds them
    with this function (its ``factory``), each with its own defaults.
    """
    cls, _ = _entry(name)
    full = defaults(name)
    unknown = set(params) - set(full)
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(sorted(unknown))} for detector {name!r} "
            f"(known: {', '.join(full)})"
        )
    full.update(params)
    det = cls(**full)
    det.name = name  # the registry name, e.g. "hybrid_ks", labels its output
    if isinstance(det, Ensemble):
        det.factory = make  # members given by name are built here, with their defaults
    return det


def parse_params(name: str, items: Iterable[str]) -> dict[str, Any]:
    """``["alpha=0.01", "test=ks"]`` -> typed keyword arguments for :func:`make`.

    The grammar is :mod:`triage.core.params`; here each key is checked
    against the detector's parameters and typed by its default. List-valued
    parameters (ensemble ``members``, ``always``) take comma-separated names.
    Raises ``ValueError`` naming the bad item.
    """
    return params.parse_params(items, defaults(name), owner=f"detector {name!r}")
