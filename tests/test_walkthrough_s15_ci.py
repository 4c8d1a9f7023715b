"""Defects found walking through the CI engineer's workflow (watch, detect, steady, sample, culprit).

1. ``triage steady`` named a benchmark by its mode only in a file that held
   it in several modes: a history whose builds added ``-bm thrpt,avgt`` at
   some commit split the ``thrpt`` history into two series there
   (``B.parse[size=10]`` before, ``B.parse[size=10]:thrpt`` after), and a
   benchmark whose mode changed mixed rates and times in one series.
2. ``triage watch --state`` took any SQLite database for a state store: one
   with none of the store's tables (a mistyped ``--state mlruns.db``) got
   them added and was switched to WAL; a labels store (it has a
   ``decisions`` table) was called a damaged state store, and the advised
   ``--reset-state`` moved the sheriffs' labels file aside.
3. ``triage steady``'s table on 80 columns (a pipe, a CI log) folded the
   series id every 13 characters (``org.acme.Pars`` / ``erBench.parse``):
   the one-line headers of the numeric columns held them at their width.
4. ``detect``, ``steady`` and ``sample`` wrapped their closing ``... -> OUT``
   line at 80 columns, cutting a long output path in two (``label``,
   ``score`` and ``report`` keep theirs on one line).
5. ``triage watch`` stopped (exit 2) at a late commit, a new commit whose
   timestamp is older than its series' latest (builds finishing out of
   order): every other series stopped being triaged, and a supervisor's
   restart on the same feed stopped at the same line again. It is now
   skipped with a line on stderr, as a quarantined series' values are.
6. ``triage steady`` wrote each build's values in its own unit: a build that
   changed a benchmark's ``@OutputTimeUnit`` (``ops/s`` to ``ops/ms``, as
   otel-java's series use both) made a thousandfold step, a change point
   that ``candidates`` then reported. A series is now in its first unit.
7. ``triage culprit``'s heading (series, the two commits and their levels)
   was wrapped to its table's width: with one or no measurement to show,
   about 40 columns, so the ids and levels ran over nine centred lines.
8. ``TRIAGE_DASK_WORKERS=0`` (or below) made ``--scheduler local`` wait for
   its first worker for ever; a word there ended with ``invalid literal for
   int()``, naming nothing.
9. ``triage sample`` and ``triage culprit`` read only commas: a partly
   measured history (or an oracle) separated by ``;`` (a spreadsheet's
   export), tab or ``|``, which every other CSV reader takes, was refused
   with "missing column 'commit', 'value' (found: commit;value)".
10. ``triage watch`` took a numeric commit id (a build number) but refused a
    numeric series id (a Perfherder signature id) with "series '4471':
    series id must be a non-empty string".
11. ``triage steady`` over a history stopped at a build whose every
    benchmark failed (JMH writes ``[]``), calling it "not JMH JSON results";
    such a build is now left out with a warning, as a failed benchmark is
    absent from its build's file.
12. ``--confirm-after``'s help said "0 = the paper's loop" for any model:
    the bundled online-w4 at K = 0 finds nothing, even a 30-sigma step (on
    the real rhai histories, 0 change points where K = 4 finds 15). It now
    says the paper's loop needs a window-0 model (default-w0).
13. ``triage detect`` summed up one change point as "1 change points", and
    ``triage culprit`` one reading as "1 measurements for 1 unmeasured commits".

Inputs are generated here in the formats people have; nothing of the real data is used.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke
from warm_start import warm_triage

# ---------------------------------------------------------------- 1. one name per mode across the files


def _jmh_entry(mode: str, level: float, rng: np.random.Generator) -> dict:
    """One element of JMH's ``-rf json`` output: two forks of 20 iterations."""
    return {
        "jmhVersion": "1.37",
        "benchmark": "org.acme.ParserBench.parse",
        "mode": mode,
        "threads": 1,
        "forks": 2,
        "params": {"size": "10"},
        "primaryMetric": {
            "scoreUnit": "ops/s" if mode == "thrpt" else "us/op",
            "rawData": [[round(level * (1 + 0.01 * v), 4) for v in rng.standard_normal(20)] for _ in range(2)],
        },
        "secondaryMetrics": {},
    }


