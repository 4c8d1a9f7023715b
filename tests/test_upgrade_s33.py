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


def test_serve_words_its_reasons_with_the_sheriffs_true_decisions(tmp_path):
    """A sheriff's walkthrough: a step confirmed in serve still had the next alert's reason reach back over it
    (the plot drew it confirmed), even after a restart on the same store."""
    import warnings

    import numpy as np
    import pandas as pd

    from triage.loaders import load
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace, create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    rng = np.random.default_rng(0)
    values = np.r_[np.full(30, 100.0), np.full(15, 80.0), np.full(45, 81.0)] * (1 + 0.001 * rng.standard_normal(90))
    data = tmp_path / "h.csv"
    pd.DataFrame({"series_id": "s", "commit": [f"c{i:03d}" for i in range(90)], "value": values}).to_csv(data, index=False)
    cands = tmp_path / "c.csv"
    cands.write_text("series_id,commit\ns,c030\ns,c045\n")
    dataset = load(data)

    def workspace():
        return Workspace(dataset=dataset, alerts=build_alerts(dataset, cands), store=LabelsStore(tmp_path / "l.sqlite"))

    ws = workspace()
    later = ws.by_key[("s", "c045")]
    assert later.reason.startswith("median fell")  # its 30 commits before reach over the step at c030
    client = TestClient(create_app(ws))
    form = {"csrf": ws.csrf, "series_id": "s", "commit": "c030", "decision": "true", "who": "ann", "next": "/"}
    assert client.post("/decide", data=form, follow_redirects=False).status_code == 303
    assert later.reason.startswith("median rose 1.")  # from the confirmed step's level, 80, to 81
    assert "rose 1." in client.get("/series", params={"id": "s"}).text
    restarted = workspace()
    assert restarted.by_key[("s", "c045")].reason == later.reason
    undo = {"csrf": ws.csrf, "series_id": "s", "commit": "c030", "who": "ann", "next": "/"}
    assert client.post("/undo", data=undo, follow_redirects=False).status_code == 303
    assert later.reason.startswith("median fell")


def test_reworded_reasons_keep_the_files_direction_and_a_sheriffs_false_counts(tmp_path):
    """A review of the above: after a decision the reasons of a series directed by its candidates file
    (lower_is_better) said 'change'; a sheriff's 'false' on the data's true_positive still bounded them."""
    import warnings

    import numpy as np
    import pandas as pd

    from triage.loaders import load
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace, create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    rng = np.random.default_rng(0)
    values = np.r_[np.full(30, 100.0), np.full(15, 80.0), np.full(45, 81.0)] * (1 + 0.001 * rng.standard_normal(90))
    labels = [""] * 90
    labels[30] = "true_positive"
    data = tmp_path / "h.csv"
    pd.DataFrame({"series_id": "s", "commit": [f"c{i:03d}" for i in range(90)], "value": values,
                  "label": labels}).to_csv(data, index=False)
    cands = tmp_path / "c.csv"
    cands.write_text("series_id,commit,lower_is_better\ns,c030,true\ns,c045,true\n")
    dataset = load(data)
    ws = Workspace(dataset=dataset, alerts=build_alerts(dataset, cands), store=LabelsStore(tmp_path / "l.sqlite"))
    later, step = ws.by_key[("s", "c045")], ws.by_key[("s", "c030")]
    assert (step.direction, later.direction) == ("improvement", "regression")
    assert later.reason.startswith("median rose 1.")  # the data confirms c030
    client = TestClient(create_app(ws))
    form = {"csrf": ws.csrf, "series_id": "s", "commit": "c030", "decision": "false", "who": "ann", "next": "/"}
    assert client.post("/decide", data=form, follow_redirects=False).status_code == 303
    assert later.reason.startswith("median fell")  # the sheriff's false stands over the data's label
    assert (step.direction, later.direction) == ("improvement", "improvement")  # the file's direction kept
    assert "s" in ws.directed
