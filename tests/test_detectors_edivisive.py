"""E-Divisive means in Hunter / Apache Otava's form, checked against Otava's published results."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from triage.detectors import EDivisive
from triage.detectors.edivisive import first_pass_pvalue, qhat_candidate, ttest_sides

SHARED = Path(__file__).parents[1].parent / "shared"
TIGERBEETLE = SHARED / "data" / "tigerbeetle.json"

# Apache Otava's tests/tigerbeetle_test.py: (max_pvalue, min_magnitude) -> change points, window 30.
OTAVA_TIGERBEETLE = [
    (0.01, 0.05, [15, 71]),
    (0.05, 0.05, [15, 71]),
    (0.1, 0.05, [10, 11, 15, 71, 363]),
    (0.2, 0.05, [10, 11, 15, 71]),
    (0.1, 0.01, [10, 11, 15, 28, 29, 35, 37, 48, 49, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 206, 212, 260, 265, 268, 278, 282, 363]),
    (0.01, 0.0, [15, 26, 61, 71, 95, 117, 131, 142, 148, 165, 169, 192, 212, 260]),
    (0.001, 0.0, [15, 61, 71, 95, 117, 131, 142, 148, 192, 212, 260]),
    (0.0001, 0.0, [71, 95, 117, 131, 142, 148, 192, 212]),
    (0.00001, 0.0, [71, 95, 131, 192, 212]),
]


@pytest.fixture(scope="module")
def tigerbeetle() -> np.ndarray:
    if not TIGERBEETLE.exists():
        pytest.skip(f"{TIGERBEETLE} is absent (the shared data folder beside the checkout)")
    return np.array(json.loads(TIGERBEETLE.read_text()), dtype=float)


@pytest.mark.shared
def test_tigerbeetle_window30_p001_mag005_gives_15_and_71(tigerbeetle):
    det = EDivisive(window=30, max_pvalue=0.01, min_magnitude=0.05).fit(tigerbeetle)
    assert list(det.indices_) == [15, 71]
    assert all(c.fields["p_value"] < 0.01 and c.fields["magnitude"] > 0.05 for c in det.change_points_)


@pytest.mark.shared
@pytest.mark.parametrize(("p", "mag", "expected"), OTAVA_TIGERBEETLE)
def test_tigerbeetle_matches_every_otava_expectation(tigerbeetle, p, mag, expected):
    assert list(EDivisive(30, p, mag).fit(tigerbeetle).indices_) == expected


@pytest.mark.shared
def test_neighbour_recompute_variant_still_finds_15_and_71(tigerbeetle):
    det = EDivisive(30, 0.01, 0.05, merge_recompute="neighbours").fit(tigerbeetle)
    assert list(det.indices_) == [15, 71]


def _qhat_brute(z: np.ndarray, tau: int, kappa: int) -> float:
    x, y = z[:tau], z[tau:kappa]
    n, m = len(x), len(y)
    cross = sum(abs(a - b) for a in x for b in y)
    wx = sum(abs(a - b) for a, b in combinations(x, 2))
    wy = sum(abs(a - b) for a, b in combinations(y, 2))
    q = 2 / (n + m) * cross
    if n > 1:
        q -= 2 * m / ((n + m) * (n - 1)) * wx
    if m > 1:
        q -= 2 * n / ((n + m) * (m - 1)) * wy
    return q


def test_qhat_candidate_is_the_brute_force_maximum():
    rng = np.random.default_rng(0)
    for L in (2, 3, 7, 15):
        z = rng.normal(0, 1, L)
        z[L // 2 :] += 3
        best = max(
            ((_qhat_brute(z, t, k), t) for t in range(1, L) for k in range(t + 1, L + 1)),
            key=lambda qt: qt[0],
        )
        tau, q = qhat_candidate(z)
        assert q == pytest.approx(best[0])
        assert _qhat_brute(z, tau, max(range(tau + 1, L + 1), key=lambda k: _qhat_brute(z, tau, k))) == pytest.approx(q)


def test_ttest_sides_is_students_t_with_population_sd():
    from scipy import stats

    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([6.0, 7.0, 9.0])
    s = ttest_sides(a, b)
    ref = stats.ttest_ind_from_stats(a.mean(), a.std(), 4, b.mean(), b.std(), 3)
    assert s.pvalue == pytest.approx(ref.pvalue)
    assert s.magnitude() == pytest.approx(max(abs(b.mean() / a.mean() - 1), abs(a.mean() / b.mean() - 1)))
    assert ttest_sides(np.array([1.0]), np.array([2.0])).pvalue == 1.0  # too few points


def test_first_pass_level_is_relaxed_like_otava():
    assert first_pass_pvalue(0.01) == pytest.approx(0.1)
    assert first_pass_pvalue(0.1) == pytest.approx(0.2)
    assert first_pass_pvalue(0.6) == 0.6


def test_weak_change_points_include_final_ones():
    rng = np.random.default_rng(1)
    x = 100 + rng.normal(0, 1, 200)
    x[60:] += 10
    x[140:] -= 3  # 3 %: significant, but below the 5 % magnitude
    det = EDivisive().fit(x)
    assert list(det.indices_) == [60]
    assert {60, 140} <= set(det.weak_change_points_)
    assert {60, 140} <= {c.index for c in EDivisive(min_magnitude=0.02).detect(x)}


def _steps(seed: int, n: int = 260) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 100 + rng.normal(0, 1.5, n)
    for at, d in ((40, 8), (97, -6), (150, 12), (230, 5)):
        x[at:] += d
    return x


@pytest.mark.parametrize("params", [{}, {"max_pvalue": 0.1, "min_magnitude": 0.01}, {"window": 50}])
def test_incremental_update_equals_batch_fit(params):
    x = _steps(2)
    det = EDivisive(**params).fit(x[:60])
    for k in range(60, len(x)):
        det.update(x[k])
        if k % 7 == 0 or k == len(x) - 1:
            batch = EDivisive(**params).fit(x[: k + 1])
            assert list(det.indices_) == list(batch.indices_), k
            assert det.weak_change_points_ == batch.weak_change_points_
    det.update(x[:25])  # several points at once
    assert list(det.indices_) == list(EDivisive(**params).fit(np.r_[x, x[:25]]).indices_)


@pytest.mark.shared
def test_incremental_on_tigerbeetle_reaches_otava_result(tigerbeetle):
    det = EDivisive(30, 0.01, 0.05).fit(tigerbeetle[:40])
    for v in tigerbeetle[40:]:
        det.update(v)
    assert list(det.indices_) == [15, 71]


def test_update_requires_fit():
    with pytest.raises(RuntimeError):
        EDivisive().update([1.0])
