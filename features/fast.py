"""Fast characteristics: one numba kernel per window (the default implementation).

Computes exactly the definitions of :mod:`triage.features.catalogue` (held to
:mod:`triage.features.reference` within 1e-6 relative by property tests). The window
is prepared by :func:`triage.features.catalogue.prepare` (shared with the reference,
so both start from the same standardised values); the periodogram comes from
``numpy.fft`` because numba has no FFT; everything else runs in one compiled
kernel (``cache=True``: compiled once per machine, then loaded from
``__pycache__``).

Costs per window of length ``n`` with lag ``l``: ``O(100 n l)`` additions and
``100 n`` logarithms for ``max_kl_shift`` (most of the time; the logarithms
are :func:`_log`'s, vectorised, within one ulp of the C library's),
``O(n log n)`` for the Hurst rescaled range (convex hulls instead of a scan
per prefix), ``O(n q^2)`` for the regressions (``q <= 13`` columns), ``O(n l)``
for the rest. Measured speed-up over the reference: BENCHMARKS.md.

The per-characteristic kernels :func:`max_kl_shift` ``(z, l)``,
:func:`arch_lm`, :func:`nonlinearity`, :func:`flat_spots`, :func:`kpss` and
:func:`pp` ``(z)`` take a prepared window and are public, as is
:func:`bounded_characteristics`, all six in one call: the online Pre state
(:mod:`triage.features.incremental`) takes them on its last ``horizon``
commits; keep their signatures. They stay in this module because
:func:`_kernel` calls them from compiled code, and numba's on-disk cache of a
caller does not notice when a callee in another module changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from triage.features import catalogue

_SQRT_2PI = float(np.sqrt(2.0 * np.pi))
# R's dnorm(38): the floor of the kernel densities in max_kl_shift.
_DNORM38 = float(np.exp(-0.5 * 38.0 * 38.0) / _SQRT_2PI)

_I = catalogue.INDEX  # resolved to integer constants at import, so numba sees literals
_CROSS = _I["crossing_points"]
_ENT = _I["entropy"]
_MAX_LEVEL_SHIFT = _I["max_level_shift"]
_SER = _I["serial_correlation"]
_STAB = _I["stability"]
_LUMP = _I["lumpiness"]
_HURST = _I["hurst"]
_FLAT = _I["flat_spots"]
_ACF1 = _I["x_acf1"]
_ACF10 = _I["x_acf10"]
_D1ACF1 = _I["diff1_acf1"]
_D1ACF10 = _I["diff1_acf10"]
_MAX_VAR_SHIFT = _I["max_var_shift"]
_MKL = _I["max_kl_shift"]
_NONLIN = _I["nonlinearity"]
_ARCH = _I["arch_lm"]
_STD1 = _I["std1st_der"]
_KPSS = _I["unitroot_kpss"]
_PP = _I["unitroot_pp"]
_LEN = _I["series_length"]
_FLAT_RTOL = catalogue.FLAT_RTOL
_HURST_FLOOR = catalogue.HURST_SD_FLOOR
_COLLINEAR_RTOL = catalogue.COLLINEAR_RTOL
_IQR_FLOOR = catalogue.IQR_FLOOR
_GRID = catalogue.KL_GRID


def _ln2_split() -> tuple[float, float]:
    """ln 2 as hi + lo, hi with 25 significant bits (k * hi is exact for any float64 exponent k)."""
    with localcontext() as ctx:
        ctx.prec = 50
        ln2 = Decimal(2).ln()
        hi = float.fromhex(float(ln2).hex()[:10] + "p-1")  # 0x1.62e42fp-1: the leading 25 bits
        return hi, float(ln2 - Decimal(hi))


_LN2_HI, _LN2_LO = _ln2_split()
# log(1 + f) = 2 atanh(s), s = f / (2 + f): the series' coefficients 2 / (2k + 1), k = 1..10.
# |s| <= 3 - 2 sqrt(2) after the reduction below, so the 11th term is below 1e-18 of the result.
_A1, _A2, _A3, _A4, _A5, _A6, _A7, _A8, _A9, _A10 = (2.0 / (2 * k + 1) for k in range(1, 11))
_SQRT_HALF_BITS = int(np.array([np.sqrt(0.5)]).view(np.int64)[0])
_TINY = float(np.finfo(np.float64).tiny)  # smallest normal float64
_TWO54 = 2.0**54


def _as_bits_typing(typingctx, x):
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


def _from_bits_typing(typingctx, b):
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


# Compiled code only. Typed Any: mypy would read the typing functions' signatures.
#: The IEEE bits of a float64 as int64 (an LLVM bitcast, so loops using it still vectorise).
_as_bits: Any = intrinsic(_as_bits_typing)
#: The float64 whose IEEE bits are the int64 given.
_from_bits: Any = intrinsic(_from_bits_typing)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _log(x):
    """Natural logarithm of a positive finite x (normal or subnormal), within 0.7 ulp.

    Why not ``np.log``: numba compiles it to one call of the C library's
    ``log`` per value, which no loop around it can vectorise, and
    ``max_kl_shift`` takes about 5,500 logarithms per window of 64 (more than
    half its time). This one is branch-free arithmetic, so the loops that call
    it become SIMD loops (about three times faster here). It agrees with the C
    library's result to the last bit for about 96 % of inputs and differs by
    one ulp otherwise (both are within 0.7 ulp of the exact logarithm;
    ``tests/test_features_fast.py``).

    x = m 2^k with m in [sqrt(1/2), sqrt(2)) (one integer subtraction on the
    bits), then log(m) = 2 atanh(s), s = (m - 1) / (m + 1), written as
    f - (f^2/2 - s (f^2/2 + R(s^2))) so that the leading term f = m - 1 is
    exact, and k log 2 added in two parts.
    """
    sub = x < _TINY
    x = x * _TWO54 if sub else x  # a subnormal scaled into the normal range
    bits = _as_bits(x)
    k = (bits - _SQRT_HALF_BITS) >> 52
    m = _from_bits(bits - (k << 52))
    kf = float(k - 54) if sub else float(k)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = _A9 + z * _A10  # Horner's scheme from the innermost term, on three lines
    r = _A5 + z * (_A6 + z * (_A7 + z * (_A8 + z * r)))
    r = z * (_A1 + z * (_A2 + z * (_A3 + z * (_A4 + z * r))))
    hfsq = 0.5 * f * f
    return kf * _LN2_HI - ((hfsq - (s * (hfsq + r) + kf * _LN2_LO)) - f)


@numba.njit(cache=True)
def _flat(v):
    if v.size == 0:
        return True
    hi = v.max()
    lo = v.min()
    return hi - lo <= _FLAT_RTOL * max(abs(hi), abs(lo))


@numba.njit(cache=True)
def _acf(v, lmax):
    """r_0..r_lmax of v; zeros beyond len(v) - 1 and for a flat v."""
    m = v.size
    r = np.zeros(lmax + 1)
    if _flat(v):
        return r
    d = v - v.mean()
    den = 0.0
    for t in range(m):
        den += d[t] * d[t]
    r[0] = 1.0
    for k in range(1, min(lmax, m - 1) + 1):
        s = 0.0
        for t in range(m - k):
            s += d[t] * d[t + k]
        r[k] = s / den
    return r


@numba.njit(cache=True)
def _var1(v, a, b):
    """Sample variance (ddof=1) of v[a:b] by two passes."""
    m = 0.0
    for t in range(a, b):
        m += v[t]
    m /= b - a
    s = 0.0
    for t in range(a, b):
        s += (v[t] - m) ** 2
    return s / (b - a - 1)


@numba.njit(cache=True)
def _mean(v, a, b):
    m = 0.0
    for t in range(a, b):
        m += v[t]
    return m / (b - a)


@numba.njit(cache=True)
def _var_of(vals):
    return _var1(vals, 0, vals.size)


@numba.njit(cache=True)
def _project_out(Q, kept, v):
    """Remove from ``v`` (in place) its components on the first ``kept`` columns of Q, twice."""
    rows = v.size
    for _ in range(2):
        for q in range(kept):
            c = 0.0
            for t in range(rows):
                c += Q[t, q] * v[t]
            for t in range(rows):
                v[t] -= c * Q[t, q]


@numba.njit(cache=True)
def _residuals_greedy(X, y):
    """Residuals of y on the columns of X that are not collinear with earlier ones.

    Modified Gram-Schmidt, each projection done twice ("twice is enough");
    a column whose orthogonal part is at most COLLINEAR_RTOL of its norm is
    dropped (catalogue rule for rank-deficient designs).
    """
    rows, k = X.shape
    Q = np.empty((rows, k))
    kept = 0
    for j in range(k):
        v = X[:, j].copy()
        norm0 = np.sqrt((v * v).sum())
        if norm0 == 0.0:
            continue
        _project_out(Q, kept, v)
        nv = np.sqrt((v * v).sum())
        if nv <= _COLLINEAR_RTOL * norm0:
            continue
        for t in range(rows):
            Q[t, kept] = v[t] / nv
        kept += 1
    r = y.copy()
    _project_out(Q, kept, r)
    return r


@numba.njit(cache=True)
def _residuals(X, y):
    """Least-squares residuals of y on the columns of X.

    Normal equations with a Cholesky factorisation, then explicit residuals
    (their error is second order in the coefficient error). Only when every
    column keeps at least 1e-4 of its squared norm outside the span of the
    earlier ones (so squaring the condition number costs nothing visible);
    otherwise :func:`_residuals_greedy`, which also settles exact collinearity
    (periodic or few-valued windows) by the catalogue's rule.
    """
    rows, k = X.shape
    G = np.zeros((k, k))
    c = np.zeros(k)
    for t in range(rows):
        for a in range(k):
            xa = X[t, a]
            c[a] += xa * y[t]
            for b in range(a, k):
                G[a, b] += xa * X[t, b]
    L = np.zeros((k, k))
    for j in range(k):
        d = G[j, j]
        for p in range(j):
            d -= L[j, p] * L[j, p]
        if not d > 1e-4 * G[j, j]:
            return _residuals_greedy(X, y)
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, k):
            s = G[j, i]
            for p in range(j):
                s -= L[i, p] * L[j, p]
            L[i, j] = s / L[j, j]
    w = np.empty(k)
    for i in range(k):
        s = c[i]
        for p in range(i):
            s -= L[i, p] * w[p]
        w[i] = s / L[i, i]
    beta = np.empty(k)
    for i in range(k - 1, -1, -1):
        s = w[i]
        for p in range(i + 1, k):
            s -= L[p, i] * beta[p]
        beta[i] = s / L[i, i]
    out = y.copy()
    for t in range(rows):
        s = 0.0
        for a in range(k):
            s += X[t, a] * beta[a]
        out[t] -= s
    return out


@numba.njit(cache=True)
def _bw_nrd0(z):
    n = z.size
    hi = np.sqrt(_var_of(z))
    q = np.quantile(z, np.array([0.25, 0.75]))
    iqr = q[1] - q[0]
    if iqr <= _IQR_FLOOR:
        iqr = 0.0
    lo = min(hi, iqr / 1.34)
    if lo == 0.0:
        lo = hi
        if lo == 0.0:
            lo = abs(z[0])
            if lo == 0.0:
                lo = 1.0
    return 0.9 * lo * n ** (-0.2)


@numba.njit(cache=True, error_model="numpy")
def _density_row(zi, lo_x, by, bw, c, row):
    """row[g] = max(dnorm(grid_g; zi, bw), dnorm(38)) on the R grid; ``c`` = exp(-(by/bw)^2).

    Along the grid, exp(-u^2/2) follows a product recurrence (u grows by
    by/bw per step), so a point costs four exp calls instead of 100;
    starting at the grid point nearest zi and walking outwards keeps the
    values decreasing, so the walk can stop at the floor. The accumulated
    rounding stays below 1e-12 relative over 100 steps. The walks up and
    down the grid are independent chains of multiplications, so they advance
    in the same loop (the processor overlaps them); each does exactly the
    arithmetic it does alone.
    """
    d = by / bw
    norm = 1.0 / (bw * _SQRT_2PI)
    gs = int(np.floor((zi - lo_x) / by + 0.5))
    gs = min(max(gs, 0), _GRID - 1)
    u = (lo_x + gs * by - zi) / bw
    e0 = np.exp(-0.5 * u * u)
    row[gs] = max(e0 * norm, _DNORM38)
    eu = e0
    ru = np.exp(-u * d - 0.5 * d * d)
    gu = gs + 1
    ed = e0
    rd = np.exp(u * d - 0.5 * d * d)
    gd = gs - 1
    up = gu < _GRID
    down = gd >= 0
    while up and down:
        eu *= ru
        ru *= c
        vu = eu * norm
        ed *= rd
        rd *= c
        vd = ed * norm
        if vu <= _DNORM38:
            up = False
        else:
            row[gu] = vu
            gu += 1
            up = gu < _GRID
        if vd <= _DNORM38:
            down = False
        else:
            row[gd] = vd
            gd -= 1
            down = gd >= 0
    while up:
        eu *= ru
        ru *= c
        vu = eu * norm
        if vu <= _DNORM38:
            break
        row[gu] = vu
        gu += 1
        up = gu < _GRID
    while down:
        ed *= rd
        rd *= c
        vd = ed * norm
        if vd <= _DNORM38:
            break
        row[gd] = vd
        gd -= 1
        down = gd >= 0
    for g in range(gu, _GRID):
        row[g] = _DNORM38
    for g in range(gd + 1):
        row[g] = _DNORM38


@numba.njit(cache=True, error_model="numpy")
def _density_pair(za, zb, lo_x, by, bw, c, row_a, row_b):
    """:func:`_density_row` of two values at once: four independent walks in one loop.

    Every walk runs to the grid's end, storing ``max(value, floor)``: the
    values only decrease along a walk (each step multiplies by a factor
    <= 1), so once one is at the floor all later ones are, and this stores
    what stopping at the floor and filling stores. No walk ends early on the
    data, so the four advance side by side (the processor overlaps them).
    """
    d = by / bw
    norm = 1.0 / (bw * _SQRT_2PI)
    ga = min(max(int(np.floor((za - lo_x) / by + 0.5)), 0), _GRID - 1)
    gb = min(max(int(np.floor((zb - lo_x) / by + 0.5)), 0), _GRID - 1)
    ua = (lo_x + ga * by - za) / bw
    ub = (lo_x + gb * by - zb) / bw
    ea_up = ea_dn = np.exp(-0.5 * ua * ua)
    eb_up = eb_dn = np.exp(-0.5 * ub * ub)
    row_a[ga] = max(ea_up * norm, _DNORM38)
    row_b[gb] = max(eb_up * norm, _DNORM38)
    ra_up = np.exp(-ua * d - 0.5 * d * d)
    ra_dn = np.exp(ua * d - 0.5 * d * d)
    rb_up = np.exp(-ub * d - 0.5 * d * d)
    rb_dn = np.exp(ub * d - 0.5 * d * d)
    na_up = _GRID - 1 - ga
    nb_up = _GRID - 1 - gb
    for t in range(1, max(max(na_up, ga), max(nb_up, gb)) + 1):
        if t <= na_up:
            ea_up *= ra_up
            ra_up *= c
            row_a[ga + t] = max(ea_up * norm, _DNORM38)
        if t <= ga:
            ea_dn *= ra_dn
            ra_dn *= c
            row_a[ga - t] = max(ea_dn * norm, _DNORM38)
        if t <= nb_up:
            eb_up *= rb_up
            rb_up *= c
            row_b[gb + t] = max(eb_up * norm, _DNORM38)
        if t <= gb:
            eb_dn *= rb_dn
            rb_dn *= c
            row_b[gb - t] = max(eb_dn * norm, _DNORM38)


@numba.njit(cache=True, error_model="numpy")
def max_kl_shift(z, w):
    """Streams over the window with ring buffers of w + 1 grid rows (densities,
    window means and their logs), so the working set stays in L1 whatever n
    (full n x 100 matrices cost more in page faults than in arithmetic). The
    densities are computed two rows at a time (:func:`_density_pair`).

    The logarithms are :func:`_log`'s, and ``error_model="numpy"`` drops the
    division-by-zero checks (no divisor here can be 0), so the per-row loops
    compile to SIMD code.
    """
    n = z.size
    if n <= 2 * w:
        return 0.0
    lo_x = z.min()
    hi_x = z.max()
    by = (hi_x - lo_x) / (_GRID - 1)
    bw = _bw_nrd0(z)
    d = by / bw
    c = np.exp(-d * d)  # the recurrence's factor, the same for every row
    m = w + 1  # density rows: the w rows of a window and the next one, computed with the last
    mr = w + 2  # window-mean rows: those of kl_{i-1} and kl_i, taken together
    dens = np.empty((m, _GRID))
    roll = np.empty((mr, _GRID))
    logroll = np.empty((mr, _GRID))
    wsum = np.empty(_GRID)
    kl = np.zeros(n - w)
    for j in range(n):
        if j % 2 == 0:
            if j + 1 < n:
                _density_pair(z[j], z[j + 1], lo_x, by, bw, c, dens[j % m], dens[(j + 1) % m])
            else:
                _density_row(z[j], lo_x, by, bw, c, dens[j % m])
        if j < w - 1:
            continue
        # Right-aligned window mean summed row by row in order (as numpy's
        # mean over axis 0 does): no running sum, whose subtractions would
        # wipe out densities at the dnorm(38) floor.
        first = dens[(j - w + 1) % m]
        for g in range(_GRID):
            wsum[g] = first[g]
        for r in range(j - w + 2, j + 1):
            row = dens[r % m]
            for g in range(_GRID):
                wsum[g] += row[g]
        rj = roll[j % mr]
        lj = logroll[j % mr]
        for g in range(_GRID):
            v = wsum[g] / w
            rj[g] = v
            lj[g] = _log(v)
        # kl_i compares the windows ending at i and at i + w; R's NA fill
        # leaves kl_i = 0 for i < w - 1. Two of them are summed in one loop
        # (each in grid order, as alone): two independent chains of additions.
        i = j - w
        if i >= w - 1 and ((i - w) % 2 == 0 or j == n - 1):
            if i > w - 1 and (i - w) % 2 == 0:
                ra, la, lb = roll[(i - 1) % mr], logroll[(i - 1) % mr], logroll[(j - 1) % mr]
                rc, lc = roll[i % mr], logroll[i % mr]
                s0 = 0.0
                s1 = 0.0
                for g in range(_GRID):
                    s0 += ra[g] * (la[g] - lb[g]) * by
                    s1 += rc[g] * (lc[g] - lj[g]) * by
                kl[i - 1] = s0
                kl[i] = s1
            else:  # the last kl_i, left without a partner
                ri = roll[i % mr]
                li = logroll[i % mr]
                s = 0.0
                for g in range(_GRID):
                    s += ri[g] * (li[g] - lj[g]) * by
                kl[i] = s
    best = -np.inf
    for i in range(n - w - 1):
        dk = kl[i + 1] - kl[i]
        if dk > best:
            best = dk
    return best


@numba.njit(cache=True)
def _hull_extreme(h, nh, y, m, upper):
    """max (upper) or min (lower) of y_j - (j + 1) m over a convex hull chain.

    Along the chain the edge slopes are monotone, so the objective is
    unimodal: binary search for the first edge whose slope passes m.
    """
    lo = 0
    hi = nh - 1
    while lo < hi:
        mid = (lo + hi) // 2
        a = h[mid]
        b = h[mid + 1]
        rise = y[b] - y[a]
        run = m * (b - a)
        if (rise <= run) if upper else (rise >= run):
            hi = mid
        else:
            lo = mid + 1
    j = h[lo]
    return y[j] - (j + 1.0) * m


@numba.njit(cache=True)
def _hurst(z):
    """R/S slope in O(n log n): the range of the cumulative deviations of a
    prefix is max - min of a linear function over the points (j + 1, y_j),
    attained on their upper / lower convex hulls, which grow by appending.
    """
    n = z.size
    y = np.cumsum(z)
    hu = np.empty(n, dtype=np.int64)
    hl = np.empty(n, dtype=np.int64)
    nu = 0
    nl = 0
    mean = 0.0
    m2 = 0.0
    su = 0.0
    sv = 0.0
    suu = 0.0
    suv = 0.0
    k = 0
    for i in range(n):
        while nu >= 2:
            a = hu[nu - 2]
            b = hu[nu - 1]
            if (b - a) * (y[i] - y[a]) - (y[b] - y[a]) * (i - a) >= 0.0:
                nu -= 1
            else:
                break
        hu[nu] = i
        nu += 1
        while nl >= 2:
            a = hl[nl - 2]
            b = hl[nl - 1]
            if (b - a) * (y[i] - y[a]) - (y[b] - y[a]) * (i - a) <= 0.0:
                nl -= 1
            else:
                break
        hl[nl] = i
        nl += 1
        delta = z[i] - mean
        mean += delta / (i + 1.0)
        m2 += delta * (z[i] - mean)
        if i == 0:
            continue
        t = i + 1.0
        m = y[i] / t
        s = np.sqrt(max(m2, 0.0) / t)
        if s < 1e-6:
            # Welford loses relative precision on a near-flat prefix: redo it
            # by two passes, as the reference does.
            ss = 0.0
            for j in range(i + 1):
                ss += (z[j] - m) ** 2
            s = np.sqrt(ss / t)
        r = _hull_extreme(hu, nu, y, m, True) - _hull_extreme(hl, nl, y, m, False)
        if s > _HURST_FLOOR and r > 0.0:
            u = np.log(t)
            v = np.log(r / s)
            su += u
            sv += v
            suu += u * u
            suv += u * v
            k += 1
    if k < 2:
        return 0.5
    return (suv - su * sv / k) / (suu - su * su / k)


@numba.njit(cache=True)
def flat_spots(z):
    n = z.size
    mn = z.min()
    mx = z.max()
    step = (mx - mn) / 10.0
    edges = np.empty(11)
    for k in range(11):
        edges[k] = k * step + mn  # numpy.linspace's arithmetic, as pandas.cut uses it
    edges[10] = mx
    edges[0] -= (mx - mn) * 0.001
    best = 0
    run = 0
    prev = -1
    for i in range(n):
        b = 0
        while b < 11 and edges[b] < z[i]:  # searchsorted(side="left")
            b += 1
        if b == prev:
            run += 1
        else:
            run = 1
            prev = b
        if run > best:
            best = run
    return float(best)


@numba.njit(cache=True)
def nonlinearity(z):
    n = z.size
    if n <= 5 or _flat(z[1:]) or _flat(z[:-1]):
        return 0.0
    m = n - 1
    y = z[1:].copy()
    X = np.ones((m, 2))
    Xn = np.ones((m, 4))
    for t in range(m):
        x = z[t]
        X[t, 1] = x
        Xn[t, 1] = x
        Xn[t, 2] = x * x
        Xn[t, 3] = x * x * x
    ym = y.mean()
    sst = 0.0
    for t in range(m):
        sst += (y[t] - ym) ** 2
    u = _residuals(X, y)
    ssr0 = (u * u).sum()
    if ssr0 <= 1e-12 * sst:
        return 0.0
    v = _residuals(Xn, u)
    ssr = max((v * v).sum(), 1e-10 * ssr0)
    return 10.0 * np.log(ssr0 / ssr)


@numba.njit(cache=True)
def arch_lm(z):
    n = z.size
    q = min(12, (n - 2) // 2)
    e = z - z.mean()
    s = e * e
    rows = n - q
    y = s[q:].copy()
    if _flat(y):
        return 0.0
    X = np.ones((rows, q + 1))
    for r in range(rows):
        for k in range(1, q + 1):
            X[r, k] = s[q + r - k]
    res = _residuals(X, y)
    ym = y.mean()
    sst = 0.0
    for r in range(rows):
        sst += (y[r] - ym) ** 2
    return 1.0 - (res * res).sum() / sst


@numba.njit(cache=True)
def kpss(z):
    n = z.size
    L = int(4.0 * (n / 100.0) ** 0.25)
    e = z - z.mean()
    S = 0.0
    eta = 0.0
    for t in range(n):
        S += e[t]
        eta += S * S
    eta /= n * n
    s_hat = (e * e).sum()
    for k in range(1, L + 1):
        p = 0.0
        for t in range(k, n):
            p += e[t] * e[t - k]
        s_hat += 2.0 * p * (1.0 - k / (L + 1.0))
    s_hat /= n
    if s_hat <= 1e-12:
        return 0.0
    return eta / s_hat


@numba.njit(cache=True)
def pp(z):
    n = z.size
    m = n - 1
    y = z[1:]
    xl = z[:-1]
    if _flat(y) or _flat(xl):
        return 0.0
    L = int(4.0 * (n / 100.0) ** 0.25)
    xm = xl.mean()
    ym = y.mean()
    sxy = 0.0
    sxx = 0.0
    syy = 0.0
    for t in range(m):
        sxy += (xl[t] - xm) * (y[t] - ym)
        sxx += (xl[t] - xm) ** 2
        syy += (y[t] - ym) ** 2
    alpha = sxy / sxx
    c = ym - alpha * xm
    res = y - c - alpha * xl
    lam = 0.0
    for i in range(L):
        p = 0.0
        for t in range(i + 1, m):
            p += res[t] * res[t - i - 1]
        lam += (1.0 - (i + 1.0) / (L + 1.0)) * p
    lam /= m
    ybar2 = syy / (m * m)
    return m * (alpha - 1.0) - lam / ybar2


@numba.njit(cache=True)
def bounded_characteristics(z, w, want, out):
    """The characteristics of this module's public kernels that ``want`` (bool,
    catalogue order) asks for, into ``out`` (catalogue order), on a prepared
    window ``z`` with lag ``w``: ``flat_spots``, ``max_kl_shift``,
    ``nonlinearity``, ``arch_lm``, ``unitroot_kpss``, ``unitroot_pp``.

    One call from Python instead of one per characteristic: the online Pre
    state (:mod:`triage.features.incremental`) takes them for every commit,
    where numba's call overhead was a few microseconds of it.
    """
    if want[_FLAT]:
        out[_FLAT] = flat_spots(z)
    if want[_MKL]:
        out[_MKL] = max_kl_shift(z, w)
    if want[_NONLIN]:
        out[_NONLIN] = nonlinearity(z)
    if want[_ARCH]:
        out[_ARCH] = arch_lm(z)
    if want[_KPSS]:
        out[_KPSS] = kpss(z)
    if want[_PP]:
        out[_PP] = pp(z)


#: The catalogue positions :func:`bounded_characteristics` fills.
BOUNDED_POSITIONS: tuple[int, ...] = (_FLAT, _MKL, _NONLIN, _ARCH, _KPSS, _PP)


@numba.njit(cache=True)
def _kernel(z, psd, n0, out):
    """All characteristics of a prepared (standardised, length >= 4) window."""
    n = z.size
    w = 10 if n > 10 else 2  # the lag / block width l of the catalogue

    med = np.median(z)
    cross = 0
    for t in range(n - 1):
        if (z[t] <= med) != (z[t + 1] <= med):
            cross += 1
    out[_CROSS] = cross

    tot = psd.sum()
    h = 0.0
    if tot > 0.0:
        for k in range(psd.size):
            pk = psd[k] / tot
            if pk > 0.0:
                h -= pk * np.log(pk) / np.log(2.0)
        h /= np.log2(float(psd.size))
    out[_ENT] = h

    r = _acf(z, w)
    out[_ACF1] = r[1]
    acc = 0.0
    for k in range(1, w + 1):
        acc += r[k] * r[k]
    out[_ACF10] = acc
    out[_SER] = n * acc
    dz = np.diff(z)
    rd = _acf(dz, w)
    out[_D1ACF1] = rd[1]
    acc = 0.0
    for k in range(1, w + 1):
        acc += rd[k] * rd[k]
    out[_D1ACF10] = acc
    out[_STD1] = np.sqrt(_var_of(dz))

    if n < 2 * w:
        out[_STAB] = 0.0
        out[_LUMP] = 0.0
    else:
        nb = n // w
        means = np.empty(nb)
        vars_ = np.empty(nb)
        for b in range(nb):
            means[b] = _mean(z, b * w, (b + 1) * w)
            vars_[b] = _var1(z, b * w, (b + 1) * w)
        out[_STAB] = _var_of(means)
        out[_LUMP] = _var_of(vars_)

    mls = 0.0
    mvs = 0.0
    for i in range(n - 2 * w + 1):
        dm = abs(_mean(z, i + w, i + 2 * w) - _mean(z, i, i + w))
        dv = abs(_var1(z, i + w, i + 2 * w) - _var1(z, i, i + w))
        if dm > mls:
            mls = dm
        if dv > mvs:
            mvs = dv
    out[_MAX_LEVEL_SHIFT] = mls
    out[_MAX_VAR_SHIFT] = mvs

    out[_MKL] = max_kl_shift(z, w)
    out[_HURST] = _hurst(z)
    out[_FLAT] = flat_spots(z)
    out[_NONLIN] = nonlinearity(z)
    out[_ARCH] = arch_lm(z)
    out[_KPSS] = kpss(z)
    out[_PP] = pp(z)
    out[_LEN] = n0


def periodogram(z: np.ndarray) -> np.ndarray:
    """One-sided periodogram of ``z`` up to a constant factor (scipy's ``periodogram`` shape).

    Returns
    -------
    ndarray of float64, shape (len(z) // 2 + 1,)
    """
    spec = np.fft.rfft(z - z.mean())
    psd = spec.real**2 + spec.imag**2
    if z.size % 2:
        psd[1:] *= 2.0
    else:
        psd[1:-1] *= 2.0
    return psd


def window_characteristics(x: np.ndarray) -> np.ndarray:
    """All characteristics of one raw window.

    Parameters
    ----------
    x : ndarray of float64, shape (n0,)
        Raw window values (finite; may be empty).

    Returns
    -------
    ndarray of float64, shape (len(catalogue.CHARACTERISTICS),)
        In :data:`triage.features.catalogue.CHARACTERISTICS` order.
    """
    x = np.asarray(x, dtype=np.float64)
    z = catalogue.prepare(x)
    if z is None:
        return catalogue.degenerate_values(x.size)
    out = np.empty(catalogue.N_CHARACTERISTICS)
    _kernel(z, periodogram(z), float(x.size), out)
    return out


def many_window_characteristics(windows: Sequence[np.ndarray]) -> np.ndarray:
    """Characteristics of many raw windows.

    Parameters
    ----------
    windows : sequence of ndarray of float64, each shape (n_i,)

    Returns
    -------
    ndarray of float64, shape (len(windows), len(catalogue.CHARACTERISTICS))
    """
    out = np.empty((len(windows), catalogue.N_CHARACTERISTICS))
    for i, x in enumerate(windows):
        out[i] = window_characteristics(x)
    return out
