"""``triage detect`` on a long CSV read part by part: same change points as the whole file, rows named."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from helpers_online import model_dir
from typer.testing import CliRunner

import triage.loaders as loaders
from triage.cli.app import app
from triage.loaders import load, write_long
from triage.online.loop import OnlineTriage

runner = CliRunner()


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


@pytest.fixture
def history_csv(tmp_path, small_dataset):
    subset = small_dataset.subset(small_dataset.series_ids[:10])
    return subset, write_long(subset, tmp_path / "history.csv")


def _rows(path):
    with open(path, newline="") as fh:
        return [(r["series_id"], r["commit"], int(r["index"]), float(r["probability"])) for r in csv.DictReader(fh)]


def test_parts_hold_whole_series_and_equal_the_whole_file(history_csv):
    subset, data = history_csv
    parts = list(loaders.long_csv_parts(data, rows_per_part=97))  # series span several chunks
    assert len(parts) > 3
    whole = load(data)
    got = [h for part in parts for h in part]
    assert [h.series_id for h in got] == whole.series_ids
    for h in got:
        ref = whole[h.series_id]
        np.testing.assert_array_equal(h.values, ref.values)
        assert list(h.commits) == list(ref.commits)


@pytest.mark.parametrize(
    ("jobs", "workers"),
    [
        (1, "processes"),
        pytest.param(2, "processes", marks=pytest.mark.slow),
        (2, "threads"),
        (2, "auto"),
    ],
)
def test_streamed_detect_finds_what_the_loop_finds(rf_dir, history_csv, tmp_path, monkeypatch, jobs, workers):
    subset, data = history_csv
    monkeypatch.setattr(loaders, "STREAM_ROWS", 150)
    out = tmp_path / "cps.csv"
    result = runner.invoke(
        app, ["detect", "--data", str(data), "--model", str(rf_dir), "--out", str(out), "--jobs", str(jobs),
              "--workers", workers]
    )
    assert result.exit_code == 0, result.stderr
    expected = OnlineTriage.from_model_dir(rf_dir, explain="none").replay(subset)
    assert expected
    assert _rows(out) == [(d.series, d.commit, d.index, d.probability) for d in expected]
    assert f"in {len(subset):,} series ({subset.n_commits():,} commits" in result.stderr


def test_rows_not_grouped_by_series_fall_back_to_the_whole_file(rf_dir, history_csv, tmp_path, monkeypatch):
    import pandas as pd

    subset, data = history_csv
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    first = frame["series_id"] == subset.series_ids[0]
    # the first series' second half comes back after every other series
    head = frame[first].iloc[: first.sum() // 2]
    mixed = pd.concat([head, frame[~first], frame[first].iloc[first.sum() // 2 :]])
    shuffled = tmp_path / "mixed.csv"
    mixed.to_csv(shuffled, index=False)
    with pytest.raises(loaders.SeriesNotGrouped):
        list(loaders.long_csv_parts(shuffled, rows_per_part=100))
    monkeypatch.setattr(loaders, "STREAM_ROWS", 100)
    out = tmp_path / "cps.csv"
    result = runner.invoke(app, ["detect", "--data", str(shuffled), "--model", str(rf_dir), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    expected = OnlineTriage.from_model_dir(rf_dir, explain="none").replay(load(shuffled))
    assert _rows(out) == [(d.series, d.commit, d.index, d.probability) for d in expected]


def test_a_bad_row_in_a_later_part_is_named_by_its_line(rf_dir, history_csv, tmp_path, monkeypatch):
    _, data = history_csv
    lines = data.read_text().splitlines()
    bad_line = len(lines) - 3  # 1-based line number in the file (the header is line 1)
    fields = lines[bad_line - 1].split(",")
    fields[-1] = "fast"
    lines[bad_line - 1] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(loaders, "STREAM_ROWS", 120)
    out = tmp_path / "cps.csv"
    result = runner.invoke(app, ["detect", "--data", str(bad), "--model", str(rf_dir), "--out", str(out)])
    assert result.exit_code == 2
    assert f"bad.csv, row {bad_line}:" in result.stderr and "fast" in result.stderr
    assert not out.exists()


def test_an_unknown_kind_of_worker_is_refused(rf_dir, history_csv, tmp_path):
    _, data = history_csv
    out = tmp_path / "cps.csv"
    result = runner.invoke(
        app, ["detect", "--data", str(data), "--model", str(rf_dir), "--out", str(out), "--jobs", "2",
              "--workers", "fibres"]
    )
    assert result.exit_code == 2 and "--workers" in result.stderr and "threads" in result.stderr
    assert not out.exists()
