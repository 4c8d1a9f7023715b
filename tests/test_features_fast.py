"""triage.features.fast against triage.features.reference (tsfeatures) on many kinds of windows.

Tolerance: 1e-6 relative, with an absolute floor of 1e-8 for values near 0
(characteristics are computed on standardised windows, so their natural scale
is 1; differences of sums that cancel to ~0 carry ~1e-15 absolute noise).
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.core.values import MIN_ABS
from triage.features import catalogue, fast, reference

RTOL = 1e-6
ATOL = 1e-8

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def _warm():
    # Import tsfeatures and compile the kernel once, outside the examples.
    fast.window_characteristics(np.arange(30.0) ** 1.5)
    reference.window_characteristics(np.arange(30.0) ** 1.5)


def assert_agree(x: np.ndarray) -> None:
    got = fast.window_characteristics(x)
    want = reference.window_characteristics(x)
    assert got.shape == want.shape == (catalogue.N_CHARACTERISTICS,)
    assert np.all(np.isfinite(got)), dict(zip(catalogue.CHARACTERISTICS, got, strict=True))
    bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL)
    assert not bad.any(), {
        catalogue.CHARACTERISTICS[i]: (float(got[i]), float(want[i])) for i in np.flatnonzero(bad)
    } | {"window": x.tolist()}


# Usable values only (triage.core.values): the loaders and the online loop refuse
# 0 < |x| < 1e-100, where squared deviations underflow and no characteristic
# is defined (e.g. [1/3, -1/3, 0, 0, 0, 6.7e-134] gave 0 / 0 in arch_lm).
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False).filter(
    lambda v: v == 0.0 or abs(v) >= MIN_ABS
)


@settings(SETTINGS, max_examples=60)
@given(st.lists(finite, min_size=0, max_size=40))
def test_random_floats(values):
    assert_agree(np.array(values, dtype=np.float64))


@settings(SETTINGS, max_examples=40)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=40))
def test_few_distinct_values(values):
    # Ties, repeated levels, collinear regressions, runs of equal values.
    assert_agree(np.array(values, dtype=np.float64))


@settings(SETTINGS, max_examples=25)
@given(st.lists(finite, min_size=0, max_size=5))
def test_tiny_windows(values):
    assert_agree(np.array(values, dtype=np.float64))


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="found by a random draw of hypothesis (2026-11-29): the "
                   "prepared window's lagged values differ by 1.6e-10 of their scale, so unitroot_pp's OLS slope has "
                   "a condition number near 1e10; the closed form (fast) and statsmodels (reference) give -8578584168 "
                   "and -8578593303, 1.06e-6 apart, beyond the 1e-6 the other windows keep")
def test_a_tiny_window_whose_lag_is_all_but_flat():
    assert_agree(np.array([0.0, 0.0, -6.103515625e-05, 0.0, -392696.375]))


@settings(SETTINGS, max_examples=15)
@given(finite, st.integers(0, 60))
def test_constant_windows(value, n):
    x = np.full(n, value)
    got = fast.window_characteristics(x)
    np.testing.assert_array_equal(got, catalogue.degenerate_values(n))
    assert_agree(x)


@st.composite
def noisy(draw, min_len, max_len):
    """A realistic performance window: level, noise, optional step, trend and spikes."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(min_len, max_len))
    rng = np.random.default_rng(seed)
    level = rng.uniform(1, 1e5)
    x = level + rng.normal(0, level * rng.uniform(1e-3, 0.1), n)
    if draw(st.booleans()):
        x[rng.integers(0, n) :] += level * rng.uniform(-0.3, 0.3)
    if draw(st.booleans()):
        x += np.linspace(0, level * rng.uniform(-0.1, 0.1), n)
    if draw(st.booleans()):
        x = np.round(x, int(rng.integers(0, 3)))  # coarse timer resolution: ties
    return x


@st.composite
def spiky(draw, min_len, max_len):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(min_len, max_len))
    rng = np.random.default_rng(seed)
    # Spikes of 10 to 1e6 times the noise, or on an exactly flat base.
    x = rng.normal(0, 1, n) * draw(st.sampled_from([0.0, 1e-2, 1.0]))
    k = int(rng.integers(1, 4))
    x[rng.integers(0, n, k)] += rng.choice([-1, 1], k) * 10.0 ** rng.uniform(1, 4, k)
    return x


