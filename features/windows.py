"""Pre and After windows around a candidate commit (Bauer et al., ICPE 2022).

A series has ``n`` commits, indexed ``0 .. n-1``. ``C`` is the sorted set of
*confirmed* change points (indices). For a candidate at index ``p``:

- ``p-`` is the last confirmed change point strictly before ``p`` (none: -1),
- ``p+`` is the first confirmed change point strictly after ``p`` (none: ``n``).

Adaptive windows (the paper's definition, inclusive bounds)::

    Pre   = [p- + 1, p - 1]
    After = [p, p+ - 1]

Fixed After window of width ``w`` (``w = 0, 1, ...``; Pre stays adaptive)::

    After = [p, min(p + w, p+ - 1)]

``w = 0`` is the new commit alone: the online case, where nothing after ``p``
is known yet.

Every function here returns **half-open** ``(start, stop)`` bounds, ready for
``values[start:stop]``. Edge cases, all deliberate:

- no confirmed change point before ``p``: Pre starts at 0;
- no confirmed change point after ``p``: After ends at ``n - 1``;
- ``p`` right after a change point (``p = p- + 1``) or ``p = 0``: Pre is empty
  (``start == stop``), as the formula says; the characteristics define a value
  for empty windows (see :mod:`triage.features.catalogue`);
- ``p`` itself in ``C`` (a confirmed candidate being described): it is
  neither ``p-`` nor ``p+`` because both are *strict*;
- After is never empty: it always holds ``p``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeGuard

import numpy as np

#: The window kinds :func:`window_bounds` accepts besides an integer width.
ADAPTIVE = "adaptive"

Bounds = tuple[int, int]


def confirmed_array(change_points: Iterable[int] | np.ndarray | None, n: int) -> np.ndarray:
    """Validated, sorted, de-duplicated confirmed change points.

    Parameters
    ----------
    change_points : iterable of int or None
        Indices of confirmed change points; ``None`` means none.
    n : int
        Series length.

    Returns
    -------
    ndarray of int64, shape (k,)

    Raises
    ------
    ValueError
        An index is outside ``[0, n)`` or not an integer.
    """
    if change_points is None:
        return np.empty(0, dtype=np.int64)
    arr = np.asarray(
        list(change_points) if not isinstance(change_points, np.ndarray) else change_points
    )
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr.astype(float))) or np.any(arr.astype(float) % 1 != 0):
            raise ValueError(f"change points must be integer indices, got {arr.tolist()!r}")
    arr = np.unique(arr.astype(np.int64))
    if arr[0] < 0 or arr[-1] >= n:
        raise ValueError(f"change point outside the series of {n} commits: {arr.tolist()!r}")
    return arr


def neighbours(p: int, change_points: np.ndarray, n: int) -> tuple[int, int]:
    """Previous and next confirmed change point strictly around ``p``.

    Returns
    -------
    (prev, next) : tuple of int
        ``prev = -1`` when there is none before ``p``; ``next = n`` when there
        is none after. ``change_points`` must be sorted (see
        :func:`confirmed_array`).
    """
    i = int(np.searchsorted(change_points, p, side="left"))
    prev = int(change_points[i - 1]) if i > 0 else -1
    j = int(np.searchsorted(change_points, p, side="right"))
    nxt = int(change_points[j]) if j < len(change_points) else n
    return prev, nxt


def _check_p(p: int, n: int) -> int:
    if isinstance(p, bool) or int(p) != p:
        raise ValueError(f"candidate index must be an integer, got {p!r}")
    p = int(p)
    if not 0 <= p < n:
        raise ValueError(f"candidate index {p} outside the series of {n} commits")
    return p


def adaptive_bounds(
    p: int, n: int, change_points: Iterable[int] | np.ndarray | None
) -> tuple[Bounds, Bounds]:
    """Adaptive Pre and After windows of candidate ``p``.

    Parameters
    ----------
    p : int
        Candidate index, ``0 <= p < n``.
    n : int
        Number of commits in the series.
    change_points : iterable of int or None
        Confirmed change points (any order; duplicates ignored).

    Returns
    -------
    ((pre_start, pre_stop), (after_start, after_stop)) : half-open bounds
    """
    return window_bounds(p, n, change_points, ADAPTIVE)


def fixed_bounds(
    p: int, n: int, change_points: Iterable[int] | np.ndarray | None, w: int
) -> tuple[Bounds, Bounds]:
    """Adaptive Pre and a fixed After window ``[p, min(p + w, p+ - 1)]``.

    ``w`` is the number of commits *after* ``p`` that After may hold, so the
    window has at most ``w + 1`` points; ``w = 0`` is ``p`` alone.
    """
    return window_bounds(p, n, change_points, w)


def window_bounds(
    p: int,
    n: int,
    change_points: Iterable[int] | np.ndarray | None,
    window: str | int = ADAPTIVE,
) -> tuple[Bounds, Bounds]:
    """Pre and After bounds for ``window = "adaptive"`` or a fixed width ``w >= 0``.

    Returns
    -------
    ((pre_start, pre_stop), (after_start, after_stop)) : half-open bounds
        ``pre_stop == after_start == p`` always.

    Raises
    ------
    ValueError
        ``p`` outside the series, bad change points, or a bad ``window``.
    """
    if n <= 0:
        raise ValueError("the series is empty")
    p = _check_p(p, n)
    cps = change_points if _is_clean(change_points, n) else confirmed_array(change_points, n)
    prev, nxt = neighbours(p, cps, n)
    pre = (prev + 1, p)
    if isinstance(window, str):
        if window != ADAPTIVE:
            raise ValueError(f"window must be {ADAPTIVE!r} or an integer >= 0, got {window!r}")
        return pre, (p, nxt)
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 0:
        raise ValueError(f"window must be {ADAPTIVE!r} or an integer >= 0, got {window!r}")
    # min(p + w, p+ - 1) inclusive  ->  min(p + w + 1, p+) half-open; p+ <= n.
    return pre, (p, min(p + int(window) + 1, nxt))


def _is_clean(change_points: object, n: int) -> TypeGuard[np.ndarray]:
    """True for an already validated int64 array (the batch path), to skip re-checking."""
    return (
        isinstance(change_points, np.ndarray)
        and change_points.dtype == np.int64
        and change_points.ndim == 1
        and (change_points.size == 0 or (change_points[0] >= 0 and change_points[-1] < n))
        and bool(np.all(np.diff(change_points) > 0))
    )


#: Most commits a candidate-bounded Pre or After window holds (the
#: ``max_len`` default of :func:`candidate_bounds`).
CANDIDATE_MAX_LEN = 60
#: Neighbouring candidates closer than this are taken for the same change
#: (detectors report a change at neighbouring commits), not as a bound.
CANDIDATE_MIN_GAP = 5


def candidate_bounds(
    p: int,
    n: int,
    candidates: Iterable[int] | np.ndarray | None,
    confirmed: Iterable[int] | np.ndarray | None = None,
    max_len: int = CANDIDATE_MAX_LEN,
    min_gap: int = CANDIDATE_MIN_GAP,
) -> tuple[Bounds, Bounds]:
    """Honest Pre and After of a fresh candidate (no confirmed neighbours needed).

    A candidate on an unlabelled series has no confirmed change points around
    it; unbounded windows then mix levels of other changes and the features
    say nothing (issue 10: AUC about 0.5). So the windows stop at the previous
    and next candidate *of the same detector run* that lies at least
    ``min_gap`` commits away (closer ones are the same change reported twice),
    or at a confirmed change point where one is known, and hold at most
    ``max_len`` commits each::

        Pre   = [max(q- + 1, p - max_len), p)
        After = [p, min(q+, p + max_len))

    ``q-`` / ``q+``: the nearest bound (candidate or confirmed) strictly
    before / after ``p`` by at least ``min_gap`` (confirmed ones: any
    distance); -1 / ``n`` when none. Half-open, like every bound here.
    """
    if n <= 0:
        raise ValueError("the series is empty")
    p = _check_p(p, n)
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len!r}")
    cands = confirmed_array(candidates, n)
    far = cands[np.abs(cands - p) >= min_gap]
    stops = np.union1d(far, confirmed_array(confirmed, n)).astype(np.int64)
    prev, nxt = neighbours(p, stops, n)
    return (max(prev + 1, p - max_len), p), (p, min(nxt, p + max_len))
