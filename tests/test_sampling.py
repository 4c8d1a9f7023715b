"""Active revision sampling (GP over the commit axis) and culprit search."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Kernel

from triage.sampling import KERNELS, Brownian, HistoryGP, find_culprit


def test_brownian_kernel_is_min_covariance_with_the_right_gradient():
    x = np.array([[0.5], [1.0], [2.0]])
    k = Brownian(2.0)
    assert isinstance(k, Kernel) and not k.is_stationary()
    assert np.allclose(k(x), 2.0 * np.minimum(x, x.T))
    assert np.allclose(k.diag(x), [1.0, 2.0, 4.0])
    K, grad = k(x, eval_gradient=True)
    eps = 1e-6  # d/dlog(variance), numerically
    assert np.allclose(grad[:, :, 0], (Brownian(2.0 * np.exp(eps))(x) - K) / eps, atol=1e-5)
    assert "variance" in k.get_params()


@pytest.mark.parametrize("kernel", KERNELS)
def test_gp_recovers_a_smooth_history_from_a_few_commits(kernel):
    n = 200
    t = np.arange(n)
    y = 100 + 5 * np.sin(t / 40)
    pos = np.arange(0, n, 20)
    mean, std = HistoryGP(kernel).fit(n, pos, y[pos]).predict()
    assert np.mean(np.abs(mean - y) / y) < 0.01
    assert std.shape == (n,) and np.all(std > 0)


def test_next_positions_fill_the_widest_gaps_first_never_measured_ones():
    rng = np.random.default_rng(0)
    n = 101
    y = 10 + rng.standard_normal(n) * 0.1
    pos = [0, 10, 100]
    picks = HistoryGP().fit(n, pos, y[pos]).next_positions(3)
    assert len(set(picks)) == 3 and not set(picks) & set(pos)
    assert 40 <= picks[0] <= 70  # the middle of the 10..100 gap
    assert all(10 < p < 100 for p in picks)


def test_band_is_narrow_at_measured_commits_and_wide_between():
    n = 100
    pos = np.array([0, 50, 99])
    y = np.r_[np.full(50, 1.0), np.full(50, 2.0)]
    mean, std = HistoryGP().fit(n, pos, y[pos]).predict()
    assert std[25] > std[50] and std[75] > std[99]


def test_gp_refuses_repeated_positions():
    with pytest.raises(ValueError, match="each commit once"):
        HistoryGP().fit(10, [1, 1], [2.0, 3.0])


def _step(n, c, size, noise, seed):
    rng = np.random.default_rng(seed)
    return np.where(np.arange(n) >= c, size, 0.0) + rng.standard_normal(n) * noise


@pytest.mark.parametrize("strategy", ["bisect", "bayes"])
def test_culprit_found_exactly_without_noise_in_log2_measurements(strategy):
    for gap in (2, 7, 16, 63):
        for c in (1, gap // 2 or 1, gap):
            y = _step(gap + 1, c, 1.0, 0.0, 0)
            s = find_culprit(0, gap, lambda i, y=y: y[i], 0.0, 1.0, 0.01, strategy=strategy)
            assert s.culprit == c, (gap, c, s)
            assert len(s.measured) <= np.ceil(np.log2(gap)) + (strategy == "bayes"), (gap, c, s.measured)


def test_bayes_survives_noise_better_than_bisect_within_the_same_budget():
    wins = {"bisect": 0, "bayes": 0}
    for seed in range(60):
        rng = np.random.default_rng(seed)
        gap = int(rng.integers(8, 64))
        c = int(rng.integers(1, gap + 1))
        y = _step(gap + 1, c, 3.0, 1.0, seed)
        lim = int(np.log2(gap)) + 1
        for strategy in wins:
            s = find_culprit(0, gap, lambda i, y=y: y[i], 0.0, 3.0, 1.0, strategy=strategy, max_measurements=lim)
            wins[strategy] += abs(s.culprit - c) <= 1
    assert wins["bayes"] >= wins["bisect"] and wins["bayes"] >= 45, wins


def test_culprit_input_errors():
    with pytest.raises(ValueError, match="after"):
        find_culprit(5, 5, lambda i: 0.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="equal"):
        find_culprit(0, 5, lambda i: 0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="strategy"):
        find_culprit(0, 5, lambda i: 0.0, 0.0, 1.0, 1.0, strategy="guess")
    assert find_culprit(3, 4, lambda i: 0.0, 0.0, 1.0, 1.0).culprit == 4
