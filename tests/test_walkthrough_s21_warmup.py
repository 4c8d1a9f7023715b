"""Walkthrough s21: a JVM / Python performance engineer brings raw iterations and trims the warm-up.

Files written as the tools write them (JMH ``-rf json`` with several forks,
params, secondary metrics and the modes thrpt / avgt / sample / ss in ops/ms,
us/op and ms/op; Google Benchmark repetitions; pytest-benchmark runs saved
with their rounds; asv results), over several commits, then ``triage steady``,
``convert`` / ``summary`` ``--trim-warmup kbkssd|cpssd|kstep|none`` and a hand
computation of every commit's value.

Defects found (what the user did, what went wrong, what happens now):

1. KB-KSSD on short runs. ``triage steady`` (or ``--trim-warmup kbkssd``) on
   JMH forks of ``-i 20`` iterations, 12 Google Benchmark repetitions or 10
   single-shot iterations: a first iteration 2.5x the steady level was
   reported "steady from 0" (median start 0, nothing cut, "never steady" 0),
   so the user believed the warm-up gone while every commit's value carried
   it. Below 30 iterations (two sides of the 15-iteration short kernel) the
   short kernel proposes nothing and KB-KSSD never finds a warm-up. Letting
   the whole-run kernel decide alone (commit b72b386, replaced) cut most
   warm-ups but Kelly's test then called 8-37 % of such forks never steady;
   kept whole, their commits stood out and E-Divisive raised 13-17 false
   candidates in 40 no-change histories of 30 commits (0 untrimmed). Now such
   a run is not judged (``start_`` None, ``too_short_``), kept whole as every
   other short fork (values as untrimmed: no false candidates), and the
   trimming and ``triage steady`` say how many forks were shorter than the 30
   iterations KB-KSSD needs and that cpssd judges them. Runs of 30 or more are
   judged as before (every start on the steady-state benchmark's 3,000
   generated runs, both directions, unchanged).
2. ``--trim-warmup`` on data that is one value per commit already (asv
   results, a converted history, pytest-benchmark runs saved without their
   rounds) did nothing and said nothing: the user believed the values were
   trimmed. Now a warning says there is no warm-up to cut.
3. Runs that never became steady were kept whole (the documented rule) but
   ``summary`` / ``convert`` / ``candidates --trim-warmup`` never said so, and
   ``triage steady``'s table only counted them per series: which fork of which
   commit was left to ``--starts``. Now ``--trim-warmup`` warns with their
   count (a JMH file read with ``--data`` names the file), and ``triage steady``
   names the series, commit and fork of each (the first five) and that they
   are kept whole.
4. ``triage steady``'s output (already cut, default ``kbkssd``) keeps its
   ``fork`` column, and the README said ``--trim-warmup`` on it later "still
   cuts each fork on its own": doing so cut the steady parts a second time and
   moved every commit's value by 0.3-5 % on JMH forks of 10-40 iterations
   (KB-KSSD cuts a flat run at its largest fall). Now ``steady`` says the
   file is cut already and is to be read without ``--trim-warmup``; the
   README says so, and that ``--trim-warmup none`` writes every iteration.
5. A pytest-benchmark run given to ``triage steady`` was refused as "not JMH
   JSON results: expected a non-empty list of benchmark objects", leaving the
   user to guess where such runs are read. Now the error names it a
   pytest-benchmark run and gives the ``--data`` command that trims its rounds.
6. A Google Benchmark file whose third repetition says ``"time_unit": "ps"``
   was refused at row 1 as "its repetitions are in several time units (ns,
   ps)"; now at row 3, as a unit Google Benchmark does not write. A negative
   ``real_time`` (a damaged file) was read as a time and trimmed and averaged
   with the rest (the pytest-benchmark reader refuses negative times); now
   refused at its row.
7. A JMH file with a negative thrpt / avgt / sample / ss score (a damaged
   file: JMH never writes one) was read, trimmed and averaged as it stood;
   now refused naming the file, the benchmark's row, the fork and iteration.
   Plain arrays of runs, whose values may be anything, are read as before.
8. ``triage summary --data 2222bbb.json.gz`` (a Google Benchmark run with a
   failed benchmark, compressed as CI archives keep them): the warning named
   ``/tmp/triage-input-.../2222bbb.json``, a temporary copy the user never gave
   and that was gone when the line was read (errors were already translated,
   warnings not), and came twice, as a JMH / Google Benchmark file given to
   ``--data`` was read twice (its values, then its modes). Now the readers'
   warnings (Google Benchmark, JMH, Otava config, Perfherder) name
   ``2222bbb.json.gz`` (``display_name`` knows the copies ``plain_file``
   holds), and the file is read once. (The long layout's own warnings, from
   ``triage.core.history``, e.g. "sorted by timestamp" for ``u.csv.gz``, still
   name the copy: outside this walkthrough's files, reported.)
9. Google Benchmark output older than v1.5 (CI archives from before 2019),
   which the reader says it reads (``name`` where ``run_name`` is missing),
   has no ``run_type``: its ``BM_x_mean`` / ``_median`` / ``_stddev`` runs
   were read as three more series (the standard deviation as a benchmark's
   time), and with ``--benchmark_report_aggregates_only`` only those. Now a
   run named ``<benchmark>_<aggregate>`` beside its benchmark (or a sibling
   aggregate) is an aggregate, left out or standing in as the new output's
   are; a benchmark merely named ``BM_running_mean`` stays one.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage import steady_state
from triage.loaders import load
from triage.readers.jmh import read_jmh, steady_long


def _warm(level: float, n: int, rng: np.random.Generator, rising: bool = False) -> list[float]:
    """``n`` iterations at ``level`` (1 % noise) after a warm-up: 2.5x the level at first (rates: 0.4x)."""
    t = np.arange(n)
    x = level * (1 + 0.01 * rng.standard_normal(n))
    x = x * (1 - 0.6 * np.exp(-t / 2)) if rising else x * (1 + 1.5 * np.exp(-t / 2))
    return [round(float(v), 4) for v in x]


def _jmh(path: Path, forks: int = 3, n: int = 20, level: float = 250.0, seed: int = 0) -> Path:
    """One build's JMH results as JMH writes them: an avgt benchmark (us/op) with params and a
    secondary metric, and a thrpt one (ops/ms), ``forks`` forks of ``n`` iterations, no JMH warm-up."""
    rng = np.random.default_rng(seed)

    def entry(bench: str, mode: str, unit: str, params: dict | None, raw: list) -> dict:
        e = {
            "jmhVersion": "1.37",
            "benchmark": bench,
            "mode": mode,
            "threads": 1,
            "forks": forks,
            "warmupIterations": 0,
            "measurementIterations": n,
            "primaryMetric": {
                "score": float(np.mean(raw)),
                "scoreError": 1.0,
                "scoreUnit": unit,
                "rawData": raw,
            },
            "secondaryMetrics": {
                "·gc.alloc.rate": {
                    "score": 512.0,
                    "scoreUnit": "MB/sec",
                    "rawData": [[512.0] * n for _ in range(forks)],
                }
            },
        }
        if params:
            e["params"] = params
        return e

    path.write_text(
        json.dumps(
            [
                entry(
                    "org.acme.ParserBench.tokenize",
                    "avgt",
                    "us/op",
                    {"size": "1024"},
                    [_warm(level, n, rng) for _ in range(forks)],
                ),
                entry(
                    "org.acme.ParserBench.parse",
                    "thrpt",
                    "ops/ms",
                    None,
                    [_warm(5000.0, n, rng, rising=True) for _ in range(forks)],
                ),
            ],
            indent=4,
        )
    )
    return path


# ---------------------------------------------------------------- 1. KB-KSSD on runs under 30 iterations


def _hand_value(path: Path, series: str, method: str) -> float:
    """The commit's value computed by hand: each fork cut by ``method`` (kept whole when never
    steady), the forks' kept iterations pooled, their mean."""
    raw = read_jmh(path)
    kept = []
    for _, fork in raw[raw.series_id == series].groupby("fork"):
        x = fork["value"].to_numpy()
        detector = steady_state.make(method, rates=fork["mode"].iloc[0] == "thrpt")
        start = None if detector is None else detector.fit(x).start_
        kept.extend(x if start is None else x[start:])
    return float(np.mean(kept))


