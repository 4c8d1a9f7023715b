"""Walkthrough s17: what changepoint-triage stores, under concurrency, interruption and damage.

The engineer runs triage in CI and on a shared server, where jobs overlap,
get killed and disks fill. Defects found (what the user did, what went
wrong, what happens now):

1. Started two ``triage train`` jobs at once on a new MLflow store (the
   default ``sqlite:///mlruns.db``, two CI jobs in one workspace): MLflow
   creates a new store's tables and runs its schema migrations on the first
   access, and both processes did so together. One or both failed ("table
   experiments already exists", "table _alembic_tmp_metrics already exists",
   "Online migration expected to match one row ...") and the file was left
   half-migrated: every later ``train`` / ``models list`` on it failed too.
   Now the first access to a SQLite store is made under an exclusive lock
   on its folder (``flock``, no file left beside the store): the second job
   waits a moment and both train.
2. A job killed (``kill -9``) while it created a new MLflow store left a
   store that every later command refused with MLflow's own line ("table
   experiment_tags already exists"), saying neither what happened nor what to
   do. Now: the store's creation was cut short, it holds no runs and no
   models, move it aside and run again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

# ---------------------------------------------------------------------- 1, 2: MLflow store creation


def _forked(fn, n: int) -> list[int]:
    """Run ``fn()`` in ``n`` forked children released at once; their exit codes (0: it returned)."""
    read, write = os.pipe()
    children = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(write)
                os.read(read, 1)  # wait for the start
                fn()
                code = 0
            except BaseException:  # noqa: BLE001 - the exit code says it
                code = 3
            finally:
                os._exit(code)
        children.append(pid)
    os.close(read)
    os.write(write, b"x" * n)
    os.close(write)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_two_processes_creating_one_tracking_store_both_succeed(tmp_path: Path) -> None:
    """Forked after MLflow is imported, so that both reach the new store at once, as two CI jobs do."""
    import mlflow.store.model_registry.sqlalchemy_store  # noqa: F401 - imported before the fork
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401

    from triage.training.tracking import check_store

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    assert _forked(lambda: check_store(uri), 3) == [0, 0, 0]
    assert _forked(lambda: check_store(uri), 1) == [0]  # and the store stays usable


def test_a_tracking_store_whose_creation_was_cut_short_says_so(tmp_path: Path) -> None:
    from triage.training.tracking import TrackingError, check_store

    db = tmp_path / "mlruns.db"
    con = sqlite3.connect(db)  # what a kill between MLflow's first tables and its migrations leaves
    con.executescript("CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT);"
                      "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY);"
                      "CREATE TABLE experiment_tags (key TEXT, value TEXT, experiment_id INTEGER);"
                      "CREATE TABLE alembic_version (version_num TEXT); INSERT INTO alembic_version VALUES ('451aebb31d03');")
    con.close()
    with pytest.raises(TrackingError) as err:
        check_store(f"sqlite:///{db}")
    message = str(err.value)
    assert "creation was cut short" in message and "holds no runs" in message and "move it aside" in message
    assert db.is_file()  # never removed for the user