@settings(SETTINGS, max_examples=40)
@given(noisy(4, 80))
def test_realistic_windows(x):
    assert_agree(x)


@settings(SETTINGS, max_examples=30)
@given(spiky(4, 120))
def test_spiky_windows(x):
    assert_agree(x)


@settings(SETTINGS, max_examples=8)
@given(noisy(300, 700))
def test_long_windows(x):
    assert_agree(x)


@settings(SETTINGS, max_examples=30)
@given(noisy(4, 120), st.integers(0, 9))
def test_window_lengths_around_the_lag_switch(x, cut):
    # l switches from 2 to 10 at n = 11; blocks, shifts and KL switch at 2l.
    assert_agree(x[: 9 + cut])
    assert_agree(x[: 19 + cut])


def test_many_matches_one_by_one():
    rng = np.random.default_rng(3)
    windows = [rng.normal(size=n) for n in (0, 1, 3, 11, 57)]
    batch = fast.many_window_characteristics(windows)
    for row, x in zip(batch, windows, strict=True):
        np.testing.assert_array_equal(row, fast.window_characteristics(x))


def test_ill_conditioned_window_matches_exact_arithmetic():
    """One spike, then noise 1e-7 of its size: tsfeatures' ur_pp loses lambda's
    digits here (its s = 1/(n sum u^2) cancels catastrophically: -19.0 instead of
    -22.9); fast agrees with exact rational arithmetic."""
    from fractions import Fraction

    rng = np.random.default_rng(11)
    x = np.r_[-11937.8, rng.normal(0, 1e-3, 19)]
    z = catalogue.prepare(x)
    q = [Fraction(float(v)) for v in z]
    y, xl, m = q[1:], q[:-1], len(q) - 1
    xm, ym = sum(xl) / m, sum(y) / m
    alpha = sum((a - xm) * (b - ym) for a, b in zip(xl, y, strict=True)) / sum(
        (a - xm) ** 2 for a in xl
    )
    res = [b - ym - alpha * (a - xm) for a, b in zip(xl, y, strict=True)]
    lags = catalogue.bartlett_lags(len(z))
    lam = (
        sum(
            (1 - Fraction(i + 1, lags + 1)) * sum(res[t] * res[t - i - 1] for t in range(i + 1, m))
            for i in range(lags)
        )
        / m
    )
    exact = float(m * (alpha - 1) - lam / (sum((b - ym) ** 2 for b in y) / m**2))
    got = fast.window_characteristics(x)[catalogue.INDEX["unitroot_pp"]]
    assert got == pytest.approx(exact, rel=1e-8)


def test_ill_conditioned_arch_matches_exact_arithmetic():
    """A spike beside squares that vary by ~1e-5 of their size: the lag design has
    condition number ~1e6; fast's R^2 agrees with exact rational arithmetic
    (tsfeatures' scikit-learn fit gives 0.19 on windows like this)."""
    from fractions import Fraction

    rng = np.random.default_rng(0)
    x = rng.normal(0, 1e-2, 10)
    x[8] = 3734.3
    z = catalogue.prepare(x)
    q = catalogue.arch_lags(z.size)
    zz = [Fraction(float(v)) for v in z]
    mu = sum(zz) / len(zz)
    sq = [(v - mu) ** 2 for v in zz]
    y = sq[q:]
    rows = [[Fraction(1)] + [sq[q + r - k] for k in range(1, q + 1)] for r in range(len(y))]
    k = q + 1
    # Normal equations solved exactly (Gauss-Jordan on Fractions).
    M = [
        [sum(row[a] * row[b] for row in rows) for b in range(k)]
        + [sum(row[a] * t for row, t in zip(rows, y, strict=True))]
        for a in range(k)
    ]
    for i in range(k):
        piv = next(r for r in range(i, k) if M[r][i] != 0)
        M[i], M[piv] = M[piv], M[i]
        for r in range(k):
            if r != i and M[r][i] != 0:
                f = M[r][i] / M[i][i]
                M[r] = [a - f * b for a, b in zip(M[r], M[i], strict=True)]
    beta = [M[i][k] / M[i][i] for i in range(k)]
    res = [
        t - sum(a * b for a, b in zip(row, beta, strict=True))
        for row, t in zip(rows, y, strict=True)
    ]
    ym = sum(y) / len(y)
    exact = float(1 - sum(r * r for r in res) / sum((t - ym) ** 2 for t in y))
    assert fast.window_characteristics(x)[catalogue.INDEX["arch_lm"]] == pytest.approx(exact, rel=1e-8)
    assert reference.window_characteristics(x)[catalogue.INDEX["arch_lm"]] == pytest.approx(exact, rel=1e-8)