def test_kbkssd_does_not_call_20_iteration_forks_steady_from_0_and_says_they_are_too_short(
    tmp_path,
):
    files = [_jmh(tmp_path / f"c{i}.json", seed=i) for i in range(2)]
    _, starts = steady_long(files, trim_warmup="kbkssd")
    # Each fork starts at 2.5x its level (avgt) or 0.4x (thrpt): all 12 were "steady from 0".
    assert starts["steady_start"].isna().all(), starts
    with pytest.warns(
        UserWarning,
        match=r"c0.json: --trim-warmup kbkssd: 6 of 6 forks never steady .*"
        r"6 of them shorter than the 30 iterations kbkssd needs \(not judged; cpssd",
    ):
        ds = load(files[0], trim_warmup="kbkssd")
    # Kept whole, every commit alike: the value is every iteration's mean, as without trimming.
    for series in ("org.acme.ParserBench.tokenize[size=1024]", "org.acme.ParserBench.parse"):
        assert ds[series].values[0] == pytest.approx(
            _hand_value(files[0], series, "none"), rel=1e-12
        )
    code, text = invoke(["steady", *files, "--out", tmp_path / "s.csv", "--trim-warmup", "kbkssd"])
    assert code == 0, text
    assert (
        "12 of them shorter than the 30 iterations kbkssd needs (not judged; cpssd judges short runs)"
        in flat(text)
    ), text
    # What the hint offers holds: CP-SSD judges these forks, rates and times each their way, and the
    # commit's value read back as every command reads it is the mean of the forks' steady parts.
    long, starts = steady_long(files, trim_warmup="cpssd")
    assert (starts["steady_start"] > 0).all(), starts
    ds = load(_write(long, tmp_path / "steady.csv"))
    for path, commit in zip(files, ("c0", "c1"), strict=True):
        for series, level in (
            ("org.acme.ParserBench.tokenize[size=1024]", 250.0),
            ("org.acme.ParserBench.parse", 5000.0),
        ):
            history = ds[series]
            value = history.values[list(history.commits).index(commit)]
            assert value == pytest.approx(_hand_value(path, series, "cpssd"), rel=1e-12)
            assert abs(value / level - 1) < 0.02, (series, value)
    assert ds["org.acme.ParserBench.parse"].higher_is_better is True
    assert ds["org.acme.ParserBench.tokenize[size=1024]"].higher_is_better is False


