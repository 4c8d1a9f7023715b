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
  must be divided first (a guess by magnitude would misread the other). A
  number too large for seconds that reads as a time from 1990 to 2100 in
  milliseconds, microseconds or nanoseconds (13, 16 or 19 digits today) is
  refused naming that unit, the time it would be and what to divide by.
  NaN and infinities are errors.
* **Text** is read as a date/time first: ISO 8601 (date; date and time with
  ``T`` or a space; fractions down to the nanosecond; ``Z`` or a ``+hh:mm`` /
  ``+hhmm`` offset; naive = UTC), then the general parser of pandas /
  dateutil for other spellings (``2024-05-01 12:00 UTC``, ``May 1 2024``;
  slashed dates are month first, ``01/05/2024`` is 5 January -- write ISO 8601
  to avoid the ambiguity --, except in a column (:func:`parse_column`) where
  one of them cannot be month first (``13/05/2024``): then every slashed date
  of the column is day first, as a French or British export means them, and
  one that cannot be (``05/13/2024``) is an error; dotted dates are day first, ``01.05.2024`` is 1 May,
  as every locale that writes dates with dots -- German, French Swiss,
  Russian, ... -- and its Excel exports mean it). Text must name its date: a time of day alone
  (``23:59``, ``23:59:10``, ``11pm``; pandas reads it as today at that time),
  a date without a year (``May 1``) and ``now`` / ``today`` (the moment of
  reading) are errors. Text that is no date/time but a number is seconds
  since the epoch, as a number is (``"1714564800"`` in a CSV means what
  ``1714564800`` means in JSON; ``"20240501"`` is a date, ISO 8601's basic
  form).
* The instant must lie in the range of ``datetime64[ns]`` (1677-09-21 to
  2262-04-11); outside it is an error.

