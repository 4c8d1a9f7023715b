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
from triage.core.params import typed_value
from triage.detectors.base import Detector, Range, check_ranges
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


#: Allowed range of each numeric parameter, checked by :func:`make` (so before any work)
#: and by each detector's ``fit``: each class's ``ranges`` (:data:`triage.detectors.base.Range`).
_CLASSES: tuple[type[Detector], ...] = (Perfherder, HybridTest, EDivisive, Cusum, Bocpd, Pelt, BinSeg, Ensemble)
RANGES: dict[type[Detector], dict[str, Range]] = {cls: dict(cls.ranges) for cls in _CLASSES}


#: The allowed values of each text parameter (each class's ``choices``), checked by
#: :func:`make` with the ranges: a detector's search uses some of them only when a
#: series reaches that code (EDivisive's merge, when there is a weak point), and
#: ruptures' error for a bad ``model`` names neither the parameter nor the choices.
CHOICES: dict[type[Detector], dict[str, tuple[str, ...]]] = {cls: dict(cls.choices) for cls in _CLASSES if cls.choices}


def check_params(name: str, params: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first parameter of detector ``name`` outside its range."""
    cls, _ = _entry(name)
    check_ranges(name, params, RANGES.get(cls, {}), CHOICES.get(cls, {}))
    if cls is Ensemble:
        _check_members(name, params)
    cross = [("min_back_window", "max_back_window"), ("min_window", "window")]
    if cls in (Perfherder, HybridTest, Cusum):
        for small, big in cross:
            if small in params and big in params and params[small] > params[big]:
                raise ValueError(
                    f"parameter {small}={params[small]!r} of detector {name!r} must be <= {big}={params[big]!r}"
                )


def _check_members(name: str, params: dict[str, Any]) -> None:
    """An ensemble's ``members`` given by name must be detectors, and ``always`` must name members.

    Else the ensemble fails on its first series, with words that name the
    detector registry or the members but not the parameter.
    """
    members = params.get("members", ())
    given = [m.name if isinstance(m, Detector) else str(m) for m in members]
    unknown = [m for m in members if not isinstance(m, Detector) and str(m) not in REGISTRY]
    if unknown:
        raise ValueError(
            f"parameter members={tuple(given)!r} of detector {name!r}: {', '.join(map(repr, unknown))} "
            f"{'is' if len(unknown) == 1 else 'are'} not a detector (use names from {', '.join(REGISTRY)})"
        )
    twice = sorted({m for m in given if given.count(m) > 1})
    if twice:
        # The ensemble's own check came on the first series, named as that series' failure.
        raise ValueError(
            f"parameter members={tuple(given)!r} of detector {name!r} must name distinct detectors; "
            f"{', '.join(map(repr, twice))} {'is' if len(twice) == 1 else 'are'} named twice"
        )
    strangers = [a for a in params.get("always", ()) if a not in given]
    if strangers:
        raise ValueError(
            f"parameter always={tuple(params['always'])!r} of detector {name!r} must name members "
            f"({', '.join(given)}); {', '.join(map(repr, strangers))} {'is' if len(strangers) == 1 else 'are'} not one"
        )


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
    # A list of names given as one string, as --param spells it ("perfherder,pelt"): its letters
    # were read as nine unknown detectors ('p', 'e', 'r', ...).
    params = {k: typed_value(v, full[k]) if isinstance(v, str) and isinstance(full[k], tuple) else v
              for k, v in params.items()}
    for key, value in _entry(name)[1].items():
        # The name labels the output (the candidate file's `detector` column, which picks the scoring
        # model's threshold): hybrid_ks run with test=welch would be Welch candidates called KS ones.
        if key not in params or _same(params[key], value):
            continue
        fits = [n for n, (c, _) in REGISTRY.items() if c is cls and _same(defaults(n)[key], params[key])]
        if fits:
            instead = f"use {fits[0]}"
        elif cls is Ensemble:
            instead = f"use ensemble with {key}"
        else:
            continue  # not one of the choices: check_params names them
        raise ValueError(f"parameter {key}={params[key]!r} of detector {name!r} contradicts its name, which "
                         f"fixes {key}={value!r}: {instead}")
    full.update(params)
    check_params(name, full)
    det = cls(**full)
    det.name = name  # the registry name, e.g. "hybrid_ks", labels its output
    if isinstance(det, Ensemble):
        det.check_params()  # its rules across parameters (min_votes against the members), before any work
    return det


# An ensemble's members given by name are built by make, with their defaults, also in an ensemble
# constructed directly or cloned from get_params (which failed: "names, not detectors"). Set here
# because the ensemble module cannot import the registry, which imports it.
Ensemble.factory = staticmethod(make)


def _same(a: Any, b: Any) -> bool:
    """Equal parameter values; a list and a tuple of the same names are the same (``always``)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return tuple(a) == tuple(b)
    return bool(a == b)


def parse_params(name: str, items: Iterable[str]) -> dict[str, Any]:
    """``["alpha=0.01", "test=ks"]`` -> typed keyword arguments for :func:`make`.

    The grammar is :mod:`triage.core.params`; here each key is checked
    against the detector's parameters and typed by its default. List-valued
    parameters (ensemble ``members``, ``always``) take comma-separated names.
    Raises ``ValueError`` naming the bad item.
    """
    return params.parse_params(items, defaults(name), owner=f"detector {name!r}")
