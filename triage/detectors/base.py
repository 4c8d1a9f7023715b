"""The detector API shared by every method in :mod:`triage.detectors`.

In the style of ``ruptures``: a detector is a small class whose constructor
only stores parameters; :meth:`Detector.fit` runs the search on one series and
sets ``change_points_``; :meth:`Detector.detect` is the one-call shortcut.

Index convention (everywhere in this package): a change point's ``index`` is
the 0-based position of the *first commit of the new level*, so index 0 is
never a change point and ``values[:index]`` / ``values[index:]`` are the two
sides.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ChangePoint:
    """One detected change.

    Attributes
    ----------
    index : int
        First commit of the new level (0-based position in the series).
    score : float
        The detector's strength of evidence; larger means stronger. Its unit
        depends on the detector (t-value, -log10 p, probability, votes, ...),
        so compare scores only within one detector.
    fields : dict
        Detector-specific extras (p-value, means either side, ...), written as
        extra columns of the candidate CSV.
    """

    index: int
    score: float
    fields: dict[str, Any] = field(default_factory=dict, compare=False)


def as_series(values: Any) -> np.ndarray:
    """``values`` as a finite float64 vector, shape (n,); ``ValueError`` otherwise."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-d series, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("series has NaN or infinite values")
    return x


class Detector:
    """Base class: a search method over a cost or a test.

    Subclasses implement :meth:`_find` (values, shape (n,) -> list of
    :class:`ChangePoint` sorted by index) and keep their constructor free of
    work, so that a detector can be cloned from :meth:`get_params`.
    """

    #: Registry name, set by subclasses.
    name: str = "detector"

    change_points_: list[ChangePoint]

    def fit(self, values: Any) -> Detector:
        """Run the detector on ``values`` (shape (n,)); sets ``change_points_``."""
        x = as_series(values)
        self.n_ = len(x)
        cps = self._find(x)
        self.change_points_ = sorted(cps, key=lambda c: c.index)
        return self

    def detect(self, values: Any) -> list[ChangePoint]:
        """``fit(values).change_points_``."""
        return self.fit(values).change_points_

    @property
    def indices_(self) -> np.ndarray:
        """Indices of the change points found by the last :meth:`fit`, shape (k,)."""
        return np.array([c.index for c in self.change_points_], dtype=np.int64)

    def _find(self, x: np.ndarray) -> list[ChangePoint]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters, as stored (ruptures / scikit-learn style)."""
        return {p: getattr(self, p) for p in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def robust_sigma(x: np.ndarray) -> float:
    """Noise level of a series with level shifts, in the series' unit.

    The median absolute first difference divided by 0.6745*sqrt(2) estimates
    the noise standard deviation of Gaussian noise and is barely moved by a
    few steps, unlike the plain standard deviation (which a step inflates).
    Falls back to the standard deviation, then to 1, for constant-ish series.
    """
    if len(x) < 3:
        return float(np.std(x)) or 1.0
    d = np.abs(np.diff(x))
    s = float(np.median(d)) / (0.6745 * np.sqrt(2.0))
    if s > 0:
        return s
    s = float(np.mean(d)) * np.sqrt(np.pi) / 2.0  # mean |diff| of N(0, 2s^2) is 2s/sqrt(pi)
    return s if s > 0 else (float(np.std(x)) or 1.0)
