"""The replay's screen: a bound of the model's probability without Pre's ``max_kl_shift`` decides
most commits, and a replay with it finds exactly what one without it finds.

(a) ``CompiledPredictor.upper_bound_proba`` is >= ``positive_proba`` whatever the
free columns hold (NaN and infinities included), for the bundled XGBoost
``online-w4`` and for forests, calibrated or not; with no free column it is
``positive_proba`` itself. (b) ``PreState.features_array(..., defer=...)``
leaves the deferred column NaN and never serves that row as the full one. (c)
``OnlineTriage.replay`` with and without the screen returns the same change
points with bit-identical probabilities and ends in the same states, on real
histories (alarms, withdrawals) and on the ``default`` preset. (d) The screen
stays off for ``process_one`` / ``process_many`` (``triage watch``), with a
store, with ``explain="all"`` and with a Pre state that cannot defer.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_online import model_dir

from triage.core.history import Dataset, History, dataset_from_long
from triage.features.incremental import PreState
from triage.features.recomputed import RecomputedPre
from triage.online.loop import OnlineTriage, RejectedCommit
from triage.online.records import ConflictingRedelivery
from triage.online.state_store import StateStore
from triage.synthetic import generate, preset_config
from triage.training.classifier import TriageClassifier
from triage.training.compiled import CompiledPredictor
from triage.training.model_files import load_model

ONLINE_W4 = Path(__file__).resolve().parents[1] / "models" / "online-w4"

# Real histories (../shared/data/real) picked so that the replay raises alarms,
# keeps most of them and withdraws some (the first seven withdraw at least one
# alarm with online-w4), from all five source projects; about 4,300 commits.
REAL_IDS = [
    "otel-java/io.opentelemetry.sdk.SpanRecordBenchmark.threads4({spanSize:MEDIUM})/otel-bench-runner",
    "emg3d-bench/time.ResidualTime.time_residual('small')/meerkat/conda-py3.8",
    "empymod-bench/transform.Fourier.time_dlf_standard('Small')/dtr-latitude/conda-py3.6-numpy1.17",
    "otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads4({aggregationTemporality:CUMULATIVE;"
    "cardinality:1;instrumentTypeAndAggregation:HISTOGRAM_BASE2_EXPONENTIAL})/otel-bench-runner",
    "empymod-bench/model.Analytical.time_analytical('fs')/dtr-latitude/conda-py3.6-numpy1.17",
    "empymod-bench/transform.Fourier.time_fftlog('Small')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Fourier.time_qwe('Small')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Fourier.time_dlf_standard('Big')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Dlf.time_dlf('Big';'Lagged')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Fourier.time_fft('Big')/dtr-latitude/conda-py3.6",
    "django-asv/system_check_benchmarks.run_checks.benchmark.SystemChecks.time_checks/ubuntu-latest/conda-py3.10",
    "django-asv/url_benchmarks.url_resolve.benchmark.UrlResolve.time_resolve_literal_path/ubuntu-latest/conda-py3.10",
    "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({logSize:LARGE})/otel-bench-runner",
    "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads4({logSize:MEDIUM})/otel-bench-runner",
    "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({logSize:MEDIUM})/otel-bench-runner",
    "emg3d-bench/memory.ResidualMemory.peakmem_residual('small')/meerkat/conda-py3.8",
    "emg3d-bench/memory.SmoothingMemory.peakmem_smoothing(0;'big')/meerkat/conda-py3.8",
]


@pytest.fixture(scope="module")
def w4():
    return load_model(ONLINE_W4)


@pytest.fixture
def real_subset(shared_data):
    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz")
    frame = frame[frame["series_id"].isin(REAL_IDS)]
    assert frame["series_id"].nunique() == len(REAL_IDS), "a picked history is missing from the real data"
    return dataset_from_long(frame)


def _rows_of(loop: OnlineTriage, dataset) -> np.ndarray:
    """Every full feature row the loop predicts over a replay without the screen."""
    rows: list[np.ndarray] = []
    predict = loop._predict

    def spy(X):
        rows.append(np.array(X))
        return predict(X)

    loop._predict = spy
    loop.replay(dataset, screen=False, keep_states=False)
    return np.concatenate(rows)


def _fill(X: np.ndarray, free: np.ndarray, rng) -> np.ndarray:
    """X with its free columns overwritten: values of the column elsewhere, NaN, +-inf, extremes."""
    out = X.copy()
    for j in np.flatnonzero(free):
        pool = np.concatenate([X[:, j], [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0]])
        out[:, j] = rng.choice(pool, size=len(X))
    return out


# ---------------------------------------------------------------------- (a) the bound


def test_bound_of_the_bundled_model_holds_for_any_free_values(w4):
    fast = CompiledPredictor(w4)
    assert fast.bounds
    names = list(w4.feature_names_)
    X = _rows_of(OnlineTriage(w4, explain="none"), generate(preset_config("default", n_series=6), seed=3))
    assert len(X) > 1000
    exact = fast.positive_proba(X)
    # No free column: the bound is the probability, bit for bit.
    np.testing.assert_array_equal(fast.upper_bound_proba(X, np.zeros(len(names), dtype=bool)), exact)
    rng = np.random.default_rng(0)
    masks = [np.array([n == "pre_max_kl_shift" for n in names])]
    masks += [rng.random(len(names)) < share for share in (0.05, 0.2, 0.5)]
    for free in masks:
        bound = fast.upper_bound_proba(np.where(free, np.nan, X), free)
        assert np.all(bound >= exact)
        for _ in range(3):
            assert np.all(bound >= fast.positive_proba(_fill(X, free, rng)))
    # Free max_kl_shift leaves most rows decided: the screen has something to do.
    mkl = masks[0]
    assert np.mean(fast.upper_bound_proba(X, mkl) < 0.98) > 0.9


@pytest.mark.parametrize(
    "params",
    [{"model": "rf", "n_estimators": 30}, {"model": "rf", "n_estimators": 20, "calibration": "isotonic"},
     {"model": "xgb", "n_estimators": 30, "calibration": "sigmoid"}],
    ids=["rf", "rf-isotonic", "xgb-platt"],
)
def test_bound_holds_for_forests_and_calibrated_models(params):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 8))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=600) > 0.3).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    clf = TriageClassifier(random_state=0, **params).fit(X, y)
    fast = CompiledPredictor(clf)
    assert fast.bounds
    probe = rng.normal(scale=1.5, size=(1500, 8))
    exact = fast.positive_proba(probe)
    np.testing.assert_array_equal(fast.upper_bound_proba(probe, np.zeros(8, dtype=bool)), exact)
    for free_cols in ([0], [1, 2], [3, 5, 7], list(range(8))):
        free = np.isin(np.arange(8), free_cols)
        bound = fast.upper_bound_proba(probe, free)
        assert np.all(bound >= exact)
        assert np.all(bound >= fast.positive_proba(_fill(probe, free, rng)))
    # Column 0 matters to every model here: freeing it loosens the bound somewhere.
    assert np.any(fast.upper_bound_proba(probe, np.isin(np.arange(8), [0])) > exact)


def test_no_bound_where_it_could_not_be_sound():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    svm = CompiledPredictor(TriageClassifier(model="svm", random_state=0).fit(X, y))
    assert not svm.bounds
    np.testing.assert_array_equal(svm.upper_bound_proba(X, np.ones(4, dtype=bool)), np.ones(len(X)))
    platt = TriageClassifier(model="rf", n_estimators=10, calibration="sigmoid", random_state=0).fit(X, y)
    platt.calibrator_.coef_ = -platt.calibrator_.coef_  # a decreasing calibrator: no bound
    assert not CompiledPredictor(platt).bounds


# ---------------------------------------------------------------------- (b) the deferred row


def test_a_deferred_row_is_never_served_as_the_full_one(w4):
    names = list(w4.feature_names_)
    col = names.index("pre_max_kl_shift")
    values = np.random.default_rng(4).normal(size=120).cumsum()
    state = PreState(names)
    state.learn_many(values[:100])
    after = values[100:105]
    fresh = copy.deepcopy(state)
    full = fresh.features_array(after)
    assert np.isfinite(full[col])
    partial = state.features_array(after, OnlineTriage.SCREEN_DEFER)
    left_out = [names.index(f"pre_{name}") for name in OnlineTriage.SCREEN_DEFER]
    assert col in left_out and np.all(np.isnan(partial[left_out]))
    np.testing.assert_array_equal(np.delete(partial, left_out), np.delete(full, left_out))
    twin = copy.deepcopy(state)  # a copy taken between the two keeps the partial result apart too
    np.testing.assert_array_equal(state.features_array(after), full)
    np.testing.assert_array_equal(twin.features_array(after), full)
    # Once the full one is known it serves a deferred request too.
    np.testing.assert_array_equal(state.features_array(after, OnlineTriage.SCREEN_DEFER), full)
    # Short Pre: nothing is deferred (every value is cheap there).
    short = PreState(names).learn_many(values[:8])
    np.testing.assert_array_equal(short.features_array(after, ("max_kl_shift",)), short.features_array(after))
    with pytest.raises(ValueError, match="bounded"):
        state.features_array(after, ("hurst",))


# ---------------------------------------------------------------------- (c) same decisions


def _compare(w4, dataset) -> tuple[int, int]:
    """Replay with and without the screen; assert the same change points and states. (found, raised)."""
    out = {}
    for screen in (True, False):
        loop = OnlineTriage(w4, explain="none")
        raised: list[int] = []
        raise_alarm = loop._raise_alarm

        def spy(st, index, *args, _raise=raise_alarm, _log=raised):
            _log.append(index)
            return _raise(st, index, *args)

        loop._raise_alarm = spy
        asked = []
        bound = loop._bound
        loop._bound = lambda X, free, _b=bound, _a=asked: (_a.append(len(X)), _b(X, free))[1]
        found = loop.replay(dataset, screen=screen)
        states = loop.state_dict()
        for st in states.values():
            st.pop("last_output")  # a negative last decision carries its bound under the screen
        out[screen] = ([(d.series, d.commit, d.index, d.probability, d.decided_at) for d in found], states, len(raised), sum(asked))
    assert out[True][0] == out[False][0]
    assert out[True][1] == out[False][1]
    assert out[True][2] == out[False][2]
    assert out[True][3] > 0 and out[False][3] == 0  # the screen ran, and only when asked
    return len(out[True][0]), out[True][2]


def test_screened_replay_finds_the_same_change_points_on_real_histories(w4, real_subset):
    found, raised = _compare(w4, real_subset)
    assert found >= 15
    assert raised > found  # some alarms were withdrawn


def test_screened_replay_finds_the_same_change_points_on_the_default_preset(w4):
    found, _ = _compare(w4, generate(preset_config("default", n_series=12), seed=11))
    assert found >= 3


@pytest.mark.parametrize("confirm_after", [0, 2])
def test_screened_replay_of_a_window_0_forest_finds_the_same_change_points(small_dataset, confirm_after):
    # A random forest over the whole catalogue (float64 scores), K = 0 and 2.
    loop = OnlineTriage.from_model_dir(model_dir("rf"), explain="none", confirm_after=confirm_after, min_pre=0)
    assert loop._screen_for(True) is not None
    out = {}
    for screen in (True, False):
        loop = OnlineTriage.from_model_dir(model_dir("rf"), explain="none", confirm_after=confirm_after, min_pre=0)
        found = loop.replay(small_dataset, screen=screen)
        states = loop.state_dict()
        for st in states.values():
            st.pop("last_output")
        out[screen] = ([(d.series, d.commit, d.index, d.probability) for d in found], states)
    assert out[True] == out[False]
    assert len(out[True][0]) >= 5


def test_explanations_of_screened_change_points_are_those_of_their_full_rows(w4):
    data = generate(preset_config("default", n_series=6), seed=11)
    out = {}
    for screen in (True, False):
        found = OnlineTriage(w4, explain="positive").replay(data, screen=screen)
        out[screen] = [(d.series, d.index, d.probability, d.top_features) for d in found]
    assert out[True] == out[False]
    assert out[True] and all(top for *_, top in out[True])


def test_a_probability_equal_to_the_threshold_in_float32_is_positive_with_or_without_the_screen(w4):
    # XGBoost's probabilities are float32 and the loop compares them with the
    # threshold as float32; a threshold just above a probability p in float64
    # that rounds to p in float32 makes p an alarm. The screen must agree.
    data = generate(preset_config("default", n_series=12), seed=11)
    p = max(d.probability for d in OnlineTriage(w4, explain="none").replay(data, screen=False))
    threshold = float(np.nextafter(p, 1.0))
    assert threshold > p and np.float32(threshold) == np.float32(p)
    out = {}
    for screen in (True, False):
        found = OnlineTriage(w4, explain="none", threshold=threshold).replay(data, screen=screen)
        out[screen] = [(d.series, d.index, d.probability) for d in found]
    assert out[True] == out[False]
    assert any(prob == p for _, _, prob in out[True])


# ---------------------------------------------------------------------- (d) where it stays off


def _no_bound(X, free):
    raise AssertionError("the screen ran")


def test_the_screen_is_off_outside_a_plain_replay(w4, tmp_path):
    data = generate(preset_config("default", n_series=2), seed=5)
    h = next(iter(data))
    loop = OnlineTriage(w4, explain="none")
    loop._bound = _no_bound
    decisions = loop.process_many([(h.series_id, str(c), float(v)) for c, v in zip(h.commits, h.values, strict=True)])
    # Every commit the model was asked about has its exact probability (the screen's NaN would read as
    # None); None only where the stream rule held the commit back: its first min_pre commits among them.
    asked = [d for d in decisions if d is not None and d.probability is not None]
    assert asked and all(np.isfinite(d.probability) for d in asked)
    assert [d.probability for d in decisions if d is not None and d.index < loop.min_pre] == [None] * loop.min_pre
    with StateStore(tmp_path / "s.db") as store:
        stored = OnlineTriage.from_model_dir(ONLINE_W4, explain="none", store=store)
        stored._bound = _no_bound
        stored.replay(data)
    for kwargs in ({"explain": "all"}, {"explain": "none", "pre_class": RecomputedPre}):
        other = OnlineTriage(w4, **kwargs)
        other._bound = _no_bound
        assert other._screen_for(True) is None
    assert OnlineTriage(w4, explain="none", compiled=False)._screen_for(True) is None
    assert OnlineTriage(w4, explain="none")._screen_for(False) is None
    assert OnlineTriage(w4, explain="positive")._screen_for(True) is not None


# ---------------------------------------------------------------------- (e) the lean replay

def _found(loop: OnlineTriage, dataset, **kwargs) -> list[tuple]:
    return [
        (d.series, d.commit, d.index, d.probability, d.decided_at)
        for d in loop.replay(dataset, **kwargs)
    ]


def test_a_replay_that_drops_its_states_finds_what_one_that_keeps_them_finds(w4, real_subset):
    # keep_states=False (triage detect's workers) builds no negative decision
    # and sends fresh series' rounds to _round without _decide's checks; the
    # change points (alarms kept after their re-checks) must not move.
    kept = _found(OnlineTriage(w4, explain="none"), real_subset)
    lean = OnlineTriage(w4, explain="none")
    checked = []
    decide = lean._decide
    lean._decide = lambda items, stored: (checked.append(len(items)), decide(items, stored))[1]
    assert _found(lean, real_subset, keep_states=False) == kept
    assert len(kept) >= 15 and not checked and not lean.states
    # A series the loop already knows goes through _decide's checks again:
    # its first commit here is its latest one, so that commit is skipped
    # as re-delivered, as with the states kept.
    first = real_subset.series_ids[0]
    h = real_subset[first]
    ref = OnlineTriage(w4, explain="none")
    for loop in (ref, lean):
        loop.process_one(first, str(h.commits[0]), float(h.values[0]))
    assert _found(lean, real_subset, keep_states=False) == _found(ref, real_subset) and checked


@pytest.mark.parametrize(
    "kwargs",
    [
        {"withdraw_below": 4.0},  # many alarms withdrawn by their re-checks
        {"withdraw_below": 0.0, "recheck_after": 1},
        {"withdraw_below": 4.0, "confirm_after": 0, "min_pre": 0, "threshold": 0.5},
        {"withdraw_below": 4.0, "pre_class": RecomputedPre},  # no screen: every row in full
    ],
)
def test_the_lean_replays_short_path_decides_what_the_round_by_round_loop_decides(w4, real_subset, kwargs):
    # Fresh series in a lean replay take _replay_fresh's short path whenever
    # they have no alarm awaiting its re-check, and _round otherwise; alarms,
    # withdrawals and the commits decided between them must be those of the
    # replay that keeps its states (every commit through _decide and _round).
    kept = OnlineTriage(w4, explain="none", **kwargs)
    lean = OnlineTriage(w4, explain="none", **kwargs)
    withdrawn = []
    screened = lean._screened
    lean._screened = lambda *a: (withdrawn.append(1), screened(*a))[1]
    rounds = []
    round_ = kept._round
    kept._round = lambda items, members, decisions, touched: (
        round_(items, members, decisions, touched),
        rounds.extend(d for d in decisions if d is not None and d.withdrawal is not None),
    )[0]
    found = _found(lean, real_subset, keep_states=False)
    assert found == _found(kept, real_subset) and len(found) >= 10
    # withdraw_below=0 keeps every alarm; 4 noise scales withdraws many
    assert bool(rounds) == (kwargs["withdraw_below"] > 0)
    assert bool(withdrawn) == ("pre_class" not in kwargs)  # the screen runs where it can


@pytest.mark.parametrize("seed", [1, 2])
def test_a_lean_replay_of_synthetic_histories_finds_what_one_that_keeps_states_finds(w4, seed):
    # The default preset resets Pre often (alarms, withdrawals), so many rows
    # have a short Pre that the compiled row declines and the Python path
    # builds, caching Pre's characteristics in the pooled state: a cache
    # left over to the next commit would change later rows.
    dataset = generate(preset_config("default", n_series=60), seed=seed)
    kept = _found(OnlineTriage(w4, explain="none"), dataset)
    assert _found(OnlineTriage(w4, explain="none"), dataset, keep_states=False) == kept and len(kept) >= 20


def test_a_lean_replay_skips_and_rejects_what_the_checked_one_does(w4):
    # A History built directly may hold a commit twice or timestamps that go
    # backwards (dataset_from_long refuses both); those series take
    # _decide's checks, which skip the re-delivered commit or stop the
    # replay with the same message whether states are kept or not.
    rng = np.random.default_rng(3)
    values = np.r_[100 + rng.standard_normal(40), 130 + rng.standard_normal(40)]
    commits = [f"c{i}" for i in range(80)]
    stamps = pd.date_range("2024-01-01", periods=80, freq="D").to_numpy()
    twice = commits.copy()
    twice[41] = twice[40]  # re-delivered as the series' latest commit
    dataset = Dataset([
        History("a", np.array(commits, dtype=object), values, None, stamps),
        History("b", np.array(twice, dtype=object), values, None, stamps),
    ])
    # Its two values differ: the skipped one is named (ConflictingRedelivery).
    with pytest.warns(ConflictingRedelivery, match="series 'b', commit 'c40' re-sent"):
        kept = _found(OnlineTriage(w4, explain="none", min_pre=0), dataset)
    with pytest.warns(ConflictingRedelivery, match="series 'b', commit 'c40' re-sent"):
        assert _found(OnlineTriage(w4, explain="none", min_pre=0), dataset, keep_states=False) == kept
    backwards = stamps.copy()
    backwards[50] = np.datetime64("2023-06-01")
    dataset = Dataset([History("a", np.array(commits, dtype=object), values, None, backwards)])
    messages = []
    for keep in (True, False):
        with pytest.raises(RejectedCommit) as info:
            OnlineTriage(w4, explain="none", min_pre=0).replay(dataset, keep_states=keep)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "out of order" in messages[0] and "c50" in messages[0]
