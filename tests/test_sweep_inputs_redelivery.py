"""A commit re-sent with another value keeps its first decision (exactly-once) but says so.

It used to count as a plain re-delivery: the new value was ignored without a
word. Now a :class:`ConflictingRedelivery` warning names the series, the
commit and both values (``triage watch`` prints it on stderr); the same value
re-sent stays silent.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import warnings

import pytest
from helpers_online import model_dir, step_series
from warm_start import warm_triage

from triage.online.loop import OnlineTriage
from triage.online.records import ConflictingRedelivery
from triage.online.state_store import StateStore


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def _feed(loop, values, series="s"):
    return [loop.process_one(series, f"c{i}", float(v)) for i, v in enumerate(values)]


def _conflicts(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [w.message for w in caught if issubclass(w.category, ConflictingRedelivery)]


@pytest.mark.parametrize("confirm_after", [0, 3])
def test_latest_commit_resent_with_another_value_warns_and_keeps_the_first(rf_dir, confirm_after):
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none", confirm_after=confirm_after)
    values = step_series(80)
    first = _feed(loop, values)[-1]
    n = loop.states["s"].n
    again, found = _conflicts(lambda: loop.process_one("s", "c79", float(values[-1]) * 2))
    assert len(found) == 1
    w = found[0]
    assert (w.series, w.commit, w.first, w.now) == ("s", "c79", float(values[-1]), float(values[-1]) * 2)
    assert "series 's', commit 'c79' re-sent with value" in str(w) and "the first value stands" in str(w)
    assert loop.states["s"].n == n  # exactly-once: nothing was learned from it
    assert (again is None) == (first is None)
    if first is not None:
        assert again.replayed and again.probability == first.probability
    # The same value again is an ordinary re-delivery: no word.
    _, found = _conflicts(lambda: loop.process_one("s", "c79", float(values[-1])))
    assert found == []


def test_an_earlier_commit_resent_to_a_store_warns(rf_dir, tmp_path):
    values = step_series(80)
    loop = OnlineTriage.from_model_dir(rf_dir, store=StateStore(tmp_path / "s.db"), explain="none")
    _feed(loop, values)
    n = loop.states["s"].n
    # Looked up optimistically (its timestamp is not older) only after the store refuses it: the retry path.
    _, found = _conflicts(lambda: loop.process_many([("s", "c10", 1.0), ("s", "c80", float(values[-1]))]))
    assert [(w.commit, w.first, w.now) for w in found] == [("c10", float(values[10]), 1.0)]
    assert loop.states["s"].n == n + 1  # c80 is new, c10 was not taken again
    # After a restart the value comes from the file.
    loop.store.close()
    loop = OnlineTriage.from_model_dir(rf_dir, store=StateStore(tmp_path / "s.db"), explain="none")
    _, found = _conflicts(lambda: loop.process_one("s", "c80", 5.0))
    assert [(w.commit, w.first, w.now) for w in found] == [("c80", float(values[-1]), 5.0)]
    _, found = _conflicts(lambda: loop.process_one("s", "c3", float(values[3])))
    assert found == []


def test_the_same_commit_twice_in_one_batch_with_two_values_warns(rf_dir):
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none")
    _, found = _conflicts(lambda: loop.process_many([("s", "a", 1.0), ("s", "a", 2.0), ("s", "b", 1.0)]))
    assert [(w.commit, w.first, w.now) for w in found] == [("a", 1.0, 2.0)]
    assert loop.states["s"].n == 2


def test_a_store_written_before_values_were_kept_is_read_and_stays_silent(rf_dir, tmp_path):
    db = tmp_path / "old.db"
    loop = OnlineTriage.from_model_dir(rf_dir, store=StateStore(db), explain="none")
    _feed(loop, step_series(40))
    loop.store.close()
    con = sqlite3.connect(db, isolation_level=None)  # as an earlier version wrote it: no value column
    con.execute("ALTER TABLE decisions DROP COLUMN value")
    con.close()
    loop = OnlineTriage.from_model_dir(rf_dir, store=StateStore(db), explain="none")
    _, found = _conflicts(lambda: loop.process_one("s", "c5", 123.0))
    assert found == []  # its first value is unknown
    loop.process_one("s", "c40", 100.0)
    _, found = _conflicts(lambda: loop.process_one("s", "c40", 101.0))
    assert [(w.commit, w.first, w.now) for w in found] == [("c40", 100.0, 101.0)]


def test_watch_prints_the_conflict_on_stderr(rf_dir, tmp_path):
    lines = [{"series_id": "s", "commit": f"c{i}", "value": float(v)} for i, v in enumerate(step_series(30))]
    lines.append({"series_id": "s", "commit": "c29", "value": 7.5})
    proc = subprocess.run(
        [*warm_triage(), "watch", "--model", str(rf_dir), "--state", str(tmp_path / "w.db")],
        input="".join(json.dumps(r) + "\n" for r in lines), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"warning: series 's', commit 'c29' re-sent with value 7.5, but it first came with {lines[29]['value']!r}" \
        in proc.stderr
    assert len(proc.stdout.splitlines()) == 31
