"""triage.features.incremental.PreState against the batch characteristics of triage.features.fast."""

from __future__ import annotations

import base64
import json
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.features import catalogue
from triage.features.incremental import BOUNDED, EXACT, PAPER_CHARACTERISTICS, PreState
from triage.features.pre_state_slots import SLOT_N_LOWER
from triage.features.recomputed import batch_features
from triage.features.row import resolve_names

RTOL, ATOL = 1e-7, 1e-9


def assert_matches(got: dict, expected: dict, where: str) -> None:
    assert list(got) == list(expected), where
    for col in got:
        assert np.isclose(got[col], expected[col], rtol=RTOL, atol=ATOL), (
            f"{where}: {col} incremental {got[col]!r} batch {expected[col]!r}"
        )


# Performance histories: a level, noise on a grid (ties and flat runs happen,
# as with rounded measurements), occasional steps.
@st.composite
def streams(draw, max_size=90):
    level = draw(st.sampled_from([0.0, 1.0, 250.0, 1e4, -30.0]))
    step = draw(st.sampled_from([1e-3, 0.1, 1.0, 7.0]))
    ticks = draw(st.lists(st.integers(-20, 20), min_size=0, max_size=max_size))
    values = level + step * np.array(ticks, dtype=np.float64)
    if draw(st.booleans()) and len(values) > 4:
        at = draw(st.integers(1, len(values) - 1))
        values[at:] += draw(st.sampled_from([-40.0, 5.0, 100.0])) * step
    return values


def run_and_compare(values: np.ndarray, names, horizon: int) -> PreState:
    state = PreState(names, horizon=horizon, series_id="s")
    for i, x in enumerate(values):
        assert state.n == i
        expected = batch_features(values[:i], x, names, horizon)
        assert_matches(state.features_one(x), expected, f"commit {i} of {values.tolist()}")
        state.learn_one(x)
    return state


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=streams(), horizon=st.integers(20, 40))
def test_full_catalogue_equals_batch_on_random_streams(values, horizon):
    run_and_compare(values, None, horizon)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=streams(max_size=70), data=st.data())
def test_resets_restart_pre_as_the_windows_define(values, data):
    """After reset() at commit c, Pre of later commits is [c + 1, ...], as in triage.features.windows."""
    names = list(PAPER_CHARACTERISTICS)
    state = PreState(names, horizon=24, series_id="s")
    cps = set(data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=4)))
    start = 0
    for i, x in enumerate(values):
        expected = batch_features(values[start:i], x, names, 24)
        assert_matches(state.features_one(x), expected, f"commit {i}, Pre from {start}")
        if i in cps:
            state.reset()
            start = i + 1
        else:
            state.learn_one(x)
        assert state.n == i + 1 - start
    assert state.index == len(values)


def test_feature_set_columns_in_their_own_order():
    columns = ["norm_sd_pre", "pre_hurst", "after_entropy", "pre_crossing_points", "norm_mean_after"]
    chars, cols = resolve_names(columns)
    assert cols == columns
    assert chars == ("crossing_points", "entropy", "hurst", "norm_mean", "norm_sd")
    rng = np.random.default_rng(3)
    values = np.round(50 + rng.standard_normal(80), 2)
    state = run_and_compare(values, columns, 32)
    assert state.features_array(50.0).shape == (5,)


def test_characteristic_names_expand_to_catalogue_columns():
    _, cols = resolve_names(["hurst", "norm_mean", "crossing_points"])
    assert cols == catalogue.feature_columns(["hurst", "norm_mean", "crossing_points"])
    with pytest.raises(ValueError, match="unknown characteristic or feature column 'pre_bogus'"):
        PreState(["pre_bogus"])
    with pytest.raises(ValueError, match="horizon"):
        PreState(horizon=10)


@pytest.mark.parametrize("horizon", [48, 200])  # 200: numpy's pairwise sum splits windows > 128
def test_long_pre_exact_stays_exact_and_bounded_uses_the_last_horizon(horizon):
    rng = np.random.default_rng(7)
    n = 400
    values = np.round(1000 + np.cumsum(rng.standard_normal(n)) + 3 * rng.standard_normal(n), 1)
    values[250:] += 25
    state = PreState(None, horizon=horizon).learn_many(values[:-1])
    got = state.features_one(values[-1])
    assert_matches(got, batch_features(values[:-1], values[-1], None, horizon), "n=399")
    # The bounded ones really are on the last `horizon` commits: on all of Pre they differ.
    whole = batch_features(values[:-1], values[-1], None, horizon=10_000)
    differs = [c for c in BOUNDED if not np.isclose(got[f"pre_{c}"], whole[f"pre_{c}"], rtol=RTOL, atol=ATOL)]
    assert "crossing_points" in differs and "entropy" in differs
    assert all(np.isclose(got[f"pre_{c}"], whole[f"pre_{c}"], rtol=RTOL, atol=ATOL) for c in EXACT)


def test_hurst_exact_on_a_trend_whose_hull_keeps_every_point():
    t = np.arange(300, dtype=np.float64)
    values = 10 + 0.01 * t * t + np.sin(t)  # convex cumulative sum: the lower hull keeps all points
    state = PreState(["hurst"]).learn_many(values)
    expected = batch_features(values, 0.0, ["hurst"])
    assert_matches(state.features_one(0.0), expected, "trend")
    # The documented cost: on such a trend the hull keeps a point per commit.
    assert state._f[SLOT_N_LOWER] > 250


