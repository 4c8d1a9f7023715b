"""Pre/After window bounds (triage.features.windows)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.features.windows import adaptive_bounds, confirmed_array, fixed_bounds, window_bounds

# n = 20 commits, confirmed change points at 5 and 12.
CPS = [5, 12]


@pytest.mark.parametrize(
    ("p", "pre", "after"),
    [
        (8, (6, 8), (8, 12)),  # between change points
        (2, (0, 2), (2, 5)),  # no change point before: Pre starts at 0
        (15, (13, 15), (15, 20)),  # none after: After ends at n - 1
        (6, (6, 6), (6, 12)),  # right after a change point: Pre is empty
        (0, (0, 0), (0, 5)),  # first commit: Pre is empty
        (19, (13, 19), (19, 20)),  # last commit: After is p alone
        (12, (6, 12), (12, 20)),  # p is itself confirmed: strict neighbours 5 and none
        (5, (0, 5), (5, 12)),
    ],
)
def test_adaptive_bounds_by_hand(p, pre, after):
    assert adaptive_bounds(p, 20, CPS) == (pre, after)


@pytest.mark.parametrize(
    ("p", "w", "after"),
    [
        (8, 0, (8, 9)),  # the online case: the new commit alone
        (8, 2, (8, 11)),  # [8, 10] inclusive
        (8, 3, (8, 12)),  # [8, 11]: reaches p+ - 1
        (8, 50, (8, 12)),  # capped by the next change point
        (15, 50, (15, 20)),  # capped by the series end
        (11, 0, (11, 12)),
    ],
)
def test_fixed_bounds_by_hand(p, w, after):
    pre, got = fixed_bounds(p, 20, CPS, w)
    assert got == after
    assert pre == adaptive_bounds(p, 20, CPS)[0]


def test_no_change_points_and_unsorted_duplicates():
    assert window_bounds(3, 10, None) == ((0, 3), (3, 10))
    assert window_bounds(3, 10, []) == ((0, 3), (3, 10))
    assert window_bounds(8, 20, [12, 5, 5]) == window_bounds(8, 20, CPS)
    assert window_bounds(8, 20, np.array([5, 12])) == ((6, 8), (8, 12))


@pytest.mark.parametrize(
    ("p", "n", "cps", "window"),
    [
        (20, 20, CPS, "adaptive"),
        (-1, 20, CPS, "adaptive"),
        (3, 20, [25], "adaptive"),
        (3, 20, [-1], "adaptive"),
        (3, 20, CPS, -1),
        (3, 20, CPS, "fixed"),
        (3, 20, CPS, 1.5),
        (3, 20, [1.5], "adaptive"),
        (3, 0, [], "adaptive"),
    ],
)
def test_bad_arguments_raise(p, n, cps, window):
    with pytest.raises(ValueError):
        window_bounds(p, n, cps, window)


def test_confirmed_array_normalises():
    assert confirmed_array([7, 2, 2], 10).tolist() == [2, 7]
    assert confirmed_array(None, 10).dtype == np.int64


@st.composite
def series_case(draw):
    n = draw(st.integers(1, 60))
    cps = sorted(draw(st.sets(st.integers(0, n - 1), max_size=8)))
    p = draw(st.integers(0, n - 1))
    window = draw(st.one_of(st.just("adaptive"), st.integers(0, 70)))
    return n, cps, p, window


@settings(max_examples=300, deadline=None)
@given(series_case())
def test_window_properties(case):
    n, cps, p, window = case
    (a, b), (c, d) = window_bounds(p, n, cps, window)
    assert 0 <= a <= b == c == p < d <= n  # half-open, After holds p
    inside_pre = [q for q in cps if a <= q < b]
    inside_after = [q for q in cps if c < q < d]
    assert not inside_pre and not inside_after  # no confirmed change inside a window
    before = [q for q in cps if q < p]
    assert a == (before[-1] + 1 if before else 0)  # Pre starts right after p-
    after = [q for q in cps if q > p]
    nxt = after[0] if after else n
    if window == "adaptive":
        assert d == nxt
    else:
        assert d == min(p + window + 1, nxt)


def test_candidate_bounds_stop_at_other_candidates_and_max_len():
    from triage.features.windows import candidate_bounds

    # neighbours 40 and 90 bound the windows; 52 is the same change reported twice
    assert candidate_bounds(50, 200, [40, 50, 52, 90]) == ((41, 50), (50, 90))
    # max_len caps both sides; no neighbour: the series' ends, then the cap
    assert candidate_bounds(100, 300, [100], max_len=30) == ((70, 100), (100, 130))
    assert candidate_bounds(10, 300, [], max_len=60) == ((0, 10), (10, 70))
    # a confirmed change point bounds at any distance
    assert candidate_bounds(50, 200, [50], confirmed=[48]) == ((49, 50), (50, 110))
    with pytest.raises(ValueError):
        candidate_bounds(5, 10, [5], max_len=0)
