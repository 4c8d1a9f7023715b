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
gbench
    Google Benchmark's JSON output: one run of one build, read as JMH results
    are (:mod:`triage.readers.gbench`; a repetition is an iteration).
pytest-benchmark
    pytest-benchmark's saved runs (a ``.benchmarks`` folder, one machine
    folder or one ``--benchmark-json`` file), each run placed at its commit's
    time: :mod:`triage.readers.pytest_benchmark`.

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

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from triage.core import timestamps
from triage.core.atomic import atomic_write, is_stdio, write_csv_atomic
from triage.core.csv_lines import csv_record_lines, file_line
from triage.core.errors import InputError
from triage.core.history import (
    AGGREGATES,
    DIRECTION,
    FORK,
    LONG_COLUMNS,
    LOWER_IS_BETTER,
    REQUIRED_COLUMNS,
    Dataset,
    UnsortedTimestampsWarning,
    dataset_from_long,
)
from triage.core.json_input import json_record, read_json
from triage.readers.asv import read_asv
from triage.readers.gab import read_gab
from triage.readers.jmh import read_jmh_dataset
from triage.readers.otava import read_otava_config, read_otava_dir, sniff_delimiter
from triage.readers.otava import read_otava_csv as _read_otava_csv
from triage.readers.perfherder import read_perfherder_data
from triage.readers.pytest_benchmark import read_pytest_benchmark
from triage.readers.source import (
    check_header,
    csv_errors,
    display_name,
    locale_hints,
    plain_file,
    read_csv_text,
    trailing_blank_rows,
    without_implicit_index,
)
from triage.sniffing import MONGODB_COLUMNS, data_layout

LAYOUTS = (
    "auto", "long", "mongodb", "otava", "json", "jsonl", "asv", "gab", "perfherder", "jmh", "gbench",
    "pytest-benchmark", "otava-dir",
    "otava-config",
)
DATASET_FILES = ("history.parquet", "history.csv")
JMH_STDIN = (
    "JMH results are one commit, named by the file's stem (3f2a9c1.json is commit 3f2a9c1), and standard "
    "input (or a pipe) has no such name: save them as <commit>.json and pass that file, or name the commit with "
    "`triage steady - --commits <commit> --trim-warmup none --out long.csv` and read long.csv"
)


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
    trim_warmup : ``kbkssd``, ``cpssd``, ``kstep`` or ``none``: aggregate only
        the steady part of each commit's measurements (:mod:`triage.steady_state`;
        a higher-is-better series is a rate, whose warm-up rises; any other
        is read as times, whose warm-up falls)
    """
    # Imported here: it brings the detectors and scipy.stats, which reading a
    # file without --trim-warmup never needs (about 0.9 CPU-s of every CLI start).
    from triage import steady_state

    path = Path(path)
    try:
        trim = steady_state.trim_for(trim_warmup)
    except ValueError as exc:
        raise InputError(path, None, str(exc)) from None
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
        dataset = _load_plain(plain, path, layout, aggregate, sort_timestamps, trim, commit_order, branch, alerts,
                              trim_warmup)
    if plain != path:
        # Read from a decompressed copy (or stdin's): the user knows the file by its own name.
        dataset.source = display_name(path)
    return dataset


def _load_plain(plain: Path, path: Path, layout: str, aggregate: str, sort_timestamps: bool, trim, commit_order,
                branch, alerts, trim_warmup) -> Dataset:
    """:func:`load`'s reading of one plain (uncompressed, regular) file or directory by layout."""
    if layout == "auto":
        layout = data_layout(plain)
    options: dict[str, Any] = {"aggregate": aggregate, "sort_timestamps": sort_timestamps}
    if layout == "long":
        return read_long(plain, trim=trim, commit_order=commit_order, **options)
    if layout == "mongodb":
        return read_mongodb_demo(plain)
    if layout == "jsonl":
        return read_json_records(plain, commit_order=commit_order, trim=trim, **options)
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
    if layout == "pytest-benchmark" and alerts is None:
        return read_pytest_benchmark(plain, aggregate=aggregate, trim=trim)
    if alerts is not None:
        raise InputError(display_name(path), None, "--alerts labels Perfherder performance data only")
    if layout in ("jmh", "gbench"):
        if _nameless(path):
            # The file is one commit named by its stem; stdin's stand-in name
            # ("stdin", or "63" for bash's <(...)) would become a commit id nobody gave.
            what = "Google Benchmark results are" if layout == "gbench" else "JMH results are"
            raise InputError(display_name(path), None, JMH_STDIN.replace("JMH results are", what, 1))
        return read_jmh_dataset(plain, trim_warmup=trim_warmup, aggregate=aggregate)
    return read_json_values(plain)


