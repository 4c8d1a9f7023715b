"""Telling a file's layout from its name and first line: data files and candidate files.

One family of sniffers, so that every reader of user files agrees on how a
header is read (UTF-8, blank = empty file, comma-separated names, surrounding
quotes dropped) and on the errors that come from it
(:class:`~triage.core.errors.InputError`, header = line 1).

* :func:`data_layout` -- a performance history for :func:`triage.loaders.load`:
  ``long``, ``mongodb``, ``otava``, ``json`` (a list of numbers), ``jsonl``
  (JSON lines of records, what ``triage watch`` reads), ``asv``
  (a results directory), ``gab`` (github-action-benchmark ``data.js``),
  ``perfherder`` (performance-data JSON), ``jmh`` (JMH's ``-rf json``
  results), ``gbench`` (one Google Benchmark run's JSON), ``pytest-benchmark`` (a
  ``.benchmarks`` folder, one machine folder or one run's JSON), ``otava-dir`` (a directory of
  Otava CSVs) or ``otava-config`` (Otava's YAML test config). Compressed
  files are decompressed before sniffing (:mod:`triage.readers.source`).
* :func:`candidate_layout` -- detector output for
  :func:`triage.candidate_files.read_candidates`: ``candidates``,
  ``otava-json``, ``otava-csv``, ``perfherder-json`` or ``perfherder-csv``.
  A CSV's header is split at its sniffed delimiter (``,``, ``;``, tab or
  ``|``; :func:`csv_delimiter`), as a data file's is.

The column vocabularies the sniffers look for are defined here and used by the
readers too.
"""

from __future__ import annotations

import json
from pathlib import Path

from triage.core.errors import InputError
from triage.core.json_input import overlong_integer
from triage.readers.asv import is_asv_results
from triage.readers.gab import is_gab
from triage.readers.gbench import is_gbench
from triage.readers.jmh import is_jmh, result_files, steady_command
from triage.readers.otava import CSV_SUFFIXES, sniff_delimiter
from triage.readers.perfherder import is_perfherder_data
from triage.readers.pytest_benchmark import is_pytest_benchmark, is_pytest_benchmark_dir
from triage.readers.source import not_utf8

#: The ICPE 2022 data-challenge demo layout's columns (``;``-separated).
MONGODB_COLUMNS: tuple[str, ...] = ("Value", "MongoDB.Label")
#: Columns that name a Perfherder series in a flat alerts export.
SIGNATURE_COLUMNS: tuple[str, ...] = ("signature_hash", "series_signature", "signature_id", "signature")
#: Fields of an Otava change (any one marks a flat Otava report).
OTAVA_FIELDS: tuple[str, ...] = ("forward_change_percent", "magnitude", "mean_before", "mean_after", "pvalue")
#: Columns of the long layout (and of triage's candidate files) that an Otava CSV does not have.
LONG_ONLY_COLUMNS: tuple[str, ...] = ("timestamp", "label", "true_change", "truth_label", "index")
#: Squeezed names (see ``_squeezed``) of a misnamed series column.
SERIES_LIKE: tuple[str, ...] = ("series", "seriesid", "seriesname")


def read_header(path: Path) -> str:
    """The first line of a text file; :class:`InputError` when it is not UTF-8 or is blank.

    A UTF-8 byte-order mark (Excel and PowerShell write one) is dropped: left
    on, it glues itself to the first column name (``\ufeffseries_id``), and
    pandas, which the readers use, drops it too.
    """
    try:
        with open(path, encoding="utf-8-sig") as fh:
            header = fh.readline()
    except UnicodeDecodeError:
        # readline decodes a whole buffer: the bad byte may be lines further on.
        raise not_utf8(path) from None
    if not header.strip():
        raise InputError(path, None, "file is empty")
    if header.strip().strip('"').lower().startswith("sep=") and len(header.strip().strip('"')) <= 5:
        # Excel's separator hint, written by tools that export for Excel: no reader here takes it
        raise InputError(path, 1, f"the first line {header.strip()!r} is Excel's separator hint, not a header: "
                         "delete that line (the separator is told from the header)")
    return header


def header_columns(header: str, sep: str = ",") -> list[str]:
    """Column names of a header line split at ``sep``, stripped of blanks and quotes."""
    return [c.strip().strip('"') for c in header.strip().split(sep)]


def csv_delimiter(path: Path) -> str:
    """The delimiter of a CSV file (``,``, ``;``, tab or ``|``), sniffed from its header as the data readers do.

    :class:`InputError` as :func:`read_header` raises it.
    """
    return sniff_delimiter(read_header(path))


def starts_like_json(path: Path) -> bool:
    """An object or array first: JSON whatever the name (stdin, a decompressed copy).

    No CSV header starts with ``{`` or ``[``.
    """
    with open(path, "rb") as fh:
        head = fh.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] in (b"{", b"[")


def is_record(payload: object) -> bool:
    """One result as `triage watch` reads it: an object with a series (``series_id`` or ``series``) and a commit."""
    return isinstance(payload, dict) and ("series_id" in payload or "series" in payload) and "commit" in payload


