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
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from triage.core.values import unusable, value_problem

#: Allowed range of a numeric parameter: (kind, low, high, low inclusive, high inclusive);
#: kind "int" wants a whole number, "float" a finite number. ``None`` = unbounded on that side.
Range = tuple[str, float | None, float | None, bool, bool]
COUNT: Range = ("int", 1, None, True, False)  # windows, sizes, steps: >= 1
NONNEG_INT: Range = ("int", 0, None, True, False)
NONNEG: Range = ("float", 0, None, True, False)  # thresholds, magnitudes, penalties
POSITIVE: Range = ("float", 0, None, False, False)
PROBABILITY: Range = ("float", 0, 1, False, False)


def describe_range(rng: Range) -> str:
    """``rng`` in words: "a whole number >= 1", "a finite number in (0, 1)"."""
    kind, low, high, low_in, high_in = rng
    what = "a whole number" if kind == "int" else "a finite number"
    if low is not None and high is not None:
        return f"{what} in {'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"
    if low is not None:
        return f"{what} {'>=' if low_in else '>'} {low:g}"
    return what


def in_range(value: Any, rng: Range) -> bool:
    """Whether ``value`` is a number (not a bool) of ``rng``'s kind inside it."""
    kind, low, high, low_in, high_in = rng
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok and kind == "int":
        ok = isinstance(value, numbers.Integral) or float(value).is_integer()
    if ok:
        v = float(value)
        ok = (low is None or (v >= low if low_in else v > low)) and (
            high is None or (v <= high if high_in else v < high)
        )
    return ok


def check_ranges(
    owner: str, params: dict[str, Any], ranges: dict[str, Range], choices: dict[str, tuple[str, ...]],
    what: str = "detector",
) -> None:
    """Raise ``ValueError`` naming the first parameter of ``params`` outside its range or choices.

    ``what`` names the kind of ``owner`` in the message (the steady-state methods use it too).
    """
    for key, rng in ranges.items():
        if key in params and not in_range(params[key], rng):
            raise ValueError(f"parameter {key}={params[key]!r} of {what} {owner!r} must be {describe_range(rng)}")
    for key, allowed in choices.items():
        if key in params and params[key] not in allowed:
            raise ValueError(f"parameter {key}={params[key]!r} of {what} {owner!r} must be one of {', '.join(allowed)}")


def whole_numbers_as_ints(owner: object, ranges: dict[str, Range]) -> None:
    """Set each whole-number parameter of ``owner`` given as a float (``12.0``) to that int, in place.

    The range check takes 12.0 as a whole number (JSON and a DataFrame row give them so), and the
    searches then failed on it: "slice indices must be integers" (``min_back_window=12.0``), an
    IndexError (``lag=20.0``). The value is the same; only its type changes.
    """
    for key, rng in ranges.items():
        value = getattr(owner, key, None)
        if rng[0] == "int" and isinstance(value, float) and value.is_integer():
            setattr(owner, key, int(value))


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
    """``values`` as a float64 vector, shape (n,), that the detectors can compute with; ``ValueError`` otherwise.

    The range is the loaders' (:mod:`triage.core.values`): called directly on
    values beyond 1e100 (or below 1e-100) the detectors' sums of squares
    overflowed (or underflowed), and they returned no change, or a burst of
    them, with only numpy's warning.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-d series, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("series has NaN or infinite values")
    bad = unusable(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"series value at position {i}: {value_problem(x[i])}")
    return x


class Detector:
    """Base class: a search method over a cost or a test.

    Subclasses implement :meth:`_find` (values, shape (n,) -> list of
    :class:`ChangePoint` sorted by index) and keep their constructor free of
    work, so that a detector can be cloned from :meth:`get_params`.
    """

    #: Registry name, set by subclasses.
    name: str = "detector"
    #: Each numeric parameter's allowed range (checked by :meth:`fit`) and each text
    #: parameter's choices; :func:`triage.detectors.make` checks both before any work.
    ranges: ClassVar[dict[str, Range]] = {}
    choices: ClassVar[dict[str, tuple[str, ...]]] = {}

    change_points_: list[ChangePoint]

    def check_params(self) -> None:
        """``ValueError`` naming the first parameter outside its range (``ranges``, ``choices``).

        A detector built from its class, not with ``make``, met a bad value
        only deep in its search: ``Perfherder(min_back_window=2.5)`` "slice
        indices must be integers", ``Bocpd(lag=2.5)`` an IndexError,
        ``Pelt(jump=0)`` a ZeroDivisionError, ``Pelt(penalty=-1)`` a change
        point every few commits.
        """
        # The text parameters (``choices``) each detector checks itself, in its own words.
        check_ranges(self.name, self.get_params(), self.ranges, {})
        whole_numbers_as_ints(self, self.ranges)

    def fit(self, values: Any) -> Detector:
        """Run the detector on ``values`` (shape (n,)); sets ``change_points_``."""
        self.check_params()
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
