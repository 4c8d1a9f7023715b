"""The data model: a performance history per benchmark series, and a dataset of them.

A :class:`History` is one series (one test / metric on one platform): commits in
order, one aggregated value per commit, an optional timestamp, and an optional
triage label per commit (empty = no detector candidate there). Synthetic data
also carries its ground truth: which commits start a real change, and what a
human would have said about each candidate (``truth_label``), so that even its
``not_triaged`` candidates can be scored.

Arrays are positional: index ``i`` of every array is the ``i``-th commit.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels as L
from triage.core import timestamps
from triage.core.errors import InputError
from triage.core.input_names import display_name
from triage.core.text_cells import text_codes
from triage.core.values import beyond_float, check_values, shown_value

# The loaders' validation below calls the label module ``labels``.
labels = L

AGGREGATES: dict[str, Callable[[pd.core.groupby.SeriesGroupBy], pd.Series]] = {
    "mean": lambda g: g.mean(),
    "median": lambda g: g.median(),
    "p90": lambda g: g.quantile(0.9),
}


#: A warm-up trim: ``trim(values, run_id, rising, series)`` -> mask of the measurements to aggregate;
#: ``rising[r]``: run r's series is higher-is-better (a rate, whose warm-up rises); ``series[r]``:
#: the code of run r's series (a run never steady is cut where its series' steady runs became steady).
Trim = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None


class UnsortedTimestampsWarning(UserWarning):
    """Timestamps went backwards and the rows were sorted because the caller asked."""


class UnreadColumnWarning(UserWarning):
    """A column is spelled like one of the long layout's but is not it (names are case-sensitive)."""

#: Columns of the long layout, in file order. The first four are required
#: except ``timestamp``; the rest are optional.
LONG_COLUMNS: tuple[str, ...] = (
    "series_id",
    "commit",
    "timestamp",
    "value",
    "label",
    "true_change",
    "truth_label",
    "higher_is_better",
)
#: The other spelling of the direction column (Perfherder's signatures, the
#: real histories' ``series_meta.csv``); read, never written.
LOWER_IS_BETTER = "lower_is_better"
#: A third spelling, Otava's: ``1`` higher is better, ``-1`` lower (or ``higher`` / ``lower``); read, never written.
DIRECTION = "direction"
REQUIRED_COLUMNS: tuple[str, ...] = ("series_id", "commit", "value")
#: An optional column naming the run (a JMH fork, a CI re-run) a measurement
#: of a commit belongs to: each run has its own warm-up, so ``--trim-warmup``
#: cuts each on its own before the commit's measurements are aggregated. Read,
#: not carried into the :class:`Dataset` (a commit's value pools its runs).
FORK = "fork"


