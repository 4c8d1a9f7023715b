"""Names are printed as they are, never read as rich markup.

JMH series are named ``<benchmark>[<params>]`` (``ParserBench.parse[size=1024]``);
``label`` and ``score`` printed their table with the names as markup, so
``[/]`` in a series id was an internal error (and the --out file was never
written, the table comes first), and ``[size=1024]`` was swallowed as a style.
Paths in "written to" lines had the same problem.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.synthetic import generate, preset_config

NAMES = ("P.parse[size={i}]", "odd[/]name{i}")


@pytest.fixture(scope="module")
def bracketed(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("markup") / "h.csv"
    frame = generate(preset_config("small", n_series=12), seed=6).to_frame()
    # Short enough for the table's series column (28 characters).
    ids = {sid: NAMES[i % 2].format(i=i) for i, sid in enumerate(frame["series_id"].unique())}
    frame["series_id"] = frame["series_id"].map(ids)
    frame.to_csv(path, index=False)
    return path


def test_label_prints_and_writes_series_names_with_brackets(bracketed, tmp_path):
    out = tmp_path / "decisions.csv"
    code, output = invoke(["label", "--data", bracketed, "--which", "all", "--out", out])
    assert code == 0, output
    written = set(pd.read_csv(out)["series_id"])
    shown = [name for name in written if name in output]
    assert shown and any("[" in name for name in shown), output


def test_score_prints_series_names_with_brackets(bracketed, tmp_path):
    cands = tmp_path / "cands.csv"
    code, output = invoke(
        ["candidates", "--data", bracketed, "--detector", "perfherder", "--out", cands]
    )
    assert code == 0, output
    code, output = invoke(
        ["score", "--data", bracketed, "--candidates", cands, "--out", tmp_path / "s.csv"]
    )
    assert code == 0, output
    assert any(name in output for name in set(pd.read_csv(cands)["series_id"]) if "[" in name), (
        output
    )


def test_written_to_lines_print_paths_with_brackets(bracketed, tmp_path):
    model = tmp_path / "m[/]x"
    code, output = invoke(["train", "--data", bracketed, "--out", model, "--no-track"])
    assert code == 0, output
    assert f"model written to {model}" in flat(output)
    decisions = tmp_path / "d.csv"
    assert invoke(["label", "--data", bracketed, "--which", "all", "--out", decisions])[0] == 0
    report = tmp_path / "r[/]y"
    code, output = invoke(
        ["report", "--data", bracketed, "--decisions", decisions, "--out", report]
    )
    assert code == 0, output
    assert f"report written to {report / 'index.html'}" in flat(output)
