"""CP-SSD after Traini et al.: mean-and-variance PELT, elbow penalty, bootstrap effect-size walk-back."""

from __future__ import annotations

import numpy as np
import pytest

from triage.steady_state.cpssd import CPSSD, elbow, pelt_meanvar, refine_change_points
from triage.steady_state.curves import KINDS, make_run


def _step_run(
    seed: int,
    n: int = 600,
    onset: int = 150,
    level: float = 10.0,
    sd: float = 0.1,
    jump: float = 0.8,
):
    rng = np.random.default_rng(seed)
    x = level + rng.standard_normal(n) * sd
    x[:onset] += jump
    return x


def _brute_force(
    x: np.ndarray, penalty: float, min_size: int, floor: float, step: int = 1
) -> list[int]:
    """Optimal partitioning without pruning, one segment cost at a time (change points at multiples of step)."""
    n = len(x)

    def cost(a: int, b: int) -> float:
        return (b - a) * np.log(max(float(np.var(x[a:b])), floor))

    best = [-penalty] + [np.inf] * n
    last = [0] * (n + 1)
    for t in range(min_size, n + 1):
        if t % step and t != n:
            continue
        for s in range(0, t - min_size + 1, step):
            c = best[s] + cost(s, t) + penalty
            if c < best[t]:
                best[t], last[t] = c, s
    cps, t = [], n
    while t > 0:
        t = last[t]
        if t > 0:
            cps.append(t)
    return sorted(cps)


def test_pelt_meanvar_is_exact_optimal_partitioning_for_every_penalty():
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(0, 1, 30), rng.normal(3, 1, 25), rng.normal(3, 4, 25)]
    pens = np.array([2.0, 5.0, 10.0, 30.0, 300.0])
    got = pelt_meanvar(x, pens, 2, 1e-8)
    for pen, cps in zip(pens, got, strict=True):
        assert cps == _brute_force(x, float(pen), 2, 1e-8), pen
    assert got[-1] == [] and len(got[0]) >= len(got[2]) >= 2


def test_pelt_meanvar_sees_a_change_of_variance_alone():
    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(0, 1, 300), rng.normal(0, 5, 300)]
    (cps,) = pelt_meanvar(x, np.array([15 * np.log(600)]), 2, 1e-8)
    assert len(cps) == 1 and abs(cps[0] - 300) <= 10


def test_constant_stretch_costs_a_finite_amount():
    x = np.r_[np.zeros(50), np.ones(50)]
    (cps,) = pelt_meanvar(x, np.array([10.0]), 2, 1e-8)
    assert cps == [50]
    det = CPSSD().fit(np.full(200, 3.0))
    assert det.start_ == 0 and det.change_points_ == []


def test_elbow_takes_the_bend_and_keeps_each_count_at_its_smallest_penalty():
    pens = np.arange(1.0, 11.0)
    # Counts 9, 6, then 1 from penalty 3 to 8, none from 9: the points kept
    # are (1, 9), (2, 6), (3, 1), (9, 0), and (3, 1) lies farthest below the
    # chord (1 - 2/8 - 1/9).
    assert elbow(pens, np.array([9, 6, 1, 1, 1, 1, 1, 1, 0, 0])) == 2
    assert elbow(pens, np.full(10, 2)) is None  # one distinct count: no curve
    # Two points lie on their chord: the one with more change points. (Every
    # grid penalty kept, the first zero would win at x = 3/9, y = 0.)
    assert elbow(pens, np.r_[np.ones(3), np.zeros(7)]) == 0


def test_step_warmup_onset_found_within_a_few_iterations():
    for seed in range(5):
        start = CPSSD().fit(_step_run(seed)).start_
        assert start is not None and abs(start - 150) <= 3, (seed, start)


def test_generated_step_warmups_well_above_five_percent_are_found():
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(60):
        run = make_run("step", rng, n=600, heavy_share=0.0)
        last = np.mean(run.values[run.onset :])
        before = np.mean(run.values[run.onset - 20 : run.onset])
        if abs(before / last - 1) < 0.15:  # keep clear warm-ups only
            continue
        found += 1
        start = CPSSD().fit(run.values).start_
        assert start is not None and abs(start - run.onset) <= 3, (run.onset, start)
    assert found >= 5


def test_flat_run_is_steady_from_the_start():
    rng = np.random.default_rng(3)
    det = CPSSD().fit(5.0 + rng.standard_normal(800) * 0.05)
    assert det.start_ == 0


def test_warmup_within_five_percent_is_not_cut():
    # 3 % above the steady level (6 noise sd): PELT finds the step, the
    # effect-size rule keeps the warm-up; the same step at 8 % is cut.
    small = CPSSD().fit(_step_run(4, n=800, onset=200, level=100.0, sd=0.5, jump=3.0))
    assert any(abs(c - 200) <= 3 for c in small.change_points_)
    assert small.start_ == 0
    large = CPSSD().fit(_step_run(4, n=800, onset=200, level=100.0, sd=0.5, jump=8.0))
    assert large.start_ is not None and abs(large.start_ - 200) <= 3


def test_linear_drift_is_steady_from_its_last_change_point():
    # Traini et al.'s procedure has no trend test: PELT cuts the drift into
    # levels; the last one differs from the one before it by more than 5 %,
    # so the steady state starts at the last change point, which lies before
    # 90 % of the run. (This project's kstep calls the same run never steady.)
    rng = np.random.default_rng(5)
    n = 1000
    x = 50 + np.linspace(0, 20, n) + rng.standard_normal(n)
    det = CPSSD().fit(x)
    assert len(det.change_points_) >= 2
    assert det.start_ == det.change_points_[-1] < 0.9 * n
    last, before = (
        x[det.change_points_[-1] :].mean(),
        x[det.change_points_[-2] : det.change_points_[-1]].mean(),
    )
    assert last / before > 1.05


