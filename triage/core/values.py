"""Which measured values the project can compute with: the one range check.

A value must be finite, and a non-zero value's magnitude must lie in
[:data:`MIN_ABS`, :data:`MAX_ABS`] = [1e-100, 1e100]. Why these bounds:
the detectors and features square values and sum squares (variances, t
statistics, segment costs, CUSUM sums). With ``|x| <= 1e100`` a sum of
squares over a million commits stays below 1e206, far from the float64
maximum (1.8e308), so nothing overflows into ``inf`` and then ``NaN``. With
``|x| >= 1e-100`` a square stays above 1e-200, far from the subnormal range
(below 2.2e-308), so a variance never underflows to 0 and no test divides by
zero. Values near 1e308 or 1e-308 passed the loaders before (they are finite)
and then ended in ``ZeroDivisionError`` or ``nan%`` downstream (issue 14).
Zero itself is exact and allowed. Rescale such a series (change its unit) to
bring it into range.

:func:`check_values` is called by every reader of values (the loaders) and by
the online loop for each arriving value, so that both refuse the same values
with the same message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from triage.core.errors import InputError

MAX_ABS = 1e100
MIN_ABS = 1e-100


def value_problem(value: object) -> str | None:
    """Why one value cannot be used, or ``None`` when it can."""
    try:
        x = float(value)  # type: ignore[arg-type]  # anything: what float() refuses is the answer
    except (TypeError, ValueError, OverflowError):
        # OverflowError: an integer too large for a float (10**400).
        return f"value {shown_value(value)} is not a number that fits a float"
    if not math.isfinite(x):
        return f"value {x!r} is not a finite number"
    if x != 0.0 and not (MIN_ABS <= abs(x) <= MAX_ABS):
        return (
            f"value {x:.6g} is outside the usable range (0 or 1e-100 <= |x| <= 1e100): "
            "squares of it would overflow or underflow in the features and detectors; rescale the series (change its unit)"
        )
    return None


def out_of_range(value: object) -> bool:
    """True for a finite number the project cannot compute with (|x| near 1e308 or 1e-308, 10**400).

    Unlike NaN or text, such a value is a property of the series (its unit),
    not a garbled line: the online loop quarantines the series instead of
    stopping the stream.
    """
    try:
        x = float(value)  # type: ignore[arg-type]
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and value_problem(x) is not None


def check_values(
    values: Sequence[float] | np.ndarray,
    source: str | Path | None,
    rows: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """``values`` as float64 (n,), or :class:`InputError` naming the first bad one.

    ``rows`` (n,) gives each value's row number in ``source`` for the message
    (1-based, as :class:`~triage.core.errors.InputError` counts); without it
    the position (1-based) is reported.
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        for i, v in enumerate(values):
            if (problem := value_problem(v)) is not None:
                raise InputError(source, _row(rows, i), problem) from None
        raise
    bad = unusable(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(source, _row(rows, i), value_problem(arr[i]) or "value is not usable")
    return arr


def unusable(values: np.ndarray) -> np.ndarray:
    """Which of ``values`` (float64, shape (n,)) the project cannot compute with: not finite, or nonzero
    outside [:data:`MIN_ABS`, :data:`MAX_ABS`] (:func:`value_problem` says why for one)."""
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(values)
        return ~np.isfinite(values) | ((magnitude != 0.0) & ((magnitude < MIN_ABS) | (magnitude > MAX_ABS)))


def _row(rows: Sequence[int] | np.ndarray | None, i: int) -> int:
    return int(rows[i]) if rows is not None else i + 1


def shown_value(value: object) -> str:
    """``repr(value)`` for an error message, cut to about 40 characters (a whole JSON array was 1,117)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:30] + f"... ({len(text)} characters)"


def beyond_float(text: str) -> str | None:
    """Why a number's text is a unit problem although ``float()`` reads it (as inf or 0.0), else None.

    ``float("1e400")`` is inf and ``float("1e-400")`` is 0.0: in a watched
    stream the first stopped it as if the line were garbled (``1e300``
    quarantines its series), the second was decided as the value 0; a
    history file read it as 0 without a word. Only the text tells these from
    a real 0 or a garbled line.
    """
    try:
        x = float(text)
    except ValueError:
        return None
    mantissa = text.strip().lower().split("e")[0]
    if math.isinf(x) and any(c.isdigit() for c in mantissa):
        would = "infinity"
    elif x == 0.0 and any(c in "123456789" for c in mantissa):
        would = "0"
    else:
        return None
    return (f"value {text.strip()} is outside the usable range (0 or 1e-100 <= |x| <= 1e100): a float cannot hold "
            f"it (it would be read as {would}); rescale the series (change its unit)")


#: A number as a spreadsheet in another locale writes it: a decimal comma (``100,5``), thousands grouped by
#: dots, spaces or apostrophes (``1.234,5``, ``1 234,5``, ``1'234.5``) or by commas (``1,234.5``).
_LOCALE_NUMBER = re.compile(
    r"[+-]?(?:\d+,\d+|\d{1,3}(?:[. '\u00a0\u202f\u2019]\d{3})+(?:[.,]\d+)?|\d{1,3}(?:,\d{3})+(?:\.\d+)?)"
)


def locale_number(text: str) -> str | None:
    """Why ``text``, which ``float()`` refuses, is a number written with a locale's separators; None otherwise.

    Excel on a German or French machine writes ``100,5`` (and ``1.234,5``);
    such a cell was refused as "not a number", which did not say what to
    change. Only for text that is no plain number: ``1.234`` is 1.234.
    """
    text = text.strip()
    if not _LOCALE_NUMBER.fullmatch(text):
        return None
    try:
        float(text)
    except ValueError:
        return (
            f"value {text!r} is written with a decimal comma or a thousands separator (a spreadsheet export in a "
            "German, French or similar locale?): write numbers with a decimal point and no grouping, as 1234.5 "
            "(in Excel: Options > Advanced, untick 'Use system separators' and set '.' as the decimal separator)"
        )
    return None
