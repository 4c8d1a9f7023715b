"""Steady-state detection on generated warm-up curves with known onsets."""

from __future__ import annotations

import numpy as np
import pytest

from triage.steady_state import CPSSD, KBKSSD, make, steady_mask
from triage.steady_state.cpssd import pelt_l2
from triage.steady_state.curves import make_run
from triage.steady_state.kbkssd import filter_outliers

METHODS = [KBKSSD, CPSSD]


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


@pytest.mark.parametrize("cls", METHODS)
def test_flat_gaussian_run_is_steady_from_the_start(cls):
    rng = np.random.default_rng(3)
    assert cls().fit(5.0 + rng.standard_normal(800) * 0.05).start_ == 0


def test_exponential_warmup_start_lands_in_the_decayed_part():
    rng = np.random.default_rng(4)
    n, tau = 1000, 60.0
    t = np.arange(n)
    x = 100 + 20 * np.exp(-t / tau) + rng.standard_normal(n)
    start = KBKSSD().fit(x).start_
    # 20 exp(-t/60) falls below the noise sd at t = 180, below 0.5 sd at t = 220.
    assert start is not None and 100 <= start <= 300


@pytest.mark.parametrize("cls", METHODS)
def test_drift_through_the_whole_run_is_never_steady(cls):
    rng = np.random.default_rng(5)
    n = 1000
    x = 50 + np.linspace(0, 20, n) + rng.standard_normal(n)
    assert cls().fit(x).start_ is None


def test_step_in_the_last_iterations_is_never_steady():
    x = _step_run(6, n=600, onset=0)
    x[585:] += 1.0  # 10 sd up in the last 15 iterations
    assert KBKSSD().fit(x).start_ is None


def test_outlier_spikes_are_filtered_not_read_as_steps():
    x = _step_run(7)
    spikes = np.arange(160, 600, 50)
    x[spikes] += 3.0  # 30 sd GC pauses
    det = KBKSSD().fit(x)
    assert det.outliers_[spikes].all()
    assert det.start_ is not None and abs(det.start_ - 150) <= 3
    _, mask = filter_outliers(x, 21, 90.0, 3.0)
    assert mask.sum() <= len(spikes) + 3


def test_pelt_finds_the_two_steps_it_was_given():
    rng = np.random.default_rng(8)
    x = np.r_[np.full(100, 0.0), np.full(80, 5.0), np.full(120, 2.0)] + rng.standard_normal(300) * 0.3
    assert pelt_l2(x, 2 * 0.09 * np.log(300), 10) == [100, 180]


def test_generated_runs_mostly_right_on_every_kind():
    rng = np.random.default_rng(9)
    for kind in ("flat", "step"):
        runs = [make_run(kind, rng, n=400) for _ in range(10)]
        starts = [KBKSSD().fit(r.values).start_ for r in runs]
        errs = [abs((400 if s is None else s) - r.onset) for s, r in zip(starts, runs, strict=True)]
        assert np.median(errs) <= 5, (kind, errs)


def test_steady_mask_drops_each_runs_warmup_only():
    a = _step_run(10, n=300, onset=60)
    b = 10.0 + np.random.default_rng(11).standard_normal(200) * 0.1
    values = np.r_[a, b]
    run_id = np.r_[np.zeros(300, int), np.ones(200, int)]
    keep = steady_mask(values, run_id, make("kbkssd"))
    assert 57 <= np.flatnonzero(~keep[:300]).max() + 1 <= 63
    assert keep[300:].all()
    assert steady_mask(values, run_id, make("none")).all()


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
    for method in ("kbkssd", "cpssd"):
        trimmed = load(path, trim_warmup=method)["s"]
        assert np.allclose(trimmed.values, 10.0, atol=0.03), method
        assert list(trimmed.n_measurements) == [300, 300, 300]
    with pytest.raises(InputError, match="unknown steady-state method"):
        load(path, trim_warmup="magic")
