"""Compiled kernels of :class:`triage.features.incremental.PreState`.

They work on the state's arrays, laid out as
:mod:`triage.features.pre_state_slots` describes: ``f`` the scalar slots,
``first`` the leading values, ``ring`` the latest values (value ``t`` at
``t % len(ring)``), ``hu`` / ``hl`` the upper and lower convex hulls of the
cumulative sums, ``groups`` the update groups switched on.

* :func:`learn` appends one value to Pre (O(1), O(log n) with the hulls);
* :func:`exact_characteristics` reads the exactly-updated characteristics
  off the slots;
* :func:`standardised_tail`, :func:`crossing_points`, :func:`entropy` serve
  the characteristics bounded to the last ``horizon`` commits (the others of
  those come from :mod:`triage.features.fast`'s per-characteristic kernels);
* :func:`prepare_window` and :func:`periodogram` prepare a short window from
  scratch (After of a confirmation delay, a Pre of at most 10 commits) for
  :mod:`triage.features.fast`'s kernel: the same standardised values as
  :func:`triage.features.catalogue.prepare` bit for bit, and the periodogram
  by a direct DFT; numpy's calls cost more than the arithmetic on a few values;
* :func:`normalised_moments` gives the ``norm_*`` pair from Pre's running
  moments and After's values; :func:`ring_tail` copies Pre's latest values;
* :func:`row_kernel` makes a whole online row in one call from the kernels
  above, :mod:`triage.features.fast`'s and
  :mod:`triage.features.level_shift`'s (numba's on-disk cache of a caller does
  not notice when a callee in another module changes, so this one is keyed on
  their sources; see the comment above it). The others here call only this
  module's kernels and :mod:`triage.features.pairwise_sum`'s.

The formulas, and what is exact and what is bounded: the
:mod:`triage.features.incremental` docstring.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numba
import numpy as np

from triage.features import catalogue, fast, level_shift, pairwise_sum, pre_state_slots
from triage.features.pairwise_sum import pairwise_leaf
from triage.features.pre_state_slots import (
    GROUP_ACF,
    GROUP_BLOCKS,
    GROUP_DIFF,
    GROUP_HURST,
    GROUP_SHIFTS,
    LAGS,
    SLOT_BLOCK_MEANS_M2,
    SLOT_BLOCK_MEANS_MEAN,
    SLOT_BLOCK_VARS_M2,
    SLOT_BLOCK_VARS_MEAN,
    SLOT_COMOMENTS,
    SLOT_CUMSUM,
    SLOT_DIFF_COMOMENTS,
    SLOT_DIFF_M2,
    SLOT_DIFF_MAX,
    SLOT_DIFF_MEAN,
    SLOT_DIFF_MIN,
    SLOT_FIRST_VALUE,
    SLOT_HURST_K,
    SLOT_HURST_SU,
    SLOT_HURST_SUU,
    SLOT_HURST_SUV,
    SLOT_HURST_SV,
    SLOT_M2,
    SLOT_MAX,
    SLOT_MAX_LEVEL_SHIFT_RAW,
    SLOT_MAX_VAR_SHIFT_RAW,
    SLOT_MEAN,
    SLOT_MIN,
    SLOT_N,
    SLOT_N_BLOCKS,
    SLOT_N_LOWER,
    SLOT_N_UPPER,
    SMALL_PRE,
)

# Positions in a vector of catalogue characteristics (integer constants for numba).
_SERIAL_CORRELATION = catalogue.INDEX["serial_correlation"]
_STABILITY = catalogue.INDEX["stability"]
_LUMPINESS = catalogue.INDEX["lumpiness"]
_HURST = catalogue.INDEX["hurst"]
_X_ACF1 = catalogue.INDEX["x_acf1"]
_X_ACF10 = catalogue.INDEX["x_acf10"]
_DIFF1_ACF1 = catalogue.INDEX["diff1_acf1"]
_DIFF1_ACF10 = catalogue.INDEX["diff1_acf10"]
_MAX_LEVEL_SHIFT = catalogue.INDEX["max_level_shift"]
_MAX_VAR_SHIFT = catalogue.INDEX["max_var_shift"]
_STD1ST_DER = catalogue.INDEX["std1st_der"]
_SERIES_LENGTH = catalogue.INDEX["series_length"]
_FLAT_RTOL = catalogue.FLAT_RTOL
_MIN_LENGTH = catalogue.MIN_LENGTH


@numba.njit(cache=True)
def is_flat(lo, hi):
    return hi - lo <= _FLAT_RTOL * max(abs(hi), abs(lo))


@numba.njit(cache=True)
def _half(n):
    n2 = n // 2
    return n2 - n2 % 8


@numba.njit(cache=True)
def _np_sum(a, lo, n):
    """Sum of a[lo:lo+n] in numpy's pairwise order, so standardised windows match numpy bit for bit.

    numpy splits a long range in two halves (the first a multiple of 8 long)
    until pieces have <= 128 values. Evaluated with an explicit stack: numba
    cannot reliably load a recursive function from its on-disk cache.
    """
    if n <= 128:
        return pairwise_leaf(a, lo, n)
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    stage = np.zeros(64, np.int64)
    left = np.empty(64)
    sp = 1
    los[0] = lo
    ns[0] = n
    while True:
        i = sp - 1
        if ns[i] > 128:
            stage[i] = 1
            los[sp] = los[i]
            ns[sp] = _half(ns[i])
            stage[sp] = 0
            sp += 1
            continue
        r = pairwise_leaf(a, los[i], ns[i])
        sp -= 1
        while sp > 0:
            p = sp - 1
            if stage[p] == 1:
                left[p] = r
                stage[p] = 2
                h = _half(ns[p])
                los[sp] = los[p] + h
                ns[sp] = ns[p] - h
                stage[sp] = 0
                sp += 1
                break
            r = left[p] + r
            sp -= 1
        if sp == 0:
            return r


@numba.njit(cache=True)
def _block_mean_var(ring, start, stop):
    """Mean and variance (ddof=1, two passes) of values start..stop-1 held in the ring."""
    R = ring.size
    m = 0.0
    for t in range(start, stop):
        m += ring[t % R]
    m /= stop - start
    s = 0.0
    for t in range(start, stop):
        s += (ring[t % R] - m) ** 2
    return m, s / (stop - start - 1)


@numba.njit(cache=True)
def _hull_push(h, size, X, Y, upper):
    while size >= 2:
        ax, ay = h[size - 2, 0], h[size - 2, 1]
        bx, by = h[size - 1, 0], h[size - 1, 1]
        cross = (bx - ax) * (Y - ay) - (by - ay) * (X - ax)
        if (upper and cross >= 0.0) or (not upper and cross <= 0.0):
            size -= 1
        else:
            break
    h[size, 0] = X
    h[size, 1] = Y
    return size + 1


@numba.njit(cache=True)
def _hull_extreme(h, size, m, upper):
    """max (upper) or min (lower) over hull points of Y - m X, by binary search on edge slopes."""
    lo = 0
    hi = size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        rise = h[mid + 1, 1] - h[mid, 1]
        run = m * (h[mid + 1, 0] - h[mid, 0])
        if (upper and rise > run) or (not upper and rise < run):
            lo = mid + 1
        else:
            hi = mid
    return h[lo, 1] - m * h[lo, 0]


@numba.njit(cache=True)
def block_var_scale(first_value):
    """The power of two the block variances are accumulated times (exact: no rounding).

    1 unless the series' first value lies beyond 2**+-64: lumpiness squares
    the block variances (the fourth power of the values), which overflowed
    for values near 1e80 (NaN) and underflowed to 0 near 1e-80 (a division
    by zero), both inside the usable range of :mod:`triage.core.values`.
    There the scale brings the variances near 1. 1 for ordinary values keeps
    every state written before bit for bit.
    """
    if first_value == 0.0 or not math.isfinite(first_value):
        return 1.0
    e = math.frexp(first_value)[1]
    if -64 <= e <= 64:
        return 1.0
    return math.ldexp(1.0, -2 * e)


@numba.njit(cache=True)
def learn(f, first, ring, hu, hl, x, groups):
    """Append x to Pre. Callers ensure the hulls have room for one more point."""
    n = int(f[SLOT_N])
    R = ring.size
    m_old = f[SLOT_MEAN]
    m_new = m_old + (x - m_old) / (n + 1)
    if groups[GROUP_ACF] and n >= 1:
        delta = m_new - m_old
        P = 0.0
        Q = 0.0
        for k in range(1, min(n, LAGS) + 1):
            a = ring[(n - k) % R]
            P -= a - m_old
            Q -= first[k - 1] - m_old
            f[SLOT_COMOMENTS + k - 1] += -delta * (P + Q) + (n - k) * delta * delta + (a - m_new) * (x - m_new)
    f[SLOT_M2] += (x - m_old) * (x - m_new)
    f[SLOT_MEAN] = m_new
    if n == 0:
        f[SLOT_MIN] = x
        f[SLOT_MAX] = x
        f[SLOT_FIRST_VALUE] = x
    else:
        f[SLOT_MIN] = min(f[SLOT_MIN], x)
        f[SLOT_MAX] = max(f[SLOT_MAX], x)
    if groups[GROUP_DIFF] and n >= 1:
        d = x - ring[(n - 1) % R]
        nd = n - 1  # differences so far; the new one has index nd
        dm_old = f[SLOT_DIFF_MEAN]
        dm_new = dm_old + (d - dm_old) / (nd + 1)
        delta = dm_new - dm_old
        P = 0.0
        Q = 0.0
        for k in range(1, min(nd, LAGS) + 1):
            a = ring[(n - k) % R] - ring[(n - k - 1) % R]
            P -= a - dm_old
            Q -= first[k] - first[k - 1] - dm_old
            f[SLOT_DIFF_COMOMENTS + k - 1] += -delta * (P + Q) + (nd - k) * delta * delta + (a - dm_new) * (d - dm_new)
        f[SLOT_DIFF_M2] += (d - dm_old) * (d - dm_new)
        f[SLOT_DIFF_MEAN] = dm_new
        if nd == 0:
            f[SLOT_DIFF_MIN] = d
            f[SLOT_DIFF_MAX] = d
        else:
            f[SLOT_DIFF_MIN] = min(f[SLOT_DIFF_MIN], d)
            f[SLOT_DIFF_MAX] = max(f[SLOT_DIFF_MAX], d)
    ring[n % R] = x
    if n < first.size:
        first[n] = x
    n += 1
    f[SLOT_N] = n
    if groups[GROUP_BLOCKS] and n % LAGS == 0:
        bm, bv = _block_mean_var(ring, n - LAGS, n)
        bv *= block_var_scale(f[SLOT_FIRST_VALUE])
        nb = f[SLOT_N_BLOCKS] + 1.0
        dm = bm - f[SLOT_BLOCK_MEANS_MEAN]
        f[SLOT_BLOCK_MEANS_MEAN] += dm / nb
        f[SLOT_BLOCK_MEANS_M2] += dm * (bm - f[SLOT_BLOCK_MEANS_MEAN])
        dv = bv - f[SLOT_BLOCK_VARS_MEAN]
        f[SLOT_BLOCK_VARS_MEAN] += dv / nb
        f[SLOT_BLOCK_VARS_M2] += dv * (bv - f[SLOT_BLOCK_VARS_MEAN])
        f[SLOT_N_BLOCKS] = nb
    if groups[GROUP_SHIFTS] and n >= 2 * LAGS:
        ma, va = _block_mean_var(ring, n - 2 * LAGS, n - LAGS)
        mb, vb = _block_mean_var(ring, n - LAGS, n)
        f[SLOT_MAX_LEVEL_SHIFT_RAW] = max(f[SLOT_MAX_LEVEL_SHIFT_RAW], abs(mb - ma))
        f[SLOT_MAX_VAR_SHIFT_RAW] = max(f[SLOT_MAX_VAR_SHIFT_RAW], abs(vb - va))
    if groups[GROUP_HURST]:
        # Cumulative sums of x - (first value) keep Y small for a level series.
        Y = f[SLOT_CUMSUM] + (x - f[SLOT_FIRST_VALUE])
        f[SLOT_CUMSUM] = Y
        X = float(n)
        f[SLOT_N_UPPER] = _hull_push(hu, int(f[SLOT_N_UPPER]), X, Y, True)
        f[SLOT_N_LOWER] = _hull_push(hl, int(f[SLOT_N_LOWER]), X, Y, False)
        if n >= 2 and not is_flat(f[SLOT_MIN], f[SLOT_MAX]):
            m = Y / n
            r = _hull_extreme(hu, int(f[SLOT_N_UPPER]), m, True) - _hull_extreme(hl, int(f[SLOT_N_LOWER]), m, False)
            s = math.sqrt(f[SLOT_M2] / n)
            if r > 0.0 and s > 0.0:
                u = math.log(X)
                v = math.log(r / s)
                f[SLOT_HURST_K] += 1.0
                f[SLOT_HURST_SU] += u
                f[SLOT_HURST_SV] += v
                f[SLOT_HURST_SUU] += u * u
                f[SLOT_HURST_SUV] += u * v


@numba.njit(cache=True)
def exact_characteristics(f, groups, out):
    """Exact-state characteristics (of the updated groups) of a non-flat Pre longer than 10 commits."""
    n = f[SLOT_N]
    var = f[SLOT_M2] / (n - 1.0)
    sd = math.sqrt(var)
    if groups[GROUP_ACF]:
        acc = 0.0
        for k in range(LAGS):
            r = f[SLOT_COMOMENTS + k] / f[SLOT_M2]
            if k == 0:
                out[_X_ACF1] = r
            acc += r * r
        out[_X_ACF10] = acc
        out[_SERIAL_CORRELATION] = n * acc
    if groups[GROUP_DIFF]:
        if is_flat(f[SLOT_DIFF_MIN], f[SLOT_DIFF_MAX]):
            out[_DIFF1_ACF1] = 0.0
            out[_DIFF1_ACF10] = 0.0
        else:
            acc = 0.0
            for k in range(LAGS):
                r = f[SLOT_DIFF_COMOMENTS + k] / f[SLOT_DIFF_M2]
                if k == 0:
                    out[_DIFF1_ACF1] = r
                acc += r * r
            out[_DIFF1_ACF10] = acc
        out[_STD1ST_DER] = math.sqrt(f[SLOT_DIFF_M2] / (n - 2.0)) / sd
    if groups[GROUP_BLOCKS]:
        if n < 2 * LAGS:
            out[_STABILITY] = 0.0
            out[_LUMPINESS] = 0.0
        else:
            out[_STABILITY] = f[SLOT_BLOCK_MEANS_M2] / (f[SLOT_N_BLOCKS] - 1.0) / var
            scaled = var * block_var_scale(f[SLOT_FIRST_VALUE])  # as the block variances are
            square = scaled * scaled
            if square != 0.0:
                out[_LUMPINESS] = f[SLOT_BLOCK_VARS_M2] / (f[SLOT_N_BLOCKS] - 1.0) / square
            else:
                # values below ~1e-77 after a first value of 0 (no scale): the square underflows to 0
                # (a ZeroDivisionError), one division at a time does not
                out[_LUMPINESS] = f[SLOT_BLOCK_VARS_M2] / (f[SLOT_N_BLOCKS] - 1.0) / scaled / scaled
    if groups[GROUP_SHIFTS]:
        out[_MAX_LEVEL_SHIFT] = f[SLOT_MAX_LEVEL_SHIFT_RAW] / sd
        out[_MAX_VAR_SHIFT] = f[SLOT_MAX_VAR_SHIFT_RAW] / var
    if groups[GROUP_HURST]:
        k = f[SLOT_HURST_K]
        if k < 2.0:
            out[_HURST] = 0.5
        else:
            out[_HURST] = (f[SLOT_HURST_SUV] - f[SLOT_HURST_SU] * f[SLOT_HURST_SV] / k) / (f[SLOT_HURST_SUU] - f[SLOT_HURST_SU] * f[SLOT_HURST_SU] / k)
    out[_SERIES_LENGTH] = n


@numba.njit(cache=True)
def prepare_window(x):
    """:func:`triage.features.catalogue.prepare` of a raw window, bit for bit; empty when it gives None.

    Repeated to length 4 when shorter, divided by its largest magnitude,
    standardised with numpy's pairwise sums.
    """
    n0 = x.size
    if n0 == 0:
        return np.empty(0)
    lo = x.min()
    hi = x.max()
    if is_flat(lo, hi):
        return np.empty(0)
    n = max(n0, _MIN_LENGTH)
    scale = max(abs(lo), abs(hi))
    w = np.empty(n)
    for i in range(n):
        w[i] = x[i % n0] / scale
    mean = _np_sum(w, 0, n) / n
    d = np.empty(n)
    for i in range(n):
        d[i] = (w[i] - mean) * (w[i] - mean)
    sd = math.sqrt(_np_sum(d, 0, n) / (n - 1))
    if not math.isfinite(sd) or sd == 0.0:
        return np.empty(0)
    for i in range(n):
        w[i] = (w[i] - mean) / sd
    return w


@numba.njit(cache=True)
def periodogram(z):
    """:func:`triage.features.fast.periodogram` by a direct DFT (numba has no FFT), O(n^2)."""
    n = z.size
    zm = _np_sum(z, 0, n) / n
    nk = n // 2 + 1
    cos_t = np.empty(n)
    sin_t = np.empty(n)
    for j in range(n):
        cos_t[j] = math.cos(2.0 * math.pi * j / n)
        sin_t[j] = math.sin(2.0 * math.pi * j / n)
    psd = np.empty(nk)
    for k in range(nk):
        re = 0.0
        im = 0.0
        j = 0
        for t in range(n):
            d = z[t] - zm
            re += d * cos_t[j]
            im -= d * sin_t[j]
            j += k
            if j >= n:
                j -= n
        p = re * re + im * im
        if k > 0 and not (n % 2 == 0 and k == nk - 1):
            p *= 2.0
        psd[k] = p
    return psd


@numba.njit(cache=True)
def normalised_moments(f, after, out):
    """``catalogue.normalised_moments(Pre, after)`` into ``out`` from Pre's running min, max, mean and M2."""
    n = int(f[SLOT_N])
    m = after.size
    out[:] = 0.0
    a_lo = after.min()
    a_hi = after.max()
    lo = min(f[SLOT_MIN], a_lo) if n else a_lo
    hi = max(f[SLOT_MAX], a_hi) if n else a_hi
    if is_flat(lo, hi):
        return
    span = hi - lo
    if n:
        out[0] = (f[SLOT_MEAN] - lo) / span
        if n > 1:
            out[2] = math.sqrt(f[SLOT_M2] / (n - 1)) / span
    u = np.empty(m)
    for i in range(m):
        u[i] = (after[i] - lo) / span
    mean = _np_sum(u, 0, m) / m
    out[1] = mean
    if m > 1:
        d = np.empty(m)
        for i in range(m):
            d[i] = (u[i] - mean) * (u[i] - mean)
        out[3] = math.sqrt(_np_sum(d, 0, m) / (m - 1))


