"""Bayesian online change-point detection (Adams & MacKay 2007).

The series is modelled as segments of i.i.d. Gaussian values with unknown
mean and variance (Normal-Gamma prior, Student-t predictive), and a constant
hazard ``1/expected_run`` that any commit starts a new segment. The filter
keeps, after each commit ``t``, the posterior over the length ``l`` of the
current segment (``x[t-l+1 .. t]``).

From it, a commit ``s`` is a change point when the posterior that a segment
*starts at s*, seen ``lag`` commits later, ``P(l_{s+lag} = lag + 1 | x[:s+lag+1])``,
is at least ``threshold``. The lag lets a few post-change values confirm
the new level (with lag 0 every outlier would start a segment); at the end
of the series the lag shrinks to what is available. Among flagged commits
closer than ``min_gap`` the most probable is kept.

The model may still explain a single outlier as a one-commit segment, after
which a "new" segment starts at the old level. So a flagged start is kept
only when the level really moves: the mean after it (up to the next flagged
group) differs from the mean before the group (since the last kept change)
by at least ``min_shift`` noise standard deviations.

Values are standardised first (median, and the noise level from first
differences) so that the default prior suits any unit: noise variance
around 1, level anywhere within a few hundred noise units of the median.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from triage.core.noise import robust_sigma
from triage.detectors.base import (
    NONNEG,
    NONNEG_INT,
    POSITIVE,
    PROBABILITY,
    ChangePoint,
    Detector,
    Range,
)


def _student_logpdf(
    x: float, mu: np.ndarray, kappa: np.ndarray, alpha: np.ndarray, beta: np.ndarray, gammaln: Callable
) -> np.ndarray:
    """Log predictive density of the Normal-Gamma model at ``x``, one per hypothesis
    (``gammaln``: scipy.special's, which the caller imports once per series)."""
    nu = 2.0 * alpha
    scale2 = beta * (kappa + 1.0) / (alpha * kappa)
    z = (x - mu) ** 2 / (nu * scale2)
    return (
        gammaln((nu + 1.0) / 2.0)
        - gammaln(nu / 2.0)
        - 0.5 * np.log(np.pi * nu * scale2)
        - (nu + 1.0) / 2.0 * np.log1p(z)
    )


class Bocpd(Detector):
    """Adams & MacKay's BOCPD with a Gaussian (unknown mean and variance) model.

    Parameters
    ----------
    expected_run : mean segment length in commits; hazard = 1/expected_run (250)
    lag : commits after a start used to confirm it (20)
    threshold : minimum posterior probability of a start (0.5)
    min_gap : flagged commits closer than this are one change (5)
    min_shift : minimum level shift, in noise standard deviations (1)
    kappa0, alpha0, beta0 : Normal-Gamma prior on standardised values
        (mean 0 with pseudo-count ``kappa0``; precision ~ Gamma(alpha0, beta0))

    ``score`` is the posterior probability of the start; fields ``lag_used``,
    ``shift_sigma``.
    """

    name = "bocpd"
    ranges: ClassVar[dict[str, Range]] = {
        "expected_run": ("float", 1, None, False, False), "lag": NONNEG_INT, "threshold": PROBABILITY,
        "min_gap": NONNEG_INT, "min_shift": NONNEG, "kappa0": POSITIVE, "alpha0": POSITIVE, "beta0": POSITIVE,
    }

    def __init__(
        self,
        expected_run: float = 250.0,
        lag: int = 20,
        threshold: float = 0.5,
        min_gap: int = 5,
        min_shift: float = 1.0,
        kappa0: float = 0.01,
        alpha0: float = 2.0,
        beta0: float = 1.0,
    ):
        self.expected_run = expected_run
        self.lag = lag
        self.threshold = threshold
        self.min_gap = min_gap
        self.min_shift = min_shift
        self.kappa0 = kappa0
        self.alpha0 = alpha0
        self.beta0 = beta0

    def start_probabilities(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior that each commit starts a segment, seen ``lag`` commits later.

        Returns ``(prob, lag_used)``, both shape (n,); ``prob[0]`` is 1 by
        construction (the first segment) and is never reported.
        """
        if self.expected_run <= 1:
            raise ValueError("expected_run must be > 1")
        if self.lag < 0:
            raise ValueError("lag must be >= 0")
        x = np.asarray(values, dtype=np.float64)
        n = len(x)
        if n == 0:  # no commit, no segment (and no median to warn about)
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        z = (x - np.median(x)) / robust_sigma(x)
        h = 1.0 / self.expected_run
        log_h, log_1h = np.log(h), np.log1p(-h)
        # Hypothesis j = segment of length j+1 ending at the current commit.
        mu = np.empty(0)
        kappa = np.empty(0)
        alpha = np.empty(0)
        beta = np.empty(0)
        logr = np.empty(0)  # log posterior over segment lengths
        prob = np.zeros(n)
        lag_used = np.zeros(n, dtype=np.int64)
        prior = (np.zeros(1), np.array([self.kappa0]), np.array([self.alpha0]), np.array([self.beta0]))
        # Imported here, once per series, not with the module: scipy.special takes 0.3 s to import.
        from scipy.special import gammaln

        for t in range(n):
            xt = z[t]
            # The new segment's first value is scored by the prior predictive.
            lp_new = _student_logpdf(xt, *prior, gammaln)[0]
            if t == 0:
                logr = np.array([lp_new])
            else:
                lp = _student_logpdf(xt, mu, kappa, alpha, beta, gammaln)
                grow = logr + lp + log_1h
                start = np.logaddexp.reduce(logr) + log_h + lp_new
                logr = np.concatenate([[start], grow])
            logr -= np.logaddexp.reduce(logr)
            # Posterior update: hypothesis j+1 extends old hypothesis j by xt.
            mu_p = np.concatenate([prior[0], mu])
            kappa_p = np.concatenate([prior[1], kappa])
            alpha_p = np.concatenate([prior[2], alpha])
            beta_p = np.concatenate([prior[3], beta])
            beta = beta_p + kappa_p * (xt - mu_p) ** 2 / (2.0 * (kappa_p + 1.0))
            mu = (kappa_p * mu_p + xt) / (kappa_p + 1.0)
            kappa = kappa_p + 1.0
            alpha = alpha_p + 0.5
            s = t - self.lag
            if s >= 0:
                prob[s] = np.exp(logr[self.lag])
                lag_used[s] = self.lag
        # The last `lag` commits are judged with what the series has.
        for s in range(max(0, n - self.lag), n):
            used = n - 1 - s
            prob[s] = np.exp(logr[used])
            lag_used[s] = used
        return prob, lag_used

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        if len(x) == 0:
            return []
        prob, lag_used = self.start_probabilities(x)
        flagged = [s for s in range(1, len(x)) if prob[s] >= self.threshold]
        groups: list[list[int]] = []
        for s in flagged:
            if groups and s - groups[-1][-1] < self.min_gap:
                groups[-1].append(s)
            else:
                groups.append([s])
        sigma = robust_sigma(x)
        out: list[ChangePoint] = []
        prev = 0
        for g, group in enumerate(groups):
            best = max(group, key=lambda i: prob[i])
            end = groups[g + 1][0] if g + 1 < len(groups) else len(x)
            # an outlier between the group's first start and the best one is left out
            before, after = x[prev : group[0]], x[best:end]
            shift = abs(float(np.mean(after)) - float(np.mean(before))) / sigma if len(before) else np.inf
            if shift < self.min_shift:
                continue
            out.append(
                ChangePoint(int(best), float(prob[best]), {"lag_used": int(lag_used[best]), "shift_sigma": float(shift)})
            )
            prev = best
        return out
