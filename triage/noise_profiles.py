"""Noise of real performance histories: the estimators, the fitted profiles, sampling from them.

The ``realnoise`` preset of :mod:`triage.synthetic` draws each series' noise
from a profile fitted to the 372 real histories of ``../shared/data/real/``
(five source projects). Only numbers derived from that data are committed
(``noise_profiles.json``, written by ``benchmarks/fit_noise.py``), never the data.

**How one series is measured** (:func:`series_noise_stats`; the same function
measures real and synthetic series, so the comparison in
``benchmarks/bench_noise_fit.py`` is like for like). Real series hold
unlabelled real changes, so noise is measured between conservative change
points:

1. values are made relative (divided by the series median);
2. points further than 6 robust sd from a centred rolling median of 11
   (robust sd: MAD of first differences / sqrt 2, which level shifts and slow
   wander barely move) are replaced by that median for segmenting only;
3. **level shifts**: binary segmentation with the L2 cost, minimum segment 20
   commits and a high penalty (``12 log n`` white-noise variances), so only
   clear shifts are cut; sizes are ``|log|`` ratios of neighbouring segment
   medians, in residual sd;
4. **residuals** are values relative to their segment median;
5. **bimodality** (before outliers: a second machine state a tenth of the
   time is a mode, not a tenth of outliers): a two-component Gaussian mixture
   with a tied variance against one component (BIC), kept when the medians of
   the two states are at least 3 robust sd of the major state apart and the
   minor one holds 5% or more; its share, separation and mean run length are
   recorded and its offset removed;
6. **outliers**: residuals further than 6 robust sd from their rolling median
   (rate, size in sd, direction); replaced by that median from here on;
7. robust CV is 1.4826 MAD of the residuals; lag-1 and lag-2
   autocorrelations (inside segments, residuals winsorised at 4 sd) give an
   AR(1) **wandering level**: phi = acf2 / acf1 and its variance share acf1 / phi;
8. **heavy tails**: the ratio (q95 - q5) / (q75 - q25) of the residuals mapped
   to the Student-t degrees of freedom giving the same ratio (Gaussian: 2.44);
9. **noise-level changes**: binary segmentation of log |first difference of
   residuals| (minimum 30 commits, penalty ``4 log n`` times its variance);
   the ones within 5 commits of a level shift count as machine changes (level
   and noise move together); **volatility**: the sd of the log robust sd of
   blocks of 30 commits beyond its sampling sd (0.22).

**The profile** per source project: the per-series parameters as quantile
grids (21 levels) plus their rank correlation (a Gaussian copula), so that a
sampled series keeps real co-occurrences (noisy series wander more, say);
pooled quantiles of level-shift sizes, noise-level factors and outlier sizes;
scalar shares. Sources are mixed in proportion to their number of real series.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from triage.core.noise import diff_noise, robust_sd

PROFILE_FILE = "noise_profiles.json"
# Per-series parameters sampled jointly (a Gaussian copula over their quantiles).
SERIES_PARAMS = (
    "log_cv",  # log robust sd of residuals relative to the level
    "wander_share",  # share of that variance in an AR(1) wandering level
    "wander_phi",
    "log_tail_df",  # Student-t degrees of freedom (log); 100 = Gaussian
    "outlier_rate",  # per commit
    "bimodal_share",  # share of commits in the minor state (0: unimodal)
    "bimodal_offset",  # minor state's offset, in residual sd
    "log_bimodal_run",  # mean run length of the minor state (log commits)
    "shift_rate",  # conservative level shifts per commit
    "noise_change_rate",  # noise-level changes per commit, machine changes excluded
    "volatility",  # sd of the log noise level across blocks of 30 commits (beyond sampling)
)
QUANTILE_LEVELS = np.linspace(0.0, 1.0, 21)
MAX_DF = 100.0
MIN_CV = 1e-6  # nearly deterministic series (memory) still get a tiny noise
OUTLIER_Z = 6.0
SHIFT_MIN_SIZE = 20
NOISE_MIN_SIZE = 30
VOL_BLOCK = 30
# sd of log(1.4826 MAD) of 30 Gaussian values: what a constant noise level shows.
VOL_SAMPLING_SD = 0.22
PENALTY = 12.0  # times log n: conservative, only clear level shifts are cut
NOISE_PENALTY = 4.0  # log |difference| has a known spread (pi^2 / 8), so a lower factor suffices


# --------------------------------------------------------------------------- estimators


def binary_segmentation(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    """Change points (segment starts) of ``x`` under the L2 cost, cut while a cut gains more than ``penalty``.

    Binary segmentation rather than PELT: it is a few numpy passes per cut, so
    fitting 372 series takes seconds, and with a high penalty both agree on
    the clear shifts that are all we want here.
    """
    n = len(x)
    found: list[int] = []
    stack = [(0, n)]
    while stack:
        a, b = stack.pop()
        m = b - a
        if m < 2 * min_size:
            continue
        seg = x[a:b]
        cs = np.cumsum(seg)
        total = cs[-1]
        k = np.arange(min_size, m - min_size + 1)
        left = cs[k - 1]
        # Reduction of the squared error when splitting at k.
        gain = left**2 / k + (total - left) ** 2 / (m - k) - total**2 / m
        j = int(np.argmax(gain))
        if gain[j] > penalty:
            cut = a + int(k[j])
            found.append(cut)
            stack.append((a, cut))
            stack.append((cut, b))
    return sorted(found)


def _acf_within(r: np.ndarray, seg_id: np.ndarray, lag: int) -> float:
    ok = seg_id[lag:] == seg_id[:-lag]
    if ok.sum() < 10:
        return 0.0
    a, b = r[lag:][ok], r[:-lag][ok]
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


@cache
def _tail_table() -> tuple[np.ndarray, np.ndarray]:
    """(q95 - q5) / (q75 - q25) of Student t for a grid of degrees of freedom."""
    dfs = np.exp(np.linspace(np.log(1.2), np.log(MAX_DF), 80))
    ratio = (stats.t.ppf(0.95, dfs) * 2) / (stats.t.ppf(0.75, dfs) * 2)
    return dfs, ratio  # ratio falls as df grows


def _df_from_ratio(ratio: float) -> float:
    dfs, table = _tail_table()
    if not np.isfinite(ratio) or ratio <= table[-1]:
        return MAX_DF
    if ratio >= table[0]:
        return float(dfs[0])
    return float(np.interp(ratio, table[::-1], dfs[::-1]))


def _bimodal(r: np.ndarray, sd: float) -> tuple[float, float, float, np.ndarray | None]:
    """(minor share, separation in major-state robust sd, mean minor run length, minor-state mask) or zeros.

    The separation is measured with medians and the MAD of the major state, so
    heavy tails (which inflate a Gaussian component's variance) neither hide a
    real second state nor pass for one.
    """
    from sklearn.mixture import GaussianMixture

    if len(r) < 40 or sd <= 0:
        return 0.0, 0.0, 0.0, None
    # Far outliers would claim a component of their own: clip them first.
    z = np.clip((r - np.median(r)) / sd, -8, 8).reshape(-1, 1)
    one = GaussianMixture(1, random_state=0).fit(z)
    two = GaussianMixture(2, covariance_type="tied", random_state=0, n_init=1).fit(z)
    if two.bic(z) >= one.bic(z) - 10:
        return 0.0, 0.0, 0.0, None
    minor = int(np.argmin(two.weights_))
    state = two.predict(z) == minor
    if state.mean() < 0.05 or state.all():
        return 0.0, 0.0, 0.0, None
    major_sd = robust_sd(z[~state, 0])
    sep = abs(np.median(z[state, 0]) - np.median(z[~state, 0])) / major_sd if major_sd > 0 else 0.0
    if sep < 3.0:
        return 0.0, 0.0, 0.0, None
    starts = np.flatnonzero(state & ~np.r_[False, state[:-1]])
    runs = state.sum() / max(len(starts), 1)
    return float(state.mean()), float(sep), float(runs), state


def _volatility(centred: np.ndarray) -> float:
    """Spread (sd of the log) of the noise level across blocks of 30 commits, beyond sampling error.

    Real noise levels drift between quiet and noisy stretches far more than
    the few noise-level changes a conservative segmentation finds.
    """
    blocks = len(centred) // VOL_BLOCK
    if blocks < 4:
        return 0.0
    sds = np.array([robust_sd(b) for b in centred[: blocks * VOL_BLOCK].reshape(blocks, VOL_BLOCK)])
    sds = sds[sds > 0]
    if len(sds) < 4:
        return 0.0
    return float(np.sqrt(max(np.var(np.log(sds), ddof=1) - VOL_SAMPLING_SD**2, 0.0)))


def _rolling_median(x: np.ndarray, window: int = 11) -> np.ndarray:
    return pd.Series(x).rolling(window, center=True, min_periods=1).median().to_numpy()


def series_noise_stats(values: np.ndarray) -> dict[str, Any]:
    """The noise statistics of one series (one value per commit, in commit order)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    med = float(np.median(x))
    y = x / med if med != 0 else x.copy()
    s_d = max(diff_noise(y), MIN_CV)
    roll = _rolling_median(y)
    clean = np.where(np.abs(y - roll) > OUTLIER_Z * s_d, roll, y)

    cuts = binary_segmentation(clean, PENALTY * np.log(n) * s_d**2, SHIFT_MIN_SIZE)
    bounds = np.array([0, *cuts, n], dtype=np.int64)
    seg_id = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    seg_med = np.array([np.median(clean[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    ratio_levels = np.abs(seg_med[1:] / seg_med[:-1]) if len(seg_med) > 1 else np.array([])
    shift_sizes = np.abs(np.log(ratio_levels[ratio_levels > 0]))

    level = seg_med[seg_id]
    r = y / level - 1
    # Bimodality before outliers: a second machine state a quarter of the time
    # is a mode, not a quarter of outliers.
    share, sep, run, state = _bimodal(r, max(robust_sd(r), MIN_CV))
    centred = r.copy()
    if state is not None:
        centred[state] -= np.median(r[state]) - np.median(r[~state])
    c_roll = _rolling_median(centred)
    c_sd = max(diff_noise(centred), MIN_CV)
    outlier = np.abs(centred - c_roll) > OUTLIER_Z * c_sd
    # In units of the white-noise sd: pooled over a source's series, a size
    # means the same on a quiet and on a noisy series.
    outlier_sizes = np.abs(centred[outlier] - c_roll[outlier]) / c_sd
    outlier_up = float((centred[outlier] > c_roll[outlier]).mean()) if outlier.any() else np.nan
    centred = np.where(outlier, c_roll, centred)

    cv = robust_sd(centred)
    sd = max(cv, MIN_CV)
    w = np.clip(centred, -4 * sd, 4 * sd)
    acf1 = _acf_within(w, seg_id, 1)
    acf2 = _acf_within(w, seg_id, 2)
    if acf1 > 0.05 and acf2 > 0:
        phi = float(np.clip(acf2 / acf1, 0.3, 0.99))
        wander = float(np.clip(acf1 / phi, 0.0, 0.95))
    else:
        phi, wander = 0.9, 0.0

    q = np.quantile(centred, [0.05, 0.25, 0.75, 0.95])
    ratio = (q[3] - q[0]) / (q[2] - q[1]) if q[2] > q[1] else np.nan
    tail_df = _df_from_ratio(ratio)

    d = np.diff(centred)
    # The floor keeps runs of equal values (quantised timers) from reading as
    # a collapse of the noise.
    ld = np.log(np.abs(d) + 0.1 * sd)
    ncuts = binary_segmentation(ld - ld.mean(), NOISE_PENALTY * np.log(n) * max(ld.var(), 1e-12), NOISE_MIN_SIZE)
    nb = np.array([0, *ncuts, len(ld)], dtype=np.int64)
    nmeans = np.array([ld[a:b].mean() for a, b in zip(nb[:-1], nb[1:], strict=True)])
    factors = np.abs(np.diff(nmeans))
    machine = np.array([any(abs(c + 1 - s) <= 5 for s in cuts) for c in ncuts], dtype=bool)

    return {
        "n": n,
        "log_cv": float(np.log(sd)),
        "raw_cv": robust_sd(r),
        "white_cv": diff_noise(centred),
        "acf1": acf1,
        "wander_share": wander,
        "wander_phi": phi,
        "log_tail_df": float(np.log(tail_df)),
        "tail_ratio": float(ratio) if np.isfinite(ratio) else np.nan,
        "outlier_rate": float(outlier.mean()),
        "outlier_sizes": outlier_sizes,
        "outlier_up": outlier_up,
        "bimodal_share": share,
        "bimodal_offset": sep,
        "log_bimodal_run": float(np.log(run)) if run > 0 else 0.0,
        "shift_rate": len(cuts) / n,
        # In residual sd, as outliers: a size keeps its detectability when
        # drawn for a quieter or noisier series of the same source.
        "shift_sizes": shift_sizes / sd,
        "noise_changes": len(ncuts),
        "machine_changes": int(machine.sum()),
        "noise_change_rate": float((~machine).sum()) / n,
        "noise_factors": factors,
        "volatility": _volatility(centred),
    }


# --------------------------------------------------------------------------- profiles


def fit_profile(per_series: list[dict[str, Any]]) -> dict[str, Any]:
    """One source's profile from the statistics of its series."""
    table = np.array([[s[p] for p in SERIES_PARAMS] for s in per_series], dtype=float)
    table = np.nan_to_num(table, nan=0.0)
    quantiles = {p: np.quantile(table[:, j], QUANTILE_LEVELS).tolist() for j, p in enumerate(SERIES_PARAMS)}
    # Rank correlation mapped to the Gaussian copula's correlation (Pearson 1907).
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant column (no bimodal series) has no rank
        rho = stats.spearmanr(table).statistic if len(table) > 2 else np.eye(len(SERIES_PARAMS))
    rho = np.nan_to_num(np.atleast_2d(rho), nan=0.0)
    np.fill_diagonal(rho, 1.0)
    corr = 2 * np.sin(np.pi * rho / 6)
    # Nearest positive-definite matrix (clip eigenvalues) so it can be sampled.
    vals, vecs = np.linalg.eigh(corr)
    corr = vecs @ np.diag(np.clip(vals, 1e-3, None)) @ vecs.T
    dsd = np.sqrt(np.diag(corr))
    corr = corr / np.outer(dsd, dsd)

    def pooled(key: str) -> list[float]:
        parts = [np.asarray(s[key], dtype=float) for s in per_series]
        v = np.concatenate(parts) if parts else np.array([])
        v = v[np.isfinite(v) & (v > 0)]
        if len(v) < 5:
            return []
        # The grid's ends are the 1% and 99% quantiles: a handful of unit
        # changes (100x jumps) must not become a drawable size.
        return np.quantile(v, np.clip(QUANTILE_LEVELS, 0.01, 0.99)).tolist()

    machine = sum(s["machine_changes"] for s in per_series)
    shifts = sum(s["shift_rate"] * s["n"] for s in per_series)
    ups = [s["outlier_up"] for s in per_series if np.isfinite(s["outlier_up"])]
    return {
        "series": len(per_series),
        "quantiles": quantiles,
        "correlation": np.round(corr, 4).tolist(),
        "shift_size": pooled("shift_sizes"),  # |log ratio| of neighbouring levels, in residual sd
        "noise_factor": pooled("noise_factors"),  # |log ratio| of noise levels
        "outlier_size": pooled("outlier_sizes"),  # distance from the local median, in white-noise sd
        "machine_share": float(machine / shifts) if shifts else 0.0,  # level shifts that also move the noise
        "outlier_up_share": float(np.mean(ups)) if ups else 0.5,
        "length": np.quantile([s["n"] for s in per_series], QUANTILE_LEVELS).round().tolist(),
    }


@cache
def load_profiles() -> dict[str, Any]:
    """The committed profile file (``triage/noise_profiles.json``)."""
    text = resources.files("triage").joinpath(PROFILE_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@cache
def profiles_digest() -> str:
    """SHA-256 (hex) of the profile file's bytes: which fitted profiles a ``realnoise`` dataset was drawn from.

    ``benchmarks/fit_noise.py`` rewrites the file when the profiles are
    refitted, and the same preset and seed then give other rows; the digest in
    a dataset's ``dataset.json`` tells the two apart.
    """
    return hashlib.sha256(resources.files("triage").joinpath(PROFILE_FILE).read_bytes()).hexdigest()


@dataclass(frozen=True)
class SeriesNoise:
    """The noise parameters drawn for one synthetic series (relative units)."""

    source: str
    cv: float
    wander_share: float
    wander_phi: float
    tail_df: float
    outlier_rate: float
    bimodal_share: float
    bimodal_offset: float
    bimodal_run: float
    shift_rate: float
    noise_change_rate: float
    volatility: float


@cache
def _cholesky(correlation: str) -> np.ndarray:
    return np.linalg.cholesky(np.asarray(json.loads(correlation)))


@cache
def winsorised_variance(df: float) -> float:
    """Variance of Student-t noise scaled to a robust sd of 1 and clipped at 4, as the estimator sees it.

    The wandering-level share is measured on winsorised residuals, so the
    generator sizes the wander against this variance, not against 1.
    """
    u = (np.arange(4000) + 0.5) / 4000
    q = stats.norm.ppf(u) if df >= MAX_DF else stats.t.ppf(u, df) / (stats.t.ppf(0.75, df) / stats.norm.ppf(0.75))
    return float(np.mean(np.clip(q, -4, 4) ** 2))


def _from_quantiles(grid: list[float], u: np.ndarray | float) -> np.ndarray:
    return np.asarray(np.interp(u, QUANTILE_LEVELS, grid))


def sample_source(rng: np.random.Generator, profiles: dict[str, Any]) -> str:
    names = sorted(profiles["sources"])
    weights = np.array([profiles["sources"][s]["series"] for s in names], dtype=float)
    return names[int(rng.choice(len(names), p=weights / weights.sum()))]


def sample_series_noise(rng: np.random.Generator, profile: dict[str, Any], source: str) -> SeriesNoise:
    """Draw one series' parameters from a source's copula."""
    z = _cholesky(json.dumps(profile["correlation"])) @ rng.standard_normal(len(SERIES_PARAMS))
    u = special.ndtr(z)
    p = {name: float(_from_quantiles(profile["quantiles"][name], u[j])) for j, name in enumerate(SERIES_PARAMS)}
    return SeriesNoise(
        source=source,
        cv=max(float(np.exp(p["log_cv"])), MIN_CV),
        wander_share=float(np.clip(p["wander_share"], 0.0, 0.95)),
        wander_phi=float(np.clip(p["wander_phi"], 0.0, 0.99)),
        tail_df=float(np.clip(np.exp(p["log_tail_df"]), 1.5, MAX_DF)),
        outlier_rate=max(p["outlier_rate"], 0.0),
        bimodal_share=float(np.clip(p["bimodal_share"], 0.0, 0.5)),
        bimodal_offset=max(p["bimodal_offset"], 0.0),
        bimodal_run=max(float(np.exp(p["log_bimodal_run"])), 1.0),
        shift_rate=max(p["shift_rate"], 0.0),
        noise_change_rate=max(p["noise_change_rate"], 0.0),
        volatility=max(p.get("volatility", 0.0), 0.0),
    )


def sample_pooled(rng: np.random.Generator, grid: list[float], size: int, default: float) -> np.ndarray:
    """Draws from a pooled quantile grid (``default`` when the source had too few)."""
    if not grid:
        return np.full(size, default)
    return _from_quantiles(grid, rng.random(size))