@numba.njit(cache=True)
def ring_tail(ring, n, k):
    """Pre's last ``min(n, k, len(ring))`` values, oldest first."""
    R = ring.size
    kept = min(n, k, R)
    out = np.empty(kept)
    for i in range(kept):
        out[i] = ring[(n - kept + i) % R]
    return out


@numba.njit(cache=True)
def entropy(z):
    """The catalogue's spectral entropy by a direct DFT (numba has no FFT)."""
    psd = periodogram(z)
    nk = psd.size
    tot = psd.sum()
    h = 0.0
    if tot > 0.0:
        for k in range(nk):
            pk = psd[k] / tot
            if pk > 0.0:
                h -= pk * math.log(pk) / math.log(2.0)
        h /= math.log2(float(nk))
    return h


@numba.njit(cache=True)
def standardised_tail(ring, n, width):
    """The last `width` values of Pre, standardised as catalogue.prepare does (in
    numpy's summation order, so the result matches it bit for bit); an empty
    array when that window is flat."""
    R = ring.size
    w = np.empty(width)
    for i in range(width):
        w[i] = ring[(n - width + i) % R]
    lo = w.min()
    hi = w.max()
    if is_flat(lo, hi):
        return np.empty(0)
    x = w / max(abs(lo), abs(hi))
    mean = _np_sum(x, 0, width) / width
    d = x - mean
    d = d * d
    sd = math.sqrt(_np_sum(d, 0, width) / (width - 1))
    return (x - mean) / sd


