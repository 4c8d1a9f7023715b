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
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from triage import steady_state
from triage.core.atomic import atomic_write, write_csv_atomic
from triage.core.errors import InputError
from triage.core.history import (
    AGGREGATES,
    REQUIRED_COLUMNS,
    Dataset,
    UnsortedTimestampsWarning,
    dataset_from_long,
)
from triage.sniffing import MONGODB_COLUMNS, data_layout

LAYOUTS = ("auto", "long", "mongodb", "otava", "json")
DATASET_FILES = ("history.parquet", "history.csv")


#: The long-frame builder; kept under its old name for callers such as ``triage.synthetic``.
_build_dataset = dataset_from_long
__all__ = ["AGGREGATES", "UnsortedTimestampsWarning", "load", "write_long"]


# --------------------------------------------------------------------------- reading


def load(
    path: str | Path,
    *,
    layout: str = "auto",
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    trim_warmup: str = "none",
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
    trim_warmup : ``kbkssd``, ``cpssd`` or ``none``: aggregate only the steady
        part of each commit's measurements (:mod:`triage.steady_state`)
    """
    path = Path(path)
    try:
        detector = steady_state.make(trim_warmup)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
    trim = None if detector is None else partial(steady_state.steady_mask, detector=detector)
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
        return read_long(path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim)
    if layout == "mongodb":
        return read_mongodb_demo(path)
    if layout == "otava":
        return read_otava_csv(path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim)
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


def read_long(path: str | Path, *, aggregate: str = "mean", sort_timestamps: bool = False, trim=None) -> Dataset:
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
    return _build_dataset(frame, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim)


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
    trim=None,
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
    return _build_dataset(long, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim)


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