def _first_line_is_record(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return is_record(json.loads(line.lstrip("\ufeff")))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return False


def data_layout(path: Path) -> str:
    """The layout of a data file or directory, from its kind, suffix and first line or content."""
    if path.is_dir():
        if is_asv_results(path):
            return "asv"
        if is_pytest_benchmark_dir(path):
            return "pytest-benchmark"
        if any(p.name.lower().endswith(CSV_SUFFIXES) for p in path.iterdir()):
            return "otava-dir"
        builds = result_files(path)
        if builds is not None:
            # Each file is one build (one commit): the list of layouts named none of them, nor what reads them.
            raise InputError(path, None, f"a directory of {builds[0]} result files, one build each: cut them into "
                             f"a history with {steady_command(path, builds[1])} (one file per commit, in history order), "
                             "then give --data long.csv")
        raise InputError(path, None, "cannot tell the layout of this directory; expected an asv results "
                         "directory, pytest-benchmark's .benchmarks (or one machine folder of it), "
                         "a directory of Otava CSVs or one written by `triage synth` (history.parquet or history.csv); "
                         f"JMH or Google Benchmark result files, one per build, go through {steady_command(path, '*.json')} first")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "long"
    if suffix in (".yaml", ".yml"):
        return "otava-config"
    if suffix == ".js" or is_gab(path):
        return "gab"
    if suffix == ".json" or starts_like_json(path):
        try:
            payload = json.loads(path.read_text(encoding="utf-8-sig"))  # a Windows tool's BOM, as everywhere
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            # JSON lines of records (what `triage watch` reads) are no one JSON document.
            return "jsonl" if _first_line_is_record(path) else "json"  # the reader reports the exact problem
        except ValueError:  # an integer of more digits than Python converts, in any layout
            raise overlong_integer(path, path.read_text(encoding="utf-8-sig")) from None
        if is_record(payload):
            return "jsonl"  # a single record
        if isinstance(payload, dict) and "entries" in payload:
            return "gab"
        if is_pytest_benchmark(payload):
            return "pytest-benchmark"
        if is_perfherder_data(payload):
            return "perfherder"
        if is_jmh(payload):
            return "jmh"
        if is_gbench(payload):
            return "gbench"
        _refuse_a_part_of_a_history(path, payload)
        return "json"
    header = read_header(path)
    if ";" in header and all(col in header for col in MONGODB_COLUMNS):
        return "mongodb"
    columns = header_columns(header, sniff_delimiter(header))
    if "series_id" in columns:
        return "long"
    _refuse_long_without_series_id(path, columns)
    if "commit" in columns or "time" in columns:
        return "otava"
    raise InputError(
        path,
        1,
        "cannot tell the layout from the header "
        f"({header.strip()[:80]!r}); expected a long layout (series_id, commit, value, ...), "
        "the MongoDB demo layout or an Otava CSV (time, commit, metrics...)",
    )


def _refuse_a_part_of_a_history(path: Path, payload: object) -> None:
    """:class:`InputError` for a JSON file that is one piece of a history the tool reads whole.

    One asv result file (or its ``machine.json`` / ``benchmarks.json``) was
    told "expected a non-empty JSON list of numbers", the plain JSON layout's words.
    """
    if not isinstance(payload, dict):
        return
    if {"commit_hash", "results"} <= payload.keys() or "machine" in payload and "version" in payload:
        raise InputError(path, None, "is one file of an asv results directory: give --data the results directory "
                         "(the folder of machine folders, each with machine.json)")
    others = [v for k, v in payload.items() if k != "version"]
    if "version" in payload and others and all(isinstance(v, dict) and "name" in v for v in others):
        raise InputError(path, None, "is asv's benchmarks.json: give --data the results directory beside it")


def _refuse_long_without_series_id(path: Path, columns: list[str]) -> None:
    """:class:`InputError` for a long-layout header whose ``series_id`` column is missing or misnamed.

    Such a file has a ``commit`` column, so it would otherwise be read as an
    Otava CSV: every series merged into one per metric and its labels dropped
    (a text column), without a word. It is told from an Otava CSV by what
    Otava never has: a ``value`` column beside a column only the long layout
    (or triage's candidate files) uses, or a column named like a series id;
    and by what Otava always has but the long layout does not, ``time``.
    """
    if "time" in columns or "commit" not in columns or "value" not in columns:
        return
    series_like = [c for c in columns if _squeezed(c) in SERIES_LIKE]
    long_only = [c for c in columns if c in LONG_ONLY_COLUMNS]
    if not series_like and not long_only:
        return  # e.g. ``commit,value``: an Otava CSV with one metric named value
    found = ", ".join(columns)
    if series_like:
        problem = f"column {series_like[0]!r} looks like the series column; the long layout needs it named 'series_id'"
    else:
        problem = "no 'series_id' column; the long layout needs one to tell its series apart"
    raise InputError(path, 1, f"{problem} (found: {found}); for an Otava CSV pass --layout otava")


def _squeezed(name: str) -> str:
    """A column name lower-cased without separators: ``Series_ID``, ``series id`` -> ``seriesid``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def candidate_layout(path: Path) -> str:
    """The layout of a candidate file: JSON by its content, CSV by its header line."""
    if path.suffix.lower() == ".json":
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            return "perfherder-json"  # the reader reports the exact problem
        except ValueError:  # an integer of more digits than Python converts
            raise overlong_integer(path, path.read_text(encoding="utf-8")) from None
        if isinstance(payload, dict) and ("results" in payload or "alerts" in payload):
            return "perfherder-json"
        if isinstance(payload, list) and (not payload or isinstance(payload[0], dict) and "alerts" in payload[0]):
            return "perfherder-json"
        return "otava-json"
    header = read_header(path)
    columns = set(header_columns(header, sniff_delimiter(header)))
    if columns & set(SIGNATURE_COLUMNS) and "revision" in columns:
        return "perfherder-csv"
    if "metric" in columns and columns & set(OTAVA_FIELDS):
        return "otava-csv"
    if "series_id" in columns:
        return "candidates"
    raise InputError(
        path,
        1,
        f"cannot tell the candidate layout from the header ({header.strip()[:80]!r}); expected "
        "series_id + commit/index (triage candidates), an Otava report or a Perfherder alerts export",
    )
