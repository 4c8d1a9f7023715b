"""An online alarm says how far the values moved: ``before``, ``after`` and ``change_pct``.

A walkthrough found `watch` and `detect` alarms carrying no level and no
sign: a sheriff could not tell a regression from an improvement, nor its
size, without going back to the data. The levels are the ones the hold-back
rule compares (median of Pre's last 10 values, median of the After window),
stored with the decision so a replayed alarm gives them again.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sqlite3

import numpy as np
import pytest
from helpers_online import model_dir, step_series
from typer.testing import CliRunner

from triage.cli.app import app
from triage.online.loop import OnlineTriage, alarm_levels
from triage.online.records import Decision, change_pct, decision_from_dict, decision_to_dict
from triage.online.state_store import StateStore

runner = CliRunner()
W4 = "models/online-w4"


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def _feed(values, series="perf/q1", start=0) -> str:
    return "".join(json.dumps({"series_id": series, "commit": f"c{i:03d}", "value": float(v)}) + "\n"
                   for i, v in enumerate(values, start=start))


def _stored(db, model, values) -> list[Decision]:
    """``values`` of series ``s`` (commits c0, c1, ...) through a loop with a store at ``db``; its decisions."""
    with StateStore(db) as store:
        loop = OnlineTriage.from_model_dir(model, explain="none", store=store)
        for i, v in enumerate(values):
            loop.process_one("s", f"c{i}", float(v))
        return store.decisions()


def _alarms(stdout: str) -> list[dict]:
    return [r for r in map(json.loads, stdout.splitlines()) if r.get("decision")]


@pytest.mark.parametrize("jump, sign", [(0.3, 1), (-0.25, -1)])
def test_a_watch_alarm_gives_the_levels_and_the_signed_change(jump, sign, tmp_path):
    values = step_series(120, at=(60,), jump=jump, seed=1)
    result = runner.invoke(app, ["watch", "--model", W4, "--state", str(tmp_path / "s.db")], input=_feed(values))
    assert result.exit_code == 0, result.stderr
    alarms = _alarms(result.stdout)
    assert [a["commit"] for a in alarms] == ["c060"]
    a = alarms[0]
    assert a["before"] == pytest.approx(100.0, rel=0.02)
    assert a["after"] == pytest.approx(100.0 * (1 + jump), rel=0.02)
    assert np.sign(a["change_pct"]) == sign
    assert a["change_pct"] == pytest.approx(100 * jump, abs=2.5)
    assert a["change_pct"] == change_pct(a["before"], a["after"])
    # The ordinary commits' records stay as they were.
    others = [r for r in map(json.loads, result.stdout.splitlines()) if not r.get("decision")]
    assert others and not any({"before", "after", "change_pct"} & set(r) for r in others)


def test_the_levels_are_those_of_pre_and_after(tmp_path):
    values = step_series(120, at=(60,), jump=0.3, seed=1)
    result = runner.invoke(app, ["watch", "--model", W4], input=_feed(values))
    (a,) = _alarms(result.stdout)
    # K = 4: After is the commit and the 4 after it; Pre's last 10 end just before it.
    assert a["before"] == float(np.median(values[50:60]))
    assert a["after"] == float(np.median(values[60:65]))


def test_a_replayed_alarm_gives_the_stored_levels(tmp_path):
    values = step_series(120, at=(60,), jump=0.3, seed=2)
    db = tmp_path / "s.db"
    first = runner.invoke(app, ["watch", "--model", W4, "--state", str(db)], input=_feed(values))
    again = runner.invoke(app, ["watch", "--model", W4, "--state", str(db)], input=_feed(values[:70]))
    assert first.exit_code == 0 and again.exit_code == 0, again.stderr
    (a,) = _alarms(first.stdout)
    (b,) = _alarms(again.stdout)
    assert b["replayed"] is True
    assert {k: b[k] for k in ("before", "after", "change_pct")} == {k: a[k] for k in ("before", "after", "change_pct")}


def test_detect_writes_the_same_levels_as_watch(tmp_path):
    values = step_series(120, at=(60,), jump=-0.3, seed=3)
    data = tmp_path / "h.csv"
    with open(data, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit", "value"])
        w.writerows(("perf/q1", f"c{i:03d}", repr(float(v))) for i, v in enumerate(values))
    out = tmp_path / "cps.csv"
    result = runner.invoke(app, ["detect", "--data", str(data), "--model", W4, "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    with open(out, newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    watched = _alarms(runner.invoke(app, ["watch", "--model", W4], input=_feed(values)).stdout)[0]
    assert row["commit"] == watched["commit"] == "c060"
    assert float(row["before"]) == watched["before"] and float(row["after"]) == watched["after"]
    assert float(row["change_pct"]) == watched["change_pct"] < 0


def test_window0_alarm_levels_and_state_round_trip(rf_dir):
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none")
    values = step_series(90, at=(50,), jump=0.4, seed=0)
    decisions = [loop.process_one("s", f"c{i}", float(v)) for i, v in enumerate(values)]
    alarms = [d for d in decisions if d is not None and d.decision]
    assert alarms
    for d in alarms:
        assert d.levels is not None
        # K = 0: After is the commit alone.
        assert d.levels[1] == float(values[d.index])
    # A series' last output keeps the levels across a save and load of the state.
    d = alarms[0]
    assert decision_from_dict("s", decision_to_dict(d)) == d
    assert "levels" not in decision_to_dict(Decision("s", "c", 1, 0.1, False))


def test_change_pct_rule():
    assert change_pct(200.0, 150.0) == -25.0
    assert change_pct(-4.0, -2.0) == 50.0  # per cent of |before|: the values rose
    assert change_pct(0.0, 3.0) is None
    assert change_pct(0.2, 5.0, noise=0.5) is None  # a level within its noise of 0, as score says it
    assert alarm_levels(np.array([]), [1.0]) is None
    assert alarm_levels(np.array([1.0, 2.0, 9.0]), np.array([5.0, 7.0])) == (2.0, 6.0, 1.4826)  # 1.4826 MAD


def test_an_alarm_at_a_level_near_zero_gives_no_per_cent(tmp_path):
    rng = np.random.default_rng(0)
    values = np.concatenate([0.5 * rng.standard_normal(60), 8 + 0.5 * rng.standard_normal(60)])
    result = runner.invoke(app, ["watch", "--model", W4], input=_feed(values))
    (a,) = _alarms(result.stdout)
    assert a["commit"] == "c060" and abs(a["before"]) < 0.5 and a["after"] > 7
    assert a["change_pct"] is None


def test_a_store_from_before_levels_gets_the_column_and_keeps_its_rows(rf_dir, tmp_path):
    db = tmp_path / "old.db"
    before = _stored(db, rf_dir, step_series(90, at=(50,), jump=0.4, seed=0)[:70])
    # The file as an older changepoint-triage wrote it: no levels column, no levels in its rows.
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE decisions DROP COLUMN levels")
    con.commit()
    con.close()
    with StateStore(db) as store:
        columns = {r[1] for r in store._db.execute("PRAGMA table_info(decisions)")}
        assert "levels" in columns
        kept = store.decisions()
        assert [(d.commit, d.decision, d.probability) for d in kept] == [
            (d.commit, d.decision, d.probability) for d in before]
        assert all(d.levels is None for d in kept)
        # An older version names its columns when it writes: it can still add a row to such a file.
        store._db.execute("INSERT INTO decisions (series_id, commit_id, decided_commit, idx, probability, decision, "
                          "top_features, withdrawal, value) VALUES ('t', 'x', 'x', 0, NULL, 0, '[]', NULL, 1.0)")


def test_a_format_2_store_is_upgraded_so_an_older_version_refuses_it_by_name(rf_dir, tmp_path):
    """Format 3: rows an older changepoint-triage cannot read (a held-back commit's NULL probability, levels).

    An upgrade walkthrough sent a commit again to the release of 2026-11-25 after the current one
    had written the store: "internal error: TypeError: float() argument must be ... not 'NoneType'".
    Format 2 stores are now marked 3 on opening, which that release refuses as "written by a newer
    version"; nothing else in the file changes.
    """
    from triage.online import state_store

    db = tmp_path / "s.db"
    values = step_series(40, at=(30,), jump=0.4, seed=0)
    _stored(db, rf_dir, values[:20])
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '2' WHERE key = 'format_version'")
    rows = con.execute("SELECT * FROM decisions ORDER BY rowid").fetchall()
    states = con.execute("SELECT * FROM series").fetchall()
    con.commit()
    con.close()
    def version() -> str:
        with contextlib.closing(sqlite3.connect(db)) as con:
            return con.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()[0]

    with StateStore(db) as store:
        loop = OnlineTriage.from_model_dir(rf_dir, explain="none", store=store)
        again = loop.process_one("s", "c3", float(values[3]))  # a re-sent commit: its stored decision
        assert again is not None and again.replayed
    # Nothing new written (a re-sent commit, a run refused after opening, no input): still format 2,
    # so the release that wrote it can still go on with it (a review found a refused run upgrading it).
    assert version() == "2"
    refused = runner.invoke(app, ["watch", "--model", W4, "--state", str(db)], input=_feed([1.0]))
    assert refused.exit_code == 2 and version() == "2"
    with StateStore(db) as store:
        loop = OnlineTriage.from_model_dir(rf_dir, explain="none", store=store)
        loop.process_one("s", "c20", float(values[20]))
    assert version() == str(state_store.FORMAT_VERSION) == "3"
    with contextlib.closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT * FROM decisions ORDER BY rowid").fetchall()[: len(rows)] == rows
        assert len(con.execute("SELECT * FROM decisions").fetchall()) == len(rows) + 1
    del states


def test_a_damaged_levels_cell_loses_the_levels_not_the_decision(tmp_path):
    values = step_series(120, at=(60,), jump=0.3, seed=1)
    db = tmp_path / "s.db"
    assert runner.invoke(app, ["watch", "--model", W4, "--state", str(db)], input=_feed(values)).exit_code == 0
    for cell in ("[1]", "xx", '["a", 1, 2]'):
        with contextlib.closing(sqlite3.connect(db)) as con, con:
            con.execute("UPDATE decisions SET levels = ? WHERE levels IS NOT NULL", (cell,))
        again = runner.invoke(app, ["watch", "--model", W4, "--state", str(db)], input=_feed(values[60:65], start=60))
        assert again.exit_code == 0, (cell, again.stderr)
        (a,) = _alarms(again.stdout)
        assert a["replayed"] and "before" not in a



# ---------------------------------------------------------------- regression or improvement (same session)


@pytest.mark.parametrize("fields, kind", [({"higher_is_better": True}, "regression"),
                                          ({"lower_is_better": "yes"}, "improvement"),
                                          ({"direction": -1}, "improvement"),
                                          ({"direction": "higher"}, "regression"),
                                          ({}, "change")])
def test_a_watch_alarm_says_regression_or_improvement_when_the_records_say_which_way_is_better(fields, kind):
    values = step_series(120, at=(60,), jump=-0.25, seed=1)  # the values fall by a quarter
    feed = "".join(json.dumps({"series_id": "q", "commit": f"c{i:03d}", "value": float(v), **fields}) + "\n"
                   for i, v in enumerate(values))
    result = runner.invoke(app, ["watch", "--model", W4], input=feed)
    assert result.exit_code == 0, result.stderr
    (a,) = _alarms(result.stdout)
    assert a["change_kind"] == kind and a["change_pct"] < 0
    assert list(a).index("change_kind") == list(a).index("change_pct") + 1


def test_detect_says_regression_or_improvement_by_the_datas_direction(tmp_path):
    values = step_series(120, at=(60,), jump=-0.3, seed=3)
    data = tmp_path / "h.csv"
    with open(data, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit", "value", "higher_is_better"])
        w.writerows(("q", f"c{i:03d}", repr(float(v)), "true") for i, v in enumerate(values))
    out = tmp_path / "cps.csv"
    assert runner.invoke(app, ["detect", "--data", str(data), "--model", W4, "--out", str(out)]).exit_code == 0
    (row,) = list(csv.DictReader(open(out, newline="")))
    assert row["change_kind"] == "regression" and float(row["change_pct"]) < 0


def test_watch_csv_reads_the_direction_column(tmp_path):
    values = step_series(120, at=(60,), jump=-0.25, seed=1)
    data = tmp_path / "w.csv"
    data.write_text("series_id,commit,value,lower_is_better\n"
                    + "".join(f"q,c{i:03d},{float(v)!r},true\n" for i, v in enumerate(values)))
    result = runner.invoke(app, ["watch", "--model", W4, "--csv", str(data)])
    assert result.exit_code == 0, result.stderr
    (a,) = _alarms(result.stdout)
    assert a["change_kind"] == "improvement"  # a time fell
