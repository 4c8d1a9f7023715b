"""Reading and writing performance histories in the layouts people already have.

Layouts
-------
long (CSV or Parquet)
    One row per measurement: ``series_id, commit, timestamp, value, label``
    (``timestamp`` and ``label`` optional; synthetic data adds ``true_change``
    and ``truth_label``). Rows of a series are in history order; rows of
    different series may interleave. Several measurements of one commit
    (consecutive rows, or a retrigger measured later) are aggregated (mean,
    median or p90, as Perfherder and MongoDB summarise replicates); a commit
    keeps the place of its first appearance unless ``commit_order`` is given.
    The delimiter (``,``, ``;``, tab, ``|``) is sniffed from the header.
mongodb
    The ICPE 2022 data-challenge demo layout: ``"Value";"MongoDB.Label"``,
    ``;``-separated, one row per commit in order. The series id is the file
    stem and the commit id the 0-based row position.
otava, otava-dir, otava-config
    Apache Otava's CSV (a time column, an optional commit column, one column
    per metric, an optional branch column), a directory of them, or Otava's
    YAML test config: :mod:`triage.readers.otava`.
json
    A JSON list of numbers (e.g. TigerBeetle's history): one series named
    after the file stem, commit ids are 0-based positions.
asv
    An airspeed-velocity results directory: :mod:`triage.readers.asv`.
gab
    github-action-benchmark's ``data.js``: :mod:`triage.readers.gab`.
perfherder
    Perfherder's performance-data JSON, labelled by an alerts export
    (``alerts=``): :mod:`triage.readers.perfherder`.
jmh
    JMH's JSON results (``-rf json``): one build, so one commit (the file
    stem) of a series per benchmark and parameter set; the value aggregates
    the forks' iterations, only their steady parts with ``trim_warmup``
    (per fork): :func:`triage.readers.jmh.read_jmh_dataset`.

Any file may be gzip- or zstd-compressed, and ``-`` reads standard input
(:mod:`triage.readers.source`).

``layout="auto"`` tells them apart by :func:`triage.sniffing.data_layout`.
A directory written by ``triage synth`` holds ``history.parquet`` or
``history.csv``; :func:`load` finds it.

Every problem is reported as one :class:`~triage.core.errors.InputError` naming the
file, the row (file line for CSV, header = line 1; record number for Parquet)
and what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

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
from triage.core.json_input import read_json
from triage.readers.asv import read_asv
from triage.readers.gab import read_gab
from triage.readers.jmh import read_jmh_dataset
from triage.readers.otava import read_otava_config, read_otava_dir, sniff_delimiter
from triage.readers.otava import read_otava_csv as _read_otava_csv
from triage.readers.perfherder import read_perfherder_data
from triage.readers.source import csv_errors, display_name, plain_file, read_csv_text
from triage.sniffing import MONGODB_COLUMNS, data_layout

LAYOUTS = (
    "auto", "long", "mongodb", "otava", "json", "asv", "gab", "perfherder", "jmh", "otava-dir", "otava-config",
)
DATASET_FILES = ("history.parquet", "history.csv")


#: The long-frame builder; kept under its old name for callers such as ``triage.synthetic``.
_build_dataset = dataset_from_long
__all__ = ["AGGREGATES", "UnsortedTimestampsWarning", "load", "read_csv_text", "write_long"]


# --------------------------------------------------------------------------- reading


def load(
    path: str | Path,
    *,
    layout: str = "auto",
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    trim_warmup: str = "none",
    branch: str | None = None,
    commit_order: list[str] | None = None,
    alerts: str | Path | None = None,
) -> Dataset:
    """Load a dataset from ``path`` in any supported layout.

    Parameters
    ----------
    path : file or directory (a directory written by ``triage synth``, an asv
        results directory, a directory of Otava CSVs), possibly gzip/zstd
        compressed; ``-`` is standard input
    layout : one of :data:`LAYOUTS` (``auto`` sniffs it)
    branch : Otava CSVs with a ``branch`` column: keep only this branch
        (default: every branch, series ``<metric>@<branch>``)
    commit_order : long layout: the commits in history order (default: the
        order of their first appearance)
    alerts : Perfherder alerts export labelling Perfherder performance data
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
    if branch is not None and layout not in ("auto", "otava", "otava-dir", "otava-config"):
        raise InputError(path, None, f"a branch filter applies to Otava CSVs, not to layout {layout!r}")
    with plain_file(path) as plain:
        if layout == "auto":
            layout = data_layout(plain)
        options: dict[str, Any] = {"aggregate": aggregate, "sort_timestamps": sort_timestamps}
        if layout == "long":
            return read_long(plain, trim=trim, commit_order=commit_order, **options)
        if layout == "mongodb":
            return read_mongodb_demo(plain)
        if layout == "otava":
            return _read_otava_csv(plain, branch=branch, trim=trim, **options)
        if layout == "otava-dir":
            return read_otava_dir(plain, branch=branch, trim=trim, **options)
        if layout == "otava-config":
            return read_otava_config(plain, branch=branch, trim=trim, **options)
        if layout == "asv":
            return read_asv(plain, aggregate=aggregate, trim=trim)
        if layout == "gab":
            return read_gab(plain, trim=trim, **options)
        if layout == "perfherder":
            return read_perfherder_data(plain, alerts=alerts, trim=trim, **options)
        if alerts is not None:
            raise InputError(display_name(path), None, "--alerts labels Perfherder performance data only")
        if layout == "jmh":
            return read_jmh_dataset(plain, trim_warmup=trim_warmup, aggregate=aggregate)
        return read_json_values(plain)


