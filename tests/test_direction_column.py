"""The long layout's direction column: ``higher_is_better`` (or ``lower_is_better``).

Before, the long layout had no direction: a file written by ``convert`` or
``steady`` from a source that knew it (a rate in ops/s, an alert's
``lower_is_better``) lost it, and ``report`` could only say "change" where
the source would have let it say "regression".
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.loaders import load, long_csv_parts

DATA_JS = """window.BENCHMARK_DATA = {"entries": {"Java Bench": [
{"commit": {"id": "c1"}, "date": 1709287200000, "tool": "jmh",
 "benches": [{"name": "parse", "value": 1000, "unit": "ops/s"}, {"name": "fmt", "value": 5, "unit": "ns/op"}]},
{"commit": {"id": "c2"}, "date": 1709373600000, "tool": "jmh",
 "benches": [{"name": "parse", "value": 1001, "unit": "ops/s"}, {"name": "fmt", "value": 5.1, "unit": "ns/op"}]}
]}}
"""


def frame(direction: dict[str, list[object]]) -> pd.DataFrame:
    return pd.DataFrame(
        {"series_id": ["a", "a", "b", "b", "c"], "commit": ["1", "2", "1", "2", "1"], "value": [1.0, 2, 3, 4, 5],
         **direction}
    )


def directions(dataset: Dataset) -> dict[str, bool | None]:
    return {h.series_id: h.higher_is_better for h in dataset}


def test_convert_keeps_the_direction_a_reader_knew(tmp_path):
    src = tmp_path / "data.js"
    src.write_text(DATA_JS)
    out = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", src, "--out", out])
    assert code == 0, text
    lines = out.read_text().splitlines()
    assert lines[0] == "series_id,commit,timestamp,value,label,higher_is_better"
    assert directions(load(out)) == {"Java Bench/parse": True, "Java Bench/fmt": False}
    code, text = invoke(["summary", "--data", out])
    assert code == 0, text
    text = flat(text)
    assert "series, higher is better 1" in text and "series, lower is better 1" in text
    assert "direction unknown 0" in text


def test_a_step_is_called_a_regression_after_the_round_trip(tmp_path):
    src = tmp_path / "data.js"
    src.write_text(DATA_JS)
    out = tmp_path / "long.csv"
    assert invoke(["convert", "--data", src, "--out", out])[0] == 0
    again = load(out)
    assert again["Java Bench/parse"].change_kind(1000.0, 900.0) == "regression"
    assert again["Java Bench/fmt"].change_kind(5.0, 6.0) == "regression"
    assert again["Java Bench/fmt"].change_kind(5.0, 4.0) == "improvement"


def test_spellings_blanks_and_the_other_column():
    data = frame({"higher_is_better": ["TRUE", "", "no", "0", ""]})
    assert directions(Dataset.from_frame(data)) == {"a": True, "b": False, "c": None}
    # Perfherder's and series_meta.csv's spelling, as numbers with a missing cell.
    data = frame({"lower_is_better": [1.0, 1.0, 0.0, None, None]})
    assert directions(Dataset.from_frame(data)) == {"a": False, "b": True, "c": None}
    both = frame({"higher_is_better": ["false", "", "", "", ""], "lower_is_better": ["", "true", "", "", ""]})
    assert directions(Dataset.from_frame(both)) == {"a": False, "b": None, "c": None}


def test_the_dataset_frame_writes_unknown_directions_blank():
    data = frame({"higher_is_better": ["true", "true", "", "", "false"]})
    written = Dataset.from_frame(data).to_frame()
    assert written["higher_is_better"].tolist() == ["true", "true", "", "", "false"]
    assert "higher_is_better" not in Dataset.from_frame(frame({})).to_frame().columns


@pytest.mark.parametrize(
    ("direction", "row", "problem"),
    [
        ({"higher_is_better": ["true", "false", "", "", ""]}, 3,
         "the direction of series 'a' changes (higher_is_better false here, true on an earlier row)"),
        ({"higher_is_better": ["true", "", "", "", "maybe"]}, 6, "higher_is_better 'maybe' is not true/false"),
        ({"higher_is_better": ["true", "", "", "", ""], "lower_is_better": ["true", "", "", "", ""]}, 2,
         "higher_is_better and lower_is_better say the same"),
    ],
)
def test_bad_directions_name_the_file_and_row(tmp_path, direction, row, problem):
    path = tmp_path / "long.csv"
    frame(direction).to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == row and problem in str(err.value) and str(path) in str(err.value)
    code, text = invoke(["summary", "--data", path])
    assert code == 2 and f"row {row}: {problem}" in flat(text)


def test_the_streamed_parts_keep_the_direction(tmp_path):
    path = tmp_path / "long.csv"
    frame({"higher_is_better": ["", "true", "false", "", ""]}).to_csv(path, index=False)
    parts = list(long_csv_parts(path, rows_per_part=2))
    assert {h.series_id: h.higher_is_better for part in parts for h in part} == {"a": True, "b": False, "c": None}


def test_steady_writes_the_jmh_modes_direction(tmp_path):
    results = [
        {"benchmark": "org.acme.Bench.parse", "mode": "thrpt",
         "primaryMetric": {"scoreUnit": "ops/s", "rawData": [[700.0, 1000.0, 1001.0]]}},
        {"benchmark": "org.acme.Bench.fmt", "mode": "avgt",
         "primaryMetric": {"scoreUnit": "ns/op", "rawData": [[9.0, 5.0, 5.1]]}},
    ]
    src = tmp_path / "c1.json"
    src.write_text(json.dumps(results))
    out = tmp_path / "long.csv"
    code, text = invoke(["steady", src, "--trim-warmup", "none", "--out", out])
    assert code == 0, text
    assert directions(load(out)) == {"org.acme.Bench.parse": True, "org.acme.Bench.fmt": False}
