"""Reading and writing performance histories in the layouts people already have.

Layouts
-------
long (CSV or Parquet)
    One row per measurement: ``series_id, commit, timestamp, value, label``
    (``timestamp`` and ``label`` optional; synthetic data adds ``true_change``
    and ``truth_label``). Rows of a series are in history order; rows of
    different series may interleave. Several measurements of one commit are
    consecutive rows of that series and are aggregated (mean, median or p90,
    as Perfherder and MongoDB summarise replicates). A commit id that comes back
    after another commit of the same series is a duplicate, an error.
mongodb
    The ICPE 2022 data-challenge demo layout: ``"Value";"MongoDB.Label"``,
    ``;``-separated, one row per commit in order. The series id is the file
    stem and the commit id the 0-based row position.
otava
    Apache Otava's CSV: a time column, a commit column and one column per
    metric; each metric becomes a series named after its column. Empty cells
    are skipped (the metric was not measured on that commit).
json
    A JSON list of numbers (e.g. TigerBeetle's history): one series named
    after the file stem, commit ids are 0-based positions.

``layout="auto"`` tells them apart by :func:`triage.sniffing.data_layout`.
A directory written by ``triage synth`` holds ``history.parquet`` or
``history.csv``; :func:`load` finds it.

Every problem is reported as one :class:`~triage.core.errors.InputError` naming the
file, the row (file line for CSV, header = line 1; record number for Parquet)
and what is wrong.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels, timestamps
from triage.core.atomic import atomic_write, write_csv_atomic
from triage.core.errors import InputError
from triage.core.history import REQUIRED_COLUMNS, Dataset, History
from triage.core.values import check_values
from triage.sniffing import MONGODB_COLUMNS, data_layout

AGGREGATES: dict[str, Callable[[pd.core.groupby.SeriesGroupBy], pd.Series]] = {
    "mean": lambda g: g.mean(),
    "median": lambda g: g.median(),
    "p90": lambda g: g.quantile(0.9),
}
LAYOUTS = ("auto", "long", "mongodb", "otava", "json")
DATASET_FILES = ("history.parquet", "history.csv")


class UnsortedTimestampsWarning(UserWarning):
    """Timestamps went backwards and the rows were sorted because the caller asked."""


# --------------------------------------------------------------------------- reading


def load(
    path: str | Path,
    *,
    layout: str = "auto",
    aggregate: str = "mean",
    sort_timestamps: bool = False,
) -> Dataset:
    """Load a dataset from ``path`` in any supported layout.

    Parameters
    ----------
    path : file or directory (a directory written by ``triage synth``)
    layout : one of ``auto``, ``long``, ``mongodb``, ``otava``, ``json``
    aggregate : ``mean`` (default), ``median`` or ``p90`` for several
        measurements of one commit
    sort_timestamps : sort each series by timestamp (stable) with a
        :class:`UnsortedTimestampsWarning` instead of failing on unsorted rows
    """
    path = Path(path)
    if aggregate not in AGGREGATES:
        raise InputError(path, None, f"unknown aggregate {aggregate!r} (use one of {', '.join(AGGREGATES)})")
    if layout not in LAYOUTS:
        raise InputError(path, None, f"unknown layout {layout!r} (use one of {', '.join(LAYOUTS)})")
    if path.is_dir():
        for name in DATASET_FILES:
            if (path / name).exists():
                path = path / name
                break
        else:
            raise InputError(path, None, f"directory has none of {', '.join(DATASET_FILES)}")
    if not path.exists():
        raise InputError(path, None, "no such file")
    if layout == "auto":
        layout = data_layout(path)
    if layout == "long":
        return read_long(path, aggregate=aggregate, sort_timestamps=sort_timestamps)
    if layout == "mongodb":
        return read_mongodb_demo(path)
    if layout == "otava":
        return read_otava_csv(path, aggregate=aggregate, sort_timestamps=sort_timestamps)
    return read_json_values(path)


def read_csv_text(path: Path, sep: str = ",", *, require_rows: bool = True) -> pd.DataFrame:
    """Every cell as text (no NaN guessing), stripped column names; located errors."""
    try:
        frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise InputError(path, None, "file is empty") from None
    except pd.errors.ParserError as exc:
        raise InputError(path, None, f"not a valid CSV file: {exc}") from None
    except UnicodeDecodeError:
        raise InputError(path, None, "not a UTF-8 text file") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if require_rows and frame.empty:
        raise InputError(path, None, "file has a header but no data rows")
    return frame


def read_long(path: str | Path, *, aggregate: str = "mean", sort_timestamps: bool = False) -> Dataset:
    """Read the long layout from CSV or Parquet (see module docstring)."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types for a broken file
            raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
        if frame.empty:
            raise InputError(path, None, "file has no rows")
        rows = np.arange(1, len(frame) + 1)
    else:
        frame = read_csv_text(path)
        rows = np.arange(2, len(frame) + 2)  # header is line 1
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})"
        )
    return _build_dataset(frame, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps)


