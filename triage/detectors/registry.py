"""Detectors by name, with default parameters, for the CLI and the benchmarks.

``make("hybrid_ks", alpha=0.01)`` builds a detector; :func:`parse_params`
turns ``key=value`` strings into typed keyword arguments, checked against the
detector's parameters (the type of each default decides how a value parses).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
    """Detector ``name`` with its defaults, overridden by ``params``."""
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
    return det


def _parse_value(text: str, default: Any) -> Any:
    if isinstance(default, bool):
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{text!r} is not a boolean")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    if isinstance(default, (tuple, list)):
        return tuple(part.strip() for part in text.split(",") if part.strip())
    return text


def parse_params(name: str, items: Iterable[str]) -> dict[str, Any]:
    """``["alpha=0.01", "test=ks"]`` -> typed keyword arguments for :func:`make`.

    List-valued parameters (ensemble ``members``, ``always``) take
    comma-separated names. Raises ``ValueError`` naming the bad item.
    """
    full = defaults(name)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"parameter {item!r} is not key=value")
        if key not in full:
            raise ValueError(f"unknown parameter {key!r} for detector {name!r} (known: {', '.join(full)})")
        try:
            out[key] = _parse_value(value, full[key])
        except ValueError as exc:
            raise ValueError(f"parameter {key}: {exc}") from None
    return out
