"""Apache Otava's inputs: its CSV files, a directory of them, and its YAML test config.

CSV (Otava's ``type: csv`` tests)
    A time column (``time``), optionally a ``commit`` column, then one column
    per metric; each metric becomes a series named after its column. Empty
    and ``nan`` cells are skipped (the metric was not measured on that row;
    one warning counts the ``nan`` ones and names a column of no number). The
    delimiter is sniffed from the header (``,``, ``;``, tab or ``|``, the
    most frequent outside quotes).
    Without a commit column each row's time is its commit id (Otava itself
    keys rows by time). A ``branch`` column splits every metric by branch:
    series ``<metric>@<branch>`` (a row whose branch cell is empty: ``<metric>``);
    ``branch="main"`` keeps only that branch's
    rows (series named by metric alone).
directory
    Every ``*.csv`` (also ``.csv.gz`` / ``.csv.zst``) in it, one Otava test
    per file: series ``<file stem>/<metric>``.
YAML test config (``otava.yaml``)
    ``tests: {name: {type: csv, file, time_column, metrics, attributes,
    csv_options: {delimiter, quote_char}, inherit}}``: each csv test is read
    with its options (``delimiter`` ``,`` when not given, as Otava reads it),
    series ``<test>/<metric>``. ``metrics`` is a list of column names or a
    mapping ``name: {column, direction, scale}``; ``direction: 1`` (higher
    is better) or ``-1`` (lower is better) is recorded on the history;
    ``scale`` multiplies the metric's values. ``attributes`` lists columns
    that are no metrics (without ``metrics`` every other numeric column is
    one); the commit id is the first attribute named ``commit``,
    ``revision``, ``rev``, ``sha``, ``git_sha``, ``commit_sha``, ``hash``,
    ``git_hash`` or ``changeset`` (any case), else the ``commit`` column,
    else the time (an attribute such as ``version`` is shared by many rows:
    as the key it would merge them). ``inherit`` names a template of the
    top-level ``templates:`` (or a list, applied in order): its settings,
    the test's own over them (``metrics`` and ``csv_options`` merged entry
    by entry). ``${VAR}`` in a setting is the environment variable (one not
    set is an error). A setting not named here is warned about and ignored.
    ``file`` is relative to the config's directory (or the working
    directory). Tests of other types (graphite, postgres, bigquery) read
    from servers and are skipped with a warning.
"""

from __future__ import annotations

import csv
import math
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.csv_lines import csv_record_lines
from triage.core.errors import InputError
from triage.core.history import Dataset, History, Trim, dataset_from_long
from triage.readers.source import (
    display_name,
    header_names,
    locale_hints,
    looks_numeric,
    nan_cells,
    not_utf8,
    plain_file,
    read_csv_text,
)

DELIMITERS = (",", ";", "\t", "|")
BRANCH_COLUMN = "branch"
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.zst", ".csv.gzip", ".csv.zstd")


def sniff_delimiter(header: str, quotechar: str = '"') -> str:
    """The delimiter of a header line: the most frequent of ``,;<tab>|`` outside quotes (``,`` on a tie or when none).

    A character inside a quoted name is part of the name: ``"time","commit","solver(False;True;iso;big)"``
    is comma-separated (counting every character, its three ``;`` won over two ``,``).
    """
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in header:
        if ch == quotechar:
            quoted = not quoted  # a doubled quote inside a quoted name toggles twice
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def split_header(header: str, sep: str, quotechar: str = '"') -> list[str]:
    """A header line's column names, split at ``sep`` outside quotes, stripped of blanks and quotes."""
    cells = next(csv.reader([header.lstrip("\ufeff").rstrip("\r\n")], delimiter=sep, quotechar=quotechar), [])
    return [c.strip().strip(quotechar).strip() for c in cells]


def _header(path: Path) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline()
    except UnicodeDecodeError:
        # readline decodes a whole buffer: the bad byte may be lines further on.
        raise not_utf8(path) from None


