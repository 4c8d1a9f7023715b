"""Reference characteristics: ``tsfeatures`` (0.4.5, the Python port of Hyndman's
R package) wherever it has the characteristic, plain numpy / statsmodels
elsewhere.

This is the slow, obviously-correct side of the property tests that hold
:mod:`triage.features.fast` to the definitions of :mod:`triage.features.catalogue`. Where
``tsfeatures`` has the characteristic it is called as is on the prepared
window; the catalogue's guards for degenerate inputs (flat regressands, exact
fits, prefixes with zero spread) are applied around the call, since there the
package returns NaN, inf or rounding noise.

The Python port lacks ``max_level_shift``, ``max_var_shift``, ``max_kl_shift``
and ``std1st_der``; they are written here from the R package's definitions
(``R/features.R`` of robjhyndman/tsfeatures), loop by loop as R states them,
without the fast version's algebraic shortcuts.

Importing ``tsfeatures`` replaces ``warnings.warn`` with a no-op and changes
``numpy``'s error state for the whole process; :func:`_tsfeatures` undoes both.
It also imports ``antropy``, whose numba functions are compiled at import from
their declared signatures and not cached (12-15 s of every first import);
:func:`_tsfeatures` has numba cache them, as this package's own kernels are.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from triage.features import catalogue


@functools.cache
def _tsfeatures() -> tuple[ModuleType, ModuleType]:
    """Import ``tsfeatures`` once, restoring the global state its import changes."""
    import numba

    warn, showwarning, err = warnings.warn, warnings.showwarning, np.geterr()
    jit, njit = numba.jit, numba.njit
    # antropy does `from numba import jit` while it is imported: the functions it compiles then
    # are cached on disk (a function's source file stamps its cache entry).
    numba.jit, numba.njit = _cached(jit), _cached(njit)
    try:
        import tsfeatures
        import tsfeatures.utils as ts_utils
    finally:
        numba.jit, numba.njit = jit, njit
        warnings.warn = warn
        warnings.showwarning = showwarning
        np.seterr(**err)
    return tsfeatures, ts_utils


def _cached(decorator):
    """numba's ``jit`` / ``njit`` with ``cache=True`` unless the caller says otherwise.

    Where numba finds no folder to cache in (its "cannot cache function"
    RuntimeError), the function is compiled as the caller asked, uncached.
    """

    def compiled(func, args, kwargs):
        try:
            return decorator(*args, cache=True, **kwargs)(func)
        except RuntimeError as exc:
            if "cannot cache" not in str(exc):
                raise
            return decorator(*args, **kwargs)(func)

    @functools.wraps(decorator)
    def with_cache(*args, **kwargs):
        if "cache" in kwargs:
            return decorator(*args, **kwargs)
        if len(args) == 1 and not kwargs and inspect.isfunction(args[0]):  # @jit without arguments
            return compiled(args[0], (), {})
        return lambda func: compiled(func, args, kwargs)

    return with_cache


def max_level_shift(x: np.ndarray, width: int) -> float:
    """Largest absolute difference between the means of consecutive width-``width`` windows.

    R: ``max(abs(diff(roll_mean(x, width), width)))``; 0 when there is no pair
    of windows (``len(x) < 2 * width``).
    """
    n = len(x)
    means = np.array([np.mean(x[i : i + width]) for i in range(n - width + 1)])
    shifts = np.abs(means[width:] - means[:-width])
    return float(shifts.max()) if shifts.size else 0.0


def max_var_shift(x: np.ndarray, width: int) -> float:
    """As :func:`max_level_shift` with sample variances (R ``roll_var``, ``ddof=1``)."""
    n = len(x)
    variances = np.array([np.var(x[i : i + width], ddof=1) for i in range(n - width + 1)])
    shifts = np.abs(variances[width:] - variances[:-width])
    return float(shifts.max()) if shifts.size else 0.0


def bw_nrd0(x: np.ndarray) -> float:
    """R's ``bw.nrd0``: Silverman's rule of thumb with R's fallbacks for zero spread
    (and the catalogue's: an IQR of at most ``IQR_FLOOR`` counts as 0)."""
    hi = float(np.std(x, ddof=1))
    q75, q25 = np.percentile(x, [75, 25])
    iqr = q75 - q25 if q75 - q25 > catalogue.IQR_FLOOR else 0.0  # catalogue: rounding is no spread
    lo = min(hi, iqr / 1.34)
    if lo == 0:
        lo = hi or abs(float(x[0])) or 1.0
    return 0.9 * lo * len(x) ** (-0.2)


def max_kl_shift(x: np.ndarray, width: int) -> float:
    """R ``max_kl_shift`` (see the catalogue): largest increase of the KL divergence
    between kernel densities of consecutive windows; 0 when ``len(x) <= 2 * width``.
    """
    n = len(x)
    if n <= 2 * width:
        return 0.0
    grid = np.linspace(np.min(x), np.max(x), catalogue.KL_GRID)
    step = grid[1] - grid[0]
    bw = bw_nrd0(x)
    floor = np.exp(-0.5 * 38.0**2) / np.sqrt(2 * np.pi)
    dens = np.empty((n, catalogue.KL_GRID))
    for i in range(n):
        dens[i] = np.exp(-0.5 * ((grid - x[i]) / bw) ** 2) / (bw * np.sqrt(2 * np.pi))
    dens = np.maximum(dens, floor)
    # roll_mean(fill = NA, align = "right"): row j averages rows j-width+1 .. j.
    rmean = np.full((n, catalogue.KL_GRID), np.nan)
    for j in range(width - 1, n):
        rmean[j] = dens[j - width + 1 : j + 1].mean(axis=0)
    kl = np.empty(n - width)
    for i in range(n - width):
        terms = rmean[i] * (np.log(rmean[i]) - np.log(rmean[i + width])) * step
        kl[i] = np.nansum(terms)  # R's sum(..., na.rm = TRUE): all-NA rows give 0
    return float(np.max(np.diff(kl)))


def _hurst(z: np.ndarray) -> float:
    ts, ts_utils = _tsfeatures()
    n = z.size
    t = np.arange(1, n + 1)
    y = np.cumsum(z)
    mean_t = y / t
    s_t = np.array([np.sqrt(np.mean((z[: i + 1] - mean_t[i]) ** 2)) for i in range(n)])
    if np.all(s_t[1:] > catalogue.HURST_SD_FLOOR):
        return float(ts.hurst(z.copy())["hurst"])
    # Leading run of (nearly) equal values: the package would divide 0 by 0;
    # the catalogue drops those prefixes from the fit.
    r_t = np.array([np.ptp(y[: i + 1] - t[: i + 1] * mean_t[i]) for i in range(n)])
    keep = (s_t > catalogue.HURST_SD_FLOOR) & (r_t > 0)
    keep[0] = False
    if keep.sum() < 2:
        return 0.5
    return float(np.polyfit(np.log(t[keep]), np.log(r_t[keep] / s_t[keep]), 1)[0])


def _acf_block(v: np.ndarray, lag: int) -> tuple[float, float]:
    """(r_1, sum_{k=1..lag} r_k^2) of ``v`` by ``statsmodels.acf``; zeros when ``v`` is flat."""
    from statsmodels.tsa.stattools import acf

    if catalogue.is_flat(v):
        return 0.0, 0.0
    r = acf(v, nlags=min(lag, v.size - 1), fft=False)
    return float(r[1]), float(np.sum(r[1 : lag + 1] ** 2))


def _independent_columns(X: np.ndarray) -> np.ndarray:
    """Columns kept by the catalogue's collinearity rule, in order (numpy ``lstsq``)."""
    kept: list[int] = []
    for j in range(X.shape[1]):
        col = X[:, j]
        norm0 = np.linalg.norm(col)
        if norm0 == 0:
            continue
        if kept:
            basis = X[:, kept]
            col = col - basis @ np.linalg.lstsq(basis, col, rcond=None)[0]
        if np.linalg.norm(col) > catalogue.COLLINEAR_RTOL * norm0:
            kept.append(j)
    return np.array(kept, dtype=np.int64)


def _exact_rss(X: np.ndarray, y: np.ndarray) -> float:
    """Residual sum of squares of y on the columns of X, in exact rational arithmetic (Gram-Schmidt)."""
    from fractions import Fraction

    def dot(a: list[Fraction], b: list[Fraction]) -> Fraction:
        return sum((u * v for u, v in zip(a, b, strict=True)), Fraction(0))

    basis: list[tuple[list[Fraction], Fraction]] = []
    for j in range(X.shape[1]):
        v = [Fraction(float(x)) for x in X[:, j]]
        for q, qq in basis:
            c = dot(v, q) / qq
            v = [a - c * b for a, b in zip(v, q, strict=True)]
        vv = dot(v, v)
        if vv != 0:
            basis.append((v, vv))
    r = [Fraction(float(x)) for x in y]
    for q, qq in basis:
        c = dot(r, q) / qq
        r = [a - c * b for a, b in zip(r, q, strict=True)]
    return float(dot(r, r))


def _ols_residuals(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    X = X[:, _independent_columns(X)]
    return y - X @ np.linalg.lstsq(X, y, rcond=None)[0]


def _nonlinearity(z: np.ndarray) -> float:
    ts, _ = _tsfeatures()
    n = z.size
    if n <= 5 or catalogue.is_flat(z[1:]) or catalogue.is_flat(z[:-1]):
        return 0.0
    y, xl = z[1:], z[:-1]
    design = np.column_stack([np.ones(n - 1), xl])
    cubic = np.column_stack([design, xl**2, xl**3])
    resid = _ols_residuals(design, y)
    ssr0 = float(np.sum(resid**2))
    if ssr0 <= 1e-12 * np.sum((y - y.mean()) ** 2):
        return 0.0
    cap = 10.0 * np.log(1e10)  # the catalogue's floor SSR1 >= 1e-10 SSR0
    if len(_independent_columns(cubic)) < 4:
        # Exactly collinear powers: tsfeatures' pseudo-inverse returns noise.
        ssr = max(float(np.sum(_ols_residuals(cubic, resid) ** 2)), 1e-10 * ssr0)
        return 10.0 * np.log(ssr0 / ssr)
    stat = float(ts.nonlinearity(z.copy())["nonlinearity"])
    return cap if not np.isfinite(stat) or stat > cap else stat


def _arch_lm(z: np.ndarray) -> float:
    ts, ts_utils = _tsfeatures()
    q = catalogue.arch_lags(z.size)
    sq = (z - z.mean()) ** 2
    target = sq[q:]
    if catalogue.is_flat(target):
        return 0.0
    lagged = ts_utils.embed(sq, q + 1)[:, 1:]
    design = np.column_stack([np.ones(len(target)), lagged])
    if len(_independent_columns(design)) == design.shape[1] and np.linalg.cond(design) <= 1e5:
        return float(ts.arch_stat(z.copy(), lags=q)["arch_lm"])
    # Collinear or ill-conditioned lags (a spike beside near-constant squares):
    # tsfeatures fits with scikit-learn's LinearRegression, which loses digits
    # there (R^2 0.19 where exact rational arithmetic gives 0.69), and numpy's
    # SVD lstsq loses them too when isolating a lag takes a chain of large
    # ratios (rank 9 where the exact rank is 11, R^2 0.035 against 1/19): the
    # oracle fits the catalogue's independent columns in exact arithmetic.
    design = design[:, _independent_columns(design)]
    return 1.0 - _exact_rss(design, target) / _exact_rss(np.ones((len(target), 1)), target)


def _kpss(z: np.ndarray) -> float:
    ts, _ = _tsfeatures()
    n = z.size
    lags = catalogue.bartlett_lags(n)
    e = z - z.mean()
    s_hat = np.sum(e**2) + 2 * sum(
        (1 - k / (lags + 1)) * np.dot(e[k:], e[:-k]) for k in range(1, lags + 1)
    )
    if s_hat / n <= 1e-12:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' p-value interpolation warning
        return float(ts.unitroot_kpss(z.copy())["unitroot_kpss"])


def _pp(z: np.ndarray) -> float:
    """Phillips-Perron Z-alpha by urca's formula on a statsmodels OLS fit.

    Not ``tsfeatures.unitroot_pp``: its ``ur_pp`` computes
    ``s = 1 / (n * sum(res^2))`` where urca has ``sum(res^2) / n`` and then
    ``lambda = (sig - s) / 2`` with ``sig = s + (2/n) sum(w * coprods)``.
    Algebraically ``s`` cancels, but when the residuals are small ``s`` is
    huge and the subtraction loses the digits of ``lambda`` (0.2 % error on a
    spiky window; NaN for an exact AR(1) fit). The formula below is the one
    both packages intend.
    """
    import statsmodels.api as sm

    if catalogue.is_flat(z[1:]) or catalogue.is_flat(z[:-1]):
        return 0.0
    m = z.size - 1
    y, xl = z[1:], z[:-1]
    fit = sm.OLS(y, sm.add_constant(xl, has_constant="add")).fit()
    res = fit.resid
    lags = catalogue.bartlett_lags(z.size)
    weights = 1.0 - np.arange(1, lags + 1) / (lags + 1)
    coprods = np.array([np.dot(res[i + 1 :], res[: m - i - 1]) for i in range(lags)])
    lam = float(np.sum(weights * coprods)) / m
    ybar2 = float(np.sum((y - y.mean()) ** 2)) / m**2
    return float(m * (fit.params[1] - 1.0) - lam / ybar2)


def window_characteristics(x: np.ndarray) -> np.ndarray:
    """All characteristics of one raw window, the slow way.

    Parameters
    ----------
    x : ndarray of float64, shape (n0,)

    Returns
    -------
    ndarray of float64, shape (len(catalogue.CHARACTERISTICS),)
        In :data:`triage.features.catalogue.CHARACTERISTICS` order.
    """
    from statsmodels.stats.diagnostic import acorr_ljungbox

    x = np.asarray(x, dtype=np.float64)
    z = catalogue.prepare(x)
    if z is None:
        return catalogue.degenerate_values(x.size)
    ts, _ = _tsfeatures()
    n = z.size
    lag = catalogue.lag_for(n)
    dz = np.diff(z)
    acf1, acf10 = _acf_block(z, lag)
    d_acf1, d_acf10 = _acf_block(dz, lag)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entropy = float(ts.entropy(z.copy())["entropy"])
    values = {
        "crossing_points": float(ts.crossing_points(z.copy())["crossing_points"]),
        "entropy": entropy,
        "max_level_shift": max_level_shift(z, lag),
        "serial_correlation": float(
            acorr_ljungbox(z, lags=[lag], boxpierce=True)["bp_stat"].iloc[0]
        ),
        "stability": float(ts.stability(z.copy(), freq=lag)["stability"]),
        "lumpiness": float(ts.lumpiness(z.copy(), freq=lag)["lumpiness"]),
        "hurst": _hurst(z),
        "flat_spots": float(ts.flat_spots(z.copy())["flat_spots"]),
        "x_acf1": acf1,
        "x_acf10": acf10,
        "diff1_acf1": d_acf1,
        "diff1_acf10": d_acf10,
        "max_var_shift": max_var_shift(z, lag),
        "max_kl_shift": max_kl_shift(z, lag),
        "nonlinearity": _nonlinearity(z),
        "arch_lm": _arch_lm(z),
        "std1st_der": float(np.std(dz, ddof=1)),
        "unitroot_kpss": _kpss(z),
        "unitroot_pp": _pp(z),
        "series_length": float(x.size),
    }
    return np.array([values[name] for name in catalogue.CHARACTERISTICS], dtype=np.float64)


def many_window_characteristics(windows: Sequence[np.ndarray]) -> np.ndarray:
    """Characteristics of many raw windows, shape (len(windows), len(CHARACTERISTICS))."""
    out = np.empty((len(windows), catalogue.N_CHARACTERISTICS))
    for i, x in enumerate(windows):
        out[i] = window_characteristics(x)
    return out