:func:`to_ns` reads one value (the online loop); :func:`parse_column` a
whole column (the loaders), with the same result for every element (ISO 8601
text is parsed vectorised, anything else element by element with
:func:`to_ns`). :func:`problem` says why a value is refused (the message of
:func:`to_ns`' ``ValueError``), for an error naming a bad element of a column.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

import numpy as np
import pandas as pd

# pandas' own dependency, and its parser for text that is not ISO 8601
from dateutil import parser as dateutil_parser

from triage.core.text_cells import text_codes

#: How a rejected timestamp is described.
EXPECTED = "ISO-8601, e.g. 2024-05-01T12:00:00Z, or seconds since the epoch"


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NaT:
        return True
    return isinstance(value, np.datetime64) and bool(np.isnat(value))


#: Text pandas reads as the moment of reading, not a time in the data.
NOT_A_TIME = ("now", "today")

#: Finer units a number too large for seconds may be in: (name, units per second).
_FINER_UNITS = (("milliseconds", 1_000), ("microseconds", 1_000_000), ("nanoseconds", 1_000_000_000))
#: Times a mistaken unit is named for: 1990-01-01 .. 2100-01-01, in seconds.
#: The three units' spans of such numbers do not overlap, so at most one is named.
_PLAUSIBLE_SECONDS = (631_152_000, 4_102_444_800)

#: Text starting with a year and a month (ISO 8601): it names its date.
_DATED = re.compile(r"[+-]?\d{4}-?\d{2}")
#: Text starting with a dotted day, month and year (``01.05.2024``): day first wherever dates are written so
#: (dateutil, and so pandas, read it month first: 1 May became 5 January).
_DOTTED = re.compile(r"\d{1,2}\.\d{1,2}\.\d{2}(?:\d{2})?(?![\d.])")
#: A slashed date (``01/05/2024``): month first, unless its column shows day first (:func:`parse_column`).
_SLASHED = re.compile(r"(\d{1,2})/(\d{1,2})/\d{2}(?:\d{2})?(?![\d/])")


def _seconds_to_ns(value: int | float) -> int:
    if isinstance(value, int):
        ns = value * 1_000_000_000
    else:
        if not math.isfinite(value) or not math.isfinite(value * 1e9):
            # 1e308 s is finite, its nanoseconds are not (int(inf): an OverflowError escaped)
            raise ValueError(f"timestamp {value!r} is not finite" if not math.isfinite(value)
                             else f"timestamp {value!r} is outside 1677-09-21 .. 2262-04-11")
        ns = int(round(value * 1e9))
    lo, hi = pd.Timestamp.min.value, pd.Timestamp.max.value
    if not lo <= ns <= hi:
        raise ValueError(f"timestamp {value!r} is outside 1677-09-21 .. 2262-04-11{_unit_hint(value)}")
    return ns


def _unit_hint(seconds: int | float) -> str:
    """For a number out of range as seconds: the finer unit it reads in as a time from 1990 to 2100, else ""."""
    for unit, per_second in _FINER_UNITS:
        if _PLAUSIBLE_SECONDS[0] <= seconds / per_second < _PLAUSIBLE_SECONDS[1]:
            when = pd.Timestamp(int(seconds * (1_000_000_000 // per_second)), unit="ns").strftime("%Y-%m-%dT%H:%M:%SZ")
            return (
                f" as seconds since the epoch; it looks like {unit} since the epoch ({when}):"
                f" numbers are read as seconds, so divide by {per_second}"
            )
    return ""


def _undated(text: str) -> str | None:
    """What a date/time text lacks when it names no year (pandas takes today's date, or year 1, for it), else None.

    dateutil (the parser pandas uses for such text) fills what the text does
    not name from a default date: a result with the default's year has none.
    """
    if _DATED.match(text):
        return None
    try:
        first = dateutil_parser.parse(text, default=datetime(1, 1, 1), ignoretz=True)
        if first.year != 1:
            return None
        second = dateutil_parser.parse(text, default=datetime(4, 2, 2), ignoretz=True)
    except (ValueError, OverflowError):
        return None  # not dateutil's: pandas read it by its own rules
    if second.year == 1:
        return None  # year 1 written out: outside the range, refused as such
    if (first.month, first.day, second.month, second.day) == (1, 1, 2, 2):
        return "a time of day without a date"
    return "a date without a year"


#: A time zone written by name: an abbreviation (``CEST``, ``EST``) or an IANA name (``Europe/Berlin``).
_ZONE_NAME = re.compile(r"(?<![\w/])(?:[A-Z]{3,5}|[A-Za-z]+(?:/[A-Za-z_+-]+)+)(?![\w/])")


def _zone_name_problem(text: str) -> str | None:
    """For a date/time that is refused only for its time zone's name (``... CEST``, as ``date`` prints): what to write.

    It was "is not a date/time", which it is; an abbreviation is not read as
    it names several zones (CST: America, China, Cuba).
    """
    for zone in _ZONE_NAME.findall(text):
        if zone in ("UTC", "GMT"):
            continue
        rest = " ".join(text.replace(zone, " ", 1).split())
        try:
            ts = pd.Timestamp(rest)
        except (ValueError, OverflowError):
            continue
        if ts is pd.NaT or _undated(rest) is not None:
            continue
        return (
            f"timestamp {text!r} names its time zone ({zone!r}), which is not read (a zone's name or abbreviation "
            "is ambiguous: CST is in America, China and Cuba): write its UTC offset instead "
            f"({ts.strftime('%Y-%m-%dT%H:%M:%S')}+HH:MM), or the time in UTC with Z"
        )
    return None


def _timestamp_to_ns(ts: pd.Timestamp, shown: object) -> int:
    try:
        return int(ts.value)  # nanoseconds since the epoch, UTC for an aware timestamp
    except OverflowError:
        raise ValueError(f"timestamp {shown!r} is outside 1677-09-21 .. 2262-04-11") from None


def _text_to_ns(text: str, slashed_day_first: bool = False) -> int | None:
    text = text.strip()
    if not text:
        return None
    if text in NOT_A_TIME:
        raise ValueError(f"timestamp {text!r} is the moment of reading, not a time in the data ({EXPECTED})")
    day_first = _DOTTED.match(text)
    if slashed_day_first and (slashed := _SLASHED.match(text)):
        if int(slashed.group(2)) > 12:
            raise ValueError(f"timestamp {text!r} is month first, but other slashed dates of its column are day "
                             "first (their first number is over 12): write every date one way, best ISO 8601")
        day_first = slashed
    try:
        ts = pd.to_datetime(text, dayfirst=True) if day_first else pd.Timestamp(text)
    except (ValueError, OverflowError):
        ts = None
    if ts is not None and ts is not pd.NaT:
        lacking = _undated(text)
        if lacking is not None:
            raise ValueError(f"timestamp {text!r} is {lacking} ({EXPECTED})")
        return _timestamp_to_ns(ts, text)
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(_zone_name_problem(text) or f"timestamp {text!r} is not a date/time ({EXPECTED})") from None
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


def problem(value: object) -> str | None:
    """Why :func:`to_ns` refuses ``value`` (its ``ValueError``'s message), or None when it reads it.

    For an error naming a bad element of a :func:`parse_column` column: the
    column's rule is :func:`to_ns`', element by element.
    """
    try:
        to_ns(value)
    except ValueError as exc:
        return str(exc)
    return None


#: Milliseconds since the epoch that pandas' timestamps can hold (asv and github-action-benchmark write dates so).
EPOCH_MS_RANGE = (pd.Timestamp.min.value // 10**6 + 1, pd.Timestamp.max.value // 10**6)


def epoch_ms_problem(value: object, writer: str, name: str = "date") -> str | None:
    """Why ``value`` (called ``name``) is not a date in milliseconds since the epoch (as ``writer`` writes them), or None.

    A text or a number out of range failed in pandas as an internal error.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"{name} {value!r} is not a number ({writer} writes milliseconds since the epoch)"
    if not EPOCH_MS_RANGE[0] <= value <= EPOCH_MS_RANGE[1]:
        return f"{name} {value!r} is not a date: as milliseconds since the epoch it lies outside 1677-09-21 .. 2262-04-11"
    return None


def slashed_day_first(texts: pd.Series) -> bool:
    """Whether a column's slashed dates are day first: one of them cannot be month first (``13/05/2024``)."""
    text = pd.Series(pd.unique(texts.astype(str).str.strip()), dtype=object).astype(str)
    firsts = text.str.extract("^" + _SLASHED.pattern, expand=True)[0].dropna()
    return bool(len(firsts)) and bool((firsts.astype(int) > 12).any())


def parse_column(raw: pd.Series, slashed_day_first: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A column of timestamps by the module's rule.

    Returns ``(instants, missing, bad)``: ``datetime64[ns]`` (naive UTC, NaT
    where missing or bad), and two boolean masks, all shape (n,). Text of a
    bad element is ``raw.astype(str)`` (what an error message shows).
    ``slashed_day_first``: how the column's slashed dates are written, when
    the caller knows it from more of the column than ``raw`` (a file read in
    parts); by default told from ``raw`` (:func:`slashed_day_first`).
    """
    n = len(raw)
    if pd.api.types.is_datetime64_any_dtype(raw):
        ts = pd.to_datetime(raw, utc=True).dt.tz_convert(None)
        # NaT (a Parquet null) is missing, as a blank CSV cell is: it was passed on as a time.
        return ts.to_numpy(dtype="datetime64[ns]"), ts.isna().to_numpy(), np.zeros(n, dtype=bool)
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
    instants, missing, bad = _parse_texts(pd.Series(distinct, dtype=object).astype(str), slashed_day_first)
    return instants[codes], missing[codes], bad[codes]


def _parse_texts(text: pd.Series, slashed_day_first: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`parse_column` of stripped text (a ``str`` Series)."""
    n = len(text)
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)  # NaT
    missing = (text == "").to_numpy()
    # ISO 8601 is what exports (and our writers) use and parses fast; anything
    # else goes through to_ns, element by element.
    iso = pd.to_datetime(text.where(~missing), errors="coerce", utc=True, format="ISO8601")
    utc_min, utc_max = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")
    # "now" and "today" pass pandas' ISO 8601 reading as the moment of reading: to_ns refuses them.
    ok = (iso.notna() & (iso >= utc_min) & (iso <= utc_max) & ~text.isin(NOT_A_TIME)).to_numpy()
    out[ok] = iso[ok].dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
    bad = np.zeros(n, dtype=bool)
    rest = np.flatnonzero(~ok & ~missing)
    # One convention per column: a slashed date whose first number is over 12 (13/05/2024) is day
    # first, and then so is every slashed date of the column; 12/05/2024 was read as 5 December
    # beside it (dateutil swaps only what cannot be a month), without a word.
    if slashed_day_first is None:
        day_first = any(
            int(m.group(1)) > 12 for i in rest if (m := _SLASHED.match(text.iloc[i].strip())) is not None
        )
    else:
        day_first = slashed_day_first
    for i in rest:
        try:
            ns = _text_to_ns(text.iloc[i], slashed_day_first=day_first)
        except ValueError:
            bad[i] = True
            continue
        if ns is not None:  # always: blank text is missing
            out[i] = ns
    return out.view("datetime64[ns]"), missing, bad