@dataclass(eq=False)
class History:
    """One benchmark series.

    Attributes
    ----------
    series_id : str
    commits : ndarray of str, shape (n,)
        Commit ids, unique within the series, in history order.
    values : ndarray of float64, shape (n,)
        One finite value per commit (several measurements already aggregated).
    labels : ndarray of str, shape (n,)
        Canonical triage labels (see :mod:`triage.core.labels`); ``""`` = not a candidate.
    timestamps : ndarray of datetime64[ns], shape (n,), or None
    true_change : ndarray of bool, shape (n,), or None
        Ground truth (synthetic data): True where a real change starts.
    truth_label : ndarray of str, shape (n,), or None
        Ground truth (synthetic data): the label a human would give each
        candidate (``true_positive`` / ``false_positive``), ``""`` elsewhere.
    n_measurements : ndarray of int, shape (n,), or None
        How many raw measurements were aggregated into each value.
    higher_is_better : bool or None
        The direction of the unit: True for throughput-like values (ops/s),
        False for times and sizes, None when the source does not say. Reports
        call a step in the worse direction a regression, the other an
        improvement; unknown direction is reported as a plain change.
    """

    series_id: str
    commits: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    timestamps: np.ndarray | None = None
    true_change: np.ndarray | None = None
    truth_label: np.ndarray | None = None
    n_measurements: np.ndarray | None = None
    higher_is_better: bool | None = None
    _index: dict[str, int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.commits = np.asarray(self.commits, dtype=object).astype(str).astype(object)
        self.values = np.asarray(self.values, dtype=np.float64)
        n = len(self.commits)
        if self.labels is None:
            self.labels = np.full(n, L.NONE, dtype=object)
        self.labels = np.asarray(self.labels, dtype=object)
        for name in ("values", "labels", "timestamps", "true_change", "truth_label", "n_measurements"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"series {self.series_id!r}: {name} has {len(arr)} entries, commits {n}")

    @classmethod
    def _validated(cls, **fields: object) -> History:
        """A History of arrays :func:`dataset_from_long` has already made what ``__post_init__`` makes.

        It converts each distinct commit id once (``str``, as a fixed-width
        copy would give it: no trailing NULs) where ``__post_init__`` would
        convert every commit of every series again: a tenth of a replay's
        reading time.
        """
        history = cls.__new__(cls)
        history.__dict__.update(fields, _index=None)
        return history

    def __len__(self) -> int:
        return len(self.commits)

    def index_of(self, commit: str) -> int:
        """Position of a commit id; ``KeyError`` when the series has no such commit."""
        if self._index is None:
            self._index = {c: i for i, c in enumerate(self.commits)}
        return self._index[str(commit)]

    def candidates(self) -> np.ndarray:
        """Indices of all detector candidates (any non-empty label), shape (k,)."""
        return np.flatnonzero(self.labels != L.NONE)

    def indices_with(self, wanted: Iterable[str]) -> np.ndarray:
        """Indices whose label is in ``wanted``, ascending."""
        wanted = set(wanted)
        return np.flatnonzero([lab in wanted for lab in self.labels])

    def confirmed(self) -> np.ndarray:
        """Indices of confirmed change points (``true_positive``), ascending."""
        return np.flatnonzero(self.labels == L.TRUE_POSITIVE)

    def true_change_points(self) -> np.ndarray:
        """Ground-truth change indices (synthetic data); empty when unknown."""
        if self.true_change is None:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(self.true_change)

    def to_frame(self) -> pd.DataFrame:
        """This series in the long layout (one row per commit)."""
        data: dict[str, object] = {
            "series_id": self.series_id,
            "commit": self.commits,
            "timestamp": self.timestamps if self.timestamps is not None else pd.NaT,
            "value": self.values,
            "label": self.labels,
        }
        if self.true_change is not None:
            data["true_change"] = self.true_change.astype(np.int8)
        if self.truth_label is not None:
            data["truth_label"] = self.truth_label
        if self.higher_is_better is not None:
            # Written so that convert / steady keep what a reader knew: a
            # report of the re-read file still tells regressions from improvements.
            data["higher_is_better"] = "true" if self.higher_is_better else "false"
        return pd.DataFrame(data)

    def change_kind(self, before: float, after: float) -> str:
        """``regression``, ``improvement`` or ``change`` (direction unknown) for a step before -> after."""
        return change_kind(before, after, self.higher_is_better)


class Dataset:
    """An ordered collection of histories, keyed by series id.

    One rule for access: **iterating yields histories** (in order), and
    ``dataset[key]`` takes either a series id (``str``) or a position
    (``int``, negative counts from the end); ``key in dataset`` asks about
    series ids. Build one from a pandas DataFrame in the long layout with
    :meth:`from_frame`.
    """

    def __init__(self, histories: Iterable[History] = (), source: str | None = None):
        self._series: dict[str, History] = {}
        self.source = source
        for h in histories:
            if h.series_id in self._series:
                raise ValueError(f"duplicate series id {h.series_id!r}")
            self._series[h.series_id] = h

    def __iter__(self) -> Iterator[History]:
        return iter(self._series.values())

    def __len__(self) -> int:
        return len(self._series)

    def __getitem__(self, key: str | int) -> History:
        if isinstance(key, int | np.integer) and not isinstance(key, bool):
            ids = list(self._series)
            try:
                return self._series[ids[int(key)]]
            except IndexError:
                raise IndexError(f"series position {int(key)} out of range ({len(ids)} series)") from None
        try:
            return self._series[str(key)] if isinstance(key, str) else self._series[key]  # type: ignore[index]
        except KeyError:
            where = f" in {self.source}" if self.source else ""
            raise KeyError(f"unknown series {key!r}{where}") from None

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        aggregate: str = "mean",
        sort_timestamps: bool = False,
        commit_order: Sequence[str] | None = None,
        source: str = "<frame>",
    ) -> Dataset:
        """A dataset from a DataFrame in the long layout (``series_id, commit, value``, ...).

        The same validation as files: bad cells raise
        :class:`~triage.core.errors.InputError` naming ``source`` and the
        1-based record number.
        """
        return dataset_from_long(
            frame, None, source, aggregate=aggregate, sort_timestamps=sort_timestamps,
            commit_order=commit_order,
        )

    def __contains__(self, series_id: object) -> bool:
        return series_id in self._series

    @property
    def series_ids(self) -> list[str]:
        return list(self._series)

    def n_commits(self) -> int:
        return sum(len(h) for h in self)

    def label_counts(self) -> dict[str, int]:
        """Number of candidates per canonical label (empty label excluded)."""
        counts = {label: 0 for label in L.CANONICAL if label}
        for h in self:
            lab, cnt = np.unique(h.labels[h.labels != L.NONE], return_counts=True)
            for k, v in zip(lab, cnt, strict=True):
                counts[str(k)] = counts.get(str(k), 0) + int(v)
        return counts

    def to_frame(self) -> pd.DataFrame:
        """The whole dataset in the long layout."""
        frames = [h.to_frame() for h in self]
        if not frames:
            return pd.DataFrame(columns=list(LONG_COLUMNS[:5]))
        frame = pd.concat(frames, ignore_index=True)
        if "higher_is_better" in frame.columns:
            frame["higher_is_better"] = frame["higher_is_better"].fillna("")  # a series whose direction is unknown
        return frame

    def subset(self, series_ids: Iterable[str]) -> Dataset:
        return Dataset((self[s] for s in series_ids), source=self.source)


