"""KSTEP: this project's kernel step detector with a windowed Welch test.

An earlier reading of KB-KSSD (Beseda et al.) that this project wrote before
it followed the authors' own configuration (:mod:`kbkssd`); it keeps
their three ingredients but not their details, and on this project's
generated warm-up runs it places the onset far more precisely (BENCHMARKS.md,
"Steady-state detection"). It finds steps in both directions. Parameters were
set on those generated runs (``benchmarks/bench_steady_state.py``).

1. **Outlier filtering by median-based percentiles.** The residual of each
   iteration from a running median (``outlier_window`` iterations) is compared
   with the ``outlier_percentile``-th percentile of all absolute residuals; an
   iteration further than ``outlier_factor`` times that percentile is an
   outlier (a GC pause, an interrupt) and is replaced by the running median for
   the next two steps, so that one spike is never read as a step.
2. **Kernel-based step detection.** The run is convolved with a step kernel of
   half-width ``h`` (``-1/h`` on the ``h`` iterations before, ``+1/h`` on the
   ``h`` after): the response at ``t`` is the difference of the means after and
   before ``t``, divided by its standard error under noise alone
   (``sigma * sqrt(2/h)``, ``sigma`` from first differences). Where the
   response exceeds ``step_threshold`` the level is still moving; the
   candidate steady start is the position of the strongest response in the
   last stretch above the threshold (for a clean step, the step itself). ``h``
   is ``kernel_width`` clipped to an eighth of the run.
3. **Windowed statistical test.** From the candidate start, the window of the
   next ``test_window`` iterations is compared with everything after it by
   Welch's t-test; while they differ (``p < alpha``) the start moves one
   ``test_step`` on. This absorbs the slow tail of an exponential warm-up that
   the step kernel cannot see.

The run is **never steady** when the steady part left is shorter than
``min_steady`` of the run (or than two test windows): the level was still
moving near the end of the run) or when the last ``test_window`` iterations
differ from the steady part before them by the same test (a step too close to
the end for the kernel to see).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from triage.detectors.base import Range
from triage.steady_state.base import (
    COUNT,
    NONNEG,
    PERCENTILE,
    POSITIVE,
    PROBABILITY,
    as_run,
    check_params,
    noise_level,
)


def running_median(x: np.ndarray, window: int) -> np.ndarray:
    """Centred running median; the ends use the nearest full window."""
    n = len(x)
    w = min(window, n)
    if w <= 1:
        return x.copy()
    half = w // 2
    view = np.lib.stride_tricks.sliding_window_view(x, w)
    med = np.median(view, axis=1)
    out = np.empty(n)
    out[half : half + len(med)] = med
    out[:half] = med[0]
    out[half + len(med) :] = med[-1]
    return out


def filter_outliers(
    x: np.ndarray, window: int, percentile: float, factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """(cleaned run, outlier mask): outliers replaced by the running median."""
    med = running_median(x, window)
    dev = np.abs(x - med)
    limit = factor * float(np.percentile(dev, percentile))
    if limit <= 0:  # a run constant up to a few spikes: any deviation is one
        limit = 0.0
        mask = dev > 0
    else:
        mask = dev > limit
    return np.where(mask, med, x), mask


def step_response(x: np.ndarray, h: int, sigma: float) -> np.ndarray:
    """z-score of (mean of x[t:t+h]) - (mean of x[t-h:t]) for every t; 0 where undefined."""
    n = len(x)
    z = np.zeros(n)
    if n < 2 * h or h < 1:
        return z
    c = np.r_[0.0, np.cumsum(x)]
    t = np.arange(h, n - h + 1)
    after = (c[t + h] - c[t]) / h
    before = (c[t] - c[t - h]) / h
    z[t] = (after - before) / (sigma * np.sqrt(2.0 / h))
    return z


class KernelStepSSD:
    """Kernel step detection and a windowed Welch test on one run (see module docstring).

    Parameters
    ----------
    kernel_width : half-width ``h`` of the step kernel in iterations (20)
    step_threshold : response (z-score) above which the level is moving (5.0)
    outlier_window, outlier_percentile, outlier_factor : outlier filter (21, 90, 3.0)
    test_window, test_step : window of the t-test and how far it moves (30, 5)
    alpha : significance level of the windowed test (0.001)
    min_steady : shortest steady part, as a share of the run (0.1)

    Attributes
    ----------
    start_ : first steady iteration, or ``None`` (never steady)
    outliers_ : boolean mask of the iterations the filter replaced
    response_ : the step-kernel response (z-scores) on the cleaned run
    """

    def __init__(
        self,
        kernel_width: int = 20,
        step_threshold: float = 5.0,
        outlier_window: int = 21,
        outlier_percentile: float = 90.0,
        outlier_factor: float = 3.0,
        test_window: int = 30,
        test_step: int = 5,
        alpha: float = 0.001,
        min_steady: float = 0.1,
    ):
        self.kernel_width = kernel_width
        self.step_threshold = step_threshold
        self.outlier_window = outlier_window
        self.outlier_percentile = outlier_percentile
        self.outlier_factor = outlier_factor
        self.test_window = test_window
        self.test_step = test_step
        self.alpha = alpha
        self.min_steady = min_steady

    ranges: ClassVar[dict[str, Range]] = {
        "kernel_width": COUNT,
        "step_threshold": NONNEG,
        "outlier_window": COUNT,
        "outlier_percentile": PERCENTILE,
        "outlier_factor": POSITIVE,
        "test_window": ("int", 2, None, True, False),  # Welch's test needs two values a side
        "test_step": COUNT,
        "alpha": PROBABILITY,
        "min_steady": ("float", 0, 1, True, False),
    }

    def fit(self, x: object) -> KernelStepSSD:
        check_params("kstep", self, self.ranges)
        run = as_run(x)
        n = len(run)
        if n == 0:  # nothing to be steady
            self.outliers_, self.response_, self.start_ = np.zeros(0, dtype=bool), np.zeros(0), None
            return self
        clean, self.outliers_ = filter_outliers(
            run, self.outlier_window, self.outlier_percentile, self.outlier_factor
        )
        sigma = noise_level(clean)
        h = max(2, min(self.kernel_width, n // 8))
        self.response_ = step_response(clean, h, sigma)
        start = self._candidate(np.abs(self.response_))
        w = max(5, min(self.test_window, n // 10))
        start = self._windowed_test(clean, start, w)
        min_len = max(2 * w, int(np.ceil(self.min_steady * n)))
        steady = n - start >= min_len and not self._differs(clean[n - w :], clean[start : n - w])
        self.start_ = start if steady else None
        return self

    def _differs(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Welch's t-test at ``alpha``; two constant windows differ when their values do.

        The test runs on both windows centred and scaled by their common
        spread (it is invariant to that): Welch's degrees of freedom square the
        variances, which overflow near 1e77 and vanish near 1e-77.
        """
        if len(a) < 2 or len(b) < 2:
            return False
        if np.ptp(a) == 0 and np.ptp(b) == 0:
            return bool(a[0] != b[0])
        both = np.r_[a, b]
        centre, spread = float(np.median(both)), float(np.ptp(both))
        a, b = (a - centre) / spread, (b - centre) / spread
        from scipy import stats  # imported on first use (about 1 s)

        return bool(stats.ttest_ind(a, b, equal_var=False).pvalue < self.alpha)

    def _candidate(self, r: np.ndarray) -> int:
        above = r > self.step_threshold
        if not above.any():
            return 0
        last = int(np.flatnonzero(above)[-1])
        first = last
        while first > 0 and above[first - 1]:
            first -= 1
        return first + int(np.argmax(r[first : last + 1]))

    def _windowed_test(self, x: np.ndarray, start: int, w: int) -> int:
        """The first start whose next window matches the rest; ``len(x)`` if none does."""
        n = len(x)
        step = max(1, self.test_step)
        if n - start < 3 * w:
            return start  # too little left to test: the length rule decides
        while n - start >= 3 * w:
            if not self._differs(x[start : start + w], x[start + w :]):
                return start
            start += step
        return n