def test_kbkssd_does_not_judge_12_google_benchmark_repetitions(tmp_path):
    rng = np.random.default_rng(3)
    reps = _warm(1210.0, 12, rng)
    doc = {
        "context": {"date": "2024-03-01T10:00:00+00:00", "library_build_type": "release"},
        "benchmarks": [
            {
                "name": "BM_parse/1024",
                "run_name": "BM_parse/1024",
                "run_type": "iteration",
                "repetitions": 12,
                "repetition_index": i,
                "threads": 1,
                "iterations": 1000,
                "real_time": v,
                "cpu_time": v,
                "time_unit": "ns",
            }
            for i, v in enumerate(reps)
        ],
    }
    path = tmp_path / "1111aaa.json"
    path.write_text(json.dumps(doc))
    _, starts = steady_long([path], trim_warmup="kbkssd")
    assert starts["steady_start"].isna().all(), starts  # was 0: "steady from 0" at 2.5x the level
    _, starts = steady_long([path], trim_warmup="cpssd")
    assert starts["steady_start"].iloc[0] > 0, starts


# ---------------------------------------------------------------- 2. one value per commit: nothing to trim


def test_trim_warmup_on_one_value_per_commit_says_nothing_was_trimmed(tmp_path):
    data = tmp_path / "per-commit.csv"
    data.write_text(
        "series_id,commit,value\n" + "".join(f"s,c{i},{100 + i % 3}\n" for i in range(12))
    )
    with pytest.warns(
        UserWarning, match="every run holds a single measurement.*nothing was trimmed"
    ):
        load(data, trim_warmup="cpssd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(data)  # without --trim-warmup: nothing to say


# ---------------------------------------------------------------- 3. never-steady runs are reported


def _drifting_history(path: Path) -> Path:
    """A long file with a fork column: three forks per commit, fork 2 of commit c1 drifting."""
    rng = np.random.default_rng(1)
    t = np.arange(40)
    rows = ["series_id,commit,fork,value"]
    for commit in ("c0", "c1"):
        for fork in range(3):
            x = (
                _warm(50.0, 40, rng)
                if (commit, fork) != ("c1", 2)
                else list(50 + 0.5 * t + 0.3 * rng.standard_normal(40))
            )
            rows += [f"get,{commit},{fork},{v}" for v in x]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_trim_warmup_counts_runs_that_never_became_steady(tmp_path):
    data = _drifting_history(tmp_path / "runs.csv")
    with pytest.warns(UserWarning, match=r"1 of 6 runs .* never steady by kbkssd .*: 1 cut where the steady runs "
                                         r"of their series became steady \(the median of their starts\)"):
        ds = load(data, trim_warmup="kbkssd")
    frame = pd.read_csv(data)
    starts = {
        (commit, fork): steady_state.make("kbkssd").fit(grp["value"].to_numpy()).start_
        for (commit, fork), grp in frame.groupby(["commit", "fork"])
    }
    assert starts.pop(("c1", 2)) is None and None not in starts.values()
    # Cut where the series' five steady forks became steady (the median of their starts), not kept
    # whole: whole, its first iterations were in c1's value and in no other commit's.
    at = int(np.median(list(starts.values())))
    assert 0 < at < 40
    drift = frame[(frame.commit == "c1") & (frame.fork == 2)]["value"].to_numpy()
    kept = [drift[at:]]
    for fork in (0, 1):
        x = frame[(frame.commit == "c1") & (frame.fork == fork)]["value"].to_numpy()
        kept.append(x[starts[("c1", fork)] :])
    assert ds["get"].values[1] == pytest.approx(np.mean(np.concatenate(kept)), rel=1e-12)


def test_a_fork_never_steady_is_kept_whole_when_no_fork_of_its_series_is_steady(tmp_path):
    """Nothing to cut it at: the series' other forks give no start (one series drifts in every fork)."""
    rng = np.random.default_rng(3)
    t = np.arange(40)
    rows = ["series_id,commit,fork,value"]
    for commit in ("c0", "c1"):
        for fork in range(2):
            rows += [f"drift,{commit},{fork},{v}" for v in 50 + 0.5 * t + 0.3 * rng.standard_normal(40)]
        rows += [f"calm,{commit},0,{v}" for v in _warm(50.0, 40, rng)]
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=r"4 of 6 runs .* never steady by kbkssd .*: kept whole"):
        ds = load(tmp_path / "runs.csv", trim_warmup="kbkssd")
    frame = pd.read_csv(tmp_path / "runs.csv")
    for k, commit in enumerate(("c0", "c1")):
        assert ds["drift"].values[k] == pytest.approx(
            frame[(frame.series_id == "drift") & (frame.commit == commit)]["value"].mean(), rel=1e-12)


