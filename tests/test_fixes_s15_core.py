"""Fifteenth session's fixes in shared modules (found by the walkthroughs)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
from helpers_cli import flat, invoke, run_triage, step_history
from warm_start import warm_triage


def _strict(line: str) -> dict:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def test_json_lines_are_strict_json_where_a_field_is_infinite(tmp_path):
    # edivisive's t of a noise-free step is -inf: it was written -Infinity, which
    # JSON.parse and jq refuse.
    data = tmp_path / "step.csv"
    values = np.r_[np.full(30, 100.0), np.full(30, 120.0)]
    pd.DataFrame({"series_id": "s", "commit": [f"c{i}" for i in range(60)], "value": values}).to_csv(data, index=False)
    out = tmp_path / "cands.jsonl"
    code, text = invoke(["candidates", "--data", data, "--detector", "edivisive", "--format", "json", "--out", out])
    assert code == 0, text
    rows = [_strict(line) for line in out.read_text().splitlines()]
    assert [r["index"] for r in rows] == [30]
    assert "t" in rows[0] and rows[0]["t"] is None
    # and the file is still a candidate file score reads
    code, text = invoke(["score", "--data", data, "--candidates", out, "--out", tmp_path / "scored.csv"])
    assert code == 0, text


def test_candidates_names_a_long_out_path_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    data = step_history(tmp_path / "history.csv")
    folder = tmp_path.joinpath("ci-workspace", "reports", "performance", "nightly-benchmarks")
    folder.mkdir(parents=True)
    out = folder / "candidates-of-the-nightly-run.csv"
    assert len(str(out)) > 80
    code, output = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", out])
    assert code == 0, output
    assert any(line.endswith(f"-> {out}") for line in output.splitlines()), output


def test_a_folder_output_is_never_standard_output(tmp_path, monkeypatch, small_dataset):
    # `-` is standard output for a file; for a folder it made a directory named "-".
    from triage.loaders import write_long

    monkeypatch.chdir(tmp_path)
    data = write_long(small_dataset, tmp_path / "small.csv")
    decisions = tmp_path / "decisions.csv"
    decisions.write_text("series_id,commit,p_true,classification\n")
    for args in (["synth", "--preset", "small", "--out", "-"],
                 ["report", "--data", data, "--decisions", decisions, "--out", "-"]):
        code, text = invoke(args)
        assert code == 2, text
        assert "a folder cannot be standard output" in flat(text)
    assert not (tmp_path / "-").exists()


def test_a_column_spelled_like_a_layout_column_is_named_not_ignored(tmp_path):
    import pytest

    from triage.core.history import Dataset, UnreadColumnWarning

    frame = pd.DataFrame({"series_id": "s", "commit": ["c1", "c2"], "value": [1.0, 2.0],
                          "Label": ["", "true_positive"]})
    with pytest.warns(UnreadColumnWarning, match="column 'Label' is not read: the long layout's column is 'label'"):
        data = Dataset.from_frame(frame)
    assert data.label_counts()["true_positive"] == 0  # still not read: the warning says so
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    done = run_triage("summary", "--data", path)
    assert done.returncode == 0 and "column 'Label' is not read" in flat(done.stderr), done.stderr


def test_detect_replays_the_json_lines_that_watch_reads(tmp_path):
    # `triage detect --data feed.jsonl` said "not a list of numbers: not valid JSON: Extra data".
    rng = np.random.default_rng(3)
    values = np.r_[100 + rng.standard_normal(40), 130 + rng.standard_normal(40)]
    feed = tmp_path / "feed.jsonl"
    feed.write_text("".join(json.dumps({"series_id": "bench/parse", "commit": f"c{k:03d}", "value": float(v)}) + "\n"
                            for k, v in enumerate(values)))
    long = tmp_path / "feed.csv"
    pd.DataFrame({"series_id": "bench/parse", "commit": [f"c{k:03d}" for k in range(80)], "value": values}).to_csv(
        long, index=False)
    outs = []
    for data in (feed, long):
        out = tmp_path / f"{data.suffix[1:]}-detected.csv"
        code, text = invoke(["detect", "--data", data, "--out", out])
        assert code == 0, text
        outs.append(pd.read_csv(out))
    assert outs[0].equals(outs[1]) and len(outs[0]) == 1
    piped = subprocess.run(
        [*warm_triage(), "watch"], input=feed.read_text(),
        capture_output=True, text=True, timeout=300,
    )
    watched = [json.loads(x) for x in piped.stdout.splitlines()]
    assert [d["commit"] for d in watched if d["decision"]] == outs[0]["commit"].tolist()


def test_a_bad_json_lines_record_is_named_by_its_line(tmp_path):
    feed = tmp_path / "feed.jsonl"
    feed.write_text('{"series_id": "s", "commit": "c1", "value": 1.0}\n\n{"series_id": "s", "commit": "c2"}\n')
    code, text = invoke(["summary", "--data", feed])
    assert code == 2 and "feed.jsonl, row 3: missing key(s) value" in flat(text), text
    one = tmp_path / "one.jsonl"
    one.write_text('{"series": 7, "commit": 12, "value": "2.5"}\n')
    from triage.loaders import load

    history = load(one)["7"]
    assert history.commits.tolist() == ["12"] and history.values.tolist() == [2.5]
