"""Option values out of range: refused naming the option, before any data is read.

``select-features --seed -5`` failed only after the feature extraction, naming
the data; ``detect`` / ``watch`` named the library's parameter (``min_pre``)
instead of the option.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_cli import flat, invoke

from triage.online.loop import MAX_CONFIRM


@pytest.fixture
def unread(tmp_path: Path) -> Path:
    """A --data file whose first row is bad: an error about the option shows it was checked before reading."""
    path = tmp_path / "data.csv"
    path.write_text("series_id,commit,value\ns,c1,not-a-number\n")
    return path


@pytest.mark.parametrize("seed", ["-5", str(2**32)])
def test_select_features_refuses_a_seed_out_of_range_before_reading(seed, unread, tmp_path):
    code, output = invoke(
        ["select-features", "--data", unread, "--out", tmp_path / "fs.json", "--seed", seed]
    )
    assert code == 2, output
    assert "--seed" in flat(output) and "must be in [0, 4294967295]" in flat(output)
    assert "not-a-number" not in output


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--min-pre", "-1", "must be >= 0"),
        ("--confirm-after", str(MAX_CONFIRM + 1), f"must be in [0, {MAX_CONFIRM}]"),
    ],
)
@pytest.mark.parametrize("command", ["detect", "watch"])
def test_online_loop_options_are_named_when_out_of_range(
    command, option, value, problem, unread, tmp_path
):
    args = (
        ["detect", "--data", unread, "--out", tmp_path / "d.csv"]
        if command == "detect"
        else ["watch"]
    )
    code, output = invoke([*args, option, value], stdin="")
    assert code == 2, output
    assert option in flat(output) and problem in flat(output)
    assert "not-a-number" not in output


@pytest.mark.parametrize(
    "command",
    [
        ["candidates", "--detector", "perfherder"],
        ["label"],
        ["detect"],
        ["select-features"],
    ],
)
@pytest.mark.parametrize("where", ["a directory", "under a file"])
def test_an_output_that_cannot_be_a_file_is_refused_before_the_work(
    command, where, unread, tmp_path
):
    # It used to be found only when writing, after the whole detection or labelling.
    out = tmp_path if where == "a directory" else unread / "out.csv"
    code, output = invoke([*command, "--data", unread, "--out", out])
    assert code == 2, output
    assert str(out) in "".join(flat(output).split())
    assert "not-a-number" not in output


def test_an_output_never_replaces_a_sqlite_store(tmp_path, unread):
    # `--out state.db` (a typo for state.csv) replaced the watch store, a labels store
    # or the MLflow tracking database with a CSV.
    import sqlite3

    store = tmp_path / "mlruns.db"
    db = sqlite3.connect(store)
    db.execute("create table runs (id)")
    db.commit()
    db.close()
    before = store.read_bytes()
    code, output = invoke(
        ["candidates", "--data", unread, "--detector", "perfherder", "--out", store]
    )
    assert code == 2, output
    assert "is a SQLite database" in flat(output)
    assert store.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        [
            "candidates",
            "--detector",
            "perfherder",
            "--param",
            "t_threshold=5",
            "--param",
            "t_threshold=9",
        ],
        ["train", "--param", "n_estimators=5", "--param", " n_estimators = 7", "--no-track"],
    ],
)
def test_a_parameter_given_twice_is_refused_not_the_last_one_taken(args, unread, tmp_path):
    code, output = invoke([*args, "--data", unread, "--out", tmp_path / "out"])
    assert code == 2, output
    assert "given twice" in flat(output)
    assert "not-a-number" not in output
