"""The online loop (Bauer et al., ICPE 2022, Algorithm 1): behaviour, state, equivalences, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_online import model_dir, reference_features, step_series

from triage.core.errors import InputError
from triage.features.recomputed import RecomputedPre
from triage.features.windows import window_bounds
from triage.online.loop import ALL_COLUMNS, OnlineTriage
from triage.online.records import Decision, ModelMismatch, RejectedCommit
from triage.online.series_state import SeriesState
from triage.training.model_files import ModelFileError, load_model, save_model


@pytest.fixture(scope="module")
def rf_dir():
    return model_dir("rf")


def loop_of(path, **kwargs) -> OnlineTriage:
    kwargs.setdefault("explain", "none")
    return OnlineTriage.from_model_dir(path, **kwargs)


def run(loop: OnlineTriage, series: str, values, start: int = 0) -> list[Decision]:
    return [loop.process_one(series, f"c{start + i}", float(x)) for i, x in enumerate(values)]


# ---------------------------------------------------------------------- detection


def test_finds_clear_steps_and_stays_quiet_on_noise(rf_dir):
    loop = loop_of(rf_dir)
    found, false_alarms = 0, 0
    for seed in range(8):
        values = step_series(150, at=(50, 100), jump=0.5, seed=seed)
        hits = [d.index for d in run(loop, f"steps{seed}", values) if d.decision]
        for step in (50, 100):
            found += any(abs(h - step) <= 2 for h in hits)
        false_alarms += sum(all(abs(h - s) > 2 for s in (50, 100)) for h in hits)
    assert found >= 12, f"found {found} of 16 clear steps"
    assert false_alarms <= 8, f"{false_alarms} false alarms in 8 x 150 commits"
    noise = 100 * (1 + 0.01 * np.random.default_rng(5).standard_normal(300))
    assert sum(d.decision for d in run(loop, "noise", noise)) <= 3


def test_positive_decision_resets_pre_and_negative_grows_it(rf_dir):
    loop = loop_of(rf_dir)
    values = step_series(80, at=(50,), jump=0.5, seed=0)
    for i, x in enumerate(values):
        before = loop.state("s")
        pre_before = before.pre.n if before is not None else 0
        d = loop.process_one("s", f"c{i}", x)
        st = loop.state("s")
        assert st.n == i + 1 and st.last_commit == f"c{i}"
        if d.decision:
            assert st.pre.n == 0 and st.last_cp == i
        else:
            assert st.pre.n == pre_before + 1
    assert loop.state("s").last_cp == 50
    # Pre after the change point holds the commits after it, not the change point itself.
    assert loop.state("s").pre.n == len(values) - 51


def test_min_pre_holds_back_early_decisions(rf_dir):
    loop = loop_of(rf_dir, min_pre=20)
    values = step_series(60, at=(10, 40), jump=0.5, seed=1)
    hits = [d.index for d in run(loop, "s", values) if d.decision]
    assert 10 not in hits and all(h >= 20 for h in hits)
    with pytest.raises(ValueError, match="min_pre"):
        loop_of(rf_dir, min_pre=-1)


# ---------------------------------------------------------------------- equivalences


def _recorded_rows(loop: OnlineTriage) -> list[np.ndarray]:
    """Make the loop's predictor record the feature rows it is given."""
    rows: list[np.ndarray] = []
    predict = loop._predict

    def spy(X):
        rows.extend(np.array(X, copy=True))
        return predict(X)

    loop._predict = spy
    return rows


@pytest.mark.parametrize("pre_class", ["incremental", "recomputed"])
def test_features_equal_a_from_scratch_computation(rf_dir, pre_class):
    """The rows the model sees equal the batch features of Pre = windows.py's bounds given the
    change points the loop itself found, After = the new commit."""
    from triage.features.incremental import BOUNDED, DEFAULT_HORIZON

    kwargs = {"pre_class": RecomputedPre} if pre_class == "recomputed" else {}
    loop = loop_of(rf_dir, **kwargs)
    rows = _recorded_rows(loop)
    values = step_series(160, at=(40, 120), jump=0.5, seed=3)  # Pre grows past the horizon (64)
    decisions = run(loop, "s", values)
    found: list[int] = []
    names = loop.feature_names
    col = {c: i for i, c in enumerate(ALL_COLUMNS)}
    for p, (d, row) in enumerate(zip(decisions, rows, strict=True)):
        (a, b), (c, e) = window_bounds(p, len(values), np.array(found, dtype=np.int64), 0)
        pre = values[a:b]
        full = reference_features(pre, values[c:e])
        if pre_class == "incremental" and len(pre) > DEFAULT_HORIZON:
            # PreState computes the bounded characteristics on the last `horizon` commits.
            tail = reference_features(pre[-DEFAULT_HORIZON:], values[c:e])
            for name in BOUNDED:
                full[col[f"pre_{name}"]] = tail[col[f"pre_{name}"]]
        expected = full[[col[n] for n in names]]
        np.testing.assert_allclose(row, expected, rtol=1e-7, atol=1e-9, err_msg=f"commit {p}")
        if d.decision:
            found.append(p)
    assert found, "the series has clear steps: the loop must find some"