def test_after_window_is_the_constant_single_point():
    state = PreState(["entropy", "hurst", "flat_spots", "series_length"]).learn_many([1.0, 2.0, 4.0, 3.0])
    for x in (-5.0, 2.5, 1e6):
        row = state.features_one(x)
        assert row["after_hurst"] == 0.5 and row["after_entropy"] == 0.0
        assert row["after_flat_spots"] == 4.0 and row["after_series_length"] == 1.0


def test_serialisation_round_trip_continues_identically():
    rng = np.random.default_rng(11)
    values = np.round(200 + rng.standard_normal(500) * 2, 3)
    a = PreState(None, horizon=32, series_id="db/insert").learn_many(values[:300])
    a.reset()
    a.learn_many(values[301:400])
    b = PreState.from_dict(json.loads(json.dumps(a.to_dict())))
    assert (b.n, b.index, b.series_id, b.columns_) == (a.n, a.index, a.series_id, a.columns_)
    for x in values[400:]:
        np.testing.assert_array_equal(a.features_array(x), b.features_array(x))
        a.learn_one(x)
        b.learn_one(x)


def test_state_of_the_paper_characteristics_stays_small():
    """The product's goal: <= 2 KB of JSON per series, whatever the length of Pre (noisy history)."""
    rng = np.random.default_rng(5)
    state = PreState(list(PAPER_CHARACTERISTICS), series_id="s")
    sizes = []
    for _ in range(5):
        state.learn_many(np.round(100 + rng.standard_normal(1000), 2))
        sizes.append(len(json.dumps(state.to_dict())))
    assert max(sizes) <= 2048, sizes
    assert sizes[-1] - sizes[0] < 200, sizes  # flat in n


def test_bad_values_name_the_series_and_index():
    state = PreState(["hurst"], series_id="perf/x").learn_many([1.0, 2.0])
    state.reset()  # consumes commit 2
    with pytest.raises(ValueError, match=r"series 'perf/x', index 3: value nan is not finite"):
        state.learn_one(float("nan"))
    with pytest.raises(ValueError, match=r"series 'perf/x', index 3: value inf is not finite"):
        state.features_one(float("inf"))
    with pytest.raises(ValueError, match="not a number"):
        state.learn_one("abc")
    assert state.n == 0  # nothing was appended


def test_from_dict_rejects_foreign_data():
    good = PreState(["stability"]).learn_many([1.0, 2.0, 3.0]).to_dict()
    with pytest.raises(ValueError, match="version"):
        PreState.from_dict({**good, "v": 99})
    with pytest.raises(ValueError, match="not a PreState dict"):
        PreState.from_dict({"v": 1})
    truncated = base64.b64encode(zlib.compress(zlib.decompress(base64.b64decode(good["data"]))[:-8])).decode()
    with pytest.raises(ValueError, match="does not match its counts"):
        PreState.from_dict({**good, "data": truncated})
    with pytest.raises(ValueError, match="not a PreState dict"):
        PreState.from_dict({**good, "data": "not base64!"})


def test_online_rows_equal_features_extract_at_window_0():
    """The contract with the batch matrix: the online row of commit p, Pre since the last
    change point, is triage.features.extract's window-0 row of candidate p."""
    from triage.features.extract import candidate_features

    rng = np.random.default_rng(2)
    values = np.round(np.r_[10 + rng.standard_normal(60), 14 + rng.standard_normal(50)], 2)
    cps = [40, 75]
    state = PreState(None, horizon=64, series_id="s")
    for p, x in enumerate(values):
        batch = candidate_features(values, p, [c for c in cps if c < p], window=0)
        np.testing.assert_allclose(state.features_array(x), batch, rtol=RTOL, atol=ATOL, err_msg=f"commit {p}")
        state.reset() if p in cps else state.learn_one(x)


def _real_short_windows(shared_data):
    import pandas as pd

    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz", usecols=["series_id", "value"])
    for k, (_, x) in enumerate(frame.groupby("series_id", sort=False)["value"]):
        x = x.to_numpy(float)[: 200 if k % 3 == 0 else 60]
        for i in range(0, len(x) - 21, 11):
            yield x[i : i + 1 + i % 21]
        if len(x) > 20:
            yield np.round(x[:12], 1)  # ties
        yield np.full(7, x[0])  # a constant window


def test_compiled_short_windows_equal_fast_on_real_histories(shared_data):
    """After (and a short Pre) from scratch: catalogue.prepare bit for bit, then fast's numbers to rounding."""
    from triage.features import fast, pre_state_kernels
    from triage.features.incremental import window_characteristics

    n = 0
    for x in _real_short_windows(shared_data):
        z_numpy = catalogue.prepare(x)
        z = pre_state_kernels.prepare_window(x)
        if z_numpy is None:
            assert z.size == 0
        else:
            assert np.array_equal(z, z_numpy)
        np.testing.assert_allclose(window_characteristics(x), fast.window_characteristics(x), rtol=1e-9, atol=1e-12)
        n += 1
    assert n > 1500


def test_a_copied_state_is_independent_and_continues_identically():
    import copy

    rng = np.random.default_rng(11)
    state = PreState(None).learn_many(100 + rng.standard_normal(80))
    twin = copy.deepcopy(state)
    after = np.array([101.0, 99.5, 100.2])
    np.testing.assert_array_equal(twin.features_array(after), state.features_array(after))
    state.learn_many([150.0, 151.0])
    assert twin.n == 80 and state.n == 82
    np.testing.assert_array_equal(
        twin.learn_many([150.0, 151.0]).features_array(after), state.features_array(after)
    )
