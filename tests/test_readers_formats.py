"""Readers of the formats benchmark tools write: each on a small file in the real format.

The fixtures are written here, in each tool's documented layout (asv result
files, github-action-benchmark's data.js, Otava CSVs and config, Perfherder
API JSON); none is copied from a real project.
"""

from __future__ import annotations

import gzip
import io
import json
import sys

import numpy as np
import pytest
import zstandard

from triage.core import labels
from triage.core.errors import InputError
from triage.loaders import load
from triage.sniffing import data_layout

LONG = "series_id,commit,timestamp,value\ns,a,2024-01-01,10\ns,b,2024-01-02,11\ns,a,2024-01-03,14\n"


# --------------------------------------------------------------------------- compression and stdin


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_csv_loads_whatever_the_suffix(tmp_path, kind):
    raw = LONG.encode()
    packed = gzip.compress(raw) if kind == "gzip" else zstandard.ZstdCompressor().compress(raw)
    for name in (f"h.csv.{'gz' if kind == 'gzip' else 'zst'}", "h.csv"):
        path = tmp_path / name
        path.write_bytes(packed)
        history = load(path)["s"]
        assert list(history.commits) == ["a", "b"] and list(history.values) == [12.0, 11.0]


@pytest.mark.parametrize("name", ["h.csv.gz", "h.csv.zst"])
def test_plain_text_named_like_an_archive_loads_and_its_errors_name_it(tmp_path, name):
    # pandas picks decompression by suffix: this was an internal BadGzipFile error
    path = tmp_path / name
    path.write_text(LONG, encoding="utf-8")
    assert list(load(path)["s"].values) == [12.0, 11.0]
    path.write_text("series_id,commit,value\ns,a,1\ns,b,oops\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"{name.replace('.', r'[.]')}, row 3: value 'oops' is not a number"):
        load(path)


def test_errors_in_a_compressed_file_name_it_and_its_line(tmp_path):
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(gzip.compress(b"series_id,commit,value\ns,a,1\ns,b,oops\n"))
    with pytest.raises(InputError, match=r"bad\.csv\.gz, row 3: value 'oops' is not a number") as info:
        load(path)
    assert info.value.source == str(path)


def test_a_truncated_archive_is_a_clear_error(tmp_path):
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(LONG.encode() * 50)[:60])
    with pytest.raises(InputError, match=r"cut\.csv\.gz: cannot decompress \(gzip\)"):
        load(path)


def test_dash_reads_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(LONG.encode()))))
    assert load("-")["s"].n_measurements.tolist() == [2, 1]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"series_id,commit,value\ns,a,x\n")))
    with pytest.raises(InputError, match=r"^<stdin>, row 2: value 'x'"):
        load("-")


def test_real_histories_load_as_shipped(shared_data):
    path = shared_data / "real" / "histories.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    dataset = load(path)
    assert len(dataset) == 372
    # rhai and otel-java re-ran some commits later: each re-run joins its commit.
    merged = {h.series_id.split("/")[0] for h in dataset if (h.n_measurements > 1).any()}
    assert merged and merged <= {"rhai", "otel-java"}
    for history in dataset:
        assert len(set(history.commits)) == len(history)


# --------------------------------------------------------------------------- Otava


def test_otava_semicolon_time_only_and_branch(tmp_path):
    path = tmp_path / "perf.csv"
    path.write_text(
        "time;branch;throughput\n"
        "2024-01-01T00:00:00;main;10\n2024-01-01T00:00:00;dev;50\n"
        "2024-01-02T00:00:00;main;11\n2024-01-03T00:00:00;main;12\n"
    )
    assert data_layout(path) == "otava"
    dataset = load(path)
    assert dataset.series_ids == ["throughput@main", "throughput@dev"]
    main = dataset["throughput@main"]
    assert list(main.values) == [10, 11, 12]
    assert main.commits[0] == "2024-01-01T00:00:00"  # no commit column: the time is the key
    assert load(path, branch="dev")["throughput"].values.tolist() == [50]
    with pytest.raises(InputError, match=r"no rows of branch 'rc' \(branches: dev, main\)"):
        load(path, branch="rc")


