"""The JMH JSON reader and per-fork warm-up trimming, on fixtures written here in JMH's format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from triage.core.errors import InputError
from triage.loaders import load
from triage.readers.jmh import read_jmh, steady_long


def _entry(benchmark, forks, params=None, mode="thrpt", unit="ops/s"):
    """One element of JMH's ``-rf json`` output (fields as JMH 1.37 writes them)."""
    flat = [v for f in forks for v in f]
    entry = {
        "jmhVersion": "1.37",
        "benchmark": benchmark,
        "mode": mode,
        "threads": 1,
        "forks": len(forks),
        "jvm": "/usr/lib/jvm/java-21/bin/java",
        "jvmArgs": [],
        "jdkVersion": "21.0.2",
        "warmupIterations": 0,
        "warmupTime": "10 s",
        "warmupBatchSize": 1,
        "measurementIterations": len(forks[0]),
        "measurementTime": "100 ms",
        "measurementBatchSize": 1,
        "primaryMetric": {
            "score": float(np.mean(flat)),
            "scoreError": float(np.std(flat)),
            "scoreConfidence": [float(np.min(flat)), float(np.max(flat))],
            "scorePercentiles": {"0.0": float(np.min(flat)), "100.0": float(np.max(flat))},
            "scoreUnit": unit,
            "rawData": [list(map(float, f)) for f in forks],
        },
        "secondaryMetrics": {},
    }
    if params:
        entry["params"] = params
    return entry


def _fork(rng, n=300, warm=60, level=1000.0, boost=-300.0):
    # Throughput below the steady level while the JIT warms up.
    x = level + rng.standard_normal(n) * 5.0
    x[:warm] += boost
    return x


def test_read_jmh_one_row_per_benchmark_fork_iteration(tmp_path):
    rng = np.random.default_rng(0)
    payload = [
        _entry(
            "org.acme.Parse.small",
            [_fork(rng, 50), _fork(rng, 50)],
            params={"size": "10", "codec": "a"},
        ),
        _entry("org.acme.Parse.large", [_fork(rng, 40)], mode="avgt", unit="us/op"),
    ]
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(payload))
    frame = read_jmh(path)
    assert len(frame) == 50 + 50 + 40
    assert set(frame["series_id"]) == {
        "org.acme.Parse.small[codec=a,size=10]",
        "org.acme.Parse.large",
    }
    small = frame[frame["series_id"].str.contains("small")]
    assert sorted(small["fork"].unique()) == [0, 1]
    assert small["iteration"].max() == 49
    assert np.allclose(small["value"].to_numpy()[:50], payload[0]["primaryMetric"]["rawData"][0])
    assert frame.loc[frame["series_id"] == "org.acme.Parse.large", "unit"].iloc[0] == "us/op"


def test_sample_mode_histogram_gives_weighted_iteration_means(tmp_path):
    entry = _entry("org.acme.Lat.get", [[1.0, 2.0]], mode="sample")
    del entry["primaryMetric"]["rawData"]
    entry["primaryMetric"]["rawDataHistogram"] = [[[[10.0, 1], [20.0, 3]], [[5.0, 2]]]]
    path = tmp_path / "c.json"
    path.write_text(json.dumps([entry]))
    assert read_jmh(path)["value"].tolist() == [17.5, 5.0]


def test_steady_long_trims_each_fork_then_loads_as_a_history(tmp_path):
    rng = np.random.default_rng(1)
    files = []
    for c in range(3):
        path = tmp_path / f"commit{c}.json"
        path.write_text(
            json.dumps([_entry("org.acme.B.run", [_fork(rng, warm=40 + 20 * f) for f in range(2)])])
        )
        files.append(path)
    long, starts = steady_long(files, trim_warmup="kbkssd")
    assert list(starts["commit"].unique()) == ["commit0", "commit1", "commit2"]
    assert np.all(np.abs(starts["steady_start"].to_numpy(dtype=float) - np.tile([40, 60], 3)) <= 3)
    out = tmp_path / "long.csv"
    long.to_csv(out, index=False)
    history = load(out)["org.acme.B.run"]
    assert np.allclose(history.values, 1000.0, atol=2.0)  # untrimmed means are ~50 below
    untrimmed, _ = steady_long(files, trim_warmup="none")
    assert len(untrimmed) == 6 * 300


@pytest.mark.parametrize(
    ("content", "row", "problem"),
    [
        ("{not json", 1, "not JMH JSON"),  # the JSON parser names the line
        ("[]", None, "non-empty list"),
        ('[{"mode": "thrpt"}]', 1, "without a 'benchmark'"),
        ('[{"benchmark": "a.B.c", "primaryMetric": {"score": 1}}]', 1, "no 'rawData'"),
        ('[{"benchmark": "a.B.c", "primaryMetric": {"rawData": [[1, "x"]]}}]', 1, "not a number"),
        ('[{"benchmark": "a.B.c", "primaryMetric": {"rawData": [[]]}}]', 1, "no iterations"),
    ],
)
def test_bad_jmh_files_are_located_errors(tmp_path, content, row, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=problem) as info:
        read_jmh(path)
    assert info.value.row == row and "bad.json" in str(info.value)


