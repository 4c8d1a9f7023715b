"""An operator upgrading triage in place (a thirty-third-session walkthrough of the releases of 2026-11-24/25).

Found: a model folder trained again under the same name made `watch` refuse
its state naming the same folder twice ("built with model m-w4 (072d...),
this run's is m-w4 (017e...)") and advise only `--reset-state`; the read-only
`labels` commands left `-wal` / `-shm` files beside the store (a command ends
with `os._exit`, and the store was never closed). The state-store format
bump the walkthrough asked for is tested in `tests/test_alarm_levels.py`.
"""

from __future__ import annotations

import pytest
from helpers_cli import flat, run_triage

from triage.online.state_store import StateStore, StateStoreError
from triage.workspace.store import LabelsStore


def _refusal(db, model_id: str, name: str) -> str:
    with StateStore(db) as store, pytest.raises(StateStoreError) as refused:
        store.bind_model(model_id, name=name)
    return str(refused.value)


def test_a_model_folder_trained_again_is_named_as_changed(tmp_path):
    db = tmp_path / "s.db"
    with StateStore(db) as store:
        store.bind_model("a" * 64, name="/models/m-w4")
    said = _refusal(db, "b" * 64, "/models/m-w4")
    assert "the model then in /models/m-w4 (aaaaaaaaaaaa)" in said
    assert "now holds another (bbbbbbbbbbbb: trained again or replaced)" in said
    assert "models:/NAME/VERSION" in said and "--reset-state" in said
    # A bundled model's name: the upgrade brought another model with it.
    db2 = tmp_path / "b.db"
    with StateStore(db2) as store:
        store.bind_model("a" * 64, name="online-w4")
    said = _refusal(db2, "b" * 64, "online-w4")
    assert "the bundled model online-w4 (aaaaaaaaaaaa) of another changepoint-triage release" in said
    assert "models:/" not in said
    # Another folder is still named as before.
    assert "built with model /models/m-w4 (aaaaaaaaaaaa), this run's is /models/other" in _refusal(
        db, "c" * 64, "/models/other")


def test_read_only_labels_commands_leave_no_journal_files(tmp_path):
    path = tmp_path / "labels.sqlite"
    store = LabelsStore(path)
    store.record("s0", "c030", "true", who="alice", p_true=0.9, model_call="true", model="m")
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.sqlite"]
    for args in (["labels", "export", "--labels", path, "--out", tmp_path / "x.csv"],
                 ["labels", "agreement", "--labels", path]):
        done = run_triage(*args)
        assert done.returncode == 0, done.stderr
        left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("labels.sqlite"))
        assert left == ["labels.sqlite"], (flat(" ".join(map(str, args))), left)
