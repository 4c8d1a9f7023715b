"""``triage steady`` on runs a sweep found mishandled; one test per defect."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from triage.steady_state import KBKSSD


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from triage.cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("direction", ["down", "up"])
@pytest.mark.parametrize("value", [0.0, 3.0])
def test_kbkssd_finds_no_warmup_in_a_constant_run(direction, value):
    # Was: the short kernel's argmin over all-zero drops proposed iteration 14,
    # and a tie of the medians kept it: 15 iterations cut from a constant run.
    det = KBKSSD(direction=direction).fit(np.full(200, value))
    assert det.warmup_end_ is None and det.start_ == 0


def test_steady_keeps_every_iteration_of_a_constant_fork(tmp_path):
    # Nearly deterministic series (memory, coarse timers) give constant forks.
    fork = [4096.0] * 60
    bench = {"benchmark": "m.B.mem", "mode": "ss", "primaryMetric": {"rawData": [fork]}}
    data = tmp_path / "c1.json"
    data.write_text(json.dumps([bench]))
    starts = tmp_path / "starts.csv"
    res = triage("steady", str(data), "--out", str(tmp_path / "o.csv"), "--starts", str(starts))
    assert res.returncode == 0, res.stderr
    assert pd.read_csv(starts)["steady_start"].tolist() == [0]
    assert len(pd.read_csv(tmp_path / "o.csv")) == 60