def test_a_jmh_file_read_with_trim_warmup_names_itself_and_its_never_steady_forks(tmp_path):
    rng = np.random.default_rng(1)
    t = np.arange(40)
    raw = [_warm(50.0, 40, rng), [round(50 + 0.5 * i + 0.3 * rng.standard_normal(), 3) for i in t]]
    path = tmp_path / "3f2a9c1.json"
    path.write_text(
        json.dumps(
            [
                {
                    "benchmark": "org.acme.CacheBench.get",
                    "mode": "avgt",
                    "params": {"entries": "100000"},
                    "primaryMetric": {"scoreUnit": "ns/op", "rawData": raw},
                }
            ]
        )
    )
    with pytest.warns(
        UserWarning, match=r"3f2a9c1.json: --trim-warmup kbkssd: 1 of 2 forks never steady"
    ):
        load(path, trim_warmup="kbkssd")


def test_steady_names_the_fork_and_commit_never_steady(tmp_path):
    data = _drifting_history(tmp_path / "runs.csv")
    frame = pd.read_csv(data)
    for commit, grp in frame.groupby("commit"):
        raw = [g["value"].tolist() for _, g in grp.groupby("fork")]
        (tmp_path / f"{commit}.json").write_text(
            json.dumps(
                [
                    {
                        "benchmark": "org.acme.CacheBench.get",
                        "mode": "avgt",
                        "params": {"entries": "100000"},
                        "primaryMetric": {"scoreUnit": "ns/op", "rawData": raw},
                    }
                ]
            )
        )
    _exits_saying(
        ["steady", tmp_path / "c0.json", tmp_path / "c1.json", "--out", tmp_path / "s.csv",
         "--trim-warmup", "kbkssd", "--starts", tmp_path / "starts.csv"],
        0,
        "never steady by kbkssd (still moving, or too short to tell), cut where the steady forks of its "
        "series became steady (the median of their starts): org.acme.CacheBench.get[entries=100000] "
        "commit c1 fork 2 (40 iterations, first 6 cut)",
    )
    starts = pd.read_csv(tmp_path / "starts.csv")
    steady = starts.dropna(subset=["steady_start"])
    assert len(steady) == 5 and (steady["cut"] == steady["steady_start"]).all()
    assert int(np.median(steady["steady_start"])) == 6
    drift = starts[starts["steady_start"].isna()]
    assert drift[["commit", "fork", "cut"]].values.tolist() == [["c1", 2, 6]]
    written = pd.read_csv(tmp_path / "s.csv")
    assert ((written.commit == "c1") & (written.fork == 2)).sum() == 34