def _nameless(path: Path) -> bool:
    """Standard input or a stream under /dev or /proc (``/dev/stdin``, ``<(...)``'s ``/dev/fd/63``): no stem to name a commit."""
    return is_stdio(path) or str(path.absolute()).startswith(("/dev/", "/proc/"))


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
        import pyarrow.parquet as pq  # here, as pandas imports it: reading a CSV never needs it

        try:
            # Its columns first: pyarrow refuses a name given twice only in its own words.
            schema = pq.read_schema(path)
            names = [str(name).strip() for name in schema.names]
            check_header(path, names=names, row=None)
            _refuse_nested_columns(schema, path)
            frame = pd.read_parquet(path)
        except InputError:
            raise
        except Exception as exc:  # pyarrow raises many types for a broken file
            # Its messages run over lines (thrift's reason, then what failed): one line names the file.
            reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            raise InputError(path, None, f"not a readable Parquet file: {reason}") from None
        _refuse_bytes_that_are_not_utf8(frame, path)
        if frame.empty:
            raise InputError(path, None, "file has no rows")
        rows = np.arange(1, len(frame) + 1)
    else:
        with open(path, encoding="utf-8", errors="replace") as fh:
            sep = sniff_delimiter(fh.readline())
        frame = read_csv_text(path, sep=sep)
        # the file's own lines: pandas skips blank ones (header = line 1)
        rows = csv_record_lines(path, len(frame), sep)
        # Rows of empty cells only at the end (``;;;``, a spreadsheet's touched empty rows) hold no
        # measurement: they were "series_id is missing". Such rows amid the data still are.
        if tail := trailing_blank_rows(frame):
            frame, rows = frame.iloc[: len(frame) - tail], rows[: len(rows) - tail]
            if frame.empty:
                raise InputError(path, None, "file has a header but no data rows")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(frame.columns)})"
        )
    with locale_hints(frame["value"], rows):
        return _build_dataset(
            frame, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim,
            commit_order=commit_order,
        )


def _refuse_bytes_that_are_not_utf8(frame: pd.DataFrame, path: Path) -> None:
    """A Parquet text or binary column is read without checking that it is UTF-8; a bad cell failed only
    when used (pyarrow's "Wrapping ... failed", a UnicodeDecodeError: internal errors). Refused here at its record."""
    import pyarrow as pa

    for name in frame.columns:
        cells = frame[name].array
        if frame[name].dtype == object:  # binary columns: Python bytes
            raw = cells
        elif hasattr(cells, "__arrow_array__"):
            arrow = pa.chunked_array(pa.array(cells))  # the column's own buffers, not a copy
            if not (pa.types.is_string(arrow.type) or pa.types.is_large_string(arrow.type)):
                continue
            try:
                arrow.validate(full=True)
                continue
            except pa.ArrowInvalid:
                raw = arrow.cast(pa.large_binary()).to_pylist()
        else:
            continue
        bad = next((i for i, cell in enumerate(raw, start=1) if isinstance(cell, bytes) and not _is_utf8(cell)), None)
        if bad is not None:
            raise InputError(path, bad, f"column {name!r} holds bytes that are not UTF-8 text")


def _refuse_nested_columns(schema, path: Path) -> None:
    """A list, struct or map column where the long layout reads one text or number a cell: a series id
    of lists failed as "unhashable type" (an internal error), a commit was read as its printed list."""
    import pyarrow as pa

    read = {*LONG_COLUMNS, LOWER_IS_BETTER, DIRECTION, FORK}
    for field in schema:
        if str(field.name).strip() in read and pa.types.is_nested(field.type):
            raise InputError(path, None, f"column {str(field.name).strip()!r} holds {field.type} cells,"
                             " not one text or number a cell")


def _is_utf8(cell: bytes) -> bool:
    try:
        cell.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
    with locale_hints(frame["Value"], np.arange(2, len(frame) + 2)):
        return _build_dataset(long, np.arange(2, len(frame) + 2), path)


