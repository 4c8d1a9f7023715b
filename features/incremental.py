r"""Per-series online state: the features of (Pre, new commit) without recomputing Pre.

In the online loop (Bauer et al., ICPE 2022, with After = the new commit alone,
``window = 0``) every new commit ``x`` is described by the characteristics of
Pre (the commits since the last change point, :mod:`features.windows`) and of
``[x]``, then classified. :class:`PreState` keeps what those characteristics
need as running summaries, in the spirit of river's ``learn_one``: appending
a commit costs O(1) (O(log n) for the Hurst query), whatever the length of Pre.

Usage, one state per series::

    state = PreState(names=PAPER_CHARACTERISTICS, series_id="perf/insert")
    for x in stream:
        row = state.features_one(x)       # {column: value}, Pre = commits so far
        if model.is_change(row):
            state.reset()                 # x is a change point: Pre restarts after it
        else:
            state.learn_one(x)            # x joins Pre

Every commit goes through exactly one of :meth:`learn_one` or :meth:`reset`:
by :mod:`features.windows`, Pre after a change point ``c`` starts at ``c + 1``
(``Pre = [p- + 1, p - 1]``), so the change-point commit itself belongs to no
Pre. The state counts those calls to name the index of a bad value.

What is exact and what is bounded
---------------------------------
The characteristics are those of :mod:`features.catalogue`, on the standardised
window ``z``. All of them are scale-free, so the state works on raw values and
rescales at the end. For Pre of ``n <= 10`` commits (lag 2, short windows
repeated) the state calls :func:`features.fast.window_characteristics` on the
stored values, a constant cost. For ``n > 10`` (lag ``l = 10``):

exact, O(1) per commit (:data:`EXACT`)
    ``series_length``; ``x_acf1``, ``x_acf10``, ``serial_correlation`` and
    ``diff1_acf1``, ``diff1_acf10``: lagged co-moments ``C_k = sum (x_t - m)
    (x_{t+k} - m)`` about the *current* mean ``m`` for ``k = 1..10``, updated
    when ``m`` moves by ``D`` as ``C_k - D (P_k + R_k) + (n - k) D^2`` plus the
    new pair, where ``P_k``, ``R_k`` are sums of deviations of the last / first
    ``k`` values (they follow from ``sum (x_t - m) = 0``), so no large raw
    power sums ever cancel; ``std1st_der`` (Welford on the differences);
    ``stability`` and ``lumpiness`` (Welford over the completed blocks of 10,
    blocks counted from the start of Pre as in the batch definition);
    ``max_level_shift`` and ``max_var_shift`` (a running maximum of the raw
    shift between the two newest blocks of 10, divided by the current sd or
    variance at the end).
exact, O(log n) per commit
    ``hurst``: the rescaled range of each prefix does not change when later
    commits arrive (it is invariant to the affine standardisation), so each
    commit adds one point ``(log t, log R_t/S_t)`` to running regression sums.
    ``R_t = max_j dev_j - min_j dev_j`` with ``dev_j = Y_j - j m_t`` (``Y`` the
    cumulative sum) is a query of the upper and lower convex hulls of the
    points ``(j, Y_j)`` with slope ``m_t``: a binary search. The hulls stay
    small for noisy histories (35 points in all after 5,000 commits of the
    benchmark's drifting series; a random walk's hull grows like log n), but
    keep up to ``n`` points for a history whose cumulative sum is convex (a
    steady trend), which then grows the state.
bounded to the last ``horizon`` commits (:data:`BOUNDED`)
    ``crossing_points`` (needs the median of all of Pre: an exact version keeps
    every value), ``entropy`` (the periodogram's frequencies move with ``n``),
    ``flat_spots`` (the bins move with min and max), ``max_kl_shift`` (the
    bandwidth moves with the whole window), ``nonlinearity``, ``arch_lm``,
    ``unitroot_kpss``, ``unitroot_pp``. They are computed, by the catalogue's
    formulas, on the last ``min(n, horizon)`` commits of Pre: identical to the
    batch features while Pre is at most ``horizon`` long, and equal to the batch
    features *of the last ``horizon`` commits* beyond that. Cost O(horizon)
    (O(horizon^2) for ``entropy``, a direct DFT) per commit, flat in ``n``;
    ``max_kl_shift`` (a 100-point density grid per value) dominates: about
    50 µs of the full catalogue's 55 µs per commit at horizon 64.

After = ``[x]`` is a single point, a constant window: its characteristics are
:func:`features.catalogue.degenerate_values` ``(1)``, whatever ``x``. The pair
features ``norm_mean`` / ``norm_sd`` follow from Pre's mean, sd, min and max.

Agreement with :mod:`features.fast` is held to ``rtol = 1e-7`` (plus a small
absolute tolerance for values near 0) by property tests: the state sums in a
different order, on raw instead of standardised values.

Size: :meth:`PreState.to_dict` stores the numbers as one zlib-compressed
base64 string of float64 (exact round trip): 45 scalars, the first 11 values,
the last ``max(horizon, 21)`` values (21 when no bounded characteristic is
requested) and the hull points.
"""