def test_batched_across_series_equals_one_by_one(rf_dir):
    series = {f"s{k}": step_series(70, at=(35,), jump=0.5, seed=k) for k in range(4)}
    one = loop_of(rf_dir)
    expected = {
        (s, f"c{i}"): one.process_one(s, f"c{i}", x)
        for s, v in series.items()
        for i, x in enumerate(v)
    }

    many = loop_of(rf_dir)
    calls = []
    predict = many._predict
    many._predict = lambda X: (calls.append(len(X)), predict(X))[1]
    # Interleaved, ten commits per series per batch.
    for start in range(0, 70, 10):
        batch = [(s, f"c{i}", v[i]) for i in range(start, start + 10) for s, v in series.items()]
        for d in many.process_many(batch):
            e = expected[(d.series, d.commit)]
            assert (d.index, d.probability, d.decision) == (e.index, e.probability, e.decision)
    # One predictor call per round: the k-th commit of every series of the batch.
    assert len(calls) == 70 and set(calls) == {4}


@pytest.mark.parametrize(("commits_per_batch", "keep_states"), [(1, True), (7, False)])
def test_replay_equals_process_one(rf_dir, small_dataset, commits_per_batch, keep_states):
    subset = small_dataset.subset(small_dataset.series_ids[:6])
    loop = loop_of(rf_dir)
    found = loop.replay(
        subset, batch_series=4, commits_per_batch=commits_per_batch, keep_states=keep_states
    )
    assert len(loop.states) == (6 if keep_states else 0)
    one = loop_of(rf_dir)
    expected = [
        (h.series_id, i)
        for h in subset
        for i in range(len(h))
        if one.process_one(h.series_id, h.commits[i], h.values[i], h.timestamps[i]).decision
    ]
    assert [(d.series, d.index) for d in found] == expected


@pytest.mark.parametrize("kind", ["rf", "xgb", "svm"])
def test_compiled_and_library_predictor_agree(kind):
    path = model_dir(kind)
    values = step_series(120, at=(60,), jump=0.5, seed=2)
    a = run(loop_of(path, compiled=True), "s", values)
    b = run(loop_of(path, compiled=False), "s", values)
    # None: held back by the stream rule (min_pre), the model not asked; the same commits either way.
    np.testing.assert_allclose(
        [np.nan if d.probability is None else d.probability for d in a],
        [np.nan if d.probability is None else d.probability for d in b], rtol=0, atol=1e-12,
    )
    assert [d.decision for d in a] == [d.decision for d in b]


# ---------------------------------------------------------------------- state


def test_state_round_trips_through_json_mid_stream(rf_dir):
    values = step_series(140, at=(30, 90), jump=0.5, seed=4)
    straight = run(loop_of(rf_dir), "s", values)

    first = loop_of(rf_dir)
    head = run(first, "s", values[:70])
    saved = json.dumps(first.state_dict())
    second = loop_of(rf_dir)
    second.load_state_dict(json.loads(saved))
    tail = run(second, "s", values[70:], start=70)
    assert [(d.index, d.probability, d.decision) for d in head + tail] == [
        (d.index, d.probability, d.decision) for d in straight
    ]
    # A state serialised on its own (names included) round-trips without the loop too.
    st = SeriesState.from_dict(json.loads(json.dumps(first.state("s").to_dict())))
    assert st.n == 70 and st.pre.n == first.state("s").pre.n
    assert np.array_equal(st.pre.features_array(100.0), first.state("s").pre.features_array(100.0))


