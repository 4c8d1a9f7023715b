"""Defects of the JMH path found by the thirty-second session's walkthrough, fixed there.

1. ``triage steady a.json b.json --out st.parquet`` (or ``--starts
   starts.parquet``, or ``--out st.json``) wrote CSV text under that name,
   which every reader of the project then refused ("not a readable Parquet
   file"). ``steady`` now writes Parquet for a ``.parquet`` name (as
   ``convert`` does) and refuses the names ``convert`` refuses (``.json``,
   ``.jsonl``, ``.parquet.gz``, ...) before any work, naming the option.

2. A JMH benchmark whose unit changed to one that cannot be converted
   (``ops/s`` in c00-c19, then ``B/op``) was joined into one series with a
   warning per file; the report then called the change of unit a -99.9 %
   regression and a true alert. It is now an error (exit 2) at the first
   file in the new unit, naming the benchmark, both units and the commits
   and files on each side. Time units still convert (``ops/s`` -> ``ops/ms``,
   ``us/op`` -> ``ms/op``); a file without ``scoreUnit`` is still warned about.

3. Several CI runs of one commit could not be pooled: ``triage steady c04.json
   c05.json c05b.json --commits c04,c05,c05`` failed "commit ids must be
   distinct", and two ``steady`` outputs concatenated numbered both runs' forks
   0, 1, ..., so a later ``--trim-warmup`` cut two JVMs as one run with a
   warm-up in its middle. A commit id given to several files in a row now
   pools them as re-runs, the forks of each later file numbered on after the
   earlier ones'. A commit's files apart (c04, c05, c04), one file given twice
   to a commit, and two files of one stem without ``--commits`` are refused,
   the last saying how re-runs are pooled.

4. A damaged JMH file whose first entry had lost ``primaryMetric`` was
   sniffed as a plain JSON list of numbers (``triage summary --data bad.json``:
   'row 1: value "{...}" is not a number'): the sniffer looked at the first
   entry only and wanted both keys. A list holding any object with a
   ``benchmark`` is now JMH, and the JMH reader says what is missing ("row 1:
   ...: no 'primaryMetric'").

5. A truncated JSON file was not called truncated: "not valid JSON:
   Expecting ',' delimiter (line 1, column 5535)", column 5535 being the end
   of the file. When the decoder stops at the end of the text (or only
   whitespace follows), or at a string never closed, the message now says
   the file ends before the JSON is complete (truncated?), line and column
   kept.

6. ``triage summary --format json`` left out the count of series whose
   direction is unknown, which the table shows ("direction unknown 1"): the
   two direction counts did not add up to the series. It now has
   ``direction_unknown_series``.

7. A JMH benchmark without ``mode`` had an unknown direction even when its
   ``scoreUnit`` said it (``ops/s`` a rate, higher is better; ``us/op`` a
   time, lower is better). The direction now falls back on the unit; with
   neither, it is unknown as before. KB-KSSD looks for a warm-up the same
   way (rising for such a rate, as for ``thrpt``).

8. ``triage summary --data FOLDER`` of JMH (or Google Benchmark) result files
   listed the folders it reads (asv, pytest-benchmark, Otava, synth) without
   a word on what reads such a folder, and ``triage steady FOLDER`` said only
   "is a directory; expected a file". Both now say to run ``triage steady
   FOLDER/*.json --out long.csv`` (the pattern of the files found, e.g.
   ``*.json.gz``), one file per commit in history order; summary names the
   kind of results it found, and its list of folders ends with the same line
   (the folder quoted for a shell, and a word that the shell's name order is
   history order only when the names sort so: git hashes do not).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.loaders import load
from triage.readers.jmh import steady_long


def _entry(benchmark, forks, mode="thrpt", unit="ops/s"):
    """One element of JMH's ``-rf json`` output, with the fields this project reads."""
    entry = {"jmhVersion": "1.37", "benchmark": benchmark, "primaryMetric": {
        "scoreUnit": unit, "rawData": [list(map(float, f)) for f in forks]}}
    if mode is not None:
        entry["mode"] = mode
    return entry


def _forks(rng, level, n_forks=2, n=30):
    return [level + rng.standard_normal(n) * level * 0.005 for _ in range(n_forks)]


def _history(folder, levels, mode="thrpt", units=None, name="org.acme.Bench.parse"):
    """One JMH file per commit, ``c00.json``, ``c01.json``, ...: the paths, in history order."""
    rng = np.random.default_rng(5)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for k, level in enumerate(levels):
        unit = units[k] if units else "ops/s"
        path = folder / f"c{k:02d}.json"
        path.write_text(json.dumps([_entry(name, _forks(rng, level), mode, unit)]))
        files.append(path)
    return files


