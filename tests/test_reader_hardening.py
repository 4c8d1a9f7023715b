"""Bad input the readers once read in part, misread or crashed on: each now a located error or a right read.

Every case writes a small real file in ``tmp_path`` (the shapes an
exploratory run found) and goes through :func:`triage.loaders.load`, as
the CLI does; one case goes through the CLI for its exit code.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import zstandard
from warm_start import warm_triage

from triage.core import labels
from triage.core.errors import InputError
from triage.loaders import load
from triage.sniffing import data_layout

HEADER = "series_id,commit,timestamp,value,label\n"


def _long_rows(n_series: int = 3, n_commits: int = 30) -> str:
    """Rows of a long-layout CSV: series s0.. with a step half way, a label on s1's step."""
    rows = []
    for s in range(n_series):
        for i in range(n_commits):
            label = "fixed" if s == 1 and i == n_commits // 2 else ""
            value = 10.0 + s + (5.0 if i >= n_commits // 2 else 0.0)
            rows.append(f"s{s},c{i:03d},2024-01-01T00:{i:02d}:00,{value},{label}\n")
    return "".join(rows)


LONG = HEADER + _long_rows()


# --------------------------------------------------------------------------- zstd


def _two_frames(text: str) -> bytes:
    """``text`` as two zstd frames, cut at a line (as ``zstd a; zstd b`` concatenated writes it)."""
    lines = text.splitlines(keepends=True)
    half = len(lines) // 2
    packer = zstandard.ZstdCompressor()
    return packer.compress("".join(lines[:half]).encode()) + packer.compress("".join(lines[half:]).encode())


def test_multi_frame_zstd_reads_every_frame(tmp_path):
    path = tmp_path / "multi.csv.zst"
    path.write_bytes(_two_frames(LONG))
    dataset = load(path)
    assert dataset.series_ids == ["s0", "s1", "s2"] and all(len(h.values) == 30 for h in dataset)


def test_truncated_multi_frame_zstd_is_an_error_not_a_partial_read(tmp_path):
    packed = _two_frames(LONG)
    path = tmp_path / "cut.csv.zst"
    path.write_bytes(packed[:-40])  # the second frame cut short
    with pytest.raises(InputError, match=r"cut\.csv\.zst: cannot decompress \(zstd\): truncated") as info:
        load(path)
    assert info.value.source == str(path)


def test_truncated_single_frame_zstd_is_truncated_not_empty(tmp_path):
    packed = zstandard.ZstdCompressor().compress(LONG.encode())
    path = tmp_path / "half.csv.zst"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match=r"half\.csv\.zst: cannot decompress \(zstd\): truncated"):
        load(path)


@pytest.mark.parametrize("tail", [b"trailing junk", b"\x28\xb5\x2f\xfdgarbage"])
def test_corrupt_zstd_is_an_input_error(tmp_path, tail):
    path = tmp_path / "junk.csv.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(LONG.encode()) + tail)
    with pytest.raises(InputError, match=r"junk\.csv\.zst: cannot decompress \(zstd\)"):
        load(path)


def test_truncated_zstd_through_the_cli_exits_2(tmp_path):
    path = tmp_path / "cut.csv.zst"
    path.write_bytes(_two_frames(LONG)[:-40])
    res = subprocess.run([*warm_triage(),
                          "summary", "--data", str(path), "--format", "json"], capture_output=True, text=True)
    assert res.returncode == 2, res.stderr
    assert "cut.csv.zst: cannot decompress (zstd): truncated" in res.stderr and "internal error" not in res.stderr


# --------------------------------------------------------------------------- sniffing: BOM, series column


def test_a_byte_order_mark_does_not_turn_a_long_file_into_otava(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + LONG.encode())
    assert data_layout(path) == "long"
    dataset = load(path)
    assert dataset.series_ids == ["s0", "s1", "s2"]
    assert list(dataset["s1"].labels).count(labels.TRUE_POSITIVE) == 1


def test_a_byte_order_mark_on_an_otava_csv_is_still_otava(tmp_path):
    path = tmp_path / "perf.csv"
    path.write_bytes(b"\xef\xbb\xbf" + b"time,commit,throughput\n2024-01-01,a,10\n2024-01-02,b,11\n")
    assert data_layout(path) == "otava"
    assert load(path)["throughput"].values.tolist() == [10, 11]


