"""Defects found walking through the CI engineer's workflow (watch, detect, steady, sample, culprit).

1. ``triage steady`` named a benchmark by its mode only in a file that held
   it in several modes: a history whose builds added ``-bm thrpt,avgt`` at
   some commit split the ``thrpt`` history into two series there
   (``B.parse[size=10]`` before, ``B.parse[size=10]:thrpt`` after), and a
   benchmark whose mode changed mixed rates and times in one series.

Inputs are generated here in the formats people have; nothing of the real data is used.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from helpers_cli import invoke

# ---------------------------------------------------------------- 1. one name per mode across the files


def _jmh_entry(mode: str, level: float, rng: np.random.Generator) -> dict:
    """One element of JMH's ``-rf json`` output: two forks of 20 iterations."""
    return {
        "jmhVersion": "1.37",
        "benchmark": "org.acme.ParserBench.parse",
        "mode": mode,
        "threads": 1,
        "forks": 2,
        "params": {"size": "10"},
        "primaryMetric": {
            "scoreUnit": "ops/s" if mode == "thrpt" else "us/op",
            "rawData": [[round(level * (1 + 0.01 * v), 4) for v in rng.standard_normal(20)] for _ in range(2)],
        },
        "secondaryMetrics": {},
    }


def _builds(tmp_path, modes_per_build: list[list[str]]) -> list[str]:
    rng = np.random.default_rng(3)
    files = []
    for k, modes in enumerate(modes_per_build):
        path = tmp_path / f"c{k + 1}.json"
        path.write_text(json.dumps([_jmh_entry(m, 1000.0 if m == "thrpt" else 1.0, rng) for m in modes]))
        files.append(str(path))
    return files


def test_steady_keeps_one_series_per_mode_when_a_build_adds_a_mode(tmp_path):
    files = _builds(tmp_path, [["thrpt"], ["thrpt"], ["thrpt", "avgt"], ["thrpt", "avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    long = pd.read_csv(out)
    commits = long.groupby("series_id")["commit"].unique().map(list).to_dict()
    assert commits == {
        "org.acme.ParserBench.parse[size=10]:thrpt": ["c1", "c2", "c3", "c4"],
        "org.acme.ParserBench.parse[size=10]:avgt": ["c3", "c4"],
    }


def test_steady_never_mixes_rates_and_times_when_a_benchmark_changes_mode(tmp_path):
    files = _builds(tmp_path, [["thrpt"], ["thrpt"], ["avgt"], ["avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    long = pd.read_csv(out)
    by_series = long.groupby("series_id")["value"]
    # Rates near 1000, times near 1: each series holds one of them only.
    assert sorted(by_series.min().index) == [
        "org.acme.ParserBench.parse[size=10]:avgt",
        "org.acme.ParserBench.parse[size=10]:thrpt",
    ]
    assert (by_series.max() / by_series.min() < 1.5).all()


def test_steady_keeps_the_plain_name_of_a_benchmark_in_one_mode_throughout(tmp_path):
    files = _builds(tmp_path, [["avgt"], ["avgt"]])
    out = tmp_path / "steady.csv"
    code, output = invoke(["steady", *files, "--out", str(out), "--trim-warmup", "none"])
    assert code == 0, output
    assert set(pd.read_csv(out)["series_id"]) == {"org.acme.ParserBench.parse[size=10]"}
