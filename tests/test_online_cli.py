"""``triage watch`` and ``triage detect``: JSON lines and CSV input, bad lines, replays."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers_online import model_dir, step_series
from typer.testing import CliRunner

from triage.cli.app import app
from triage.online.loop import OnlineTriage
from triage.online.state_store import StateStore

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def _jsonl(values, series="perf/q1") -> str:
    return "".join(
        json.dumps({"series_id": series, "commit": f"c{i}", "value": float(v)}) + "\n"
        for i, v in enumerate(values)
    )


def test_watch_json_lines_one_decision_per_commit(rf_dir, tmp_path):
    values = step_series(80, at=(40,), jump=0.5, seed=0)
    db = tmp_path / "w.db"
    result = runner.invoke(
        app, ["watch", "--model", str(rf_dir), "--state", str(db)], input=_jsonl(values)
    )
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["commit"] for o in out] == [f"c{i}" for i in range(80)]
    assert {"series_id", "commit", "probability", "decision", "top_features"} <= set(out[0])
    hits = [o for o in out if o["decision"]]
    assert any(o["commit"] == "c40" for o in hits)
    # Reasons for the alarms, none for the model's other decisions; a commit the stream rule held back
    # (probability null: the model was not asked) gives the rule.
    assert all(o["top_features"] for o in hits) and all(
        not o["top_features"] for o in out if not o["decision"] and o["probability"] is not None
    )
    assert all(o["top_features"][0].startswith("held back by the stream rule")
               for o in out if o["probability"] is None)
    memory = OnlineTriage.from_model_dir(rf_dir, explain="none")
    assert [o["probability"] for o in out] == [
        memory.process_one("perf/q1", f"c{i}", v).probability for i, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "not a JSON object"),
        ('{"series_id": "perf/q1", "commit": "x"}', "missing key(s) value"),
        ('{"series_id": "perf/q1", "commit": "x", "value": "fast"}', "is not a number"),
        ("[1, 2, 3]", "expected a JSON object"),
    ],
)
def test_watch_bad_line_names_the_line_and_leaves_the_store_intact(
    rf_dir, tmp_path, bad_line, message
):
    db = tmp_path / "w.db"
    good = _jsonl([1.0, 1.01, 0.99])
    stdin = good + "\n" + bad_line + "\n" + _jsonl([1.0], series="later")
    result = runner.invoke(app, ["watch", "--model", str(rf_dir), "--state", str(db)], input=stdin)
    assert result.exit_code == 2
    assert "<stdin>, line 5" in result.stderr and message in result.stderr
    assert len(result.stdout.splitlines()) == 3
    with StateStore(db) as store:
        assert store.n_decisions() == 3 and store.series_ids() == ["perf/q1"]
        assert store.load_series("perf/q1")["n"] == 3


def test_watch_skips_a_failed_runs_value_and_goes_on(rf_dir, tmp_path):
    db = tmp_path / "w.db"
    good = _jsonl([1.0, 1.01, 0.99])
    stdin = good + "\n" + '{"series_id": "perf/q1", "commit": "x", "value": NaN}' + "\n" + _jsonl([1.0], series="later")
    result = runner.invoke(app, ["watch", "--model", str(rf_dir), "--state", str(db)], input=stdin)
    assert result.exit_code == 0, result.stderr
    assert "<stdin>, line 5" in result.stderr and "not a finite number" in result.stderr
    assert len(result.stdout.splitlines()) == 4
    with StateStore(db) as store:
        assert store.n_decisions() == 4 and store.series_ids() == ["later", "perf/q1"]
        assert store.load_series("perf/q1")["n"] == 3


def test_watch_refuses_a_store_of_another_model_unless_reset(rf_dir, tmp_path):
    db = tmp_path / "w.db"
    with StateStore(db) as store:
        store.bind_model("f" * 64)
    args = ["watch", "--model", str(rf_dir), "--state", str(db)]
    refused = runner.invoke(app, args, input=_jsonl([1.0]))
    assert refused.exit_code == 2 and "--reset-state" in refused.stderr
    accepted = runner.invoke(app, [*args, "--reset-state"], input=_jsonl([1.0]))
    assert accepted.exit_code == 0, accepted.stderr
    assert "forgot" not in accepted.stderr  # nothing to forget: no word
    again = runner.invoke(app, [*args, "--reset-state"], input=_jsonl([1.0]))
    # A healthy store wiped is said (a --reset-state left in a service's unit wiped it at every restart).
    assert again.exit_code == 0 and "--reset-state:" in again.stderr and "forgot 1 series and 1 commit" in again.stderr


def test_watch_csv_file(rf_dir, tmp_path):
    path = tmp_path / "results.csv"
    values = step_series(60, at=(30,), jump=0.5, seed=1)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit", "value", "timestamp", "note"])
        for i, v in enumerate(values):
            w.writerow(["s", f"c{i}", v, f"2024-01-01T00:{i:02d}:00", "x"])
    result = runner.invoke(app, ["watch", "--model", str(rf_dir), "--csv", str(path)])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 60
    with open(path, "a", newline="") as fh:
        fh.write("s,c60,oops,2024-01-01T01:00:00,x\n")
    bad = runner.invoke(app, ["watch", "--model", str(rf_dir), "--csv", str(path)])
    assert (
        bad.exit_code == 2
        and f"{path}, line 62" in bad.stderr
        and "'oops' is not a number" in bad.stderr
    )


def test_watch_follow_decides_lines_appended_later(rf_dir, tmp_path):
    path = tmp_path / "tail.csv"
    path.write_text("series_id,commit,value\n")
    cmd = [
        sys.executable,
        "-m",
        "triage.cli.app",
        "watch",
        "--model",
        str(rf_dir),
        "--csv",
        str(path),
        "--follow",
        "--poll",
        "0.05",
        "--state",
        str(tmp_path / "s.db"),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        with open(path, "a") as fh:
            fh.write("s,c0,1.0\ns,c1,1.")  # the second line is still being written
            fh.flush()
            first = json.loads(proc.stdout.readline())
            time.sleep(0.3)
            fh.write("01\n")
            fh.flush()
            second = json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert (first["commit"], second["commit"]) == ("c0", "c1")
    # ... with the whole line's value: a reader that took the half-written "1." read 1.0
    import sqlite3

    with sqlite3.connect(tmp_path / "s.db") as con:
        values = dict(con.execute("SELECT commit_id, value FROM decisions"))
    assert values == {"c0": 1.0, "c1": 1.01}


def test_detect_writes_change_points_of_whole_histories(rf_dir, tmp_path, small_dataset):
    from triage.loaders import write_long

    subset = small_dataset.subset(small_dataset.series_ids[:8])
    data = write_long(subset, tmp_path / "history.csv")
    out = tmp_path / "cps.csv"
    result = runner.invoke(
        app, ["detect", "--data", str(data), "--model", str(rf_dir), "--out", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["series_id", "commit", "index", "probability", "before", "after", "change_pct",
                             "change_kind"]
    expected = OnlineTriage.from_model_dir(rf_dir, explain="none").replay(subset)
    assert [(r["series_id"], r["commit"], int(r["index"])) for r in rows] == [
        (d.series, d.commit, d.index) for d in expected
    ]
    assert all(float(r["probability"]) >= 0.5 for r in rows)
    # The found change points sit near the synthetic ground truth more often than not.
    near = 0
    for r in rows:
        truth = subset[r["series_id"]].true_change_points()
        near += any(abs(int(r["index"]) - t) <= 2 for t in truth)
    assert near >= len(rows) / 2


def test_detect_on_tigerbeetle(rf_dir, tmp_path, shared_data):
    out = tmp_path / "tb.csv"
    result = runner.invoke(
        app,
        [
            "detect",
            "--data",
            str(shared_data / "tigerbeetle.json"),
            "--model",
            str(rf_dir),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(open(out, newline="")))
    assert rows and all(r["series_id"] == "tigerbeetle" for r in rows)
    assert "365 commits" in result.stderr
