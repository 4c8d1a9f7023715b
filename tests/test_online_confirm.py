"""The online loop's stream rule: confirmation delay K, re-check and withdrawal, K from the manifest."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from helpers_online import model_dir, reference_features, step_series

from triage.core.history import Dataset, History
from triage.features.incremental import PreState
from triage.online.loop import OnlineTriage
from triage.online.records import change_pct
from triage.online.state_store import StateStore, StateStoreError
from triage.training.model_files import load_model, save_model


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def test_decision_names_commit_p_and_is_made_when_the_kth_after_it_arrives(rf_dir):
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none", confirm_after=3)
    values = step_series(80, at=(40,), jump=0.5)
    out = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    assert out[:3] == [None, None, None]
    for q in range(3, 80):
        d = out[q]
        assert d is not None
        assert (d.commit, d.index, d.decided_at) == (f"c{q - 3}", q - 3, f"c{q}")
    hits = [d.index for d in out if d is not None and d.decision]
    assert hits and all(abs(h - 40) <= 5 for h in hits), hits
    assert loop.state("s").pending == [[f"c{i}", values[i]] for i in range(77, 80)]


def test_after_window_features_equal_a_from_scratch_computation():
    rng = np.random.default_rng(3)
    pre = 100 + rng.standard_normal(40)
    after = np.array([103.0, 104.5, 102.9, 103.7])
    state = PreState(None).learn_many(pre)
    np.testing.assert_allclose(state.features_array(after), reference_features(pre, after), rtol=1e-7, atol=1e-9)
    # a constant After and a single value go through the same assembler
    np.testing.assert_allclose(
        state.features_array(np.array([5.0, 5.0])), reference_features(pre, np.array([5.0, 5.0])), rtol=1e-7, atol=1e-9
    )
    np.testing.assert_allclose(state.features_array(101.0), reference_features(pre, np.array([101.0])), rtol=1e-7, atol=1e-9)


def _spike_series(n: int = 90, at: int = 50, width: int = 2) -> np.ndarray:
    rng = np.random.default_rng(7)
    v = 100 * (1 + 0.01 * rng.standard_normal(n))
    v[at : at + width] *= 1.5  # a short burst, then back to the old level
    return v


def test_recheck_withdraws_an_alarm_the_later_commits_contradict(rf_dir):
    values = _spike_series()
    keep = OnlineTriage.from_model_dir(rf_dir, explain="none", withdraw_below=0.0)
    kept = [keep.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    alarms = [d.index for d in kept if d is not None and d.decision]
    assert 50 in alarms, "the window-0 model takes the burst for a change"
    assert all(d is None or d.withdrawal is None for d in kept)

    loop = OnlineTriage.from_model_dir(rf_dir, explain="none", withdraw_below=2.0, recheck_after=5)
    out = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    withdrawn = {d.withdrawal.index: d for d in out if d is not None and d.withdrawal is not None}
    assert 50 in withdrawn and set(withdrawn) <= set(alarms)
    w = withdrawn[50]
    assert (w.index, w.withdrawal.commit, w.withdrawal.decided_at) == (55, "c50", "c55")
    records = w.records()
    assert records[1] == {"series": "s", "commit": "c50", "withdrawn": True, "decided_at": "c55", "score": w.withdrawal.score}
    assert w.withdrawal.score < 2.0
    st = loop.state("s")
    assert st.n_change_points == len([a for a in alarms if a not in withdrawn]) or st.n_change_points < len(alarms)
    # replay reports alarms net of withdrawals
    found = OnlineTriage.from_model_dir(rf_dir, explain="none", withdraw_below=2.0).replay(
        Dataset([History("s", np.array([f"c{i}" for i in range(len(values))]), values, None)])  # type: ignore[arg-type]
    )
    assert 50 not in [d.index for d in found]


def test_no_second_alarm_while_one_awaits_its_recheck(rf_dir):
    values = step_series(120, at=(40, 43), jump=0.5)  # two steps 3 commits apart
    loop = OnlineTriage.from_model_dir(rf_dir, explain="none", min_pre=0, recheck_after=8)
    out = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    hits = [d.index for d in out if d is not None and d.decision]
    assert all(b - a > 8 for a, b in zip(hits, hits[1:], strict=False)), hits


@pytest.mark.parametrize("confirm_after", [0, 2])
def test_state_round_trips_with_pending_commits_and_an_open_alarm(rf_dir, confirm_after):
    values = _spike_series()
    kwargs = {"explain": "none", "confirm_after": confirm_after, "withdraw_below": 2.0}
    one = OnlineTriage.from_model_dir(rf_dir, **kwargs)
    for i in range(52):
        one.process_one("s", f"c{i}", values[i])
    assert one.state("s").alarm is not None or confirm_after, "an alarm is open mid-stream"
    other = OnlineTriage.from_model_dir(rf_dir, **kwargs)
    other.load_state_dict(json.loads(json.dumps(one.state_dict())))
    for i in range(52, 90):
        a = one.process_one("s", f"c{i}", values[i])
        b = other.process_one("s", f"c{i}", values[i])
        assert (a is None and b is None) or a.records() == b.records()


def test_persisted_withdrawal_comes_back_on_redelivery(rf_dir, tmp_path):
    values = _spike_series()
    loop = OnlineTriage.from_model_dir(
        rf_dir, explain="none", withdraw_below=2.0, store=StateStore(tmp_path / "s.db")
    )
    out = [loop.process_one("s", f"c{i}", x) for i, x in enumerate(values)]
    again = loop.process_one("s", "c55", values[55])
    assert again.replayed and again.withdrawal == out[55].withdrawal
    assert loop.store.n_arrivals() == 90 and loop.store.n_decisions() == 90


def test_k_comes_from_the_model_manifest_unless_given(rf_dir, tmp_path):
    clf = load_model(rf_dir)
    save_model(clf, tmp_path / "w4", window=4, extra={"online": {"confirm_after": 4, "recheck_after": 7}})
    loop = OnlineTriage.from_model_dir(tmp_path / "w4")
    assert (loop.confirm_after, loop.recheck_after) == (4, 7)
    assert OnlineTriage.from_model_dir(tmp_path / "w4", confirm_after=1).confirm_after == 1
    with pytest.raises(ValueError, match="confirm_after"):
        OnlineTriage.from_model_dir(tmp_path / "w4", confirm_after=-1)


def test_a_format_1_state_file_is_refused_unless_reset(rf_dir, tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('format', 'changepoint-triage-online-state'), ('format_version', '1')")
    con.execute("CREATE TABLE decisions (series_id TEXT, commit_id TEXT, idx INTEGER, probability REAL, "
                "decision INTEGER, top_features TEXT, UNIQUE (series_id, commit_id))")
    con.commit()
    con.close()
    with StateStore(db) as store, pytest.raises(StateStoreError, match="format 1"):
        OnlineTriage.from_model_dir(rf_dir, store=store)
    store = StateStore(db)
    store.reset()
    loop = OnlineTriage.from_model_dir(rf_dir, store=store, explain="none")
    assert loop.process_one("s", "c0", 1.0).index == 0


def test_pair_measures_online_equal_the_from_scratch_ones():
    from triage.features.incremental import online_pair_features
    from triage.features.level_shift import PAIR_COLUMNS, pair_features
    from triage.features.recomputed import RecomputedPre

    rng = np.random.default_rng(5)
    pre = 50 + rng.standard_normal(70)
    after = np.array([56.0, 55.1, 56.4])
    names = ["pre_hurst", "after_entropy", "norm_mean_after", *PAIR_COLUMNS]
    online = PreState(names).learn_many(pre).features_array(after)
    scratch = RecomputedPre(names, values=pre).features_array(after)
    np.testing.assert_allclose(online, scratch, rtol=1e-7, atol=1e-9)
    # Pre's last 30 values, as the batch measures read them
    np.testing.assert_allclose(online[3:], online_pair_features(pre, after))
    np.testing.assert_allclose(online[3:], pair_features(pre[-30:], after, 0.0), rtol=1e-12)
    assert online[3] > 4, "a 6-sigma shift has a large robust shift"


@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_replay_over_two_workers_equals_one_replay(rf_dir, small_dataset, workers):
    from triage.online.loop import replay_in_processes

    data = small_dataset.subset(small_dataset.series_ids[:12])
    one = OnlineTriage.from_model_dir(rf_dir, explain="none", confirm_after=2).replay(data)
    two = replay_in_processes(rf_dir, data, jobs=2, parts=[(0, 5), (5, 9), (9, 12)], loop_kwargs={"confirm_after": 2},
                              workers=workers)
    assert two == [(d.series, d.commit, d.index, d.probability, *d.levels[:2], change_pct(*d.levels),
                    data[d.series].change_kind(*d.levels[:2])) for d in one]
    assert two, "the small preset has changes to find"


@pytest.mark.parametrize(("kind", "threshold"), [("xgb", None), ("svm", 0.1)])
def test_replay_over_two_threads_equals_one_replay_for_other_model_kinds(small_dataset, kind, threshold):
    # xgb: the compiled tree walk; svm: scikit-learn's own predict_proba, called from both threads
    # (its threshold lowered so that it raises alarms on these series)
    from triage.online.loop import replay_in_processes

    path = model_dir(kind)
    data = small_dataset.subset(small_dataset.series_ids[:12])
    one = OnlineTriage.from_model_dir(path, explain="none", threshold=threshold).replay(data)
    two = replay_in_processes(path, data, jobs=2, parts=[(0, 3), (3, 6), (6, 9), (9, 12)],
                              loop_kwargs={"threshold": threshold}, workers="threads")
    assert two == [(d.series, d.commit, d.index, d.probability, *d.levels[:2], change_pct(*d.levels),
                    data[d.series].change_kind(*d.levels[:2])) for d in one]
    assert two, "alarms to compare"


@pytest.mark.parametrize(("kind", "threshold", "in_threads"), [("rf", None, True), ("svm", 0.1, False)])
def test_auto_workers_are_threads_for_a_compiled_model_and_processes_for_an_svm(
    small_dataset, monkeypatch, kind, threshold, in_threads
):
    # an SVM's predict_proba holds the GIL: two threads would take turns
    import threading

    from triage.online.loop import replay_in_processes

    path = model_dir(kind)
    assert OnlineTriage.from_model_dir(path, explain="none").compiled is in_threads
    data = small_dataset.subset(small_dataset.series_ids[:12])
    one = OnlineTriage.from_model_dir(path, explain="none", threshold=threshold).replay(data)
    here = []
    real_replay = OnlineTriage.replay
    monkeypatch.setattr(OnlineTriage, "replay",
                        lambda self, *a, **k: here.append(threading.current_thread().name) or real_replay(self, *a, **k))
    two = replay_in_processes(path, data, jobs=2, parts=[(0, 4), (4, 8), (8, 12)], loop_kwargs={"threshold": threshold})
    assert two == [(d.series, d.commit, d.index, d.probability, *d.levels[:2], change_pct(*d.levels),
                    data[d.series].change_kind(*d.levels[:2])) for d in one] and two
    if in_threads:
        assert len(here) == 3 and all(name.startswith("triage-replay") for name in here)
    else:
        assert here == [], "replayed in spawned processes, not in this one"


def test_replay_threads_share_one_loaded_model(rf_dir, small_dataset, monkeypatch):
    from triage.online.loop import replay_in_processes
    from triage.training import model_files

    loads = []
    real_load = model_files.load_model
    monkeypatch.setattr(model_files, "load_model", lambda path: loads.append(path) or real_load(path))
    data = small_dataset.subset(small_dataset.series_ids[:8])
    replay_in_processes(rf_dir, data, jobs=2, parts=[(0, 2), (2, 4), (4, 6), (6, 8)], workers="threads")
    assert loads == [rf_dir], "the threads' loops are built from one loaded classifier"