@numba.njit(cache=True)
def crossing_points(z):
    med = np.median(z)
    cross = 0
    for t in range(z.size - 1):
        if (z[t] <= med) != (z[t + 1] <= med):
            cross += 1
    return float(cross)


# ---------------------------------------------------------------------- one row in one call
#
# The online row of a fresh commit (Pre's characteristics, After's, the norm
# pair and the pair_* measures) used to take about a dozen compiled calls
# with Python between them; each call's dispatch and the fancy-indexed copies
# cost more than the arithmetic on a handful of values. ``row_kernel`` makes
# them one call, calling the same kernels (no second definition of any
# characteristic). It links code of other modules (fast, level_shift,
# pairwise_sum, and the constants of catalogue and pre_state_slots), and
# numba's on-disk cache of a kernel is keyed on its own file only: a change to
# a callee would leave a stale compiled row. So the kernel is a closure over
# a digest of those files' sources, and numba keys its cache index on the
# closure's cell contents too (``numba.core.caching.Cache._index_key``): any
# edit of a callee compiles the row afresh.

_ROW_SOURCES = (fast, level_shift, pairwise_sum, catalogue, pre_state_slots)
#: Where :func:`row_kernel` reads its plan (a bool vector): what to compute now,
#: what to leave NaN (deferred), and which parts of the row the layout has.
PLAN_NOW = 0
PLAN_LEFT_OUT = catalogue.N_CHARACTERISTICS
PLAN_EXACT = 2 * catalogue.N_CHARACTERISTICS
PLAN_FAST = PLAN_EXACT + 1
PLAN_AFTER = PLAN_EXACT + 2
PLAN_NORM = PLAN_EXACT + 3
PLAN_PAIR = PLAN_EXACT + 4
PLAN_SIZE = PLAN_EXACT + 5
#: Where each part sits in the vector the row is gathered from: Pre's
#: characteristics, After's, the norm pair, the pair_* measures.
SOURCE_PRE = 0
SOURCE_AFTER = catalogue.N_CHARACTERISTICS
SOURCE_NORM = 2 * catalogue.N_CHARACTERISTICS
SOURCE_PAIR = SOURCE_NORM + 4
SOURCE_SIZE = SOURCE_PAIR + len(level_shift.PAIR_COLUMNS)
_N_CHARS = catalogue.N_CHARACTERISTICS
_CROSSING_POINTS = catalogue.INDEX["crossing_points"]
_ENTROPY = catalogue.INDEX["entropy"]
_FLAT_SPOTS = catalogue.INDEX["flat_spots"]
_PAIR_CAP = level_shift.PAIR_CAP
_N_PAIR = len(level_shift.PAIR_COLUMNS)