@numba.njit(error_model="numpy")
def _logs(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = fast._log(x[i])
    return out


def test_log_is_within_one_ulp_of_the_c_library():
    """fast._log (vectorisable, used by max_kl_shift) against np.log over every
    magnitude max_kl_shift meets: densities from the dnorm(38) floor (a
    subnormal) to far above 1, and the edges of its argument reduction."""
    rng = np.random.default_rng(0)
    edges = [np.finfo(float).tiny, 5e-324, 7.7e-315, 0.5, 1.0, 2.0, 0.5**0.5, 2.0**0.5, 1e300]
    x = np.concatenate(
        [
            np.exp(rng.uniform(-744.0, 690.0, 100_000)),
            rng.uniform(0.5, 2.0, 100_000),
            np.nextafter(np.array(edges[3:]), 0.0),
            np.nextafter(np.array(edges[3:]), np.inf),
            edges,
        ]
    )
    got, want = _logs(x), np.log(x)
    assert np.all(np.abs(got - want) <= np.spacing(np.abs(want)))
    assert _logs(np.array([1.0]))[0] == 0.0
    # Mostly the same number: a one-ulp difference is the exception.
    assert np.mean(got == want) > 0.9


def _real_windows(shared_data: Path, width: int = 64, every: int = 307):
    import pandas as pd

    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz")
    for _, x in frame.groupby("series_id", sort=False)["value"]:
        x = x.to_numpy(float)
        for i in range(0, len(x) - width, every):
            z = catalogue.prepare(x[i : i + width])
            if z is not None:
                yield z


def test_max_kl_shift_on_real_windows_equals_the_reference_to_rounding(shared_data):
    """The online Pre's 64-commit windows of the real histories: the vectorised
    logarithms keep max_kl_shift within rounding of tsfeatures' definition
    (measured: at most 2.3e-14 relative, as before them)."""
    n = 0
    for z in _real_windows(shared_data):
        want = reference.max_kl_shift(z, 10)
        assert fast.max_kl_shift(z, 10) == pytest.approx(want, rel=1e-12, abs=1e-15)
        n += 1
    assert n > 300


def test_bounded_characteristics_are_the_single_kernels(shared_data):
    """One call for the six kernels the online Pre takes on its last commits: the
    same numbers as one call each, and only the requested ones written."""
    kernels = {
        "flat_spots": fast.flat_spots,
        "max_kl_shift": lambda z: fast.max_kl_shift(z, 10),
        "nonlinearity": fast.nonlinearity,
        "arch_lm": fast.arch_lm,
        "unitroot_kpss": fast.kpss,
        "unitroot_pp": fast.pp,
    }
    assert sorted(fast.BOUNDED_POSITIONS) == sorted(catalogue.INDEX[name] for name in kernels)
    rng = np.random.default_rng(5)
    for k, z in enumerate(_real_windows(shared_data, every=997)):
        want = np.zeros(catalogue.N_CHARACTERISTICS, dtype=np.bool_)
        asked = [name for name in kernels if k % 3 == 0 or rng.random() < 0.5]
        for name in asked:
            want[catalogue.INDEX[name]] = True
        out = np.full(catalogue.N_CHARACTERISTICS, -7.0)
        fast.bounded_characteristics(z, 10, want, out)
        for name, kernel in kernels.items():
            assert out[catalogue.INDEX[name]] == (kernel(z) if name in asked else -7.0), name
        assert np.all(out[~np.isin(np.arange(out.size), fast.BOUNDED_POSITIONS)] == -7.0)
