r"""The catalogue of time-series characteristics computed on one window.

Bauer et al. (ICPE 2022) describe the Pre and After windows of a candidate
commit with characteristics from Hyndman's R package ``tsfeatures`` (after
Wang, Smith & Hyndman 2006, "Characteristic-based clustering for time series
data"). This module is the single definition of what each characteristic
means here; :mod:`triage.features.reference` (``tsfeatures`` 0.4.5, the Python port,
plus straightforward numpy where it lacks one) and :mod:`triage.features.fast`
(numba) both compute exactly these definitions and are tested against each
other.

Preparing a window
------------------
Let ``x`` be the raw window, ``n0 = len(x)``.

1. **Empty** (``n0 = 0``): every characteristic takes its *empty* value below.
2. **Short** (``1 <= n0 < 4``): ``x`` is repeated cyclically to length 4
   (``[a] -> [a, a, a, a]``, ``[a, b] -> [a, b, a, b]``,
   ``[a, b, c] -> [a, b, c, a]``), as the published reference code of the paper
   does, so that lags and regressions are defined. ``n = max(n0, 4)``.
3. **Constant**: when ``max(x) - min(x) <= 1e-10 * max|x|`` (performance
   measurements never carry ten significant digits, so a smaller spread is
   rounding, not signal) every characteristic takes its *constant* value.
   A single point is constant.

   Empty and constant values (:func:`degenerate_values`): every
   characteristic 0, except ``hurst = 0.5`` (no memory), ``series_length =
   n0`` and, for a constant window, ``flat_spots = max(n0, 4)`` (every point
   in one interval). Two and three points are repeated and computed normally.
4. Otherwise ``z = (x - mean x) / sd x`` (``sd`` with ``ddof=1``): the
   standardisation ``tsfeatures()`` applies by default (``scale=TRUE``), so
   every characteristic is scale-free and comparable across benchmarks. The
   level of the windows enters only through the ``norm_*`` pair features.

``l = 10 if n > 10 else 2`` is the lag / block width of the window (the
paper's reference code uses lag 10 when the window has more than 10 points,
else 2); R ``tsfeatures`` uses 10 for non-seasonal data whatever the length.

Characteristics (column order = :data:`CHARACTERISTICS`)
--------------------------------------------------------
All are computed on ``z`` (length ``n``). ``r_k(v)`` is the sample
autocorrelation ``sum_{t<m-k} d_t d_{t+k} / sum_t d_t^2`` with
``d = v - mean(v)``, ``m = len(v)``; ``r_k := 0`` for ``k >= m`` and for a
flat ``v`` (spread <= 1e-10 of its magnitude).

``crossing_points`` [paper]
    Number of ``t`` where ``z_t <= median(z)`` differs from
    ``z_{t+1} <= median(z)``. Same as R.
``entropy`` [paper]
    Spectral (Shannon) entropy of the normalised one-sided periodogram
    ``P_k`` of ``z`` (``k = 0 .. n//2``; doubled except DC and, for even ``n``,
    Nyquist): ``-sum P_k log2 P_k / log2(n//2 + 1)``. This is the Python
    port's definition (``antropy.spectral_entropy``); R ``tsfeatures`` uses
    ``ForeCA::spectral_entropy`` on an AR spectrum estimate instead, so values
    differ from R. Constant: 0.
``max_level_shift`` [paper]
    ``max_i |mean(z[i+l : i+2l]) - mean(z[i : i+l])|`` over consecutive
    non-overlapping windows of width ``l`` (R's ``roll_mean`` then
    ``diff(lag = l)``); 0 when ``n < 2l`` (R gives 0 there too). Not in the
    Python port; written from the R definition.
``serial_correlation`` [paper]
    Box-Pierce statistic ``n * sum_{k=1..l} r_k(z)^2``.
``stability`` [paper]
    Variance (``ddof=1``) of the means of the ``n // l`` full tiled blocks of
    width ``l``; 0 when ``n < 2l``. The Python port drops a trailing partial
    block, as here; R's ``seq_len(n / l)`` may keep it.
``lumpiness`` [paper]
    Variance (``ddof=1``) of the block variances (``ddof=1``), blocks as in
    ``stability``; 0 when ``n < 2l``.
``hurst`` [paper]
    Rescaled-range (R/S) estimate: slope of ``log(R_t / S_t)`` on ``log t``
    for prefixes ``t = 2 .. n``, ``S_t`` the population sd of ``z[:t]``,
    ``R_t`` the range of the cumulative deviations from the prefix mean (the
    Python port's definition). Prefixes with ``S_t <= 1e-10`` (a run of equal
    leading values) are left out of the regression; fewer than two usable
    prefixes give 0.5. R uses ``fracdiff`` (``d + 0.5``): values differ.
    Constant and empty: 0.5 (no memory).
``flat_spots``
    Cut ``z`` into 10 equal-width intervals (``pandas.cut`` / R ``cut`` with
    ``include.lowest``), longest run of consecutive points in one interval.
    Constant: ``n`` (every point in one interval). Empty: 0.
``x_acf1``, ``x_acf10``
    ``r_1(z)`` and ``sum_{k=1..l} r_k(z)^2`` (R: first 10 lags).
``diff1_acf1``, ``diff1_acf10``
    The same on ``diff(z)`` (length ``n - 1``).
``max_var_shift``
    As ``max_level_shift`` with the variance (``ddof=1``) of each window
    (R ``roll_var``). Not in the Python port; written from the R definition.
``max_kl_shift``
    R definition (not in the Python port): Gaussian kernel densities
    (bandwidth ``bw.nrd0(z)``) of each point on a 100-point grid over
    ``[min z, max z]``, floored at ``dnorm(38)``; right-aligned rolling
    means ``D_j`` over ``l`` points; ``kl_i = sum_grid D_i (log D_i - log D_{i+l})
    * step`` for ``i = 1 .. n-l`` (1-based), where R's ``fill = NA`` makes
    ``kl_i = 0`` for ``i < l`` (``na.rm`` sum of nothing); result
    ``max(diff(kl))`` (signed, so the first real ``kl`` value counts as a jump
    from 0 -- kept as in R). 0 when ``n <= 2l`` (R: NA). Difference from R:
    an interquartile range of at most ``1e-10`` (``z`` units) counts as 0 in
    ``bw.nrd0`` (it is rounding between equal values, and a bandwidth made of
    rounding makes the result noise).
``nonlinearity``
    Teräsvirta's neural-network test as in the Python port:
    ``10 * log(SSR0 / SSR1)``, ``SSR0`` the residual sum of squares of
    ``z_t ~ 1 + z_{t-1}``, ``SSR1`` that of those residuals on
    ``1, z_{t-1}, z_{t-1}^2, z_{t-1}^3``. (The port multiplies the chi-square
    statistic ``n log(SSR0/SSR1)`` by ``10 / n``, so ``n`` cancels; R uses
    ``n - 1`` observations in the statistic.) 0 when ``n <= 5`` (as many
    parameters as observations), when ``z[1:]`` or ``z[:-1]`` is flat, or
    when ``SSR0 <= 1e-12 * SST``; ``SSR1`` is floored at ``1e-10 * SSR0`` so
    an exact cubic fit stays finite (at most ``10 log 1e10 = 230.3``).
``arch_lm``
    Engle's ARCH LM ``R^2``: regression of ``e_t^2`` on ``1, e_{t-1}^2 ..
    e_{t-q}^2``, ``e = z - mean z``, ``q = min(12, (n - 2) // 2)`` (R: 12,
    NA for ``n <= 13``). 0 when the regressand is flat.
``std1st_der``
    ``sd(diff(z))`` (``ddof=1``), as R ``std1st_der``. Not in the Python
    port; numpy in the reference.
``unitroot_kpss``
    KPSS level-stationarity statistic (``statsmodels.kpss``, urca's
    ``ur.kpss`` default ``lags = "short"``): ``sum S_t^2 / (n^2 s^2)``,
    ``S`` the cumulative sum of ``e``, ``s^2`` the Bartlett long-run variance
    with ``L = floor(4 (n / 100)^{1/4})`` lags. 0 when ``s^2 <= 1e-12``.
``unitroot_pp``
    Phillips-Perron ``Z-alpha`` statistic (model with constant, Bartlett
    weights, ``L`` as above), urca's ``ur.pp``: ``m (alpha - 1) -
    lambda / ybar2`` with ``m = n - 1``, ``lambda = (1/m) sum_{i=1..L}
    (1 - i/(L+1)) sum_t u_t u_{t-i}`` (``u`` the OLS residuals),
    ``ybar2 = sum (y - mean y)^2 / m^2``. The Python port's ``ur_pp`` has a
    precedence slip (``s = 1/(n sum u^2)``) that cancels algebraically but
    destroys ``lambda``'s digits when the residuals are small; the reference
    uses the intended formula. 0 when ``z[:-1]`` or ``z[1:]`` is
    flat (the regression is degenerate).
``series_length``
    ``n0``, the length *before* repetition (0 when empty).

Regressions (``nonlinearity``, ``arch_lm``) with exactly collinear columns
(few distinct values, periodic windows, a flat lagged regressor) are
rank-deficient, and nearly collinear ones (a lagged square that varies by
1e-8 of its size next to one spike) make the fit depend on rounding: there the
packages' pseudo-inverses return noise. Here a column whose part orthogonal to
the columns before it (in the order listed above) is at most ``1e-6`` of its
norm is dropped, and the residuals are those of the fit on the remaining
columns. So a window whose lagged values take two distinct values has
``nonlinearity = 0`` (the powers add nothing).

Not included: Holt's ``alpha``/``beta`` (``statsmodels`` optimises them
numerically; a fast version could not match it to 1e-6), ``heterogeneity``
(GARCH fits), STL features (need a smoother, little value on short windows),
``pacf`` features.

Pair characteristics (``norm_mean``, ``norm_sd``) [paper]
---------------------------------------------------------
Pre and After (raw, not repeated) are merged and min-max normalised:
``u = (v - min) / (max - min)``; a flat merged window gives ``u = 0``.
``norm_mean_pre`` / ``norm_mean_after`` are the means of ``u`` over each
window (0 when empty); ``norm_sd_pre`` / ``norm_sd_after`` the sd
(``ddof=1``; 0 with fewer than 2 points).

Every value is finite by construction: no NaN or inf reaches the feature
matrix (tested).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: Per-window characteristics, in column order. The paper's seven per-window
#: characteristics come first, then the rest of the tsfeatures family.
CHARACTERISTICS: tuple[str, ...] = (
    "crossing_points",
    "entropy",
    "max_level_shift",
    "serial_correlation",
    "stability",
    "lumpiness",
    "hurst",
    "flat_spots",
    "x_acf1",
    "x_acf10",
    "diff1_acf1",
    "diff1_acf10",
    "max_var_shift",
    "max_kl_shift",
    "nonlinearity",
    "arch_lm",
    "std1st_der",
    "unitroot_kpss",
    "unitroot_pp",
    "series_length",
)

#: Characteristics of the (Pre, After) pair, on the merged min-max normalisation.
PAIR_CHARACTERISTICS: tuple[str, ...] = ("norm_mean", "norm_sd")

#: The pair columns, in column order.
NORM_COLUMNS: tuple[str, ...] = ("norm_mean_pre", "norm_mean_after", "norm_sd_pre", "norm_sd_after")

#: Metadata columns that precede the features in the feature matrix.
METADATA_COLUMNS: tuple[str, ...] = (
    "series_id",
    "commit",
    "index",
    "timestamp",
    "label",
    "truth_label",
)

#: Position of each characteristic in a vector of :data:`CHARACTERISTICS`.
INDEX: dict[str, int] = {name: i for i, name in enumerate(CHARACTERISTICS)}

N_CHARACTERISTICS = len(CHARACTERISTICS)

#: Short windows are repeated cyclically to this length.
MIN_LENGTH = 4

#: Relative spread at or below which a vector counts as flat (constant).
FLAT_RTOL = 1e-10

#: Prefix standard deviations at or below this are left out of the Hurst fit.
HURST_SD_FLOOR = 1e-10

#: Regressions drop a column whose part orthogonal to the columns before it
#: is at most this fraction of its norm (collinear up to noise).
COLLINEAR_RTOL = 1e-6

#: An interquartile range at or below this (z units) counts as 0 in bw.nrd0.
IQR_FLOOR = 1e-10

#: Number of grid points of the kernel densities in ``max_kl_shift`` (R: 100).
KL_GRID = 100

#: Characteristic values of an empty window.
EMPTY_VALUES: dict[str, float] = {name: 0.0 for name in CHARACTERISTICS} | {"hurst": 0.5}


def lag_for(n: int) -> int:
    """Lag / block width ``l`` of a prepared window of length ``n`` (>= 4)."""
    return 10 if n > 10 else 2


def arch_lags(n: int) -> int:
    """Number of lags of the ARCH LM regression: ``min(12, (n - 2) // 2)``."""
    return min(12, (n - 2) // 2)


def bartlett_lags(n: int) -> int:
    """urca's ``lags = "short"``: ``floor(4 (n / 100)^(1/4))``."""
    return int(4 * (n / 100) ** 0.25)


def is_flat(v: np.ndarray) -> bool:
    """True when ``v``'s spread is at most :data:`FLAT_RTOL` of its magnitude."""
    if v.size == 0:
        return True
    hi = float(np.max(v))
    lo = float(np.min(v))
    return hi - lo <= FLAT_RTOL * max(abs(hi), abs(lo))


def prepare(x: np.ndarray) -> np.ndarray | None:
    """Repeat a short window to length 4 and standardise it.

    Parameters
    ----------
    x : ndarray of float64, shape (n0,)
        Raw window values, finite.

    Returns
    -------
    z : ndarray of float64, shape (max(n0, 4),), or None
        The standardised window; ``None`` for an empty or constant window
        (use :func:`degenerate_values`).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0 or is_flat(x):
        return None
    if x.size < MIN_LENGTH:
        x = np.resize(x, MIN_LENGTH)
    # Dividing by the magnitude first keeps the squares in sd away from
    # overflow (values near 1e308) and underflow (subnormal values).
    x = x / np.max(np.abs(x))
    sd = float(np.std(x, ddof=1))
    if not np.isfinite(sd) or sd == 0.0:
        return None
    return (x - np.mean(x)) / sd


def degenerate_values(n0: int) -> np.ndarray:
    """Characteristics of an empty (``n0 = 0``) or constant window of raw length ``n0``.

    Returns
    -------
    ndarray of float64, shape (len(CHARACTERISTICS),)
        All 0 except ``hurst = 0.5``, ``series_length = n0`` and, for a
        constant window, ``flat_spots = max(n0, 4)`` (all points in one bin).
    """
    out = np.array([EMPTY_VALUES[name] for name in CHARACTERISTICS], dtype=np.float64)
    out[INDEX["series_length"]] = float(n0)
    if n0 > 0:
        out[INDEX["flat_spots"]] = float(max(n0, MIN_LENGTH))
    return out


def normalised_moments(pre: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The paper's ``norm mean`` and ``norm sd`` of Pre and After.

    Parameters
    ----------
    pre, after : ndarray of float64, shapes (a,), (b,)
        Raw window values (either may be empty).

    Returns
    -------
    ndarray of float64, shape (4,)
        ``norm_mean_pre, norm_mean_after, norm_sd_pre, norm_sd_after`` on the
        min-max normalisation of ``concat(pre, after)`` (see module docstring).
    """
    pre = np.asarray(pre, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    merged = np.concatenate([pre, after])
    out = np.zeros(4, dtype=np.float64)
    if merged.size == 0 or is_flat(merged):
        return out
    lo = float(np.min(merged))
    span = float(np.max(merged)) - lo
    for j, w in enumerate((pre, after)):
        if w.size:
            u = (w - lo) / span
            out[j] = float(np.mean(u))
            if w.size > 1:
                out[2 + j] = float(np.std(u, ddof=1))
    return out


def check_names(names: Iterable[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split requested names into per-window and pair characteristics, in catalogue order.

    Parameters
    ----------
    names : iterable of str or None
        Any of :data:`CHARACTERISTICS` and :data:`PAIR_CHARACTERISTICS`;
        ``None`` = all.

    Returns
    -------
    (window_names, pair_names) : tuples of str in catalogue order

    Raises
    ------
    ValueError
        An unknown name.
    """
    if names is None:
        return CHARACTERISTICS, PAIR_CHARACTERISTICS
    if isinstance(names, str):
        names = [names]
    wanted = list(names)
    unknown = [n for n in wanted if n not in INDEX and n not in PAIR_CHARACTERISTICS]
    if unknown:
        known = ", ".join(CHARACTERISTICS + PAIR_CHARACTERISTICS)
        raise ValueError(f"unknown characteristic(s) {unknown!r}; known: {known}")
    chosen = set(wanted)
    return (
        tuple(n for n in CHARACTERISTICS if n in chosen),
        tuple(n for n in PAIR_CHARACTERISTICS if n in chosen),
    )


def feature_columns(names: Iterable[str] | None = None) -> list[str]:
    """Feature column names of the feature matrix, in column order.

    ``pre_<name>`` for every selected per-window characteristic, then
    ``after_<name>`` in the same order, then the selected ``norm_*`` columns
    in the order ``norm_mean_pre, norm_mean_after, norm_sd_pre, norm_sd_after``.

    Parameters
    ----------
    names : iterable of str or None
        Characteristic names (see :func:`check_names`); ``None`` = all.
    """
    window_names, pair_names = check_names(names)
    cols = [f"pre_{n}" for n in window_names] + [f"after_{n}" for n in window_names]
    cols += [c for c in NORM_COLUMNS if c.rsplit("_", 1)[0] in pair_names]
    return cols
