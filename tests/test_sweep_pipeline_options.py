"""Options of ``triage plot``, ``steady``, ``sample`` and ``culprit`` found wrong by a sweep; one test per defect.

Each is an option's check or its message, so the commands run in-process through main()'s boundary
(``invoke``): a fresh interpreter per run cost 2-3 s of imports and checked nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers_cli import flat, invoke
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
        code, text = invoke(["plot", "--data", data, "--out", tmp_path / name])
        assert code == 2, text
        assert "--out" in text and ".png" in text
        assert not (tmp_path / name).exists()
    code, text = invoke(["plot", "--data", data, "--out", tmp_path / "p.PNG"])
    assert code == 0, text
    assert (tmp_path / "p.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_steady_takes_a_method_name_in_any_case_as_convert_does(tmp_path):
    # Was: `convert --trim-warmup CPSSD` ran, `steady --trim-warmup CPSSD` was refused.
    data = _jmh(tmp_path / "c1.json")
    code, text = invoke(["steady", data, "--trim-warmup", "CPSSD", "--out", tmp_path / "o.csv"])
    assert code == 0, text
    code, text = invoke(["steady", data, "--trim-warmup", "bogus", "--out", tmp_path / "o2.csv"])
    assert code == 2 and "--trim-warmup" in text and "bogus" in text


def test_steady_blames_the_files_not_commits_for_a_file_given_twice(tmp_path):
    # Was: "Invalid value for --commits" when no --commits was given.
    data = _jmh(tmp_path / "c1.json")
    code, text = invoke(["steady", data, data, "--out", tmp_path / "o.csv"])
    assert code == 2
    assert "--commits" not in flat(text).split("Invalid value")[1].split(":")[0]
    assert "both commit 'c1'" in flat(text)


def test_sample_and_culprit_name_the_option_of_a_bad_choice(tmp_path):
    data = tmp_path / "p.csv"
    data.write_text("commit,value\nc1,1.0\nc2,\nc3,2.0\n")
    code, text = invoke(["sample", "--data", data, "--budget", "1", "--kernel", "nope"])
    assert code == 2 and "Invalid value for --kernel" in flat(text)
    code, text = invoke(["culprit", "--data", data, "--before", "c1", "--after", "c3", "--strategy", "nope"])
    assert code == 2 and "Invalid value for --strategy" in flat(text)