# --------------------------------------------------------------------------- building from a long frame


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _parse_values(raw: pd.Series, rows: np.ndarray, path: Path) -> np.ndarray:
    if pd.api.types.is_bool_dtype(raw):
        # Parquet, JSON lines (`"value": true`) and Perfherder gave a column of booleans 1.0 / 0.0,
        # where CSV's "True" is refused: a pass/fail flag is not a measurement.
        raise InputError(path, int(rows[0]) if len(rows) else None,
                         f"value {str(bool(raw.iloc[0])).lower()!r} is a boolean, not a measurement: give numbers")
    if pd.api.types.is_numeric_dtype(raw):
        values = raw.to_numpy(dtype=np.float64)
        text = None  # only an error shows it: numbers are not written out otherwise
    else:
        text = raw.astype(str).str.strip().to_numpy()
        values = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = _first(bad)
        shown = text[i] if text is not None else str(raw.astype(str).iloc[i])
        if shown in ("", "None", "<NA>") or (text is None and pd.isna(raw.iloc[i])):  # a Parquet null: 'nan'
            problem = "value is missing"
        elif np.isinf(values[i]):
            problem = f"value {shown_value(shown)} is not finite"
        elif np.isnan(values[i]) and pd.to_numeric(pd.Series([shown]), errors="coerce").notna().all():
            problem = f"value {shown_value(shown)} is not a number (NaN)"
        else:
            problem = f"value {shown_value(shown)} is not a number"
            if str(shown).lstrip().startswith("["):
                # a JSON array of runs (iterations per fork): a layout of its own
                problem += ("; a list of iterations per run is read by `--layout jmh` (one file per commit) "
                            "or `triage steady`")
        raise InputError(path, int(rows[i]), problem)
    if text is not None and (zero := values == 0.0).any():
        # "1e-400" parses as 0.0: only the text tells it from a real 0
        for k in np.flatnonzero(zero):
            if (unusable := beyond_float(str(text[k]))) is not None:
                raise InputError(path, int(rows[k]), unusable)
    return check_values(values, path, rows)  # |x| near 1e308 or 1e-308 would overflow downstream


def _parse_labels(raw: pd.Series, rows: np.ndarray, path: Path, column: str) -> np.ndarray:
    codes, text = text_codes(raw, strip=False)
    canonical = np.empty(len(text), dtype=object)
    for k, value in enumerate(text):  # in the order of their first row: the first unknown one is named
        try:
            canonical[k] = labels.normalise_label(value)
        except KeyError:
            raise InputError(
                path, int(rows[_first(codes == k)]), f"unknown {column} {value!r} (known: {labels.known_labels()})"
            ) from None
    return canonical[codes] if len(text) > 1 else np.full(
        len(codes), canonical[0] if len(text) else labels.NONE, dtype=object
    )


