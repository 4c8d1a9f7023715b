"""Walkthrough s19, fuzz: every reader under malformed and mutated files (truncated, bytes flipped,
keys and columns dropped or retyped, huge numbers).

The invariant: exit 0 with a correct result, or exit 2 with one line naming
the file (and its row where there is one) and the problem; never exit 1 (an
internal error) nor a traceback.

Defects found (what a user did, what went wrong, what happens now):

1. Scored an Otava JSON report whose change point group had ``attributes``
   written as a list (``"attributes": [{"commit": ...}]``, one nesting level
   too deep): "internal error: AttributeError: 'list' object has no
   attribute 'items'". Now exit 2 naming the file, the change and the test.
2. Read a Google Benchmark run whose ``repetition_index`` was an object
   (``{"x": 0}``): "internal error: TypeError: unhashable type". Now exit 2
   naming the row and the benchmark.
3. Read a Parquet history with a text cell that is not UTF-8 (a flipped bit in
   a CI artifact, or a tool writing Latin-1 into a string column): pyarrow
   read it without a word and failed when the text was used ("internal error:
   ArrowException: Wrapping 2024-03-01T?1:00:00 failed"; a binary column: a
   UnicodeDecodeError). Now exit 2 naming the record and the column.
4. Read a Parquet history whose ``series_id`` column holds lists or structs
   (one level of nesting too many): "internal error: TypeError: unhashable
   type"; a ``commit`` column of lists was read as the printed lists
   (``[1.]``) without a word. Now exit 2 naming the column and its type.
5. Read a damaged Parquet file: the error ran over two lines (thrift's reason,
   then "Deserializing page header failed."). Now one line.
6. Read a CSV whose header has a quote that is never closed
   (``"Value";"MongoDB.Label``): "missing column 'MongoDB.Label' (found:
   ...)" followed by the whole file, one line of it per line of the
   terminal. Now one line saying the header's column runs over lines.
7. Gave a JSON input (a JSON list, ``data.js``, a watch feed, a candidates
   JSON-lines file, an Otava report) holding an integer of more than 4300
   digits (a damaged file): "internal error: ValueError: Exceeds the limit
   (4300 digits) for integer string conversion". Now exit 2 naming the line.
8. Read a ``data.js`` whose bench value is an integer beyond a float's range
   (``1`` followed by 400 zeros): "internal error: OverflowError: int too large
   to convert to float". Now exit 2 naming the suite, run and bench.
9. Read an asv results directory with one damaged file: a ``result`` that is
   an empty list where ``benchmarks.json`` names two parameter combinations
   ("internal error: ValueError: zip() argument 2 is shorter"), a
   ``result_columns`` entry that is a list ("unhashable type: 'list'"),
   ``params`` that are numbers, not lists of values ("'float' object is not
   iterable"), or a benchmark ``type`` in ``benchmarks.json`` that is an
   object ("unhashable type: 'dict'"). Now the empty result is no
   measurement, the bad columns and params are refused naming the result
   file and the benchmark, and a type that is no text is left to asv's rule
   on the benchmark's name.
10. Read an Otava YAML config with a typo: the error ran over four lines
    (PyYAML's context, a copy of the line, a caret). Now one line with the
    problem, its row and column. A test whose ``file`` is a folder (``.``)
    gave "error: .: Is a directory", naming neither the config nor the
    test; ``csv_options`` written as a list, or a ``delimiter`` that is a
    number, were internal errors (AttributeError, TypeError). Now each is
    refused naming the config and the test.
11. Gave a ``data.js``, a candidates JSON-lines file or a ``.json`` report, nested deeper than
    Python's recursion limit (``[[[[...]]]]``, a damaged or hostile file):
    "internal error: RecursionError", where the other JSON readers say
    "nested too deeply". Now the same one line, naming the file (and, in
    JSON lines, the line).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers_cli import flat, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.candidate_files import read_candidates, resolve
from triage.core.errors import InputError
from triage.loaders import load


def _lines_ok(code: int, out: str, name: str) -> None:
    """Exit 2 with one error line naming ``name``."""
    assert code == 2, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and name in errors[0], out
    assert "Traceback" not in out and "internal error" not in out, out


def _otava_data(tmp_path: Path) -> Path:
    path = tmp_path / "perf.csv"
    rows = "".join(f"2024-03-01 {i // 2:02d}:{30 * (i % 2):02d}:00 +0000,c{i},{100 + 20 * (i >= 20)}\n" for i in range(40))
    path.write_text("time,commit,throughput\n" + rows)
    return path


def _data_js(value_text: str) -> str:
    runs = [{"commit": {"id": f"c{i}"}, "date": 1_700_000_000_000 + i, "tool": "cargo",
             "benches": [{"name": "parse", "value": 100 + i, "unit": "ns/iter"}]} for i in range(3)]
    text = "window.BENCHMARK_DATA = " + json.dumps({"entries": {"Rust Benchmark": runs}}, indent=2) + ";\n"
    return text.replace('"value": 101', f'"value": {value_text}', 1)


# --------------------------------------------------------------------------- one test per defect


def test_otava_report_with_attributes_as_a_list_is_refused_at_its_change(tmp_path):
    report = tmp_path / "otava.json"
    report.write_text(json.dumps({"nightly": [{"time": 1, "attributes": [{"commit": "c20"}],
                                               "changes": [{"metric": "throughput", "index": 20}]}]}))
    code, out = invoke(["score", "--data", _otava_data(tmp_path), "--candidates", report])
    _lines_ok(code, out, "otava.json, row 1")
    assert "'attributes'" in flat(out), out


def test_gbench_repetition_index_of_the_wrong_type_is_refused_at_its_row(tmp_path):
    items = [{"name": "BM_a", "run_name": "BM_a", "run_type": "iteration", "repetition_index": index,
              "real_time": 10.0, "time_unit": "ns"} for index in (0, {"x": 1})]
    path = tmp_path / "3f2a9c1.json"
    path.write_text(json.dumps({"context": {"num_cpus": 2}, "benchmarks": items}))
    code, out = invoke(["summary", "--data", path])
    _lines_ok(code, out, "3f2a9c1.json, row 2")
    assert "repetition_index" in out


@pytest.mark.parametrize("kind", [pa.string(), pa.binary()])
def test_parquet_text_that_is_not_utf8_is_refused_at_its_record(tmp_path, kind):
    commits = pa.array([b"c0", b"c\xff1", b"c2"], pa.binary())
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"series_id": ["s"] * 3, "commit": commits.view(kind), "value": [1.0, 2.0, 3.0]}), path)
    code, out = invoke(["summary", "--data", path])
    _lines_ok(code, out, "history.parquet, row 2")
    assert "'commit'" in out and "UTF-8" in out


def test_parquet_valid_binary_text_still_reads(tmp_path):
    path = tmp_path / "history.parquet"
    commits = pa.array([b"c0", b"c1", b"c2"], pa.binary())
    pq.write_table(pa.table({"series_id": ["s"] * 3, "commit": commits, "value": [1.0, 2.0, 3.0]}), path)
    assert list(load(path)["s"].commits) == ["c0", "c1", "c2"]


@pytest.mark.parametrize("column", ["series_id", "commit"])
@pytest.mark.parametrize("cells", [[[1.0]] * 3, [{"a": 1}] * 3])
def test_parquet_nested_columns_are_refused(tmp_path, column, cells):
    table = {"series_id": ["s"] * 3, "commit": ["c0", "c1", "c2"], "value": [1.0, 2.0, 3.0]}
    table[column] = cells
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table(table), path)
    code, out = invoke(["convert", "--data", path, "--out", tmp_path / "out.csv"])
    _lines_ok(code, out, "history.parquet")
    assert f"column '{column}' holds" in flat(out), out
    assert not (tmp_path / "out.csv").exists()


def test_damaged_parquet_is_one_line(tmp_path):
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"series_id": ["s"] * 3, "commit": ["c0", "c1", "c2"], "value": [1.0, 2.0, 3.0]}),
                   path, compression=None)
    data = path.read_bytes()
    path.write_bytes(data[:4] + b"\xff" * 12 + data[16:])  # the first page header
    with pytest.raises(InputError) as info:
        load(path)
    assert "\n" not in str(info.value) and "not a readable Parquet file" in str(info.value)


def test_csv_header_with_an_unclosed_quote_is_one_line(tmp_path):
    path = tmp_path / "demo.csv"
    label = '"true_positive"'
    rows = "".join(f"{100 + i};{label if i == 20 else ''}\n" for i in range(30))
    path.write_text('"Value";"MongoDB.Label\n' + rows)
    code, out = invoke(["summary", "--data", path])
    _lines_ok(code, out, "demo.csv, row 1")
    assert len(out.strip().splitlines()) == 1 and "runs over several lines" in out, out


def test_an_integer_of_more_digits_than_python_converts_is_refused_at_its_line(tmp_path):
    digits = "9" * 5000
    values = tmp_path / "values.json"
    values.write_text(f"[1, 2,\n {digits}]")
    _lines_ok(*invoke(["summary", "--data", values]), "values.json, row 2")
    gab = tmp_path / "data.js"
    gab.write_text(_data_js(digits))
    _lines_ok(*invoke(["summary", "--data", gab]), "data.js, row")
    feed = tmp_path / "feed.jsonl"
    feed.write_text(f'{{"series_id": "s", "commit": "c0", "value": {digits}}}\n')
    _lines_ok(*invoke(["summary", "--data", feed]), "feed.jsonl, row 1")
    data = _otava_data(tmp_path)
    report = tmp_path / "otava.json"
    report.write_text(f'{{"nightly": [{{"attributes": {{}}, "changes": [{{"metric": "throughput", "index": {digits}}}]}}]}}')
    _lines_ok(*invoke(["score", "--data", data, "--candidates", report]), "otava.json, row 1")
    cands = tmp_path / "cands.jsonl"
    cands.write_text(f'{{"series_id": "throughput", "index": {digits}}}\n')
    _lines_ok(*invoke(["score", "--data", data, "--candidates", cands]), "cands.jsonl, row 1")


def test_data_js_value_beyond_a_float_is_refused_at_its_bench(tmp_path):
    gab = tmp_path / "data.js"
    gab.write_text(_data_js("1" + "0" * 400))
    code, out = invoke(["summary", "--data", gab])
    _lines_ok(code, out, "data.js")
    assert "run 2, bench 'parse'" in flat(out) and "too large" in out, out


# --------------------------------------------------------------------------- properties (small, fast)

_VALID = {
    "long.csv": "series_id,commit,timestamp,value,label\n"
    + "".join(f"s{i % 2},c{i // 2},2024-03-01T{i // 2:02d}:00:00,{100 + i},\n" for i in range(24)),
    "feed.jsonl": "".join(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 1.5 + i}) + "\n" for i in range(8)),
    "data.js": _data_js("101"),
    "perf.json": json.dumps({"abc": [{"revision": f"r{i}", "push_timestamp": f"2024-03-0{i + 1}T10:00:00",
                                      "value": 10.0 + i} for i in range(6)]}),
    "3f2a9c1.json": json.dumps([{"benchmark": "a.B.c", "mode": "avgt",
                                 "primaryMetric": {"scoreUnit": "ms/op", "rawData": [[2.0, 2.1, 1.9]]}}]),
}
_CANDIDATES = "series_id,commit,index,detector,score\ns0,c6,6,ttest,0.9\ns1,c3,,ttest,\n"
_PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read_or_refuse(path: Path) -> None:
    """The invariant, in-process: a dataset, or an InputError naming the file on one line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            load(path)
        except InputError as exc:
            assert path.name in str(exc) and "\n" not in str(exc), str(exc)


