"""``triage steady`` on runs a sweep found mishandled; one test per defect."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from helpers_cli import run_triage as triage

from triage.steady_state import KBKSSD


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


def _bench_json(seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    fork = (1.0 + (np.arange(100) < 20) + rng.random(100) * 0.05).tolist()
    return json.dumps(
        [{"benchmark": "a.B.x", "mode": "avgt", "primaryMetric": {"rawData": [fork]}}]
    )


def test_steady_from_stdin_needs_a_commit_id(tmp_path):
    # Was: `triage steady - --out o.csv` wrote every row with commit "-";
    # `- -` read stdin twice.
    out = tmp_path / "o.csv"
    cmd = [
        sys.executable,
        "-c",
        "from triage.cli.app import main; main()",
        "steady",
        "-",
        "--out",
        str(out),
    ]
    res = subprocess.run(cmd, input=_bench_json(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "--commits" in res.stderr and not out.exists()
    res = subprocess.run(
        [*cmd, "--commits", "abc123"],
        input=_bench_json(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert set(pd.read_csv(out)["commit"]) == {"abc123"}
    res = subprocess.run(
        [*cmd[:-3], "-", "-", "--out", str(tmp_path / "o2.csv"), "--commits", "a,b"],
        input=_bench_json(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 2 and "once" in res.stderr


def test_runs_from_stdin_need_a_series_id(tmp_path):
    out = tmp_path / "o.csv"
    cmd = [
        sys.executable,
        "-c",
        "from triage.cli.app import main; main()",
        "steady",
        "-",
        "--out",
        str(out),
    ]
    runs = json.dumps([[1.0, 2.0, 3.0], [1.5, 2.5, 3.5]])
    res = subprocess.run(
        [*cmd, "--commits", "c1"], input=runs, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 2 and "--series" in res.stderr and not out.exists()
    res = subprocess.run(
        [*cmd, "--commits", "c1", "--series", "parse"],
        input=runs,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert set(pd.read_csv(out)["series_id"]) == {"parse"}


def test_steady_says_when_series_names_nothing(tmp_path):
    # Was: --series with JMH files (whose series are their benchmarks) was
    # silently ignored; the user believed the rows were under that id.
    data = tmp_path / "c1.json"
    data.write_text(_bench_json())
    out = tmp_path / "o.csv"
    res = triage("steady", str(data), "--series", "parse", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "warning:" in res.stderr and "--series" in res.stderr and "c1.json" in res.stderr
    assert set(pd.read_csv(out)["series_id"]) == {"a.B.x"}