def test_otava_directory_and_yaml_config(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "alpha.csv").write_text("time,commit,ops,p99\n2024-01-01,a,100,5\n2024-01-02,b,90,6\n")
    (tests / "beta.csv").write_text("time,commit,ops\n2024-01-01,a,7\n")
    assert data_layout(tests) == "otava-dir"
    assert load(tests).series_ids == ["alpha/ops", "alpha/p99", "beta/ops"]
    config = tmp_path / "otava.yaml"
    config.write_text(
        "tests:\n"
        "  svc.alpha:\n"
        "    type: csv\n"
        "    file: tests/alpha.csv\n"
        "    time_column: time\n"
        "    metrics:\n"
        "      throughput:\n        column: ops\n        direction: 1\n"
        "      latency:\n        column: p99\n        direction: -1\n"
        "    attributes: [commit]\n"
        "  svc.remote:\n"
        "    type: postgres\n"
    )
    with pytest.warns(UserWarning, match="svc.remote.*skipped"):
        dataset = load(config)
    assert dataset.series_ids == ["svc.alpha/throughput", "svc.alpha/latency"]
    assert dataset["svc.alpha/throughput"].higher_is_better is True
    assert dataset["svc.alpha/latency"].higher_is_better is False
    assert dataset["svc.alpha/throughput"].change_kind(100, 90) == "regression"


def test_otava_config_errors_name_the_test(tmp_path):
    config = tmp_path / "otava.yaml"
    config.write_text("tests:\n  t1:\n    type: csv\n    file: absent.csv\n")
    with pytest.raises(InputError, match=r"otava\.yaml: test 't1': file 'absent\.csv' does not exist"):
        load(config)
    config.write_text("tests: [\n")
    with pytest.raises(InputError, match=r"otava\.yaml, row \d+: not valid YAML"):
        load(config)


# --------------------------------------------------------------------------- asv


def _asv_results(root, *, bad=None):
    results = root / "results"
    machine = results / "ci-runner"
    machine.mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps({
        "bench.Suite.time_sort": {"name": "bench.Suite.time_sort", "type": "time", "unit": "seconds",
                                  "param_names": ["n"], "params": [["10", "1000"]], "version": "1"},
        "bench.Mem.peakmem_load": {"name": "bench.Mem.peakmem_load", "type": "peakmem", "unit": "bytes",
                                   "param_names": [], "params": [], "version": "1"},
        "version": 2,
    }))
    (machine / "machine.json").write_text(json.dumps({"machine": "ci-runner", "os": "Linux", "version": 1}))
    columns = ["result", "params", "version", "started_at", "duration"]
    # Written out of commit order on purpose: the reader orders by the commit date.
    for sha, date, sort_small, mem in (("cccc3333", 3000, 0.3, 2e6), ("aaaa1111", 1000, 0.1, 1e6),
                                       ("bbbb2222", 2000, None, 1e6)):
        (machine / f"{sha}-virtualenv-py3.12.json").write_text(json.dumps({
            "commit_hash": sha, "env_name": "virtualenv-py3.12", "date": date * 86_400_000,
            "python": "3.12", "requirements": {}, "result_columns": columns, "version": 2,
            "results": {
                "bench.Suite.time_sort": [[sort_small, 2.0], [["10", "1000"]], "1", 0, 1.0],
                "bench.Mem.peakmem_load": [[bad if bad is not None and sha == "bbbb2222" else mem], [], "1", 0, 1.0],
            },
        }))
    return results


def test_asv_results_directory(tmp_path):
    results = _asv_results(tmp_path)
    assert data_layout(results) == "asv"
    dataset = load(results)
    small = dataset["ci-runner/virtualenv-py3.12/bench.Suite.time_sort(10)"]
    assert list(small.commits) == ["aaaa1111", "cccc3333"]  # null result left out, date order
    assert small.higher_is_better is False
    large = dataset["ci-runner/virtualenv-py3.12/bench.Suite.time_sort(1000)"]
    assert list(large.commits) == ["aaaa1111", "bbbb2222", "cccc3333"]
    assert load(results / "ci-runner").series_ids == dataset.series_ids  # one machine's folder too


def test_asv_bad_value_names_the_result_file(tmp_path):
    results = _asv_results(tmp_path, bad="fast")
    with pytest.raises(InputError, match=r"bbbb2222-virtualenv-py3\.12\.json: benchmark 'bench.Mem.peakmem_load': value 'fast'"):
        load(results)


# --------------------------------------------------------------------------- github-action-benchmark


def _data_js(runs):
    return "window.BENCHMARK_DATA = " + json.dumps({"lastUpdate": 1, "repoUrl": "https://example.org/r",
                                                    "entries": {"Rust Benchmark": runs}}, indent=2) + ";\n"


