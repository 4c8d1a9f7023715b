"""triage.online.state_store: exactly-once decisions across kill -9, idempotent re-delivery, model identity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers_online import model_dir, step_series

from triage.online.loop import OnlineTriage
from triage.online.records import RejectedCommit
from triage.online.state_store import StateStore, StateStoreError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def persisted(rf_dir, db, **kwargs) -> OnlineTriage:
    return OnlineTriage.from_model_dir(rf_dir, store=StateStore(db), explain="none", **kwargs)


def test_redelivery_returns_the_stored_decision_and_changes_nothing(rf_dir, tmp_path):
    db = tmp_path / "s.db"
    values = step_series(90, at=(45,), jump=0.5, seed=0)
    loop = persisted(rf_dir, db)
    first = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    store = loop.store
    state_before = json.dumps(store.load_series("s"))
    again = loop.process_one("s", "c45", values[45])  # an older commit, not the latest
    assert again.replayed and (again.index, again.probability, again.decision) == (
        45,
        first[45].probability,
        first[45].decision,
    )
    assert store.n_decisions() == 90
    assert json.dumps(store.load_series("s")) == state_before
    store.close()

    # After a restart every commit is recognised: the whole stream again changes nothing.
    loop = persisted(rf_dir, db)
    replay = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    assert all(d.replayed for d in replay)
    assert [(d.probability, d.decision) for d in replay] == [
        (d.probability, d.decision) for d in first
    ]
    assert loop.store.n_decisions() == 90 and loop.state("s").n == 90
    loop.store.close()


def test_persisted_run_equals_in_memory_run(rf_dir, tmp_path):
    series = {f"s{k}": step_series(60, at=(30,), jump=0.5, seed=k) for k in range(3)}
    memory = OnlineTriage.from_model_dir(rf_dir, explain="none")
    stored = persisted(rf_dir, tmp_path / "s.db")
    for i in range(60):
        batch = [(s, f"c{i}", v[i]) for s, v in series.items()]
        a = memory.process_many(batch)
        b = stored.process_many(batch)
        assert [(d.index, d.probability, d.decision) for d in a] == [
            (d.index, d.probability, d.decision) for d in b
        ]
    assert stored.store.n_decisions() == 180
    stored.store.close()


def test_out_of_order_commit_is_rejected_and_not_stored(rf_dir, tmp_path):
    loop = persisted(rf_dir, tmp_path / "s.db")
    loop.process_one("perf", "a", 1.0, 1_700_000_100)
    with pytest.raises(RejectedCommit, match="'perf', commit 'b': out of order"):
        loop.process_one("perf", "b", 1.0, 1_700_000_000)
    assert loop.store.n_decisions() == 1 and loop.store.get_decision("perf", "b") is None
    loop.store.close()


def test_failed_transaction_keeps_memory_at_the_stored_state(rf_dir, tmp_path, monkeypatch):
    values = step_series(40, at=(), seed=1)
    loop = persisted(rf_dir, tmp_path / "s.db")
    for i in range(20):
        loop.process_one("s", f"c{i}", values[i])

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(loop.store, "commit", broken)
    with pytest.raises(OSError):
        loop.process_one("s", "c20", values[20])
    monkeypatch.undo()
    assert loop.state("s").n == 20  # reloaded from the store, not the lost update
    d = loop.process_one("s", "c20", values[20])
    assert not d.replayed and d.index == 20
    reference = OnlineTriage.from_model_dir(rf_dir, explain="none")
    expected = [reference.process_one("s", f"c{i}", values[i]) for i in range(21)][-1]
    assert (d.probability, d.decision) == (expected.probability, expected.decision)
    loop.store.close()


def test_a_full_disk_names_its_cause_and_the_store_stays_exactly_once(rf_dir, tmp_path):
    values = {f"s{k}": step_series(60, at=(30,), jump=0.5, seed=k) for k in range(12)}
    loop = persisted(rf_dir, tmp_path / "s.db")
    for i in range(10):
        loop.process_many([(s, f"c{i}", v[i]) for s, v in values.items()])
    db = loop.store._db
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full from here
    failed_at = None
    for i in range(10, 60):
        try:
            loop.process_many([(s, f"c{i}", v[i]) for s, v in values.items()])
        except StateStoreError as exc:
            message = str(exc)
            assert "database or disk is full" in message and "no transaction is active" not in message
            assert "nothing of this batch was stored" in message and "s.db" in message
            failed_at = i
            break
    assert failed_at is not None, "the page limit never bit"
    assert not db.in_transaction
    assert loop.store.n_decisions() == 12 * failed_at  # the failed batch left nothing behind
    db.execute("PRAGMA max_page_count = 1073741823")  # space freed: the producer re-sends from there
    decided = {}
    for i in range(failed_at, 60):
        for d, s in zip(loop.process_many([(s, f"c{i}", v[i]) for s, v in values.items()]), values, strict=True):
            decided[(s, i)] = d
    assert loop.store.n_decisions() == 12 * 60
    reference = OnlineTriage.from_model_dir(rf_dir, explain="none")
    for i in range(60):
        for d, s in zip(reference.process_many([(s, f"c{i}", v[i]) for s, v in values.items()]), values, strict=True):
            if (s, i) in decided:
                got = decided[(s, i)]
                assert (got is None) == (d is None)
                if d is not None:
                    assert not got.replayed and (got.index, got.probability, got.decision) == (
                        d.index, d.probability, d.decision)
    loop.store.close()


def test_another_model_needs_reset(rf_dir, tmp_path):
    db = tmp_path / "s.db"
    loop = persisted(rf_dir, db)
    loop.process_one("s", "c0", 1.0)
    loop.store.close()
    store = StateStore(db)
    with pytest.raises(StateStoreError, match="built with model .* --reset-state"):
        store.bind_model("0" * 64)
    store.bind_model("0" * 64, reset=True)
    assert store.n_decisions() == 0 and store.model_id == "0" * 64
    store.close()


def test_store_in_use_or_foreign_file_is_refused(tmp_path):
    db = tmp_path / "s.db"
    first = StateStore(db)
    with pytest.raises(StateStoreError, match="in use by another process"):
        StateStore(db)
    first.close()
    StateStore(db).close()  # free again
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is no database" * 100)
    with pytest.raises(StateStoreError, match="not a state file"):
        StateStore(junk)


def test_state_size_stays_bounded_on_a_long_noisy_series(rf_dir):
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none", min_pre=10**9)  # never reset Pre
    values = 100 * (1 + 0.01 * np.random.default_rng(0).standard_normal(2000))
    sizes = {}
    for i, x in enumerate(values):
        loop.process_one("s", f"c{i}", x)
        if i + 1 in (200, 2000):
            sizes[i + 1] = len(json.dumps(loop.state("s").to_dict()))
    assert loop.state("s").pre.n == 2000
    assert sizes[2000] < 1.5 * sizes[200]


# ---------------------------------------------------------------------- kill -9


def _stream(n_series: int = 3, n: int = 150) -> list[str]:
    lines = []
    series = {
        f"bench/{k}": step_series(n, at=(50, 110), jump=0.5, seed=10 + k) for k in range(n_series)
    }
    for i in range(n):
        for s, v in series.items():
            lines.append(
                json.dumps(
                    {
                        "series_id": s,
                        "commit": f"{s}@{i}",
                        "value": v[i],
                        "timestamp": 1.7e9 + 60 * i,
                    }
                )
            )
    return [line + "\n" for line in lines]


@pytest.mark.parametrize("confirm_after", [0, 3])
def test_kill_9_mid_stream_then_resume_decides_every_commit_once(rf_dir, tmp_path, confirm_after):
    """With K > 0 the kill lands while every series holds K received, undecided commits."""
    lines = _stream()
    db = tmp_path / "state.db"
    cmd = [
        sys.executable,
        "-m",
        "triage.cli.app",
        "watch",
        "--model",
        str(rf_dir),
        "--state",
        str(db),
        "--explain",
        "none",
        "--confirm-after",
        str(confirm_after),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def feed():
        # Only the first two thirds before the kill: however fast the watcher
        # decides (it takes the waiting lines in one transaction), the kill
        # lands mid-stream, with pending commits stored when K > 0.
        try:
            for line in lines[:300]:
                proc.stdin.write(line)
                proc.stdin.flush()
                time.sleep(0.002)
        except (BrokenPipeError, ValueError, OSError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    printed = []
    while len(printed) < 150:
        line = proc.stdout.readline()
        assert line, f"watch ended early: {proc.stderr.read()}"
        printed.append(json.loads(line))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    feeder.join(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    with StateStore(db) as store:
        decided = store.n_decisions()
        pending = [len(store.load_series(s)["pending"]) for s in store.series_ids()]
    assert 150 <= decided < len(lines), "the kill must land in the middle of the stream"
    assert pending == [confirm_after] * 3, "undecided commits are part of the stored state"
    n_decisions = len(lines) - 3 * confirm_after  # the last K of each series wait for more

    resumed = subprocess.run(
        cmd, cwd=ROOT, env=env, input="".join(lines), capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    out = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert len(out) == n_decisions
    # Exactly the commits stored before the kill come back as replays; the rest are decided now.
    assert sum(bool(o.get("replayed")) for o in out) == decided

    with StateStore(db) as store:
        stored = store.decisions()
        states = {s: store.load_series(s) for s in store.series_ids()}
    assert len(stored) == n_decisions == len({(d.series, d.commit) for d in stored})
    assert {s: st["n"] for s, st in states.items()} == {f"bench/{k}": 150 for k in range(3)}

    reference = OnlineTriage.from_model_dir(rf_dir, explain="none", confirm_after=confirm_after)
    expected = {}
    for line in lines:
        r = json.loads(line)
        d = reference.process_one(r["series_id"], r["commit"], r["value"], r["timestamp"])
        if d is not None:
            expected[(d.series, d.commit)] = (d.index, d.probability, d.decision)
    assert len(expected) == n_decisions
    assert {(d.series, d.commit): (d.index, d.probability, d.decision) for d in stored} == expected
    for o in printed + out:
        assert (o["probability"], o["decision"]) == expected[(o.get("series_id", o.get("series")), o["commit"])][1:]
    assert any(v[2] for v in expected.values()), (
        "the stream has clear steps: some decisions are positive"
    )


def test_bounded_cache_reloads_evicted_series_from_the_store(rf_dir, tmp_path):
    series = {f"s{k}": step_series(50, at=(25,), jump=0.5, seed=k) for k in range(5)}
    memory = OnlineTriage.from_model_dir(rf_dir, explain="none")
    small = persisted(rf_dir, tmp_path / "s.db", max_cached_series=2)
    for i in range(50):
        for s, v in series.items():  # one commit at a time: every series is evicted and reloaded
            a = memory.process_one(s, f"c{i}", v[i])
            b = small.process_one(s, f"c{i}", v[i])
            assert (a.index, a.probability, a.decision) == (b.index, b.probability, b.decision)
            assert len(small.states) <= 2
    assert small.store.n_decisions() == 250
    small.store.close()


def test_batch_mixing_redelivered_and_new_commits(rf_dir, tmp_path):
    db = tmp_path / "s.db"
    series = {f"s{k}": step_series(40, at=(20,), jump=0.5, seed=k) for k in range(3)}
    loop = persisted(rf_dir, db)
    loop.process_many([(s, f"c{i}", v[i]) for i in range(25) for s, v in series.items()])
    loop.store.close()
    # After a restart the producer re-sends from commit 20: 5 known, 15 new commits per series.
    loop = persisted(rf_dir, db)
    out = loop.process_many([(s, f"c{i}", v[i]) for i in range(20, 40) for s, v in series.items()])
    assert [d.replayed for d in out] == [i < 25 for i in range(20, 40) for _ in series]
    assert loop.store.n_decisions() == 120
    memory = OnlineTriage.from_model_dir(rf_dir, explain="none")
    expected = memory.process_many(
        [(s, f"c{i}", v[i]) for i in range(40) for s, v in series.items()]
    )
    got = {
        (d.series, d.commit): (d.index, d.probability, d.decision) for d in loop.store.decisions()
    }
    assert got == {(d.series, d.commit): (d.index, d.probability, d.decision) for d in expected}
    loop.store.close()
