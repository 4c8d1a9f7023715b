"""Walkthrough s17: a performance engineer running the commands on large inputs.

Large but plausible inputs were built from the real histories (tiled 4x and
12x: 1,488 and 4,464 series, 3 M rows) and from long series (100,000
commits); the growth of each command's time and memory was measured at two
or three sizes. Defects found (what a user did, what went wrong, what
happens now):

1. Started ``triage serve`` on long series whose alerts are changes that
   last (a memory series that steps up and stays, a staircase): building the
   queue took O(alerts x commits) Python-level medians, one per commit after
   each alert, to find where each change ended. 100 alerts on a staircase of
   10,000 / 20,000 / 40,000 commits: 6.8 / 16.1 / 35.0 s before the server
   answered (1,000 alerts on 100,000 commits would be over 15 minutes); 705
   perfherder alerts on two 100,000-commit real-noise series: 5.8 s. Now the
   medians of every run of 5 commits are computed once per series
   (``triage.workspace.alerts.settle_medians``) and each alert reads a slice:
   0.01 s for the staircases, 0.08 s for the 705 alerts, the same reasons.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from triage.core.history import Dataset
from triage.workspace import alerts as alerts_mod


def _old_lasted(v: np.ndarray, i: int, mid: float, up: bool) -> int:
    """How long a change lasted, as the workspace computed it before (one median per commit)."""
    n = len(v)
    lasted = n - i
    for j in range(i, n - alerts_mod.SETTLE + 1):
        seen = v[j: j + alerts_mod.SETTLE]
        seen = seen[np.isfinite(seen)]
        if len(seen) == 0:
            continue
        m = float(np.median(seen))
        if (m < mid) if up else (m > mid):
            return j - i
    return lasted


def _staircase(n: int = 3000, steps: int = 30, seed: int = 0) -> tuple[Dataset, list[int]]:
    rng = np.random.default_rng(seed)
    at = np.linspace(n // (steps + 1), n - n // (steps + 1), steps).astype(int)
    level = np.zeros(n)
    for s in at:
        level[s:] += 1.0
    values = 1000 + 10 * level + rng.normal(0, 1, n)
    frame = pd.DataFrame({"series_id": "mem", "commit": [f"c{i}" for i in range(n)], "value": values})
    return Dataset.from_frame(frame), [int(s) for s in at]


class _CountingNumpy:
    """numpy, counting calls of ``median`` (the per-commit work of defect 1)."""

    def __init__(self) -> None:
        self.medians = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def median(self, *args, **kwargs):
        self.medians += 1
        return np.median(*args, **kwargs)


def test_1_alert_queue_medians_once_per_series_not_per_commit(tmp_path, monkeypatch):
    dataset, at = _staircase()
    cands = tmp_path / "cands.csv"
    pd.DataFrame({"series_id": "mem", "commit": [f"c{i}" for i in at]}).to_csv(cands, index=False)
    counting = _CountingNumpy()
    monkeypatch.setattr(alerts_mod, "np", counting)
    built = alerts_mod.build_alerts(dataset, cands)
    assert len(built) == len(at)
    # Before and after medians per alert, and the run medians once for the series: not one per
    # commit after each alert (every step of a staircase lasts to the end: ~45,000 medians here).
    assert counting.medians <= 3 * len(at) + 1
    for a in built:
        assert "stayed up to the end of the history" in a.reason


def test_1_how_long_a_change_lasted_is_unchanged(real_frame):
    """The sliced run medians give the old answer on real series (missing values included)."""
    ids = list(dict.fromkeys(real_frame["series_id"]))[::37]
    dataset = Dataset.from_frame(real_frame[real_frame["series_id"].isin(ids)])
    rng = np.random.default_rng(3)
    checked = 0
    for h in dataset:
        v = h.values.astype(float).copy()
        if len(v) > 40:
            v[rng.choice(len(v), size=len(v) // 10, replace=False)] = np.nan  # failed runs
            v[10:16] = np.nan  # a run of 5 with no value at all
        settled = alerts_mod.settle_medians(v)
        for i in range(1, len(v) - 1, max(1, len(v) // 25)):
            pre, post = v[max(0, i - 30): i], v[i: i + 30]
            pre, post = pre[np.isfinite(pre)], post[np.isfinite(post)]
            if not len(pre) or not len(post):
                continue
            before, after = float(np.median(pre)), float(np.median(post))
            mid, up = (before + after) / 2.0, after >= before
            back = np.flatnonzero(settled[i:] < mid if up else settled[i:] > mid)
            new = int(back[0]) if back.size else len(v) - i
            assert new == _old_lasted(v, i, mid, up), (h.series_id, i)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("n", [0, 1, 4, 5, 6])
def test_1_short_series(n):
    v = np.arange(n, dtype=float)
    assert len(alerts_mod.settle_medians(v)) == max(0, n - alerts_mod.SETTLE + 1)