def read_otava_csv(path: str | Path, **options) -> Dataset:
    """Apache Otava's CSV (kept here for callers; the reader is :mod:`triage.readers.otava`)."""
    return _read_otava_csv(path, **options)


#: The keys of a JSON-lines record read as long-layout columns; others are left out.
RECORD_KEYS = ("series_id", "commit", "timestamp", "value", "label")


def read_json_records(path: str | Path, **options: Any) -> Dataset:
    """JSON lines of records, one result each, as ``triage watch`` reads them (a feed replayed by ``detect``).

    Each non-blank line is an object with ``series_id`` (or ``series``),
    ``commit`` and ``value``, and optionally ``timestamp`` and ``label``; the
    row of an error is the line. ``options`` go to the long-frame validator
    (aggregate, sort_timestamps, trim, commit_order).
    """
    path = Path(path)
    records: list[dict[str, object]] = []
    rows: list[int] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json_record(line.lstrip("\ufeff") if number == 1 else line)
                except ValueError as exc:
                    raise InputError(path, number, str(exc)) from None
                records.append({k: record[k] for k in RECORD_KEYS if k in record})
                rows.append(number)
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not records:
        raise InputError(path, None, "file has no records")
    frame = pd.DataFrame.from_records(records)
    for key in ("series_id", "commit", "label"):
        if key in frame.columns:  # JSON numbers as ids (a Perfherder signature id) are text here
            frame[key] = frame[key].map(lambda v: "" if v is None else str(v))
    with locale_hints(frame["value"] if "value" in frame.columns else pd.Series(dtype=object), np.asarray(rows)):
        return _build_dataset(frame, np.asarray(rows), path, **options)


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
    with locale_hints(long["value"]):
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
    if pd.api.types.is_datetime64_any_dtype(frame["timestamp"]):
        frame["timestamp"] = _iso_seconds(frame["timestamp"])
    return write_csv_atomic(frame, path, date_format="%Y-%m-%dT%H:%M:%S")


def _iso_seconds(stamps: pd.Series) -> pd.Series:
    """Naive-UTC timestamps as ISO 8601 text to the second, with the fraction of a second where there is one.

    ``date_format="%Y-%m-%dT%H:%M:%S"`` alone dropped fractions: ``convert``
    wrote 10:00:00.250 and 10:00:00.750 both as 10:00:00 (a Parquet ``--out``
    kept them). Whole seconds are written as before.
    """
    ns = stamps.to_numpy(dtype="datetime64[ns]").view(np.int64)
    fraction = np.where(stamps.isna().to_numpy(), 0, ns % 1_000_000_000)  # NaT: a series without timestamps
    text = stamps.dt.strftime("%Y-%m-%dT%H:%M:%S")
    if (fraction != 0).any():
        digits = pd.Series([f".{f:09d}".rstrip("0") if f else "" for f in fraction.tolist()], index=stamps.index)
        text = text + digits
    return text


#: Rows of a long CSV read per part when `triage detect` streams it: small
#: enough that reading a part (pandas' text columns) stays well under the
#: memory of a loaded model, large enough that a part holds many series.
STREAM_ROWS = 50_000


class SeriesNotGrouped(Exception):
    """A series' rows are not contiguous in the file: it cannot be replayed part by part."""


class _ValuesAsText(Exception):
    """The C parser's floats of a part might differ from what its text gives: read the file as text."""


def long_csv_parts(path: str | Path, rows_per_part: int | None = None) -> Iterator[Dataset]:
    """Datasets of whole series of a long-layout CSV, read ``rows_per_part`` rows at a time.

    Each part goes through :func:`triage.core.history.dataset_from_long`, the
    one long-frame validator, with the file's line numbers, so a bad row is
    reported as :func:`load` reports it. The last series of a
    chunk waits for the next chunk (its rows may continue there). A series
    whose rows come back after another series' raises :class:`SeriesNotGrouped`
    (the caller then loads the whole file).

    The values are parsed by pandas' CSV parser as floats, about twice as fast
    as text and :func:`pandas.to_numeric`, where that gives the same floats
    bit for bit (:func:`_floats_as_text_gives`). The first part where it might
    not (a value that is no finite number, an integer-valued part) sends the
    rest of the file through the text path, which also names the bad rows.
    """
    header = _header(path)
    parts = 0
    try:
        if sum(c.strip() == "value" for c in header) == 1:
            try:
                for part in _long_csv_parts(path, rows_per_part,
                                            float_value=next(c for c in header if c.strip() == "value")):
                    yield part
                    parts += 1
                return
            except _ValuesAsText:
                pass  # read again as text; the parts given already are not validated again
        yield from _long_csv_parts(path, rows_per_part, skip=parts)
    except InputError as exc:
        # the parts count records; a blank line or a quoted line break makes the file's line later
        if exc.row is None or exc.source != str(path):
            raise
        with open(path, encoding="utf-8", errors="replace") as fh:
            sep = sniff_delimiter(fh.readline())
        raise InputError(exc.source, file_line(Path(path), exc.row, sep), exc.problem) from None