from __future__ import annotations

import base64
import binascii
import math
import zlib
from collections.abc import Iterable, Sequence

import numba
import numpy as np

from triage.features import catalogue as C
from triage.features import fast as F

#: The paper's characteristics: its seven per-window ones and the pair ones.
PAPER_CHARACTERISTICS: tuple[str, ...] = C.CHARACTERISTICS[:7] + C.PAIR_CHARACTERISTICS

#: Updated exactly whatever the length of Pre.
EXACT: tuple[str, ...] = (
    "max_level_shift",
    "serial_correlation",
    "stability",
    "lumpiness",
    "hurst",
    "x_acf1",
    "x_acf10",
    "diff1_acf1",
    "diff1_acf10",
    "max_var_shift",
    "std1st_der",
    "series_length",
)
#: Computed on the last ``horizon`` commits of Pre.
BOUNDED: tuple[str, ...] = tuple(n for n in C.CHARACTERISTICS if n not in EXACT)

DEFAULT_HORIZON = 64
#: Lags kept (the catalogue's ``l`` for windows longer than 10) and block width.
_K = 10
#: Pre of at most this many commits is computed in batch from the stored values.
_SMALL = 10
_FIRST = _K + 1  # stored leading values: the first 10 values and the first 10 differences
_MIN_RING = 2 * _K + 1
_FORMAT_VERSION = 1

# Slots of the scalar state vector.
_N, _MEAN, _M2, _MIN, _MAX, _SHIFT, _YSUM = 0, 1, 2, 3, 4, 5, 6
_DMEAN, _DM2, _DMIN, _DMAX = 7, 8, 9, 10
_NB, _BM_MEAN, _BM_M2, _BV_MEAN, _BV_M2 = 11, 12, 13, 14, 15
_MLS, _MVS = 16, 17
_HK, _HSU, _HSV, _HSUU, _HSUV = 18, 19, 20, 21, 22
_NU, _NL = 23, 24
_CX = 25
_CD = _CX + _K
_NSLOTS = _CD + _K

# Update groups, switched on only when a requested characteristic needs them.
_G_ACFX, _G_DIFF, _G_TILES, _G_SHIFTS, _G_HURST = range(5)
_GROUPS: dict[str, tuple[int, ...]] = {
    "serial_correlation": (_G_ACFX,),
    "x_acf1": (_G_ACFX,),
    "x_acf10": (_G_ACFX,),
    "diff1_acf1": (_G_DIFF,),
    "diff1_acf10": (_G_DIFF,),
    "std1st_der": (_G_DIFF,),
    "stability": (_G_TILES,),
    "lumpiness": (_G_TILES,),
    "max_level_shift": (_G_SHIFTS,),
    "max_var_shift": (_G_SHIFTS,),
    "hurst": (_G_HURST,),
}

_I = C.INDEX
_CROSS, _ENT, _MLS_I, _SER = _I["crossing_points"], _I["entropy"], _I["max_level_shift"], _I["serial_correlation"]
_STAB, _LUMP, _HURST, _FLAT = _I["stability"], _I["lumpiness"], _I["hurst"], _I["flat_spots"]
_ACF1, _ACF10, _D1ACF1, _D1ACF10 = _I["x_acf1"], _I["x_acf10"], _I["diff1_acf1"], _I["diff1_acf10"]
_MVS_I, _MKL, _NONLIN, _ARCH = _I["max_var_shift"], _I["max_kl_shift"], _I["nonlinearity"], _I["arch_lm"]
_STD1, _KPSS, _PP, _LEN = _I["std1st_der"], _I["unitroot_kpss"], _I["unitroot_pp"], _I["series_length"]
_FLAT_RTOL = C.FLAT_RTOL
_AFTER_VALUES = C.degenerate_values(1)  # After = one point: a constant window