def test_cli_steady_writes_the_long_layout_and_a_table(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from triage.cli.app import app

    rng = np.random.default_rng(2)
    files = []
    for c in ("aaa", "bbb"):
        path = tmp_path / f"{c}.json"
        path.write_text(json.dumps([_entry("org.acme.B.run", [_fork(rng, warm=50)])]))
        files.append(str(path))
    out = tmp_path / "long.csv"
    res = CliRunner().invoke(app, ["steady", *files, "--out", str(out), "--trim-warmup", "cpssd"])
    assert res.exit_code == 0, res.output
    long = pd.read_csv(out)
    assert list(long["commit"].unique()) == ["aaa", "bbb"]
    assert 2 * 245 <= len(long) <= 2 * 255 and "Steady-state starts" in res.output
    assert set(long["series_id"]) == {"org.acme.B.run"}
    bad = CliRunner().invoke(app, ["steady", *files, "--out", str(out), "--trim-warmup", "magic"])
    assert bad.exit_code == 2


def test_cli_steady_reads_a_json_array_of_runs_and_writes_each_runs_start(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from triage.cli.app import app

    rng = np.random.default_rng(3)
    runs = []
    for warm in (120, 200):
        x = 0.5 + rng.standard_normal(1000) * 0.005  # seconds per operation
        x[:warm] += 0.1  # slower while the JIT compiles
        runs.append([round(float(v), 6) for v in x])
    path = tmp_path / "bench-a.json"
    path.write_text(json.dumps(runs))
    frame = read_jmh(path)
    assert set(frame["series_id"]) == {"bench-a"} and list(frame.groupby("fork").size()) == [
        1000,
        1000,
    ]
    out, starts = tmp_path / "long.csv", tmp_path / "starts.csv"
    res = CliRunner().invoke(app, ["steady", str(path), "--out", str(out), "--starts", str(starts)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(starts)
    assert list(table.columns) == ["series_id", "commit", "fork", "iterations", "steady_start", "cut"]
    # The percentile filter replaces the chunk's top 2 % (the last warm-up
    # iterations of a chunk mostly steady), so a start may come a few early.
    assert np.all(np.abs(table["steady_start"].to_numpy() - [120, 200]) <= 6), table
    assert len(pd.read_csv(out)) == 2000 - table["steady_start"].sum()
    same = CliRunner().invoke(app, ["steady", str(path), "--out", str(out), "--starts", str(out)])
    assert same.exit_code == 2 and "same file" in same.output
    path.write_text(json.dumps([[1.0, 2.0], [1.0, "x"]]))
    with pytest.raises(InputError) as err:
        read_jmh(path)
    assert err.value.row == 2 and "run 1" in str(err.value)


@pytest.mark.parametrize(
    ("content", "row", "message"),
    [
        ([[1.0, 2.0], {"benchmark": "b.B.m"}], 2, "mixes runs"),
        (
            [{"benchmark": "b.B.m", "primaryMetric": {"rawData": [[1.0]]}}, [1.0, 2.0]],
            2,
            "mixes runs",
        ),
        ([[1.0, True, 2.0]], 1, "run 0: iteration 1 is true, not a number"),
        ([[1.0, 2.0], ["1.5", 2.0]], 2, 'run 1: iteration 0 is "1.5", not a number'),
        ([[1.0, 1e308]], 1, "run 0: iteration 1: value 1e+308 is outside the usable range"),
        ([[5.0], []], 2, "run 1 has no iterations"),
        (
            [{"benchmark": "b.B.m", "mode": "avgt", "primaryMetric": {"rawData": [[1.0, False]]}}],
            1,
            "b.B.m: fork 0: iteration 1 is false, not a number",
        ),
    ],
)
def test_runs_hold_json_numbers_in_range_or_the_file_and_row_are_named(
    tmp_path, content, row, message
):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputError) as err:
        read_jmh(path)
    assert err.value.row == row and message in str(err.value), str(err.value)


def test_a_long_file_with_a_fork_column_is_trimmed_fork_by_fork(tmp_path):
    # `triage steady --trim-warmup none --out long.csv` keeps every iteration; trimming that file
    # later read a commit's two forks as one run, and the second fork's warm-up (in its middle)
    # stayed in the commit's value.
    rng = np.random.default_rng(2)
    files = []
    for c in range(3):
        path = tmp_path / f"commit{c}.json"
        path.write_text(json.dumps([_entry("org.acme.B.run", [_fork(rng, warm=60) for _ in range(2)])]))
        files.append(path)
    untrimmed, _ = steady_long(files, trim_warmup="none")
    assert list(untrimmed["fork"].unique()) == [0, 1]
    out = tmp_path / "long.csv"
    untrimmed.to_csv(out, index=False)
    by_fork = load(out, trim_warmup="kbkssd")["org.acme.B.run"].values
    assert np.allclose(by_fork, 1000.0, atol=2.0)
    # The same rows without the column: one run per commit, its second warm-up kept.
    untrimmed.drop(columns="fork").to_csv(out, index=False)
    as_one_run = load(out, trim_warmup="kbkssd")["org.acme.B.run"].values
    assert np.all(as_one_run < 1000.0 - 20.0)


def test_a_blank_fork_cell_is_named_by_its_row(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("series_id,commit,fork,value\ns,c1,0,1.0\ns,c1,,2.0\n")
    with pytest.raises(InputError, match="fork is missing") as info:
        load(path, trim_warmup="kbkssd")
    assert info.value.row == 3
