"""features/candidate_context.py: how a candidate stands among its run's other candidates."""

from __future__ import annotations

import numpy as np
import pytest

from triage.core.history import Dataset, History
from triage.features.candidate_context import CONTEXT_COLUMNS, RADIUS, context_block, local_shift
from triage.features.extract import extract_features
from triage.features.matrix import is_feature_column

COL = {c: i for i, c in enumerate(CONTEXT_COLUMNS)}


def _step(n: int = 120, at: int = 60, size: float = 5.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 100 + rng.normal(0, 1, n)
    x[at:] += size
    return x


def test_columns_are_contract_features():
    assert all(is_feature_column(c) for c in CONTEXT_COLUMNS)


def test_the_change_dominates_its_duplicates():
    x = _step()
    block = context_block(x, np.array([57, 60, 63, 100]))
    # the candidate on the change has the largest fixed-window shift of its cluster
    assert block[1, COL["ctx_dominance"]] == 1.0
    assert block[0, COL["ctx_dominance"]] < 0.8 and block[2, COL["ctx_dominance"]] < 0.8
    assert list(block[:, COL["ctx_neighbours"]]) == [2, 2, 2, 0]
    # a lone candidate in a quiet stretch is its own strongest, with a small shift
    assert block[3, COL["ctx_dominance"]] == 1.0
    assert block[3, COL["ctx_local_shift"]] < 2 < block[1, COL["ctx_local_shift"]]


def test_scale_free_and_short_prefix_is_missing():
    x = _step(seed=1)
    a = context_block(x, np.array([1, 60]))
    b = context_block(x * 1e6 + 0.0, np.array([1, 60]))
    assert np.isnan(a[0, COL["ctx_local_shift"]])  # one commit before it: undefined
    assert a[1, COL["ctx_local_shift"]] == pytest.approx(b[1, COL["ctx_local_shift"]], rel=1e-6)
    assert local_shift(x, 60) == pytest.approx(a[1, COL["ctx_local_shift"]])
    assert context_block(x, np.array([], dtype=np.int64)).shape == (0, len(CONTEXT_COLUMNS))


def test_extract_features_appends_the_block_over_the_runs_candidates():
    x = _step(seed=2)
    data = Dataset([History("s", np.array([f"c{i}" for i in range(len(x))]), x, np.full(len(x), ""))])
    idx = np.array([40, 58, 60, 61])
    m = extract_features(data, candidates={"s": idx}, candidate_windows=True, pair=True, context=True)
    assert list(m.columns[-len(CONTEXT_COLUMNS):]) == list(CONTEXT_COLUMNS)
    assert np.allclose(m[list(CONTEXT_COLUMNS)].to_numpy(), context_block(x, idx), equal_nan=True)
    assert m.loc[m["index"] == 60, "ctx_neighbours"].item() == 2  # 58 and 61 are within RADIUS
    assert RADIUS >= 3


def test_series_columns_read_the_candidate_against_its_own_series():
    x = _step(n=200, at=100, size=6.0, seed=3)
    block = context_block(x, np.array([100, 150]))
    change, quiet = block[0], block[1]
    # the change's fixed-window shift is among the largest of the series; a quiet commit's is ordinary
    assert change[COL["ctx_shift_pct"]] > 0.95 > quiet[COL["ctx_shift_pct"]]
    assert change[COL["ctx_shift_vs_typical"]] > 3 * quiet[COL["ctx_shift_vs_typical"]]
    # noise 1 commit to commit: the step of 6 reads about 6 on the diff scale
    assert 3 < change[COL["ctx_shift_diffnoise"]] < 9
    assert change[COL["ctx_far_shift"]] > 3
    # the new level holds after the change, and the old one was flat before it
    assert change[COL["ctx_persist_after"]] == pytest.approx(1.0, abs=0.3)
    assert change[COL["ctx_pre_drift"]] == pytest.approx(0.0, abs=0.3)


def test_an_excursion_that_returns_does_not_persist():
    x = _step(n=200, at=100, size=0.0, seed=4)
    x[100:110] += 6.0  # ten commits up, then back
    block = context_block(x, np.array([100]))
    assert block[0, COL["ctx_persist_after"]] == pytest.approx(0.0, abs=0.3)
    assert block[0, COL["ctx_local_shift"]] > 3


def test_shift_profile_matches_local_shift_everywhere():
    from triage.features.candidate_context import shift_profile
    from triage.features.level_shift import resolution

    x = _step(n=80, seed=5)
    prof = shift_profile(x, RADIUS, resolution(x))
    assert prof.shape == (80 - 2 * RADIUS + 1,)
    want = [local_shift(x, p, RADIUS, resolution(x)) for p in range(RADIUS, 80 - RADIUS + 1)]
    assert np.allclose(prof, want)
    assert shift_profile(x[: 2 * RADIUS], RADIUS).shape == (0,)


def test_short_series_leave_the_series_columns_missing():
    x = _step(n=12, at=6, seed=6)
    block = context_block(x, np.array([6]))
    assert np.isnan(block[0, COL["ctx_shift_pct"]]) and np.isnan(block[0, COL["ctx_persist_after"]])
    assert np.isfinite(block[0, COL["ctx_shift_diffnoise"]])


def test_a_level_seen_before_and_a_returning_level_are_marked():
    rng = np.random.default_rng(7)
    x = 100 + rng.normal(0, 0.5, 300)
    x[50:90] += 5.0   # the series sat 5 higher once before
    x[150:] += 5.0    # then steps up at 150 to that level again
    x[250:] -= 5.0    # and comes back down at 250
    block = context_block(x, np.array([150, 250]))
    seen, back = COL["ctx_after_seen_before"], COL["ctx_pre_returns"]
    assert block[0, seen] < 0.2      # After at 150 is the level of 50-90
    assert block[0, back] < 0.2      # Pre's level of 150 comes back after 250
    fresh = context_block(_step(n=200, at=100, size=6.0, seed=8), np.array([100]))
    assert fresh[0, seen] > 0.7 and fresh[0, back] > 0.7