# --------------------------------------------------------------------------- compiled kernels


@numba.njit(cache=True)
def _is_flat(lo, hi):
    return hi - lo <= _FLAT_RTOL * max(abs(hi), abs(lo))


@numba.njit(cache=True)
def _pairwise_block(a, lo, n):
    """numpy's pairwise-sum leaf (n <= 128): eight interleaved accumulators."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


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
        return _pairwise_block(a, lo, n)
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
        r = _pairwise_block(a, los[i], ns[i])
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
def _learn(f, first, ring, hu, hl, x, groups):
    """Append x to Pre. Callers ensure the hulls have room for one more point."""
    n = int(f[_N])
    R = ring.size
    m_old = f[_MEAN]
    m_new = m_old + (x - m_old) / (n + 1)
    if groups[_G_ACFX] and n >= 1:
        delta = m_new - m_old
        P = 0.0
        Q = 0.0
        for k in range(1, min(n, _K) + 1):
            a = ring[(n - k) % R]
            P -= a - m_old
            Q -= first[k - 1] - m_old
            f[_CX + k - 1] += -delta * (P + Q) + (n - k) * delta * delta + (a - m_new) * (x - m_new)
    f[_M2] += (x - m_old) * (x - m_new)
    f[_MEAN] = m_new
    if n == 0:
        f[_MIN] = x
        f[_MAX] = x
        f[_SHIFT] = x
    else:
        f[_MIN] = min(f[_MIN], x)
        f[_MAX] = max(f[_MAX], x)
    if groups[_G_DIFF] and n >= 1:
        d = x - ring[(n - 1) % R]
        nd = n - 1  # differences so far; the new one has index nd
        dm_old = f[_DMEAN]
        dm_new = dm_old + (d - dm_old) / (nd + 1)
        delta = dm_new - dm_old
        P = 0.0
        Q = 0.0
        for k in range(1, min(nd, _K) + 1):
            a = ring[(n - k) % R] - ring[(n - k - 1) % R]
            P -= a - dm_old
            Q -= first[k] - first[k - 1] - dm_old
            f[_CD + k - 1] += -delta * (P + Q) + (nd - k) * delta * delta + (a - dm_new) * (d - dm_new)
        f[_DM2] += (d - dm_old) * (d - dm_new)
        f[_DMEAN] = dm_new
        if nd == 0:
            f[_DMIN] = d
            f[_DMAX] = d
        else:
            f[_DMIN] = min(f[_DMIN], d)
            f[_DMAX] = max(f[_DMAX], d)
    ring[n % R] = x
    if n < first.size:
        first[n] = x
    n += 1
    f[_N] = n
    if groups[_G_TILES] and n % _K == 0:
        bm, bv = _block_mean_var(ring, n - _K, n)
        nb = f[_NB] + 1.0
        dm = bm - f[_BM_MEAN]
        f[_BM_MEAN] += dm / nb
        f[_BM_M2] += dm * (bm - f[_BM_MEAN])
        dv = bv - f[_BV_MEAN]
        f[_BV_MEAN] += dv / nb
        f[_BV_M2] += dv * (bv - f[_BV_MEAN])
        f[_NB] = nb
    if groups[_G_SHIFTS] and n >= 2 * _K:
        ma, va = _block_mean_var(ring, n - 2 * _K, n - _K)
        mb, vb = _block_mean_var(ring, n - _K, n)
        f[_MLS] = max(f[_MLS], abs(mb - ma))
        f[_MVS] = max(f[_MVS], abs(vb - va))
    if groups[_G_HURST]:
        # Cumulative sums of x - (first value) keep Y small for a level series.
        Y = f[_YSUM] + (x - f[_SHIFT])
        f[_YSUM] = Y
        X = float(n)
        f[_NU] = _hull_push(hu, int(f[_NU]), X, Y, True)
        f[_NL] = _hull_push(hl, int(f[_NL]), X, Y, False)
        if n >= 2 and not _is_flat(f[_MIN], f[_MAX]):
            m = Y / n
            r = _hull_extreme(hu, int(f[_NU]), m, True) - _hull_extreme(hl, int(f[_NL]), m, False)
            s = math.sqrt(f[_M2] / n)
            if r > 0.0 and s > 0.0:
                u = math.log(X)
                v = math.log(r / s)
                f[_HK] += 1.0
                f[_HSU] += u
                f[_HSV] += v
                f[_HSUU] += u * u
                f[_HSUV] += u * v


@numba.njit(cache=True)
def _exact_part(f, groups, out):
    """Exact-state characteristics (of the updated groups) of a non-flat Pre longer than 10 commits."""
    n = f[_N]
    var = f[_M2] / (n - 1.0)
    sd = math.sqrt(var)
    if groups[_G_ACFX]:
        acc = 0.0
        for k in range(_K):
            r = f[_CX + k] / f[_M2]
            if k == 0:
                out[_ACF1] = r
            acc += r * r
        out[_ACF10] = acc
        out[_SER] = n * acc
    if groups[_G_DIFF]:
        if _is_flat(f[_DMIN], f[_DMAX]):
            out[_D1ACF1] = 0.0
            out[_D1ACF10] = 0.0
        else:
            acc = 0.0
            for k in range(_K):
                r = f[_CD + k] / f[_DM2]
                if k == 0:
                    out[_D1ACF1] = r
                acc += r * r
            out[_D1ACF10] = acc
        out[_STD1] = math.sqrt(f[_DM2] / (n - 2.0)) / sd
    if groups[_G_TILES]:
        if n < 2 * _K:
            out[_STAB] = 0.0
            out[_LUMP] = 0.0
        else:
            out[_STAB] = f[_BM_M2] / (f[_NB] - 1.0) / var
            out[_LUMP] = f[_BV_M2] / (f[_NB] - 1.0) / (var * var)
    if groups[_G_SHIFTS]:
        out[_MLS_I] = f[_MLS] / sd
        out[_MVS_I] = f[_MVS] / var
    if groups[_G_HURST]:
        k = f[_HK]
        if k < 2.0:
            out[_HURST] = 0.5
        else:
            out[_HURST] = (f[_HSUV] - f[_HSU] * f[_HSV] / k) / (f[_HSUU] - f[_HSU] * f[_HSU] / k)
    out[_LEN] = n


@numba.njit(cache=True)
def _entropy(z):
    """The catalogue's spectral entropy by a direct DFT (numba has no FFT)."""
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
def _window_z(ring, n, width):
    """The last `width` values of Pre, standardised as catalogue.prepare does (in
    numpy's summation order, so the result matches it bit for bit); an empty
    array when that window is flat."""
    R = ring.size
    w = np.empty(width)
    for i in range(width):
        w[i] = ring[(n - width + i) % R]
    lo = w.min()
    hi = w.max()
    if _is_flat(lo, hi):
        return np.empty(0)
    x = w / max(abs(lo), abs(hi))
    mean = _np_sum(x, 0, width) / width
    d = x - mean
    d = d * d
    sd = math.sqrt(_np_sum(d, 0, width) / (width - 1))
    return (x - mean) / sd


