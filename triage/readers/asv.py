"""airspeed velocity (asv) results directories: numpy, scipy, pandas, astropy, django...

Layout (asv writes it; point ``--data`` at ``results/`` or one machine's folder)::

    results/benchmarks.json                 name -> {type, unit, params, param_names, ...}
    results/<machine>/machine.json          {"machine": ..., "os": ..., ...}
    results/<machine>/<commit>-<env>.json   one run of every benchmark on one commit

A result file (format version 2) holds ``commit_hash``, ``env_name``,
``date`` (the commit's date, ms since the epoch), ``result_columns`` and
``results``: benchmark name -> a row whose ``result`` column is a list with
one value per parameter combination (``null`` = failed or skipped, left
out). Version-1 files (``results`` name -> number or ``{"result", "params"}``)
are read too.

One series per (machine, environment, benchmark, parameter combination):
``<machine>/<env>/<benchmark>`` plus ``(<p1>, <p2>)`` for parametrised
benchmarks. Commits are ordered by their date, as ``asv publish`` draws them.
Times and memory are lower-is-better: asv's types ``time``, ``memory`` and
``peakmemory`` in ``benchmarks.json`` (``mem`` and ``peakmem`` are read too),
or, for a benchmark it does not list (or without it), asv's own rule on the
name: a function or method named ``time_*``, ``timeraw_*``, ``mem_*`` or
``peakmem_*``. ``track`` benchmarks leave the direction unknown.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd

from triage.core import timestamps
from triage.core.errors import InputError
from triage.core.history import Dataset, Trim, dataset_from_long
from triage.core.json_input import read_json

#: asv's benchmark types whose values are better lower (asv writes memory and peakmemory).
LOWER_IS_BETTER_TYPES = frozenset({"time", "memory", "peakmemory", "mem", "peakmem"})
#: asv's name prefixes of those types, for benchmarks ``benchmarks.json`` does not describe.
LOWER_IS_BETTER_PREFIXES = ("time_", "timeraw_", "mem_", "peakmem_")


def _lower_is_better(name: str, meta: dict) -> bool | None:
    """False (lower is better) for a time or memory benchmark, None when asv leaves it open (track)."""
    kind = meta.get("type")
    if not isinstance(kind, str):  # absent, or not asv's (a damaged file): the name tells, as asv does
        kind = None
    if kind is None:  # asv tells the type by the function's name: bench.Suite.time_sort
        kind = "time" if name.rsplit(".", 1)[-1].startswith(LOWER_IS_BETTER_PREFIXES) else None
    return False if kind in LOWER_IS_BETTER_TYPES else None


def is_asv_results(path: Path) -> bool:
    """A results directory (with ``benchmarks.json`` or machine folders) or one machine's folder."""
    if not path.is_dir():
        return False
    if (path / "machine.json").is_file():
        return True
    return (path / "benchmarks.json").is_file() or any((p / "machine.json").is_file() for p in path.iterdir() if p.is_dir())


def _machine_dirs(path: Path) -> list[Path]:
    if (path / "machine.json").is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_dir() and (p / "machine.json").is_file())


def _benchmarks(path: Path) -> dict[str, dict]:
    for candidate in (path / "benchmarks.json", path.parent / "benchmarks.json"):
        if candidate.is_file():
            payload = read_json(candidate)
            if not isinstance(payload, dict):
                raise InputError(candidate, None, "expected a JSON object of benchmarks")
            return {k: v for k, v in payload.items() if isinstance(v, dict)}
    return {}  # without it: no parameter names or types, values still readable


def _combos(params: object) -> list[str]:
    """One label per parameter combination, in asv's order (the cartesian product)."""
    if not isinstance(params, list) or not params:
        return [""]
    if not all(isinstance(values, list) for values in params):
        # "ab" would be the parameter values a and b; a number is no list of values at all.
        raise ValueError(f"params {str(params)[:40]} is not a list of each parameter's values")
    return ["(" + ", ".join(map(str, combo)) + ")" for combo in itertools.product(*params)]


def _values_and_params(entry: object, columns: list[str] | None) -> tuple[list, object]:
    if columns is not None:  # version 2: a row of result_columns
        if not isinstance(entry, list):
            raise ValueError("expected a list of result columns")
        if not isinstance(columns, list) or not all(isinstance(column, str) for column in columns):
            raise ValueError(f"'result_columns' {str(columns)[:40]} is not a list of column names")
        row = dict(zip(columns, entry, strict=False))
        result, params = row.get("result"), row.get("params")
    elif isinstance(entry, dict):  # version 1, parametrised
        result, params = entry.get("result"), entry.get("params")
    else:  # version 1, one number
        result, params = entry, None
    if result is None:
        return [], params
    return (result if isinstance(result, list) else [result]), params


