"""The Brownian kernel over the commit axis, as a scikit-learn kernel.

Muehlbauer, Apel and Siegmund ("Accurate Modeling of Performance Histories
for Evolving Software Systems") found a Brownian-motion kernel the most
accurate prior for performance histories: performance moves by small and
occasional large steps from commit to commit, and a Wiener process
(covariance ``variance * min(x, x')``) is exactly a random walk's limit. It
is not stationary: the variance grows with ``x``, so positions must be
non-negative (:mod:`triage.sampling.gp` maps commits onto ``[0, 1]`` and adds
a constant kernel for the level at the first commit).
"""

from __future__ import annotations

import numpy as np
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel


class Brownian(Kernel):
    """``k(x, x') = variance * min(x, x')`` for one-dimensional ``x >= 0``."""

    def __init__(
        self, variance: float = 1.0, variance_bounds: tuple[float, float] | str = (1e-5, 1e5)
    ):
        self.variance = variance
        self.variance_bounds = variance_bounds

    @property
    def hyperparameter_variance(self) -> Hyperparameter:
        return Hyperparameter("variance", "numeric", self.variance_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        if Y is not None and eval_gradient:
            raise ValueError("gradient only when Y is None")
        Y = X if Y is None else np.atleast_2d(Y)
        K = self.variance * np.minimum(X[:, [0]], Y[:, 0][None, :])
        if not eval_gradient:
            return K
        if self.hyperparameter_variance.fixed:
            return K, np.empty((X.shape[0], X.shape[0], 0))
        # The optimiser works on log(variance): dK/dlog(variance) = K.
        return K, K[:, :, np.newaxis]

    def diag(self, X):
        return self.variance * np.atleast_2d(X)[:, 0]

    def is_stationary(self):
        return False

    def __repr__(self):
        return f"Brownian(variance={self.variance:.3g})"
