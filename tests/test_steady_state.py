"""Steady-state detection on generated warm-up curves with known onsets."""

from __future__ import annotations

import numpy as np
import pytest

from triage.steady_state import CPSSD, KBKSSD, KernelStepSSD, cuts, make, steady_mask
from triage.steady_state.curves import make_run
from triage.steady_state.kbkssd import (
    drop_positions,
    find_warmup_end,
    kelly_probabilities,
    substitute_outliers,
)
from triage.steady_state.kstep import filter_outliers

METHODS = [KBKSSD, CPSSD, KernelStepSSD]


def _step_run(seed: int, n: int = 600, onset: int = 150, jump: float = 8.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 10.0 + rng.standard_normal(n) * 0.1
    x[:onset] += jump * 0.1
    return x


@pytest.mark.parametrize("cls", METHODS)
def test_step_warmup_onset_found_within_a_few_iterations(cls):
    for seed in range(5):
        start = cls().fit(_step_run(seed)).start_
        assert start is not None and abs(start - 150) <= 3, (seed, start)


@pytest.mark.parametrize("cls", [CPSSD, KernelStepSSD])
def test_flat_gaussian_run_is_steady_from_the_start(cls):
    rng = np.random.default_rng(3)
    assert cls().fit(5.0 + rng.standard_normal(800) * 0.05).start_ == 0


def test_kbkssd_as_published_cuts_a_flat_run_at_its_largest_noise_fall_but_calls_it_steady():
    # Its significance rule compares the fall with half of |median - mean|,
    # about 0 for symmetric noise: some fall in the noise always passes.
    rng = np.random.default_rng(3)
    det = KBKSSD().fit(5.0 + rng.standard_normal(800) * 0.05)
    assert det.warmup_end_ is not None and det.start_ == det.warmup_end_ + 1
    assert np.all(det.probabilities_[: det.start_] == 0) and np.all(
        det.probabilities_[det.start_ :] >= 0.95
    )


@pytest.mark.parametrize("cls", [KBKSSD, KernelStepSSD])
def test_exponential_warmup_start_lands_in_the_decayed_part(cls):
    rng = np.random.default_rng(4)
    n, tau = 1000, 60.0
    t = np.arange(n)
    x = 100 + 20 * np.exp(-t / tau) + rng.standard_normal(n)
    start = cls().fit(x).start_
    # 20 exp(-t/60) falls below the noise sd at t = 180, below 0.5 sd at t = 220.
    assert start is not None and 100 <= start <= 300


def test_kbkssd_finds_a_rising_warmup_only_when_told_the_values_are_rates():
    x = -_step_run(8)  # a rate: low while warming up, then 8 sd higher
    assert KBKSSD(direction="up").fit(x).start_ == 150
    assert KBKSSD().fit(x).start_ != 150  # read as a time, the rise is not a warm-up
    with pytest.raises(ValueError, match="direction"):
        KBKSSD(direction="sideways").fit(x)
    with pytest.raises(ValueError, match="odd"):
        KBKSSD(median_kernel=4).fit(x)


def test_kbkssd_takes_the_later_split_when_a_slow_decline_follows_the_sharp_fall():
    # A 40 sd fall after 100 iterations, then a decline of 10 sd over 700.
    # The short kernel places the sharp fall; the whole-run kernel splits the
    # slow decline, whose local drop (70 iterations each side) is small next
    # to how far the stretch between them still sits above the final level.
    rng = np.random.default_rng(21)
    n = 1500
    x = 10.0 + rng.standard_normal(n) * 0.1
    x[:100] += 4.0
    x[100:] += np.clip((800 - np.arange(100, n)) / 700, 0, 1)
    long_step, short_step = drop_positions(x, 15)
    assert abs(short_step - 99) <= 1 and 300 <= long_step <= 600
    assert find_warmup_end(x, 15, 70) == long_step
    # A clean second step is not such a case: the earlier, sharper fall stays.
    y = 10.0 + rng.standard_normal(1200) * 0.1
    y[:100] += 3.0
    y[:400] += 1.0
    assert find_warmup_end(y, 15, 70) == 99


def test_kelly_window_probabilities():
    rng = np.random.default_rng(22)
    flat = rng.standard_normal(600)
    p = kelly_probabilities(flat, 500, 4.0)
    assert np.all(p[:500] == p[0]) and p[0] > 0.99 and p[-1] > 0.99  # two windows: 500 and 100
    drift = np.linspace(0.0, 12.0, 500) + rng.standard_normal(500)
    assert kelly_probabilities(drift, 500, 4.0)[0] < 0.95  # far from the intercept by the end
    tail = kelly_probabilities(
        flat[:502], 500, 4.0
    )  # a 2-iteration tail joins the window before it
    assert tail[-1] == tail[0]
    assert np.all(kelly_probabilities(flat[:2], 500, 4.0) == -1.0)


def test_percentile_substitution_replaces_each_chunks_extremes_with_its_median():
    rng = np.random.default_rng(23)
    x = 10.0 + rng.standard_normal(401) * 0.1
    x[0] = 99.0  # the first iteration (class loading) is left alone
    x[200] = 50.0
    clean, mask = substitute_outliers(x, 100, 2.0, 98.0)
    assert clean[0] == 99.0 and not mask[0]
    assert mask[200] and clean[200] == pytest.approx(np.median(x[151:251]), abs=0.2)
    assert 12 <= mask.sum() <= 20  # 2 % + 2 % of each of the four chunks
    assert np.all(clean[~mask] == x[~mask])


@pytest.mark.parametrize("cls", [KBKSSD, KernelStepSSD])  # CP-SSD's reading: tests/test_cpssd.py
def test_drift_through_the_whole_run_is_never_steady(cls):
    rng = np.random.default_rng(5)
    n = 1000
    x = 50 + np.linspace(0, 20, n) + rng.standard_normal(n)
    assert cls().fit(x).start_ is None


def test_step_in_the_last_iterations_is_never_steady():
    x = _step_run(6, n=600, onset=0)
    x[585:] += 1.0  # 10 sd up in the last 15 iterations
    assert KernelStepSSD().fit(x).start_ is None
    # KB-KSSD's Kelly window holds 15 outlying iterations of 600 (< 5 %): steady.
    assert KBKSSD().fit(x).start_ is not None


@pytest.mark.parametrize("cls", [KBKSSD, KernelStepSSD])
def test_outlier_spikes_are_filtered_not_read_as_steps(cls):
    x = _step_run(7)
    spikes = np.arange(160, 600, 50)
    x[spikes] += 3.0  # 30 sd GC pauses
    det = cls().fit(x)
    assert det.outliers_[spikes].all()
    assert det.start_ is not None and abs(det.start_ - 150) <= 3
    _, mask = filter_outliers(x, 21, 90.0, 3.0)
    assert mask.sum() <= len(spikes) + 3


def test_generated_runs_mostly_right_on_every_kind():
    rng = np.random.default_rng(9)
    for kind in ("flat", "step"):
        runs = [make_run(kind, rng, n=400) for _ in range(10)]
        starts = [KernelStepSSD().fit(r.values).start_ for r in runs]
        errs = [abs((400 if s is None else s) - r.onset) for s, r in zip(starts, runs, strict=True)]
        assert np.median(errs) <= 5, (kind, errs)


def test_kbkssd_places_generated_falling_step_warmups():
    rng = np.random.default_rng(9)
    runs = [
        r
        for r in (make_run("step", rng, n=600) for _ in range(40))
        if np.median(r.values[: r.onset]) > np.median(r.values[r.onset :])
    ]
    assert len(runs) >= 10
    errs = [
        abs((600 if s is None else s) - r.onset)
        for r in runs
        for s in [KBKSSD().fit(r.values).start_]
    ]
    assert np.median(errs) <= 3, errs


def test_steady_mask_drops_each_runs_warmup_only():
    a = _step_run(10, n=300, onset=60)
    b = 10.0 + np.random.default_rng(11).standard_normal(200) * 0.1
    values = np.r_[a, b]
    run_id = np.r_[np.zeros(300, int), np.ones(200, int)]
    keep = steady_mask(values, run_id, make("kstep"))
    assert 57 <= np.flatnonzero(~keep[:300]).max() + 1 <= 63
    assert keep[300:].all()
    keep = steady_mask(values, run_id, make("kbkssd"))
    assert (
        np.flatnonzero(~keep[:300]).max() + 1 == 60
    )  # the flat run b: see the published-KB-KSSD test
    assert steady_mask(values, run_id, make("none")).all()


def test_a_never_steady_run_is_cut_at_the_median_start_of_its_series_steady_runs():
    lengths = np.array([60, 60, 60, 60, 60, 10, 60, 1])
    starts = [10, 20, 40, None, None, None, None, None]
    groups = np.array([0, 0, 0, 0, 1, 0, 2, 0])
    # Run 3: its series' steady runs started at 10, 20, 40 -> 20. Run 5: 10 iterations, fewer than
    # that: kept whole. Runs 4 and 6: no steady run in their series. Run 7: one iteration.
    assert cuts(lengths, starts, groups).tolist() == [10, 20, 40, 20, 0, 0, 0, 0]
    assert cuts(lengths, starts).tolist() == [10, 20, 40, 0, 0, 0, 0, 0]  # series unknown: kept whole
    with pytest.raises(ValueError, match="one group per run"):
        cuts(lengths, starts, groups[:3])
    # steady_mask applies the same cuts.
    x = np.arange(120.0)
    keep = steady_mask(x, np.r_[np.zeros(60, int), np.ones(60, int)], _Fixed([12, None]), groups=np.array([5, 5]))
    assert keep.tolist() == [False] * 12 + [True] * 48 + [False] * 12 + [True] * 48


class _Fixed:
    """A steady-state detector answering the given starts in turn."""

    def __init__(self, starts):
        self.starts, self.start_ = list(starts), None

    def fit(self, x):
        self.start_ = self.starts.pop(0)
        return self


def test_never_steady_run_keeps_all_measurements_and_bad_names_are_refused():
    x = np.linspace(0, 20, 500) + np.random.default_rng(12).standard_normal(500)
    assert steady_mask(x, np.zeros(500, int), KBKSSD()).all()
    with pytest.raises(ValueError, match="unknown steady-state method"):
        make("magic")
    with pytest.raises(ValueError, match="finite"):
        KBKSSD().fit([1.0, np.nan, 2.0])


def test_load_trims_each_commits_warmup_before_aggregating(tmp_path):
    import pandas as pd

    from triage.core.errors import InputError
    from triage.loaders import load

    rng = np.random.default_rng(13)
    rows = []
    for c in range(3):
        x = 10 + rng.standard_normal(300) * 0.1
        x[:80] += 1.0 + c  # warm-up 10 to 30 sd above the steady level
        rows += [("s", f"c{c}", v) for v in x]
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "value"]).to_csv(path, index=False)
    plain = load(path)["s"].values
    assert np.all(plain > 10.2)  # the warm-up biases the mean upwards
    for method in ("kbkssd", "cpssd", "kstep"):
        trimmed = load(path, trim_warmup=method)["s"]
        assert np.allclose(trimmed.values, 10.0, atol=0.03), method
        assert list(trimmed.n_measurements) == [300, 300, 300]
    with pytest.raises(InputError, match="unknown steady-state method"):
        load(path, trim_warmup="magic")


def test_convert_trims_each_commits_warmup_before_writing_one_value_per_commit(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from triage.cli.app import app

    rng = np.random.default_rng(14)
    rows = []
    for c in range(3):
        x = 10 + rng.standard_normal(300) * 0.1
        x[:80] += 2.0  # a warm-up 20 sd above the steady level
        rows += [("s", f"c{c}", v) for v in x]
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "value"]).to_csv(path, index=False)
    for method, expected in (("none", 10.53), ("kbkssd", 10.0)):
        out = tmp_path / f"{method}.csv"
        res = CliRunner().invoke(
            app, ["convert", "--data", str(path), "--out", str(out), "--trim-warmup", method]
        )
        assert res.exit_code == 0, res.output
        assert np.allclose(pd.read_csv(out)["value"], expected, atol=0.03), method
    bad = CliRunner().invoke(
        app,
        [
            "convert",
            "--data",
            str(path),
            "--out",
            str(tmp_path / "x.csv"),
            "--trim-warmup",
            "magic",
        ],
    )
    assert bad.exit_code != 0 and not (tmp_path / "x.csv").exists()
