"""features/level_shift.py: scale-free pair measures, their floors and their independence of window length."""

from __future__ import annotations

import numpy as np
import pytest

from triage.features.level_shift import (
    PAIR_CAP,
    PAIR_COLUMNS,
    pair_block,
    pair_features,
    resolution,
)
from triage.features.matrix import is_feature_column

COL = {c: i for i, c in enumerate(PAIR_COLUMNS)}


def test_columns_are_contract_features():
    assert all(is_feature_column(c) for c in PAIR_COLUMNS)
    assert is_feature_column("det_score") and not is_feature_column("pairing")


def test_scale_free_and_direction_free():
    rng = np.random.default_rng(0)
    pre, after = rng.normal(100, 2, 40), rng.normal(110, 2, 40)
    f = pair_features(pre, after)
    assert np.allclose(f, pair_features(pre * 1e6, after * 1e6))  # units do not matter
    assert f[COL["pair_rel_change"]] == pytest.approx(np.median(after[:PAIR_CAP]) / np.median(pre[-PAIR_CAP:]) - 1)
    assert f[COL["pair_robust_shift"]] > 3 and f[COL["pair_overlap"]] > 0.9
    assert f[COL["pair_after_consistency"]] > 0.9
    # no shift: small values
    g = pair_features(rng.normal(100, 2, 40), rng.normal(100, 2, 40))
    assert g[COL["pair_robust_shift"]] < 1.5 and g[COL["pair_overlap"]] < 0.5


def test_length_cannot_stand_in_for_the_label():
    rng = np.random.default_rng(1)
    short = [pair_features(rng.normal(0, 1, 30) + 50, rng.normal(0.5, 1, 30) + 50) for _ in range(300)]
    long = [pair_features(rng.normal(0, 1, 300) + 50, rng.normal(0.5, 1, 300) + 50) for _ in range(300)]
    # the same shift gives the same distribution whatever the window length (the cap)
    for c in ("pair_welch_d", "pair_robust_shift", "pair_overlap"):
        a, b = np.mean([r[COL[c]] for r in short]), np.mean([r[COL[c]] for r in long])
        assert abs(a - b) < 0.15 * max(a, b), c
    # below the cap, the t statistic is normalised by sqrt(length): an effect size
    d10 = np.mean([pair_features(rng.normal(0, 1, 10), rng.normal(1, 1, 10))[COL["pair_welch_d"]] for _ in range(400)])
    d30 = np.mean([pair_features(rng.normal(0, 1, 30), rng.normal(1, 1, 30))[COL["pair_welch_d"]] for _ in range(400)])
    assert abs(d10 - d30) < 0.2 * d30


def test_mad_floor_from_resolution():
    pre = np.full(20, 4096.0)
    after = np.full(20, 8192.0)
    res = resolution(np.concatenate([pre, after, [4096.0 + 64]]))
    assert res == 64
    f = pair_features(pre, after, res)
    assert np.isfinite(f).all()
    assert f[COL["pair_robust_shift"]] == pytest.approx(4096 / 64)
    assert np.isfinite(f[COL["pair_noise_ratio"]])


def test_short_windows_are_missing_and_block_matches_rows():
    assert np.isnan(pair_features(np.array([1.0]), np.array([2.0, 3.0]))).all()
    x = np.r_[np.ones(30), 2 * np.ones(30)] + np.random.default_rng(2).normal(0, 0.01, 60)
    bounds = [((0, 30), (30, 60)), ((0, 10), (10, 30))]
    block = pair_block(x, bounds)
    assert block.shape == (2, len(PAIR_COLUMNS))
    assert np.allclose(block[0], pair_features(x[:30], x[30:], resolution(x)))


# ---------------------------------------------------------------------- the compiled kernel


def _real_windows(shared_data, n_series: int = 12):
    """(Pre, After) pairs cut from real histories: every 7th commit of a few series of each source."""
    import pandas as pd

    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz", usecols=["series_id", "value"])
    picked = frame.groupby(frame["series_id"].str.split("/").str[0])["series_id"].unique()
    ids = [s for per_source in picked for s in per_source[: max(1, n_series // len(picked))]]
    for sid in ids:
        x = frame.loc[frame["series_id"] == sid, "value"].to_numpy(float)
        for i in range(2, len(x) - 1, 7):
            yield x, x[max(0, i - 40) : i], x[i : i + 1 + i % 6]


def test_kernel_equals_the_numpy_reference_on_real_histories(shared_data):
    from triage.features.level_shift import pair_features_reference

    n = 0
    for x, pre, after in _real_windows(shared_data):
        res = resolution(x)
        u = np.unique(x)
        assert res == (float(np.min(np.diff(u))) if u.size > 1 else 0.0)
        for p, a in ((pre, after), (np.round(pre, 2), np.round(after, 2))):  # rounding makes ties
            got, want = pair_features(p, a, res), pair_features_reference(p, a, res)
            assert np.array_equal(got, want, equal_nan=True), (p, a)
            n += 1
    assert n > 1000


def test_kernel_equals_the_reference_on_ties_constants_and_missing_values():
    from triage.features.level_shift import pair_features_reference

    rng = np.random.default_rng(5)
    cases = [
        (np.full(30, 4096.0), np.full(5, 4096.0)),  # constant, no shift: MAD and floor 0
        (np.full(30, 4096.0), np.full(5, 8192.0)),  # constant windows, a step
        (np.r_[np.zeros(10), -np.zeros(10)], np.array([0.0, -0.0])),  # signed zeros tie; median 0
        (np.round(rng.normal(5, 1, 30)), np.round(rng.normal(6, 1, 5))),  # many ties
        (rng.normal(0, 1, 31), rng.normal(0, 1, 1)),  # one After value: no Welch, no noise ratio
        (np.array([1.0]), np.array([2.0, 3.0])),  # Pre too short: all NaN
        (rng.normal(0, 1, 20), np.array([])),  # no After: all NaN
        (np.r_[rng.normal(0, 1, 20), np.nan], rng.normal(1, 1, 4)),  # NaN: the reference's answer
        (rng.normal(0, 1, 20), np.array([1.0, np.inf, 2.0])),
        (rng.normal(0, 1, 300), rng.normal(1, 1, 200)),  # longer than the kernel takes (cap 0)
    ]
    for pre, after in cases:
        for res in (0.0, 0.5, None):
            for cap in (PAIR_CAP, 0):
                if res is None:
                    p, a = (pre[-cap:], after[:cap]) if cap else (pre, after)
                    floor = resolution(np.concatenate([p, a])) if np.isfinite(np.r_[p, a]).all() else None
                    if floor is None:
                        u = np.unique(np.concatenate([p, a]))
                        floor = float(np.min(np.diff(u))) if u.size > 1 else 0.0
                    want = pair_features_reference(pre, after, floor, cap)
                else:
                    want = pair_features_reference(pre, after, res, cap)
                got = pair_features(pre, after, res, cap)
                assert np.array_equal(got, want, equal_nan=True), (pre, after, res, cap, got, want)
    assert np.isnan(pair_features(np.r_[rng.normal(0, 1, 20), np.nan], rng.normal(1, 1, 4))[0])
