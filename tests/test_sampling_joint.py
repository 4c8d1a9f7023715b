"""The jointly chosen design (``alc-joint``: greedy ALC, then Fedorov's exchange)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from triage.sampling import HistoryGP
from triage.sampling.gp import _without_noise


def _integrated_variance(gp: HistoryGP, picks) -> float:
    # The quantity both rules minimise: the noise-free history's posterior variance summed over all commits.
    kern = gp.gp_.kernel
    noise = float(kern.k2.noise_level) + 1e-10
    grid = np.arange(gp.n_)
    return float(
        np.trace(gp._grid_cov(_without_noise(kern), noise, grid, [*gp.positions_, *picks]))
    )


@pytest.fixture
def mongodb(shared_data) -> np.ndarray:
    return pd.read_csv(shared_data / "mongodb_demo.csv", sep=";")["Value"].to_numpy(dtype=float)


@pytest.mark.parametrize("k", [2, 5, 12])
def test_joint_design_removes_at_least_as_much_variance_as_greedy(mongodb, k):
    n = len(mongodb)
    ends = [0, n - 1]
    greedy = HistoryGP().fit(n, ends, mongodb[ends])
    joint = HistoryGP(acquisition="alc-joint").fit(n, ends, mongodb[ends])
    g, j = greedy.next_positions(k), joint.next_positions(k)
    assert len(set(j)) == k and not set(j) & set(ends) and all(0 < p < n - 1 for p in j)
    assert _integrated_variance(joint, j) <= _integrated_variance(greedy, g) + 1e-9
    if k == 2:
        # Greedy takes the middle, then a quarter point; the pair that is best together sits near the thirds.
        assert g[0] == pytest.approx(n / 2, abs=2)
        assert sorted(j) == pytest.approx([n / 3, 2 * n / 3], abs=n / 20)