def test_start_in_the_last_tenth_of_the_run_is_never_steady():
    x = _step_run(6, n=1000, onset=0)
    x[920:] += 1.0  # 10 % up over the last 80 iterations
    det = CPSSD().fit(x)
    assert det.change_points_ and abs(det.change_points_[-1] - 920) <= 2
    assert det.start_ is None
    later = CPSSD(max_start=0.95).fit(x)
    assert later.start_ == det.change_points_[-1]


def test_elbow_penalty_lies_in_the_search_range():
    rng = np.random.default_rng(7)
    for kind in KINDS:
        for _ in range(3):
            x = make_run(kind, rng, n=int(rng.integers(300, 900))).values
            det = CPSSD().fit(x)
            log_n = np.log(len(x))
            assert 4 * log_n <= det.penalty_ <= 1e5 * log_n, (kind, det.penalty_ / log_n)
    # No change point at any penalty: the fallback, 15 log n.
    flat = CPSSD().fit(5.0 + rng.standard_normal(500) * 0.05)
    assert flat.change_points_ == [] and flat.penalty_ == pytest.approx(15 * np.log(500))


def test_fits_are_deterministic():
    rng = np.random.default_rng(8)
    # A warm-up near the 5 % threshold, where the bootstrap decides.
    x = 20 + rng.standard_normal(700) * 0.4
    x[:150] += 1.05
    a, b = CPSSD().fit(x), CPSSD().fit(x.copy())
    assert (a.start_, a.change_points_, a.penalty_) == (b.start_, b.change_points_, b.penalty_)


def test_negative_values_compare_differences_with_five_percent_of_the_level():
    # Negated values: the ratio of means has no meaning, the difference
    # against 5 % of |mean(last)| gives the same answers here.
    for seed in range(3):
        x = _step_run(seed)
        assert CPSSD().fit(-x).start_ == CPSSD().fit(x).start_
    small = -_step_run(4, n=800, onset=200, level=100.0, sd=0.5, jump=3.0)
    assert CPSSD().fit(small).start_ == 0


def test_non_finite_runs_are_refused():
    with pytest.raises(ValueError, match="finite"):
        CPSSD().fit([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="finite"):
        CPSSD().fit(np.r_[np.ones(10), np.inf])


def test_short_runs():
    assert CPSSD().fit([1.0, 2.0, 3.0]).start_ == 0
    assert CPSSD().fit([]).start_ is None


def test_pelt_meanvar_on_a_lattice_is_exact_over_the_lattice():
    rng = np.random.default_rng(9)
    x = np.r_[rng.normal(0, 1, 41), rng.normal(3, 1, 37), rng.normal(3, 4, 33)]
    pens = np.array([2.0, 5.0, 10.0, 30.0, 300.0])
    for step in (3, 5):
        got = pelt_meanvar(x, pens, 2, 1e-8, step)
        for pen, cps in zip(pens, got, strict=True):
            assert all(c % step == 0 for c in cps)
            assert cps == _brute_force(x, float(pen), 2, 1e-8, step), (step, pen)


def test_refinement_moves_lattice_change_points_to_the_step():
    x = _step_run(10, n=1000, onset=153)
    z = (x - np.median(x)) / 0.1
    (cps,) = pelt_meanvar(z, np.array([15 * np.log(1000)]), 2, 1e-8, 10)
    assert cps in ([150], [160])
    assert refine_change_points(z, cps, 10, 2, 1e-8) == [153]
    # Neighbours bound the move: the segments keep at least min_size.
    assert refine_change_points(np.r_[np.zeros(5), np.ones(5)], [4, 6], 3, 2, 1e-8) == [4, 6]


def test_runs_up_to_exact_max_are_segmented_exactly():
    x = _step_run(11, n=900)
    a, b = CPSSD().fit(x), CPSSD(exact_max=900).fit(x)
    assert (a.start_, a.change_points_, a.penalty_) == (b.start_, b.change_points_, b.penalty_)


def test_long_run_on_the_lattice_finds_the_step_warmup():
    # 30,000 iterations: change points on a lattice of 6, then refined.
    x = _step_run(12, n=30_000, onset=7_001, jump=0.8)
    det = CPSSD().fit(x)
    assert det.start_ is not None and abs(det.start_ - 7_001) <= 3
    flat = CPSSD().fit(_step_run(13, n=30_000, onset=0))
    assert flat.start_ == 0


def test_lattice_agrees_with_the_exact_search_on_clear_warmups():
    rng = np.random.default_rng(14)
    for _ in range(6):
        run = make_run("step", rng, n=1500, heavy_share=0.0)
        exact = CPSSD().fit(run.values)
        coarse = CPSSD(exact_max=300).fit(run.values)  # lattice of 5
        assert exact.start_ is not None and coarse.start_ is not None
        assert abs(coarse.start_ - exact.start_) <= 2, (run.onset, exact.start_, coarse.start_)


@pytest.mark.parametrize("bad", [0, -5, 2.5])
def test_exact_max_must_be_a_positive_count(bad):
    with pytest.raises(ValueError, match="exact_max"):
        CPSSD(exact_max=bad).fit(np.ones(20))