@pytest.mark.parametrize(
    ("series_column", "problem"),
    [
        ("series", r"column 'series' looks like the series column; the long layout needs it named 'series_id'"),
        ("Series_ID", r"column 'Series_ID' looks like the series column"),
        (None, r"no 'series_id' column"),
    ],
)
def test_long_layout_without_series_id_is_a_located_error(tmp_path, series_column, problem):
    if series_column is None:  # the series column dropped altogether
        text = "".join(",".join(line.split(",")[1:]) + "\n" for line in LONG.splitlines())
    else:
        text = LONG.replace("series_id", series_column, 1)
    path = tmp_path / "hist.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"hist\.csv, row 1: {problem}"):
        load(path)


def test_otava_csvs_without_long_columns_are_still_otava(tmp_path):
    # commit + one metric named value: an Otava CSV without a time column (one series, nothing merged)
    path = tmp_path / "plain.csv"
    path.write_text("commit,value\nc1,1.0\nc2,2.0\n")
    assert data_layout(path) == "otava"
    # a time column is Otava's, whatever else the header holds
    path.write_text("time,commit,series,value\n2024-01-01,a,x,1\n2024-01-02,b,x,2\n")
    assert data_layout(path) == "otava"


# --------------------------------------------------------------------------- Perfherder


def _perfherder_data(tmp_path):
    path = tmp_path / "ph.json"
    points = [{"signature_id": 1, "revision": f"r{i}", "push_timestamp": f"2024-01-01T00:{i:02d}:00",
               "value": 10 + (i > 20)} for i in range(40)]
    path.write_text(json.dumps({"sig1": points}))
    return path


def test_perfherder_without_any_point_is_no_data_points(tmp_path):
    path = tmp_path / "ph_empty.json"
    path.write_text(json.dumps({"sig1": []}))
    with pytest.raises(InputError, match=r"ph_empty\.json: no data points in any signature"), \
            pytest.warns(UserWarning, match="signature 'sig1' has no data points; skipped"):
        load(path)


def test_perfherder_empty_series_among_others_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "ph.json"
    path.write_text(json.dumps({"a": [{"revision": f"r{i}", "value": 1.0 + i} for i in range(5)], "b": []}))
    with pytest.warns(UserWarning, match=r"ph\.json: signature 'b' has no data points; skipped"):
        data = load(path)
    assert [h.series_id for h in data] == ["a"] and len(data["a"]) == 5


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ({"revision": "r20", "alerts": "x"}, r"alert summary 1: 'alerts' is str, not a list"),
        ({"revision": "r20", "alerts": {"status": 4}}, r"alert summary 1: 'alerts' is dict, not a list"),
        ({"revision": "r20", "alerts": ["x"]}, r"alert summary 1, alert 1: 'x' is not an object"),
        ({"revision": "r20", "alerts": [{"status": 4, "series_signature": "x"}]},
         r"alert summary 1: series_signature 'x' is not an object"),
        ({"revision": "rZZ", "status": "bogus"}, r"alert summary 1 has no 'alerts' list"),
    ],
)
def test_perfherder_malformed_alerts_are_located(tmp_path, summary, problem):
    data = _perfherder_data(tmp_path)
    alerts = tmp_path / "al.json"
    alerts.write_text(json.dumps({"results": [summary]}))
    with pytest.raises(InputError, match=rf"al\.json, row 1: {problem}"):
        load(data, alerts=alerts)


def test_perfherder_well_formed_alerts_still_label(tmp_path):
    data = _perfherder_data(tmp_path)
    alerts = tmp_path / "al.json"
    alerts.write_text(json.dumps({"results": [
        {"revision": "r21", "alerts": [{"status": 4, "series_signature": {"id": 1}}]},
        {"revision": "r30", "alerts": []},  # a summary with no alerts left labels nothing
    ]}))
    history = load(data, alerts=alerts)["sig1"]
    assert list(history.labels).count(labels.TRUE_POSITIVE) == 1 and history.labels[21] == labels.TRUE_POSITIVE


def test_json_without_a_json_name_is_told_by_its_content(tmp_path):
    """Standard input and decompressed copies have no .json suffix to go by."""
    perfherder = tmp_path / "ph_data"
    perfherder.write_text(json.dumps({"sig": [{"revision": f"r{i}", "value": 1.0 + i} for i in range(4)]}))
    values = tmp_path / "values"
    values.write_text("\n  [1, 2, 3, 4, 5]\n")
    assert data_layout(perfherder) == "perfherder" and len(load(perfherder)["sig"]) == 4
    assert data_layout(values) == "json" and sum(len(h) for h in load(values)) == 5