def read_mongodb_demo(path: str | Path) -> Dataset:
    """Read the ICPE 2022 data-challenge demo layout (``"Value";"MongoDB.Label"``)."""
    path = Path(path)
    frame = read_csv_text(path, sep=";")
    missing = [c for c in MONGODB_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})"
        )
    long = pd.DataFrame(
        {
            "series_id": path.stem,
            "commit": np.arange(len(frame)).astype(str),
            "value": frame["Value"].to_numpy(),
            "label": frame["MongoDB.Label"].to_numpy(),
        }
    )
    return _build_dataset(long, np.arange(2, len(frame) + 2), path)


def read_otava_csv(
    path: str | Path,
    *,
    time_column: str = "time",
    commit_column: str = "commit",
    metrics: list[str] | None = None,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
) -> Dataset:
    """Read Apache Otava's CSV layout: one series per metric column.

    ``metrics`` names the metric columns; by default every column other than
    the time and commit columns whose non-empty cells are mostly numbers (text
    columns such as a branch name are attributes and are left out; a stray
    non-number in a metric column is an error naming its row).
    """
    path = Path(path)
    frame = read_csv_text(path)
    if commit_column not in frame.columns:
        raise InputError(path, 1, f"missing column {commit_column!r} (found: {', '.join(frame.columns)})")
    has_time = time_column in frame.columns
    others = [c for c in frame.columns if c not in (time_column, commit_column)]
    if metrics is None:
        metrics = [c for c in others if _looks_numeric(frame[c])]
    else:
        unknown = [m for m in metrics if m not in frame.columns]
        if unknown:
            raise InputError(path, 1, f"missing metric column {', '.join(map(repr, unknown))}")
    if not metrics:
        raise InputError(path, 1, "no numeric metric column (expected time, commit, then metric columns)")
    parts = []
    for metric in metrics:
        col = frame[metric].str.strip()
        keep = col != ""
        parts.append(
            pd.DataFrame(
                {
                    "series_id": metric,
                    "commit": frame.loc[keep, commit_column].to_numpy(),
                    "timestamp": frame.loc[keep, time_column].to_numpy() if has_time else "",
                    "value": col[keep].to_numpy(),
                    "_row": np.flatnonzero(keep.to_numpy()) + 2,
                }
            )
        )
    long = pd.concat(parts, ignore_index=True)
    rows = long.pop("_row").to_numpy()
    return _build_dataset(long, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps)


