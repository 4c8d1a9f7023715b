"""Defects found in the thirty-second session, fixed there.

1. ``triage candidates --data runs.csv --aggregate median`` (or ``--trim-warmup``,
   ``--branch``) found its candidates on one value per commit, but ``score``,
   ``label``, ``report``, ``serve`` and ``labels export`` read the same file as
   the mean of every measurement: they judged other values than the detector
   saw. They take the same three options; read with them, the data is the file
   ``triage convert`` writes with them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke

from triage.loaders import load


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three measurements a commit, one of them a slow outlier: mean and median differ by about 30 %."""
    rng = np.random.default_rng(3)
    rows = []
    for s in ("a", "b"):
        for c in range(120):
            level = 100.0 if c < 60 else 112.0
            for k in range(3):
                value = level + rng.normal(0, 1) + (90.0 if k == 2 and c % 2 else 0.0)
                rows.append((s, f"c{c:03d}", f"2024-01-01T00:{c // 60:02d}:{c % 60:02d}", value))
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "timestamp", "value"]).to_csv(path, index=False)
    return path


def test_every_command_reading_candidates_back_reads_the_data_as_candidates_did(runs, tmp_path):
    cands = tmp_path / "c.csv"
    code, out = invoke(["candidates", "--data", runs, "--detector", "perfherder", "--aggregate", "median",
                        "--out", cands])
    assert code == 0, out
    median = tmp_path / "median.csv"
    assert invoke(["convert", "--data", runs, "--aggregate", "median", "--out", median])[0] == 0
    scored = {}
    for name, data, extra in (("options", runs, ["--aggregate", "median"]), ("converted", median, []),
                              ("mean", runs, [])):
        out_file = tmp_path / f"{name}.csv"
        code, out = invoke(["score", "--data", data, "--candidates", cands, "--out", out_file, "--show", 0, *extra])
        assert code == 0, out
        scored[name] = pd.read_csv(out_file)
    assert len(scored["options"]) > 0
    pd.testing.assert_series_equal(scored["options"]["p_true"], scored["converted"]["p_true"])
    assert not np.allclose(scored["options"]["p_true"], scored["mean"]["p_true"])


def test_label_report_and_labels_export_take_the_reading_options(runs, tmp_path):
    from triage.cli.workspace import build_workspace

    ws = build_workspace(runs, tmp_path / "l.sqlite", None, None, commit_url=None, sheriff="me", token=None,
                         reading={"aggregate": "median", "trim_warmup": "none", "branch": None})
    medians = load(runs, aggregate="median")
    assert np.array_equal(ws.dataset["a"].values, medians["a"].values)
    assert not np.array_equal(ws.dataset["a"].values, load(runs)["a"].values)
    ws.store.close()
    out = tmp_path / "export.csv"
    code, text = invoke(["labels", "export", "--labels", tmp_path / "l.sqlite", "--data", runs,
                         "--aggregate", "median", "--out", out])
    assert code == 0, text
    exported = pd.read_csv(out)
    assert np.allclose(exported.loc[exported.series_id == "a", "value"], medians["a"].values)
    for command in (["label", "--data", runs], ["report", "--data", runs, "--decisions", out, "--out", tmp_path / "r"]):
        code, text = invoke([*command, "--aggregate", "p50"])
        assert code == 2 and "--aggregate" in text and "p50" in text, text
        code, text = invoke([*command, "--trim-warmup", "bogus"])
        assert code == 2 and "--trim-warmup" in text, text
