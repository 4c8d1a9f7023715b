"""Layout of :class:`triage.features.incremental.PreState`'s numbers: the scalar slots and the update groups.

The state of one Pre window is a float64 vector of :data:`N_SLOTS` running
summaries (``SLOT_*`` below name what each slot holds), the first
:data:`FIRST_KEPT` values, a ring of the latest values and two convex hulls
(for ``hurst``). The compiled kernels
(:mod:`triage.features.pre_state_kernels`) read and write the slots;
``PreState.to_dict`` stores the vector as it is, so changing the layout
changes the serialised format (bump ``FORMAT_VERSION`` in
:mod:`triage.features.incremental`).

The kernels read these numbers as compile-time constants and numba's on-disk
cache keys on the kernel module's own file only: after editing this module,
touch :mod:`triage.features.pre_state_kernels` (or delete its
``__pycache__``) so the kernels are recompiled.
"""

from __future__ import annotations

#: Lags kept (the catalogue's ``l`` for windows longer than 10) and block width.
LAGS = 10
#: Pre of at most this many commits is computed in batch from the stored values.
SMALL_PRE = 10
#: Stored leading values: the first 10 values and (from them) the first 10 differences.
FIRST_KEPT = LAGS + 1
#: Smallest ring of latest values: two blocks of ``LAGS`` and the value before them.
MIN_RING = 2 * LAGS + 1

# Slots of the scalar state vector.
SLOT_N = 0  # commits in Pre
SLOT_MEAN = 1  # Welford mean of the values
SLOT_M2 = 2  # Welford sum of squared deviations of the values
SLOT_MIN = 3
SLOT_MAX = 4
SLOT_FIRST_VALUE = 5  # Pre's first value: cumulative sums are of x - first value
SLOT_CUMSUM = 6  # cumulative sum of x - first value (hurst)
SLOT_DIFF_MEAN = 7  # Welford mean of the first differences
SLOT_DIFF_M2 = 8
SLOT_DIFF_MIN = 9
SLOT_DIFF_MAX = 10
SLOT_N_BLOCKS = 11  # completed blocks of LAGS values (stability, lumpiness)
SLOT_BLOCK_MEANS_MEAN = 12  # Welford over the block means
SLOT_BLOCK_MEANS_M2 = 13
SLOT_BLOCK_VARS_MEAN = 14  # Welford over the block variances
SLOT_BLOCK_VARS_M2 = 15
SLOT_MAX_LEVEL_SHIFT_RAW = 16  # running max of the raw mean shift between the two newest blocks
SLOT_MAX_VAR_SHIFT_RAW = 17  # running max of the raw variance shift between them
SLOT_HURST_K = 18  # points of the R/S regression
SLOT_HURST_SU = 19  # sum of log t
SLOT_HURST_SV = 20  # sum of log R_t/S_t
SLOT_HURST_SUU = 21
SLOT_HURST_SUV = 22
SLOT_N_UPPER = 23  # points on the upper hull of the cumulative sums
SLOT_N_LOWER = 24  # points on the lower hull
SLOT_COMOMENTS = 25  # LAGS slots: lagged co-moments C_1..C_10 of the values
SLOT_DIFF_COMOMENTS = SLOT_COMOMENTS + LAGS  # LAGS slots: the same for the differences
N_SLOTS = SLOT_DIFF_COMOMENTS + LAGS

# Update groups, switched on only when a requested characteristic needs them.
GROUP_ACF = 0  # co-moments of the values
GROUP_DIFF = 1  # moments and co-moments of the differences
GROUP_BLOCKS = 2  # completed blocks of LAGS values
GROUP_SHIFTS = 3  # shifts between the two newest blocks
GROUP_HURST = 4  # hulls and R/S regression sums
N_GROUPS = 5

#: Update groups each exactly-updated characteristic needs.
GROUPS: dict[str, tuple[int, ...]] = {
    "serial_correlation": (GROUP_ACF,),
    "x_acf1": (GROUP_ACF,),
    "x_acf10": (GROUP_ACF,),
    "diff1_acf1": (GROUP_DIFF,),
    "diff1_acf10": (GROUP_DIFF,),
    "std1st_der": (GROUP_DIFF,),
    "stability": (GROUP_BLOCKS,),
    "lumpiness": (GROUP_BLOCKS,),
    "max_level_shift": (GROUP_SHIFTS,),
    "max_var_shift": (GROUP_SHIFTS,),
    "hurst": (GROUP_HURST,),
}