def otava_frame(
    path: Path,
    *,
    time_column: str = "time",
    commit_column: str = "commit",
    metrics: Mapping[str, str] | list[str] | None = None,
    attributes: list[str] | None = None,
    scales: Mapping[str, float] | None = None,
    branch: str | None = None,
    delimiter: str | None = None,
    quotechar: str = '"',
    prefix: str = "",
    time_required: bool = False,
) -> tuple[pd.DataFrame, np.ndarray]:
    """One Otava CSV as a long frame and its file line numbers.

    ``metrics`` maps series names to columns (a list: names = columns); by
    default every column other than time, commit and branch whose non-empty
    cells are mostly numbers (text attributes and columns without a name,
    such as the index ``DataFrame.to_csv`` writes, are left out; a stray
    non-number in a metric column is an error naming its row).
    ``time_required``: the time column was named (a config's ``time_column``),
    so a file without it is an error rather than read without timestamps.
    ``attributes``: a config's attribute columns, never metrics; the commit id
    is the first named like one (:data:`COMMIT_ATTRIBUTES`), else the
    ``commit_column``. ``scales``: metric name -> factor its values are
    multiplied by (a config's ``scale``).
    """
    header = _header(path)
    sep = delimiter or sniff_delimiter(header, quotechar)
    frame = read_csv_text(path, sep=sep, quotechar=quotechar)
    if attributes is not None:
        absent = [a for a in attributes if a not in frame.columns]
        if absent:
            raise InputError(path, 1, f"missing column {', '.join(map(repr, absent))}, of the config's attributes "
                             f"(found: {', '.join(frame.columns)})")
        commit_column = next((a for a in attributes if a.lower() in COMMIT_ATTRIBUTES), commit_column)
    has_time = time_column in frame.columns
    has_commit = commit_column in frame.columns
    sniffed = sniff_delimiter(header, quotechar)
    hint = (f"; the header looks {sniffed!r}-separated but was read at {sep!r}, the config's csv_options "
            f"delimiter (Otava's default is ','): set csv_options: {{delimiter: {sniffed!r}}}"
            if delimiter is not None and sniffed != sep and len(frame.columns) == 1 else "")
    if time_required and not has_time:
        raise InputError(path, 1, f"missing column {time_column!r}, the config's time_column "
                         f"(found: {', '.join(frame.columns)}){hint}")
    if not has_time and not has_commit:
        raise InputError(
            path, 1,
            f"missing column {time_column!r} or {commit_column!r} (found: {', '.join(frame.columns)}); "
            f"delimiter read as {sep!r}{hint}",
        )
    has_branch = BRANCH_COLUMN in frame.columns
    lines = csv_record_lines(path, len(frame), sep, quotechar)  # header = line 1
    if branch is not None:
        if not has_branch:
            raise InputError(path, 1, f"--branch {branch!r} given but the file has no {BRANCH_COLUMN!r} column")
        keep = (frame[BRANCH_COLUMN].str.strip() == branch).to_numpy()
        if not keep.any():
            known = ", ".join(sorted(set(frame[BRANCH_COLUMN].str.strip())))
            raise InputError(path, None, f"no rows of branch {branch!r} (branches: {known})")
        frame, lines = frame.loc[keep].reset_index(drop=True), lines[keep]
    reserved = {time_column, commit_column, BRANCH_COLUMN, *(attributes or ())}
    only_nan: list[str] = []  # columns of missing values alone, with some nan: left out, but said
    if metrics is None:
        # A column without a name is no metric: the row numbers pandas writes first (``df.to_csv()``
        # with its index, header ``,time,commit,...``) became a series 'Unnamed: 0' rising 0, 1, 2...
        written = header_names(path, sep, quotechar=quotechar)
        unnamed = {c for c, name in zip(frame.columns, written, strict=False) if not name}
        columns = {c: c for c in frame.columns
                   if c not in reserved and c not in unnamed and looks_numeric(frame[c], sep)}
        only_nan = [c for c in frame.columns if c not in reserved and c not in unnamed and c not in columns
                    and _missing(frame[c]).all() and nan_cells(frame[c]).any()]
    elif isinstance(metrics, Mapping):
        columns = dict(metrics)
    else:
        columns = {m: m for m in metrics}
    unknown = [c for c in columns.values() if c not in frame.columns]
    if unknown:
        raise InputError(path, 1, f"missing metric column {', '.join(map(repr, unknown))} (found: {', '.join(frame.columns)})")
    if not columns:
        if only_nan:
            raise InputError(path, 1, f"no numeric metric column: {', '.join(map(repr, only_nan))} "
                             f"{'holds' if len(only_nan) == 1 else 'hold'} only nan and empty cells (missing values)")
        raise InputError(path, 1, "no numeric metric column (expected time, commit, then metric columns)")
    commit = frame[commit_column] if has_commit else frame[time_column]
    split_branches = has_branch and branch is None
    parts = []
    nans: dict[str, int] = {}  # column -> its nan cells, read as missing values
    for name, column in columns.items():
        col = frame[column].str.strip()
        keep = ~_missing(col)
        if (nan := int(nan_cells(col).sum())) and column not in nans:
            nans[column] = nan
            if not keep.any():
                only_nan.append(column)
        if scales and name in scales:
            numbers = pd.to_numeric(col, errors="coerce")
            # A cell that is no number stays as written: the validator refuses it at its row, as unscaled.
            col = col.where(numbers.isna(), (numbers * scales[name]).map(repr))
        series = f"{prefix}{name}"
        sid: np.ndarray | str
        if split_branches:
            # A row with no branch is the metric's own (``<metric>``, as Otava's candidates of it
            # name it), not a branch named "" (``<metric>@``, which no candidate matched).
            on = frame.loc[keep, BRANCH_COLUMN].str.strip()
            sid = np.where(on == "", series, series + "@" + on)
        else:
            sid = series
        parts.append(
            pd.DataFrame(
                {
                    "series_id": sid,
                    "commit": commit[keep].to_numpy(),
                    "timestamp": frame.loc[keep, time_column].to_numpy() if has_time else "",
                    "value": col[keep].to_numpy(),
                    "_row": lines[keep],
                }
            )
        )
    for column in only_nan:
        nans.setdefault(column, int(nan_cells(frame[column]).sum()))
    if nans:
        total = sum(nans.values())
        counts = ", ".join(f"{c!r}: {n}" for c, n in nans.items())
        empty = (f"; {', '.join(map(repr, only_nan))} {'has' if len(only_nan) == 1 else 'have'} no number at all, "
                 "so no series" if only_nan else "")
        warnings.warn(f"{display_name(path)}: {total} 'nan' cell{'s' if total != 1 else ''} read as missing values, "
                      f"skipped as empty cells are (column{'s' if len(nans) > 1 else ''} {counts}){empty}",
                      stacklevel=3)
    long = pd.concat(parts, ignore_index=True)
    rows = long.pop("_row").to_numpy()
    return long, rows


