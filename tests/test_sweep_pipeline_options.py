"""Options of ``triage plot``, ``steady``, ``sample`` and ``culprit`` found wrong by a sweep; one test per defect."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers_cli import run_triage as triage
from helpers_cli import step_history as _long_csv


def _jmh(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    fork = (1.0 + (np.arange(200) < 50) + rng.random(200) * 0.05).tolist()
    bench = {
        "benchmark": "a.B.x",
        "mode": "avgt",
        "primaryMetric": {"scoreUnit": "ms/op", "rawData": [fork]},
    }
    path.write_text(json.dumps([bench]))
    return path


def test_plot_refuses_a_name_whose_format_it_would_not_write(tmp_path):
    # Was: --out p.svg or p.pdf accepted, and the file held PNG bytes.
    data = _long_csv(tmp_path / "h.csv")
    for name in ("p.svg", "p.pdf"):
        res = triage("plot", "--data", str(data), "--out", str(tmp_path / name))
        assert res.returncode == 2, res.stdout + res.stderr
        assert "--out" in res.stderr and ".png" in res.stderr
        assert not (tmp_path / name).exists()
    res = triage("plot", "--data", str(data), "--out", str(tmp_path / "p.PNG"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_steady_takes_a_method_name_in_any_case_as_convert_does(tmp_path):
    # Was: `convert --trim-warmup CPSSD` ran, `steady --trim-warmup CPSSD` was refused.
    data = _jmh(tmp_path / "c1.json")
    res = triage("steady", str(data), "--trim-warmup", "CPSSD", "--out", str(tmp_path / "o.csv"))
    assert res.returncode == 0, res.stderr
    res = triage("steady", str(data), "--trim-warmup", "bogus", "--out", str(tmp_path / "o2.csv"))
    assert res.returncode == 2 and "--trim-warmup" in res.stderr and "bogus" in res.stderr


def test_steady_blames_the_files_not_commits_for_a_file_given_twice(tmp_path):
    # Was: "Invalid value for --commits" when no --commits was given.
    data = _jmh(tmp_path / "c1.json")
    res = triage("steady", str(data), str(data), "--out", str(tmp_path / "o.csv"))
    assert res.returncode == 2
    assert "--commits" not in res.stderr.split("Invalid value")[1].split(":")[0]
    assert "both commit 'c1'" in res.stderr


def test_sample_and_culprit_name_the_option_of_a_bad_choice(tmp_path):
    data = tmp_path / "p.csv"
    data.write_text("commit,value\nc1,1.0\nc2,\nc3,2.0\n")
    res = triage("sample", "--data", str(data), "--budget", "1", "--kernel", "nope")
    assert res.returncode == 2 and "Invalid value for --kernel" in " ".join(res.stderr.split())
    res = triage(
        "culprit", "--data", str(data), "--before", "c1", "--after", "c3", "--strategy", "nope"
    )
    assert res.returncode == 2 and "Invalid value for --strategy" in " ".join(res.stderr.split())
