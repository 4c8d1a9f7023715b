r"""Per-series online state: the features of (Pre, new commit) without recomputing Pre.

In the online loop (Bauer et al., ICPE 2022, with After = the new commit alone,
``window = 0``) every new commit ``x`` is described by the characteristics of
Pre (the commits since the last change point, :mod:`triage.features.windows`) and of
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
by :mod:`triage.features.windows`, Pre after a change point ``c`` starts at ``c + 1``
(``Pre = [p- + 1, p - 1]``), so the change-point commit itself belongs to no
Pre. The state counts those calls to name the index of a bad value.

What is exact and what is bounded
---------------------------------
The characteristics are those of :mod:`triage.features.catalogue`, on the standardised
window ``z``. All of them are scale-free, so the state works on raw values and
rescales at the end. For Pre of ``n <= 10`` commits (lag 2, short windows
repeated) the state computes the characteristics of the stored values from
scratch (:func:`window_characteristics`, compiled), a constant cost. For
``n > 10`` (lag ``l = 10``):

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
    25 µs of the full catalogue's 51 µs per commit at horizon 64
    (BENCHMARKS.md, "Features: incremental update"; six of the eight come
    from :func:`triage.features.fast.bounded_characteristics` in one call).
    A row may leave some of them out (``features_array(x, defer=...)``: NaN)
    and be completed later (``complete_into``): the online replay bounds the
    model's probability without ``max_kl_shift``, ``entropy`` and ``arch_lm``,
    then without the first two, and builds the full row only where the last
    bound reaches the threshold (:mod:`triage.online.loop`).

A fresh row (Pre past its first ``SMALL_PRE`` commits, nothing cached) is one
compiled call, :func:`triage.features.pre_state_kernels.row_kernel`, which
runs the same kernels as the step-by-step path below it and places the
values by the layout's positions: the dozen calls and their Python glue cost
more than the arithmetic on a handful of values.

After = ``[x]`` is a single point, a constant window: its characteristics are
:func:`triage.features.catalogue.degenerate_values` ``(1)``, whatever ``x``. The pair
features ``norm_mean`` / ``norm_sd`` follow from Pre's mean, sd, min and max.
With a confirmation delay (After = the candidate and the K commits after it,
K at most a handful) After's characteristics are computed from scratch on
those K + 1 values, a constant cost.

The scale-free level-shift measures ``pair_*``
(:func:`triage.features.level_shift.pair_features`) read Pre's last
``PAIR_CAP`` (30) values, which the ring keeps, so they equal the batch
values; one difference: their noise floor, the series' *resolution*, is
taken online from those Pre values and After (the batch side sees the whole
series). It matters only for nearly deterministic series.

Agreement with :mod:`triage.features.fast` is held to ``rtol = 1e-7`` (plus a small
absolute tolerance for values near 0) by property tests: the state sums in a
different order, on raw instead of standardised values.

Where the parts live: the slots of the state vector in
:mod:`triage.features.pre_state_slots`, the compiled updates in
:mod:`triage.features.pre_state_kernels`, the row assembly in
:func:`triage.features.row.feature_row`, the from-scratch twins
(:class:`~triage.features.recomputed.RecomputedPre`, and
:func:`~triage.features.recomputed.batch_features`, the reference of the
equivalence tests) in :mod:`triage.features.recomputed`. The interface the
online loop relies on is :class:`triage.features.pre_state.PreWindowState`.

Size: :meth:`PreState.to_dict` stores the numbers as one zlib-compressed
base64 string of float64 (exact round trip): 45 scalars, the first 11 values,
the last ``max(horizon, 21)`` values (21 when no bounded characteristic is
requested) and the hull points.
"""

from __future__ import annotations

import base64
import binascii
import copy
import math
import zlib
from collections.abc import Iterable

import numpy as np

from triage.core.values import unusable, value_problem
from triage.features import catalogue, fast, level_shift, pre_state_kernels
from triage.features.kernel_arrays import kernel_array
from triage.features.pre_state_kernels import (
    PLAN_AFTER,
    PLAN_EXACT,
    PLAN_FAST,
    PLAN_LEFT_OUT,
    PLAN_NORM,
    PLAN_NOW,
    PLAN_PAIR,
    PLAN_SIZE,
    SOURCE_AFTER,
    SOURCE_NORM,
    SOURCE_PAIR,
    SOURCE_PRE,
)
from triage.features.pre_state_slots import (
    FIRST_KEPT,
    GROUP_HURST,
    GROUPS,
    LAGS,
    MIN_RING,
    N_GROUPS,
    N_SLOTS,
    SLOT_MAX,
    SLOT_MIN,
    SLOT_N,
    SLOT_N_LOWER,
    SLOT_N_UPPER,
    SMALL_PRE,
)
from triage.features.row import RowLayout, feature_row, layout_for

