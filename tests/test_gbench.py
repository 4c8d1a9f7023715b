"""Google Benchmark's JSON output, read as one build's run (as JMH results are), on files written here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.core.errors import InputError
from triage.loaders import load
from triage.readers.jmh import read_jmh
from triage.sniffing import data_layout


def _run(benchmarks: list[dict]) -> dict:
    """A run as Google Benchmark v1.8 writes it with --benchmark_format=json."""
    return {
        "context": {"date": "2026-11-20T10:00:00+00:00", "host_name": "ci-7", "executable": "./bench",
                    "num_cpus": 2, "library_build_type": "release"},
        "benchmarks": benchmarks,
    }


def _iteration(name: str, rep: int, real: float, cpu: float | None = None, unit: str = "ns", reps: int = 3) -> dict:
    return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
            "run_type": "iteration", "repetitions": reps, "repetition_index": rep, "threads": 1,
            "iterations": 1000, "real_time": real, "cpu_time": real * 0.9 if cpu is None else cpu,
            "time_unit": unit}


def _aggregate(name: str, kind: str, value: float, unit: str = "ns") -> dict:
    return {"name": f"{name}_{kind}", "run_name": name, "run_type": "aggregate", "repetitions": 3,
            "threads": 1, "aggregate_name": kind, "aggregate_unit": "time", "iterations": 3,
            "real_time": value, "cpu_time": value, "time_unit": unit}


def _write(path: Path, payload: dict) -> Path:
    path.write_text(json.dumps(payload))
    return path


def test_repetitions_are_the_measurements_and_aggregates_are_left_out(tmp_path):
    reps = [_iteration("BM_parse/1024", i, v) for i, v in enumerate([105.0, 100.0, 101.0])]
    aggs = [_aggregate("BM_parse/1024", k, v) for k, v in (("mean", 102.0), ("median", 101.0), ("stddev", 2.6))]
    path = _write(tmp_path / "3f2a9c1.json", _run([*reps, *aggs, _iteration("BM_copy", 0, 7.0, unit="us", reps=1)]))
    frame = read_jmh(path)
    assert frame["series_id"].tolist() == ["BM_parse/1024"] * 3 + ["BM_copy"]
    assert frame["value"].tolist() == [105.0, 100.0, 101.0, 7.0]
    assert frame["unit"].tolist() == ["ns/op"] * 3 + ["us/op"]
    assert data_layout(path) == "gbench"


def test_a_benchmark_reported_by_its_aggregates_only_is_read_from_its_mean(tmp_path):
    aggs = [_aggregate("BM_x", k, v) for k, v in (("median", 9.0), ("mean", 10.0), ("stddev", 1.0))]
    data = load(_write(tmp_path / "c1.json", _run(aggs)))
    assert data["BM_x"].values.tolist() == [10.0]


def test_one_run_is_one_commit_of_lower_is_better_series(tmp_path):
    path = _write(tmp_path / "3f2a9c1.json", _run([_iteration("BM_a", i, 10.0 + i) for i in range(3)]))
    data = load(path)
    history = data["BM_a"]
    assert history.commits.tolist() == ["3f2a9c1"] and history.values.tolist() == [11.0]
    assert history.higher_is_better is False
    code, out = invoke(["summary", "--data", path])
    assert code == 0, out


def test_steady_makes_a_history_of_runs_in_one_unit(tmp_path):
    files = []
    for c, (value, unit) in enumerate([(2000.0, "ns"), (2.0, "us"), (2.5, "us")]):
        files.append(_write(tmp_path / f"c{c}.json", _run([_iteration("BM_a", i, value, unit=unit) for i in range(3)])))
    out = tmp_path / "long.csv"
    code, text = invoke(["steady", *files, "--trim-warmup", "none", "--out", out])
    assert code == 0, text
    history = load(out)["BM_a"]
    assert history.commits.tolist() == ["c0", "c1", "c2"]
    assert np.allclose(history.values, [2000.0, 2000.0, 2500.0])  # in the first run's ns
    assert set(pd.read_csv(out)["higher_is_better"]) == {False}


def test_a_failed_benchmark_is_left_out_with_a_warning(tmp_path):
    failed = {"name": "BM_bad", "run_name": "BM_bad", "run_type": "iteration", "error_occurred": True,
              "error_message": "no input file", "real_time": 0, "cpu_time": 0, "time_unit": "ns"}
    path = _write(tmp_path / "c1.json", _run([failed, _iteration("BM_ok", 0, 5.0, reps=1)]))
    with pytest.warns(UserWarning, match="BM_bad .no input file"):
        frame = read_jmh(path)
    assert frame["series_id"].tolist() == ["BM_ok"]
    all_failed = _write(tmp_path / "c2.json", _run([failed]))
    with pytest.warns(UserWarning), pytest.raises(InputError, match="every benchmark failed"):
        read_jmh(all_failed)


@pytest.mark.parametrize(
    ("benchmarks", "row", "problem"),
    [
        ([], None, "'benchmarks' is empty"),
        (["BM_a"], 1, "expected a benchmark object"),
        ([{"run_type": "iteration", "real_time": 1.0}], 1, "without a 'name'"),
        ([_iteration("BM_a", 0, 1.0), {**_iteration("BM_a", 1, 1.0), "real_time": "fast"}], 2,
         "real_time is \"fast\", not a number"),
        ([{**_iteration("BM_a", 0, 1.0), "time_unit": "ks"}], 1, "time_unit 'ks'"),
        ([_iteration("BM_a", 0, 1.0), _iteration("BM_a", 0, 2.0)], 2, "repetition 0 again"),
        ([_iteration("BM_a", 0, 1.0), _iteration("BM_a", 1, 2.0, unit="us")], 1, "several time units"),
    ],
)
def test_bad_runs_are_located_errors(tmp_path, benchmarks, row, problem):
    path = _write(tmp_path / "bad.json", _run(benchmarks))
    with pytest.raises(InputError, match=problem) as info:
        read_jmh(path)
    assert info.value.row == row and "bad.json" in str(info.value)


def test_the_cli_names_the_file_and_row_of_a_bad_value(tmp_path):
    path = _write(tmp_path / "c1.json", _run([_iteration("BM_a", 0, 1.0), {**_iteration("BM_a", 1, 1.0), "real_time": None}]))
    code, out = invoke(["summary", "--data", path])
    assert code == 2 and "c1.json" in flat(out) and "row 2" in flat(out), out


def test_a_run_on_standard_input_is_refused_for_want_of_a_commit_id(tmp_path):
    path = _write(tmp_path / "c1.json", _run([_iteration("BM_a", 0, 1.0, reps=1)]))
    code, out = invoke(["summary", "--data", "-"], stdin=path.read_text())
    assert code == 2 and "Google Benchmark results are one commit" in flat(out), out