def _run(sha, date, value, unit="ns/iter", tool="cargo"):
    return {"commit": {"id": sha, "message": "m", "timestamp": "2024-01-01T00:00:00Z", "url": "u"},
            "date": date, "tool": tool, "benches": [{"name": "parse", "value": value, "unit": unit, "range": "± 1"}]}


def test_gab_data_js_with_a_rerun(tmp_path):
    path = tmp_path / "data.js"
    path.write_text(_data_js([_run("a", 1_700_000_000_000, 100), _run("b", 1_700_000_100_000, 120),
                              _run("a", 1_700_000_200_000, 104)]))
    assert data_layout(path) == "gab"
    history = load(path)["Rust Benchmark/parse"]
    assert list(history.commits) == ["a", "b"] and list(history.values) == [102.0, 120.0]
    assert history.higher_is_better is False


def test_gab_rates_are_higher_is_better(tmp_path):
    path = tmp_path / "data.js"
    path.write_text(_data_js([_run("a", 1, 5e6, unit="ops/s", tool="jmh"), _run("b", 2, 4e6, unit="ops/s", tool="jmh")]))
    history = load(path)["Rust Benchmark/parse"]
    assert history.higher_is_better is True
    assert history.change_kind(*history.values) == "regression"


def test_gab_bad_input_names_the_run(tmp_path):
    path = tmp_path / "data.js"
    path.write_text(_data_js([_run("a", 1, 100), _run("b", 2, "NaN?")]))
    with pytest.raises(InputError, match=r"data\.js: suite 'Rust Benchmark', run 2, bench 'parse': value 'NaN\?'"):
        load(path)
    path.write_text("window.BENCHMARK_DATA = {\n  \"entries\": {,\n}")
    with pytest.raises(InputError, match=r"data\.js, row 2: not a github-action-benchmark data file"):
        load(path)


# --------------------------------------------------------------------------- Perfherder


def test_perfherder_integer_statuses():
    assert labels.normalise_label(3) == labels.FALSE_POSITIVE  # invalid
    assert labels.normalise_label("0") == labels.NOT_TRIAGED
    assert labels.normalise_label(5.0) == labels.UNDER_INVESTIGATION
    assert labels.normalise_label(7) == labels.TRUE_POSITIVE  # fixed
    with pytest.raises(KeyError):
        labels.normalise_label(9)


def test_perfherder_data_labelled_by_an_alerts_export(tmp_path):
    data = tmp_path / "perf-data.json"
    points = [{"signature_id": 41, "id": i, "job_id": 900 + i, "push_id": 70 + i, "revision": rev,
               "push_timestamp": f"2024-02-0{day}T10:00:00", "value": v}
              for i, (rev, day, v) in enumerate([("r1", 1, 10.0), ("r2", 2, 10.5), ("r2", 2, 11.5), ("r3", 3, 15.0)])]
    data.write_text(json.dumps({"abc123": points}))
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps({"results": [{"id": 5, "revision": "r3", "status": 0, "alerts": [
        {"id": 8, "status": 3, "is_regression": True,
         "series_signature": {"id": 41, "signature_hash": "abc123", "lower_is_better": True}}]}]}))
    assert data_layout(data) == "perfherder"
    history = load(data, alerts=alerts)["abc123"]
    assert list(history.commits) == ["r1", "r2", "r3"] and history.values[1] == 11.0
    assert list(history.labels) == ["", "", labels.FALSE_POSITIVE]
    assert history.higher_is_better is False
    alerts.write_text(json.dumps({"results": [{"revision": "r9", "alerts": [
        {"status": 4, "series_signature": {"id": 41}}]}]}))
    with pytest.raises(InputError, match=r"alerts\.json, row 1: alert on revision 'r9' of 'abc123': the data has no such revision"):
        load(data, alerts=alerts)


def test_perfherder_bad_point_is_located(tmp_path):
    data = tmp_path / "perf-data.json"
    data.write_text(json.dumps({"abc": [{"revision": "r1", "value": 1.0}, {"revision": "r2", "value": "x"}]}))
    with pytest.raises(InputError, match=r"perf-data\.json, row 2: value 'x' is not a number"):
        load(data)


def test_json_list_still_reads_as_one_series(tmp_path):
    path = tmp_path / "tb.json"
    path.write_text("[1, 2, 3]")
    assert np.array_equal(load(path)["tb"].values, [1, 2, 3])