def _parse_timestamps(raw: pd.Series, rows: np.ndarray, path: Path) -> np.ndarray | None:
    """The column by :mod:`triage.core.timestamps`' rule; None when every cell is blank."""
    instants, missing, bad = timestamps.parse_column(raw)
    if missing.all():
        return None
    if missing.any():
        raise InputError(path, int(rows[_first(missing)]), "timestamp is missing")
    if bad.any():
        i = _first(bad)
        # the reason when the rule knows one (a time without a date, milliseconds, ...)
        reason = timestamps.problem(raw.iloc[i]) or f"timestamp {str(raw.iloc[i]).strip()!r} is not a date/time"
        raise InputError(path, int(rows[i]), reason)
    return instants


def _parse_flags(raw: pd.Series, rows: np.ndarray, path: Path) -> np.ndarray:
    codes, stripped = text_codes(raw, strip=True)
    text = pd.Series(stripped, dtype=object).astype(str).str.lower().to_numpy()
    truthy = np.isin(text, ["1", "true", "yes", "1.0"])
    falsy = np.isin(text, ["0", "false", "no", "", "0.0"])
    bad = ~(truthy | falsy)
    if bad.any():
        i = _first(bad[codes])
        raise InputError(path, int(rows[i]), f"true_change {text[codes[i]]!r} is not 0/1")
    return truthy[codes]