def _missing(col: pd.Series) -> np.ndarray:
    """Cells that are missing values: empty, or ``nan`` (:func:`~triage.readers.source.nan_cells`)."""
    return (col.astype(str).str.strip() == "").to_numpy() | nan_cells(col)


def read_otava_csv(
    path: str | Path,
    *,
    time_column: str = "time",
    commit_column: str = "commit",
    metrics: list[str] | None = None,
    branch: str | None = None,
    aggregate: str = "mean",
    sort_timestamps: bool = False,
    trim: Trim = None,
) -> Dataset:
    """Read one Otava CSV: one series per metric column (per branch, see the module docstring)."""
    path = Path(path)
    long, rows = otava_frame(path, time_column=time_column, commit_column=commit_column, metrics=metrics, branch=branch)
    with locale_hints(long["value"], rows):
        return dataset_from_long(long, rows, path, aggregate=aggregate, sort_timestamps=sort_timestamps, trim=trim)


def read_otava_dir(
    path: str | Path, *, branch: str | None = None, aggregate: str = "mean", sort_timestamps: bool = False,
    trim: Trim = None,
) -> Dataset:
    """Every Otava CSV of a directory, series ``<file stem>/<metric>``."""
    path = Path(path)
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(CSV_SUFFIXES))
    if not files:
        raise InputError(path, None, "directory holds no Otava CSV file (*.csv)")
    histories: list[History] = []
    for file in files:
        stem = file.name[: file.name.lower().rindex(".csv")]
        with plain_file(file) as plain:
            _refuse_long_layout(plain)
            long, rows = otava_frame(plain, branch=branch, prefix=f"{stem}/")
            with locale_hints(long["value"], rows):
                histories.extend(dataset_from_long(long, rows, plain, aggregate=aggregate,
                                                   sort_timestamps=sort_timestamps, trim=trim))
    return Dataset(histories, source=str(path))


def _refuse_long_layout(path: Path) -> None:
    """A long-layout CSV (a ``series_id`` column) among a directory's Otava CSVs is an error.

    Read as Otava's, its series ids would be a text attribute left out and
    every series' values one metric (``<stem>/value``), averaged per commit
    across series, without a word.
    """
    header = _header(path)
    columns = split_header(header, sniff_delimiter(header))
    if "series_id" in columns:
        raise InputError(path, 1, "a long-layout CSV (it has a series_id column), not an Otava CSV: a directory "
                         "is read as Otava CSVs, one test per file; pass this file on its own as --data")