@numba.njit(cache=True)
def _crossing_points(z):
    med = np.median(z)
    cross = 0
    for t in range(z.size - 1):
        if (z[t] <= med) != (z[t + 1] <= med):
            cross += 1
    return float(cross)


# --------------------------------------------------------------------------- the state


def resolve_names(names: Iterable[str] | None) -> tuple[tuple[str, ...], list[str]]:
    """Characteristics to compute and output columns for ``names``.

    ``names`` mixes characteristic names (``"hurst"``, ``"norm_mean"``: all
    their columns) and feature columns (``"pre_hurst"``, ``"norm_sd_after"``,
    e.g. a feature set's ``names``); ``None`` = the whole catalogue.

    Returns
    -------
    (characteristics, columns)
        Characteristics in catalogue order; columns in catalogue column order
        when only characteristic names were given, else in the given order.
    """
    if names is None:
        return C.CHARACTERISTICS + C.PAIR_CHARACTERISTICS, C.feature_columns(None)
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("no feature names requested")
    all_columns = set(C.feature_columns(None))
    chars: list[str] = []
    columns: list[str] = []
    only_characteristics = True
    for name in names:
        if name in C.INDEX or name in C.PAIR_CHARACTERISTICS:
            chars.append(name)
            columns.extend(c for c in C.feature_columns([name]) if c not in columns)
        elif name in all_columns:
            only_characteristics = False
            if name.startswith("norm_"):
                chars.append(name.rsplit("_", 1)[0])
            else:
                chars.append(name.split("_", 1)[1])
            if name not in columns:
                columns.append(name)
        else:
            raise ValueError(f"unknown characteristic or feature column {name!r}")
    window_names, pair_names = C.check_names(chars)
    if only_characteristics:
        columns = C.feature_columns(chars)
    return window_names + pair_names, columns