def _sources_digest(modules) -> str:
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()


@numba.njit(cache=False)
def bounded_into(ring, n, horizon, want, any_fast, pre):
    """The bounded characteristics ``want`` asks for, on Pre's last ``min(n, horizon)`` values, into ``pre``.

    What ``PreState._bounded_part`` computes, for the compiled rows
    (``row_kernel``, ``round_complete``). Not cached on its own: it is only
    compiled into those kernels, whose cache keys cover what it calls.
    """
    width = min(n, horizon)
    z = standardised_tail(ring, n, width)
    if z.size == 0:  # flat tail: the catalogue's constant-window values
        for k in range(_N_CHARS):
            if want[k]:
                pre[k] = 0.0
        if want[_FLAT_SPOTS]:
            pre[_FLAT_SPOTS] = float(width)
    else:
        if want[_CROSSING_POINTS]:
            pre[_CROSSING_POINTS] = crossing_points(z)
        if want[_ENTROPY]:
            pre[_ENTROPY] = entropy(z)
        if any_fast:
            # np.int64: a bare global reaches the callee as Literal[int](10), a second compilation of the
            # kernel (and of max_kl_shift under it) beside the one PreState's Python path makes.
            fast.bounded_characteristics(z, np.int64(LAGS), want, pre)


def _make_row_kernel(cache_key: str):
    @numba.njit(cache=True)
    def row_kernel(f, groups, ring, horizon, plan, gather, after, after_flat, pre_out, row):
        """One online feature row of a fresh Pre and After, into ``row``.

        What ``PreState.features_array`` computes through
        ``pre_characteristics`` (with ``defer``: the ``PLAN_LEFT_OUT``
        characteristics NaN), :func:`window_characteristics` of After,
        :func:`normalised_moments` and ``online_pair_features``, with the
        same kernels in the same order, so the same numbers bit for bit;
        ``row[j] = sources[gather[j]]`` places them (``SOURCE_*``). Pre's
        characteristics are also written to ``pre_out`` (the state caches
        them). Returns False, having written nothing, where the Python path
        must decide: a Pre of at most ``SMALL_PRE`` commits, a flat Pre, an After longer than ``PAIR_CAP``, a pair
        kernel that declines.
        """
        if len(cache_key) == 0:  # the closure's cell keys numba's cache (see above)
            return False
        n = int(f[SLOT_N])
        if n <= SMALL_PRE or is_flat(f[SLOT_MIN], f[SLOT_MAX]) or after.size > _PAIR_CAP:
            return False
        src = np.empty(SOURCE_SIZE)
        if plan[PLAN_PAIR]:
            pair = np.empty(_N_PAIR)
            if not level_shift._pair_own_floor(ring_tail(ring, n, np.int64(_PAIR_CAP)), after, pair):
                return False
            for k in range(_N_PAIR):
                src[SOURCE_PAIR + k] = pair[k]
        pre = np.zeros(_N_CHARS)
        if plan[PLAN_EXACT]:
            exact_characteristics(f, groups, pre)
        want = plan[PLAN_NOW : PLAN_NOW + _N_CHARS]
        any_now = False
        for k in range(_N_CHARS):
            any_now = any_now or want[k]
        if any_now:
            bounded_into(ring, n, horizon, want, plan[PLAN_FAST], pre)
        for k in range(_N_CHARS):
            if plan[PLAN_LEFT_OUT + k]:
                pre[k] = np.nan
            pre_out[k] = pre[k]
            src[SOURCE_PRE + k] = pre[k]
        if plan[PLAN_AFTER]:
            za = prepare_window(after)
            if za.size == 0:
                for k in range(_N_CHARS):
                    src[SOURCE_AFTER + k] = after_flat[k]
            else:
                chars = np.empty(_N_CHARS)
                fast._kernel(za, periodogram(za), float(after.size), chars)
                for k in range(_N_CHARS):
                    src[SOURCE_AFTER + k] = chars[k]
        if plan[PLAN_NORM]:
            norm = np.empty(4)
            normalised_moments(f, after, norm)
            for k in range(4):
                src[SOURCE_NORM + k] = norm[k]
        for j in range(gather.size):
            row[j] = src[gather[j]]
        return True

    return row_kernel