def read_otava_config(
    path: str | Path, *, branch: str | None = None, aggregate: str = "mean", sort_timestamps: bool = False,
    trim: Trim = None,
) -> Dataset:
    """The csv tests of an Otava YAML config, series ``<test>/<metric>`` (the module docstring says what is read)."""
    import yaml

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # PyYAML's own text runs over lines (the context, a copy of the line, a caret): its problem says it.
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        where = f" (column {mark.column + 1})" if mark else ""
        raise InputError(path, mark.line + 1 if mark else None, f"not valid YAML: {problem}{where}") from None
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    tests = config.get("tests") if isinstance(config, dict) else None
    if not isinstance(tests, dict) or not tests:
        raise InputError(path, None, "no 'tests:' mapping (expected an Otava config with csv tests)")
    templates = config.get("templates") or {}
    if not isinstance(templates, dict):
        raise InputError(path, None, "'templates:' is not a mapping of template names to test settings")
    histories: list[History] = []
    for name, own in tests.items():
        if not isinstance(own, dict):
            raise InputError(path, None, f"test {name!r} is not a mapping")
        test = _expand_env(_inherited(own, templates, path, str(name)), path, f"test {name!r}")
        assert isinstance(test, dict)  # a mapping's expansion is a mapping
        kind = test.get("type", "csv")
        if kind != "csv":
            warnings.warn(f"{display_name(path)}: test {name!r} of type {kind!r} reads a server; skipped", stacklevel=2)
            continue
        _warn_unknown(test, TEST_KEYS, path, f"test {name!r}", "an Otava csv test setting")
        if "file" not in test:
            raise InputError(path, None, f"test {name!r} has no 'file'")
        file = Path(str(test["file"]))
        if not file.is_absolute() and not file.exists():
            file = path.parent / file
        if not file.exists():  # plain_file's "tests/missing.csv: no such file" named neither config nor test
            given = str(test["file"])
            where = "" if Path(given).is_absolute() else " (looked for from the working directory and the config's)"
            raise InputError(path, None, f"test {name!r}: file {given!r} does not exist{where}")
        if file.is_dir():  # read as a file it was "error: .: Is a directory", naming neither config nor test
            raise InputError(path, None, f"test {name!r}: file {str(test['file'])!r} is a directory, not a CSV")
        metrics, directions, scales = _config_metrics(test.get("metrics"), path, str(name))
        attributes = _config_attributes(test.get("attributes"), path, str(name))
        options = test.get("csv_options") or {}
        if not isinstance(options, dict):
            raise InputError(path, None, f"test {name!r}: csv_options is not a mapping (delimiter, quote_char)")
        _warn_unknown(options, CSV_OPTION_KEYS, path, f"test {name!r}: csv_options", "a csv option")
        for key in ("delimiter", "quote_char"):
            if options.get(key) is not None and not (isinstance(options[key], str) and len(options[key]) == 1):
                raise InputError(path, None, f"test {name!r}: csv_options {key} {options[key]!r} is not one character")
        with plain_file(file) as plain:
            long, rows = otava_frame(
                plain,
                time_column=str(test.get("time_column", "time")),
                metrics=metrics,
                attributes=attributes,
                scales=scales,
                branch=branch,
                delimiter=options.get("delimiter") or ",",  # Otava's default
                quotechar=options.get("quote_char", '"'),
                prefix=f"{name}/",
                time_required="time_column" in test,
            )
            higher = {f"{name}/{m}": d for m, d in directions.items()}
            with locale_hints(long["value"], rows):
                histories.extend(
                    dataset_from_long(long, rows, plain, aggregate=aggregate, sort_timestamps=sort_timestamps,
                                      trim=trim, higher_is_better=higher)
                )
    if not histories:
        raise InputError(path, None, "no csv test in the config (only csv tests can be read from files)")
    return Dataset(histories, source=str(path))


#: The settings of an Otava csv test that are read; any other is warned about, naming it.
TEST_KEYS = ("type", "file", "time_column", "attributes", "metrics", "csv_options", "inherit")
#: The settings of one metric of a csv test.
METRIC_KEYS = ("column", "direction", "scale")
CSV_OPTION_KEYS = ("delimiter", "quote_char")
#: Attribute names (compared lower-case) that hold the commit id; see the module docstring.
COMMIT_ATTRIBUTES = ("commit", "revision", "rev", "sha", "git_sha", "commit_sha", "hash", "git_hash", "changeset")
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _warn_unknown(settings: Mapping, known: tuple[str, ...], path: Path, where: str, what: str) -> None:
    for key in settings:
        if key not in known:
            warnings.warn(f"{display_name(path)}: {where}: {key!r} is not {what} triage reads ({', '.join(known)}); "
                          "ignored", stacklevel=3)


