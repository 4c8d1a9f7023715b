"""Perfherder's moving-window t-test and the hybrid tests of the Mozilla study."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from triage.detectors import HybridTest, Perfherder
from triage.detectors.windowed import HYBRID_TESTS, perfherder_t, welch_pvalue


def test_perfherder_t_uses_linearly_weighted_means():
    back = np.array([2.0, 1.0, 1.0])  # nearest first
    fore = np.array([5.0, 4.0])
    w1 = np.array([3, 2, 1]) / 3
    w2 = np.array([2, 1]) / 2
    m1 = (back @ w1) / w1.sum()
    m2 = (fore @ w2) / w2.sum()
    v1 = np.sum((back - m1) ** 2) / 2
    v2 = np.sum((fore - m2) ** 2) / 1
    assert perfherder_t(back, fore) == pytest.approx(abs(m2 - m1) / math.sqrt(v1 / 3 + v2 / 2))
    assert perfherder_t(back, back) == 0.0
    assert perfherder_t(np.ones(3), np.full(3, 2.0)) == math.inf
    assert perfherder_t(np.array([]), fore) == 0.0


def test_back_window_grows_while_quiet_and_resets_after_a_hit():
    rng = np.random.default_rng(0)
    x = 100 + rng.normal(0, 1, 120)
    x[60:] += 20
    stat, back, fore = Perfherder().scan(x)
    assert back[1] == 1 and back[12] == 12
    assert back[30] == 24  # long quiet stretch: up to max_back_window
    hits = np.flatnonzero(stat > 7)
    assert hits.size and 60 in hits
    last = hits[-1]
    assert back[last + 1] == 12  # reset to min_back_window right after a hit
    assert back[last + 14] == 13  # then grows by one per quiet revision
    assert fore[-1] == 1 and fore[100] == 12


def test_perfherder_needs_full_windows():
    x = np.r_[np.full(5, 10.0), np.full(30, 20.0)]  # only 5 commits before the step
    assert Perfherder().detect(x) == []
    assert [c.index for c in Perfherder(min_back_window=5).detect(x)] == [5]


def test_perfherder_keeps_highest_t_among_adjacent_candidates():
    rng = np.random.default_rng(2)
    x = 100 + rng.normal(0, 1, 200)
    x[100:] += 10
    stat, _, _ = Perfherder().scan(x)
    assert (stat[95:106] > 7).sum() > 3  # a run of candidates around the step
    cps = Perfherder().detect(x)
    assert [c.index for c in cps] == [100]
    assert cps[0].fields["t"] == pytest.approx(stat[100])


def test_perfherder_magnitude_filter_is_two_percent():
    rng = np.random.default_rng(3)
    x = 100 + rng.normal(0, 0.05, 100)
    x[50:] += 1.5  # 1.5 %: huge t, below the alert threshold
    stat, _, _ = Perfherder().scan(x)
    assert stat[50] > 50
    assert Perfherder().detect(x) == []
    cps = Perfherder(magnitude=1.0).detect(x)
    assert [c.index for c in cps] == [50]
    assert cps[0].fields["rel_change_pct"] == pytest.approx(1.5, abs=0.1)


def test_welch_pvalue_matches_scipy():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.normal(0, 1, 12), rng.normal(0.7, 2, 24)
        assert welch_pvalue(a, b) == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


@pytest.mark.parametrize("test", sorted(HYBRID_TESTS))
def test_hybrid_pvalues_are_probabilities_and_degenerate_windows_are_no_evidence(test):
    rng = np.random.default_rng(5)
    p = HYBRID_TESTS[test](rng.normal(0, 1, 12), rng.normal(0, 1, 12))
    assert 0.0 <= p <= 1.0
    assert HYBRID_TESTS[test](np.ones(1), np.ones(12)) == 1.0  # fewer than 2 values


def test_hybrid_detects_step_and_scores_minus_log10_p():
    rng = np.random.default_rng(6)
    x = 100 + rng.normal(0, 1, 150)
    x[75:] += 6
    cps = HybridTest("welch").detect(x)
    assert [c.index for c in cps] == [75]
    assert cps[0].score == pytest.approx(-math.log10(cps[0].fields["p_value"]))
    assert cps[0].fields["test"] == "welch"


def test_underflowed_pvalues_on_adjacent_revisions_keep_only_the_last():
    det = HybridTest()
    stat = np.ones(20)
    stat[[5, 6, 7]] = 0.0  # p underflowed on three adjacent revisions
    stat[12] = 1e-4
    assert det._break_ties([5, 6, 7, 12], stat) == [7, 12]
    stat[13] = 1e-5  # adjacent but different p: not a tie, both kept
    assert det._break_ties([12, 13], stat) == [12, 13]


def test_hybrid_rejects_unknown_test():
    with pytest.raises(ValueError, match="unknown test"):
        HybridTest("anova").fit(np.arange(30.0))