@_PROPERTY
@given(name=st.sampled_from(sorted(_VALID)), data=st.data())
def test_any_mutation_of_a_valid_file_reads_or_is_refused_with_one_line(tmp_path, name, data):
    raw = bytearray(_VALID[name].encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw)))
        how = data.draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
        if how == "cut":
            del raw[at:]
        elif how == "flip" and at < len(raw):
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "insert":
            raw[at:at] = data.draw(st.sampled_from([b"{", b"]", b",", b'"', b"\n", b"\r\n", b"\xef\xbb\xbf", b"\xff",
                                                    b"1e400", b"null", b"-", b"9" * 4400]))
        elif at < len(raw):
            del raw[at]
    path = tmp_path / name
    path.write_bytes(bytes(raw))
    _read_or_refuse(path)


@_PROPERTY
@given(cell=st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                      st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
       key=st.sampled_from(["series_id", "commit", "value", "timestamp", "label"]))
def test_a_watch_feed_record_of_any_json_type_reads_or_is_refused(tmp_path, cell, key):
    records = [{"series_id": "s", "commit": f"c{i}", "value": 1.5 + i} for i in range(4)]
    records[2][key] = cell
    path = tmp_path / "feed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _read_or_refuse(path)


@_PROPERTY
@given(cut=st.integers(0, len(_CANDIDATES)), extra=st.sampled_from(["", "\ufeff", "\r", ",x", '"']))
def test_a_cut_candidates_file_places_its_candidates_or_is_refused(tmp_path, cut, extra):
    data = tmp_path / "long.csv"
    data.write_text(_VALID["long.csv"])
    path = tmp_path / "cands.csv"
    text = _CANDIDATES[:cut] + extra
    path.write_text(text)
    try:
        series, indices = resolve(load(data), read_candidates(path))
    except InputError as exc:
        assert "cands.csv" in str(exc) and "\n" not in str(exc), str(exc)
        return
    assert len(series) == len(indices)


