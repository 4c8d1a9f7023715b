"""pytest-benchmark's saved runs (.benchmarks folders, --benchmark-json files), on runs written here by hand."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import flat, invoke

from triage.core.errors import InputError
from triage.loaders import load
from triage.readers.pytest_benchmark import read_pytest_benchmark
from triage.sniffing import data_layout

MACHINE = {
    "node": "ci-7",
    "processor": "x86_64",
    "machine": "x86_64",
    "python_compiler": "GCC 12.2.0",
    "python_implementation": "CPython",
    "python_version": "3.12.1",
    "release": "6.1.0",
    "system": "Linux",
    "cpu": {"brand_raw": "AMD EPYC", "count": 2},
}


def _bench(fullname: str, typical: float, data: list[float] | None = None, **stats: object) -> dict:
    """One entry of ``benchmarks`` as pytest-benchmark 4 writes it (``data`` with --benchmark-save-data)."""
    m = typical  # the median
    values = {
        "min": m * 0.9,
        "max": m * 3,
        "mean": m * 1.2,
        "stddev": m * 0.1,
        "rounds": 5,
        "median": m,
        "iqr": m * 0.05,
        "q1": m * 0.97,
        "q3": m * 1.02,
        "iqr_outliers": 0,
        "stddev_outliers": 1,
        "outliers": "1;0",
        "ld15iqr": m * 0.9,
        "hd15iqr": m * 1.1,
        "ops": 1 / (m * 1.2),
        "total": m * 6,
        "iterations": 1,
    }
    values.update(stats)
    if data is not None:
        values["data"] = data
    name = fullname.rsplit("::", 1)[-1]
    return {
        "group": None,
        "name": name,
        "fullname": fullname,
        "params": None,
        "param": None,
        "extra_info": {},
        "options": {
            "disable_gc": False,
            "timer": "perf_counter",
            "min_rounds": 5,
            "max_time": 1.0,
            "min_time": 5e-06,
            "warmup": False,
        },
        "stats": values,
    }


def _run(
    commit: str,
    time: str | None,
    benchmarks: list[dict],
    *,
    machine: dict | None = None,
    dirty: bool = False,
    when: str = "2024-03-20T09:00:00.000000+00:00",
) -> dict:
    info = {
        "id": commit,
        "time": time,
        "author_time": time,
        "dirty": dirty,
        "project": "acme",
        "branch": "main",
    }
    return {
        "machine_info": MACHINE if machine is None else machine,
        "commit_info": info,
        "benchmarks": benchmarks,
        "datetime": when,
        "version": "4.0.0",
    }


def _write(path: Path, payload: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=4))
    return path


def _autosaved(
    folder: Path, medians: list[float], *, name: str = "tests/test_parse.py::test_parse"
) -> Path:
    """A machine folder of runs, one commit a run (c0, c1, ...), committed an hour apart."""
    for i, m in enumerate(medians):
        run = _run(
            f"c{i}",
            f"2024-03-01T{i % 24:02d}:00:00+01:00",
            [_bench(name, m), _bench("tests/test_io.py::test_copy", 2e-3)],
        )
        run["commit_info"]["time"] = f"2024-03-{1 + i // 24:02d}T{i % 24:02d}:00:00+01:00"
        _write(folder / f"{i + 1:04d}_c{i}_20240320_090000.json", run)
    return folder


def test_a_benchmarks_folder_is_one_series_per_fullname_in_commit_time_order(tmp_path):
    root = tmp_path / ".benchmarks"
    folder = root / "Linux-CPython-3.12-64bit"
    # Written out of order: the history is the commits' time order, not the files'.
    _write(
        folder / "0001_c2.json",
        _run("c2", "2024-03-03T10:00:00+00:00", [_bench("t.py::test_a", 3e-3)]),
    )
    _write(
        folder / "0002_c0.json",
        _run("c0", "2024-03-01T10:00:00+00:00", [_bench("t.py::test_a", 1e-3)]),
    )
    _write(
        folder / "0003_c1.json",
        _run("c1", "2024-03-02T10:00:00+02:00", [_bench("t.py::test_a", 2e-3)]),
    )
    for given in (root, folder):
        assert data_layout(given) == "pytest-benchmark"
        history = load(given)["t.py::test_a"]
        assert history.commits.tolist() == ["c0", "c1", "c2"]
        assert history.values.tolist() == [1e-3, 2e-3, 3e-3]  # the medians, in seconds
        assert history.higher_is_better is False
        assert str(history.timestamps[1]) == "2024-03-02T08:00:00.000000000"  # naive UTC
    code, out = invoke(["summary", "--data", root, "--format", "json"])
    assert code == 0, out
    summary = json.loads(out)
    assert summary["series"] == 1 and summary["commits"] == 3


def test_the_statistic_is_the_median_unless_another_is_asked_for(tmp_path):
    path = _write(
        tmp_path / "run.json",
        _run(
            "abc", "2024-03-01T10:00:00+00:00", [_bench("t.py::test_a", 1e-3, mean=5e-3, min=4e-4)]
        ),
    )
    assert load(path)["t.py::test_a"].values.tolist() == [1e-3]
    assert read_pytest_benchmark(path, statistic="mean")["t.py::test_a"].values.tolist() == [5e-3]
    assert read_pytest_benchmark(path, statistic="min")["t.py::test_a"].values.tolist() == [4e-4]
    with pytest.raises(ValueError, match="unknown statistic 'p99'"):
        read_pytest_benchmark(path, statistic="p99")


def test_saved_rounds_are_the_measurements_for_aggregate_and_trim_warmup(tmp_path):
    rng = np.random.default_rng(7)
    folder = tmp_path / "Linux-CPython-3.12-64bit"
    for i in range(3):
        # A falling warm-up of 15 rounds, then 60 steady rounds at 1 ms (2 ms from c2 on).
        level = 1e-3 * (2 if i == 2 else 1)
        rounds = [level * (1 + 3 * np.exp(-k / 3)) for k in range(15)]
        rounds += list(level * (1 + 0.01 * rng.standard_normal(60)))
        median = float(np.median(rounds))
        _write(
            folder / f"{i + 1:04d}_c{i}.json",
            _run(
                f"c{i}",
                f"2024-03-0{i + 1}T10:00:00+00:00",
                [_bench("t.py::test_a", median, data=rounds)],
            ),
        )
    pooled = load(folder)["t.py::test_a"]
    assert pooled.n_measurements.tolist() == [75, 75, 75]
    means = load(folder, aggregate="mean")["t.py::test_a"].values
    medians = load(folder, aggregate="median")["t.py::test_a"].values
    trimmed = load(folder, aggregate="mean", trim_warmup="kbkssd")["t.py::test_a"].values
    assert (means > 1.1 * medians).all()  # the warm-up pulls the mean up
    assert np.allclose(trimmed, [1e-3, 1e-3, 2e-3], rtol=0.02)  # cut, the mean is the steady level
    # A statistic asked for reads stats, not the rounds.
    assert read_pytest_benchmark(folder, statistic="median")[
        "t.py::test_a"
    ].n_measurements.tolist() == [1, 1, 1]
    code, out = invoke(
        ["summary", "--data", folder, "--aggregate", "median", "--trim-warmup", "kbkssd"]
    )
    assert code == 0, out


def test_several_machines_are_several_series_and_one_file_gz_or_stdin_is_read(tmp_path):
    root = tmp_path / ".benchmarks"
    _autosaved(root / "Linux-CPython-3.11-64bit", [1e-3, 1e-3])
    _autosaved(root / "Linux-CPython-3.12-64bit", [2e-3, 2e-3, 2e-3])
    data = load(root)
    assert sorted(data.series_ids) == [
        "Linux-CPython-3.11-64bit/tests/test_io.py::test_copy",
        "Linux-CPython-3.11-64bit/tests/test_parse.py::test_parse",
        "Linux-CPython-3.12-64bit/tests/test_io.py::test_copy",
        "Linux-CPython-3.12-64bit/tests/test_parse.py::test_parse",
    ]
    assert len(data["Linux-CPython-3.12-64bit/tests/test_parse.py::test_parse"]) == 3
    one = root / "Linux-CPython-3.12-64bit" / "0002_c1_20240320_090000.json"
    packed = tmp_path / "bench.json.gz"
    packed.write_bytes(gzip.compress(one.read_bytes()))
    assert load(packed)["tests/test_parse.py::test_parse"].commits.tolist() == ["c1"]
    code, out = invoke(["summary", "--data", "-", "--format", "json"], stdin=one.read_text())
    assert code == 0, out
    assert json.loads(out)["series"] == 2
    # Compressed runs in a folder are read too.
    gz_folder = tmp_path / "gz"
    gz_folder.mkdir()
    (gz_folder / "0001_c1.json.gz").write_bytes(packed.read_bytes())
    assert data_layout(gz_folder) == "pytest-benchmark"
    assert load(gz_folder)["tests/test_parse.py::test_parse"].values.tolist() == [2e-3]


def test_a_commit_run_twice_on_one_machine_is_a_rerun_and_dirty_runs_are_warned_about(tmp_path):
    folder = tmp_path / "m"
    _write(
        folder / "0001_c0.json", _run("c0", "2024-03-01T10:00:00+00:00", [_bench("t.py::a", 1e-3)])
    )
    _write(
        folder / "0002_c0.json",
        _run("c0", "2024-03-01T10:00:00+00:00", [_bench("t.py::a", 3e-3)], dirty=True),
    )
    with pytest.warns(UserWarning, match="uncommitted changes"):
        history = load(folder, aggregate="mean")["t.py::a"]
    assert history.commits.tolist() == ["c0"] and history.values.tolist() == [2e-3]


def test_old_runs_without_a_commit_time_are_placed_at_their_datetime(tmp_path):
    folder = tmp_path / "m"
    _write(
        folder / "0001.json",
        _run("c1", None, [_bench("t.py::a", 2e-3)], when="2015-08-15T00:04:18.687119"),
    )
    _write(
        folder / "0002.json",
        _run("c0", None, [_bench("t.py::a", 1e-3)], when="2015-08-14T00:04:18.687119"),
    )
    assert load(folder)["t.py::a"].commits.tolist() == ["c0", "c1"]


def test_detect_and_candidates_read_a_benchmarks_folder(tmp_path):
    step = [1e-3 * (1 + 0.01 * (i % 3)) for i in range(30)]
    root = tmp_path / ".benchmarks"
    _autosaved(root / "Linux-CPython-3.12-64bit", step + [2 * m for m in step])
    out = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", root, "--detector", "pelt", "--out", out])
    assert code == 0, text
    assert "tests/test_parse.py::test_parse" in out.read_text()
    found = tmp_path / "found.csv"
    code, text = invoke(["detect", "--data", root, "--out", found])
    assert code == 0, text
    assert "tests/test_parse.py::test_parse,c30," in found.read_text()


@pytest.mark.parametrize(
    ("payload", "where", "problem"),
    [
        (
            {
                "machine_info": MACHINE,
                "benchmarks": [_bench("t.py::a", 1e-3)],
                "datetime": "2024-03-01T10:00:00",
            },
            "run.json:",
            "no 'commit_info'",
        ),
        (
            _run("unversioned", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3)]),
            "run.json:",
            "outside a git checkout",
        ),
        (
            _run(
                "c0",
                "2024-03-01T10:00:00",
                [_bench("t.py::a", 1e-3), {"fullname": "t.py::b", "name": "b"}],
            ),
            "run.json, row 2:",
            "benchmark 't.py::b' has no 'stats'",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3, median="fast")]),
            "run.json, row 1:",
            "benchmark 't.py::a': 'median' is \"fast\", not a number",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3, data=[1e-3, None])]),
            "run.json, row 1:",
            "round 1 of 'stats.data' is null, not a number",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3, median=-1e-3)]),
            "run.json, row 1:",
            "a time cannot be negative",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3), _bench("t.py::a", 2e-3)]),
            "run.json, row 2:",
            "benchmark 't.py::a' again (first at benchmark 1)",
        ),
        (
            _run("c0", "yesterday", [_bench("t.py::a", 1e-3)]),
            "run.json:",
            "'commit_info.time' \"yesterday\"",
        ),
        (
            _run("c0", None, [_bench("t.py::a", 1e-3)], when=""),
            "run.json:",
            "neither 'commit_info.time' nor 'datetime'",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", {"t.py::a": 1e-3}),  # type: ignore[arg-type]
            "run.json:",
            "'benchmarks' is {\"t.py::a\": 0.001}, not a list of benchmark objects",
        ),
        (
            _run("c0", "2024-03-01T10:00:00", ["t.py::a"]),
            "run.json, row 1:",
            'benchmark 1 is "t.py::a": expected a benchmark object',
        ),
    ],
)
def test_bad_runs_are_refused_naming_file_entry_and_problem(tmp_path, payload, where, problem):
    path = _write(tmp_path / "run.json", payload)
    with pytest.raises(InputError) as caught:
        load(path)
    assert str(caught.value).startswith(str(path)) and problem in str(caught.value)
    code, out = invoke(["summary", "--data", path])
    assert code == 2, out
    assert where in flat(out) and problem in flat(out)


def test_the_same_commit_on_two_machines_in_one_folder_is_refused(tmp_path):
    folder = tmp_path / "runs"
    _write(folder / "0001_c0.json", _run("c0", "2024-03-01T10:00:00", [_bench("t.py::a", 1e-3)]))
    _write(
        folder / "0002_c0.json",
        _run(
            "c0",
            "2024-03-01T10:00:00",
            [_bench("t.py::a", 1e-3)],
            machine={**MACHINE, "node": "laptop"},
        ),
    )
    code, out = invoke(["summary", "--data", folder])
    assert code == 2, out
    text = flat(out)
    assert "0002_c0.json" in text and "0001_c0.json" in text
    assert (
        "commit c0 was run on another machine" in text
        and "node 'ci-7' there, 'laptop' here" in text
    )


def test_a_stray_file_and_an_empty_folder_are_named(tmp_path):
    folder = tmp_path / "m"
    _autosaved(folder, [1e-3, 1e-3])
    _write(folder / "0003_notes.json", {"benchmarks": [], "note": "x"})
    code, out = invoke(["summary", "--data", folder])
    assert code == 2, out
    assert "0003_notes.json" in flat(out) and "not a pytest-benchmark run" in flat(out)
    empty_runs = tmp_path / "e"
    _write(empty_runs / "0001.json", _run("c0", "2024-03-01T10:00:00", []))
    with pytest.raises(InputError, match="every 'benchmarks' list is empty"):
        read_pytest_benchmark(empty_runs)
    with pytest.raises(InputError, match="no pytest-benchmark result files"):
        (tmp_path / "nothing").mkdir()
        read_pytest_benchmark(tmp_path / "nothing")