def read_long(
    path: str | Path,
    *,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    trim=None,
    commit_order: list[str] | None = None,
) -> Dataset:
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
        with open(path, encoding="utf-8", errors="replace") as fh:
            sep = sniff_delimiter(fh.readline())
        frame = read_csv_text(path, sep=sep)
        rows = np.arange(2, len(frame) + 2)  # header is line 1
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})"
        )
    return _build_dataset(
        frame, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim, commit_order=commit_order
    )


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


def read_otava_csv(path: str | Path, **options) -> Dataset:
    """Apache Otava's CSV (kept here for callers; the reader is :mod:`triage.readers.otava`)."""
    return _read_otava_csv(path, **options)


def read_json_values(path: str | Path) -> Dataset:
    """Read a JSON list of numbers as one series named after the file stem."""
    path = Path(path)
    payload = read_json(path, "a list of numbers")
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


#: Rows of a long CSV read per part when `triage detect` streams it: small
#: enough that reading a part (pandas' text columns) stays well under the
#: memory of a loaded model, large enough that a part holds many series.
STREAM_ROWS = 50_000


class SeriesNotGrouped(Exception):
    """A series' rows are not contiguous in the file: it cannot be replayed part by part."""


def long_csv_parts(path: str | Path, rows_per_part: int | None = None) -> Iterator[Dataset]:
    """Datasets of whole series of a long-layout CSV, read ``rows_per_part`` rows at a time.

    Each part goes through :func:`triage.core.history.dataset_from_long`, the
    one long-frame validator, with the file's line numbers, so a bad row is
    reported as :func:`load` reports it. The last series of a
    chunk waits for the next chunk (its rows may continue there). A series
    whose rows come back after another series' raises :class:`SeriesNotGrouped`
    (the caller then loads the whole file).
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        sep = sniff_delimiter(fh.readline())
    with csv_errors(path):
        reader = pd.read_csv(
            path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True,
            chunksize=rows_per_part or STREAM_ROWS,
        )
        carry: pd.DataFrame | None = None
        carry_rows = np.empty(0, dtype=np.int64)
        closed: set[str] = set()
        next_row = 2  # the header is line 1
        any_rows = False
        for chunk in reader:
            chunk.columns = [str(c).strip() for c in chunk.columns]
            missing = [c for c in REQUIRED_COLUMNS if c not in chunk.columns]
            if missing:
                raise InputError(path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(chunk.columns)})")
            rows = np.arange(next_row, next_row + len(chunk))
            next_row += len(chunk)
            any_rows = any_rows or len(chunk) > 0
            if carry is not None:
                chunk = pd.concat([carry, chunk], ignore_index=True)
                rows = np.concatenate([carry_rows, rows])
            ids = chunk["series_id"].to_numpy()
            if closed and not closed.isdisjoint(ids.tolist()):
                raise SeriesNotGrouped()
            open_ = ids == ids[-1]  # the last series may go on in the next chunk
            done = chunk[~open_]
            if len(done):
                closed.update(done["series_id"].unique().tolist())
                yield dataset_from_long(done.reset_index(drop=True), rows[~open_], path)
            carry, carry_rows = chunk[open_].reset_index(drop=True), rows[open_]
    if not any_rows:
        raise InputError(path, None, "file has a header but no data rows")
    if carry is not None and len(carry):
        yield dataset_from_long(carry, carry_rows, path)
