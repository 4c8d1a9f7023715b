"""Defects found by bringing real histories in, in the formats a team has, and looking at them.

Each test writes a few series of ``../shared/data/real/histories.csv.gz``
(skipped without it) in one of the formats README's "Input formats" names
(asv results, github-action-benchmark ``data.js``, Otava CSV, Perfherder
data, candidate files) and runs ``triage`` on them as a user would:

1. asv results: a result file whose value is not finite (or out of range) or
   whose ``commit_hash`` is null was reported as ``<results dir>, row 408: ...``,
   a row of a table the reader builds internally and nobody has seen, instead
   of naming the result file and the benchmark.
2. asv results: a ``date`` written as text or too large for a timestamp, a
   ``version`` written as text, or ``results`` that are a list ended in an
   internal error (TypeError, OutOfBoundsDatetime, AttributeError) instead of
   an error naming the file.
3. github-action-benchmark ``data.js``: a run whose ``date`` is text or too
   large for a timestamp ended in an internal error (OutOfBoundsDatetime) or
   was read as some other date; now an error naming the suite and run.
4. Perfherder performance data of several signatures: a bad point was
   reported as ``row 6: ...``, the point's number in its list, without
   saying which signature's list (each has a point 6); a null value was
   reported as ``value 'nan'``, which the file does not say.
5. A wide Otava CSV (``time,commit,<metric>...``) with blank lines in it (two
   exports pasted together, a trailing paragraph): a bad cell after them was
   reported one line per blank line too early ("row 20" for line 22); the
   same in a candidates CSV (``triage score --candidates``) and a decisions
   CSV or JSON-lines file (``triage report --decisions``). README: a CSV
   row is its file line.
6. ``triage plot`` of a real otel-java series (ids of up to 189 characters):
   the title ran off both edges of the PNG, losing the project at its head
   and the machine at its tail; of a one-commit series: an empty plot (a
   line of one point draws nothing) with ticks from -0.04 to 0.04.
7. ``triage summary --data ../shared/data/real/histories.csv.gz`` on an
   80-column terminal: the table's title was broken inside the file name
   (``.../histories.cs`` then ``v.gz``), since rich fits a title to the
   35-column table; a path could not be read or copied from it.
8. ``triage candidates --detector pelt --param model=mahalanobis`` (or
   binseg) on real histories beside a series of constant values (a legal
   input): the whole run ended with "Invalid value: Singular matrix",
   naming neither the series nor the model. A constant series has no change
   point for any detector and now gives none; a detector failing on a series
   names it.
9. An Otava YAML config whose test names a ``time_column`` the CSV lacks
   (a typo, ``when`` for ``time``) was read without a word and without
   timestamps, keyed by the commit column; Otava itself refuses it. Now an
   error naming the CSV and the column.
10. asv results of memory benchmarks (the real emg3d ``peakmem_*`` series):
    their direction was read as unknown, not lower-is-better as README
    says, because asv writes the types ``memory`` and ``peakmemory`` in
    ``benchmarks.json`` and the reader knew only ``mem`` and ``peakmem``;
    without ``benchmarks.json`` every benchmark's direction was unknown,
    though asv itself tells a ``time_*`` or ``peakmem_*`` benchmark by its name.
11. ``triage convert --data perf.json --alerts alerts.json.gz`` (an alerts
    export kept compressed, as README allows for any file): "not a UTF-8
    text file"; the alerts file alone was read without decompressing it.
    (Read now like every input, ``--alerts -`` beside ``--data -`` is a
    usage error, one standard input; it read as "file is empty".)
12. ``triage score --candidates -`` with a Perfherder alerts export or an
    Otava JSON report on standard input (README: ``-`` takes any format),
    or such a file named ``alerts.gz`` / ``alerts.txt``, or an Otava report
    saved with a BOM: "cannot tell the candidate layout from the header
    ('{')" or "expected Perfherder alert summaries"; JSON candidate files
    were told apart by their ``.json`` suffix only. Now by their content.
13. A ``data.js`` saved by a Windows editor (a BOM, CRLF line ends): "not a
    github-action-benchmark data file: Unexpected UTF-8 BOM"; piped in
    (``-``), not even recognised as one.
14. ``triage report`` on a one-commit series (or one of constant values) of
    real asv timings (4e-05 s): its plot's y axis ran from -0.12 to 0.12,
    so the value read as 0.00 (the scale of one value was taken as 1.0,
    not the value's size); the one commit drew no point, and the x axis had
    ticks at -0.75 .. 0.75.
15. ``triage plot --out 'run[/]1.png'``: the PNG was written, then the
    command ended in an internal error (rich read the file name as markup);
    ``--out 'x[red]y.png'`` printed "wrote xy.png", a file that is not there.
16. A folder of exports holding the real histories' long CSV beside an
    Otava CSV, read as an Otava directory: the long CSV's series were merged
    into one metric ``<stem>/value``, their values averaged per commit
    across series, without a word. Now an error naming the file.
17. ``triage convert --data <long CSV | data.js | asv results> --alerts
    alerts.json``: the alerts were ignored without a word (only Perfherder
    data is labelled by them) and the "labelled training data" had no
    label. Likewise ``--commit-order`` (summary, convert, candidates) with
    asv results or a data.js: ignored, the commits kept the reader's order.
    Now a usage error naming the option and what the data was read as.
18. A wide CSV written by pandas with its index (``df.to_csv(path)``, header
    ``,time,commit,form_clean,...``): the unnamed index column became a
    series ``Unnamed: 0`` rising 0, 1, 2, ... beside the real metrics.
19. A ``data.js`` in which one run has no ``date`` (a hand-merged file): the
    timestamps of every run of every series were dropped without a word
    (``convert`` wrote an empty timestamp column). Now an error naming the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke

#: The emg3d peak-memory series of the real histories: one asv benchmark with a parameter.
EMG = "emg3d-bench/memory.ResidualMemory.peakmem_residual('{}')/meerkat/conda-py3.8"


def _series(frame: pd.DataFrame, sid: str) -> pd.DataFrame:
    part = frame[frame["series_id"] == sid]
    assert len(part), sid
    return part


# ---------------------------------------------------------------- asv results


def _asv_results(frame: pd.DataFrame, root: Path) -> Path:
    """The real emg3d peak-memory histories as the asv results directory they came from."""
    big, small = _series(frame, EMG.format("big")), _series(frame, EMG.format("small"))
    small_values = dict(zip(small["commit"], small["value"], strict=True))
    results = root / "results"
    machine = results / "meerkat"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "meerkat", "version": 1}))
    (results / "benchmarks.json").write_text(json.dumps({
        "memory.ResidualMemory.peakmem_residual": {"type": "peakmemory", "unit": "bytes",  # what asv writes
                                                   "params": [["'big'", "'small'"]], "param_names": ["size"]},
        "version": 2}))
    for commit, value, stamp in zip(big["commit"], big["value"], big["timestamp"], strict=True):
        other = small_values.get(commit)
        payload = {
            "commit_hash": commit, "env_name": "conda-py3.8", "version": 2,
            "date": int(pd.Timestamp(stamp).value // 10**6),
            "result_columns": ["result", "params", "version"],
            "results": {"memory.ResidualMemory.peakmem_residual": [
                [float(value), None if other is None else float(other)], [["'big'", "'small'"]], "1"]},
        }
        (machine / f"{commit[:8]}-conda-py3.8.json").write_text(json.dumps(payload))
    return results


def _edit_one_result(results: Path, edit) -> Path:
    """Apply ``edit`` to the payload of the fifth result file (sorted by name); that file returned."""
    file = sorted(p for p in (results / "meerkat").glob("*.json") if p.name != "machine.json")[4]
    payload = json.loads(file.read_text())
    edit(payload)
    file.write_text(json.dumps(payload))
    return file


def test_asv_results_round_trip_the_real_values_in_commit_date_order(real_frame_text, tmp_path: Path) -> None:
    results = _asv_results(real_frame_text, tmp_path)
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", results, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype={"value": str, "higher_is_better": str})
    for size in ("big", "small"):
        original = _series(real_frame_text, EMG.format(size))
        mine = long[long["series_id"] == f"meerkat/conda-py3.8/memory.ResidualMemory.peakmem_residual('{size}')"]
        assert list(mine["commit"]) == list(original["commit"])
        assert [float(v) for v in mine["value"]] == [float(v) for v in original["value"]]
        assert set(mine["higher_is_better"]) == {"false"}  # peakmem: lower is better


@pytest.mark.parametrize("edit, problem", [
    (lambda p: p["results"]["memory.ResidualMemory.peakmem_residual"][0].__setitem__(0, float("inf")),
     "benchmark 'memory.ResidualMemory.peakmem_residual'('big'): value 'inf' is not finite"),
    (lambda p: p["results"]["memory.ResidualMemory.peakmem_residual"][0].__setitem__(1, 1e200),
     "benchmark 'memory.ResidualMemory.peakmem_residual'('small'): value 1e+200 is outside the usable range"),
    (lambda p: p.__setitem__("commit_hash", None), "'commit_hash' None is not a commit id"),
])
def test_asv_bad_value_names_the_result_file_and_benchmark(real_frame_text, tmp_path: Path, edit, problem) -> None:
    results = _asv_results(real_frame_text, tmp_path)
    file = _edit_one_result(results, edit)
    code, text = invoke(["summary", "--data", results])
    assert code == 2, text
    assert f"error: {file}: {problem}" in flat(text)
    assert ", row " not in flat(text)  # no row of a table the user never saw


@pytest.mark.parametrize("edit, problem", [
    (lambda p: p.__setitem__("date", "2020-01-01"), "'date' '2020-01-01' is not a number"),
    (lambda p: p.__setitem__("date", 1e20), "'date' 1e+20 is not a date"),
    (lambda p: p.__setitem__("version", "2"), "'version' '2' is not an asv result format number"),
    (lambda p: p.__setitem__("results", [1, 2]), "'results' is list, not an object"),
])
def test_asv_malformed_result_file_is_a_located_error(real_frame_text, tmp_path: Path, edit, problem) -> None:
    results = _asv_results(real_frame_text, tmp_path)
    file = _edit_one_result(results, edit)
    code, text = invoke(["summary", "--data", results])
    assert code == 2, text
    assert f"error: {file}: {problem}" in flat(text)
    assert "internal error" not in text


# ---------------------------------------------------------------- github-action-benchmark data.js

RHAI = "rhai/bench_engine_new/gha-ubuntu-latest"
OTEL = "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({logSize:SMALL})/otel-bench-runner"


def _data_js(frame: pd.DataFrame, path: Path, edit=None) -> Path:
    """The real rhai (ns/iter, cargo) and otel-java (ops/s, jmh) series as a ``data.js``, one run a row."""
    entries: dict[str, list] = {}
    for sid, suite, tool, unit in ((RHAI, "Rust Benchmark", "cargo", "ns/iter"), (OTEL, "Java", "jmh", "ops/s")):
        part = _series(frame, sid)
        entries[suite] = [
            {"commit": {"id": c, "timestamp": t}, "date": int(pd.Timestamp(t).value // 10**6), "tool": tool,
             "benches": [{"name": sid.split("/", 1)[1], "value": float(v), "unit": unit}]}
            for c, t, v in zip(part["commit"], part["timestamp"], part["value"], strict=True)
        ]
    payload = {"lastUpdate": 1, "repoUrl": "https://github.com/x/y", "entries": entries}
    if edit is not None:
        edit(payload)
    path.write_text("window.BENCHMARK_DATA = " + json.dumps(payload, indent=2) + ";\n")
    return path


def test_data_js_round_trips_real_reruns_and_directions(real_frame_text, tmp_path: Path) -> None:
    data = _data_js(real_frame_text, tmp_path / "data.js")
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype={"higher_is_better": str})
    for sid, suite, higher in ((RHAI, "Rust Benchmark", "false"), (OTEL, "Java", "true")):
        original = _series(real_frame_text, sid).astype({"value": float})
        # A re-run (rhai, otel-java measure some commits twice) belongs to its commit, which keeps its first place.
        expected = original.groupby("commit", sort=False)["value"].mean()
        mine = long[long["series_id"] == f"{suite}/{sid.split('/', 1)[1]}"]
        assert list(mine["commit"]) == list(expected.index)
        assert list(mine["value"]) == list(expected)
        assert set(mine["higher_is_better"]) == {higher}


@pytest.mark.parametrize("date, problem", [
    (1e20, "date 1e+20 is not a date"),
    ("2020-01-01", "date '2020-01-01' is not a number"),
])
def test_data_js_bad_date_names_the_run(real_frame_text, tmp_path: Path, date, problem) -> None:
    data = _data_js(real_frame_text, tmp_path / "data.js",
                    lambda p: p["entries"]["Rust Benchmark"][3].__setitem__("date", date))
    code, text = invoke(["summary", "--data", data])
    assert code == 2, text
    assert f"error: {data}: suite 'Rust Benchmark', run 4: {problem}" in flat(text)


# ---------------------------------------------------------------- Perfherder performance data

DJANGO = "django-asv/form_benchmarks.form_clean.benchmark.FormClean.time_form_clean/ubuntu-latest/conda-py3.{}"


def _perf_data(frame: pd.DataFrame, path: Path, edit=None) -> Path:
    """Two real django-asv series as Perfherder performance data, one signature each."""
    payload = {}
    for k, minor in enumerate(("10", "12")):
        part = _series(frame, DJANGO.format(minor))
        payload[f"sig{k}"] = [
            {"signature_id": 40 + k, "revision": c, "push_id": j, "push_timestamp": t.rstrip("Z"), "value": float(v)}
            for j, (c, t, v) in enumerate(zip(part["commit"], part["timestamp"], part["value"], strict=True))
        ]
    if edit is not None:
        edit(payload)
    path.write_text(json.dumps(payload))
    return path


def test_perfherder_data_and_alerts_round_trip(real_frame_text, tmp_path: Path) -> None:
    data = _perf_data(real_frame_text, tmp_path / "perf.json")
    revision = _series(real_frame_text, DJANGO.format("12"))["commit"].iloc[100]
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps({"results": [{"id": 1, "revision": revision, "status": 0, "alerts": [
        {"id": 2, "status": "invalid", "series_signature": {"id": 41, "signature_hash": "sig1", "lower_is_better": True}}]}]}))
    out = tmp_path / "labelled.csv"
    code, text = invoke(["convert", "--data", data, "--alerts", alerts, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype=str, keep_default_na=False)
    for k, minor in enumerate(("10", "12")):
        original = _series(real_frame_text, DJANGO.format(minor))
        mine = long[long["series_id"] == f"sig{k}"]
        assert list(mine["commit"]) == list(original["commit"])
        assert [float(v) for v in mine["value"]] == [float(v) for v in original["value"]]
    labelled = long[long["label"] != ""]
    assert labelled[["series_id", "commit", "label"]].values.tolist() == [["sig1", revision, "false_positive"]]
    assert set(long.loc[long["series_id"] == "sig1", "higher_is_better"]) == {"false"}


@pytest.mark.parametrize("value, problem", [
    (None, "row 6: value is null, not a number (point 6 of signature 'sig1')"),
    ("fast", "row 6: value 'fast' is not a number (point 6 of signature 'sig1')"),
    (1e200, "row 6: value 1e+200 is outside the usable range"),
])
def test_perfherder_bad_point_names_its_signature(real_frame_text, tmp_path: Path, value, problem) -> None:
    data = _perf_data(real_frame_text, tmp_path / "perf.json", lambda p: p["sig1"][5].__setitem__("value", value))
    code, text = invoke(["summary", "--data", data])
    assert code == 2, text
    assert f"error: {data}, {problem}" in flat(text)
    assert "(point 6 of signature 'sig1')" in flat(text)


# ---------------------------------------------------------------- row numbers after blank lines

WIDE = [f"django-asv/form_benchmarks.form_{k}.benchmark.Form{k.title()}.time_form_{k}/ubuntu-latest/conda-py3.10"
        for k in ("clean", "create")]


def _wide_otava(frame: pd.DataFrame) -> list[str]:
    """Two real django-asv series (same commits) as the lines of an Otava CSV: time, commit, one column each."""
    parts = [_series(frame, sid).set_index("commit") for sid in WIDE]
    lines = ["time,commit,form_clean,form_create"]
    for commit, row in parts[0].iterrows():
        stamp = pd.Timestamp(row["timestamp"]).strftime("%Y-%m-%d %H:%M:%S +0000")
        lines.append(f"{stamp},{commit},{row['value']},{parts[1].loc[commit, 'value']}")
    return lines


def test_otava_csv_bad_cell_after_blank_lines_names_its_line(real_frame_text, tmp_path: Path) -> None:
    lines = _wide_otava(real_frame_text)[:40]
    lines[30] = lines[30].rsplit(",", 1)[0] + ",fast"
    lines[10:10] = ["", "   "]  # two blank lines: the bad cell moves to line 33
    data = tmp_path / "wide.csv"
    data.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    code, text = invoke(["summary", "--data", data])
    assert code == 2, text
    assert f"error: {data}, row 33: value 'fast' is not a number" in flat(text)


def test_otava_csv_round_trips_the_real_values(real_frame_text, tmp_path: Path) -> None:
    data = tmp_path / "wide.csv"
    data.write_text("\ufeff" + "\n".join(_wide_otava(real_frame_text)) + "\n\n\n")  # a BOM, trailing blank lines
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype={"value": str})
    for sid, metric in zip(WIDE, ("form_clean", "form_create"), strict=True):
        original = _series(real_frame_text, sid)
        mine = long[long["series_id"] == metric]
        assert list(mine["commit"]) == list(original["commit"])
        assert [float(v) for v in mine["value"]] == [float(v) for v in original["value"]]
        assert list(pd.to_datetime(mine["timestamp"])) == list(
            pd.to_datetime(original["timestamp"]).dt.tz_localize(None))


def test_candidate_csv_bad_row_after_blank_lines_names_its_line(real_frame_text, tmp_path: Path) -> None:
    data = tmp_path / "wide.csv"
    data.write_text("\n".join(_wide_otava(real_frame_text)) + "\n")
    commits = list(_series(real_frame_text, WIDE[0])["commit"])
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit,index,detector,score\n"
                     f"form_clean,{commits[100]},100,pelt,1\n\n\n"
                     f"form_clean,{commits[200]},200,pelt,1\n"
                     f"form_clean,{commits[300]},zz,pelt,1\n")
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", tmp_path / "scored.csv"])
    assert code == 2, text
    assert f"error: {cands}, row 6: index 'zz' is not a number" in flat(text)
    cands.write_text("series_id,commit,index,detector,score\n\n"
                     f"form_clean,{commits[100]},100,pelt,1\n\n"
                     "form_clean,no-such-commit,,pelt,1\n")
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", tmp_path / "scored.csv"])
    assert code == 2, text
    assert f"error: {cands}, row 5: commit 'no-such-commit' is not in series 'form_clean'" in flat(text)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_decisions_bad_row_after_blank_lines_names_its_line(real_frame_text, tmp_path: Path, fmt) -> None:
    data = tmp_path / "wide.csv"
    data.write_text("\n".join(_wide_otava(real_frame_text)) + "\n")
    cands = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", "pelt", "--out", cands])
    assert code == 0, text
    scored = tmp_path / f"scored.{fmt}"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", scored, "--format", fmt])
    assert code == 0, text
    lines = scored.read_text().splitlines()
    header = 1 if fmt == "csv" else 0
    assert len(lines) > header + 3
    bad = lines[header + 2].replace("false_positive", "maybe").replace("true_positive", "maybe")
    edited = [*lines[: header + 1], "", "", lines[header + 1], bad]
    scored.write_text("\n".join(edited) + "\n")
    code, text = invoke(["report", "--data", data, "--decisions", scored, "--out", tmp_path / "report"])
    assert code == 2, text
    assert f"error: {scored}, row {len(edited)}: classification 'maybe' is not" in flat(text)


# ---------------------------------------------------------------- triage plot

LONGEST = ("otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads1({aggregationTemporality:CUMULATIVE;"
           "cardinality:100;instrumentTypeAndAggregation:HISTOGRAM_BASE2_EXPONENTIAL})/otel-bench-runner")


def _png(path: Path):
    from matplotlib.image import imread

    return imread(str(path))[:, :, :3]


def test_plot_title_of_a_long_real_series_id_stays_inside_the_picture(real_frame_text, tmp_path: Path) -> None:
    data = tmp_path / "otel.csv"
    _series(real_frame_text, LONGEST).to_csv(data, index=False)
    out = tmp_path / "otel.png"
    code, text = invoke(["plot", "--data", data, "--out", out])
    assert code == 0, text
    pixels = _png(out)
    band = pixels[:40]  # the title's rows, above the axes
    assert (band < 0.9).any(), "no title drawn"
    # Text reaching an edge is text cut off there.
    assert (band[:, :3] > 0.99).all() and (band[:, -3:] > 0.99).all()


def test_title_lines_keep_both_ends_of_a_real_id() -> None:
    from triage.plotting import title_lines

    lines = title_lines(LONGEST, 110)
    assert "".join(lines) == LONGEST and len(lines) == 2 and all(len(line) <= 110 for line in lines)
    assert lines[0].endswith(":")  # broken after a separator (cardinality:|100), not inside a word
    short = title_lines("x" * 1000, 50)
    assert len(short) == 3 and short[0].startswith("x") and "\u2026" in "".join(short)


def test_plot_of_a_one_commit_series_shows_its_value(real_frame_text, tmp_path: Path) -> None:
    data = tmp_path / "one.csv"
    _series(real_frame_text, LONGEST).head(1).to_csv(data, index=False)
    out = tmp_path / "one.png"
    code, text = invoke(["plot", "--data", data, "--out", out])
    assert code == 0, text
    pixels = _png(out)
    height, width, _ = pixels.shape
    # tab:blue (#1f77b4) in the middle of the axes, away from the legend in the top-left corner
    middle = pixels[height // 4: 3 * height // 4, width // 3: 2 * width // 3]
    blue = (abs(middle[:, :, 0] - 0x1F / 255) < 0.1) & (abs(middle[:, :, 1] - 0x77 / 255) < 0.1) & (
        abs(middle[:, :, 2] - 0xB4 / 255) < 0.1)
    assert blue.sum() > 10


# ---------------------------------------------------------------- triage summary at 80 columns


@pytest.mark.parametrize("folder", ["real", "a-much-longer-folder-name-" * 3])
def test_summary_title_keeps_the_file_name_whole(real_frame_text, tmp_path: Path, folder) -> None:
    (tmp_path / folder).mkdir()
    data = tmp_path / folder / "histories.csv.gz"
    _series(real_frame_text, LONGEST).to_csv(data, index=False, compression="gzip")
    code, text = invoke(["summary", "--data", data])
    assert code == 0, text
    assert any(line.strip() == f"Dataset {data}" for line in text.splitlines()), text
    assert max(len(line) for line in text.splitlines() if "\u2502" in line) <= 80  # the table itself fits


# ---------------------------------------------------------------- triage candidates on a constant series


@pytest.mark.parametrize("detector", ["pelt", "binseg"])
def test_candidates_mahalanobis_beside_a_constant_series(real_frame_text, tmp_path: Path, detector) -> None:
    real = _series(real_frame_text, WIDE[0])
    constant = pd.DataFrame({"series_id": "constant", "commit": [f"k{i}" for i in range(40)],
                             "timestamp": real["timestamp"].iloc[:40].to_numpy(), "value": "2.5E+02"})
    data = tmp_path / "history.csv"
    pd.concat([real, constant]).to_csv(data, index=False)
    out = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", detector, "--param", "model=mahalanobis",
                         "--out", out])
    assert code == 0, text
    cands = pd.read_csv(out)
    assert len(cands) and set(cands["series_id"]) == {WIDE[0]}  # the real series' changes, none on the constant one


def test_a_detector_failing_on_a_series_names_it(real_frame_text, tmp_path: Path, monkeypatch) -> None:
    from triage.detectors.penalised import Pelt

    def fail(self, values):
        raise ValueError("Singular matrix")

    monkeypatch.setattr(Pelt, "detect", fail)
    data = tmp_path / "history.csv"
    _series(real_frame_text, WIDE[0]).to_csv(data, index=False)
    code, text = invoke(["candidates", "--data", data, "--detector", "pelt", "--out", tmp_path / "c.csv"])
    assert code == 2, text
    squeezed = flat(text).replace(" ", "")  # the box breaks the long id across lines
    assert f"detector'pelt'failedonseries'{WIDE[0]}'(948commits):Singularmatrix" in squeezed


# ---------------------------------------------------------------- Otava YAML config


def _otava_config(real_frame_text, tmp_path: Path, time_column: str) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "forms.csv").write_text("\n".join(_wide_otava(real_frame_text)) + "\n")
    config = tmp_path / "otava.yaml"
    config.write_text(f"""tests:
  django.forms:
    type: csv
    file: tests/forms.csv
    time_column: {time_column}
    metrics:
      clean: {{column: form_clean, direction: -1}}
      create: {{column: form_create, direction: 1}}