def _asv(root: Path, *, result=None, columns=None, params=None, kind="time") -> Path:
    results = root / "results"
    machine = results / "ci"
    machine.mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps({"b.S.time_sort": {
        "name": "b.S.time_sort", "type": kind, "param_names": ["n"], "params": [["10", "1000"]]}}))
    (machine / "machine.json").write_text(json.dumps({"machine": "ci"}))
    for i, sha in enumerate(["aaaa", "bbbb", "cccc"]):
        row = [[0.1 + i, 2.0 + i], params if params is not None and sha == "bbbb" else [["10", "1000"]]]
        if result is not None and sha == "bbbb":
            row[0] = result
        (machine / f"{sha}-py.json").write_text(json.dumps({
            "commit_hash": sha, "env_name": "py", "date": (1000 + i) * 86_400_000, "version": 2,
            "result_columns": columns if columns is not None and sha == "bbbb" else ["result", "params"],
            "results": {"b.S.time_sort": row}}))
    return results


def test_asv_empty_result_is_no_measurement(tmp_path):
    small = load(_asv(tmp_path, result=[]))["ci/py/b.S.time_sort(10)"]
    assert list(small.commits) == ["aaaa", "cccc"] and list(small.values) == [0.1, 2.1]


def test_asv_benchmark_type_that_is_no_text_follows_asv_rule_on_the_name(tmp_path):
    small = load(_asv(tmp_path, kind={"t": "time"}))["ci/py/b.S.time_sort(10)"]
    assert list(small.values) == [0.1, 1.1, 2.1]
    assert small.higher_is_better is False  # time_* by asv's rule on the name


