"""Active revision sampling (GP over the commit axis) and culprit search."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Kernel
from warm_start import warm_triage

from triage.sampling import KERNELS, Brownian, HistoryGP, find_culprit


def test_brownian_kernel_is_min_covariance_with_the_right_gradient():
    x = np.array([[0.5], [1.0], [2.0]])
    k = Brownian(2.0)
    assert isinstance(k, Kernel) and not k.is_stationary()
    assert np.allclose(k(x), 2.0 * np.minimum(x, x.T))
    assert np.allclose(k.diag(x), [1.0, 2.0, 4.0])
    K, grad = k(x, eval_gradient=True)
    eps = 1e-6  # d/dlog(variance), numerically
    assert np.allclose(grad[:, :, 0], (Brownian(2.0 * np.exp(eps))(x) - K) / eps, atol=1e-5)
    assert "variance" in k.get_params()


@pytest.mark.parametrize("kernel", KERNELS)
def test_gp_recovers_a_smooth_history_from_a_few_commits(kernel):
    n = 200
    t = np.arange(n)
    y = 100 + 5 * np.sin(t / 40)
    pos = np.arange(0, n, 20)
    mean, std = HistoryGP(kernel).fit(n, pos, y[pos]).predict()
    assert np.mean(np.abs(mean - y) / y) < 0.01
    assert std.shape == (n,) and np.all(std > 0)


def test_next_positions_fill_the_widest_gaps_first_never_measured_ones():
    rng = np.random.default_rng(0)
    n = 101
    y = 10 + rng.standard_normal(n) * 0.1
    pos = [0, 10, 100]
    picks = HistoryGP().fit(n, pos, y[pos]).next_positions(3)
    assert len(set(picks)) == 3 and not set(picks) & set(pos)
    assert 40 <= picks[0] <= 70  # the middle of the 10..100 gap
    assert all(10 < p < 100 for p in picks)


def test_band_is_narrow_at_measured_commits_and_wide_between():
    n = 100
    pos = np.array([0, 50, 99])
    y = np.r_[np.full(50, 1.0), np.full(50, 2.0)]
    mean, std = HistoryGP().fit(n, pos, y[pos]).predict()
    assert std[25] > std[50] and std[75] > std[99]


def test_gp_refuses_repeated_positions():
    with pytest.raises(ValueError, match="each commit once"):
        HistoryGP().fit(10, [1, 1], [2.0, 3.0])


def _step(n, c, size, noise, seed):
    rng = np.random.default_rng(seed)
    return np.where(np.arange(n) >= c, size, 0.0) + rng.standard_normal(n) * noise


@pytest.mark.parametrize("strategy", ["bisect", "bayes"])
def test_culprit_found_exactly_without_noise_in_log2_measurements(strategy):
    for gap in (2, 7, 16, 63):
        for c in (1, gap // 2 or 1, gap):
            y = _step(gap + 1, c, 1.0, 0.0, 0)
            s = find_culprit(0, gap, lambda i, y=y: y[i], 0.0, 1.0, 0.01, strategy=strategy)
            assert s.culprit == c, (gap, c, s)
            assert len(s.measured) <= np.ceil(np.log2(gap)) + (strategy == "bayes"), (
                gap,
                c,
                s.measured,
            )


def test_bayes_survives_noise_better_than_bisect_within_the_same_budget():
    wins = {"bisect": 0, "bayes": 0}
    for seed in range(60):
        rng = np.random.default_rng(seed)
        gap = int(rng.integers(8, 64))
        c = int(rng.integers(1, gap + 1))
        y = _step(gap + 1, c, 3.0, 1.0, seed)
        lim = int(np.log2(gap)) + 1
        for strategy in wins:
            s = find_culprit(
                0, gap, lambda i, y=y: y[i], 0.0, 3.0, 1.0, strategy=strategy, max_measurements=lim
            )
            wins[strategy] += abs(s.culprit - c) <= 1
    assert wins["bayes"] >= wins["bisect"] and wins["bayes"] >= 45, wins


def test_culprit_input_errors():
    with pytest.raises(ValueError, match="after"):
        find_culprit(5, 5, lambda i: 0.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="equal"):
        find_culprit(0, 5, lambda i: 0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="strategy"):
        find_culprit(0, 5, lambda i: 0.0, 0.0, 1.0, 1.0, strategy="guess")
    assert find_culprit(3, 4, lambda i: 0.0, 0.0, 1.0, 1.0).culprit == 4


# ----------------------------------------------------------------- the CLI


def _partial_files(tmp_path, gap_culprit=37):
    """A 120-commit history with a step at ``gap_culprit``; every 20th commit measured."""
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 120
    y = 50 + rng.standard_normal(n) * 0.2 + np.where(np.arange(n) >= gap_culprit, 3.0, 0.0)
    commits = [f"c{i:03d}" for i in range(n)]
    measured = np.arange(n) % 20 == 0
    measured[-1] = True
    measured[[16, 17, 18, 19, 40, 41, 42, 43, 44]] = True  # the levels on each side of the alert
    part = pd.DataFrame({"commit": commits, "value": np.where(measured, y, np.nan)})
    (tmp_path / "partial.csv").write_text(part.to_csv(index=False))
    (tmp_path / "oracle.csv").write_text(
        pd.DataFrame({"commit": commits, "value": y}).to_csv(index=False)
    )
    return tmp_path / "partial.csv", tmp_path / "oracle.csv"


def test_cli_sample_writes_the_band_and_ranks_unmeasured_commits(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from triage.cli.app import app

    partial, _ = _partial_files(tmp_path)
    out = tmp_path / "plan.csv"
    res = CliRunner().invoke(
        app, ["sample", "--data", str(partial), "--budget", "3", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    plan = pd.read_csv(out)
    assert len(plan) == 120 and list(plan.columns) == [
        "commit",
        "position",
        "measured",
        "estimate",
        "lower",
        "upper",
        "next",
    ]
    nxt = plan.dropna(subset=["next"])
    assert sorted(nxt["next"]) == [1, 2, 3] and nxt["measured"].isna().all()
    assert (plan["lower"] <= plan["estimate"]).all() and (plan["estimate"] <= plan["upper"]).all()


@pytest.mark.parametrize("strategy", ["bisect", "bayes"])
def test_cli_culprit_with_an_oracle_file_finds_the_step(tmp_path, strategy):
    import pandas as pd
    from typer.testing import CliRunner

    from triage.cli.app import app

    partial, oracle = _partial_files(tmp_path)
    out = tmp_path / "steps.csv"
    args = [
        "culprit",
        "--data",
        str(partial),
        "--before",
        "c020",
        "--after",
        "c040",
        "--oracle",
        str(oracle),
        "--strategy",
        strategy,
        "--out",
        str(out),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "culprit: c037" in res.output
    assert len(pd.read_csv(out)) <= 6  # log2(19) + 1


def test_cli_culprit_interactive_reads_values_from_the_prompt(tmp_path):
    from typer.testing import CliRunner

    from triage.cli.app import app

    partial, _ = _partial_files(tmp_path)
    values = "\n".join(["50", "53", "50", "53", "50", "53", "50"]) + "\n"
    res = CliRunner().invoke(
        app,
        [
            "culprit",
            "--data",
            str(partial),
            "--before",
            "c020",
            "--after",
            "c040",
            "--strategy",
            "bisect",
        ],
        input=values,
    )
    assert res.exit_code == 0, res.output
    assert "value of commit c030" in res.output and "culprit:" in res.output


def test_cli_bad_partial_history_is_a_located_error(tmp_path):
    import subprocess

    bad = tmp_path / "bad.csv"
    bad.write_text("commit,value\nc1,1.0\nc2,abc\n")
    res = subprocess.run(
        [
            *warm_triage(),
            "sample",
            "--data",
            str(bad),
            "--budget",
            "1",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "bad.csv, row 3" in res.stderr and "'abc'" in res.stderr


# ------------------------------------------- acquisition and culprit details


def test_alc_spreads_picks_over_the_history_and_never_repeats_a_commit():
    n = 300
    y = np.random.default_rng(1).standard_normal(n)
    gp = HistoryGP().fit(n, [0, n - 1], y[[0, n - 1]])
    picks = gp.next_positions(5)
    assert len(set(picks)) == 5 and not {0, n - 1} & set(picks)
    gaps = np.diff(sorted([0, n - 1, *picks]))
    # integrated variance reduction fills the history: no gap over twice the even spacing
    assert gaps.max() <= 2 * (n - 1) / 6, sorted(picks)


def test_prior_design_ignores_the_values_fitted_design_follows_them():
    n = 200
    pos = np.arange(0, n, 25)
    flat = np.ones(len(pos)) + np.random.default_rng(0).standard_normal(len(pos)) * 1e-3
    step = np.where(pos >= 100, 10.0, 0.0) + flat
    prior = [HistoryGP().fit(n, pos, v).next_positions(4) for v in (flat, step)]
    assert prior[0] == prior[1]
    fitted = [HistoryGP(design="fitted").fit(n, pos, v).next_positions(4) for v in (flat, step)]
    assert all(len(set(f)) == 4 and not set(f) & set(pos) for f in fitted)
    assert fitted[0] != fitted[1]


def test_alc_on_a_history_longer_than_its_grid_stays_in_range():
    from triage.sampling import gp as gp_module

    n = gp_module.ALC_GRID * 3 + 7
    pos = [0, n // 2, n - 1]
    picks = HistoryGP().fit(n, pos, [1.0, 2.0, 1.5]).next_positions(3)
    assert len(set(picks)) == 3 and all(0 < p < n - 1 and p not in pos for p in picks)


def test_old_variance_acquisition_still_available_and_bad_names_refused():
    y = np.linspace(0, 1, 50)
    picks = HistoryGP(acquisition="variance").fit(50, [0, 49], y[[0, 49]]).next_positions(2)
    assert len(set(picks)) == 2
    with pytest.raises(ValueError, match="acquisition"):
        HistoryGP(acquisition="guess").fit(50, [0, 49], y[[0, 49]])
    with pytest.raises(ValueError, match="design"):
        HistoryGP(design="guess").fit(50, [0, 49], y[[0, 49]])


def test_levels_around_takes_the_neighbours_noise_not_a_step():
    from triage.sampling import levels_around

    rng = np.random.default_rng(3)
    left, right = 10 + rng.standard_normal(50) * 0.5, 20 + rng.standard_normal(50) * 0.5
    old, new, sigma = levels_around(left, right)
    assert abs(old - 10) < 0.3 and abs(new - 20) < 0.3 and 0.35 < sigma < 0.7
    # a deterministic counter: no spread, a tenth of the step
    assert levels_around([5.0, 5.0], [7.0, 7.0]) == (5.0, 7.0, 0.2)
    with pytest.raises(ValueError, match="each side"):
        levels_around([], [1.0])


def test_bayes_with_tolerance_stops_sooner_and_lands_within_it():
    used = {"exact": 0, "loose": 0}
    n_exact = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        gap = int(rng.integers(16, 64))
        c = int(rng.integers(1, gap + 1))
        y = _step(gap + 1, c, 4.0, 1.0, seed)
        exact = find_culprit(0, gap, lambda i, y=y: y[i], 0.0, 4.0, 1.0, strategy="bayes")
        loose = find_culprit(
            0, gap, lambda i, y=y: y[i], 0.0, 4.0, 1.0, strategy="bayes", tolerance=1
        )
        assert abs(loose.culprit - c) <= 1, (seed, c, loose)
        assert len(loose.measured) <= gap // 2, (seed, loose.measured)  # never a sweep of the gap
        used["exact"] += len(exact.measured)
        used["loose"] += len(loose.measured)
        n_exact += exact.culprit == c
    assert used["loose"] < used["exact"] and n_exact >= 18, (used, n_exact)
    with pytest.raises(ValueError, match="tolerance"):
        find_culprit(0, 9, lambda i: 0.0, 0.0, 1.0, 1.0, strategy="bayes", tolerance=-1)


def test_cli_culprit_tolerance_says_within(tmp_path):
    from typer.testing import CliRunner

    from triage.cli.app import app

    partial, oracle = _partial_files(tmp_path)
    res = CliRunner().invoke(
        app,
        [
            "culprit",
            "--data",
            str(partial),
            "--before",
            "c020",
            "--after",
            "c040",
            "--oracle",
            str(oracle),
            "--tolerance",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "within 1 commit" in res.output and "within 1 commits" not in res.output
    pos = int(res.output.split("(position ")[1].split(",")[0])
    assert abs(pos - 37) <= 1