def _header(path: str | Path) -> list[str]:
    """The column names as pandas reads them (before stripping); a name given twice is refused."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        sep = sniff_delimiter(fh.readline())
    with csv_errors(path):
        names = [str(c) for c in pd.read_csv(path, sep=sep, nrows=0, skipinitialspace=True).columns]
    check_header(path, sep)
    return names


def _floats_as_text_gives(column: pd.Series) -> bool:
    """Whether pandas' parser's floats of a column are what :func:`pandas.to_numeric` gives for its text.

    Both read a decimal number with the same routine (``precise_xstrtod``),
    but ``to_numeric`` reads a column of only integers as integers (exact:
    ``-0`` is 0.0, and 2**53 + 1 may round otherwise); the parser also reads a
    chunk of only ``True`` / ``False`` as 1.0 / 0.0, which ``to_numeric``
    refuses, and ``inf``, ``1e400`` as infinite, which the text path reports
    with its own words. So: every value finite and at least one that is not
    an integer (then neither reading was of integers only). Zeros (-0.0
    among them) and magnitudes from 2**53 on, where the two readings differ
    for integers, go to the text path too: they agreed in every mixed column
    tried, but are rare enough in measurements not to rest on that; and a
    zero may be written ``1e-400``, which the text path refuses (a float
    cannot hold it) and the float pass read as 0.
    """
    if column.dtype != np.float64:
        return False
    values = column.to_numpy()
    with np.errstate(invalid="ignore"):
        return bool(
            len(values)
            and np.isfinite(values).all()
            and not (values == 0).any()
            and (np.abs(values) < 2.0**53).all()
            and (values != np.floor(values)).any()
        )


def _long_csv_parts(
    path: str | Path, rows_per_part: int | None, *, float_value: str | None = None, skip: int = 0
) -> Iterator[Dataset]:
    """:func:`long_csv_parts`; ``float_value``: the header's name of the value column to parse as floats.

    ``skip``: the first parts are only counted (a text pass after a float pass).
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        sep = sniff_delimiter(fh.readline())
    options: dict[str, Any] = {"dtype": str}
    if float_value is not None:
        # low_memory=False: pandas converts a chunk's column in one piece, so
        # a column of True / False is read as floats only as a whole chunk
        # (found by _floats_as_text_gives), never as a stretch of one.
        options = {"dtype": defaultdict(lambda: str, {float_value: "float64"}), "low_memory": False}
    with csv_errors(path):
        reader = pd.read_csv(
            path, sep=sep, keep_default_na=False, skipinitialspace=True, chunksize=rows_per_part or STREAM_ROWS,
            **options,
        )
        carry: pd.DataFrame | None = None
        carry_rows = np.empty(0, dtype=np.int64)
        closed: set[str] = set()
        next_row = 2  # the header is line 1
        pending, pending_rows = pd.DataFrame(), np.empty(0, dtype=np.int64)  # rows of empty cells, for now last
        day_first: bool | None = None  # the file's slashed dates are day first (told at the first part)
        any_rows = False
        parts = 0
        while True:
            try:
                chunk = next(reader)
            except StopIteration:
                break
            except ValueError:
                if float_value is None:
                    raise
                raise _ValuesAsText() from None  # a cell the float parser refuses; the text pass names it
            # a cell more than the header on the first row: pandas made the first column the index
            chunk = without_implicit_index(chunk, path, rows=np.arange(next_row, next_row + len(chunk)), sep=sep)
            chunk.columns = [str(c).strip() for c in chunk.columns]
            missing = [c for c in REQUIRED_COLUMNS if c not in chunk.columns]
            if missing:
                raise InputError(path, 1, f"missing column {', '.join(map(repr, missing))} (found: {', '.join(chunk.columns)})")
            if not len(chunk):  # a header without rows: refused below, not an IndexError here
                continue
            if day_first is None and "timestamp" in chunk.columns:
                day_first = _slashed_day_first(path, sep, chunk["timestamp"])
            rows = np.arange(next_row, next_row + len(chunk))
            next_row += len(chunk)
            # Rows of empty cells only (``;;;``) wait: at the end of the file they are dropped, as
            # load() drops them; followed by data, they are its rows and refused there.
            if len(pending):
                chunk = pd.concat([pending, chunk], ignore_index=True)
                rows = np.concatenate([pending_rows, rows])
                pending, pending_rows = chunk.iloc[:0], rows[:0]
            if tail := trailing_blank_rows(chunk):
                cut = len(chunk) - tail
                pending, pending_rows = chunk.iloc[cut:].reset_index(drop=True), rows[cut:]
                chunk, rows = chunk.iloc[:cut], rows[:cut]
                if not cut:
                    continue
            if float_value is not None and not _floats_as_text_gives(chunk["value"]):
                raise _ValuesAsText()
            any_rows = True
            if carry is not None and len(carry):
                chunk = pd.concat([carry, chunk], ignore_index=True)
                rows = np.concatenate([carry_rows, rows])
            ids = chunk["series_id"]
            if closed and not closed.isdisjoint(ids.unique().tolist()):
                raise SeriesNotGrouped()
            # The last series may go on in the next chunk. (Its id without
            # trailing NULs, as numpy compared it before: such a series is not
            # carried, comes back and is read by the whole-file path.)
            open_ = (ids == ids.iloc[-1].rstrip("\x00")).to_numpy(dtype=bool)
            k = len(open_) - int(np.argmin(open_[::-1])) if not open_.all() else 0
            if open_[:k].any():  # the last series also earlier in the chunk
                done, carry, done_rows, carry_rows = chunk[~open_], chunk[open_], rows[~open_], rows[open_]
            else:  # as a rule it is the chunk's tail: slices, no copies
                done, carry, done_rows, carry_rows = chunk.iloc[:k], chunk.iloc[k:], rows[:k], rows[k:]
            if len(done):
                closed.update(done["series_id"].unique().tolist())
                parts += 1
                if parts > skip:
                    yield _part(done.reset_index(drop=True), done_rows, path, float_value, day_first)
            carry = carry.reset_index(drop=True)
    if not any_rows:
        raise InputError(path, None, "file has a header but no data rows")
    if carry is not None and len(carry) and parts + 1 > skip:
        yield _part(carry, carry_rows, path, float_value, day_first)