def test_redelivering_the_latest_commit_changes_nothing(rf_dir):
    loop = loop_of(rf_dir)
    values = step_series(30, at=(), seed=0)
    run(loop, "s", values)
    before = json.dumps(loop.state_dict())
    again = loop.process_one("s", "c29", values[29])
    assert again.replayed and again.index == 29
    assert json.dumps(loop.state_dict()) == before


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "12", None])
def test_non_finite_value_is_rejected_naming_series_and_commit(rf_dir, bad):
    loop = loop_of(rf_dir)
    run(loop, "perf/insert", [1.0, 1.1, 0.9])
    before = json.dumps(loop.state_dict())
    with pytest.raises(RejectedCommit, match=r"perf/insert.*'c9'"):
        loop.process_one("perf/insert", "c9", bad)
    assert json.dumps(loop.state_dict()) == before


def test_out_of_order_timestamp_is_rejected(rf_dir):
    loop = loop_of(rf_dir)
    loop.process_one("s", "a", 1.0, "2024-05-01T12:00:00Z")
    loop.process_one("s", "b", 1.0, "2024-05-01T12:00:00Z")  # same time: allowed
    with pytest.raises(
        RejectedCommit, match=r"'s', commit 'c': out of order.*2024-05-01T11:00:00Z"
    ):
        loop.process_one("s", "c", 1.0, "2024-05-01T11:00:00Z")
    with pytest.raises(RejectedCommit, match="ISO-8601"):
        loop.process_one("s", "d", 1.0, "yesterday")
    assert loop.state("s").n == 2


def test_a_bad_record_rejects_the_whole_batch(rf_dir):
    loop = loop_of(rf_dir)
    with pytest.raises(RejectedCommit, match="'y'"):
        loop.process_many([("s", "x", 1.0), ("t", "y", float("nan"))])
    assert loop.states == {}


def test_unknown_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ModelFileError, match="no such model directory"):
        OnlineTriage.from_model_dir(tmp_path / "nope")


def test_model_of_another_window_is_refused(rf_dir, tmp_path):
    clf = load_model(rf_dir)
    save_model(clf, tmp_path / "adaptive", window="adaptive")
    with pytest.raises(ModelMismatch, match="window .adaptive.*fixed window K"):
        OnlineTriage.from_model_dir(tmp_path / "adaptive")


def test_feature_set_the_loop_cannot_compute_is_refused():
    import pandas as pd

    from triage.training.classifier import TriageClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"pre_hurst": rng.random(40), "pre_holt_alpha": rng.random(40)})
    clf = TriageClassifier(n_estimators=5).fit(X, np.r_[np.zeros(20), np.ones(20)].astype(int))
    with pytest.raises(ModelMismatch, match="pre_holt_alpha") as info:
        OnlineTriage(clf)
    assert isinstance(info.value, InputError)


# ---------------------------------------------------------------------- explanations


def test_top_features_for_positive_decisions_only(rf_dir):
    loop = loop_of(rf_dir, explain="positive")
    decisions = run(loop, "s", step_series(80, at=(50,), jump=0.5, seed=0))
    positives = [d for d in decisions if d.decision]
    assert positives
    assert all(
        1 <= len(d.top_features) <= 3 and all(isinstance(t, str) for t in d.top_features)
        for d in positives
    )
    # The model's other decisions give none; a commit the stream rule held back (no probability) the rule's.
    assert all(d.top_features == [] for d in decisions if not d.decision and d.probability is not None)
    assert all(d.top_features[0].startswith("held back by the stream rule")
               for d in decisions if d.probability is None)
    assert set(positives[0].to_dict()) == {
        "series",
        "commit",
        "probability",
        "decision",
        "top_features",
        "before",
        "after",
        "change_pct",
    }
    assert all(set(d.to_dict()) == {"series", "commit", "probability", "decision", "top_features"}
               for d in decisions if not d.decision)


def test_both_pre_states_declare_the_one_interface():
    from triage.features.incremental import PreState
    from triage.features.pre_state import PreWindowState

    for state in (PreState(ALL_COLUMNS, series_id="s"), RecomputedPre(ALL_COLUMNS, series_id="s")):
        assert isinstance(state, PreWindowState)
        state.learn_one(1.0).learn_one(2.0)
        restored = type(state).from_dict(json.loads(json.dumps(state.to_dict())))
        assert restored.n == state.n == 2
        np.testing.assert_array_equal(restored.features_array(3.0), state.features_array(3.0))
        assert state.reset().n == 0