class PreState:
    """Online summary of one series' Pre window (river-style ``learn_one``).

    Parameters
    ----------
    names : iterable of str or None
        Characteristics and/or feature columns to produce (see
        :func:`resolve_names`); ``None`` = every column of the catalogue. Only
        what they need is kept and updated.
    horizon : int
        Commits of Pre the bounded characteristics look at (>= 20; see the
        module docstring). Default 64.
    series_id : str
        Named in error messages.

    Attributes
    ----------
    columns_ : list of str
        The columns :meth:`features_one` returns, in order.
    characteristics_ : tuple of str
    n : int
        Commits in Pre.
    index : int
        Commits this state has consumed (``learn_one`` + ``reset`` calls): the
        series index of the next commit when the state started at index 0.
    """

    def __init__(self, names: Iterable[str] | None = None, *, horizon: int = DEFAULT_HORIZON, series_id: str = ""):
        if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 2 * _K:
            raise ValueError(f"horizon must be an integer >= {2 * _K}, got {horizon!r}")
        self.names = None if names is None else ([names] if isinstance(names, str) else list(names))
        self.horizon = int(horizon)
        self.series_id = str(series_id)
        self.characteristics_, self.columns_ = resolve_names(self.names)
        window_names = [c for c in self.characteristics_ if c in C.INDEX]
        self._pairs = [c for c in self.characteristics_ if c in C.PAIR_CHARACTERISTICS]
        groups = np.zeros(5, dtype=np.bool_)
        for name in window_names:
            for g in _GROUPS.get(name, ()):
                groups[g] = True
        self._groups = groups
        self._want_bounded = np.zeros(C.N_CHARACTERISTICS, dtype=np.bool_)
        for name in window_names:
            if name in BOUNDED:
                self._want_bounded[C.INDEX[name]] = True
        self._any_bounded = bool(self._want_bounded.any())
        self._any_exact = any(n in EXACT for n in window_names)
        ring = max(self.horizon, _MIN_RING) if self._any_bounded else _MIN_RING
        self._ring_size = ring
        # Output plan: position in the output and where the value comes from.
        col_pos = {c: i for i, c in enumerate(self.columns_)}
        pre_cols = [c for c in self.columns_ if c.startswith("pre_")]
        after_cols = [c for c in self.columns_ if c.startswith("after_")]
        norm_cols = [c for c in self.columns_ if c.startswith("norm_")]
        self._pre_pos = np.array([col_pos[c] for c in pre_cols], dtype=np.int64)
        self._pre_idx = np.array([C.INDEX[c[4:]] for c in pre_cols], dtype=np.int64)
        self._template = np.zeros(len(self.columns_))
        for c in after_cols:
            self._template[col_pos[c]] = _AFTER_VALUES[C.INDEX[c[6:]]]
        self._norm_pos = np.array([col_pos[c] for c in norm_cols], dtype=np.int64)
        self._norm_idx = np.array([C.NORM_COLUMNS.index(c) for c in norm_cols], dtype=np.int64)
        self._need_pre = len(pre_cols) > 0
        self.index = 0
        self._clear()

    # ------------------------------------------------------------------ state

    def _clear(self) -> None:
        self._f = np.zeros(_NSLOTS)
        self._first = np.zeros(_FIRST)
        self._ring = np.zeros(self._ring_size)
        cap = 16 if self._groups[_G_HURST] else 1
        self._hu = np.zeros((cap, 2))
        self._hl = np.zeros((cap, 2))
        self._pre_cache: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self._f[_N])

    def reset(self) -> PreState:
        """A change point was found at the commit just described: Pre restarts empty after it."""
        self._clear()
        self.index += 1
        return self

    def _check(self, x: float) -> float:
        try:
            x = float(x)
        except (TypeError, ValueError):
            raise ValueError(f"series {self.series_id!r}, index {self.index}: value {x!r} is not a number") from None
        if not math.isfinite(x):
            raise ValueError(f"series {self.series_id!r}, index {self.index}: value {x!r} is not finite")
        return x

    def learn_one(self, x: float) -> PreState:
        """Append one commit's value to Pre. O(1) (O(log n) with ``hurst``)."""
        x = self._check(x)
        f = self._f
        if f[_NU] + 1 > self._hu.shape[0] or f[_NL] + 1 > self._hl.shape[0]:
            self._hu = np.concatenate([self._hu, np.zeros_like(self._hu)])
            self._hl = np.concatenate([self._hl, np.zeros_like(self._hl)])
        _learn(f, self._first, self._ring, self._hu, self._hl, x, self._groups)
        self._pre_cache = None
        self.index += 1
        return self

    def learn_many(self, values: Iterable[float]) -> PreState:
        """:meth:`learn_one` for each value, in order."""
        for x in values:
            self.learn_one(x)
        return self

    # ------------------------------------------------------------------ features

    def pre_characteristics(self) -> np.ndarray:
        """Characteristics of Pre, shape (len(catalogue.CHARACTERISTICS),).

        Entries of characteristics not requested are left 0. Cached until the
        next :meth:`learn_one` or :meth:`reset`.
        """
        if self._pre_cache is not None:
            return self._pre_cache
        f = self._f
        n = int(f[_N])
        if n == 0 or _is_flat(f[_MIN], f[_MAX]):
            out = C.degenerate_values(n)
            if self._any_bounded and n > self.horizon:
                out[_FLAT] = float(self.horizon)  # the bounded window's own length
        elif n <= _SMALL:
            out = F.window_characteristics(self._first[:n].copy())
        else:
            out = np.zeros(C.N_CHARACTERISTICS)
            if self._any_exact:
                _exact_part(f, self._groups, out)
            if self._any_bounded:
                self._bounded_part(n, out)
        self._pre_cache = out
        return out

    def _bounded_part(self, n: int, out: np.ndarray) -> None:
        width = min(n, self.horizon)
        z = _window_z(self._ring, n, width)
        want = self._want_bounded
        if z.size == 0:  # flat: the catalogue's constant-window values
            out[want] = 0.0
            if want[_FLAT]:
                out[_FLAT] = float(width)
            return
        # features.fast's kernels are called from Python, not from a compiled
        # kernel here: numba's on-disk cache of a caller does not notice when a
        # callee in another module changes.
        if want[_CROSS]:
            out[_CROSS] = _crossing_points(z)
        if want[_ENT]:
            out[_ENT] = _entropy(z)
        if want[_FLAT]:
            out[_FLAT] = F._flat_spots(z)
        if want[_MKL]:
            out[_MKL] = F._max_kl_shift(z, _K)
        if want[_NONLIN]:
            out[_NONLIN] = F._nonlinearity(z)
        if want[_ARCH]:
            out[_ARCH] = F._arch_lm(z)
        if want[_KPSS]:
            out[_KPSS] = F._kpss(z)
        if want[_PP]:
            out[_PP] = F._pp(z)

    def _norm(self, x: float) -> np.ndarray:
        f = self._f
        n = int(f[_N])
        out = np.zeros(4)
        lo = min(f[_MIN], x) if n else x
        hi = max(f[_MAX], x) if n else x
        if _is_flat(lo, hi):
            return out
        span = hi - lo
        if n:
            out[0] = (f[_MEAN] - lo) / span
            if n > 1:
                out[2] = math.sqrt(f[_M2] / (n - 1)) / span
        out[1] = (x - lo) / span
        return out

    def features_array(self, x_new: float) -> np.ndarray:
        """Features of (Pre, ``[x_new]``) as an array, shape (len(columns_),), in ``columns_`` order."""
        x = self._check(x_new)
        out = self._template.copy()
        if self._need_pre:
            out[self._pre_pos] = self.pre_characteristics()[self._pre_idx]
        if self._pairs:
            out[self._norm_pos] = self._norm(x)[self._norm_idx]
        return out

    def features_one(self, x_new: float) -> dict[str, float]:
        """Features of (Pre, ``[x_new]``) for window 0: ``{column: value}``.

        Same columns and values as the batch features of a candidate at
        ``x_new`` with ``window=0`` (bounded characteristics: of the last
        ``horizon`` commits of Pre). Pre is not changed.
        """
        return dict(zip(self.columns_, self.features_array(x_new).tolist(), strict=True))

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict:
        """Plain JSON-serialisable state.

        The numbers (scalar state, leading values, the ring's values oldest
        first, hull points) travel as one zlib-compressed base64 string of
        little-endian float64, so the round trip is exact; the array lengths
        follow from the counts inside it.
        """
        n = self.n
        kept = min(n, self._ring_size)
        ring = self._ring[np.arange(n - kept, n) % self._ring_size]
        parts = [self._f, self._first[: min(n, _FIRST)], ring]
        if self._groups[_G_HURST]:
            parts += [self._hu[: int(self._f[_NU])].ravel(), self._hl[: int(self._f[_NL])].ravel()]
        blob = np.concatenate(parts).astype("<f8").tobytes()
        return {
            "v": _FORMAT_VERSION,
            "series_id": self.series_id,
            "names": self.names,
            "horizon": self.horizon,
            "index": self.index,
            "data": base64.b64encode(zlib.compress(blob, 9)).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, data: dict) -> PreState:
        """The state :meth:`to_dict` saved; ``ValueError`` for a malformed or foreign dict."""
        try:
            if data.get("v") != _FORMAT_VERSION:
                raise ValueError(f"unsupported state version {data.get('v')!r}")
            state = cls(data["names"], horizon=int(data["horizon"]), series_id=data["series_id"])
            raw = zlib.decompress(base64.b64decode(data["data"].encode("ascii"), validate=True))
            if len(raw) % 8:
                raise ValueError("state data is not a float64 array")
            values = np.frombuffer(raw, dtype="<f8").astype(np.float64)
            f = values[:_NSLOTS].copy()
            if len(f) != _NSLOTS:
                raise ValueError("state data is too short")
            n, nu, nl = int(f[_N]), int(f[_NU]), int(f[_NL])
            n_first, n_ring = min(n, _FIRST), min(n, state._ring_size)
            hull = 2 * (nu + nl) if state._groups[_G_HURST] else 0
            if len(values) != _NSLOTS + n_first + n_ring + hull:
                raise ValueError("state data does not match its counts")
            state._f = f
            at = _NSLOTS
            state._first[:n_first] = values[at : at + n_first]
            at += n_first
            state._ring[np.arange(n - n_ring, n) % state._ring_size] = values[at : at + n_ring]
            at += n_ring
            if state._groups[_G_HURST]:
                cap = max(16, nu + 1, nl + 1)
                state._hu = np.zeros((cap, 2))
                state._hl = np.zeros((cap, 2))
                state._hu[:nu] = values[at : at + 2 * nu].reshape(-1, 2)
                at += 2 * nu
                state._hl[:nl] = values[at : at + 2 * nl].reshape(-1, 2)
            state.index = int(data["index"])
        except (KeyError, TypeError, AttributeError, binascii.Error, zlib.error) as exc:
            raise ValueError(f"not a PreState dict: {exc}") from None
        return state

    def __repr__(self) -> str:
        return (
            f"PreState(series_id={self.series_id!r}, n={self.n}, "
            f"columns={len(self.columns_)}, horizon={self.horizon})"
        )


def batch_features(pre: Sequence[float] | np.ndarray, x_new: float, names=None, horizon: int = DEFAULT_HORIZON) -> dict[str, float]:
    """What :meth:`PreState.features_one` must return, from :mod:`features.fast` in batch.

    The reference of the equivalence tests and a readable statement of the
    contract: exact characteristics on all of ``pre``, bounded ones on its last
    ``horizon`` values, After = ``[x_new]``.
    """
    pre = np.asarray(pre, dtype=np.float64)
    chars, columns = resolve_names(names)
    full = F.window_characteristics(pre)
    bounded = F.window_characteristics(pre[-horizon:]) if len(pre) > horizon else full
    after = F.window_characteristics(np.array([float(x_new)]))
    norm = C.normalised_moments(pre, np.array([float(x_new)]))
    out = {}
    for col in columns:
        if col.startswith("pre_"):
            name = col[4:]
            out[col] = float((bounded if name in BOUNDED else full)[C.INDEX[name]])
        elif col.startswith("after_"):
            out[col] = float(after[C.INDEX[col[6:]]])
        else:
            out[col] = float(norm[C.NORM_COLUMNS.index(col)])
    return out
