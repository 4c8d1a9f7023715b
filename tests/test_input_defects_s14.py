"""Input defects: a time of day without a date, epoch numbers in a finer unit, a header naming a column twice."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warm_start import warm_triage

from triage.core import timestamps
from triage.core.errors import InputError
from triage.loaders import load, long_csv_parts

HEADER = "series_id,commit,timestamp,value\n"


def _csv(tmp_path, text: str, name: str = "history.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- a time of day without a date


@pytest.mark.parametrize("text", ["23:59", "23:59:10", "23:59:10.5", "T23:59", "11pm", "23:59Z"])
def test_a_time_of_day_without_a_date_is_refused_naming_the_problem(text):
    from triage.online.loop import to_ns as loop_to_ns

    # pandas reads "23:59" as today at 23:59; the rule refuses it, online and in files alike.
    for read in (timestamps.to_ns, loop_to_ns):
        with pytest.raises(ValueError, match="a time of day without a date"):
            read(text)
    assert "a time of day without a date" in (timestamps.problem(text) or "")
    instants, missing, bad = timestamps.parse_column(pd.Series(["2024-05-01T12:00:00", text]))
    assert list(bad) == [False, True] and not missing.any()


def test_a_time_only_timestamp_in_a_file_is_refused_at_its_line(tmp_path):
    # One row: nothing else (timestamps going backwards) gave it away before.
    path = _csv(tmp_path, HEADER + "s,a,2024-05-01T10:00:00,1\ns,b,23:59,2\n")
    for read in (lambda: load(path), lambda: list(long_csv_parts(path))):
        with pytest.raises(InputError) as info:
            read()
        assert info.value.source == str(path) and info.value.row == 3
        assert "'23:59'" in info.value.problem
    # A file load names the reason, as watch does (history.py asks the rule why)
    with pytest.raises(InputError) as info:
        load(path)
    assert "a time of day without a date" in info.value.problem


def test_dates_without_a_year_and_the_moment_of_reading_are_refused():
    with pytest.raises(ValueError, match="a date without a year"):
        timestamps.to_ns("May 1")
    for text in ("now", "today"):
        with pytest.raises(ValueError, match="moment of reading"):
            timestamps.to_ns(text)
        assert timestamps.parse_column(pd.Series([text]))[2].all()  # the vectorised ISO pass took them


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2024-05-01 23:59", "2024-05-01T23:59"), ("May 1 2024 23:59", "2024-05-01T23:59"),
     ("May 2024", "2024-05-01"), ("20240501", "2024-05-01"), ("01/05/2024 23:59", "2024-01-05T23:59")],
)
def test_dated_text_is_still_read(text, expected):
    assert timestamps.to_ns(text) == np.datetime64(expected, "ns").astype(np.int64)
    instants, _, bad = timestamps.parse_column(pd.Series([text]))
    assert not bad[0] and instants[0] == np.datetime64(expected, "ns")


# --------------------------------------------------------------------------- epoch numbers in a finer unit

MS = 1714564800000  # 2024-05-01T12:00:00Z in milliseconds


@pytest.mark.parametrize(
    ("value", "unit", "divisor"),
    [(MS, "milliseconds", "1000"), (str(MS), "milliseconds", "1000"), (float(MS), "milliseconds", "1000"),
     (np.int64(MS), "milliseconds", "1000"), (MS * 1000, "microseconds", "1000000"),
     (MS * 1_000_000, "nanoseconds", "1000000000")],
)
def test_epoch_numbers_in_a_finer_unit_are_refused_naming_the_unit(value, unit, divisor):
    with pytest.raises(ValueError) as info:
        timestamps.to_ns(value)
    message = str(info.value)
    assert f"looks like {unit} since the epoch (2024-05-01T12:00:00Z)" in message
    assert f"divide by {divisor}" in message
    assert timestamps.problem(value) == message


def test_epoch_seconds_are_read_and_other_large_numbers_get_no_unit_hint():
    assert timestamps.to_ns(MS // 1000) == MS * 1_000_000
    assert timestamps.to_ns(str(MS // 1000)) == MS * 1_000_000
    for value in (99_999_999_999, 10**25):  # no unit makes these a time from 1990 to 2100
        with pytest.raises(ValueError) as info:
            timestamps.to_ns(value)
        assert "outside 1677-09-21 .. 2262-04-11" in str(info.value) and "looks like" not in str(info.value)


def test_epoch_milliseconds_in_a_file_are_refused_at_their_row(tmp_path):
    path = _csv(tmp_path, HEADER + f"s,a,{MS},1\ns,b,{MS + 60_000},2\n")
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.row == 2 and str(MS) in info.value.problem
    assert "looks like milliseconds" in info.value.problem and "divide by 1000" in info.value.problem
    frame = pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "timestamp": [MS, MS + 60_000],
                          "value": [1.0, 2.0]})
    frame.to_parquet(tmp_path / "h.parquet", index=False)
    with pytest.raises(InputError) as info:
        load(tmp_path / "h.parquet")
    assert info.value.row == 1
    # The column's first bad element, told by the one rule:
    assert "milliseconds" in (timestamps.problem(frame["timestamp"].iloc[0]) or "")


# --------------------------------------------------------------------------- a header naming a column twice


@pytest.mark.parametrize("header", ["series_id,commit,value,value", "series_id,commit,value,value ",
                                    "series_id,commit,value, value", "value;series_id;commit;value"])
def test_a_long_csv_naming_value_twice_is_refused(tmp_path, header):
    sep = ";" if ";" in header else ","
    rows = [sep.join(["s", "a", "1", "5"]), sep.join(["s", "b", "2", "6"])]
    if header.startswith("value"):
        rows = [sep.join(["1", "s", "a", "5"]), sep.join(["2", "s", "b", "6"])]
    path = _csv(tmp_path, header + "\n" + "\n".join(rows) + "\n")
    for read in (lambda: load(path), lambda: load(path, layout="long"), lambda: list(long_csv_parts(path))):
        with pytest.raises(InputError) as info:
            read()
        assert info.value.source == str(path) and info.value.row == 1
        assert "'value'" in info.value.problem and "more than once" in info.value.problem


def test_a_repeated_column_is_named_in_compressed_otava_and_parquet_files(tmp_path):
    gz = tmp_path / "history.csv.gz"
    gz.write_bytes(gzip.compress(b"series_id,commit,value,value\ns,a,1,5\ns,b,2,6\n"))
    with pytest.raises(InputError, match=r"history\.csv\.gz, row 1: column 'value' \(columns 3 and 4\)"):
        load(gz)
    otava = _csv(tmp_path, "time,commit,throughput,throughput\n2024-05-01 10:00:00 +0000,a,1,2\n"
                 "2024-05-02 10:00:00 +0000,b,1,2\n", "otava.csv")
    with pytest.raises(InputError, match=r"row 1: column 'throughput' \(columns 3 and 4\)"):
        load(otava, layout="otava")
    parquet = tmp_path / "h.parquet"
    pq.write_table(pa.table([pa.array(["s"]), pa.array(["a"]), pa.array([1.0]), pa.array([5.0])],
                            names=["series_id", "commit", "value", "value"]), parquet)
    with pytest.raises(InputError) as info:
        load(parquet)
    assert info.value.row is None and "column 'value' (columns 3 and 4) is named more than once" in info.value.problem


def test_blank_header_cells_and_distinct_names_are_still_read(tmp_path):
    path = _csv(tmp_path, "series_id,commit,value,,\ns,a,1,,\ns,b,2,,\n")
    assert list(load(path)["s"].values) == [1.0, 2.0]
    assert [list(d["s"].values) for d in long_csv_parts(path)] == [[1.0, 2.0]]
    path = _csv(tmp_path, "series_id,commit,value,value.1\ns,a,1,5\ns,b,2,6\n", "dotted.csv")
    assert list(load(path)["s"].values) == [1.0, 2.0]


# --------------------------------------------------------------------------- on the command line


def test_the_command_line_names_file_line_and_problem(tmp_path):
    from typer.testing import CliRunner

    from triage.cli.app import app

    runner = CliRunner()
    watched = _csv(tmp_path, "series_id,commit,value,timestamp\ns,a,1,2024-05-01T10:00:00\ns,b,2,23:59\n", "w.csv")
    result = runner.invoke(app, ["watch", "--csv", str(watched)])
    assert result.exit_code == 2
    assert f"{watched}, line 3" in result.stderr and "'23:59' is a time of day without a date" in result.stderr
    watched.write_text(f"series_id,commit,value,timestamp\ns,a,1,{MS}\n")
    result = runner.invoke(app, ["watch", "--csv", str(watched)])
    assert result.exit_code == 2 and f"{watched}, line 2" in result.stderr
    assert "looks like milliseconds since the epoch" in result.stderr and "divide by 1000" in result.stderr
    # The reading commands' errors go through main() in a process of its own (exit 2, one line).
    triage = Path(sys.executable).with_name("triage")
    data = _csv(tmp_path, "series_id,commit,value,value\ns,a,1,5\ns,b,2,6\n", "dup.csv")
    done = subprocess.run([*warm_triage(str(triage)), "summary", "--data", str(data)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert f"error: {data}, row 1: column 'value' (columns 3 and 4) is named more than once" in done.stderr
    data = _csv(tmp_path, HEADER + "s,a,23:59,1\n", "time.csv")
    done = subprocess.run([*warm_triage(str(triage)), "summary", "--data", str(data)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and f"error: {data}, row 2: timestamp '23:59'" in done.stderr