def _slashed_day_first(path: str | Path, sep: str, first: pd.Series) -> bool:
    """Whether the file's slashed dates are day first, when its first part's timestamps are slashed dates.

    load() tells it from the whole column (:func:`triage.core.timestamps.slashed_day_first`); a part
    without a day over 12 would read its dates month first. Only such files (spreadsheet exports)
    have their timestamp column read once more.
    """
    if not first.astype(str).str.strip().str.match(r"\d{1,2}/\d{1,2}/\d{2}").any():
        return False
    try:
        with csv_errors(path):
            column = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True,
                                 usecols=lambda c: str(c).strip() == "timestamp")
    except (InputError, ValueError):
        return False  # the parts' own reading names what is wrong
    return column.shape[1] == 1 and timestamps.slashed_day_first(column.iloc[:, 0])


def _part(frame: pd.DataFrame, rows: np.ndarray, path: str | Path, float_value: str | None,
          day_first: bool | None = None) -> Dataset:
    if float_value is not None and not _floats_as_text_gives(frame["value"]):
        raise _ValuesAsText()
    if day_first and "timestamp" in frame.columns:
        # The file's slashed dates are day first (one of them cannot be month first), maybe in another
        # part: read this part's so too, as load() reads the whole column; a bad or missing one is left
        # to the validator to name.
        instants, missing, bad = timestamps.parse_column(frame["timestamp"], slashed_day_first=True)
        if not missing.any() and not bad.any():
            frame = frame.assign(timestamp=instants)
    with locale_hints(frame["value"], rows):
        return dataset_from_long(frame, rows, path)