def read_asv(path: str | Path, *, aggregate: str = "mean", trim: Trim = None) -> Dataset:
    """Read an asv results directory (see the module docstring)."""
    path = Path(path)
    machines = _machine_dirs(path)
    if not machines:
        raise InputError(path, None, "no asv machine folder (expected <machine>/machine.json and result files)")
    benchmarks = _benchmarks(path if path != machines[0] else path.parent)
    records: list[dict] = []
    higher: dict[str, bool | None] = {}
    for machine_dir in machines:
        machine = machine_dir.name
        for file in sorted(machine_dir.glob("*.json")):
            if file.name == "machine.json":
                continue
            payload = read_json(file)
            if not isinstance(payload, dict) or "results" not in payload or "commit_hash" not in payload:
                raise InputError(file, None, "not an asv result file (no commit_hash / results)")
            commit, date, version = _checked_fields(payload, file)
            env = str(payload.get("env_name") or file.stem.split("-", 1)[-1])
            columns = payload.get("result_columns") if version >= 2 else None
            for name, entry in payload["results"].items():
                try:
                    values, params = _values_and_params(entry, columns)
                    meta = benchmarks.get(name, {})
                    labels = _combos(params if params else meta.get("params"))
                except ValueError as exc:
                    raise InputError(file, None, f"benchmark {name!r}: {exc}") from None
                if len(labels) != len(values):
                    labels = [f"[{i}]" for i in range(len(values))] if len(values) > 1 else [""] * len(values)
                for label, value in zip(labels, values, strict=True):
                    if value is None or (isinstance(value, float) and math.isnan(value)):
                        continue  # asv writes null for a failed or skipped combination
                    if not isinstance(value, int | float) or isinstance(value, bool):
                        raise InputError(file, None, f"benchmark {name!r}{label}: value {value!r} is not a number")
                    sid = f"{machine}/{env}/{name}{label}"
                    records.append({"series_id": sid, "commit": commit, "date": date,
                                    "value": float(value), "_file": str(file), "_where": f"benchmark {name!r}{label}"})
                    higher[sid] = _lower_is_better(name, meta)
    if not records:
        raise InputError(path, None, "no benchmark results in the asv result files")
    frame = pd.DataFrame.from_records(records)
    bad = frame["date"].isna()
    if bad.any():
        raise InputError(frame.loc[bad, "_file"].iloc[0], None, "result file has no 'date'")
    frame = frame.sort_values("date", kind="stable").reset_index(drop=True)
    frame["timestamp"] = pd.to_datetime(frame.pop("date"), unit="ms", utc=True).dt.tz_localize(None)
    files, where = frame.pop("_file"), frame.pop("_where")
    try:
        return dataset_from_long(frame, None, path, aggregate=aggregate, higher_is_better=higher, trim=trim)
    except InputError as exc:
        # Its row is a record of the table built above, which nobody has seen: name the
        # result file and the benchmark instead.
        if exc.row is None or not 1 <= exc.row <= len(frame):
            raise
        raise InputError(files.iloc[exc.row - 1], None, f"{where.iloc[exc.row - 1]}: {exc.problem}") from None


#: The dates pandas can hold, in ms since the epoch (asv's unit).


def _checked_fields(payload: dict, file: Path) -> tuple[str, float | None, int]:
    """A result file's ``commit_hash``, ``date`` (ms since the epoch; None when absent) and format ``version``.

    Each is refused naming the file when it is not what asv writes (a text
    date, a date pandas cannot hold, a missing commit), and so are
    ``results`` that are not an object: any of these would otherwise fail
    deep in pandas as an internal error or name a row of no file.
    """
    commit = payload["commit_hash"]
    if isinstance(commit, bool) or not isinstance(commit, str | int) or not str(commit).strip():
        raise InputError(file, None, f"'commit_hash' {commit!r} is not a commit id")
    if not isinstance(payload["results"], dict):
        raise InputError(file, None, f"'results' is {type(payload['results']).__name__}, not an object "
                         "of benchmark name -> result")
    version = payload.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(file, None, f"'version' {version!r} is not an asv result format number (1 or 2)")
    date = payload.get("date")
    if date is not None and (why := timestamps.epoch_ms_problem(date, "asv", "'date'")) is not None:
        raise InputError(file, None, why)
    return str(commit), date, version