@pytest.mark.parametrize(("damage", "said"), [({"columns": [["result"], "params"]}, "'result_columns'"),
                                              ({"params": [1.5]}, "params [1.5]")])
def test_asv_damaged_result_file_is_refused_naming_it_and_the_benchmark(tmp_path, damage, said):
    code, out = invoke(["summary", "--data", _asv(tmp_path, **damage)])
    _lines_ok(code, out, "bbbb-py.json")
    assert "benchmark 'b.S.time_sort'" in flat(out) and said in flat(out), out


@pytest.mark.parametrize(("test_lines", "said"), [
    ("    file: alpha.csv\n  metrics: [\n", "otava.yaml, row 6: not valid YAML: expected the node content"),
    ("    file: alpha.csv\n    csv_options: [1]\n", "test 't': csv_options is not a mapping"),
    ("    file: alpha.csv\n    csv_options: {delimiter: 5}\n", "test 't': csv_options delimiter 5 is not one character"),
    ("    file: .\n", "test 't': file '.' is a directory"),
])
def test_otava_config_mistakes_are_one_line_naming_the_config(tmp_path, test_lines, said):
    _otava_data(tmp_path).rename(tmp_path / "alpha.csv")
    config = tmp_path / "otava.yaml"
    config.write_text("tests:\n  t:\n    type: csv\n" + test_lines)
    code, out = invoke(["summary", "--data", config])
    _lines_ok(code, out, "otava.yaml")
    assert said in flat(out) and len(out.strip().splitlines()) == 1, out


def test_json_nested_past_the_recursion_limit_is_refused(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    gab = tmp_path / "data.js"
    gab.write_text("window.BENCHMARK_DATA = " + deep)
    _lines_ok(*invoke(["summary", "--data", gab]), "data.js: JSON nested too deeply")
    data = tmp_path / "long.csv"
    data.write_text(_VALID["long.csv"])
    cands = tmp_path / "cands.jsonl"
    cands.write_text('{"series_id": "s0", "commit": "c6"}\n{"series_id": ' + deep + "}\n")
    _lines_ok(*invoke(["score", "--data", data, "--candidates", cands]), "cands.jsonl, row 2")
    cands.write_text('{"series_id": ' + deep + "}\n")
    _lines_ok(*invoke(["score", "--data", data, "--candidates", cands]), "cands.jsonl")
    report = tmp_path / "report.json"
    report.write_text(" " * 300 + deep)  # past the first bytes that tell JSON by its content: told by the suffix
    _lines_ok(*invoke(["score", "--data", data, "--candidates", report]), "report.json")
