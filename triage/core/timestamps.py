"""The one rule for reading a point in time, in files (:mod:`triage.loaders`) and online (:mod:`triage.online.loop`).

A timestamp becomes an instant in UTC with nanosecond resolution:

* **Missing**: ``None``, ``NaT`` and blank text. (A file's column may be
  all blank -- no timestamps -- but not blank in some rows only; that check
  is the loader's.)
* **Date/time objects** (``datetime``, ``pandas.Timestamp``,
  ``numpy.datetime64``): timezone-aware ones are converted to UTC, naive ones
  are taken as UTC.
* **Numbers** (Python or NumPy int / float, not bool; a numeric file column):
  seconds since the Unix epoch, UTC. Integers are exact, floats rounded to the
  nanosecond. No unit guessing: milliseconds or nanoseconds since the epoch
  must be divided first (a guess by magnitude would misread the other).
  NaN and infinities are errors.
* **Text** is read as a date/time first: ISO 8601 (date; date and time with
  ``T`` or a space; fractions down to the nanosecond; ``Z`` or a ``+hh:mm`` /
  ``+hhmm`` offset; naive = UTC), then the general parser of pandas /
  dateutil for other spellings (``2024-05-01 12:00 UTC``, ``May 1 2024``;
  slashed dates are month first, ``01/05/2024`` is 5 January -- write ISO 8601
  to avoid the ambiguity). Text that is no date/time but a number is seconds
  since the epoch, as a number is (``"1714564800"`` in a CSV means what
  ``1714564800`` means in JSON; ``"20240501"`` is a date, ISO 8601's basic
  form).
* The instant must lie in the range of ``datetime64[ns]`` (1677-09-21 to
  2262-04-11); outside it is an error.

:func:`to_ns` reads one value (the online loop); :func:`parse_column` a
whole column (the loaders), with the same result for every element (ISO 8601
text is parsed vectorised, anything else element by element with
:func:`to_ns`).
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import pandas as pd

from triage.core.text_cells import text_codes

#: How a rejected timestamp is described.
EXPECTED = "ISO-8601, e.g. 2024-05-01T12:00:00Z, or seconds since the epoch"


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NaT:
        return True
    return isinstance(value, np.datetime64) and bool(np.isnat(value))


def _seconds_to_ns(value: int | float) -> int:
    if isinstance(value, int):
        ns = value * 1_000_000_000
    else:
        if not math.isfinite(value):
            raise ValueError(f"timestamp {value!r} is not finite")
        ns = int(round(value * 1e9))
    return _in_range(ns, value)


def _in_range(ns: int, shown: object) -> int:
    lo, hi = pd.Timestamp.min.value, pd.Timestamp.max.value
    if not lo <= ns <= hi:
        raise ValueError(f"timestamp {shown!r} is outside 1677-09-21 .. 2262-04-11")
    return ns


def _timestamp_to_ns(ts: pd.Timestamp, shown: object) -> int:
    try:
        return int(ts.value)  # nanoseconds since the epoch, UTC for an aware timestamp
    except OverflowError:
        raise ValueError(f"timestamp {shown!r} is outside 1677-09-21 .. 2262-04-11") from None


def _text_to_ns(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        ts = pd.Timestamp(text)
    except (ValueError, OverflowError):
        ts = None
    if ts is not None and ts is not pd.NaT:
        return _timestamp_to_ns(ts, text)
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"timestamp {text!r} is not a date/time ({EXPECTED})") from None
    if not math.isfinite(seconds):
        raise ValueError(f"timestamp {text!r} is not finite")
    if text.lstrip("+-").isdigit():
        return _seconds_to_ns(int(text))
    return _seconds_to_ns(seconds)


def to_ns(value: object) -> int | None:
    """``value`` as int nanoseconds since the epoch (UTC), or None when missing.

    Raises ``ValueError`` for anything the module's rule does not read.
    """
    if _is_missing(value):
        return None
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"timestamp {value!r} is not a time")
    if isinstance(value, int | np.integer):
        return _seconds_to_ns(int(value))
    if isinstance(value, float | np.floating):
        return _seconds_to_ns(float(value))
    if isinstance(value, str):
        return _text_to_ns(value)
    if isinstance(value, np.datetime64):
        return _timestamp_to_ns(pd.Timestamp(value), value)
    if isinstance(value, datetime):  # pandas.Timestamp included
        return _timestamp_to_ns(pd.Timestamp(value), value)
    raise ValueError(f"timestamp {value!r} is not a time")


def parse_column(raw: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A column of timestamps by the module's rule.

    Returns ``(instants, missing, bad)``: ``datetime64[ns]`` (naive UTC, NaT
    where missing or bad), and two boolean masks, all shape (n,). Text of a
    bad element is ``raw.astype(str)`` (what an error message shows).
    """
    n = len(raw)
    if pd.api.types.is_datetime64_any_dtype(raw):
        ts = pd.to_datetime(raw, utc=True).dt.tz_convert(None)
        return ts.to_numpy(dtype="datetime64[ns]"), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)  # NaT
    if pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
        missing = pd.isna(raw).to_numpy()
        lo, hi = pd.Timestamp.min.value, pd.Timestamp.max.value
        if pd.api.types.is_integer_dtype(raw) and not missing.any():
            seconds = raw.to_numpy(dtype=np.int64)
            bad = (seconds < lo // 1_000_000_000 + 1) | (seconds > hi // 1_000_000_000)
            out[~bad] = seconds[~bad] * 1_000_000_000
        else:
            seconds = raw.to_numpy(dtype=np.float64, na_value=np.nan)
            with np.errstate(invalid="ignore", over="ignore"):
                ns = np.round(seconds * 1e9)
                bad = ~missing & ~((ns >= lo) & (ns <= hi))
            keep = ~missing & ~bad
            out[keep] = ns[keep].astype(np.int64)
        return out.view("datetime64[ns]"), missing, bad
    # Each distinct text is read once (a long file repeats a commit's
    # timestamp in every series and measurement of it).
    codes, distinct = text_codes(raw, strip=True)
    instants, missing, bad = _parse_texts(pd.Series(distinct, dtype=object).astype(str))
    return instants[codes], missing[codes], bad[codes]


def _parse_texts(text: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`parse_column` of stripped text (a ``str`` Series)."""
    n = len(text)
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)  # NaT
    missing = (text == "").to_numpy()
    # ISO 8601 is what exports (and our writers) use and parses fast; anything
    # else goes through to_ns, element by element.
    iso = pd.to_datetime(text.where(~missing), errors="coerce", utc=True, format="ISO8601")
    utc_min, utc_max = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")
    ok = (iso.notna() & (iso >= utc_min) & (iso <= utc_max)).to_numpy()
    out[ok] = iso[ok].dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
    bad = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(~ok & ~missing):
        try:
            ns = to_ns(text.iloc[i])
        except ValueError:
            bad[i] = True
            continue
        if ns is not None:  # always: blank text is missing
            out[i] = ns
    return out.view("datetime64[ns]"), missing, bad