""")
    return config


def test_otava_config_reads_directions_and_timestamps(real_frame_text, tmp_path: Path) -> None:
    config = _otava_config(real_frame_text, tmp_path, "time")
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", config, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype={"higher_is_better": str})
    clean = long[long["series_id"] == "django.forms/clean"]
    original = _series(real_frame_text, WIDE[0])
    assert list(clean["commit"]) == list(original["commit"])
    assert list(pd.to_datetime(clean["timestamp"])) == list(pd.to_datetime(original["timestamp"]).dt.tz_localize(None))
    assert set(clean["higher_is_better"]) == {"false"}
    assert set(long.loc[long["series_id"] == "django.forms/create", "higher_is_better"]) == {"true"}


def test_otava_config_time_column_missing_from_the_csv_is_an_error(real_frame_text, tmp_path: Path) -> None:
    config = _otava_config(real_frame_text, tmp_path, "when")
    code, text = invoke(["summary", "--data", config])
    assert code == 2, text
    assert "tests/forms.csv, row 1: missing column 'when', the config's time_column (found: time, commit," in flat(text)



def test_asv_direction_without_benchmarks_json_follows_asv_names(real_frame_text, tmp_path: Path) -> None:
    results = _asv_results(real_frame_text, tmp_path)
    (results / "benchmarks.json").unlink()
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", results, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype={"higher_is_better": str})
    assert set(long["higher_is_better"]) == {"false"}  # peakmem_residual: asv's peak-memory type
    code, text = invoke(["summary", "--data", results, "--format", "json"])
    assert json.loads(text)["lower_is_better_series"] == 2



@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_perfherder_alerts_export_may_be_compressed(real_frame_text, tmp_path: Path, compress) -> None:
    import gzip

    import zstandard

    data = _perf_data(real_frame_text, tmp_path / "perf.json")
    revision = _series(real_frame_text, DJANGO.format("10"))["commit"].iloc[200]
    export = json.dumps({"results": [{"id": 1, "revision": revision, "alerts": [
        {"id": 2, "status": 4, "series_signature": {"id": 40, "signature_hash": "sig0", "lower_is_better": True}}]}]})
    alerts = tmp_path / "alerts.json.gz"
    alerts.write_bytes(gzip.compress(export.encode()) if compress == "gzip"
                       else zstandard.ZstdCompressor().compress(export.encode()))
    out = tmp_path / "labelled.csv"
    code, text = invoke(["convert", "--data", data, "--alerts", alerts, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert long.loc[long["label"] != "", ["series_id", "commit", "label"]].values.tolist() == [
        ["sig0", revision, "true_positive"]]



def _otava_report(real_frame_text) -> dict:
    """An Otava JSON report (``otava analyze --output json``) naming two real commits of form_clean."""
    commits = list(_series(real_frame_text, WIDE[0])["commit"])
    return {"django.forms": [
        {"time": "2024-01-01 00:00:00 +0000", "attributes": {"commit": commits[k]},
         "changes": [{"metric": "form_clean", "index": k, "forward_change_percent": 12.0, "pvalue": 0.001}]}
        for k in (300, 600)]}


@pytest.mark.parametrize("how", ["stdin", "gz", "txt", "bom"])
def test_json_candidate_files_are_told_apart_by_content(real_frame_text, tmp_path: Path, how) -> None:
    import gzip

    data = tmp_path / "wide.csv"
    data.write_text("\n".join(_wide_otava(real_frame_text)) + "\n")
    report = json.dumps(_otava_report(real_frame_text), indent=2)
    stdin = None
    if how == "stdin":
        cands, stdin = "-", report
    elif how == "gz":
        cands = tmp_path / "otava-report.gz"
        cands.write_bytes(gzip.compress(report.encode()))
    elif how == "txt":
        cands = tmp_path / "otava-report.txt"
        cands.write_text(report)
    else:
        cands = tmp_path / "otava-report.json"
        cands.write_text("\ufeff" + report)
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out], stdin=stdin)
    assert code == 0, text
    scored = pd.read_csv(out)
    assert sorted(scored["index"]) == [300, 600]
    assert set(scored["series_id"]) == {"form_clean"}


def test_perfherder_alerts_on_stdin_score(real_frame_text, tmp_path: Path) -> None:
    data = _perf_data(real_frame_text, tmp_path / "perf.json")
    revision = _series(real_frame_text, DJANGO.format("12"))["commit"].iloc[100]
    export = json.dumps({"results": [{"id": 1, "revision": revision, "alerts": [
        {"id": 2, "status": 0, "series_signature": {"id": 41, "signature_hash": "sig1"}}]}]})
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", "-", "--out", out], stdin=export)
    assert code == 0, text
    assert pd.read_csv(out)[["series_id", "commit"]].values.tolist() == [["sig1", revision]]



@pytest.mark.parametrize("stdin", [False, True])
def test_data_js_with_a_bom_and_crlf(real_frame_text, tmp_path: Path, stdin: bool) -> None:
    plain = _data_js(real_frame_text, tmp_path / "plain.js")
    data = tmp_path / "data.js"
    data.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n") + b"\r\n\r\n")
    expected = tmp_path / "expected.csv"
    assert invoke(["convert", "--data", plain, "--out", expected])[0] == 0
    out = tmp_path / "long.csv"
    args = ["convert", "--data", "-" if stdin else data, "--out", out]
    code, text = invoke(args, stdin=data.read_bytes().decode("utf-8") if stdin else None)
    assert code == 0, text
    assert out.read_text() == expected.read_text()



def test_report_plot_of_a_one_commit_series_keeps_the_values_scale(real_frame_text, tmp_path: Path, monkeypatch) -> None:
    import matplotlib.pyplot as plt

    first = _series(real_frame_text, WIDE[0]).head(1)
    value = float(first["value"].iloc[0])
    assert value < 1e-3  # a real timing in seconds
    data = tmp_path / "one.csv"
    first.to_csv(data, index=False)
    commit = first["commit"].iloc[0]
    decisions = tmp_path / "decisions.csv"
    decisions.write_text(f"series_id,commit,index,p_true,classification\n{WIDE[0]},{commit},0,,not_scorable\n")
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (figures.append(fig), close(fig)))
    code, text = invoke(["report", "--data", data, "--decisions", decisions, "--out", tmp_path / "report"])
    assert code == 0, text
    ax = figures[-1].axes[0]
    low, high = ax.get_ylim()
    assert low < value < high and high - low < value  # the axis is of the value's size
    assert all(float(t).is_integer() for t in ax.get_xticks())
    line = ax.get_lines()[0]
    assert line.get_marker() == "o"  # the one value is drawn



@pytest.mark.parametrize("name", ["run[/]1.png", "x[red]y[/red].png"])
def test_plot_names_its_output_as_written(real_frame_text, tmp_path: Path, name) -> None:
    data = tmp_path / "one.csv"
    _series(real_frame_text, WIDE[0]).head(50).to_csv(data, index=False)
    out = tmp_path / name
    code, text = invoke(["plot", "--data", data, "--out", out])
    assert code == 0, text
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {out}" in text.replace("\n", "")



def test_long_csv_in_an_otava_directory_is_refused(real_frame_text, tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "forms.csv").write_text("\n".join(_wide_otava(real_frame_text)) + "\n")
    real_frame_text[real_frame_text["series_id"].isin(WIDE)].to_csv(folder / "history.csv.gz", index=False, compression="gzip")
    code, text = invoke(["summary", "--data", folder])
    assert code == 2, text
    assert f"error: {folder / 'history.csv.gz'}, row 1: a long-layout CSV (it has a series_id column)" in flat(text)
    (folder / "history.csv.gz").unlink()
    code, text = invoke(["summary", "--data", folder, "--format", "json"])
    assert code == 0 and json.loads(text)["series"] == 2, text



def test_alerts_for_data_they_cannot_label_are_refused(real_frame_text, tmp_path: Path) -> None:
    long = tmp_path / "history.csv.gz"
    real_frame_text[real_frame_text["series_id"].isin(WIDE)].to_csv(long, index=False, compression="gzip")
    data_js = _data_js(real_frame_text, tmp_path / "data.js")
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps({"results": [{"revision": "abc", "alerts": [
        {"status": 4, "series_signature": {"signature_hash": "sig0"}}]}]}))
    for data, what in ((long, "read as long data"), (data_js, "read as gab data")):
        for command in (["convert", "--out", tmp_path / "out.csv"], ["summary"]):
            code, text = invoke([*command, "--data", data, "--alerts", alerts])
            assert code == 2, text
            expected = f"--alerts: it applies to Perfherder performance data only; {data} is {what}"
            assert expected.replace(" ", "") in flat(text).replace(" ", "")  # the box breaks the path
    assert not (tmp_path / "out.csv").exists()
    perf = _perf_data(real_frame_text, tmp_path / "perf.json")  # what --alerts is for still works
    code, text = invoke(["summary", "--data", perf, "--alerts", alerts])
    assert code == 2 and "alert on revision 'abc'" in flat(text), text



def test_commit_order_for_data_it_cannot_order_is_refused(real_frame_text, tmp_path: Path) -> None:
    results = _asv_results(real_frame_text, tmp_path)
    commits = list(_series(real_frame_text, EMG.format("big"))["commit"])
    order = tmp_path / "order.txt"
    order.write_text("\n".join(reversed(commits)) + "\n")
    for command in (["convert", "--out", tmp_path / "out.csv"], ["summary"],
                    ["candidates", "--detector", "pelt", "--out", tmp_path / "c.csv"]):
        code, text = invoke([*command, "--data", results, "--commit-order", order])
        assert code == 2, text
        expected = f"--commit-order: it applies to the long layout and JSON lines only; {results} is read as asv data"
        assert expected.replace(" ", "") in flat(text).replace(" ", "")
    long = tmp_path / "big.csv"  # where it applies, it orders
    _series(real_frame_text, EMG.format("big"))[["series_id", "commit", "value"]].to_csv(long, index=False)
    code, text = invoke(["convert", "--data", long, "--commit-order", order, "--out", tmp_path / "out.csv"])
    assert code == 0, text
    assert list(pd.read_csv(tmp_path / "out.csv")["commit"]) == list(reversed(commits))



def test_wide_csv_with_pandas_index_column_reads_only_the_metrics(real_frame_text, tmp_path: Path) -> None:
    lines = _wide_otava(real_frame_text)
    data = tmp_path / "wide.csv"
    data.write_text("\n".join(f"{'' if k == 0 else k - 1},{line}" for k, line in enumerate(lines)) + "\n")
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    long = pd.read_csv(out)
    assert sorted(long["series_id"].unique()) == ["form_clean", "form_create"]



def test_data_js_run_without_a_date_is_named(real_frame_text, tmp_path: Path) -> None:
    data = _data_js(real_frame_text, tmp_path / "data.js", lambda p: p["entries"]["Java"][7].pop("date"))
    code, text = invoke(["convert", "--data", data, "--out", tmp_path / "long.csv"])
    assert code == 2, text
    assert f"error: {data}: suite 'Java', run 8: no 'date' (the other runs have one" in flat(text)
    undated = _data_js(real_frame_text, tmp_path / "undated.js",
                       lambda p: [run.pop("date") for runs in p["entries"].values() for run in runs])
    code, text = invoke(["convert", "--data", undated, "--out", tmp_path / "long.csv"])
    assert code == 0, text  # no dates at all: read in run order, without timestamps



def test_alerts_and_data_cannot_both_be_stdin(real_frame_text, tmp_path: Path) -> None:
    data = _perf_data(real_frame_text, tmp_path / "perf.json")
    code, text = invoke(["summary", "--data", "-", "--alerts", "-"], stdin=data.read_text())
    assert code == 2, text
    assert "only one of --data and --alerts can be - (one standard input)" in flat(text)
