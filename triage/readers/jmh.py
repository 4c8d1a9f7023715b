"""JMH's JSON results (``-rf json``): per benchmark, fork and iteration raw data.

A JMH result file is a JSON list with one object per benchmark (and parameter
combination). What this reader uses of each object:

* ``benchmark`` (fully qualified method name) and ``params`` (the ``@Param``
  values, optional): together they name the series, e.g.
  ``org.acme.Bench.parse[size=10]``; ``mode`` (``thrpt``, ``avgt``,
  ``sample``, ``ss``) is kept as a column;
* ``primaryMetric.rawData``: one list per fork of the measurement iterations'
  scores; for ``sample`` mode without ``rawData``,
  ``primaryMetric.rawDataHistogram`` (per fork, per iteration, ``[value,
  count]`` pairs) gives each iteration's count-weighted mean;
* ``primaryMetric.scoreUnit``.

JMH writes one entry per mode: a benchmark run in several modes (``-bm
thrpt,avgt``) gives one series per mode, named ``<benchmark>[<params>]:<mode>``
(a benchmark in one mode keeps the plain name; across the files of one history,
:func:`steady_long`, a benchmark held in several modes by any of them carries
its mode in all of them). The same benchmark, parameters and mode twice in one
file is refused.

A file may also be a plain JSON array of runs, each an array of iteration
values (``[[0.91, 0.52, ...], [0.88, ...]]``, as raw iteration dumps of
harnesses other than JMH look): one series named by the file stem, one fork
per run, values read as times (mode left empty).

JMH leaves its warm-up iterations out of ``rawData``; steady-state studies run
with no JMH warm-up and many measurement iterations, so that the warm-up is in
the data and a detector finds where it ends. :func:`steady_long` does that per
fork (each fork is its own JVM, with its own warm-up) and returns the long
layout of the steady iterations, one file per commit.

Bad input raises :class:`~triage.core.errors.InputError` naming the file, the
position of the benchmark in the list (1-based, as ``row``) and the problem.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.atomic import is_stdio
from triage.core.errors import InputError
from triage.core.history import Dataset, dataset_from_long
from triage.core.json_input import read_json
from triage.core.values import unusable, value_problem
from triage.readers.gbench import gbench_frame, is_gbench
from triage.readers.pytest_benchmark import is_pytest_benchmark
from triage.readers.source import display_name, plain_file, stem

COLUMNS = ["series_id", "mode", "unit", "fork", "iteration", "value"]


EMPTY_RUN = "holds no results (an empty list: every benchmark of that run failed?)"


class NoResults(InputError):
    """A result file that is an empty list: JMH writes ``[]`` when every benchmark of the run failed."""


class SameStem(ValueError):
    """Two files of one stem, their default commit id: only commit ids given pool files as re-runs."""


#: Characters that separate a name's parameters: a key or value holding one is written quoted.
_PARAM_SEPARATORS = frozenset(',="[]')


def _param_text(text: object) -> str:
    """A parameter key or value as written in a series name: as is, or JSON-quoted when it holds
    a separator (``{"codec": "a,size=1"}`` and ``{"codec": "a", "size": "1"}`` were both
    ``[codec=a,size=1]``: two benchmarks refused as one repeated, or merged across files)."""
    text = str(text)
    return json.dumps(text, ensure_ascii=False) if _PARAM_SEPARATORS & set(text) else text


def series_name(benchmark: str, params: dict | None) -> str:
    """``benchmark`` or ``benchmark[k1=v1,k2=v2]`` (keys sorted, so the name is stable; a key or
    value holding ``,``, ``=``, ``"``, ``[`` or ``]`` JSON-quoted)."""
    if not params:
        return benchmark
    return f"{benchmark}[{','.join(f'{_param_text(k)}={_param_text(params[k])}' for k in sorted(params))}]"


def read_jmh(
    path: str | Path, runs_series: str | None = None, *, runs_need_series: bool = False
) -> pd.DataFrame:
    """One row per (benchmark, fork, iteration): ``series_id, mode, unit, fork, iteration, value``.

    ``runs_series`` names the series of a plain array of runs (default: the file
    stem; with ``runs_need_series``, as for standard input, which has no name,
    such a file without ``runs_series`` is refused).

    Forks and iterations are numbered from 0 in file order.
    """
    return _read_jmh(path, runs_series, runs_need_series=runs_need_series)[0]


def _read_jmh(
    path: str | Path, runs_series: str | None = None, *, runs_need_series: bool = False
) -> tuple[pd.DataFrame, dict[str, int]]:
    """:func:`read_jmh`'s frame and each JMH benchmark's position in the file (its ``row``; empty for
    Google Benchmark and arrays of runs), for problems found across files to be told at their row."""
    path = Path(path)
    payload = read_json(path, "JMH JSON results")
    if is_gbench(payload):
        # One build's run too, in its own shape: the same rows, so steady, trimming and loading take it.
        return gbench_frame(payload, path), {}
    if payload == []:
        raise NoResults(
            path,
            None,
            f"{EMPTY_RUN}; expected a non-empty list of benchmark objects (or of runs, arrays of numbers)",
        )
    if is_pytest_benchmark(payload):
        # "not JMH JSON results" left a pytest-benchmark user to guess where such runs are read.
        raise InputError(
            path,
            None,
            "a pytest-benchmark run, not JMH or Google Benchmark results: read pytest-benchmark runs with "
            "--data (their .benchmarks folder, a machine folder or the file), e.g. `triage convert --data "
            ".benchmarks --trim-warmup kbkssd --out per-commit.csv`, which cuts the rounds of runs saved "
            "with --benchmark-save-data",
        )
    if not isinstance(payload, list) or not payload:
        raise InputError(
            path,
            None,
            "not JMH JSON results: expected a non-empty list of benchmark objects "
            "(or of runs, arrays of numbers)",
        )
    if not isinstance(payload[0], (list, dict)):
        raise InputError(
            path,
            1,
            f"is {json.dumps(payload[0])[:40]}: expected a benchmark object or a run; "
            "an array of runs is an array of arrays ([[0.91, 0.52, ...], ...])",
        )
    runs = [isinstance(item, list) for item in payload]
    if any(r != runs[0] for r in runs):
        other = next(i for i, r in enumerate(runs) if r != runs[0])
        if not isinstance(payload[other], (list, dict)):
            # A number or a string where a run (or a benchmark object) belongs: "mixes runs and
            # JMH benchmark objects" sent the user looking for an object that is not there.
            raise InputError(
                path,
                other + 1,
                f"is {json.dumps(payload[other])[:40]}: expected "
                + ("a run (an array of numbers)" if runs[0] else "a benchmark object"),
            )
        raise InputError(
            path, other + 1, "mixes runs (arrays of numbers) and JMH benchmark objects"
        )
    if runs[0]:
        if runs_series is None and runs_need_series:
            raise InputError(
                path,
                None,
                "an array of runs has no file name to name its series: give it (--series)",
            )
        return _plain_runs(payload, path, runs_series or path.stem), {}
    entries = []
    for pos, item in enumerate(payload, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("benchmark"), str):
            raise InputError(path, pos, "benchmark entry without a 'benchmark' name")
        if not item["benchmark"].strip():
            # It names the series: a blank id was written, and every reader refuses it.
            raise InputError(path, pos, "the 'benchmark' name is empty")
        params = item.get("params")
        if params is not None and not isinstance(params, dict):
            raise InputError(path, pos, "'params' is not an object")
        # Stripped, as every series id is read: "X" and "X " are one benchmark (refused below as
        # repeated), not two averaged into one series.
        entries.append((pos, item, series_name(item["benchmark"].strip(), params)))
    modes: dict[str, set[str]] = {}
    for _, item, name in entries:
        modes.setdefault(name, set()).add(str(item.get("mode", "")))
    rows: list[tuple] = []
    seen: dict[str, int] = {}
    for pos, item, name in entries:
        if len(modes[name]) > 1:
            name = (
                f"{name}:{item.get('mode', '')}"  # a rate and a time are two series, never one run
            )
        if name in seen:
            # Its forks would be read as the first entry's (fork 0 twice).
            raise InputError(
                path, pos, f"{name}: the same benchmark, parameters and mode as row {seen[name]}"
            )
        seen[name] = pos
        metric = item.get("primaryMetric")
        if not isinstance(metric, dict):
            raise InputError(path, pos, f"{name}: no 'primaryMetric'")
        forks = _forks(metric, path, pos, name)
        mode, unit = str(item.get("mode", "")), str(metric.get("scoreUnit", ""))
        if mode in RATE_MODES + TIME_MODES:
            for f, scores in enumerate(forks):
                negative = next((i for i, v in enumerate(scores) if v < 0), None)
                if negative is not None:
                    # JMH never writes one (a rate or a time per operation): a damaged file, which
                    # was read, trimmed and averaged as it stood.
                    raise InputError(
                        path,
                        pos,
                        f"{name}: fork {f}: iteration {negative} is {scores[negative]!r}: "
                        f"a {mode} score ({'operations per time' if mode in RATE_MODES else 'time per operation'}) "
                        "cannot be negative",
                    )
        for f, scores in enumerate(forks):
            for i, v in enumerate(scores):
                rows.append((name, mode, unit, f, i, v))
    return pd.DataFrame(rows, columns=COLUMNS), seen


def _plain_runs(payload: list, path: Path, series: str) -> pd.DataFrame:
    """A JSON array of runs (arrays of numbers): one series, a fork per run."""
    rows: list[tuple] = []
    for f, run in enumerate(payload):
        scores = _scores(run, path, f + 1, f"run {f}")
        rows.extend((series, "", "", f, i, v) for i, v in enumerate(scores))
    return pd.DataFrame(rows, columns=COLUMNS)


def _scores(values: list, path: Path, pos: int, what: str) -> list[float]:
    """One run's iteration scores: JSON numbers (not text, not true / false) the project can compute with."""
    if not values:
        raise InputError(path, pos, f"{what} has no iterations")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(
                path, pos, f"{what}: iteration {i} is {json.dumps(v)[:40]}, not a number"
            )
        problem = value_problem(v)
        if problem is not None:
            raise InputError(path, pos, f"{what}: iteration {i}: {problem}")
        out.append(float(v))
    return out


def _forks(metric: dict, path: Path, pos: int, name: str) -> list[list[float]]:
    raw = metric.get("rawData")
    if raw is None and metric.get("rawDataHistogram") is not None:
        raw = [
            [_histogram_mean(it, path, pos, name) for it in _list(fork, path, pos, name)]
            for fork in _list(metric["rawDataHistogram"], path, pos, name)
        ]
    if raw is None:
        raise InputError(
            path, pos, f"{name}: no 'rawData' (nor 'rawDataHistogram') in 'primaryMetric'"
        )
    out = []
    for f, fork in enumerate(_list(raw, path, pos, name)):
        out.append(_scores(_list(fork, path, pos, name), path, pos, f"{name}: fork {f}"))
    if not out:
        raise InputError(path, pos, f"{name}: no forks in 'rawData'")
    return out


def _list(x: object, path: Path, pos: int, name: str) -> list:
    if not isinstance(x, list):
        raise InputError(path, pos, f"{name}: raw data is not a list")
    return x


def _histogram_mean(pairs: object, path: Path, pos: int, name: str) -> float:
    """One iteration's count-weighted mean: ``pairs`` is a non-empty list of ``[value, count]``."""
    if (
        not isinstance(pairs, list)
        or not pairs
        or not all(isinstance(p, list) and len(p) == 2 for p in pairs)
    ):
        raise InputError(
            path, pos, f"{name}: a rawDataHistogram iteration is not a list of [value, count] pairs"
        )
    for value, count in pairs:
        for what, v in (("value", value), ("count", count)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(
                    path,
                    pos,
                    f"{name}: a rawDataHistogram {what} is {json.dumps(v)[:40]}, not a number",
                )
            problem = value_problem(v)
            if problem is not None:
                raise InputError(path, pos, f"{name}: a rawDataHistogram {what}: {problem}")
    values = np.array([p[0] for p in pairs], dtype=float)
    counts = np.array([p[1] for p in pairs], dtype=float)
    if np.any(counts < 0) or not np.any(counts > 0):
        raise InputError(
            path, pos, f"{name}: a rawDataHistogram count is negative, or every count is 0"
        )
    return float(np.average(values, weights=counts))


def steady_long(
    files: Sequence[str | Path],
    commits: Sequence[str] | None = None,
    trim_warmup: str = "cpssd",
    runs_series: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The steady iterations of JMH result files, one file per commit, in history order.

    Returns ``(long, starts)``: ``long`` has ``series_id, commit, fork, value,
    higher_is_better`` (one row per kept iteration, the long layout
    :func:`triage.loaders.load` reads and aggregates; the direction from the
    JMH mode, without one from the score unit (:func:`higher_is_better`),
    blank for arrays of runs, and the column left out when every file is one); ``starts`` has one row per (series, commit, fork) with
    ``iterations``, ``steady_start`` (None: never steady) and ``cut``, the
    iterations left out from its start: the steady start, or for a fork never
    steady the median start of its series' steady forks (0, kept whole, when
    none is steady; :func:`triage.steady_state.base.cuts`). ``commits``
    defaults to the file stems (``c1`` for ``c1.json.gz``); files given one
    commit id (next to each other) are re-runs of it, pooled: their forks are
    numbered on after the earlier files' (fork 0 twice would be read as one
    run with a warm-up in its middle). Stems are never pooled: two files of
    one stem are refused. For rates
    (``thrpt``, or no mode and an ``ops/<time>`` unit) KB-KSSD looks for a
    rising warm-up, for times a falling one. A series' values are in the unit of its first file (a
    build with another ``@OutputTimeUnit`` is converted). Files may be gzip or
    zstd compressed. A file that is a
    plain array of runs is the series ``runs_series`` (default: its stem; name
    one series to make the files a history of it).
    """
    if runs_series is not None and not runs_series.strip():
        raise ValueError("the series id for arrays of runs is empty")
    _check_commits(files, commits)
    commits = [stem(f) for f in files] if commits is None else list(commits)
    # Imported here: it brings the detectors and scipy.stats, which reading a
    # file without --trim-warmup never needs (about 0.9 CPU-s of every CLI start).
    from triage import steady_state

    detector = steady_state.make(trim_warmup)
    rate_detector = steady_state.make(trim_warmup, rates=True)
    frames, shown = [], []
    positions: list[dict[str, int]] = []
    empty: list[tuple[NoResults, str]] = []
    for path, commit in zip(files, commits, strict=True):
        if not is_stdio(path) and Path(path).is_dir():
            # "is a directory; expected a file" left the user to find that the files go one by one.
            raise InputError(display_name(path), None, "is a directory; expected a file: give its result files, "
                             f"one per commit in history order, e.g. {steady_command(path)}")
        with plain_file(path, directory_ok=False) as plain:
            try:
                # Standard input has no stem to name a series of runs after.
                stdin = is_stdio(path)
                frame, rows = _read_jmh(
                    plain, runs_series or (None if stdin else stem(path)), runs_need_series=stdin
                )
            except NoResults as exc:
                # A build whose every benchmark failed is a commit without measurements, as a
                # failed benchmark is absent from its build's file; it stopped the whole history.
                empty.append((NoResults(display_name(path), None, exc.problem), commit))
                continue
            except InputError as exc:
                if plain == Path(path):
                    raise
                # Read from a decompressed copy: the user knows the file by its own name.
                raise InputError(display_name(path), exc.row, exc.problem) from None
        if runs_series is not None and not (frame["series_id"] == runs_series).all():
            # JMH results name their series by benchmark: the id given names nothing here.
            warnings.warn(
                f"{display_name(path)} holds JMH benchmarks, named by benchmark: "
                f"--series {runs_series!r} names only arrays of runs",
                stacklevel=2,
            )
        frames.append((commit, frame))
        shown.append(display_name(path))
        positions.append(rows)
    if not frames:
        raise empty[0][0]
    written = {commit for commit, _ in frames}
    for skipped, commit in empty:
        fate = f"commit {commit} is its other files" if commit in written else "no commit of it is written"
        warnings.warn(f"{skipped.source}: {EMPTY_RUN}: left out, {fate}", stacklevel=2)
    _number_reruns(frames)
    for rows, rename in zip(positions, _same_name_in_every_file(frames), strict=True):
        for name, renamed in rename.items():
            if name in rows:  # Google Benchmark files and arrays of runs keep no entry rows
                rows[renamed] = rows.pop(name)
    _one_unit_per_series(frames, shown, positions)
    runs, starts = [], []
    for commit, frame in frames:
        for (series, fork), grp in frame.groupby(["series_id", "fork"], sort=False):
            values = grp["value"].to_numpy()
            # The direction travels in the long layout, so `steady --out` keeps it for what reads the file.
            better = higher_is_better(grp["mode"].iloc[0], grp["unit"].iloc[0])
            # A time's warm-up falls, a rate's rises: KB-KSSD looks one way (the same direction as the
            # file's, also for a result without a mode whose unit says it is a rate).
            fitter = rate_detector if better else detector
            start = 0 if fitter is None else fitter.fit(values).start_
            starts.append((series, commit, fork, len(values), start))
            runs.append((values, {True: "true", False: "false", None: ""}[better]))
    table = pd.DataFrame(
        starts, columns=["series_id", "commit", "fork", "iterations", "steady_start"]
    )
    # A fork never steady: cut where its series' steady forks became steady (kept whole if none did).
    table["cut"] = steady_state.cuts(table["iterations"].to_numpy(), [start for *_, start in starts],
                                     pd.factorize(table["series_id"])[0])
    long = pd.concat(
        [pd.DataFrame({"series_id": row.series_id, "commit": row.commit, "fork": row.fork,
                       "value": values[row.cut:], "higher_is_better": direction})
         for row, (values, direction) in zip(table.itertuples(), runs, strict=True)],
        ignore_index=True,
    )
    if (long["higher_is_better"] == "").all():
        long = long.drop(columns="higher_is_better")  # arrays of runs only: nothing to say
    return long, table


def _check_commits(files: Sequence[str | Path], commits: Sequence[str] | None) -> None:
    """``ValueError`` for commit ids that cannot name ``files``: a count that differs, an empty id, a
    stem shared by two files (``commits`` None), one file given twice to a commit, or the files of
    one commit (its re-runs) not next to each other, which leaves the commit's place in the history
    unsaid."""
    ids = [stem(f) for f in files] if commits is None else list(commits)
    if len(ids) != len(files):
        raise ValueError(f"{len(files)} files but {len(ids)} commit ids")
    first: dict[str, int] = {}
    for k, (path, commit) in enumerate(zip(files, ids, strict=True)):
        if not commit:
            raise ValueError(f"the commit id of {path} is empty")
        if commit not in first:
            first[commit] = k
            continue
        earlier = files[first[commit]]
        if not is_stdio(path) and any(
            ids[j] == commit and Path(files[j]).resolve() == Path(path).resolve() for j in range(first[commit], k)
        ):
            raise ValueError(f"{path} is given twice (both commit {commit!r}): its forks would count twice")
        if commits is None:
            # Two histories' c05.json globbed together look like re-runs: only ids given pool files.
            raise SameStem(
                f"{earlier} and {path} are both commit {commit!r} by their names; the files of a commit's "
                "re-runs are pooled when given that commit id, next to each other"
            )
        if ids[k - 1] != commit:
            raise ValueError(
                f"commit {commit!r} is given to {earlier} and {path} with commit {ids[k - 1]!r} between them: "
                "the files of one commit (its re-runs) go next to each other, in history order"
            )


def _number_reruns(frames: list[tuple[str, pd.DataFrame]]) -> None:
    """Number the forks of a commit's later files (its re-runs) on after its earlier files' forks.

    Each file numbers its forks from 0: pooled as they were, a fork of each
    re-run was one run of the long layout, and ``--trim-warmup`` on it cut a
    warm-up in the middle of two JVMs' iterations.
    """
    if len({commit for commit, _ in frames}) == len(frames):
        return
    following: dict[str, dict[str, int]] = {}  # commit -> series -> its next free fork
    for commit, frame in frames:
        free = following.setdefault(commit, {})
        if free:
            frame["fork"] = frame["fork"] + frame["series_id"].map(free).fillna(0).astype(int).to_numpy()
        for series, top in frame.groupby("series_id", sort=False)["fork"].max().items():
            free[series] = int(top) + 1


def _same_name_in_every_file(frames: list[tuple[str, pd.DataFrame]]) -> list[dict[str, str]]:
    """Name a benchmark ``<name>:<mode>`` in every file once the files hold it in several modes.

    :func:`read_jmh` names a series within one file: the plain name when the
    file has the benchmark in one mode. A build that adds a mode (``-bm
    thrpt,avgt`` from some commit on) would otherwise split the history of the
    mode it kept into two series at that commit, and one whose mode changed
    would mix rates and times in one series. A name ending in ``:<its mode>``
    is one :func:`read_jmh` suffixed: a JMH benchmark name holds no ``:``
    (parameters sit inside brackets). Returns each frame's renaming (old name -> new).
    """

    def base(name: str, mode: str) -> str:
        return name[: -len(mode) - 1] if mode and name.endswith(":" + mode) else name

    pairs = [set(zip(frame["series_id"], frame["mode"], strict=True)) for _, frame in frames]
    modes: dict[str, set[str]] = {}
    for name, mode in set().union(*pairs):
        modes.setdefault(base(name, mode), set()).add(mode)
    renames = []
    for (_, frame), named in zip(frames, pairs, strict=True):
        rename = {
            name: f"{base(name, mode)}:{mode}"
            for name, mode in named
            if mode and len(modes[base(name, mode)]) > 1 and base(name, mode) == name
        }
        if rename:
            frame["series_id"] = frame["series_id"].replace(rename)
        renames.append(rename)
    return renames


#: Nanoseconds in each time unit JMH writes in a score unit (``ops/ms``, ``us/op``).
_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "hr": 3600 * 10**9,
          "day": 86400 * 10**9}


def _time_unit(unit: str) -> tuple[str, int] | None:
    """("rate", ns) for ``ops/<time unit>``, ("time", ns) for ``<time unit>/op``; None for another unit."""
    if unit.startswith("ops/") and unit[4:] in _NANOS:
        return "rate", _NANOS[unit[4:]]
    if unit.endswith("/op") and unit[:-3] in _NANOS:
        return "time", _NANOS[unit[:-3]]
    return None


def _one_unit_per_series(
    frames: list[tuple[str, pd.DataFrame]], shown: list[str], positions: list[dict[str, int]]
) -> None:
    """Each series' values in the unit of its first file.

    A build that changes a benchmark's ``@OutputTimeUnit`` writes ``ops/ms``
    where the earlier ones wrote ``ops/s``: written as they are, the values
    jumped a thousandfold at that commit, a change point made by the unit.
    JMH's time units convert exactly. Two other units that differ (``ops/s``,
    then ``B/op``) are an :class:`InputError` naming the benchmark, both units
    and where it changes: joined with a warning, the report called the change
    of unit a -99.9 % regression and a true alert. A file without a unit
    (no ``scoreUnit``) cannot tell whether it changed: warned about.
    """
    first: dict[str, tuple[str, str, str]] = {}
    # The last file (and commit) of each series in its first unit: where the other unit begins.
    last: dict[str, tuple[str, str]] = {}
    for (commit, frame), name, rows in zip(frames, shown, positions, strict=True):
        for series, unit in frame.groupby("series_id", sort=False)["unit"].first().items():
            was, where, since = first.setdefault(series, (unit, name, commit))
            if unit == was:
                last[series] = (name, commit)
                continue
            old, new = _time_unit(was), _time_unit(unit)
            if old is None or new is None or old[0] != new[0]:
                if unit and was:
                    before, until = last[series]
                    span = f"commit {since} ({where})" if until == since else (
                        f"commits {since} ({where}) to {until} ({before})")
                    raise InputError(
                        name,
                        rows.get(series),
                        f"{series} is in {unit} from commit {commit} on, in {was} in {span}: only a change "
                        "of time unit converts (ops/s to ops/ms, us/op to ms/op), so its values are not "
                        "comparable across the change (a detector would report it as a change of "
                        "performance); give the files before and after it to two runs of triage steady",
                    )
                warnings.warn(
                    f"{name}: {series} is {_in_unit(unit)}, {where} has it {_in_unit(was)}: "
                    "its values may not be comparable across these commits",
                    stacklevel=3,
                )
                continue
            last[series] = (name, commit)
            # x ops per new-unit = x * old/new ops per old-unit; x new-units per op = x * new/old old-units.
            factor = old[1] / new[1] if old[0] == "rate" else new[1] / old[1]
            in_series = frame["series_id"] == series
            converted = frame.loc[in_series, "value"] * factor
            # Converted values can leave the usable range the file's own values were checked
            # against: written as they came, the output was refused by every reader of it.
            bad = unusable(converted.to_numpy(dtype=float))
            if bad.any():
                problem = value_problem(float(converted.iloc[int(np.argmax(bad))]))
                raise InputError(
                    name, None, f"{series} in {unit}, converted to {was} (the unit of {where}): {problem}"
                )
            frame.loc[in_series, "value"] = converted
            frame.loc[in_series, "unit"] = was


def _in_unit(unit: str) -> str:
    """``in ns/op``; a result without ``scoreUnit`` read "B.a is in , c1.json has it in ns/op"."""
    return f"in {unit}" if unit else "without a unit (no 'scoreUnit')"



#: JMH modes whose scores are rates (higher is better).
RATE_MODES = ("thrpt",)
#: JMH's modes that measure a time per operation (lower is better).
TIME_MODES = ("avgt", "sample", "ss")


def higher_is_better(mode: str, unit: str = "") -> bool | None:
    """A JMH mode's direction, else its score unit's (``ops/<time>`` a rate, ``<time>/op`` a time);
    None for a plain array of runs (neither) or a mode JMH does not have with a unit of neither kind.

    The unit: a result without ``mode`` had an unknown direction while its ``ops/s`` said which
    way is better, and the report called its regressions changes.
    """
    if mode in RATE_MODES or mode in TIME_MODES:
        return mode in RATE_MODES
    kind = _time_unit(unit)
    return None if kind is None else kind[0] == "rate"


def is_jmh(payload: object) -> bool:
    """A parsed JSON document that looks like JMH's ``-rf json`` output: a list holding an object with
    a ``benchmark``.

    Any entry, and that key alone: a damaged file whose first entry had lost
    ``primaryMetric`` was read as a plain list of numbers ('row 1: value
    "{...}" is not a number'), where :func:`read_jmh` names what is missing.
    """
    return isinstance(payload, list) and any(isinstance(item, dict) and "benchmark" in item for item in payload)


#: Result files a folder's hint looks into: enough to find one among a few damaged or foreign ones.
SNIFFED_FILES = 5


def result_files(folder: Path) -> tuple[str, str] | None:
    """``(kind, pattern)`` when ``folder`` holds JMH or Google Benchmark result files: ``("JMH",
    "*.json")``, ``("Google Benchmark", "*.json.gz")``; None when none of the first few JSON files is
    one. For the hint that a folder of builds is cut into a history by ``triage steady``."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and ".json" in p.name.lower())
    for name in names[:SNIFFED_FILES]:
        try:
            with plain_file(folder / name, directory_ok=False) as plain:
                payload = json.loads(plain.read_text(encoding="utf-8-sig"))
        except (InputError, OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue  # a damaged or foreign file: the next one may tell
        kind = "JMH" if is_jmh(payload) else "Google Benchmark" if is_gbench(payload) else None
        if kind is not None:
            return kind, "*" + name[len(stem(name)):]
    return None


def steady_command(folder: str | Path, pattern: str | None = None) -> str:
    """The ``triage steady`` line that cuts a folder of result files (one per build) into a history:
    its files named by ``pattern`` (default: as :func:`result_files` finds them, else ``*.json``)."""
    import shlex

    if pattern is None:
        found = result_files(Path(folder))
        pattern = found[1] if found else "*.json"
    # The folder quoted for a shell (a space in it split the line); the glob sorts by name, so it is
    # history order only for names that sort so (build numbers with leading zeros, not git hashes).
    return (f"`triage steady {shlex.quote(str(folder))}/{pattern} --out long.csv` (the shell sorts the "
            "files by name: when names are not in history order, as git hashes are not, list the files in order)")


def read_jmh_dataset(
    path: str | Path,
    *,
    trim_warmup: str = "none",
    aggregate: str = "mean",
    commit: str | None = None,
    source: str | None = None,
) -> Dataset:
    """One JMH result file as a dataset: a series per benchmark (and params), the file one commit.

    JMH runs one build, so the file is one point of each series' history: the
    commit id is ``commit`` (default: the file stem). Its value aggregates
    (``aggregate``) every fork's measurement iterations, or only each fork's
    steady part when ``trim_warmup`` names a detector (:func:`steady_long`).
    ``thrpt`` series are higher-is-better, the time modes lower-is-better.
    A history of several builds: :func:`steady_long` on their files, then
    :meth:`~triage.core.history.Dataset.from_frame`.
    """
    path = Path(path)
    commit = path.stem if commit is None else commit
    # One reading: the direction of each series travels in the long frame's higher_is_better column
    # (a second read_jmh for the modes printed each of the file's warnings twice).
    long, starts = steady_long([path], [commit], trim_warmup=trim_warmup)
    if trim_warmup.strip().lower() != "none":
        from triage.steady_state import make, trim_report

        # What the long layout's trimming says (summary / convert read this file so): forks never
        # steady are kept whole, and single-shot forks have nothing to cut.
        message = trim_report(
            trim_warmup.strip().lower(),
            starts["iterations"].to_numpy(),
            [None if pd.isna(v) else int(v) for v in starts["steady_start"]],
            runs="forks",
            min_run=getattr(make(trim_warmup), "min_run", None),
            cut=starts["cut"].to_numpy(),
        )
        if message is not None:
            warnings.warn(f"{display_name(source or path)}: {message}", stacklevel=2)
    return dataset_from_long(long, None, source or str(path), aggregate=aggregate)