def test_a_directory_where_a_file_is_expected_is_a_clear_error(tmp_path):
    from triage.readers.source import plain_file

    with pytest.raises(InputError, match="is a directory; expected a file"):
        with plain_file(tmp_path, directory_ok=False):
            pass


# --------------------------------------------------------------------------- JMH


def _jmh_file(tmp_path, name="3f2a91c.json", compress=False):
    """JMH 1.37 ``-rf json`` output: a throughput benchmark with two forks that warm up (no JMH
    warm-up iterations, so the warm-up is in rawData) and an average-time benchmark."""
    rng = np.random.default_rng(7)

    def fork(n=200, warm=40):
        x = 1000.0 + rng.standard_normal(n) * 5.0
        x[:warm] -= 300.0  # throughput below the steady level while the JIT warms up
        return [float(v) for v in x]

    def entry(benchmark, forks, mode, unit, params=None):
        flat = [v for f in forks for v in f]
        item = {"jmhVersion": "1.37", "benchmark": benchmark, "mode": mode, "threads": 1, "forks": len(forks),
                "warmupIterations": 0, "measurementIterations": len(forks[0]),
                "primaryMetric": {"score": float(np.mean(flat)), "scoreError": float(np.std(flat)),
                                  "scoreUnit": unit, "rawData": forks},
                "secondaryMetrics": {}}
        if params:
            item["params"] = params
        return item

    doc = [entry("org.acme.ParserBench.parse", [fork(), fork()], "thrpt", "ops/s", {"size": "1024"}),
           entry("org.acme.ParserBench.format", [[2.0, 2.2, 1.8, 2.0]], "avgt", "ms/op")]
    text = json.dumps(doc, indent=2).encode()
    path = tmp_path / (name + ".gz" if compress else name)
    path.write_bytes(gzip.compress(text) if compress else text)
    return path


def test_jmh_results_file_is_one_commit_of_a_series_per_benchmark(tmp_path):
    path = _jmh_file(tmp_path)
    assert data_layout(path) == "jmh"
    dataset = load(path)
    assert dataset.series_ids == ["org.acme.ParserBench.parse[size=1024]", "org.acme.ParserBench.format"]
    parse, fmt = dataset["org.acme.ParserBench.parse[size=1024]"], dataset["org.acme.ParserBench.format"]
    assert list(parse.commits) == ["3f2a91c"] and list(fmt.commits) == ["3f2a91c"]  # the file stem
    assert parse.higher_is_better is True and fmt.higher_is_better is False
    assert fmt.values[0] == pytest.approx(2.0)
    # every iteration: the warm-up pulls the mean down; --trim-warmup keeps each fork's steady part
    assert parse.values[0] == pytest.approx(1000.0 - 300.0 * 40 / 200, abs=5.0)
    steady = load(path, trim_warmup="kbkssd")["org.acme.ParserBench.parse[size=1024]"]
    assert steady.values[0] == pytest.approx(1000.0, abs=3.0)
    assert load(_jmh_file(tmp_path, "b7c1.json", compress=True)).series_ids == dataset.series_ids


def test_jmh_summary_through_the_cli(tmp_path):
    from typer.testing import CliRunner

    from triage.cli.app import app

    result = CliRunner().invoke(app, ["summary", "--data", str(_jmh_file(tmp_path)), "--trim-warmup", "kbkssd",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["series"] == 2
    assert summary["higher_is_better_series"] == 1 and summary["lower_is_better_series"] == 1


def test_bad_jmh_file_is_located(tmp_path):
    path = tmp_path / "jmh.json"
    path.write_text(json.dumps([{"benchmark": "b.B.m", "mode": "thrpt", "primaryMetric": {"scoreUnit": "ops/s"}}]))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 1 and "no 'rawData'" in err.value.problem


def test_json_input_takes_a_byte_order_mark_and_names_an_empty_file(tmp_path):
    from triage.core.json_input import read_json

    bom = tmp_path / "runs.json"
    bom.write_bytes(b"\xef\xbb\xbf[[1.0, 2.0, 3.0]]")
    assert read_json(bom) == [[1.0, 2.0, 3.0]]
    for text in ("", " \n"):
        empty = tmp_path / "empty.json"
        empty.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=r"empty\.json: file is empty, expected JMH JSON results$"):
            read_json(empty, "JMH JSON results")
