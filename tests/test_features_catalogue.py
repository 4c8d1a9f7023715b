"""The catalogue's definitions on hand-computed cases (triage.features.catalogue, reference shifts)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from triage.features import catalogue, fast, reference

PAPER = (
    "crossing_points",
    "entropy",
    "max_level_shift",
    "serial_correlation",
    "stability",
    "lumpiness",
    "hurst",
)


def test_names_and_columns():
    assert len(catalogue.CHARACTERISTICS) >= 20
    assert len(set(catalogue.CHARACTERISTICS)) == len(catalogue.CHARACTERISTICS)
    assert catalogue.CHARACTERISTICS[: len(PAPER)] == PAPER
    cols = catalogue.feature_columns()
    k = len(catalogue.CHARACTERISTICS)
    assert cols[:k] == [f"pre_{n}" for n in catalogue.CHARACTERISTICS]
    assert cols[k : 2 * k] == [f"after_{n}" for n in catalogue.CHARACTERISTICS]
    assert cols[2 * k :] == ["norm_mean_pre", "norm_mean_after", "norm_sd_pre", "norm_sd_after"]
    # A subset keeps catalogue order whatever the order asked for.
    assert catalogue.feature_columns(["norm_sd", "hurst", "entropy"]) == [
        "pre_entropy",
        "pre_hurst",
        "after_entropy",
        "after_hurst",
        "norm_sd_pre",
        "norm_sd_after",
    ]
    with pytest.raises(ValueError, match="unknown characteristic"):
        catalogue.feature_columns(["entropy", "no_such_thing"])


def test_prepare_repeats_short_windows_and_standardises():
    z = catalogue.prepare(np.array([1.0, 3.0]))
    assert z.shape == (4,)
    np.testing.assert_allclose(z, np.array([-1, 1, -1, 1]) / np.std([-1, 1, -1, 1], ddof=1))
    z3 = catalogue.prepare(np.array([0.0, 1.0, 5.0]))
    np.testing.assert_allclose(z3, catalogue.prepare(np.array([0.0, 1.0, 5.0, 0.0])))
    z = catalogue.prepare(np.arange(10.0) * 1e300)  # no overflow in the standard deviation
    assert np.all(np.isfinite(z)) and np.isclose(np.std(z, ddof=1), 1.0)
    assert catalogue.prepare(np.array([])) is None
    assert catalogue.prepare(np.array([4.2])) is None
    assert catalogue.prepare(np.full(9, 0.1)) is None
    assert catalogue.prepare(np.array([1.0, 1.0 + 1e-13])) is None  # below the flat tolerance
    assert catalogue.prepare(np.array([1.0, 1.0 + 1e-6])) is not None


@pytest.mark.parametrize("impl", [fast, reference])
def test_degenerate_windows(impl):
    empty = impl.window_characteristics(np.array([]))
    one = impl.window_characteristics(np.array([3.5]))
    const = impl.window_characteristics(np.full(12, -2.0))
    for vec in (empty, one, const):
        assert vec.shape == (catalogue.N_CHARACTERISTICS,) and np.all(np.isfinite(vec))
    i = catalogue.INDEX
    assert (
        empty[i["series_length"]] == 0 and empty[i["hurst"]] == 0.5 and empty[i["flat_spots"]] == 0
    )
    assert one[i["series_length"]] == 1 and one[i["flat_spots"]] == 4
    assert const[i["series_length"]] == 12 and const[i["flat_spots"]] == 12
    others = [n for n in catalogue.CHARACTERISTICS if n not in ("series_length", "flat_spots", "hurst")]
    for vec in (empty, one, const):
        assert all(vec[i[n]] == 0.0 for n in others)


@pytest.mark.parametrize("impl", [fast, reference])
def test_alternating_window_by_hand(impl):
    # z alternates +-c; median 0; every step crosses; r_1 = -(n-1)/n;
    # blocks of width l = 2 all have mean 0 and equal variance.
    x = np.array([0.0, 1.0] * 4)
    v = dict(zip(catalogue.CHARACTERISTICS, impl.window_characteristics(x), strict=True))
    assert v["crossing_points"] == 7
    assert v["x_acf1"] == pytest.approx(-7 / 8)
    # r_2 = (n-2)/n; Box-Pierce n * (r_1^2 + r_2^2)
    assert v["x_acf10"] == pytest.approx((7 / 8) ** 2 + (6 / 8) ** 2)
    assert v["serial_correlation"] == pytest.approx(8 * ((7 / 8) ** 2 + (6 / 8) ** 2))
    assert v["stability"] == pytest.approx(0.0, abs=1e-12)
    assert v["lumpiness"] == pytest.approx(0.0, abs=1e-12)
    assert v["flat_spots"] == 1
    assert v["series_length"] == 8
    # All power at the Nyquist frequency: spectral entropy 0.
    assert v["entropy"] == pytest.approx(0.0, abs=1e-12)
    z = catalogue.prepare(x)
    assert v["std1st_der"] == pytest.approx(np.std(np.diff(z), ddof=1))


def test_normalised_moments_by_hand():
    pre = np.array([10.0, 12.0])
    after = np.array([20.0, 30.0])  # merged range [10, 30]
    got = catalogue.normalised_moments(pre, after)
    # pre -> [0, 0.1], after -> [0.5, 1.0]
    np.testing.assert_allclose(
        got, [0.05, 0.75, np.std([0, 0.1], ddof=1), np.std([0.5, 1.0], ddof=1)]
    )
    np.testing.assert_array_equal(catalogue.normalised_moments(np.array([]), np.array([7.0])), [0, 0, 0, 0])
    np.testing.assert_allclose(
        catalogue.normalised_moments(np.array([]), np.array([1.0, 3.0])), [0, 0.5, 0, np.sqrt(0.5)]
    )
    np.testing.assert_array_equal(
        catalogue.normalised_moments(np.full(3, 2.0), np.full(2, 2.0)), [0, 0, 0, 0]
    )


def test_lag_rule():
    assert [catalogue.lag_for(n) for n in (4, 10, 11, 500)] == [2, 2, 10, 10]
    assert [catalogue.arch_lags(n) for n in (4, 10, 26, 500)] == [1, 4, 12, 12]
    assert catalogue.bartlett_lags(100) == 4 and catalogue.bartlett_lags(4) == 1


# ---------------------------------------------------------------- R definitions


def test_max_level_shift_by_hand():
    x = np.array([0.0, 0.0, 1.0, 1.0, 5.0, 5.0])
    # roll_mean width 2: [0, .5, 1, 3, 5]; diff lag 2: |1-0|, |3-.5|, |5-1|
    assert reference.max_level_shift(x, 2) == pytest.approx(4.0)
    assert reference.max_level_shift(np.array([1.0, 2.0, 3.0]), 2) == 0.0  # no pair of windows


def test_max_var_shift_by_hand():
    x = np.array([0.0, 2.0, 0.0, 0.0, 4.0, 0.0])
    # roll_var width 2 (ddof=1): [2, 2, 0, 8, 8]; diff lag 2: 2, 6, 8
    assert reference.max_var_shift(x, 2) == pytest.approx(8.0)
    assert reference.max_var_shift(np.array([1.0, 2.0, 3.0]), 2) == 0.0


def test_bw_nrd0_by_hand():
    x = np.array([0.0, 1.0, 1.0])
    # sd = 0.57735; IQR (type 7) = 1 - 0.5; min(sd, 0.5 / 1.34) = 0.37313
    assert reference.bw_nrd0(x) == pytest.approx(0.9 * (0.5 / 1.34) * 3 ** (-0.2))
    assert reference.bw_nrd0(np.array([2.0, 2.0])) == pytest.approx(0.9 * 2.0 * 2 ** (-0.2))


def test_max_kl_shift_width_one_closed_form():
    # Width 1: rows are single kernels N(0, bw), N(1, bw), N(1, bw) on the grid
    # [0, 1]. kl_1 = KL(N0 || N1) = sum_g phi0(g) (1 - 2g) / (2 bw^2) * step,
    # kl_2 = 0, so max(diff(kl)) = -kl_1.
    x = np.array([0.0, 1.0, 1.0])
    bw = 0.9 * (0.5 / 1.34) * 3 ** (-0.2)
    g = np.linspace(0, 1, 100)
    kl1 = np.sum(norm.pdf(g, 0, bw) * (1 - 2 * g) / (2 * bw**2)) * (g[1] - g[0])
    assert reference.max_kl_shift(x, 1) == pytest.approx(-kl1, rel=1e-9)


def test_max_kl_shift_width_two_alignment():
    # Width 2, x = [0, 0, 0, 0, 1, 1]: right-aligned means D_2..D_6 (1-based) are
    # N0, N0, N0, (N0 + N1)/2, N1. kl_1 = 0 (R's NA fill), kl_2 = KL(D2||D4) = 0,
    # kl_3 = KL(N0 || mix), kl_4 = KL(N0 || N1), result max(kl_3, kl_4 - kl_3).
    x = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    bw = reference.bw_nrd0(x)
    g = np.linspace(0, 1, 100)
    step = g[1] - g[0]
    n0, n1 = norm.pdf(g, 0, bw), norm.pdf(g, 1, bw)
    kl3 = np.sum(n0 * np.log(n0 / ((n0 + n1) / 2))) * step
    kl4 = np.sum(n0 * (1 - 2 * g) / (2 * bw**2)) * step
    assert reference.max_kl_shift(x, 2) == pytest.approx(max(kl3, kl4 - kl3), rel=1e-9)
    assert fast.max_kl_shift(x, 2) == pytest.approx(max(kl3, kl4 - kl3), rel=1e-9)


def test_max_kl_shift_periodic_is_zero_and_short_is_zero():
    x = np.array([0.0, 1.0] * 6)  # every width-2 window holds {0, 1}
    assert reference.max_kl_shift(x, 2) == pytest.approx(0.0, abs=1e-12)
    assert reference.max_kl_shift(np.arange(4.0), 2) == 0.0  # n <= 2 * width (R: NA)


def test_the_reference_has_numba_cache_what_tsfeatures_imports_and_compiles(tmp_path, monkeypatch):
    # antropy (imported by tsfeatures) compiles its functions at import, uncached: 12-15 s each time.
    import numba

    seen: list[dict] = []

    def fake_jit(*args, **kwargs):
        seen.append(dict(kwargs))
        if kwargs.get("cache") and "nowhere" in args:
            raise RuntimeError("cannot cache function 'f': no locator available for file 'x.py'")
        return lambda func: func

    jit = reference._cached(fake_jit)

    def f(x):
        return x

    assert jit(f) is f and jit("f8(f8)", nopython=True)(f) is f and jit("f8(f8)", cache=False)(f) is f
    assert seen == [{"cache": True}, {"cache": True, "nopython": True}, {"cache": False}]
    seen.clear()
    assert jit("nowhere", nopython=True)(f) is f  # no folder to cache in: compiled uncached
    assert seen == [{"cache": True, "nopython": True}, {"nopython": True}]
    with pytest.raises(RuntimeError, match="other"):
        reference._cached(lambda *a, **k: (_ for _ in ()).throw(RuntimeError("other")))("sig")(f)

    # and the real import: antropy's functions cached, numba's decorators given back afterwards
    before = (numba.jit, numba.njit)
    reference._tsfeatures()
    import antropy.utils

    assert (numba.jit, numba.njit) == before
    # (the suite imports tsfeatures only through reference._tsfeatures)
    assert type(antropy.utils._linear_regression._cache).__name__ == "FunctionCache"