def read_json_values(path: str | Path) -> Dataset:
    """Read a JSON list of numbers as one series named after the file stem."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    if not isinstance(payload, list) or not payload:
        raise InputError(path, None, "expected a non-empty JSON list of numbers")
    long = pd.DataFrame(
        {
            "series_id": path.stem,
            "commit": np.arange(len(payload)).astype(str),
            "value": [str(v) if v is not None else "" for v in payload],
        }
    )
    # For JSON the "row" is the 1-based list element.
    return _build_dataset(long, np.arange(1, len(payload) + 1), path)


def _looks_numeric(col: pd.Series) -> bool:
    """Mostly numbers: a metric (its odd bad cell is then reported, not hidden)."""
    text = col.astype(str).str.strip()
    text = text[text != ""]
    return bool(len(text)) and float(pd.to_numeric(text, errors="coerce").notna().mean()) >= 0.5


# --------------------------------------------------------------------------- validation


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _parse_values(raw: pd.Series, rows: np.ndarray, path: Path) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(raw):
        values = raw.to_numpy(dtype=np.float64)
        text = raw.astype(str).to_numpy()
    else:
        text = raw.astype(str).str.strip().to_numpy()
        values = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = _first(bad)
        shown = text[i]
        if shown in ("", "None", "<NA>"):
            problem = "value is missing"
        elif np.isinf(values[i]):
            problem = f"value {shown!r} is not finite"
        elif np.isnan(values[i]) and pd.to_numeric(pd.Series([shown]), errors="coerce").notna().all():
            problem = f"value {shown!r} is not a number (NaN)"
        else:
            problem = f"value {shown!r} is not a number"
        raise InputError(path, int(rows[i]), problem)
    return check_values(values, path, rows)  # |x| near 1e308 or 1e-308 would overflow downstream


def _parse_labels(raw: pd.Series, rows: np.ndarray, path: Path, column: str) -> np.ndarray:
    text = raw.astype(object).where(raw.notna(), "").astype(str).to_numpy()
    mapping: dict[str, str] = {}
    for value in pd.unique(text):
        try:
            mapping[value] = labels.normalise_label(value)
        except KeyError:
            # Python equality: numpy's fixed-width strings would drop trailing NULs.
            i = next(j for j, t in enumerate(text) if t == value)
            raise InputError(
                path, int(rows[i]), f"unknown {column} {value!r} (known: {labels.known_labels()})"
            ) from None
    return np.array([mapping[v] for v in text], dtype=object) if len(mapping) > 1 else np.full(
        len(text), next(iter(mapping.values()), labels.NONE), dtype=object
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
        raise InputError(path, int(rows[i]), f"timestamp {str(raw.iloc[i]).strip()!r} is not a date/time")
    return instants


def _parse_flags(raw: pd.Series, rows: np.ndarray, path: Path) -> np.ndarray:
    text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip().str.lower().to_numpy()
    truthy = np.isin(text, ["1", "true", "yes", "1.0"])
    falsy = np.isin(text, ["0", "false", "no", "", "0.0"])
    bad = ~(truthy | falsy)
    if bad.any():
        i = _first(bad)
        raise InputError(path, int(rows[i]), f"true_change {text[i]!r} is not 0/1")
    return truthy


def _require_text(raw: pd.Series, rows: np.ndarray, path: Path, column: str) -> np.ndarray:
    text = raw.astype(object).where(raw.notna(), "").astype(str).str.strip().to_numpy(dtype=object)
    empty = text == ""
    if empty.any():
        raise InputError(path, int(rows[_first(empty)]), f"{column} is missing")
    return text


def _build_dataset(
    frame: pd.DataFrame,
    rows: np.ndarray,
    path: Path,
    *,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
) -> Dataset:
    """Validate a long-layout frame and turn it into a :class:`Dataset`.

    ``rows[i]`` is what error messages call the row of ``frame.iloc[i]``.
    """
    series = _require_text(frame["series_id"], rows, path, "series_id")
    commits = _require_text(frame["commit"], rows, path, "commit")
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

    # A run = consecutive rows of one (series, commit): the measurements of one commit.
    series_codes, series_order = pd.factorize(series)
    key_codes, _ = pd.factorize(pd.Series(series) + "\x00" + pd.Series(commits))
    order = np.argsort(series_codes, kind="stable")  # group each series, keep row order inside
    k_sorted = key_codes[order]
    s_sorted = series_codes[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (k_sorted[1:] != k_sorted[:-1]) | (s_sorted[1:] != s_sorted[:-1])
    run_keys = k_sorted[starts]
    seen_at: dict[int, int] = {}
    if len(np.unique(run_keys)) != len(run_keys):
        run_first_rows = order[starts]
        for key, first in zip(run_keys, run_first_rows, strict=True):
            if key in seen_at:
                raise InputError(
                    path,
                    int(rows[first]),
                    f"duplicate commit id {commits[first]!r} in series {series[first]!r} "
                    f"(first seen at row {int(rows[seen_at[key]])}; measurements of one commit "
                    "must be consecutive rows)",
                )
            seen_at[key] = first
    run_id = np.cumsum(starts) - 1
    n_runs = int(run_id[-1]) + 1
    first_idx = order[starts]  # frame index of each run's first row

    agg_values = AGGREGATES[aggregate](pd.Series(values[order]).groupby(run_id)).to_numpy()
    n_meas = np.bincount(run_id, minlength=n_runs)
    run_labels = _run_labels(row_labels[order], run_id, n_runs, rows[order], path, "label")
    run_truth = _run_labels(truth[order], run_id, n_runs, rows[order], path, "truth_label") if truth is not None else None
    run_change = (
        np.bincount(run_id, weights=true_change[order].astype(float), minlength=n_runs) > 0
        if true_change is not None
        else None
    )
    run_ts = timestamps[first_idx] if timestamps is not None else None
    run_series = series_codes[first_idx]
    run_commits = commits[first_idx]

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
                    raise InputError(
                        path,
                        row,
                        f"timestamps of series {series_order[run_series[a]]!r} go backwards "
                        f"({pd.Timestamp(ts[j])} after {pd.Timestamp(ts[j - 1])}); "
                        "sort the file or ask for sorting (--sort-timestamps)",
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
            History(
                series_id=str(series_order[run_series[a]]),
                commits=take(run_commits),
                values=take(agg_values),
                labels=take(run_labels),
                timestamps=take(run_ts),
                true_change=take(run_change),
                truth_label=take(run_truth),
                n_measurements=take(n_meas),
            )
        )
    return Dataset(histories, source=str(path))


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


# --------------------------------------------------------------------------- writing


def write_long(dataset: Dataset, path: str | Path) -> Path:
    """Write ``dataset`` in the long layout (CSV or Parquet, by suffix), atomically.

    The file is written next to its destination and renamed into place, so an
    interrupted write never leaves a half-written file where a good one was.
    """
    path = Path(path)
    frame = dataset.to_frame()
    if "timestamp" in frame.columns and frame["timestamp"].isna().all():
        frame["timestamp"] = ""
    if path.suffix.lower() == ".parquet":
        if (frame["timestamp"] == "").all() if frame["timestamp"].dtype == object else False:
            frame = frame.drop(columns="timestamp")
        return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return write_csv_atomic(frame, path, date_format="%Y-%m-%dT%H:%M:%S")