def _require_text(raw: pd.Series, rows: np.ndarray, path: Path, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, texts)`` of a column that must not be blank: row ``i`` reads ``texts[codes[i]]``."""
    codes, text = text_codes(raw, strip=True)
    empty = text == ""
    if empty.any():
        raise InputError(path, int(rows[_first(empty[codes])]), f"{column} is missing")
    return codes, text


def dataset_from_long(
    frame: pd.DataFrame,
    rows: np.ndarray | None = None,
    path: str | Path = "<frame>",
    *,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    commit_order: Sequence[str] | None = None,
    higher_is_better: Mapping[str, bool | None] | None = None,
    trim: Trim = None,
) -> Dataset:
    """Validate a long-layout frame and turn it into a :class:`Dataset`.

    ``rows[i]`` is what error messages call the row of ``frame.iloc[i]``
    (default: 1-based record numbers). Several measurements of one commit
    (consecutive or not) are aggregated with ``aggregate``; commits keep the
    order of their first appearance unless ``commit_order`` lists them.
    ``sort_timestamps``: order each series' commits by time instead of
    refusing timestamps that go backwards; a commit measured more than once
    then stands at (and keeps) its earliest timestamp.
    With a ``fork`` column, ``trim`` cuts each (series, commit, fork) on its
    own: each fork (a JMH fork, a CI re-run) has its own warm-up.
    ``higher_is_better`` maps series ids to their direction (default unknown).
    ``trim(values, run_id, rising, series)`` -> mask of the measurements to aggregate
    (the steady parts, :func:`triage.steady_state.steady_mask`; ``rising``
    per run: its series is higher-is-better, a rate whose warm-up rises;
    ``series`` per run: its series' code); it must keep at least one
    measurement of every run.
    """
    # A decompressed copy's warnings name the file the user gave (errors are renamed by the reader too).
    path = Path(display_name(path))
    if aggregate not in AGGREGATES:
        raise InputError(path, None, f"unknown aggregate {aggregate!r} (use one of {', '.join(AGGREGATES)})")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(map(str, frame.columns))})")
    if frame.empty:
        raise InputError(path, None, "no rows")
    _warn_misspelled_columns(frame.columns, path)
    frame = frame.reset_index(drop=True)
    rows = np.arange(1, len(frame) + 1) if rows is None else np.asarray(rows)
    # Ids as codes of their distinct texts: a long file repeats them in every row.
    series_codes, series_order = _require_text(frame["series_id"], rows, path, "series_id")
    _warn_ids_alike(frame["series_id"], series_order, path)
    commit_codes, commit_text = _require_text(frame["commit"], rows, path, "commit")
    _warn_commits_alike(series_codes, series_order, commit_codes, commit_text, path)
    values = _parse_values(frame["value"], rows, path)
    n = len(frame)
    row_labels = (
        _parse_labels(frame["label"], rows, path, "label")
        if "label" in frame.columns
        else np.full(n, labels.NONE, dtype=object)
    )
    timestamps = _parse_timestamps(frame["timestamp"], rows, path) if "timestamp" in frame.columns else None
    true_change = _parse_flags(frame["true_change"], rows, path) if "true_change" in frame.columns else None
    truth = (
        _parse_labels(frame["truth_label"], rows, path, "truth_label")
        if "truth_label" in frame.columns
        else None
    )
    directions = _parse_directions(frame, rows, path, series_codes, len(series_order))

    # A run = every row of one (series, commit): the measurements of one commit,
    # wherever they appear (a retrigger re-measures a commit later, even after
    # other commits). Runs are ordered by the commit's first appearance in its
    # series, or by ``commit_order`` when given.
    if "\x00" in "".join(series_order) or "\x00" in "".join(commit_text):
        # The key has always been the text "series NUL commit"; with NULs in
        # the ids two pairs can share it, and the pair of numbers below would
        # tell them apart.
        key_text = pd.Series(series_order[series_codes]) + "\x00" + pd.Series(commit_text[commit_codes])
        key_codes, _ = pd.factorize(key_text)
    else:
        # One number per (series, commit) pair; factorize numbers them by
        # first appearance, as it numbered the pairs' texts.
        key_codes, _ = pd.factorize(series_codes.astype(np.int64) * len(commit_text) + commit_codes)
    if commit_order is not None:
        position = {str(c): i for i, c in enumerate(commit_order)}
        rank = np.array([position.get(c, -1) for c in commit_text], dtype=np.int64)[commit_codes]
        if (rank < 0).any():
            i = _first(rank < 0)
            raise InputError(
                path, int(rows[i]), f"commit {commit_text[commit_codes[i]]!r} is not in the given commit order"
            )
        # np.lexsort is stable: rows of one commit keep their file order.
        order = np.lexsort((rank, series_codes))
    else:
        # Codes follow first appearance, so sorting by them keeps each commit's first place.
        order = np.lexsort((key_codes, series_codes))
    k_sorted = key_codes[order]
    s_sorted = series_codes[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (k_sorted[1:] != k_sorted[:-1]) | (s_sorted[1:] != s_sorted[:-1])
    run_id = np.cumsum(starts) - 1
    n_runs = int(run_id[-1]) + 1
    first_idx = order[starts]  # frame index of each run's first row

    if trim is not None:
        series_higher = [
            directions[k] if directions is not None and directions[k] is not None
            else (higher_is_better or {}).get(str(series_order[k]))
            for k in range(len(series_order))
        ]
        run_series = series_codes[first_idx]
        rising = np.array([series_higher[k] is True for k in run_series], dtype=bool)
        if FORK in frame.columns:
            keep = _trim_each_fork(trim, frame[FORK], rows, path, order, values, run_id, rising, run_series)
        else:
            keep = trim(values[order], run_id, rising, run_series)
    else:
        keep = np.ones(n, dtype=bool)
    agg_values = AGGREGATES[aggregate](pd.Series(values[order][keep]).groupby(run_id[keep])).to_numpy(dtype=np.float64)
    n_meas = np.bincount(run_id, minlength=n_runs)
    run_labels = (
        _run_labels(row_labels[order], run_id, n_runs, rows[order], path, "label")
        if "label" in frame.columns
        else np.full(n_runs, labels.NONE, dtype=object)
    )
    run_truth = _run_labels(truth[order], run_id, n_runs, rows[order], path, "truth_label") if truth is not None else None
    run_change = (
        np.bincount(run_id, weights=true_change[order].astype(float), minlength=n_runs) > 0
        if true_change is not None
        else None
    )
    run_ts = timestamps[first_idx] if timestamps is not None else None
    if timestamps is not None and sort_timestamps and n_runs < n:
        # Sorted by time, a commit measured again later stands at its first measurement, whatever
        # the rows' order in the file (its first row in the file may be the later re-run).
        run_ts = pd.Series(timestamps[order]).groupby(run_id).min().to_numpy(dtype=timestamps.dtype)
    run_series = series_codes[first_idx]
    # What History.__post_init__ makes of a commit id, once per distinct id.
    run_commits = commit_text.astype(str).astype(object)[commit_codes[first_idx]]

    histories = []
    bounds = np.flatnonzero(np.r_[True, run_series[1:] != run_series[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        sl = slice(a, b)
        perm = None
        if run_ts is not None:
            ts = run_ts[sl]
            back = ts[1:] < ts[:-1]
            if back.any():
                j = _first(back) + 1
                row = int(rows[first_idx[a + j]])
                if not sort_timestamps:
                    # Naive local clock times across the autumn clock change step back up to an hour:
                    # sorting would scramble the commits there; their offset is what is missing.
                    clock = ("; if these are local clock times across a daylight-saving change, sorting would "
                             "reorder the commits: write each time with its UTC offset (+02:00) or in UTC instead, "
                             "as a time without an offset is read as UTC"
                             if ts[j - 1] - ts[j] <= np.timedelta64(3600, "s") else "")
                    raise InputError(
                        path,
                        row,
                        f"timestamps of series {series_order[run_series[a]]!r} go backwards "
                        f"({pd.Timestamp(ts[j])} after {pd.Timestamp(ts[j - 1])}); "
                        "sort the file by timestamp (`triage convert --sort-timestamps` writes a sorted copy; "
                        f"summary, convert and plot also take --sort-timestamps){clock}",
                    )
                warnings.warn(
                    f"{path}: series {series_order[run_series[a]]!r} sorted by timestamp "
                    f"(first out-of-order row {row})",
                    UnsortedTimestampsWarning,
                    stacklevel=3,
                )
                perm = np.argsort(ts, kind="stable")

        def take(arr, sl=sl, perm=perm):
            if arr is None:
                return None
            part = arr[sl]
            return part[perm] if perm is not None else part

        histories.append(
            History._validated(
                series_id=str(series_order[run_series[a]]),
                commits=take(run_commits),
                values=take(agg_values),
                labels=take(run_labels),
                timestamps=take(run_ts),
                true_change=take(run_change),
                truth_label=take(run_truth),
                n_measurements=take(n_meas),
                higher_is_better=(
                    directions[run_series[a]]
                    if directions is not None and directions[run_series[a]] is not None
                    else (higher_is_better or {}).get(str(series_order[run_series[a]]))
                ),
            )
        )
    return Dataset(histories, source=str(path))


def _trim_each_fork(
    trim: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    forks: pd.Series,
    rows: np.ndarray,
    path: Path,
    order: np.ndarray,
    values: np.ndarray,
    run_id: np.ndarray,
    rising: np.ndarray,
    run_series: np.ndarray,
) -> np.ndarray:
    """``trim``'s mask (in ``order``) with each (series, commit, fork) cut as a run of its own.

    A commit's forks, written one after the other, read as one run had a
    second warm-up in its middle that no cut at the start could remove.
    """
    fork_codes, _ = _require_text(forks, rows, path, FORK)
    # Stable: a fork's measurements keep their file order, its iteration order.
    by_fork = np.lexsort((fork_codes[order], run_id))
    f_run, f_fork = run_id[by_fork], fork_codes[order][by_fork]
    starts = np.ones(len(by_fork), dtype=bool)
    starts[1:] = (f_run[1:] != f_run[:-1]) | (f_fork[1:] != f_fork[:-1])
    fork_id = np.cumsum(starts) - 1
    keep_by_fork = trim(values[order][by_fork], fork_id, rising[f_run[starts]], run_series[f_run[starts]])
    keep = np.empty(len(by_fork), dtype=bool)
    keep[by_fork] = keep_by_fork
    return keep


def _warn_ids_alike(raw: pd.Series, ids: np.ndarray, path: Path) -> None:
    """Warn when two series ids were read as one (surrounding spaces) or look the same (Unicode forms).

    Ids are stripped as every reader strips them, so ``a`` and ``a `` were one
    series, their commits averaged as re-runs, without a word; ``café`` in its
    composed and decomposed forms were two series printed the same.
    """
    cells = pd.unique(raw.dropna())
    stripped: dict[str, str] = {}
    for cell in map(str, cells):
        first = stripped.setdefault(cell.strip(), cell)
        if first != cell:
            warnings.warn(f"{path}: series ids {first!r} and {cell!r} differ only by surrounding spaces: "
                          f"read as one series {cell.strip()!r}", stacklevel=4)
            break
    seen: dict[str, str] = {}
    for sid in map(str, ids):
        first = seen.setdefault(unicodedata.normalize("NFC", sid), sid)
        if first != sid:
            warnings.warn(f"{path}: series ids {first!r} and {sid!r} are the same text in two Unicode forms "
                          "(composed and decomposed accents): read as two series that print alike", stacklevel=4)
            break


def _warn_commits_alike(series_codes: np.ndarray, series_order: np.ndarray, commit_codes: np.ndarray,
                        commit_text: np.ndarray, path: Path) -> None:
    """Warn when one series has two commit ids that differ only in case (``ABC123`` and ``abc123``).

    They are read as two commits, as ids are case-sensitive; a hash written
    once in capitals (a tool that upper-cases it) made a commit measured
    twice into two commits without a word. Cheap when no two distinct ids of
    the file fold alike, the usual case.
    """
    folded = pd.Series(commit_text, dtype=object).str.casefold()
    if not folded.duplicated().any():
        return
    fold_codes, _ = pd.factorize(folded)
    pairs = pd.DataFrame({"s": series_codes, "f": fold_codes[commit_codes], "c": commit_codes}).drop_duplicates()
    clash = pairs.duplicated(["s", "f"], keep=False)
    if clash.any():
        hit = pairs[clash].sort_values(["s", "f"]).iloc[:2]
        a, b = (str(commit_text[c]) for c in hit["c"])
        warnings.warn(f"{path}: series {str(series_order[hit['s'].iloc[0]])!r} has commits {a!r} and {b!r}, which "
                      "differ only in case: read as two commits (write one spelling to read them as one)",
                      stacklevel=4)


def _warn_misspelled_columns(columns: Iterable[object], path: Path) -> None:
    """Warn about a column read as nothing that differs from a layout column only in case or spaces.

    ``Label`` was ignored without a word: no candidate, and `train` then said
    the data had no triaged candidates.
    """
    names = {str(c) for c in columns}
    known = {*LONG_COLUMNS, LOWER_IS_BETTER, DIRECTION, FORK}
    for name in sorted(names - known):
        meant = name.strip().lower().replace(" ", "_")
        if meant in known and meant not in names:
            warnings.warn(
                f"{path}: column {name!r} is not read: the long layout's column is {meant!r} (names are "
                "case-sensitive); rename it to use it",
                UnreadColumnWarning,
                stacklevel=3,
            )


def change_kind(before: float, after: float, higher_is_better: bool | None) -> str:
    """``regression``, ``improvement`` or ``change`` (direction unknown, or no move) for a step before -> after."""
    if higher_is_better is None or after == before:
        return "change"
    worse = after < before if higher_is_better else after > before
    return "regression" if worse else "improvement"


def direction_of(record: Mapping[str, object]) -> bool | None:
    """Whether higher is better, from one record's ``higher_is_better`` / ``lower_is_better`` /
    ``direction`` field (a watch feed's JSON line), read as the long layout reads those columns;
    None when none of them says it (absent, blank or another value)."""
    for key, yes, no in (("higher_is_better", TRUE_TEXT, FALSE_TEXT), (LOWER_IS_BETTER, FALSE_TEXT, TRUE_TEXT),
                         (DIRECTION, _HIGHER_TEXT, _LOWER_TEXT)):
        cell = record.get(key)
        if cell is None:
            continue
        text = str(cell).strip().lower()
        if text in yes:
            return True
        if text in no:
            return False
    return None


#: Cells read as yes / no in the long layout's ``higher_is_better`` / ``lower_is_better`` columns (lower case).
TRUE_TEXT = ("true", "1", "1.0", "yes")
FALSE_TEXT = ("false", "0", "0.0", "no")


#: The ``direction`` column's cells: Otava's 1 / -1, or the words.
_HIGHER_TEXT = ("1", "1.0", "+1", "higher")
_LOWER_TEXT = ("-1", "-1.0", "lower")


def _direction_cells(raw: pd.Series, rows: np.ndarray, path: Path, column: str) -> np.ndarray:
    """Per row: 1 (the column says yes: higher is better for ``direction``), 0 (no) or -1 (blank)."""
    codes, stripped = text_codes(raw, strip=True)
    text = pd.Series(stripped, dtype=object).astype(str).str.lower().to_numpy()
    cells = np.full(len(text), -1, dtype=np.int8)
    yes, no = (_HIGHER_TEXT, _LOWER_TEXT) if column == DIRECTION else (TRUE_TEXT, FALSE_TEXT)
    cells[np.isin(text, yes)] = 1
    cells[np.isin(text, no)] = 0
    bad = (cells < 0) & ~np.isin(text, ["", "nan", "none", "<na>"])
    if bad.any():
        i = _first(bad[codes])
        what = ("is not 1 / -1 (higher / lower is better, as Otava writes it), higher / lower or blank"
                if column == DIRECTION else "is not true/false (or 1/0, yes/no, blank)")
        raise InputError(path, int(rows[i]), f"{column} {stripped[codes[i]]!r} {what}")
    return cells[codes]


def _parse_directions(
    frame: pd.DataFrame, rows: np.ndarray, path: Path, series_codes: np.ndarray, n_series: int
) -> list[bool | None] | None:
    """Each series' ``higher_is_better`` from the ``higher_is_better`` / ``lower_is_better`` /
    ``direction`` columns.

    None when none of them is there. Blank cells say nothing; the others of
    one series must agree, as a unit's direction is the series', not the row's;
    two columns of one row must agree too. ``direction`` was not read: a file
    with it had every series' direction unknown without a word.
    """
    present = [c for c in ("higher_is_better", LOWER_IS_BETTER, DIRECTION) if c in frame.columns]
    if not present:
        return None
    higher = np.full(len(frame), -1, dtype=np.int8)
    said_by = np.full(len(frame), "", dtype=object)  # the column that said each row's direction
    for column in present:
        cells = _direction_cells(frame[column], rows, path, column)
        said = cells if column != LOWER_IS_BETTER else np.where(cells < 0, -1, 1 - cells).astype(np.int8)
        clash = (higher >= 0) & (said >= 0) & (higher != said)
        if clash.any():
            i = _first(clash)
            other = str(said_by[i])
            if {other, column} == {"higher_is_better", LOWER_IS_BETTER}:
                raise InputError(path, int(rows[i]), "higher_is_better and lower_is_better say the same")
            raise InputError(
                path, int(rows[i]),
                f"{column} {str(frame[column].iloc[i]).strip()!r} and {other} {str(frame[other].iloc[i]).strip()!r} "
                "disagree about which way is better",
            )
        said_by[(higher < 0) & (said >= 0)] = column
        higher = np.where(said >= 0, said, higher).astype(np.int8)
    known = np.flatnonzero(higher >= 0)
    codes, said = series_codes[known].astype(np.int64), higher[known]
    # The first known cell of a series (file order) sets its direction.
    first = np.full(n_series, -1, dtype=np.int8)
    seen, at = np.unique(codes, return_index=True)
    first[seen] = said[at]
    clash = said != first[codes]
    if clash.any():
        i = int(known[_first(clash)])
        code = int(series_codes[i])
        column = str(said_by[i])
        # Named by the column the row's direction was read from (it named higher_is_better for a
        # file of a direction column only).
        here = (f"higher_is_better {str(bool(higher[i])).lower()} here, {str(bool(first[code])).lower()}"
                if column == "higher_is_better" else
                f"{column} {str(frame[column].iloc[i]).strip()!r} here: {'higher' if higher[i] else 'lower'} is "
                f"better, {'higher' if first[code] else 'lower'}")
        raise InputError(
            path,
            int(rows[i]),
            f"the direction of series {str(frame['series_id'].iloc[i]).strip()!r} changes ({here} on an earlier row)",
        )
    out: list[bool | None] = [None if f < 0 else bool(f) for f in first]
    return out


def _run_labels(
    row_labels: np.ndarray, run_id: np.ndarray, n_runs: int, rows: np.ndarray, path: Path, column: str
) -> np.ndarray:
    """One label per run: the non-empty label of its rows, which must agree."""
    out = np.full(n_runs, labels.NONE, dtype=object)
    labelled = row_labels != labels.NONE
    if not labelled.any():
        return out
    ids, labs, rws = run_id[labelled], row_labels[labelled], rows[labelled]
    out[ids[::-1]] = labs[::-1]  # the first label of a commit wins; later ones must agree
    conflict = labs != out[ids]
    if conflict.any():
        i = _first(conflict)
        raise InputError(
            path,
            int(rws[i]),
            f"{column} {labs[i]!r} disagrees with {out[ids[i]]!r} on another measurement of the same commit",
        )
    return out