# ------------------------------------------------------------------ 1. steady --out by its suffix


def test_steady_writes_parquet_for_a_parquet_name_and_refuses_a_json_name(tmp_path):
    files = _history(tmp_path / "h", [1000.0, 1000.0, 900.0])
    out, starts = tmp_path / "st.parquet", tmp_path / "starts.parquet"
    code, text = invoke(["steady", *files, "--out", out, "--starts", starts])
    assert code == 0, text
    assert out.read_bytes()[:4] == b"PAR1" and starts.read_bytes()[:4] == b"PAR1"
    assert list(pd.read_parquet(starts).columns[:3]) == ["series_id", "commit", "fork"]
    csv = tmp_path / "st.csv"
    assert invoke(["steady", *files, "--out", csv])[0] == 0
    # The Parquet file reads back as the CSV does, direction included.
    by_parquet, by_csv = load(out), load(csv)
    assert np.allclose(by_parquet["org.acme.Bench.parse"].values, by_csv["org.acme.Bench.parse"].values)
    assert by_parquet["org.acme.Bench.parse"].higher_is_better is True
    for option, name in (("--out", "st.json"), ("--out", "st.parquet.gz"), ("--starts", "starts.jsonl")):
        targets = {"--out": tmp_path / "o.csv", option: tmp_path / name}
        code, text = invoke(["steady", *files, *(x for pair in targets.items() for x in pair)])
        assert code == 2 and option in flat(text) and name in flat(text), text
        assert not (tmp_path / name).exists() and not (tmp_path / "o.csv").exists()


# ------------------------------------------------------------------ 2. a unit that cannot be converted


def test_a_unit_that_cannot_be_converted_is_an_error_naming_both_units_and_where(tmp_path):
    units = ["ops/s"] * 4 + ["B/op"] * 2
    files = _history(tmp_path / "h", [1000.0] * 4 + [24.0] * 2, units=units)
    out = tmp_path / "st.csv"
    code, text = invoke(["steady", *files, "--out", out])
    assert code == 2, text
    line = flat(text)
    assert "c04.json, row 1: org.acme.Bench.parse is in B/op from commit c04 on, in ops/s in commits c00" in line
    assert "c03 (" in line and "c03.json" in line and not out.exists()
    # Time units still convert: ops/s then ops/ms, us/op then ms/op.
    for folder, mode, pair, levels in (("r", "thrpt", ["ops/s", "ops/ms"], [2.0e6, 2.0e3]),
                                       ("t", "avgt", ["us/op", "ms/op"], [250.0, 0.25])):
        files = _history(tmp_path / folder, levels, mode=mode, units=pair)
        code, text = invoke(["steady", *files, "--out", out, "--trim-warmup", "none"])
        assert code == 0, text
        means = pd.read_csv(out).groupby("commit")["value"].mean().to_numpy()
        assert means == pytest.approx([levels[0]] * 2, rel=0.02)


# ------------------------------------------------------------------ 3. re-runs of one commit pooled


def test_steady_pools_the_files_of_a_repeated_commit_id_as_re_runs_with_forks_of_their_own(tmp_path):
    c04, c05 = _history(tmp_path / "h", [1000.0, 1000.0])
    (tmp_path / "rerun").mkdir()
    c05b = _history(tmp_path / "rerun", [990.0])[0]  # c00.json of its own folder: the re-run of c05
    out, starts = tmp_path / "st.csv", tmp_path / "starts.csv"
    code, text = invoke(["steady", c04, c05, c05b, "--commits", "c04,c05,c05", "--out", out, "--starts", starts,
                         "--trim-warmup", "none"])
    assert code == 0, text
    long = pd.read_csv(out)
    assert long.groupby("commit")["fork"].unique().map(list).to_dict() == {"c04": [0, 1], "c05": [0, 1, 2, 3]}
    values = json.loads(c05.read_text())[0]["primaryMetric"]["rawData"] + json.loads(c05b.read_text())[0][
        "primaryMetric"]["rawData"]
    assert np.allclose(long.loc[long.commit == "c05", "value"], np.concatenate(values))
    assert list(pd.read_csv(starts).loc[lambda t: t.commit == "c05", "fork"]) == [0, 1, 2, 3]
    # Each pooled fork is its own run for a later trim: four runs of 30 iterations, not two of 60.
    assert long.groupby(["commit", "fork"]).size().eq(30).all()
    failed = tmp_path / "failed.json"
    failed.write_text("[]")  # a re-run whose every benchmark failed: the commit keeps its other file
    with pytest.warns(UserWarning, match="failed.json: .*left out, commit c05 is its other files"):
        long, _ = steady_long([c04, c05, failed], ["c04", "c05", "c05"], trim_warmup="none")
    assert sorted(long.commit.unique()) == ["c04", "c05"]
    apart = tmp_path / "apart.csv"
    code, text = invoke(["steady", c04, c05, c05b, "--commits", "c05,c04,c05", "--out", apart])
    assert code == 2 and "next to each other" in flat(text) and not apart.exists(), text
    code, text = invoke(["steady", c05, c05, "--commits", "c05,c05", "--out", apart])
    assert code == 2 and "given twice" in flat(text), text
    same_stem = tmp_path / "h2" / "c01.json"
    same_stem.parent.mkdir()
    same_stem.write_text(c05.read_text())
    code, text = invoke(["steady", c05, same_stem, "--out", apart])
    assert code == 2 and "both commit 'c01'" in flat(text) and "pooled" in flat(text) and "--commits" in flat(text)


