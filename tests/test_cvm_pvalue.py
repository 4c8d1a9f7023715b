"""hybrid_cvm's Cramer-von Mises p-value: scipy's ``cramervonmises_2samp(a, b).pvalue`` bit for bit, fast.

``triage.detectors.windowed.cvm_pvalue`` computes Anderson's rank statistic
exactly (4U as an integer, mid-ranks for ties), counts the exact null
distribution once per pair of sizes and memoises p-values on the statistic.
These tests hold it to scipy (equality, not closeness) on every size 2-30,
on ties, constant windows and real windows, and its exact distribution to
brute-force enumeration.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from triage.detectors import HybridTest, windowed


def scipy_p(a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.cramervonmises_2samp(a, b).pvalue)


@pytest.fixture
def empty_caches():
    windowed._CVM_CACHE.clear()
    windowed.cvm_null_tail.cache_clear()
    yield
    windowed._CVM_CACHE.clear()


def test_statistic_equals_scipys_for_every_size_2_to_30_with_and_without_ties():
    rng = np.random.default_rng(3)
    for m, n in itertools.product(range(2, 31), repeat=2):
        # one tie-free pair and one on a coarse grid (many ties, mid-ranks)
        for a, b in (
            (rng.normal(size=m), rng.normal(0.5, 1, size=n)),
            (np.round(rng.normal(size=m)), np.round(rng.normal(0.3, 1, size=n))),
        ):
            u4 = windowed.cvm_u4(a, b)
            t = (u4 / 4) / (m * n * (m + n)) - (4 * m * n - 1) / (6 * (m + n))
            ref = stats.cramervonmises_2samp(a, b, method="asymptotic").statistic
            assert t == pytest.approx(ref, rel=1e-13, abs=1e-13), (m, n, a, b)


def test_statistic_is_invariant_to_order_within_each_window():
    rng = np.random.default_rng(4)
    a, b = np.round(rng.normal(size=17), 1), np.round(rng.normal(size=12), 1)
    assert windowed.cvm_u4(a, b) == windowed.cvm_u4(rng.permutation(a), rng.permutation(b))


@pytest.mark.parametrize("m,n", [(2, 2), (3, 5), (4, 4), (6, 3), (7, 7), (5, 8)])
def test_exact_null_distribution_matches_brute_force_enumeration(m, n):
    # Definition: under H0 every set of ranks of the first sample is equally
    # likely; the p-value of an observed U is the share of rank sets with U >= it.
    N = m + n
    us = []
    for ranks in itertools.combinations(range(1, N + 1), m):
        rest = sorted(set(range(1, N + 1)) - set(ranks))
        ux = sum((r - i) ** 2 for i, r in enumerate(ranks, 1))
        uy = sum((r - j) ** 2 for j, r in enumerate(rest, 1))
        us.append(4 * (m * ux + n * uy))
    us = np.array(us)
    assert len(us) == math.comb(N, m)
    for u4 in np.unique(us):
        assert windowed.cvm_exact_pvalue(m, n, int(u4)) == pytest.approx(np.mean(us >= u4), rel=1e-15)


def _pairs(rng: np.random.Generator, m: int, n: int):
    yield rng.normal(size=m), rng.normal(1.0, 1, size=n)  # tie-free, shifted
    yield rng.integers(0, 3, m).astype(float), rng.integers(0, 4, n).astype(float)  # heavy ties
    yield np.full(m, 5.0), np.full(n, 5.0)  # both constant, equal: one big tie
    yield np.full(m, 1.0), np.full(n, 2.0)  # both constant, apart: the extreme statistic
    yield np.r_[np.full(m - 1, 1.0), 3.0], rng.normal(1, 0.1, size=n)  # a constant-ish window


@pytest.mark.parametrize(
    "m,n",
    [(2, 2), (2, 12), (3, 7), (11, 12), (12, 12), (13, 2), (19, 20), (20, 12), (20, 20), (21, 12), (24, 12), (30, 30), (12, 29)],
)
def test_pvalue_is_scipys_bit_for_bit(empty_caches, m, n):
    rng = np.random.default_rng(m * 100 + n)
    for a, b in _pairs(rng, m, n):
        ref = scipy_p(a, b)
        assert windowed.cvm_pvalue(a, b) == ref, (a, b)
        assert windowed.cvm_pvalue(a, b) == ref  # the memoised answer too
        assert windowed.HYBRID_TESTS["cvm"](a, b) == (1.0 if math.isnan(ref) else ref)


def test_memoised_hits_return_what_scipy_returns_for_the_other_windows(empty_caches):
    # Two-valued windows share statistics often: the second window with a
    # key is answered from the memo and must still be scipy's p for *it*.
    rng = np.random.default_rng(7)
    seen, hits = set(), 0
    for _ in range(80):
        m, n = int(rng.integers(11, 14)), 12
        a, b = rng.integers(0, 2, m).astype(float), rng.integers(0, 2, n).astype(float)
        key = (m, n, windowed.cvm_u4(a, b))
        hits += key in seen
        seen.add(key)
        assert windowed.cvm_pvalue(a, b) == scipy_p(a, b)
    assert hits >= 20


def test_nan_windows_go_to_scipy_and_read_as_no_evidence():
    a, b = np.array([1.0, np.nan, 2.0]), np.array([3.0, 4.0, 5.0])
    assert math.isnan(windowed.cvm_pvalue(a, b))
    assert windowed.HYBRID_TESTS["cvm"](a, b) == 1.0


def test_memo_is_bounded(monkeypatch, empty_caches):
    monkeypatch.setattr(windowed, "_CVM_CACHE_MAX", 5)
    rng = np.random.default_rng(8)
    for _ in range(40):
        windowed.cvm_pvalue(rng.normal(size=6), rng.normal(size=6))
    assert 1 <= len(windowed._CVM_CACHE) <= 5


@pytest.fixture
def real_series(shared_data):
    # The file's first series (one value per commit, re-runs averaged as
    # benchmarks/real_data.load_real does); reading its head keeps this fast.
    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz", nrows=6000)
    series = []
    for _, rows in frame.groupby("series_id", sort=False):
        values = rows.groupby("commit", sort=False)["value"].mean().to_numpy(dtype=np.float64)
        if len(values) >= 300:
            series.append(values)
    assert len(series) >= 2, "expected two long series at the head of histories.csv.gz"
    return series[:2]


def _stretch_with_both_outcomes(x: np.ndarray, length: int = 70) -> np.ndarray:
    """The first ``length``-commit stretch whose scan has a p < 0.05 and a p > 0.5."""
    for start in range(0, len(x) - length, 10):
        p, *_ = HybridTest(test="cvm").scan(x[start : start + length])
        if (p < 0.05).any() and (p[1:] > 0.5).any():
            return x[start : start + length]
    raise AssertionError("no stretch with both outcomes")


def test_hybrid_cvm_scan_on_real_histories_is_unchanged(real_series, monkeypatch, empty_caches):
    # The change points are a function of the series and these p-values
    # (benchmarks/bench_detectors.py --cvm-real compares them on 20 whole series).
    # Stretches of 70 commits: windows of every back size 1-24 (the scan's own
    # growth) at scipy's ~20 ms a window.
    for x in map(_stretch_with_both_outcomes, real_series):
        new_p, *_ = HybridTest(test="cvm").scan(x)
        monkeypatch.setitem(windowed.HYBRID_TESTS, "cvm", windowed._pvalue(scipy_p))
        old_p, *_ = HybridTest(test="cvm").scan(x)
        monkeypatch.undo()
        assert np.array_equal(new_p, old_p)