row_kernel = _make_row_kernel(_sources_digest(_ROW_SOURCES))


# ---------------------------------------------------------------------- a round of many series in one call
#
# A replay decides one commit of each of many series per round. With the Pre
# states of a group side by side in shared arrays (row g = series g; see
# ``incremental.PrePool``) a round's rows and a round's updates are one
# compiled call each instead of two Python calls per series. They call
# ``row_kernel`` and ``learn`` above, so they link the same modules: their
# cache is keyed the same way (a closure over the digest; the kernels they
# call are module globals, resolved when they are compiled, not closure
# cells, which numba would pickle into the key).


def _make_round_kernels(cache_key: str):
    @numba.njit(cache=True, nogil=True)
    def round_rows(f, ring, groups, horizon, plan, gather, values, starts, members, rows, i, k, after_flat, pre_out, X, declined):
        """``row_kernel`` for each member g = ``members[j]`` into ``X[rows[j]]``.

        Member g's After is ``values[starts[g] + i - k : starts[g] + i + 1]``
        (its commits i - k .. i; ``values`` holds the group's series one after
        another); its Pre's characteristics go to ``pre_out[g]``.
        ``declined[j]`` is set where the kernel declined (the caller builds
        that row in Python); nothing else is written for it.
        """
        if len(cache_key) == 0:  # the closure's cell keys numba's cache (see above)
            return
        for j in range(members.size):
            g = members[j]
            s = starts[g] + i - k
            declined[j] = not row_kernel(
                f[g], groups, ring[g], horizon, plan, gather, values[s : s + k + 1], after_flat, pre_out[g], X[rows[j]]
            )

    @numba.njit(cache=True, nogil=True)
    def round_learn(f, first, ring, hu, hl, groups, values, starts, members, i, k, full):
        """``learn`` of each member's commit i - k (see :func:`round_rows`).

        A member whose hulls have no room for one more point is skipped and
        flagged in ``full`` (the caller grows the hulls and learns it again).
        """
        if len(cache_key) == 0:
            return
        cap_u = hu.shape[1]
        cap_l = hl.shape[1]
        for j in range(members.size):
            g = members[j]
            if f[g, SLOT_N_UPPER] + 1 > cap_u or f[g, SLOT_N_LOWER] + 1 > cap_l:
                full[j] = True
                continue
            full[j] = False
            learn(f[g], first[g], ring[g], hu[g], hl[g], values[starts[g] + i - k], groups)

    @numba.njit(cache=True, nogil=True)
    def round_complete(f, ring, horizon, want, any_fast, members, rows, pre_out, pre_pos, pre_index, X):
        """The characteristics ``want`` of each member's Pre into ``pre_out[g]``, then its ``pre_*`` columns into ``X[rows[j]]``.

        Completes rows :func:`round_rows` built (``PreState.complete_into``
        for each, with the characteristics the row left out and the stage
        now asks for); ``X[r, pre_pos[q]] = pre_out[g, pre_index[q]]``.
        """
        if len(cache_key) == 0:
            return
        for j in range(members.size):
            g = members[j]
            bounded_into(ring[g], int(f[g, SLOT_N]), horizon, want, any_fast, pre_out[g])
            for q in range(pre_pos.size):
                X[rows[j], pre_pos[q]] = pre_out[g, pre_index[q]]

    return round_rows, round_learn, round_complete


round_rows, round_learn, round_complete = _make_round_kernels(_sources_digest(_ROW_SOURCES))