# ------------------------------------------------------------------ 4. a damaged JMH file sniffed as JMH


def test_a_jmh_file_whose_first_entry_lost_its_primary_metric_is_read_as_jmh(tmp_path):
    rng = np.random.default_rng(1)
    entries = [_entry("org.acme.A.first", _forks(rng, 10.0)), _entry("org.acme.A.second", _forks(rng, 10.0))]
    del entries[0]["primaryMetric"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(entries))
    code, text = invoke(["summary", "--data", bad])
    assert code == 2 and "bad.json, row 1: org.acme.A.first: no 'primaryMetric'" in flat(text), text


# ------------------------------------------------------------------ 5. a truncated JSON file


def test_a_truncated_json_file_is_called_truncated_with_its_line_and_column(tmp_path):
    rng = np.random.default_rng(2)
    whole = json.dumps([_entry("org.acme.A.run", _forks(rng, 10.0))])
    # Whitespace after the cut: the decoder stops at the end of it (line 3, column 1).
    for name, text, row in (("cut.json", whole[:-20], 1), ("cut_nl.json", whole[:-20] + "\n  \n", 3),
                            ("in_string.json", whole[: whole.index("org.acme") + 4], 1)):
        path = tmp_path / name
        path.write_text(text)
        for command in (["summary", "--data", path], ["steady", path, "--out", tmp_path / "o.csv"]):
            code, said = invoke(command)
            line = flat(said)
            assert code == 2 and f"{name}, row {row}: " in line, said
            assert "the file ends before the JSON is complete (truncated?)" in line and f"(line {row}, column" in line
    # A JSON error in the middle of a file is not a truncation.
    middle = tmp_path / "middle.json"
    middle.write_text(whole.replace('"rawData"', '"rawData" 1', 1))
    code, said = invoke(["steady", middle, "--out", tmp_path / "o.csv"])
    assert code == 2 and "not valid JSON" in flat(said) and "(truncated?)" not in flat(said), said


# ------------------------------------------------------------------ 6. summary --format json


