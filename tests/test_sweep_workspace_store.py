"""The labels store on disk: changed under a running workspace, or not a labels store at all.

A running workspace holds its store open. When another process moves,
deletes or replaces the file (a restore, a clean-up, a second tool), SQLite
keeps writing to the file it opened: decisions the sheriff sees recorded
would go to a file nobody reads. And a file that is some other SQLite
database (the online loop's state store, a browser's history) must be
refused as such, not given the labels tables or called damaged.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.core import labels as L
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette suggests httpx2 for its test client
    from starlette.testclient import TestClient


def _tables(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return sorted(
            r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
    finally:
        db.close()


def _decisions(path: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT commit_id, label FROM decisions ORDER BY id").fetchall()
    finally:
        db.close()


@pytest.fixture
def store(tmp_path) -> LabelsStore:
    s = LabelsStore(tmp_path / "labels.sqlite")
    s.record("s", "c1", "true", who="ann")
    return s


def test_a_store_moved_away_is_not_written_to(store, tmp_path):
    os.rename(store.path, tmp_path / "moved.sqlite")
    with pytest.raises(InputError, match=r"labels\.sqlite: .*moved, replaced or deleted"):
        store.record("s", "c2", "false", who="ann")
    with pytest.raises(InputError, match="moved, replaced or deleted"):
        store.current()
    # Put back (as the message advises), it is the same store again, without the refused decision.
    os.rename(tmp_path / "moved.sqlite", store.path)
    assert [(d.commit, d.label) for d in store.history()] == [("c1", L.TRUE_POSITIVE)]


def test_a_store_replaced_by_another_file_is_left_alone(store, tmp_path):
    os.rename(store.path, tmp_path / "old.sqlite")
    other = LabelsStore(store.path)  # another process starts a store at the same path
    other.record("s", "other", "unsure", who="bob")
    other.close()
    with pytest.raises(InputError, match="moved, replaced or deleted"):
        store.record("s", "c2", "false", who="ann")
    assert _decisions(store.path) == [("other", L.UNDER_INVESTIGATION)]


def test_a_store_replaced_by_a_link_is_not_written_through(store, tmp_path):
    store.close()  # the next access opens a new connection, as a new server thread does
    target = tmp_path / "elsewhere.sqlite"
    os.rename(store.path, target)
    store.path.symlink_to(target)
    with pytest.raises(InputError, match="moved, replaced or deleted"):
        store.record("s", "c2", "false", who="ann")
    assert _decisions(target) == [("c1", L.TRUE_POSITIVE)]


def test_a_store_deleted_under_the_server_is_a_clear_error_page(tmp_path):
    n = 60
    values = np.r_[np.full(30, 100.0), np.full(30, 120.0)] + np.random.default_rng(0).normal(
        0, 1, n
    )
    labels = np.full(n, L.NONE, dtype=object)
    labels[30] = L.NOT_TRIAGED
    h = History(
        "s",
        [f"c{i}" for i in range(n)],
        values,
        labels,
        timestamps=pd.date_range("2026-01-01", periods=n).to_numpy(),
    )
    dataset = Dataset([h], source="<test>")
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "labels.sqlite")
    )
    client = TestClient(create_app(ws), raise_server_exceptions=False)
    assert client.get("/").status_code == 200
    os.unlink(ws.store.path)
    r = client.post(
        "/decide", data={"csrf": ws.csrf, "series_id": "s", "commit": "c30", "decision": "true"}
    )
    assert r.status_code == 503 and "Traceback" not in r.text
    assert (
        "labels.sqlite" in r.text
        and "moved, replaced or deleted" in r.text
        and "not recorded" in r.text
    )
    assert client.get("/").status_code == 503
    assert not ws.store.path.exists()  # not silently re-created empty either


def test_another_sqlite_database_is_refused_and_left_unchanged(tmp_path):
    path = tmp_path / "places.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE moz_places (id INTEGER, url TEXT)")
    db.commit()
    db.close()
    with pytest.raises(InputError, match=r"places\.sqlite: not a triage labels store.*moz_places"):
        LabelsStore(path)
    assert _tables(path) == ["moz_places"]


def test_the_online_state_store_is_named_as_such_not_called_damaged(tmp_path):
    from triage.online.state_store import StateStore

    path = tmp_path / "state.sqlite"
    StateStore(path).close()
    before = _tables(path)
    with pytest.raises(InputError, match="not a triage labels store") as err:
        LabelsStore(path)
    assert "move" not in str(err.value)  # no advice to move a healthy file aside
    assert _tables(path) == before


def test_a_store_damaged_under_the_server_is_a_clear_error_page(tmp_path):
    dataset = Dataset(
        [
            History(
                "s",
                ["c0", "c1", "c2"],
                np.array([1.0, 2.0, 2.0]),
                np.array([L.NONE, L.NOT_TRIAGED, L.NONE], dtype=object),
            )
        ],
        source="<test>",
    )
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "labels.sqlite")
    )
    for i in range(300):
        ws.store.record("s", f"x{i}", "true", who="ann", note="n" * 400)
    ws.store._con().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ws.store.close()
    with open(
        ws.store.path, "r+b"
    ) as fh:  # same file, pages overwritten in place (a disk or a bad copy)
        fh.seek(4096)
        fh.write(b"\xff" * 16384)
    client = TestClient(create_app(ws), raise_server_exceptions=False)
    r = client.get("/")
    assert r.status_code == 503 and "Traceback" not in r.text
    assert "labels.sqlite" in r.text and "malformed" in r.text


def test_a_labels_path_under_a_file_says_the_file_is_not_a_folder(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("series_id,commit,value\n")
    with pytest.raises(InputError, match=r"data\.csv is a file, not a folder"):
        LabelsStore(data / "labels.sqlite")
    assert data.read_text() == "series_id,commit,value\n"
