"""Pre states side by side in a PrePool (the lean replay's rounds).

A pooled ``PreState`` (views of the pool's rows) updated by
``PrePool.learn`` and described by ``PrePool.rows_into`` gives the rows and
the summaries of a plain ``PreState`` fed the same values by ``learn_one``
and ``row_into``, bit for bit: on real histories, on a short and a flat Pre
(rows the compiled row declines), through a hull that outgrows the pool, and
after a member is reset and put back (``attach``).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.features import pre_state_kernels
from triage.features.incremental import PrePool, PreState
from triage.online.loop import OnlineTriage
from triage.training.model_files import load_model

ONLINE_W4 = Path(__file__).resolve().parents[1] / "models" / "online-w4"
K = 4


@pytest.fixture(scope="module")
def names() -> list[str]:
    return list(load_model(ONLINE_W4).feature_names_)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


def _series(shared_data) -> list[np.ndarray]:
    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz", usecols=["series_id", "value"])
    real = [g["value"].to_numpy(dtype=np.float64)[:160] for _, g in frame.groupby("series_id", sort=True)]
    real = [v for v in real if v.size >= 60][::40][:6]
    t = np.arange(160, dtype=np.float64)
    convex = 100.0 + 0.01 * t**2  # cumulative sums whose hull gains a point at every commit
    flat = np.full(160, 7.0)
    steps = np.where(t < 50, 10.0, 12.0) + 1e-3 * np.sin(t)
    return [*real, convex, flat, steps]


@pytest.mark.parametrize("defer", [(), OnlineTriage.SCREEN_STAGES[0]])
def test_pooled_states_give_the_rows_and_summaries_of_plain_ones(names, shared_data, defer):
    series = _series(shared_data)
    lengths = np.array([v.size for v in series])
    starts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
    values = np.concatenate(series)
    plain = [PreState(names, series_id=f"s{g}") for g in range(len(series))]
    pool = PrePool([PreState(names, series_id=f"s{g}") for g in range(len(series))])
    members = np.arange(len(series), dtype=np.int64)
    declined_any = False
    reset_at = 90  # member 0 is reset here and put back, as after an alarm
    for i in range(K, int(lengths.max())):
        X = np.full((members.size, len(names)), np.nan)
        asked = members[pool.n(members) >= 1]
        declined = pool.rows_into(asked, asked, values, starts, i, K, X, defer)
        declined_any = declined_any or declined.size > 0
        python = asked[declined]
        built = asked[~np.isin(asked, python)]
        for g in asked.tolist():
            after = np.ascontiguousarray(series[g][i - K : i + 1])
            np.testing.assert_array_equal(_bits(X[g]), _bits(plain[g].features_array(after, defer)))
        # the characteristics left out are completed stage by stage, as the screen does
        left = defer
        for stage in [*OnlineTriage.SCREEN_STAGES[1:], ()] if defer else []:
            pool.complete_into(built, built, X, left, stage)
            for g in python.tolist():
                pool.pres[g].complete_into(X[g], stage)
            for g in asked.tolist():
                after = np.ascontiguousarray(series[g][i - K : i + 1])
                np.testing.assert_array_equal(_bits(X[g]), _bits(plain[g].features_array(after, stage)))
            left = stage
        for g in asked.tolist():
            pool.forget(g)
        if i == reset_at:
            pool.pres[0].reset()
            pool.attach(0, pool.pres[0])
            plain[0].reset()
            pool.attach(1, pool.pres[1])  # handed back unchanged (a series whose alarm was re-checked)
            learners = members[1:]
        else:
            learners = members
        pool.learn(learners, values, starts, i, K)
        for g in learners.tolist():
            plain[g].learn_one(series[g][i - K])
    assert declined_any, "no row was left to the Python path (short or flat Pre)"
    assert pool.hu.shape[1] > 16, "the hulls never outgrew the pool"
    for g, p in enumerate(plain):
        pooled = pool.pres[g]
        assert np.shares_memory(pooled._f, pool.f)
        for attr in ("_f", "_first", "_ring"):
            np.testing.assert_array_equal(_bits(getattr(pooled, attr)), _bits(getattr(p, attr)))
        for attr in ("_hu", "_hl"):
            n = getattr(p, attr).shape[0]
            rows = min(n, getattr(pooled, attr).shape[0])
            np.testing.assert_array_equal(getattr(pooled, attr)[:rows], getattr(p, attr)[:rows])
        # what leaves a member (an alarm's copy) is its own state
        twin = copy.deepcopy(pooled)
        assert not np.shares_memory(twin._f, pool.f)
        assert twin.to_dict() == p.to_dict() | {"index": twin.to_dict()["index"]}


def test_round_kernels_are_cached_under_the_key_of_the_row_they_call():
    for kernel in (pre_state_kernels.round_rows, pre_state_kernels.round_learn, pre_state_kernels.round_complete):
        cells = [c.cell_contents for c in kernel.py_func.__closure__]
        assert cells == [pre_state_kernels._sources_digest(pre_state_kernels._ROW_SOURCES)]


def test_a_pool_refuses_members_of_different_configurations(names):
    with pytest.raises(ValueError, match="one configuration"):
        PrePool([PreState(names), PreState(names, horizon=80)])


def test_a_pool_refuses_to_complete_rows_to_leave_out_more(names):
    pool = PrePool([PreState(names)])
    X = np.zeros((1, len(names)))
    at = np.zeros(1, dtype=np.int64)
    with pytest.raises(ValueError, match="leaves out more"):
        pool.complete_into(at, at, X, OnlineTriage.SCREEN_STAGES[1], OnlineTriage.SCREEN_STAGES[0])
