"""A Gaussian process over the commit axis: the whole history from a few measured commits.

Following Muehlbauer, Apel and Siegmund, the value of commit ``i`` of ``n`` is
modelled as a GP over the position ``x = 1 + i / (n - 1)`` in ``[1, 2]``; values
are standardised (``normalize_y``). Kernels (:data:`KERNELS`):

``brownian`` (default)
    constant (level at the first commit) + Brownian(min(x, x')) + white noise;
``rbf``, ``matern`` (nu = 1.5), ``rq`` (rational quadratic)
    constant * stationary kernel + white noise, for comparison.

Hyperparameters are fitted by marginal likelihood (scikit-learn, one start:
the starting values are fixed here so that results are reproducible).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    Matern,
    RationalQuadratic,
    Sum,
    WhiteKernel,
)

from triage.sampling.kernels import Brownian


def _kernel(name: str):
    white = WhiteKernel(1e-2, (1e-6, 1e1))
    if name == "brownian":
        return ConstantKernel(1.0, (1e-4, 1e3)) + Brownian(1.0, (1e-4, 1e4)) + white
    if name == "rbf":
        return ConstantKernel(1.0, (1e-3, 1e3)) * RBF(0.1, (1e-3, 10.0)) + white
    if name == "matern":
        return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(0.1, (1e-3, 10.0), nu=1.5) + white
    if name == "rq":
        return (
            ConstantKernel(1.0, (1e-3, 1e3))
            * RationalQuadratic(0.1, 1.0, (1e-3, 10.0), (1e-2, 1e2))
            + white
        )
    raise ValueError(f"unknown kernel {name!r} (use one of {', '.join(KERNELS)})")


KERNELS = ("brownian", "rbf", "matern", "rq")
ACQUISITIONS = ("alc", "alc-joint", "variance")
DESIGNS = ("prior", "fitted")
MIN_FIT = 5
#: At most this many commits carry the ALC sum (evenly spread); 2,048^2 doubles = 32 MB.
ALC_GRID = 2048
#: scikit-learn's normalize_y calls a standard deviation below this none (and divides by 1).
_SKLEARN_CONSTANT = 10 * np.finfo(float).eps
#: At most this many passes of Fedorov's exchange (``alc-joint``); each pass costs one posterior per pick.
EXCHANGE_PASSES = 3


class HistoryGP:
    """Estimate a history of ``n`` commits from measured positions.

    Parameters
    ----------
    kernel : one of :data:`KERNELS` (``brownian``)
    acquisition : ``alc`` (integrated variance reduction) or ``variance`` (see :meth:`next_positions`)
    design : ``prior`` or ``fitted``: the hyperparameters that choose the next commits

    Attributes (after :meth:`fit`)
    ------------------------------
    gp_ : the fitted ``GaussianProcessRegressor`` (on the values divided by ``scale_``)
    scale_ : 1, or for values without spread (constant, one reading) or tinier than float
        rounding can tell apart, their largest magnitude: the unit the values are fitted in
    n_ : number of commits in the history
    """

    def __init__(self, kernel: str = "brownian", acquisition: str = "alc", design: str = "prior"):
        self.kernel = kernel
        self.acquisition = acquisition
        self.design = design

    def _x(self, positions) -> np.ndarray:
        # 1 + i / (n - 1): the Brownian motion starts one history-length before
        # the first commit, so that its variance is not pinned to 0 at commit 0
        # (the first commit is as uncertain as any other before it is measured).
        return (1.0 + np.asarray(positions, dtype=float) / max(self.n_ - 1, 1)).reshape(-1, 1)

    def fit(self, n: int, positions, values) -> HistoryGP:
        raw = np.asarray(positions)
        if raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
            raise ValueError("positions must be whole commit positions (0-based)")
        positions = raw.astype(int)
        values = np.asarray(values, dtype=float)
        if self.acquisition not in ACQUISITIONS:
            raise ValueError(
                f"unknown acquisition {self.acquisition!r} (use one of {', '.join(ACQUISITIONS)})"
            )
        if self.design not in DESIGNS:
            raise ValueError(f"unknown design {self.design!r} (use one of {', '.join(DESIGNS)})")
        if len(positions) == 0:
            raise ValueError("at least one measured commit is needed")
        if len(np.unique(positions)) != len(positions):
            raise ValueError("each commit once: average repeated measurements first")
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n must be the number of commits (an integer >= 1), got {n!r}")
        if positions.ndim != 1 or values.shape != positions.shape:
            raise ValueError(
                f"positions and values must be two lists of the same length, got shapes "
                f"{positions.shape} and {values.shape}"
            )
        outside = positions[(positions < 0) | (positions >= n)]
        if len(outside):
            # Taken silently before: a reading placed beyond the history bent its estimate.
            raise ValueError(f"position {int(outside[0])} is outside the history's commits 0 .. {n - 1}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"the measured values must be finite, got {values[~np.isfinite(values)][0]!r}")
        self.n_ = n
        # Below MIN_FIT measured commits the hyperparameters cannot be estimated
        # (two points fit anything): the starting values are used as they are.
        optimizer = "fmin_l_bfgs_b" if len(positions) >= MIN_FIT else None
        self.gp_ = GaussianProcessRegressor(
            _kernel(self.kernel), normalize_y=True, n_restarts_optimizer=0, optimizer=optimizer
        )
        # normalize_y divides by the values' standard deviation, but scikit-learn takes one below
        # 10 eps for none and divides by 1: the band of a constant history (or of one reading)
        # was +-0.73 in the values' unit whatever it was (-0.73 .. 0.73 s around 1e-06 s, +-1.3
        # around 5e6), and so was that of a history of tiny values. Such values are fitted in
        # units of their largest magnitude, so the band scales with them.
        self.scale_ = 1.0
        if len(values) and float(np.std(values)) < _SKLEARN_CONSTANT:
            self.scale_ = float(np.max(np.abs(values))) or 1.0
        with warnings.catch_warnings():
            # Few points often put a hyperparameter at its bound; the fit is still usable.
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.gp_.fit(self._x(positions), values / self.scale_)
        self.positions_ = positions
        return self

    def predict(self, positions=None) -> tuple[np.ndarray, np.ndarray]:
        """(mean, standard deviation) at ``positions`` (default: every commit).

        The standard deviation is that of a reading there (the white noise
        included), not of the noise-free level alone: with ``normalize_y`` the
        fitted constant term takes the readings' mean as known, and the level's
        own band came out 16 times narrower than the mean's standard error on a
        noisy real history (a `rhai` series, 1 commit in 10 measured).
        """
        self._check_fitted()
        positions = np.arange(self.n_) if positions is None else self._checked_positions(positions)
        mean, std = self.gp_.predict(self._x(positions), return_std=True)
        return np.asarray(mean) * self.scale_, np.asarray(std) * self.scale_

    def next_positions(self, k: int) -> list[int]:
        """The ``k`` unmeasured commits to measure next, most informative first.

        Greedy, one commit at a time, each pick conditioning the next (a GP's
        posterior variance depends on where the measurements are, not on their
        values, so a batch needs no imagined values).

        ``acquisition="alc"`` (default): the commit whose measurement removes
        the most posterior variance of the noise-free history *summed over all
        commits* (Cohn's ALC, "Active learning with statistical models", 1996;
        compared with MacKay's maximum variance by Seo et al., 2000). The sum
        is what the estimate's error on unmeasured commits is made of; a
        measurement's own noise, which no choice of commits can remove, enters
        only through the denominator ``var(c) + noise`` (a reading of a noisy
        commit is worth less). Over at most :data:`ALC_GRID` evenly spread
        commits (so long histories stay within memory: the grid's covariance
        is ``ALC_GRID**2`` numbers).

        ``acquisition="alc-joint"``: the ``k`` commits chosen *together* to
        remove the most integrated variance (an IMSE-optimal design): the greedy
        ALC picks, then Fedorov's exchange (each pick in turn moved to the
        commit that is best given all the others, until none moves; at most
        :data:`EXCHANGE_PASSES` passes). Greedy picks are not the best set of
        ``k`` (with two picks on a history whose ends are measured, greedy takes
        the middle and a quarter, the joint design about the thirds). Kept for
        comparison: on the development series it was *worse* than greedy ALC
        at 1, 3 and 5 % (BENCHMARKS.md).

        ``acquisition="variance"``: the commit whose value is the most
        uncertain relative to its prior (the largest posterior-over-prior
        variance; the ratio, because the Brownian kernel's prior variance grows
        along the history); the rule of the first version, kept for comparison.

        ``design="prior"`` (default) chooses with the kernel's starting
        hyperparameters (the values of :func:`_kernel`, on standardised
        values), so the choice does not follow a fit made from a handful of
        noisy measurements: on the development series (django-asv,
        emg3d-bench) such fits often called the whole history noise, and
        choosing with them was worse than with the prior
        (``benchmarks/bench_sampling.py``, BENCHMARKS.md). ``design="fitted"``
        uses the fitted hyperparameters. The estimate itself
        (:meth:`predict`) always uses the fitted ones.
        """
        self._check_fitted()
        if isinstance(k, bool | np.bool_) or not isinstance(k, int | np.integer) or k < 0:
            raise ValueError(f"k must be a number of commits (an integer >= 0), got {k!r}")
        kern = self.gp_.kernel if self.design == "prior" else self.gp_.kernel_
        if self.acquisition == "variance":
            return self._max_variance(kern, k)
        latent, noise = _without_noise(kern), _noise_level(kern) + 1e-10
        grid = np.unique(np.round(np.linspace(0, self.n_ - 1, min(self.n_, ALC_GRID))).astype(int))
        S = self._grid_cov(latent, noise, grid, self.positions_)
        free = ~np.isin(grid, self.positions_)
        picks: list[int] = []
        for _ in range(min(k, int(free.sum()))):
            score = _alc_scores(S, noise, free)
            j = int(np.argmax(score))
            picks.append(int(grid[j]))
            free[j] = False
            col = S[:, j].copy()
            S -= np.outer(col, col) / (col[j] + noise)
        if self.acquisition == "alc-joint":
            picks = self._exchange(latent, noise, grid, picks)
        return picks

    def _checked_positions(self, positions) -> np.ndarray:
        """``positions`` as ints inside the history (a position past it was extrapolated silently)."""
        raw = np.atleast_1d(np.asarray(positions))
        if raw.dtype.kind not in "iu" and not (
            raw.dtype.kind == "f" and np.all(np.isfinite(raw) & (raw == np.round(raw)))
        ):
            raise ValueError("positions must be whole commit positions (0-based)")
        out = raw.astype(int)
        outside = out[(out < 0) | (out >= self.n_)]
        if len(outside):
            raise ValueError(f"position {int(outside[0])} is outside the history's commits 0 .. {self.n_ - 1}")
        return out

    def _check_fitted(self) -> None:
        if not hasattr(self, "gp_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this HistoryGP is not fitted yet: call fit(n, positions, values) first")

    def _grid_cov(self, latent, noise: float, grid: np.ndarray, positions) -> np.ndarray:
        """Posterior covariance of the noise-free history on ``grid``, given readings at ``positions``."""
        xm, xg = self._x(positions), self._x(grid)
        Kgm = latent(xg, xm)
        return latent(xg) - Kgm @ np.linalg.solve(latent(xm) + noise * np.eye(len(xm)), Kgm.T)

    def _exchange(self, latent, noise: float, grid: np.ndarray, picks: list[int]) -> list[int]:
        """Fedorov's exchange: move each pick to the best grid commit given the others, until none moves."""
        picks = list(picks)
        for _ in range(EXCHANGE_PASSES):
            moved = False
            for i in range(len(picks)):
                others = [*self.positions_, *picks[:i], *picks[i + 1 :]]
                free = ~np.isin(grid, others)
                score = _alc_scores(self._grid_cov(latent, noise, grid, others), noise, free)
                j = int(np.argmax(score))
                here = np.flatnonzero(grid == picks[i])
                # Only a strict gain moves a pick (ties would cycle); a pick off the grid always may.
                if int(grid[j]) != picks[i] and (
                    len(here) == 0 or score[j] > score[here[0]] * (1 + 1e-9)
                ):
                    picks[i], moved = int(grid[j]), True
            if not moved:
                break
        return picks

    def _max_variance(self, kern, k: int) -> list[int]:
        latent = _without_noise(kern)
        x_all = self._x(np.arange(self.n_))
        chosen = list(self.positions_)
        picks: list[int] = []
        prior = np.maximum(latent.diag(x_all), 1e-12)
        # A fit that calls nearly everything noise would make every commit
        # equally (un)informative and the choice arbitrary: for choosing, the
        # noise counts at most a tenth of the history's prior variance.
        noise = min(_noise_level(kern), 0.1 * float(np.mean(prior)))
        for _ in range(min(k, self.n_ - len(chosen))):
            xs = x_all[chosen]
            K = latent(xs) + (noise + 1e-10) * np.eye(len(chosen))
            Ks = latent(x_all, xs)
            var = prior - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
            score = var / prior
            score[chosen] = -np.inf
            nxt = int(np.argmax(score))
            picks.append(nxt)
            chosen.append(nxt)
        return picks


def _alc_scores(S: np.ndarray, noise: float, free: np.ndarray) -> np.ndarray:
    """Variance removed by measuring each grid commit: sum_i S[i, j]^2 / (S[j, j] + noise); -inf where not free."""
    score = np.einsum("ij,ij->j", S, S) / (np.maximum(np.diag(S), 0.0) + noise)
    score[~free] = -np.inf
    return score


def _noise_level(kern) -> float:
    if isinstance(kern, Sum) and isinstance(kern.k2, WhiteKernel):
        return float(kern.k2.noise_level)
    return 0.0


def _without_noise(kern):
    """The fitted kernel minus its white-noise term (``kernel + WhiteKernel`` by construction)."""
    if isinstance(kern, Sum) and isinstance(kern.k2, WhiteKernel):
        return kern.k1
    return kern