def test_summary_json_counts_the_series_of_unknown_direction_as_the_table_does(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("series_id,commit,value,higher_is_better\n" + "".join(
        f"{s},c{c},{10 + c % 3},{hib}\n" for s, hib in (("a", "true"), ("b", "false"), ("c", ""))
        for c in range(5)))
    code, text = invoke(["summary", "--data", data, "--format", "json"])
    assert code == 0, text
    summary = json.loads(text.strip().splitlines()[-1])
    assert (summary["higher_is_better_series"], summary["lower_is_better_series"],
            summary["direction_unknown_series"]) == (1, 1, 1)
    assert "direction unknown 1" in flat(invoke(["summary", "--data", data])[1])


# ------------------------------------------------------------------ 7. the direction from the unit


def test_a_jmh_benchmark_without_a_mode_takes_its_direction_from_its_unit(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "c1.json"
    path.write_text(json.dumps([_entry("org.acme.A.rate", _forks(rng, 10.0), mode=None, unit="ops/ms"),
                                _entry("org.acme.A.time", _forks(rng, 10.0), mode=None, unit="us/op"),
                                _entry("org.acme.A.bytes", _forks(rng, 10.0), mode=None, unit="B/op"),
                                _entry("org.acme.A.mode", _forks(rng, 10.0), mode="avgt", unit="ops/s")]))
    dataset = load(path)
    assert {h.series_id: h.higher_is_better for h in dataset} == {
        "org.acme.A.rate": True, "org.acme.A.time": False, "org.acme.A.bytes": None, "org.acme.A.mode": False}
    out = tmp_path / "st.csv"
    assert invoke(["steady", path, "--out", out])[0] == 0
    said = pd.read_csv(out, dtype=str, keep_default_na=False).groupby("series_id")["higher_is_better"].first()
    assert said.to_dict() == {"org.acme.A.rate": "true", "org.acme.A.time": "false", "org.acme.A.bytes": "",
                              "org.acme.A.mode": "false"}


def test_kbkssd_cuts_a_rate_without_a_mode_as_it_cuts_thrpt(tmp_path):
    """The warm-up direction follows the file's direction: a mode-less ``ops/ms`` result rises to its
    level as a ``thrpt`` one does (it was cut as a time, looking for a fall)."""
    rng = np.random.default_rng(6)
    warm = [np.r_[np.linspace(400.0, 1000.0, 20), 1000.0 + rng.standard_normal(60) * 3.0] for _ in range(2)]
    cut = {}
    for mode in ("thrpt", None):
        path = tmp_path / f"{mode}" / "c1.json"
        path.parent.mkdir()
        path.write_text(json.dumps([_entry("org.acme.A.rate", warm, mode=mode, unit="ops/ms")]))
        _, starts = steady_long([path], trim_warmup="kbkssd")
        cut[mode] = starts["cut"].tolist()
    assert cut[None] == cut["thrpt"] and min(cut["thrpt"]) >= 15


# ------------------------------------------------------------------ 8. a folder of result files


def test_a_folder_of_result_files_is_told_to_go_through_steady(tmp_path):
    jmh = tmp_path / "jmh"
    _history(jmh, [1000.0, 1000.0])
    gbench = tmp_path / "gbench"
    gbench.mkdir()
    (gbench / "c1.json").write_text(json.dumps({"context": {"date": "2024-01-01"}, "benchmarks": [
        {"name": "BM_a", "run_name": "BM_a", "run_type": "iteration", "repetition_index": k,
         "real_time": 10.0 + k, "cpu_time": 10.0, "time_unit": "ns", "iterations": 100} for k in range(3)]}))
    for folder, kind in ((jmh, "JMH"), (gbench, "Google Benchmark")):
        code, text = invoke(["summary", "--data", folder])
        line = flat(text)
        assert code == 2 and f"a directory of {kind} result files" in line, text
        assert f"`triage steady {folder}/*.json --out long.csv` (the shell sorts the files by name" in line, text
    code, text = invoke(["steady", jmh, "--out", tmp_path / "o.csv"])
    line = flat(text)
    assert code == 2 and "is a directory; expected a file" in line, text
    assert f"`triage steady {jmh}/*.json --out long.csv`" in line and "history order" in line, text
    # A folder name with a space is quoted for the shell; the glob's name order is said not to be history order.
    spaced = tmp_path / "sp ace"
    _history(spaced, [1000.0, 1000.0])
    code, text = invoke(["summary", "--data", spaced])
    assert code == 2 and f"`triage steady '{spaced}'/*.json --out long.csv`" in flat(text), text
    assert "as git hashes are not, list the files in order" in flat(text), text
    # Any other folder: the list of folders read, then the same line.
    other = tmp_path / "other"
    other.mkdir()
    code, text = invoke(["summary", "--data", other])
    assert code == 2 and f"`triage steady {other}/*.json --out long.csv` (the shell sorts" in flat(text), text
    assert flat(text).endswith("list the files in order) first"), text


def test_steady_takes_a_jmh_file_and_a_google_benchmark_file_of_one_name(tmp_path):
    """The renaming of a benchmark held in two modes met a Google Benchmark file, which keeps no entry rows:
    "internal error: KeyError: 'BM_parse'" (the session's re-run pooling had added the lookup)."""
    rng = np.random.default_rng(8)
    jmh = tmp_path / "c1.json"
    jmh.write_text(json.dumps([_entry("BM_parse", _forks(rng, 1000.0))]))
    gbench = tmp_path / "c2.json"
    gbench.write_text(json.dumps({"context": {"date": "2024-01-01"}, "benchmarks": [
        {"name": "BM_parse", "run_name": "BM_parse", "run_type": "iteration", "repetition_index": k,
         "real_time": 10.0 + 0.1 * k, "cpu_time": 10.0, "time_unit": "ns", "iterations": 100} for k in range(3)]}))
    out = tmp_path / "o.csv"
    code, text = invoke(["steady", jmh, gbench, "--out", out, "--trim-warmup", "none"])
    assert code == 0, text
    assert sorted(pd.read_csv(out)["series_id"].unique()) == ["BM_parse:avgt", "BM_parse:thrpt"]
