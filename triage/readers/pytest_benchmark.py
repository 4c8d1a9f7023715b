"""pytest-benchmark's saved runs (``--benchmark-autosave``, ``--benchmark-save``, ``--benchmark-json``).

pytest-benchmark writes one JSON object per run of the test suite::

    .benchmarks/<machine-id>/NNNN_<name>.json   (--benchmark-autosave / --benchmark-save)
    PATH                                        (--benchmark-json PATH: the same object)

with ``machine_info`` (``node``, ``system``, ``python_version``, ...),
``commit_info`` (``id``: the commit hash, ``time``: the commit's time,
``dirty``, ``branch``, ...), ``datetime`` (when the run was made) and
``benchmarks``: one object per benchmark with ``name``, ``fullname``
(``tests/test_parse.py::test_parse[1024]``), ``group``, ``params`` and
``stats`` (``min``, ``max``, ``mean``, ``stddev``, ``median``, ``iqr``,
``ops``, ``rounds``, ``iterations``; with ``--benchmark-save-data`` also
``data``, the time of every round, each the round's time divided by its
iterations).

Give ``--data`` the ``.benchmarks`` folder, one machine folder in it, a
folder of ``--benchmark-json`` files, or one file (gzip / zstd compressed
files too, in a folder as well).

History: the runs in the order of ``commit_info.time`` (the commit's time; a
run without it, as pytest-benchmark before 3.2 wrote, at its ``datetime``),
runs of equal times in file-name order (``NNNN_``). One series per benchmark
``fullname``; when the folder holds several machine folders,
``<machine-id>/<fullname>``. Values are seconds per iteration, lower is better.

A commit's value:

* with ``data`` (``--benchmark-save-data``): every round is a measurement of
  the commit, so ``aggregate`` (``--aggregate``) summarises them and
  ``trim`` (``--trim-warmup``) cuts warm-up rounds, each run (each file, one
  process) on its own as a JMH fork is (the ``fork`` column);
* without it: the run's ``median``. The median, not the mean: pytest-benchmark
  times rounds of a Python process, whose slowest rounds (garbage collection,
  another process on the core, a cold cache) lie far above the rest and move
  the mean and ``max`` from run to run; the median moves only when most rounds
  do, which is the change a history is searched for. ``min`` is as steady but
  says what the fastest round could do, not what the code usually costs. Read
  another statistic with ``read_pytest_benchmark(path, statistic="mean")``
  (``min``, ``max`` too; it is then used with or without ``data``).

A commit run more than once (two files of one commit on one machine) is a
re-run: its runs' measurements are pooled with ``aggregate``. The same commit
run on two different machines (``machine_info`` ``node``, ``machine``,
``system``, ``python_implementation`` or ``python_version`` differ) in one
folder is refused: those are two histories, which pytest-benchmark keeps apart
in ``<machine-id>`` folders. A run of a working tree with uncommitted changes
(``commit_info.dirty``) is read as its commit's, with a warning.

Bad input raises :class:`~triage.core.errors.InputError` naming the file, the
benchmark's position in ``benchmarks`` (1-based, as ``row``) with its name,
and the problem.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

import numpy as np
import pandas as pd

from triage.core import timestamps
from triage.core.errors import InputError
from triage.core.history import Dataset, Trim, dataset_from_long
from triage.core.json_input import read_json
from triage.core.values import value_problem
from triage.readers.source import plain_file

#: Statistics of ``stats`` a run can be valued by; the first is the default.
STATISTICS = ("median", "mean", "min", "max")
#: What pytest-benchmark writes as ``commit_info.id`` outside a repository (``unversioned``) or when git failed.
NO_COMMIT = ("unversioned", "unknown", "")
#: ``machine_info`` fields that tell two machines (or interpreters) apart.
MACHINE_FIELDS = ("node", "machine", "system", "python_implementation", "python_version")
#: Names of the files a folder's runs are read from.
RESULT_SUFFIXES = (".json", ".json.gz", ".json.zst")
WHAT = "pytest-benchmark results"


def is_pytest_benchmark(payload: object) -> TypeGuard[dict]:
    """A parsed JSON document that looks like one pytest-benchmark run."""
    if not isinstance(payload, dict) or "benchmarks" not in payload:
        return False
    if "machine_info" in payload and "commit_info" in payload:
        return True  # whatever its benchmarks are: the reader names what is wrong with them
    if not isinstance(payload["benchmarks"], list):
        return False
    if "machine_info" in payload or "commit_info" in payload:
        return True
    first = payload["benchmarks"][0] if payload["benchmarks"] else None
    return isinstance(first, dict) and "stats" in first and "fullname" in first


def _result_files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(RESULT_SUFFIXES)
    )


def _machine_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and _result_files(p))


def is_pytest_benchmark_dir(path: Path) -> bool:
    """A ``.benchmarks`` folder (machine folders of runs), one machine folder or a folder of runs.

    Told by the first result file found: a folder of other JSON is not this.
    """
    if not path.is_dir():
        return False
    files = _result_files(path) or next((_result_files(m) for m in _machine_folders(path)), [])
    if not files:
        return False
    try:
        return is_pytest_benchmark(_payload(files[0]))
    except InputError:
        return False


def _payload(file: Path) -> object:
    """The parsed run in ``file`` (decompressed first when it is compressed)."""
    with plain_file(file, directory_ok=False) as plain:
        return read_json(plain, WHAT)


def _runs(path: Path) -> Iterator[tuple[str, Path, object]]:
    """``(machine, file, payload)`` of every run under ``path``; machine ``""`` when there is one."""
    if not path.is_dir():
        yield "", path, read_json(path, WHAT)
        return
    files, machines = _result_files(path), _machine_folders(path)
    if files and machines:
        raise InputError(
            path,
            None,
            f"holds both result files ({files[0].name}) and machine folders "
            f"({machines[0].name}/): give --data the machine folder, or the folder of machine "
            "folders without loose files",
        )
    if not files and not machines:
        raise InputError(
            path,
            None,
            "no pytest-benchmark result files (*.json) in this folder or its machine folders",
        )
    if files:
        for file in files:
            yield "", file, _payload(file)
        return
    several = len(machines) > 1
    for folder in machines:
        for file in _result_files(folder):
            yield (folder.name if several else ""), file, _payload(file)


def _commit(payload: dict, file: Path) -> str:
    info = payload.get("commit_info")
    if not isinstance(info, dict):
        raise InputError(
            file,
            None,
            "no 'commit_info' object: the run names no commit (pytest-benchmark "
            "writes it; a file written by another tool?)",
        )
    commit = info.get("id")
    if (
        isinstance(commit, bool)
        or not isinstance(commit, str | int)
        or str(commit).strip() in NO_COMMIT
    ):
        why = f" ({info['error']})" if isinstance(info.get("error"), str) else ""
        raise InputError(
            file,
            None,
            f"'commit_info.id' is {json.dumps(commit)[:60]}{why}: the run names no commit "
            "(pytest-benchmark was run outside a git checkout, or git failed)",
        )
    return str(commit).strip()


def _time_ns(payload: dict, file: Path) -> int:
    """The run's place in the history: ``commit_info.time``, else ``datetime``, in ns since the epoch (UTC)."""
    info = payload.get("commit_info") or {}
    for where, value in (
        ("'commit_info.time'", info.get("time")),
        ("'datetime'", payload.get("datetime")),
    ):
        if value is None or value == "":
            continue
        try:
            ns = timestamps.to_ns(value)
        except ValueError as exc:
            raise InputError(file, None, f"{where} {json.dumps(value)[:60]}: {exc}") from None
        if ns is not None:
            return ns
    raise InputError(
        file,
        None,
        "neither 'commit_info.time' nor 'datetime': the run cannot be placed in the history",
    )