def _inherited(test: dict, templates: dict, path: Path, name: str) -> dict:
    """A test's settings over those of the templates it names in ``inherit`` (a name or a list, applied in order).

    The test's own settings win; ``metrics`` and ``csv_options`` are merged
    entry by entry (a template's metric the test does not name is kept).
    """
    names = test.get("inherit")
    if names is None:
        return test
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(path, None, f"test {name!r}: inherit must name a template or a list of templates")
    merged: dict = {}
    for layer_name in [*names, None]:
        if layer_name is None:
            layer = {k: v for k, v in test.items() if k != "inherit"}
        elif layer_name not in templates:
            known = ", ".join(map(repr, templates)) or "none"
            raise InputError(path, None, f"test {name!r} inherits template {layer_name!r}, which 'templates:' does "
                             f"not define (templates: {known})")
        elif not isinstance(templates[layer_name], dict):
            raise InputError(path, None, f"template {layer_name!r} is not a mapping of test settings")
        else:
            layer = templates[layer_name]
        for key, value in layer.items():
            if key == "metrics" and "metrics" in merged:
                merged[key] = {**_metric_mapping(merged[key]), **_metric_mapping(value)}
            elif key == "csv_options" and isinstance(merged.get(key), dict) and isinstance(value, dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    return merged


def _metric_mapping(raw: object) -> dict:
    """``metrics`` as a mapping (a list of names: each with no settings), to merge a template's with a test's."""
    if isinstance(raw, list):
        return dict.fromkeys(raw)
    return raw if isinstance(raw, dict) else {}


def _expand_env(value: object, path: Path, where: str) -> object:
    """``${VAR}`` in every text of a test's settings replaced by the environment variable, as Otava's config
    loader does; a variable that is not set is an error naming it."""
    if isinstance(value, dict):
        return {k: _expand_env(v, path, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, path, where) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def variable(match: re.Match) -> str:
        if match.group(1) not in os.environ:
            raise InputError(path, None, f"{where}: {value!r} names the environment variable {match.group(1)}, "
                             "which is not set")
        return os.environ[match.group(1)]

    return _ENV_VAR.sub(variable, value)


def _config_attributes(raw: object, path: Path, test: str) -> list[str] | None:
    """A test's ``attributes``: column names; None when not given."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(a, str | int) for a in raw):
        raise InputError(path, None, f"test {test!r}: attributes must be a list of column names")
    return [str(a) for a in raw]


def _config_metrics(
    raw: object, path: Path, test: str
) -> tuple[dict[str, str] | None, dict[str, bool | None], dict[str, float]]:
    """Metric name -> column, name -> higher is better, and name -> scale (when not 1), from a test's ``metrics``."""
    if raw is None:
        return None, {}, {}
    if isinstance(raw, list):
        return {str(m): str(m) for m in raw}, {}, {}
    if not isinstance(raw, dict):
        raise InputError(path, None, f"test {test!r}: metrics must be a list or a mapping")
    columns: dict[str, str] = {}
    directions: dict[str, bool | None] = {}
    scales: dict[str, float] = {}
    for name, spec in raw.items():
        spec = spec if isinstance(spec, dict) else {}
        _warn_unknown(spec, METRIC_KEYS, path, f"test {test!r}, metric {name!r}", "a metric setting")
        columns[str(name)] = str(spec.get("column", name))
        direction = spec.get("direction")
        if direction not in (None, 1, -1):
            raise InputError(path, None, f"test {test!r}, metric {name!r}: direction must be 1 or -1")
        directions[str(name)] = None if direction is None else direction == 1
        scale = spec.get("scale", 1)
        if isinstance(scale, str):  # YAML 1.1 reads 1e-6 (no point) as text
            try:
                scale = float(scale)
            except ValueError:
                pass
        if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale) or scale == 0:
            raise InputError(path, None, f"test {test!r}, metric {name!r}: scale {scale!r} is not a non-zero number")
        if scale != 1:
            scales[str(name)] = float(scale)
    return columns, directions, scales