#: The paper's characteristics: its seven per-window ones and the pair ones.
PAPER_CHARACTERISTICS: tuple[str, ...] = catalogue.CHARACTERISTICS[:7] + catalogue.PAIR_CHARACTERISTICS

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
BOUNDED: tuple[str, ...] = tuple(n for n in catalogue.CHARACTERISTICS if n not in EXACT)

#: What :meth:`PreState.features_array` can leave out on request (``defer``).
DEFERRABLE: tuple[str, ...] = BOUNDED

DEFAULT_HORIZON = 64
#: Version of the :meth:`PreState.to_dict` format.
FORMAT_VERSION = 1

_INDEX = catalogue.INDEX
_FLAT_SPOTS = _INDEX["flat_spots"]
_AFTER_VALUES = catalogue.degenerate_values(1)  # After = one point: a constant window


_LAYOUTS: dict[tuple[str, ...] | None, RowLayout] = {}


def _layout(names: list[str] | None) -> RowLayout:
    """The row layout of ``names``, resolved once per process (a state is built per series and per load)."""
    key = None if names is None else tuple(names)
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = _LAYOUTS[key] = layout_for(names)
    return layout


def online_pair_features(pre: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The ``pair_*`` measures as the online loop (and its training rows) define them.

    :func:`triage.features.level_shift.pair_features` of Pre's last
    ``PAIR_CAP`` values and After, with the resolution floor taken from those
    values (online, the rest of the series is not at hand).
    """
    tail = np.asarray(pre, dtype=np.float64)[-level_shift.PAIR_CAP :]
    after = np.asarray(after, dtype=np.float64)
    if after.size <= level_shift.PAIR_CAP:  # all of After is read: the floor of the values read
        return level_shift.pair_features(tail, after, None)
    return level_shift.pair_features(tail, after, level_shift.resolution(np.concatenate([tail, after])))


def checked_value(x: object, series_id: str, index: int) -> float:
    """``x`` as a float, or ``ValueError`` naming the series and the index: the one
    check of a Pre state's values (:class:`PreState` and :class:`~triage.features.recomputed.RecomputedPre`)."""
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"series {series_id!r}, index {index}: value {x!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"series {series_id!r}, index {index}: value {value!r} is not finite")
    if (problem := value_problem(value)) is not None:
        # 1e300 was taken and gave NaN characteristics (the batch features of the same
        # values are finite): the state sums powers of the raw values.
        raise ValueError(f"series {series_id!r}, index {index}: {problem}")
    return value


def window_characteristics(x: np.ndarray) -> np.ndarray:
    """:func:`triage.features.fast.window_characteristics` of a short window, compiled end to end.

    The window is prepared by :func:`pre_state_kernels.prepare_window` (bit
    for bit :func:`triage.features.catalogue.prepare`) and its periodogram
    taken by a direct DFT instead of numpy's FFT (equal to rounding), then
    :mod:`triage.features.fast`'s kernel runs: for the handful of values of
    After or a short Pre, numpy's call overhead was most of the cost.
    """
    z = pre_state_kernels.prepare_window(kernel_array(x))
    if z.size == 0:
        return catalogue.degenerate_values(x.size)
    out = np.empty(catalogue.N_CHARACTERISTICS)
    fast._kernel(z, pre_state_kernels.periodogram(z), float(x.size), out)
    return out


# The bounded characteristics computed here, one kernel each; the other six
# come from fast.bounded_characteristics in one call. On this step-by-step
# path fast's kernels are called from Python; pre_state_kernels.row_kernel
# calls them from compiled code, its cache keyed on their sources (numba's
# on-disk cache of a caller does not notice by itself when a callee in
# another module changes).
_BOUNDED_KERNELS = (
    (_INDEX["crossing_points"], pre_state_kernels.crossing_points),
    (_INDEX["entropy"], pre_state_kernels.entropy),
)


_FAST_POSITIONS = np.array(fast.BOUNDED_POSITIONS)
_DEFERRED_MASKS: dict[tuple[str, ...], np.ndarray] = {}
_FLAT_WINDOWS: dict[int, np.ndarray] = {}


def _flat_window(size: int) -> np.ndarray:
    """:func:`catalogue.degenerate_values` of a window of ``size`` values (resolved once per size)."""
    values = _FLAT_WINDOWS.get(size)
    if values is None:
        values = _FLAT_WINDOWS[size] = catalogue.degenerate_values(size)
    return values


def _deferred_mask(defer: tuple[str, ...]) -> np.ndarray:
    """``defer`` as a bool mask in catalogue order (resolved once per process)."""
    mask = _DEFERRED_MASKS.get(defer)
    if mask is None:
        unknown = [name for name in defer if name not in DEFERRABLE]
        if unknown:
            raise ValueError(f"only bounded characteristics can be deferred ({', '.join(DEFERRABLE)}), got {unknown}")
        mask = np.zeros(catalogue.N_CHARACTERISTICS, dtype=np.bool_)
        mask[[_INDEX[name] for name in defer]] = True
        _DEFERRED_MASKS[defer] = mask
    return mask


class PreState:
    """Online summary of one series' Pre window (river-style ``learn_one``).

    Implements :class:`triage.features.pre_state.PreWindowState`.

    Parameters
    ----------
    names : iterable of str or None
        Characteristics and/or feature columns to produce (see
        :func:`triage.features.row.resolve_names`); ``None`` = every column of
        the catalogue. Only what they need is kept and updated.
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

    #: The characteristics :meth:`features_array` can leave out (``defer``).
    DEFERRABLE: tuple[str, ...] = DEFERRABLE

    def __init__(self, names: Iterable[str] | None = None, *, horizon: int = DEFAULT_HORIZON, series_id: str = ""):
        if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 2 * LAGS:
            raise ValueError(f"horizon must be an integer >= {2 * LAGS}, got {horizon!r}")
        self.names = None if names is None else ([names] if isinstance(names, str) else list(names))
        self.horizon = int(horizon)
        self.series_id = str(series_id)
        self._layout = _layout(self.names)
        self.characteristics_ = self._layout.characteristics
        self.columns_ = list(self._layout.columns)
        window_names = [c for c in self.characteristics_ if c in _INDEX]
        groups = np.zeros(N_GROUPS, dtype=np.bool_)
        for name in window_names:
            for g in GROUPS.get(name, ()):
                groups[g] = True
        self._groups = groups
        self._want_bounded = np.zeros(catalogue.N_CHARACTERISTICS, dtype=np.bool_)
        for name in window_names:
            if name in BOUNDED:
                self._want_bounded[_INDEX[name]] = True
        self._any_bounded = bool(self._want_bounded.any())
        self._bounded_kernels = [(pos, kernel) for pos, kernel in _BOUNDED_KERNELS if self._want_bounded[pos]]
        self._any_fast_bounded = bool(self._want_bounded[list(fast.BOUNDED_POSITIONS)].any())
        self._any_exact = any(n in EXACT for n in window_names)
        self._splits: dict[tuple[str, ...], tuple[np.ndarray, bool, np.ndarray, bool] | None] = {}
        self._plans: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, bool]] = {}
        ring = max(self.horizon, MIN_RING) if self._any_bounded else MIN_RING
        if self._layout.needs_pair:
            ring = max(ring, level_shift.PAIR_CAP)  # the pair measures read Pre's last PAIR_CAP values
        self._ring_size = ring
        self.index = 0
        self._clear()

    # ------------------------------------------------------------------ state

    def __deepcopy__(self, memo: dict) -> PreState:
        """A copy with its own arrays; the configuration (layout, kernels) is shared.

        The online loop copies Pre at every alarm (restored when the alarm is
        withdrawn); a generic deep copy would also pickle the compiled kernels
        held in the configuration, which cost more than the rest of the commit.
        """
        twin = copy.copy(self)
        twin._f = self._f.copy()
        twin._first = self._first.copy()
        twin._ring = self._ring.copy()
        twin._hu = self._hu.copy()
        twin._hl = self._hl.copy()
        twin._pre_cache = None if self._pre_cache is None else self._pre_cache.copy()
        twin._pre_partial = None if self._pre_partial is None else self._pre_partial.copy()
        memo[id(self)] = twin
        return twin

    def _clear(self) -> None:
        self._f = np.zeros(N_SLOTS)
        self._first = np.zeros(FIRST_KEPT)
        self._ring = np.zeros(self._ring_size)
        cap = 16 if self._groups[GROUP_HURST] else 1
        self._hu = np.zeros((cap, 2))
        self._hl = np.zeros((cap, 2))
        self._pre_cache: np.ndarray | None = None
        # Pre's characteristics with some bounded ones left NaN (``defer``),
        # and which: kept apart from the full ones so that a partial result is
        # never served as the full one, and completed in place of recomputed.
        self._pre_partial: np.ndarray | None = None
        self._partial_key: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self._f[SLOT_N])

    def flat_value(self) -> float | None:
        """Pre's one value when Pre is not empty and every value in it is equal, else None.

        From the running minimum and maximum (O(1)), which cover all of Pre,
        not only the ring; :mod:`triage.features.noise_free` decides with it.
        """
        f = self._f
        if f[SLOT_N] < 1 or f[SLOT_MIN] != f[SLOT_MAX]:
            return None
        return float(f[SLOT_MIN])

    def reset(self) -> PreState:
        """A change point was found at the commit just described: Pre restarts empty after it."""
        self._clear()
        self.index += 1
        return self

    def _check(self, x: float) -> float:
        return checked_value(x, self.series_id, self.index)

    def learn_one(self, x: float) -> PreState:
        """Append one commit's value to Pre. O(1) (O(log n) with ``hurst``)."""
        x = self._check(x)
        f = self._f
        if f[SLOT_N_UPPER] + 1 > self._hu.shape[0] or f[SLOT_N_LOWER] + 1 > self._hl.shape[0]:
            self._hu = np.concatenate([self._hu, np.zeros_like(self._hu)])
            self._hl = np.concatenate([self._hl, np.zeros_like(self._hl)])
        pre_state_kernels.learn(f, self._first, self._ring, self._hu, self._hl, x, self._groups)
        self._pre_cache = None
        self._pre_partial = None
        self.index += 1
        return self

    def learn_many(self, values: Iterable[float]) -> PreState:
        """:meth:`learn_one` for each value, in order."""
        for x in values:
            self.learn_one(x)
        return self

    # ------------------------------------------------------------------ features

    def pre_characteristics(self, defer: tuple[str, ...] = ()) -> np.ndarray:
        """Characteristics of Pre, shape (len(catalogue.CHARACTERISTICS),).

        Entries of characteristics not requested are left 0. Cached until the
        next :meth:`learn_one` or :meth:`reset`.

        ``defer``: names of :data:`BOUNDED` characteristics to leave out (NaN)
        where they would be computed on Pre's bounded tail (Pre longer than
        ``SMALL_PRE`` commits and not flat; elsewhere every value is cheap and
        the full result is returned). The online replay's screen asks for
        that row first and for the full one only when a bound of the model's
        score over the missing values could reach the threshold
        (:mod:`triage.online.loop`); the full result then computes only what
        was left out, with the same kernels on the same window, so it is the
        one computed at once.
        """
        if defer:
            _deferred_mask(defer)  # an unknown name fails whatever is cached
        if self._pre_cache is not None:
            return self._pre_cache
        if defer and self._pre_partial is not None and self._partial_key == defer:
            return self._pre_partial
        f = self._f
        n = int(f[SLOT_N])
        if n == 0 or pre_state_kernels.is_flat(f[SLOT_MIN], f[SLOT_MAX]):
            out = catalogue.degenerate_values(n)
            if self._any_bounded and n > self.horizon:
                out[_FLAT_SPOTS] = float(self.horizon)  # the bounded window's own length
        elif n <= SMALL_PRE:
            out = window_characteristics(self._first[:n].copy())
        elif defer and (split := self._split(defer)) is not None:
            if self._pre_partial is not None:
                # A partial row that left out more (the replay's first screen):
                # compute only what it left out and ``defer`` does not.
                before = self._split(self._partial_key)
                assert before is not None
                if not (split[2] & ~before[2]).any():
                    now = before[2] & ~split[2]
                    out = self._pre_partial.copy()
                    self._bounded_part(n, out, now, bool(now[_FAST_POSITIONS].any()))
                    self._pre_partial, self._partial_key = out, defer
                    return out
            out = np.zeros(catalogue.N_CHARACTERISTICS)
            if self._any_exact:
                pre_state_kernels.exact_characteristics(f, self._groups, out)
            self._bounded_part(n, out, split[0], split[1])
            out[split[2]] = np.nan
            self._pre_partial, self._partial_key = out, defer
            return out
        elif self._pre_partial is not None:
            split = self._split(self._partial_key)
            assert split is not None
            out = self._pre_partial.copy()
            self._bounded_part(n, out, split[2], split[3])
        else:
            out = np.zeros(catalogue.N_CHARACTERISTICS)
            if self._any_exact:
                pre_state_kernels.exact_characteristics(f, self._groups, out)
            if self._any_bounded:
                self._bounded_part(n, out, self._want_bounded, self._any_fast_bounded)
        self._pre_cache = out
        return out

    def _split(self, defer: tuple[str, ...]) -> tuple[np.ndarray, bool, np.ndarray, bool] | None:
        """The bounded characteristics computed at once and those ``defer`` leaves out, as masks
        with whether each needs :func:`fast.bounded_characteristics`; None when none is left out."""
        split = self._splits.get(defer)
        if split is None and defer not in self._splits:
            left_out = _deferred_mask(defer) & self._want_bounded
            if left_out.any():
                now = self._want_bounded & ~left_out
                split = (now, bool(now[_FAST_POSITIONS].any()), left_out, bool(left_out[_FAST_POSITIONS].any()))
            self._splits[defer] = split
        return split

    def _bounded_part(self, n: int, out: np.ndarray, want: np.ndarray, any_fast: bool) -> None:
        """The bounded characteristics ``want`` asks for (bool, catalogue order) into ``out``;
        ``any_fast``: whether one of them is :func:`fast.bounded_characteristics`'."""
        width = min(n, self.horizon)
        z = pre_state_kernels.standardised_tail(self._ring, n, width)
        if z.size == 0:  # flat: the catalogue's constant-window values
            out[want] = 0.0
            if want[_FLAT_SPOTS]:
                out[_FLAT_SPOTS] = float(width)
            return
        for position, kernel in self._bounded_kernels:
            if want[position]:
                out[position] = kernel(z)
        if any_fast:
            fast.bounded_characteristics(z, LAGS, want, out)

    def _norm(self, after: np.ndarray) -> np.ndarray:
        """``normalised_moments(Pre, after)`` from Pre's running min, max, mean and M2."""
        out = np.empty(4)
        pre_state_kernels.normalised_moments(self._f, after, out)
        return out

    def tail(self, k: int) -> np.ndarray:
        """Pre's last ``min(n, k, ring size)`` raw values, oldest first (a copy).

        The ring keeps ``max(horizon, 21)`` values (21 when no bounded
        characteristic is requested): what the robust level-shift measures
        of the online loop look at.
        """
        return pre_state_kernels.ring_tail(self._ring, self.n, int(k))

    def _plan(self, defer: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, bool]:
        """What :func:`pre_state_kernels.row_kernel` computes for ``defer``: (plan, gather, whether
        a characteristic is left out), from the same masks as :meth:`pre_characteristics`."""
        plan = self._plans.get(defer)
        if plan is None:
            if defer:
                _deferred_mask(defer)  # an unknown name fails here
            split = self._split(defer) if defer else None
            flags = np.zeros(PLAN_SIZE, dtype=np.bool_)
            if split is None:
                flags[PLAN_NOW : PLAN_NOW + catalogue.N_CHARACTERISTICS] = self._want_bounded
                flags[PLAN_FAST] = self._any_fast_bounded
            else:
                flags[PLAN_NOW : PLAN_NOW + catalogue.N_CHARACTERISTICS] = split[0]
                flags[PLAN_FAST] = split[1]
                flags[PLAN_LEFT_OUT : PLAN_LEFT_OUT + catalogue.N_CHARACTERISTICS] = split[2]
            layout = self._layout
            flags[PLAN_EXACT] = self._any_exact
            flags[PLAN_AFTER] = layout.needs_after
            flags[PLAN_NORM] = layout.needs_norm
            flags[PLAN_PAIR] = layout.needs_pair
            gather = np.empty(layout.width, dtype=np.int64)
            gather[layout.pre_pos] = SOURCE_PRE + layout.pre_index
            gather[layout.after_pos] = SOURCE_AFTER + layout.after_index
            gather[layout.norm_pos] = SOURCE_NORM + layout.norm_index
            gather[layout.pair_pos] = SOURCE_PAIR + layout.pair_index
            plan = self._plans[defer] = (flags, gather, split is not None)
        return plan

    def row_into(self, after: np.ndarray, out: np.ndarray, defer: tuple[str, ...] = ()) -> np.ndarray:
        """:meth:`features_array` of After values already checked, written into ``out`` and returned.

        For the online loop, which checked every value on arrival (a
        :class:`~triage.core.history.Dataset` holds finite values only) and
        writes a round's rows into one matrix: ``after`` must be a non-empty,
        contiguous float64 vector of finite values; it is not checked again.
        """
        return self._row(after, defer, out)

    def complete_into(self, out: np.ndarray, defer: tuple[str, ...] = ()) -> np.ndarray:
        """The ``pre_*`` columns of ``out``, a row of this Pre built with ``defer`` naming more, completed in place.

        Only the characteristics left out before and not named in ``defer``
        now are computed (:meth:`pre_characteristics`); the other columns do
        not read Pre's bounded characteristics and stay as they are, so the
        row equals :meth:`features_array` ``(x, defer)`` of its After ``x``.
        """
        layout = self._layout
        out[layout.pre_pos] = self.pre_characteristics(defer)[layout.pre_index]
        return out

    def _row(self, after: np.ndarray, defer: tuple[str, ...], out: np.ndarray | None) -> np.ndarray:
        layout = self._layout
        if not after.flags.writeable:  # a read-only After compiled every kernel below again
            after = kernel_array(after)
        if self._pre_cache is None and self._pre_partial is None and layout.needs_pre:
            # A fresh Pre: the whole row in one compiled call (the same kernels
            # as below; pre_state_kernels.row_kernel), which declines a Pre of
            # at most SMALL_PRE commits. Every Python step here is paid per
            # commit, hence one dict lookup each (a plan exists only for a
            # ``defer`` that _plan has validated).
            flags, gather, partial = self._plans.get(defer) or self._plan(defer)
            row = np.empty(layout.width) if out is None else out
            pre = np.empty(catalogue.N_CHARACTERISTICS)
            if pre_state_kernels.row_kernel(
                self._f, self._groups, self._ring, self.horizon, flags, gather, after,
                _flat_window(after.size), pre, row,
            ):
                if partial:
                    self._pre_partial, self._partial_key = pre, defer
                else:
                    self._pre_cache = pre
                return row
        pre_chars = self.pre_characteristics(defer) if layout.needs_pre else None
        norm = self._norm(after) if layout.needs_norm else None
        if not layout.needs_after or after.size == 1:
            after_chars = _AFTER_VALUES
        else:
            after_chars = window_characteristics(after)
        pair = None
        if layout.needs_pair:
            pair = online_pair_features(self.tail(level_shift.PAIR_CAP), after)
        return feature_row(layout, pre_chars, after_chars, norm, out=out, pair=pair)

    def features_array(self, x_new: float | np.ndarray, defer: tuple[str, ...] = ()) -> np.ndarray:
        """Features of (Pre, After) as an array, shape (len(columns_),), in ``columns_`` order.

        ``x_new`` is the After window: one value (window 0, After = the new
        commit alone) or the values of a confirmation delay, the candidate and
        the commits after it (:mod:`triage.online.loop`). After holds at most
        a handful of values, so its characteristics are computed from scratch
        (:func:`window_characteristics`), a constant cost.

        ``defer`` (names of :data:`DEFERRABLE` characteristics): their
        ``pre_*`` columns may be left NaN (see :meth:`pre_characteristics`);
        a later call without ``defer`` gives the full row.
        """
        return self._row(self._after(x_new), defer, None)

    def _after(self, x_new: float | np.ndarray) -> np.ndarray:
        if np.ndim(x_new) == 0:
            return np.array([self._check(x_new)])  # type: ignore[arg-type]
        after = np.ascontiguousarray(x_new, dtype=np.float64).ravel()
        if after.size == 0:
            raise ValueError(f"series {self.series_id!r}, index {self.index}: the After window is empty")
        if unusable(after).any():  # one call for the usual case; the loop names the bad value
            for x in after:
                self._check(x)
        return after

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
        parts = [self._f, self._first[: min(n, FIRST_KEPT)], ring]
        if self._groups[GROUP_HURST]:
            parts += [self._hu[: int(self._f[SLOT_N_UPPER])].ravel(), self._hl[: int(self._f[SLOT_N_LOWER])].ravel()]
        blob = np.concatenate(parts).astype("<f8").tobytes()
        return {
            "v": FORMAT_VERSION,
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
            if data.get("v") != FORMAT_VERSION:
                raise ValueError(f"unsupported state version {data.get('v')!r}")
            state = cls(data["names"], horizon=int(data["horizon"]), series_id=data["series_id"])
            raw = zlib.decompress(base64.b64decode(data["data"].encode("ascii"), validate=True))
            if len(raw) % 8:
                raise ValueError("state data is not a float64 array")
            values = np.frombuffer(raw, dtype="<f8").astype(np.float64)
            f = values[:N_SLOTS].copy()
            if len(f) != N_SLOTS:
                raise ValueError("state data is too short")
            n, nu, nl = int(f[SLOT_N]), int(f[SLOT_N_UPPER]), int(f[SLOT_N_LOWER])
            n_first, n_ring = min(n, FIRST_KEPT), min(n, state._ring_size)
            hull = 2 * (nu + nl) if state._groups[GROUP_HURST] else 0
            if len(values) != N_SLOTS + n_first + n_ring + hull:
                raise ValueError("state data does not match its counts")
            state._f = f
            at = N_SLOTS
            state._first[:n_first] = values[at : at + n_first]
            at += n_first
            state._ring[np.arange(n - n_ring, n) % state._ring_size] = values[at : at + n_ring]
            at += n_ring
            if state._groups[GROUP_HURST]:
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


class PrePool:
    """The :class:`PreState` s of a group of series side by side in shared arrays, for a replay's rounds.

    Member ``g``'s running summaries are row ``g`` of the pool's arrays and
    its ``PreState`` holds views of that row, so the state works as before
    for whatever is done series by series (alarms, re-checks, withdrawals),
    while :meth:`rows_into` and :meth:`learn` do the rows and the updates of
    many members in one compiled call each (``pre_state_kernels.round_rows``
    and ``round_learn``, over the same ``row_kernel`` and ``learn``: the same
    numbers bit for bit). A member whose ``PreState`` was replaced or
    rebuilt (a reset allocates new arrays, a withdrawal restores an older
    state) is put back with :meth:`attach`.

    Parameters
    ----------
    pres : list of PreState, shape (G,)
        Members 0..G-1, one configuration (columns, horizon).
    """

    def __init__(self, pres: list[PreState]):
        head = pres[0]
        if any(p.columns_ != head.columns_ or p.horizon != head.horizon or p._ring_size != head._ring_size for p in pres):
            raise ValueError("the members of a PrePool must share one configuration")
        g = len(pres)
        self._head = head
        self.pres = list(pres)
        self.f = np.zeros((g, N_SLOTS))
        self.first = np.zeros((g, FIRST_KEPT))
        self.ring = np.zeros((g, head._ring_size))
        cap = max(max(p._hu.shape[0], p._hl.shape[0]) for p in pres)
        self.hu = np.zeros((g, cap, 2))
        self.hl = np.zeros((g, cap, 2))
        self.pre_out = np.zeros((g, catalogue.N_CHARACTERISTICS))
        for k, p in enumerate(pres):
            self.attach(k, p)

    def attach(self, g: int, pre: PreState) -> None:
        """Make ``pre`` member ``g``: its summaries are copied into row ``g`` and it keeps views of it."""
        cap = max(pre._hu.shape[0], pre._hl.shape[0])
        if cap > self.hu.shape[1]:
            self._grow(cap)
        # Copies first: pre may hold views of row g already (a member handed back unchanged).
        hu, hl = pre._hu.copy(), pre._hl.copy()
        self.f[g] = pre._f
        self.first[g] = pre._first
        self.ring[g] = pre._ring
        self.hu[g] = 0.0
        self.hl[g] = 0.0
        self.hu[g, : hu.shape[0]] = hu
        self.hl[g, : hl.shape[0]] = hl
        pre._f, pre._first, pre._ring, pre._hu, pre._hl = self.f[g], self.first[g], self.ring[g], self.hu[g], self.hl[g]
        self.pres[g] = pre

    def _grow(self, cap: int) -> None:
        """Room for ``cap`` hull points per member (at least double), every member re-pointed."""
        cap = max(cap, 2 * self.hu.shape[1])
        hu = np.zeros((len(self.pres), cap, 2))
        hl = np.zeros((len(self.pres), cap, 2))
        hu[:, : self.hu.shape[1]] = self.hu
        hl[:, : self.hl.shape[1]] = self.hl
        self.hu, self.hl = hu, hl
        for g, pre in enumerate(self.pres):
            pre._hu, pre._hl = hu[g], hl[g]

    def n(self, members: np.ndarray) -> np.ndarray:
        """Commits in Pre of each member, shape (len(members),)."""
        return self.f[members, SLOT_N]

    def flat(self, members: np.ndarray) -> np.ndarray:
        """Whether each member's Pre is not empty and one repeated value (:meth:`PreState.flat_value`), shape (len(members),)."""
        f = self.f[members]
        return (f[:, SLOT_N] >= 1) & (f[:, SLOT_MIN] == f[:, SLOT_MAX])

    def rows_into(
        self, members: np.ndarray, rows: np.ndarray, values: np.ndarray, starts: np.ndarray, i: int, k: int,
        X: np.ndarray, defer: tuple[str, ...] = (),
    ) -> np.ndarray:
        """:meth:`PreState.row_into` of each member ``members[j]`` into ``X[rows[j]]``, in one call.

        ``values`` holds the members' checked values one series after
        another, series g from ``starts[g]``; member g's After is its commits
        ``i - k .. i``. Each member's ``PreState`` must hold no cached
        characteristics (fresh since its last update). Rows the compiled row
        declines (a short or flat Pre) are built by ``PreState.row_into``.
        Rows built here are completed by :meth:`complete_into` (Pre's
        characteristics stay in the pool, not in the states); rows built in
        Python by their own states, which cache what they computed. Returns
        the positions j of the members built in Python.
        """
        flags, gather, _ = self._head._plan(defer)
        declined = np.zeros(members.size, dtype=np.bool_)
        pre_state_kernels.round_rows(
            self.f, self.ring, self._head._groups, self._head.horizon, flags, gather, values, starts,
            members, rows, i, k, _flat_window(k + 1), self.pre_out, X, declined,
        )
        slow = np.flatnonzero(declined)
        for j in slow.tolist():
            g, s = int(members[j]), int(starts[members[j]]) + i - k
            self.pres[g].row_into(values[s : s + k + 1], X[rows[j]], defer)
        return slow

    def complete_into(
        self, members: np.ndarray, rows: np.ndarray, X: np.ndarray, before: tuple[str, ...], defer: tuple[str, ...] = (),
    ) -> None:
        """:meth:`PreState.complete_into` of rows :meth:`rows_into` built (not declined) with ``before`` left out, in one call.

        Row ``X[rows[j]]`` of member ``members[j]``, built leaving out
        ``before``, gets the characteristics ``before`` left out and
        ``defer`` does not (``defer`` must leave out no more than ``before``).
        """
        head = self._head
        was = head._split(before)
        if was is None:  # nothing was left out: the rows are whole
            return
        now = head._split(defer) if defer else None
        if now is not None and (now[2] & ~was[2]).any():
            raise ValueError(f"{defer!r} leaves out more than {before!r}")
        want = was[2] & ~now[2] if now is not None else was[2]
        layout = head._layout
        pre_state_kernels.round_complete(
            self.f, self.ring, head.horizon, want, bool(want[_FAST_POSITIONS].any()), members, rows,
            self.pre_out, layout.pre_pos, layout.pre_index, X,
        )

    def learn(self, members: np.ndarray, values: np.ndarray, starts: np.ndarray, i: int, k: int) -> None:
        """:meth:`PreState.learn_one` of each member's commit ``i - k``, in one call (values already checked).

        Each member's cached characteristics must be dropped by the caller
        (:meth:`forget`) where it may hold some; the state's ``index`` is
        not advanced (a replay sets it where it hands the state on).
        """
        full = np.zeros(members.size, dtype=np.bool_)
        pre_state_kernels.round_learn(
            self.f, self.first, self.ring, self.hu, self.hl, self._head._groups, values, starts, members, i, k, full,
        )
        if full.any():
            self._grow(self.hu.shape[1] + 1)
            rest = members[full]
            pre_state_kernels.round_learn(
                self.f, self.first, self.ring, self.hu, self.hl, self._head._groups, values, starts, rest, i, k,
                np.zeros(rest.size, dtype=np.bool_),
            )

    def forget(self, g: int) -> None:
        """Drop member ``g``'s cached characteristics (before its next update)."""
        pre = self.pres[g]
        pre._pre_cache = None
        pre._pre_partial = None