def _exits_saying(args: list, code: int, message: str) -> None:
    got, text = invoke(args)
    assert got == code, text
    assert message in flat(text), text


# ---------------------------------------------------------------- 4. steady's output is cut already


def test_steady_says_its_output_is_cut_already(tmp_path):
    path = _jmh(tmp_path / "c0.json", n=40)
    code, text = invoke(["steady", path, "--out", tmp_path / "s.csv"])
    assert code == 0, text
    assert "steady iterations -> " in flat(text)
    assert "(cut by cpssd already: read it without --trim-warmup)" in flat(text), text  # the default
    code, text = invoke(["steady", path, "--out", tmp_path / "all.csv", "--trim-warmup", "none"])
    assert code == 0, text
    assert "iterations (none cut) -> " in flat(text) and "already" not in text, text


# ---------------------------------------------------------------- 5. a pytest-benchmark run given to steady


def test_steady_on_a_pytest_benchmark_run_says_where_such_runs_are_read(tmp_path):
    run = tmp_path / "0001_9a8b7c6.json"
    run.write_text(
        json.dumps(
            {
                "machine_info": {"node": "ci-1", "system": "Linux", "python_version": "3.12.1"},
                "commit_info": {
                    "id": "9a8b7c6d5e4f",
                    "time": "2024-03-01T10:00:00+01:00",
                    "dirty": False,
                },
                "benchmarks": [
                    {
                        "name": "test_parse[1024]",
                        "fullname": "tests/test_parse.py::test_parse[1024]",
                        "stats": {
                            "median": 0.00121,
                            "mean": 0.00125,
                            "rounds": 3,
                            "data": [0.0031, 0.0013, 0.00121],
                        },
                    }
                ],
                "datetime": "2024-03-01T12:00:00+00:00",
                "version": "4.0.0",
            }
        )
    )
    code, text = invoke(["steady", run, "--out", tmp_path / "s.csv"])
    assert code == 2, text
    line = flat(text)
    assert (
        "0001_9a8b7c6.json: a pytest-benchmark run, not JMH or Google Benchmark results" in line
    ), text
    assert "--data" in line and "--trim-warmup" in line, text


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


# ---------------------------------------------------------------- 6. damaged files: the row and the problem


def test_a_google_benchmark_repetition_in_no_unit_is_named_at_its_own_row(tmp_path):
    def rep(i: int, unit: str, value: float = 1210.0) -> dict:
        return {
            "name": "BM_parse/1024",
            "run_name": "BM_parse/1024",
            "run_type": "iteration",
            "repetition_index": i,
            "real_time": value,
            "time_unit": unit,
        }

    path = tmp_path / "1111aaa.json"
    path.write_text(
        json.dumps({"context": {}, "benchmarks": [rep(0, "ns"), rep(1, "ns"), rep(2, "ps")]})
    )
    code, text = invoke(["steady", path, "--out", tmp_path / "s.csv"])
    assert code == 2, text
    assert "1111aaa.json, row 3: BM_parse/1024: time_unit 'ps' is not one of ns, us, ms, s" in flat(
        text
    ), text
    path.write_text(
        json.dumps({"context": {}, "benchmarks": [rep(0, "ns"), rep(1, "ns", -1210.0)]})
    )
    code, text = invoke(["summary", "--data", path, "--trim-warmup", "kbkssd"])
    assert code == 2, text
    assert (
        "1111aaa.json, row 2: BM_parse/1024: real_time is -1210.0: a time cannot be negative"
        in flat(text)
    ), text


