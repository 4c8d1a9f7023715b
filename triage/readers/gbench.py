"""Google Benchmark's JSON output (``--benchmark_format=json`` / ``--benchmark_out``): one run of one build.

A Google Benchmark run writes one JSON object: ``context`` (host, date,
build type) and ``benchmarks``, a list with one object per measured run of a
benchmark. What this reader uses of each object:

* ``run_name`` (``name`` where it is missing, as in output older than
  v1.5): the series, e.g. ``BM_parse/1024/threads:2``;
* ``run_type``: ``iteration`` objects are the measurements, one per
  repetition (``--benchmark_repetitions=N``, ``repetition_index``); the
  ``aggregate`` objects Google Benchmark adds (``_mean``, ``_median``,
  ``_stddev``, ``_cv``, complexity fits) are left out, since the
  repetitions they summarise are read themselves. A benchmark reported by
  its aggregates only (``--benchmark_report_aggregates_only``) is read from
  its ``mean`` aggregate (its ``median`` without one): one measurement.
  Output older than v1.5 has no ``run_type``: a run named
  ``<benchmark>_<aggregate>`` (``mean``, ``median``, ``stddev``, ``BigO``,
  ``RMS``) beside its benchmark or a sibling aggregate is that aggregate;
* ``real_time`` (the default ``metric``; ``cpu_time`` on request): the time
  per iteration in ``time_unit`` (``ns``, ``us``, ``ms``, ``s``), so every
  series is a time, lower is better;
* ``error_occurred``: a benchmark that failed (``state.SkipWithError``) has no
  measurement; it is left out with a warning, as JMH leaves a failed
  benchmark out of its file.

The frame has :data:`triage.readers.jmh.COLUMNS`: one run is one process
(one ``fork``, 0), its repetitions the ``iteration`` s in order, ``mode``
``avgt`` (JMH's name for a time per operation, which is what Google
Benchmark measures) and ``unit`` ``<time_unit>/op``. Everything that reads
JMH results reads it the same way: a file is one commit (its stem), a
history is one file per commit (``triage steady``), and ``--trim-warmup``
cuts the first repetitions when they are a warm-up.

Bad input raises :class:`~triage.core.errors.InputError` naming the file, the
position of the object in ``benchmarks`` (1-based, as ``row``) and the problem.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TypeGuard

import pandas as pd

from triage.core.errors import InputError
from triage.core.values import value_problem
from triage.readers.source import display_name

#: The time per iteration read by default, and the other one on request.
METRICS = ("real_time", "cpu_time")
#: Units Google Benchmark writes in ``time_unit``.
TIME_UNITS = ("ns", "us", "ms", "s")
#: Aggregates that stand for a benchmark reported by its aggregates only, in order of preference.
STAND_INS = ("mean", "median")
#: The mode and fork every row gets (see the module docstring).
MODE, FORK = "avgt", 0


def is_gbench(payload: object) -> TypeGuard[dict]:
    """A parsed JSON document that looks like one Google Benchmark run."""
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("benchmarks"), list)
        and isinstance(payload.get("context"), dict)
    )


#: The aggregates Google Benchmark before v1.5 wrote as runs named ``<benchmark>_<aggregate>``.
OLD_AGGREGATES = ("mean", "median", "stddev", "BigO", "RMS")


def _old_aggregate(name: str, names: set[str]) -> tuple[str, str] | None:
    """``(benchmark, aggregate)`` when ``name`` is an aggregate of output older than v1.5 (no
    ``run_type``): ``<benchmark>_<aggregate>`` beside its benchmark's repetitions, or beside a
    sibling aggregate (``--benchmark_report_aggregates_only``). A benchmark that is merely named
    ``BM_running_mean`` has neither, and stays a benchmark."""
    for aggregate in OLD_AGGREGATES:
        suffix = f"_{aggregate}"
        if name.endswith(suffix) and len(name) > len(suffix):
            base = name[: -len(suffix)]
            siblings = sum(f"{base}_{other}" in names for other in OLD_AGGREGATES if other != aggregate)
            if base in names or siblings:
                return base, aggregate
    return None


def gbench_frame(payload: dict, path: str | Path, metric: str = "real_time") -> pd.DataFrame:
    """One row per (benchmark, repetition): ``series_id, mode, unit, fork, iteration, value``.

    ``payload`` is the parsed file (:func:`is_gbench`); ``path`` names it in
    errors and warnings. Values are ``metric`` (``real_time`` or
    ``cpu_time``) in the benchmark's ``time_unit``.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} (use one of {', '.join(METRICS)})")
    path = Path(path)
    benchmarks = payload["benchmarks"]
    if not benchmarks:
        raise InputError(path, None, "one run of Google Benchmark with no benchmarks in it ('benchmarks' is empty)")
    measured: dict[str, list[tuple[int, dict]]] = {}
    stand_ins: dict[str, dict[str, tuple[int, dict]]] = {}
    failed: list[str] = []
    names = {
        str(item.get("run_name", item.get("name"))).strip() for item in benchmarks if isinstance(item, dict)
    }
    for pos, item in enumerate(benchmarks, start=1):
        if not isinstance(item, dict):
            raise InputError(path, pos, f"is {json.dumps(item)[:40]}: expected a benchmark object")
        name = item.get("run_name", item.get("name"))
        if not isinstance(name, str) or not name.strip():
            raise InputError(path, pos, "benchmark object without a 'name'")
        # The series id is the stripped name: "BM_x" and "BM_x " are one name here, so that two
        # benchmarks of it are refused below, not averaged into one series.
        name = name.strip()
        if item.get("error_occurred"):
            why = f"{name} ({item.get('error_message') or 'no message'})"
            if why not in failed:  # each repetition of a failed benchmark says the same
                failed.append(why)
            continue
        old = None if "run_type" in item else _old_aggregate(name, names)
        if old is not None:
            # Output older than v1.5 has no run_type: an aggregate is told by its name's suffix
            # (BM_x_mean, BM_x_stddev), and each was read as a series of its own.
            name, item = old[0], {**item, "run_type": "aggregate", "aggregate_name": old[1]}
        if item.get("run_type", "iteration") == "aggregate":
            aggregate = str(item.get("aggregate_name", ""))
            if aggregate in STAND_INS and item.get("aggregate_unit", "time") == "time":
                stand_ins.setdefault(name, {}).setdefault(aggregate, (pos, item))
            continue
        measured.setdefault(name, []).append((pos, item))
    for name, kinds in stand_ins.items():
        if name not in measured:
            measured[name] = [next(kinds[k] for k in STAND_INS if k in kinds)]
    if failed:
        warnings.warn(
            f"{display_name(path)}: {len(failed)} benchmark(s) failed in this run and have no measurement: "
            + "; ".join(failed[:3]) + (" ..." if len(failed) > 3 else ""),
            stacklevel=3,
        )
    if not measured:
        raise InputError(path, None, "one run of Google Benchmark in which every benchmark failed: nothing measured")
    rows: list[tuple] = []
    for name, items in measured.items():
        # Each unit checked before they are compared: a repetition in "ps" was reported at the first
        # row, as "several time units (ns, ps)", not at its own row as no unit at all.
        for pos, item in items:
            unit = str(item.get("time_unit", "ns"))
            if unit not in TIME_UNITS:
                raise InputError(path, pos, f"{name}: time_unit {unit!r} is not one of {', '.join(TIME_UNITS)}")
        units = {str(item.get("time_unit", "ns")) for _, item in items}
        seen: dict[object, int] = {}
        for i, (pos, item) in enumerate(items):
            unit = str(item.get("time_unit", "ns"))
            if len(units) > 1:
                raise InputError(path, pos, f"{name}: its repetitions are in several time units ({', '.join(sorted(units))})")
            index = item.get("repetition_index", i)
            if isinstance(index, bool) or not isinstance(index, int):
                raise InputError(path, pos, f"{name}: repetition_index is {json.dumps(index)[:40]}, not a whole number")
            if index in seen:
                # Two runs of one name with one index: two benchmarks registered under one name.
                raise InputError(path, pos, f"{name}: repetition {index} again (first in row {seen[index]})")
            seen[index] = pos
            if metric not in item:
                raise InputError(path, pos, f"{name}: no {metric} (a Google Benchmark result has one)")
            value = item.get(metric)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(path, pos, f"{name}: {metric} is {json.dumps(value)[:40]}, not a number")
            problem = value_problem(value)
            if problem is not None:
                raise InputError(path, pos, f"{name}: {metric}: {problem}")
            if value < 0:
                # Google Benchmark never writes one: a damaged file, whose value was read as a time.
                raise InputError(path, pos, f"{name}: {metric} is {value!r}: a time cannot be negative")
            rows.append((name, MODE, f"{unit}/op", FORK, i, float(value)))
    return pd.DataFrame(rows, columns=["series_id", "mode", "unit", "fork", "iteration", "value"])
