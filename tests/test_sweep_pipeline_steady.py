"""``triage steady`` on runs a sweep found mishandled; one test per defect.

Checks of an option or a value run in-process through main()'s boundary (``invoke``, standard input
included); a warning that must reach standard error, apart from the output, runs in a fresh
interpreter (``run_triage``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke
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
    code, text = invoke(["steady", data, "--out", tmp_path / "o.csv", "--starts", starts])
    assert code == 0, text
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
    code, text = invoke(["steady", "-", "--out", out], stdin=_bench_json())
    assert code == 2 and "--commits" in text and not out.exists()
    code, text = invoke(["steady", "-", "--out", out, "--commits", "abc123"], stdin=_bench_json())
    assert code == 0, text
    assert set(pd.read_csv(out)["commit"]) == {"abc123"}
    code, text = invoke(["steady", "-", "-", "--out", tmp_path / "o2.csv", "--commits", "a,b"], stdin=_bench_json())
    assert code == 2 and "once" in text


def test_runs_from_stdin_need_a_series_id(tmp_path):
    out = tmp_path / "o.csv"
    runs = json.dumps([[1.0, 2.0, 3.0], [1.5, 2.5, 3.5]])
    code, text = invoke(["steady", "-", "--out", out, "--commits", "c1"], stdin=runs)
    assert code == 2 and "--series" in text and not out.exists()
    code, text = invoke(["steady", "-", "--out", out, "--commits", "c1", "--series", "parse"], stdin=runs)
    assert code == 0, text
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
