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
        return ConstantKernel(1.0, (1e-3, 1e3)) * RationalQuadratic(0.1, 1.0, (1e-3, 10.0), (1e-2, 1e2)) + white
    raise ValueError(f"unknown kernel {name!r} (use one of {', '.join(KERNELS)})")


KERNELS = ("brownian", "rbf", "matern", "rq")
MIN_FIT = 5


class HistoryGP:
    """Estimate a history of ``n`` commits from measured positions.

    Parameters
    ----------
    kernel : one of :data:`KERNELS` (``brownian``)

    Attributes (after :meth:`fit`)
    ------------------------------
    gp_ : the fitted ``GaussianProcessRegressor``
    n_ : number of commits in the history
    """

    def __init__(self, kernel: str = "brownian"):
        self.kernel = kernel

    def _x(self, positions) -> np.ndarray:
        # 1 + i / (n - 1): the Brownian motion starts one history-length before
        # the first commit, so that its variance is not pinned to 0 at commit 0
        # (the first commit is as uncertain as any other before it is measured).
        return (1.0 + np.asarray(positions, dtype=float) / max(self.n_ - 1, 1)).reshape(-1, 1)

    def fit(self, n: int, positions, values) -> HistoryGP:
        positions = np.asarray(positions, dtype=int)
        values = np.asarray(values, dtype=float)
        if len(positions) == 0:
            raise ValueError("at least one measured commit is needed")
        if len(np.unique(positions)) != len(positions):
            raise ValueError("each commit once: average repeated measurements first")
        self.n_ = n
        # Below MIN_FIT measured commits the hyperparameters cannot be estimated
        # (two points fit anything): the starting values are used as they are.
        optimizer = "fmin_l_bfgs_b" if len(positions) >= MIN_FIT else None
        self.gp_ = GaussianProcessRegressor(
            _kernel(self.kernel), normalize_y=True, n_restarts_optimizer=0, optimizer=optimizer
        )
        with warnings.catch_warnings():
            # Few points often put a hyperparameter at its bound; the fit is still usable.
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.gp_.fit(self._x(positions), values)
        self.positions_ = positions
        return self

    def predict(self, positions=None) -> tuple[np.ndarray, np.ndarray]:
        """(mean, standard deviation) at ``positions`` (default: every commit)."""
        positions = np.arange(self.n_) if positions is None else positions
        mean, std = self.gp_.predict(self._x(positions), return_std=True)
        return np.asarray(mean), np.asarray(std)

    def next_positions(self, k: int) -> list[int]:
        """The ``k`` unmeasured commits to measure next, most informative first.

        Greedy: the commit whose value is still the most uncertain *relative to
        what was unknown before any measurement* (posterior over prior variance
        of the noise-free history), then the next one given that one too. The
        ratio matters for the Brownian kernel, whose prior variance grows along
        the history: the raw posterior variance would keep choosing the last
        commits whenever the fitted noise is large. For the stationary kernels
        the ratio ranks like the variance. A GP's posterior variance depends on
        where the measurements are, not on their values, so the chosen commits
        need no imagined values; the hyperparameters (fitted on the values)
        decide how far a measurement's information reaches.
        """
        latent = _without_noise(self.gp_.kernel_)
        x_all = self._x(np.arange(self.n_))
        chosen = list(self.positions_)
        picks: list[int] = []
        prior = np.maximum(latent.diag(x_all), 1e-12)
        # A fit that calls nearly everything noise would make every commit
        # equally (un)informative and the choice arbitrary: for choosing, the
        # noise counts at most a tenth of the history's prior variance.
        noise = min(_noise_level(self.gp_.kernel_), 0.1 * float(np.mean(prior)))
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


def _noise_level(kern) -> float:
    if isinstance(kern, Sum) and isinstance(kern.k2, WhiteKernel):
        return float(kern.k2.noise_level)
    return 0.0


def _without_noise(kern):
    """The fitted kernel minus its white-noise term (``kernel + WhiteKernel`` by construction)."""
    if isinstance(kern, Sum) and isinstance(kern.k2, WhiteKernel):
        return kern.k1
    return kern
