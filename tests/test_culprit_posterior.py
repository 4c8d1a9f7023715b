"""The culprit posterior (probabilistic bisection's state) on its own and inside the search."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from triage.sampling import best_position, culprit_posterior, find_culprit, levels_around


def _mongodb(shared_data) -> np.ndarray:
    return pd.read_csv(shared_data / "mongodb_demo.csv", sep=";")["Value"].to_numpy(dtype=float)


def test_posterior_after_the_search_gives_the_search_answer_and_confidence(shared_data):
    # A 15 % shift injected into the real MongoDB history, inside a gap of 40 commits.
    y = _mongodb(shared_data)
    a, b, c = 200, 240, 223
    z = y * np.where(np.arange(len(y)) >= c, 1.15, 1.0)
    old, new, sigma = levels_around(z[a - 4 : a + 1], z[b : b + 5])
    for tol in (0, 1):
        s = find_culprit(a, b, lambda i: z[i], old, new, sigma, strategy="bayes", tolerance=tol)
        cands, p = culprit_posterior(a, b, s.measured, old, new, sigma)
        k, mass = best_position(p, tol)
        assert cands[0] == a + 1 and cands[-1] == b and p.sum() == pytest.approx(1.0)
        assert int(cands[k]) == s.culprit and mass == pytest.approx(s.confidence)


def test_whole_gap_measured_puts_the_map_at_a_large_shift_in_a_real_history(shared_data):
    y = _mongodb(shared_data)
    hits = 0
    for c in range(101, 400, 23):
        a, b = c - 17, c + 14
        z = y * np.where(np.arange(len(y)) >= c, 1.6, 1.0)
        old, new, sigma = levels_around(z[a - 4 : a + 1], z[b : b + 5])
        cands, p = culprit_posterior(a, b, [(i, z[i]) for i in range(a + 1, b)], old, new, sigma)
        hits += abs(int(cands[best_position(p, 1)[0]]) - c) <= 1
    # 13 placements of a 60 % shift (mostly 8-30 local noise scales; the history is bimodal in
    # places, where the neighbours' levels mislead): nearly all found within 1 commit.
    assert hits >= 11, hits


def test_one_wild_reading_does_not_settle_the_posterior():
    # Old level 0, new 1, noise 0.1: readings at 3, 5 and 7 say "old", 11 says "new", so the
    # culprit is one of 8..11. A wild reading of 40 at 9 sits far from both levels: under the
    # Cauchy it is nearly neutral (8..11 stay open); a Gaussian (dof 1e6) reads it as "new"
    # and rules out 10 and 11.
    readings = [(3, 0.0), (5, 0.02), (7, -0.03), (11, 1.01), (9, 40.0)]
    cands, p = culprit_posterior(0, 12, readings, 0.0, 1.0, 0.1)
    inside, late = (cands >= 8) & (cands <= 11), (cands == 10) | (cands == 11)
    assert p[inside].sum() > 0.95 and p[late].sum() > 0.4
    _, pg = culprit_posterior(0, 12, readings, 0.0, 1.0, 0.1, dof=1e6)
    assert pg[inside].sum() > 0.95 and pg[late].sum() < 1e-6


def test_posterior_refuses_an_empty_gap():
    with pytest.raises(ValueError, match="after"):
        culprit_posterior(4, 4, [], 0.0, 1.0, 1.0)


@pytest.mark.parametrize(("factor", "small"), [(1.02, True), (1.6, False)])
def test_cli_culprit_says_how_many_noise_scales_the_step_is(shared_data, tmp_path, factor, small):
    from typer.testing import CliRunner

    from triage.cli.app import app

    # The real MongoDB history with a shift at commit 223, commits 201..239 unmeasured.
    y = _mongodb(shared_data)
    z = y * np.where(np.arange(len(y)) >= 223, factor, 1.0)
    commits = [f"c{i:03d}" for i in range(len(z))]
    hidden = (np.arange(len(z)) > 200) & (np.arange(len(z)) < 240)
    pd.DataFrame({"commit": commits, "value": np.where(hidden, np.nan, z)}).to_csv(
        tmp_path / "partial.csv", index=False
    )
    pd.DataFrame({"commit": commits, "value": z}).to_csv(tmp_path / "oracle.csv", index=False)
    res = CliRunner().invoke(
        app,
        [
            "culprit",
            "--data",
            str(tmp_path / "partial.csv"),
            "--before",
            "c200",
            "--after",
            "c240",
            "--oracle",
            str(tmp_path / "oracle.csv"),
            "--tolerance",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    old, new, sigma = levels_around(z[196:201], z[240:245])
    assert f"step {abs(new - old) / sigma:.1f} noise scales" in res.output
    assert ("treat the culprit as a lead" in res.output) == small
    if not small:
        assert any(f"culprit: c{c:03d}" in res.output for c in (222, 223, 224))