def test_a_negative_jmh_score_is_refused_naming_fork_and_iteration(tmp_path):
    path = _jmh(tmp_path / "c0.json", forks=2, n=10)
    entries = json.loads(path.read_text())
    entries[1]["primaryMetric"]["rawData"][1][4] = -4990.0  # thrpt, fork 1, iteration 4
    path.write_text(json.dumps(entries))
    _exits_saying(
        ["steady", path, "--out", tmp_path / "s.csv"],
        2,
        "c0.json, row 2: org.acme.ParserBench.parse: fork 1: iteration 4 is -4990.0: a thrpt score "
        "(operations per time) cannot be negative",
    )


# ---------------------------------------------------------------- 8. warnings name the file the user gave, once


def test_warnings_about_a_compressed_result_file_name_it_and_come_once(tmp_path):
    import gzip

    run = {
        "context": {},
        "benchmarks": [
            {
                "name": "BM_io",
                "run_type": "iteration",
                "error_occurred": True,
                "error_message": "no disk",
            },
            *(
                {
                    "name": "BM_parse",
                    "run_type": "iteration",
                    "repetition_index": i,
                    "real_time": v,
                    "time_unit": "ns",
                }
                for i, v in enumerate(_warm(1210.0, 12, np.random.default_rng(0)))
            ),
        ],
    }
    path = tmp_path / "2222bbb.json.gz"
    path.write_bytes(gzip.compress(json.dumps(run).encode()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load(path, trim_warmup="kbkssd")
    failed = [str(w.message) for w in caught if "failed in this run" in str(w.message)]
    # Once (the file was read twice, for its values and again for its modes), and under its own name
    # (it was the temporary copy's, /tmp/triage-input-.../2222bbb.json).
    assert failed == [
        f"{path}: 1 benchmark(s) failed in this run and have no measurement: BM_io (no disk)"
    ], failed
    assert all("triage-input-" not in str(w.message) for w in caught), [
        str(w.message) for w in caught
    ]
    assert ds["BM_parse"].commits[0] == "2222bbb" and ds["BM_parse"].higher_is_better is False


# ---------------------------------------------------------------- 9. Google Benchmark output older than v1.5


def test_google_benchmark_output_before_v1_5_leaves_its_aggregates_out(tmp_path):
    """v1.4 and older write no run_type / run_name: an aggregate is a run named ``<name>_mean``."""
    reps = [
        {
            "name": "BM_parse/1024",
            "iterations": 1000,
            "real_time": v,
            "cpu_time": v,
            "time_unit": "ns",
        }
        for v in (3000.0, 1300.0, 1210.0, 1205.0, 1212.0)
    ]
    aggregates = [
        {
            "name": f"BM_parse/1024_{a}",
            "iterations": 5,
            "real_time": v,
            "cpu_time": v,
            "time_unit": "ns",
        }
        for a, v in (("mean", 1585.4), ("median", 1210.0), ("stddev", 798.0))
    ]
    lone = {
        "name": "BM_running_mean",
        "iterations": 10,
        "real_time": 5.0,
        "cpu_time": 5.0,
        "time_unit": "ns",
    }
    path = tmp_path / "3f2a9c1.json"
    path.write_text(
        json.dumps(
            {"context": {"date": "2019-03-01 10:00:00"}, "benchmarks": [*reps, *aggregates, lone]}
        )
    )
    ds = load(path, trim_warmup="cpssd")
    # Were five series: the stddev (798 ns) read as a benchmark's time, the mean and median too.
    assert sorted(h.series_id for h in ds) == ["BM_parse/1024", "BM_running_mean"]
    kept = steady_long([path], trim_warmup="cpssd")[1]
    assert kept[kept.series_id == "BM_parse/1024"]["iterations"].tolist() == [5]
    only = tmp_path / "4b3c2d1.json"  # --benchmark_report_aggregates_only: the mean stands in
    only.write_text(json.dumps({"context": {}, "benchmarks": aggregates}))
    assert [(h.series_id, list(h.values)) for h in load(only)] == [("BM_parse/1024", [1585.4])]
