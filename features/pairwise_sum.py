"""numpy's pairwise summation, compiled: one home for the kernels that must sum as numpy does.

The compiled feature kernels (:mod:`triage.features.level_shift`,
:mod:`triage.features.pre_state_kernels`) are held bit for bit to numpy
definitions, and ``np.sum`` / ``np.mean`` add a contiguous block of up to 128
values with eight interleaved accumulators (numpy's ``pairwise_sum`` leaf);
a plain loop rounds differently.

numba's on-disk cache of a kernel that calls :func:`pairwise_leaf` does not
notice a change to this file: after editing it, delete ``features/__pycache__``
(a fresh checkout has no cache).
"""

from __future__ import annotations

import numba


@numba.njit(cache=True)
def pairwise_leaf(a, lo, n):
    """numpy's pairwise sum of ``a[lo : lo + n]`` for ``n <= 128`` (one leaf: eight interleaved accumulators)."""
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