def _machine(payload: dict) -> dict[str, str]:
    info = payload.get("machine_info")
    if not isinstance(info, dict):
        return {}
    return {k: str(info[k]) for k in MACHINE_FIELDS if info.get(k) not in (None, "")}


def _number(value: object, file: Path, pos: int, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(file, pos, f"{where} is {json.dumps(value)[:40]}, not a number")
    problem = value_problem(value)
    if problem is not None:
        raise InputError(file, pos, f"{where}: {problem}")
    if value < 0:
        raise InputError(file, pos, f"{where} is {value!r}: a time cannot be negative")
    return float(value)


def _benchmark_values(
    item: object, file: Path, pos: int, statistic: str | None
) -> tuple[str, list[float], bool]:
    """``(fullname, values, rounds)`` of one entry of ``benchmarks``; ``rounds``: the values are its rounds."""
    if not isinstance(item, dict):
        raise InputError(
            file, pos, f"benchmark {pos} is {json.dumps(item)[:40]}: expected a benchmark object"
        )
    name = item.get("fullname", item.get("name"))
    if not isinstance(name, str) or not name.strip():
        raise InputError(file, pos, f"benchmark {pos} has no 'fullname' (nor 'name')")
    name = name.strip()
    label = f"benchmark {name!r}"
    stats = item.get("stats")
    if not isinstance(stats, dict):
        raise InputError(
            file,
            pos,
            f"{label} has no 'stats' object"
            if stats is None
            else f"{label}: 'stats' is {json.dumps(stats)[:40]}, not an object",
        )
    data = stats.get("data")
    if statistic is None and data is not None:
        if not isinstance(data, list):
            raise InputError(
                file,
                pos,
                f"{label}: 'stats.data' is {json.dumps(data)[:40]}, not a list of round times",
            )
        if data:
            return (
                name,
                [
                    _number(v, file, pos, f"{label}: round {i} of 'stats.data'")
                    for i, v in enumerate(data)
                ],
                True,
            )
    key = statistic or STATISTICS[0]
    if key not in stats:
        raise InputError(file, pos, f"{label} has no '{key}' in 'stats'")
    return name, [_number(stats[key], file, pos, f"{label}: '{key}'")], False


def read_pytest_benchmark(
    path: str | Path,
    *,
    statistic: str | None = None,
    aggregate: str = "mean",
    trim: Trim = None,
    source: str | None = None,
) -> Dataset:
    """Read pytest-benchmark runs (a folder or one file; see the module docstring).

    ``statistic``: ``None`` (default) reads each round where the run saved
    them (``stats.data``) and the ``median`` otherwise; one of
    :data:`STATISTICS` reads that statistic of every run. ``aggregate`` and
    ``trim`` summarise a commit's measurements as for every reader
    (:func:`triage.core.history.dataset_from_long`). ``source`` names the
    dataset (default: ``path``).
    """
    if statistic is not None and statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r} (use one of {', '.join(STATISTICS)})")
    path = Path(path)
    records: list[tuple] = []
    machines_of: dict[tuple[str, str], tuple[Path, dict[str, str]]] = {}
    dirty: list[Path] = []
    empty: list[Path] = []
    kinds: dict[str, set[bool]] = {}
    for fork, (machine, file, payload) in enumerate(_runs(path)):
        if not is_pytest_benchmark(payload):
            raise InputError(
                file,
                None,
                "not a pytest-benchmark run: expected a JSON object with 'machine_info', "
                "'commit_info' and a 'benchmarks' list",
            )
        if not isinstance(payload["benchmarks"], list):
            raise InputError(
                file,
                None,
                f"'benchmarks' is {json.dumps(payload['benchmarks'])[:40]}, not a list of benchmark objects",
            )
        commit = _commit(payload, file)
        at = _time_ns(payload, file)
        box = _machine(payload)
        first = machines_of.setdefault((machine, commit), (file, box))
        differ = [k for k in MACHINE_FIELDS if k in box and k in first[1] and box[k] != first[1][k]]
        if differ:
            shown = ", ".join(f"{k} {first[1][k]!r} there, {box[k]!r} here" for k in differ)
            raise InputError(
                file,
                None,
                f"commit {commit} was run on another machine in {first[0]} ({shown}): "
                "runs of two machines are two histories; keep each machine's runs in its own folder "
                "(as pytest-benchmark's .benchmarks/<machine-id>/ does)",
            )
        if (payload.get("commit_info") or {}).get("dirty") is True:
            dirty.append(file)
        if not payload["benchmarks"]:
            empty.append(file)
            continue
        seen: dict[str, int] = {}
        for pos, item in enumerate(payload["benchmarks"], start=1):
            name, values, rounds = _benchmark_values(item, file, pos, statistic)
            if name in seen:
                raise InputError(
                    file,
                    pos,
                    f"benchmark {name!r} again (first at benchmark {seen[name]}): "
                    "two benchmarks of one name would be read as one",
                )
            seen[name] = pos
            sid = f"{machine}/{name}" if machine else name
            kinds.setdefault(sid, set()).add(rounds)
            records.extend((sid, commit, at, v, str(fork), str(file), pos, name) for v in values)
    if not records:
        raise InputError(
            path,
            None,
            "no benchmark in the pytest-benchmark runs (every 'benchmarks' list is empty)",
        )
    for file in empty:
        warnings.warn(f"{file}: a pytest-benchmark run with no benchmarks: left out", stacklevel=2)
    if dirty:
        warnings.warn(
            f"{path}: {len(dirty)} run(s) measured a working tree with uncommitted changes (commit_info.dirty), "
            f"e.g. {dirty[0]}: read as their commit's",
            stacklevel=2,
        )
    mixed = sorted(sid for sid, k in kinds.items() if len(k) > 1)
    if mixed:
        warnings.warn(
            f"{path}: {len(mixed)} series (e.g. {mixed[0]!r}) have runs with their rounds saved "
            "(--benchmark-save-data) and runs without: the first are valued by --aggregate of their rounds, "
            "the others by their median",
            stacklevel=2,
        )
    frame = pd.DataFrame.from_records(
        records, columns=["series_id", "commit", "at", "value", "fork", "_file", "_pos", "_name"]
    )
    frame = frame.sort_values("at", kind="stable").reset_index(drop=True)
    frame["timestamp"] = pd.to_datetime(frame.pop("at").to_numpy(dtype=np.int64), unit="ns")
    files, positions, names = frame.pop("_file"), frame.pop("_pos"), frame.pop("_name")
    higher = dict.fromkeys(frame["series_id"].unique().tolist(), False)
    try:
        return dataset_from_long(
            frame,
            None,
            source or str(path),
            aggregate=aggregate,
            higher_is_better=higher,
            trim=trim,
        )
    except InputError as exc:
        # Its row is one of the records built here, which nobody has seen: name the file and the benchmark.
        if exc.row is None or not 1 <= exc.row <= len(frame):
            raise
        i = exc.row - 1
        raise InputError(
            files.iloc[i], int(positions.iloc[i]), f"benchmark {names.iloc[i]!r}: {exc.problem}"
        ) from None