def _builds(tmp_path, modes_per_build: list[list[str]]) -> list[str]:
    rng = np.random.default_rng(3)
    files = []
    for k, modes in enumerate(modes_per_build):
        path = tmp_path / f"c{k + 1}.json"
        path.write_text(json.dumps([_jmh_entry(m, 1000.0 if m == "thrpt" else 1.0, rng) for m in modes]))
        files.append(str(path))
    return files


def test_steady_keeps_one_series_per_mode_when_a_build_adds_a_mode(tmp_path):
    files = _builds(tmp_path, [["thrpt"], ["thrpt"], ["thrpt", "avgt"], ["thrpt", "avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    long = pd.read_csv(out)
    commits = long.groupby("series_id")["commit"].unique().map(list).to_dict()
    assert commits == {
        "org.acme.ParserBench.parse[size=10]:thrpt": ["c1", "c2", "c3", "c4"],
        "org.acme.ParserBench.parse[size=10]:avgt": ["c3", "c4"],
    }


def test_steady_never_mixes_rates_and_times_when_a_benchmark_changes_mode(tmp_path):
    files = _builds(tmp_path, [["thrpt"], ["thrpt"], ["avgt"], ["avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    long = pd.read_csv(out)
    by_series = long.groupby("series_id")["value"]
    # Rates near 1000, times near 1: each series holds one of them only.
    assert sorted(by_series.min().index) == [
        "org.acme.ParserBench.parse[size=10]:avgt",
        "org.acme.ParserBench.parse[size=10]:thrpt",
    ]
    assert (by_series.max() / by_series.min() < 1.5).all()


def test_steady_keeps_the_plain_name_of_a_benchmark_in_one_mode_throughout(tmp_path):
    files = _builds(tmp_path, [["avgt"], ["avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    assert set(pd.read_csv(out)["series_id"]) == {"org.acme.ParserBench.parse[size=10]"}


# ---------------------------------------------------------------- 2. --state naming another application's database


def _records(n: int = 6) -> str:
    return "".join(
        json.dumps({"series_id": "bench/parse", "commit": f"c{k:03d}", "value": 100.0 + k % 3}) + "\n"
        for k in range(n)
    )


def _tables(path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        db.close()


@pytest.mark.parametrize("reset", [False, True])
def test_watch_refuses_a_labels_store_as_state_and_never_moves_it(tmp_path, reset):
    from triage.workspace.store import LabelsStore

    labels = tmp_path / "labels.sqlite"
    store = LabelsStore(labels)
    store.record("bench/parse", "c003", "true", who="ana")
    store.close()
    before = _tables(labels)
    code, output = invoke(["watch", "--state", labels, *(["--reset-state"] if reset else [])], stdin=_records())
    assert code == 2, output
    assert "not a `triage watch` state store" in flat(output) and "labels store" in flat(output)
    assert "--reset-state" not in flat(output)  # its recovery would move the sheriffs' file aside
    assert sorted(p.name for p in tmp_path.iterdir() if ".damaged-" in p.name) == []
    assert _tables(labels) == before
    assert LabelsStore(labels).current()[("bench/parse", "c003")].label == "true_positive"


def test_watch_never_adds_its_tables_to_another_sqlite_database(tmp_path):
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE runs (id TEXT, name TEXT)")
    db.execute("INSERT INTO runs VALUES ('r1', 'nightly')")
    db.commit()
    db.close()
    code, output = invoke(["watch", "--state", other], stdin=_records())
    assert code == 2, output
    assert "another SQLite database" in flat(output) and "runs" in flat(output)
    assert _tables(other) == {"runs"}


def test_watch_still_opens_its_own_state_and_an_empty_sqlite_file(tmp_path):
    empty = tmp_path / "fresh.db"
    db = sqlite3.connect(empty)
    db.execute("PRAGMA user_version = 1")  # a SQLite database without tables: a new store
    db.commit()
    db.close()
    for _ in range(2):  # created, then reopened
        code, output = invoke(["watch", "--state", empty, "--confirm-after", "0", "--min-pre", "0"],
                              stdin=_records())
        assert code == 0, output
    assert {"meta", "series", "decisions"} <= _tables(empty)


# ---------------------------------------------------------------- 3. the steady table in a CI log (80 columns)


def test_steady_table_keeps_the_series_id_readable_on_80_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # a pipe or a CI log: rich's default width
    files = _builds(tmp_path, [["thrpt", "avgt"], ["thrpt", "avgt"]])
    code, output = invoke(["steady", *files, "--out", tmp_path / "steady.csv", "--trim-warmup", "none"])
    assert code == 0, output
    lines = [line for line in output.splitlines() if line[:1] in "┏┃┡│└"]  # the table's
    assert max(len(line) for line in lines) <= 80
    # The benchmark's class and method on one line, not folded every 13 characters.
    rows = [line for line in lines if "org.acme" in line]
    assert len(rows) == 2 and all("org.acme.ParserBench.parse" in line for line in rows), output


# ---------------------------------------------------------------- 4. the "-> OUT" line of a long --out path


def _long_out(tmp_path, name: str):
    folder = tmp_path.joinpath("ci-workspace", "reports", "performance", "nightly-benchmarks")
    folder.mkdir(parents=True)
    return folder / name


def _one_line(output: str, out) -> bool:
    return any(line.endswith(f"-> {out}") for line in output.splitlines())


def test_detect_names_a_long_out_path_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    data = tmp_path / "history.csv"
    rng = np.random.default_rng(5)
    values = np.r_[100 + rng.standard_normal(40), 130 + rng.standard_normal(40)]
    pd.DataFrame({"series_id": "bench/parse", "commit": [f"c{k:03d}" for k in range(80)], "value": values}).to_csv(
        data, index=False)
    out = _long_out(tmp_path, "detected-change-points-of-the-nightly-run.csv")
    assert len(str(out)) > 80
    code, output = invoke(["detect", "--data", data, "--out", out])
    assert code == 0, output
    assert _one_line(output, out), output


def test_steady_and_sample_name_a_long_out_path_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    files = _builds(tmp_path, [["avgt"], ["avgt"]])
    out = _long_out(tmp_path, "steady-iterations-of-the-nightly-run.csv")
    code, output = invoke(["steady", *files, "--out", out, "--trim-warmup", "none"])
    assert code == 0, output
    assert _one_line(output, out), output
    partial = tmp_path / "partial.csv"
    partial.write_text("commit,value\nc1,1.0\nc2,\nc3,\nc4,1.2\n")
    estimate = out.with_name("estimated-history-of-the-nightly-run.csv")
    code, output = invoke(["sample", "--data", partial, "--budget", "1", "--out", estimate])
    assert code == 0, output
    assert _one_line(output, estimate), output


# ---------------------------------------------------------------- 5. a late commit in the feed


def _feed() -> tuple[str, int]:
    """Two series, one result a day; build c004 of series A finishes after c005 (the late line's number too)."""
    lines = []
    for day in range(12):
        for series in ("A", "B"):
            lines.append({"series_id": series, "commit": f"c{day:03d}", "value": 100.0 + day % 3,
                          "timestamp": f"2024-05-{day + 1:02d}T10:00:00Z"})
    late = next(i for i, r in enumerate(lines) if r["series_id"] == "A" and r["commit"] == "c004")
    record = lines.pop(late)
    after = next(i for i, r in enumerate(lines) if r["series_id"] == "A" and r["commit"] == "c005")
    lines.insert(after + 1, record)
    return "".join(json.dumps(r) + "\n" for r in lines), after + 2


def _arrived(state) -> set[tuple[str, str]]:
    db = sqlite3.connect(state)
    try:
        return set(db.execute("SELECT series_id, commit_id FROM decisions"))
    finally:
        db.close()


def test_watch_skips_a_late_commit_and_goes_on_with_every_series(tmp_path):
    feed, late_line = _feed()
    state = tmp_path / "state.db"
    args = ["watch", "--state", state, "--confirm-after", "0", "--min-pre", "0", "--explain", "none"]
    code, output = invoke(args, stdin=feed)
    assert code == 0, output
    assert f"skipped a late commit (<stdin>, line {late_line})" in flat(output)
    assert "'A', commit 'c004'" in flat(output)
    decided = _arrived(state)
    assert ("A", "c004") not in decided
    assert {("A", "c011"), ("B", "c011"), ("B", "c004")} <= decided
    # A restart on the same feed (a supervisor's) goes past it again, deciding nothing twice.
    code, again = invoke(args, stdin=feed)
    assert code == 0, again
    assert _arrived(state) == decided
    assert f"skipped a late commit (<stdin>, line {late_line})" in flat(again)


# ---------------------------------------------------------------- 6. a build that changes @OutputTimeUnit


def _unit_builds(tmp_path, mode: str, units_levels: list[tuple[str, float]]) -> list[str]:
    rng = np.random.default_rng(7)
    files = []
    for k, (unit, level) in enumerate(units_levels):
        entry = _jmh_entry(mode, level, rng)
        entry["primaryMetric"]["scoreUnit"] = unit
        path = tmp_path / f"c{k + 1}.json"
        path.write_text(json.dumps([entry]))
        files.append(str(path))
    return files


def test_steady_writes_a_series_in_one_unit_when_a_build_changes_the_time_unit(tmp_path):
    # 2 M ops/s throughout: the last two builds report it as 2,000 ops/ms.
    files = _unit_builds(tmp_path, "thrpt", [("ops/s", 2.0e6), ("ops/s", 2.0e6), ("ops/ms", 2.0e3), ("ops/ms", 2.0e3)])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", out, "--trim-warmup", "none"])
    assert code == 0, output
    means = pd.read_csv(out).groupby("commit")["value"].mean()
    assert means.to_numpy() == pytest.approx([2.0e6] * 4, rel=0.02)


def test_steady_converts_a_time_per_operation_and_refuses_a_unit_it_cannot_convert(tmp_path):
    files = _unit_builds(tmp_path, "avgt", [("us/op", 250.0), ("ns/op", 250_000.0)])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", out, "--trim-warmup", "none"])
    assert code == 0, output
    assert pd.read_csv(out).groupby("commit")["value"].mean().to_numpy() == pytest.approx([250.0, 250.0], rel=0.02)
    (tmp_path / "odd").mkdir()
    odd = _unit_builds(tmp_path / "odd", "thrpt", [("ops/s", 10.0), ("msgs/s", 10.0)])
    # Was a warning, and the history joined across the change (session 32: an error).
    code, output = invoke(["steady", *odd, "--out", tmp_path / "odd.csv", "--trim-warmup", "none"])
    assert code == 2 and "is in msgs/s from commit c2 on, in ops/s in commit c1" in flat(output), output


# ------------------------------------------------ 7. culprit's heading over a narrow table (gap measured)


def test_culprit_heading_is_not_squeezed_to_a_narrow_table(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    shas = [f"{k:02d}" + "9f3c1ab2" * 4 + "d7e405" for k in range(12)]
    values = ["21.1", "", "20.9", "21.0", "21.2", "21.1", "39.0", "", "38.8", "39.1", "38.9", "39.2"]
    partial = tmp_path / "partial.csv"
    partial.write_text("series_id,commit,value\n" + "".join(
        f"otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads1/otel-bench-runner,{c},{v}\n"
        for c, v in zip(shas, values, strict=True)))
    oracle = tmp_path / "oracle.csv"
    oracle.write_text("commit,value\n" + "".join(f"{c},{v or '30'}\n" for c, v in zip(shas, values, strict=True)))
    code, output = invoke(["culprit", "--data", partial, "--before", shas[4], "--after", shas[6],
                           "--oracle", oracle])
    assert code == 0, output
    lines = output.splitlines()
    # (the one commit between them is measured already: no table, the heading says so; 31st session)
    heading = lines[: next(i for i, line in enumerate(lines) if line.startswith(("┏", "culprit:")))]
    assert any(f"change between {shas[4]}" in line for line in heading), output
    assert len(heading) <= 4, output


# ---------------------------------------------------------------- 8. TRIAGE_DASK_WORKERS


@pytest.mark.parametrize("workers", ["0", "-2", "two"])
def test_a_local_cluster_of_no_workers_is_refused_naming_the_variable(tmp_path, workers):
    data = tmp_path / "history.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{k:02d},{1 + k % 2}\n" for k in range(12)))
    try:
        done = subprocess.run(
            [*warm_triage(), "detect", "--data", str(data),
             "--out", str(tmp_path / "found.csv"), "--scheduler", "local"],
            capture_output=True, text=True, timeout=90, env={**os.environ, "TRIAGE_DASK_WORKERS": workers},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"TRIAGE_DASK_WORKERS={workers}: the local cluster waited for a worker for ever")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: TRIAGE_DASK_WORKERS: must be a whole number of workers >= 1 (for --scheduler local), "
        f"got {workers!r}"
    ]


# ---------------------------------------------------------------- 9. a partly measured history from a spreadsheet


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_sample_and_culprit_read_the_delimiters_every_other_csv_reader_reads(tmp_path, sep):
    values = ["1.00", "", "", "1.02", "", "0.99", "", "", "1.31", "1.30", "", "1.29"]
    partial = tmp_path / "partial.csv"
    partial.write_text(f"commit{sep}value\n" + "".join(f"c{k:02d}{sep}{v}\n" for k, v in enumerate(values)))
    comma = tmp_path / "comma.csv"
    comma.write_text(partial.read_text().replace(sep, ","))
    out, expected = tmp_path / "estimate.csv", tmp_path / "expected.csv"
    assert invoke(["sample", "--data", comma, "--budget", "2", "--out", expected])[0] == 0
    code, output = invoke(["sample", "--data", partial, "--budget", "2", "--out", out])
    assert code == 0, output
    assert out.read_text() == expected.read_text()
    oracle = tmp_path / "oracle.csv"
    oracle.write_text(f"commit{sep}value\nc06{sep}1.01\nc07{sep}1.30\n")
    code, output = invoke(["culprit", "--data", partial, "--before", "c05", "--after", "c08", "--oracle", oracle])
    assert code == 0, output
    assert "culprit: c07 (position 7)" in flat(output)


# ---------------------------------------------------------------- 10. numeric series ids (Perfherder signatures)


def test_watch_takes_a_numeric_series_id_as_it_takes_a_numeric_commit(tmp_path):
    feed = "".join(json.dumps({"series_id": 4471, "commit": 1000 + k, "value": 100.0 + k % 2}) + "\n" for k in range(3))
    feed += json.dumps({"series_id": 4471, "commit": 1003, "value": 1e300}) + "\n"  # a unit gone wrong
    feed += json.dumps({"series_id": 4471, "commit": 1004, "value": 100.0}) + "\n"
    feed += json.dumps({"series_id": 4472, "commit": 1000, "value": 5.0}) + "\n"
    code, output = invoke(["watch", "--state", tmp_path / "state.db", "--confirm-after", "0", "--min-pre", "0",
                           "--explain", "none"], stdin=feed)
    assert code == 0, output
    decided = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert [(d["series_id"], d["commit"]) for d in decided] == [
        ("4471", "1000"), ("4471", "1001"), ("4471", "1002"), ("4472", "1000")
    ]
    # The quarantine holds the series by the id the loop gives it: its later commit is skipped too.
    assert "quarantined series '4471' (<stdin>, line 4)" in flat(output)


# ---------------------------------------------------------------- 11. a build whose every benchmark failed


def test_steady_leaves_out_a_build_whose_benchmarks_all_failed(tmp_path):
    files = _builds(tmp_path, [["thrpt"], ["thrpt"], ["thrpt"]])
    failed = tmp_path / "c9.json"
    failed.write_text("[\n]\n")  # what JMH writes when every benchmark of the run failed
    out = tmp_path / "steady.csv"
    with pytest.warns(UserWarning, match=r"c9.json: holds no results .*every benchmark of that run failed.*left out"):
        code, output = invoke(["steady", files[0], failed, *files[1:], "--out", out, "--trim-warmup", "none"])
    assert code == 0, output
    assert list(pd.read_csv(out)["commit"].unique()) == ["c1", "c2", "c3"]


def test_steady_of_nothing_but_failed_builds_names_the_file(tmp_path):
    failed = tmp_path / "c9.json"
    failed.write_text("[]")
    code, output = invoke(["steady", failed, "--out", tmp_path / "steady.csv"])
    assert code == 2, output
    assert "c9.json: holds no results (an empty list: every benchmark of that run failed?)" in flat(output)
    assert not (tmp_path / "steady.csv").exists()


# ---------------------------------------------------------------- 12. --confirm-after 0 and the model's window


def _step_history(tmp_path):
    data = tmp_path / "step.csv"
    rng = np.random.default_rng(5)
    values = np.r_[100 + rng.standard_normal(40), 130 + rng.standard_normal(40)]
    pd.DataFrame({"series_id": "bench/parse", "commit": [f"c{k:03d}" for k in range(80)], "value": values}).to_csv(
        data, index=False)
    return data


def test_confirm_after_help_says_which_model_the_papers_loop_needs(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for command in ("watch", "detect"):
        code, output = invoke([command, "--help"])
        assert code == 0
        assert "0 = the paper's loop, with a window-0 model (default-w0)" in flat(output), output
    # What the help warns of: the bundled online-w4 at K = 0 misses a 30-sigma step, default-w0 finds it.
    data = _step_history(tmp_path)
    found = {}
    for name, args in {"w4": [], "w4-k0": ["--confirm-after", "0"], "w0": ["--model", "default-w0"]}.items():
        out = tmp_path / f"{name}.csv"
        code, output = invoke(["detect", "--data", data, "--out", out, *args])
        assert code == 0, output
        found[name] = pd.read_csv(out)["commit"].tolist()
    assert found == {"w4": ["c040"], "w4-k0": [], "w0": ["c040"]}


def test_detect_summary_counts_one_change_point_in_the_singular(tmp_path):
    code, output = invoke(["detect", "--data", _step_history(tmp_path), "--out", tmp_path / "found.csv"])
    assert code == 0, output
    assert "1 change point in 1 series (80 commits," in flat(output), output


def test_culprit_counts_one_measurement_and_one_commit_in_the_singular(tmp_path):
    partial = tmp_path / "partial.csv"
    partial.write_text("commit,value\nc0,5.1\nc1,5.0\nc2,\nc3,\nc4,7.0\nc5,7.1\n")
    oracle = tmp_path / "oracle.csv"
    oracle.write_text("commit,value\nc2,5.05\nc3,7.05\n")
    code, output = invoke(["culprit", "--data", partial, "--before", "c1", "--after", "c4", "--oracle", oracle,
                           "--max-measurements", "1"])
    assert code == 0, output
    assert ", 1 measurement for 2 unmeasured commits" in flat(output), output
