"""Regression or improvement, and by how much, in every output that decides about a change (thirty-third session).

A walkthrough asked each command the performance engineer's first question
about an alert. Found: `score` and `label` gave no signed size and no
regression / improvement; a Perfherder alert export given as `--candidates`
had its `lower_is_better` ignored (the report called a throughput drop a
plain "change"); `serve` gave "+3009.4%" for a step from a level near 0
where the report gave the change itself. One rule now sizes a step
(:mod:`triage.steps`).
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from triage.cli.app import app
from triage.core.history import Dataset, History
from triage.steps import (
    cell_text,
    describe,
    relative_change,
    step_at,
    step_columns,
    with_directions,
)

runner = CliRunner()


def _levels(levels, n_each=30, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([np.full(n_each, lv) * (1 + noise * rng.standard_normal(n_each)) for lv in levels])


def _long_csv(path, series: dict[str, tuple[np.ndarray, str]]):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit", "value", "higher_is_better"])
        for sid, (values, hib) in series.items():
            w.writerows((sid, f"c{i:03d}", repr(float(v)), hib) for i, v in enumerate(values))
    return path


def _candidates(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit"])
        w.writerows(rows)
    return path


@pytest.fixture()
def both_directions(tmp_path):
    data = _long_csv(tmp_path / "h.csv", {
        "lat_ms": (_levels([100, 120, 90]), "false"),    # lower is better: +20 % regression, -25 % improvement
        "thr_ops": (_levels([1000, 800, 1100], seed=1), "true"),  # higher is better: -20 % regression
        "unk": (_levels([50, 60, 45], seed=2), ""),       # direction unknown: a change
    })
    cands = _candidates(tmp_path / "c.csv", [(s, c) for s in ("lat_ms", "thr_ops", "unk") for c in ("c030", "c060")])
    return data, cands


def test_score_writes_the_signed_step_and_its_kind(both_directions, tmp_path):
    data, cands = both_directions
    out = tmp_path / "scored.csv"
    result = runner.invoke(app, ["score", "--data", str(data), "--candidates", str(cands), "--out", str(out)],
                           env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.stderr
    rows = {(r["series_id"], r["commit"]): r for r in csv.DictReader(open(out))}
    want = {("lat_ms", "c030"): (20, "regression"), ("lat_ms", "c060"): (-25, "improvement"),
            ("thr_ops", "c030"): (-20, "regression"), ("thr_ops", "c060"): (37.5, "improvement"),
            ("unk", "c030"): (20, "change"), ("unk", "c060"): (-25, "change")}
    for key, (pct, kind) in want.items():
        assert float(rows[key]["change_pct"]) == pytest.approx(pct, abs=1.5), key
        assert rows[key]["change_kind"] == kind, key
    # A wide table starts each reason with it, as the report's step column gives it.
    assert "regression +20" in result.stdout and "improvement -2" in result.stdout


def _labelled(path, values, labels_at: dict[int, str]):
    """One lower-is-better series ``lat`` with the labels at the given commits."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series_id", "commit", "value", "label", "higher_is_better"])
        w.writerows(["lat", f"c{i:03d}", repr(float(v)), labels_at.get(i, ""), "false"] for i, v in enumerate(values))
    return path


def test_label_writes_the_step_and_the_report_agrees(tmp_path):
    values = _levels([100, 120])
    data = _labelled(tmp_path / "lab.csv", values, {10: "false_positive", 30: "not_triaged", 45: "false_positive"})
    out = tmp_path / "labelled.csv"
    result = runner.invoke(app, ["label", "--data", str(data), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    (row,) = [r for r in csv.DictReader(open(out)) if r["commit"] == "c030"]
    assert row["change_kind"] == "regression"
    assert float(row["change_pct"]) == pytest.approx(20, abs=1.5)
    history = Dataset.from_frame(__import__("pandas").read_csv(data, dtype={"label": str}, keep_default_na=False))["lat"]
    assert describe(step_at(history, 30)) == f"regression {float(row['change_pct']):+.1f}%"


def test_a_level_near_zero_gets_no_per_cent_anywhere(tmp_path):
    rng = np.random.default_rng(0)
    values = np.concatenate([0.5 * rng.standard_normal(40), 5 + 0.5 * rng.standard_normal(40)])
    data = _long_csv(tmp_path / "near0.csv", {"delta_ms": (values, "false")})
    cands = _candidates(tmp_path / "c.csv", [("delta_ms", "c040")])
    out = tmp_path / "s.csv"
    assert runner.invoke(app, ["score", "--data", str(data), "--candidates", str(cands), "--out", str(out)]).exit_code == 0
    (row,) = csv.DictReader(open(out))
    assert row["change_pct"] == "" and row["change_kind"] == "regression"
    # The workspace's reason: the change itself, not "+3009.4%".
    from triage.workspace.alerts import build_alerts, reason

    h = Dataset.from_frame(__import__("pandas").read_csv(data))["delta_ms"]
    why, pct, kind = reason(h, 40)
    assert np.isnan(pct) and kind == "regression"
    assert "%" not in why and "level near 0" in why
    (alert,) = build_alerts(Dataset([h]), cands)
    assert np.isnan(alert.change_pct)


def _perfherder(tmp_path):
    rng = np.random.default_rng(3)
    lat = _levels([100, 120], seed=3)
    thr = _levels([1000, 800], seed=4)
    data = {sig: [{"signature_id": k, "revision": f"r{i:03d}", "push_id": i,
                   "push_timestamp": f"2024-01-{1 + i // 24:02d}T{i % 24:02d}:00:00", "value": float(v)}
                  for i, v in enumerate(values)]
            for k, (sig, values) in enumerate((("sigL", lat), ("sigH", thr)), start=1)}
    del rng
    (tmp_path / "perf.json").write_text(json.dumps(data))
    alerts = {"results": [{"id": 1, "revision": "r030", "status": 0, "alerts": [
        {"status": 0, "is_regression": True, "amount_pct": 20.0,
         "series_signature": {"signature_hash": "sigL", "id": 1, "suite": "s", "test": "tL",
                              "machine_platform": "linux64", "lower_is_better": True}},
        {"status": 0, "is_regression": True, "amount_pct": 20.0,
         "series_signature": {"signature_hash": "sigH", "id": 2, "suite": "s", "test": "tH",
                              "machine_platform": "linux64", "lower_is_better": False}}]}]}
    (tmp_path / "alerts.json").write_text(json.dumps(alerts))
    return tmp_path / "perf.json", tmp_path / "alerts.json"


def test_a_perfherder_exports_direction_names_the_regressions(tmp_path):
    data, alerts = _perfherder(tmp_path)
    out = tmp_path / "scored.csv"
    result = runner.invoke(app, ["score", "--data", str(data), "--candidates", str(alerts), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    kinds = {r["series_id"]: (r["change_kind"], float(r["change_pct"])) for r in csv.DictReader(open(out))}
    assert kinds["sigL"][0] == "regression" and kinds["sigL"][1] > 15
    assert kinds["sigH"][0] == "regression" and kinds["sigH"][1] < -15  # a throughput drop
    report = tmp_path / "rep"
    result = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(out), "--out", str(report)])
    assert result.exit_code == 0, result.stderr
    page = (report / "index.html").read_text()
    assert "regression -" in page and "regression +" in page and "change -" not in page
    from triage.loaders import load
    from triage.workspace.alerts import build_alerts

    by_series = {a.series_id: a.direction for a in build_alerts(load(data), alerts)}
    assert by_series == {"sigL": "regression", "sigH": "regression"}


def test_the_datas_own_direction_stands(tmp_path):
    import pandas as pd

    h = History("s", [f"c{i}" for i in range(6)], [1, 1, 1, 2, 2, 2], None, higher_is_better=True)
    u = History("u", [f"c{i}" for i in range(6)], [1, 1, 1, 2, 2, 2], None)
    ds = Dataset([h, u])
    fields = pd.DataFrame({"signature_lower_is_better": ["true", "true", "maybe"]})
    out = with_directions(ds, fields, ["s", "u", "u"])
    assert out["s"].higher_is_better is True and out["u"].higher_is_better is False
    assert ds["u"].higher_is_better is None  # the caller's dataset is not changed
    assert with_directions(ds, pd.DataFrame({"x": [1]}), ["s"]) is ds


def test_step_rules():
    assert relative_change(200.0, 150.0, 1.0) == -25.0
    assert relative_change(0.3, 5.0, 0.5) is None and relative_change(0.0, 1.0, 0.0) is None
    assert cell_text(12.345, "regression") == "regression +12.3%"
    assert cell_text(None, "change") == "change (level near 0)" and cell_text(None, "") == ""
    h = History("s", [f"c{i}" for i in range(4)], [10, np.nan, 12, 12], None)
    step = step_at(h, 2)
    assert (step.before, step.after, step.kind) == (10.0, 12.0, "change")  # a failed run left out
    assert step_at(h, 0) is None
    pcts, kinds = step_columns(Dataset([h]), ["s", "s"], [0, 2])
    assert pcts == [None, 20.0] and kinds == ["", "change"]


def test_scoring_our_own_output_again_replaces_the_step_columns(both_directions, tmp_path):
    data, cands = both_directions
    first, again = tmp_path / "s1.csv", tmp_path / "s2.csv"
    assert runner.invoke(app, ["score", "--data", str(data), "--candidates", str(cands), "--out", str(first)]).exit_code == 0
    assert runner.invoke(app, ["score", "--data", str(data), "--candidates", str(first), "--out", str(again)]).exit_code == 0
    header = next(csv.reader(open(again)))
    assert header.count("change_pct") == 1 and not any(h.startswith("triage_change") for h in header)


def test_fail_on_ends_a_ci_job_with_exit_3_after_writing(both_directions, tmp_path):
    from helpers_cli import invoke_apart

    data, cands = both_directions
    out = tmp_path / "s.csv"
    done = invoke_apart("score", "--data", data, "--candidates", cands, "--out", out, "--fail-on", "regression")
    assert done.returncode == 3, done.stderr
    assert "2 candidates called true with a regression step: exit 3 (--fail-on regression)" in done.stderr
    assert len(list(csv.DictReader(open(out)))) == 6  # written first
    improvements = _candidates(tmp_path / "imp.csv", [("lat_ms", "c060"), ("thr_ops", "c060")])
    done = invoke_apart("score", "--data", data, "--candidates", improvements, "--fail-on", "regression")
    assert done.returncode == 0, done.stderr
    done = invoke_apart("score", "--data", data, "--candidates", improvements, "--fail-on", "true")
    assert done.returncode == 3 and "called true: exit 3 (--fail-on true)" in done.stderr
    done = invoke_apart("label", "--data", data, "--fail-on", "true")  # no candidate to label: nothing flagged
    assert done.returncode == 0, done.stderr
    done = invoke_apart("score", "--data", data, "--candidates", cands, "--fail-on", "sometimes")
    assert done.returncode == 2 and "--fail-on" in done.stderr


# ---------------------------------------------------------------- a review of the above (same session)


def test_score_on_a_file_with_its_own_step_columns_uses_ours(both_directions, tmp_path):
    """detect's output (it has change_pct) fed to score crashed in the table; a detector's change_kind drove
    the table and --fail-on."""
    from helpers_cli import invoke_apart

    data, _ = both_directions
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("series_id,commit,change_kind,change_pct\nlat_ms,c030,improvement,-5\n"
                      "thr_ops,c030,improvement,not a number\n")
    done = invoke_apart("score", "--data", data, "--candidates", theirs, "--fail-on", "regression",
                        "--out", tmp_path / "s.csv")
    assert done.returncode == 3, done.stderr
    assert "2 candidates called true with a regression step" in done.stderr
    rows = list(csv.DictReader(open(tmp_path / "s.csv")))
    assert [r["change_kind"] for r in rows] == ["improvement", "improvement"]  # the detector's, kept
    assert [r["triage_change_kind"] for r in rows] == ["regression", "regression"]
    detected = tmp_path / "d.csv"
    assert invoke_apart("detect", "--data", data, "--out", detected).returncode == 0
    assert "change_pct" in detected.read_text().splitlines()[0]
    done = invoke_apart("score", "--data", data, "--candidates", detected)
    assert done.returncode == 0, done.stderr


def test_a_spike_before_the_step_does_not_make_the_level_near_zero():
    values = np.r_[np.full(35, 1.0), [50.0], np.full(4, 1.0), np.full(30, 2.0)]
    h = History("s", [f"c{i:03d}" for i in range(len(values))], values, None, higher_is_better=False)
    step = step_at(h, 40)
    assert step.pct == pytest.approx(100.0) and describe(step) == "regression +100.0%"


def test_a_change_far_below_a_per_cent_keeps_its_size():
    values = np.r_[np.full(20, 5e8), np.full(20, 5e8 + 16)]
    h = History("s", [f"c{i:03d}" for i in range(40)], values, None, higher_is_better=False)
    pcts, kinds = step_columns(Dataset([h]), ["s"], [20])
    assert pcts == [3.2e-06] and kinds == ["regression"]
    assert cell_text(pcts[0], kinds[0]) == "regression +3.2e-06%"
    assert cell_text(None, "regression") == "regression (level near 0)"
    assert cell_text(0.0, "none") == "no change"


def test_a_not_scorable_row_gets_no_step_in_the_table(tmp_path):
    data = _labelled(tmp_path / "lab.csv", _levels([100, 120]),
                     {10: "false_positive", 29: "true_positive", 30: "not_triaged", 45: "false_positive"})
    result = runner.invoke(app, ["label", "--data", str(data)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "c030" in line)
    assert "not scorable" in row and "regression" not in row


def test_serve_takes_a_perfherder_exports_direction_for_its_filter_note(tmp_path):
    import warnings

    from triage.loaders import load
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace, create_app
    from triage.workspace.store import LabelsStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    data, alerts = _perfherder(tmp_path)
    dataset = load(data)
    ws = Workspace(dataset=dataset, alerts=build_alerts(dataset, alerts), store=LabelsStore(tmp_path / "l.sqlite"))
    assert ws.directed == {"sigL", "sigH"}
    page = TestClient(create_app(ws)).get("/", params={"direction": "regression"}).text
    assert "says whether higher is better" not in page and page.count('data-commit="') == 2


def test_fail_on_regression_says_nothing_of_directions_the_data_gives(tmp_path):
    from helpers_cli import invoke_apart

    data = _long_csv(tmp_path / "h.csv", {"const": (np.full(80, 5.0), "false"), "lat": (_levels([100, 100]), "false")})
    cands = _candidates(tmp_path / "c.csv", [("const", "c040"), ("lat", "c000")])
    done = invoke_apart("score", "--data", data, "--candidates", cands, "--fail-on", "regression")
    assert done.returncode == 0 and "says which way is better" not in done.stderr


@pytest.mark.parametrize("command", ["label", "score", "candidates", "detect"])
def test_a_parquet_out_name_is_refused_by_the_commands_that_write_csv(both_directions, tmp_path, command):
    from helpers_cli import invoke_apart

    data, cands = both_directions
    extra = {"score": ["--candidates", cands], "candidates": ["--detector", "perfherder"]}.get(command, [])
    out = tmp_path / "out.parquet"
    done = invoke_apart(command, "--data", data, *extra, "--out", out)
    assert done.returncode == 2 and "writes CSV or JSON lines" in done.stderr and not out.exists()


# ---------------------------------------------------------------- a sheriff's walkthrough of the above (same session)


def test_fail_on_names_the_flagged_candidates_for_a_ci_log(both_directions, tmp_path):
    from helpers_cli import invoke_apart

    data, cands = both_directions
    done = invoke_apart("score", "--data", data, "--candidates", cands, "--fail-on", "regression")
    assert done.returncode == 3
    line = next(x for x in done.stderr.splitlines() if "exit 3" in x)
    assert "lat_ms at c030 (regression +" in line and "thr_ops at c030 (regression -" in line


def test_an_export_that_contradicts_the_datas_direction_is_warned_about(tmp_path):
    from helpers_cli import invoke_apart, run_triage

    data, alerts = _perfherder(tmp_path)
    flipped = alerts.read_text().replace('"lower_is_better": true', '"lower_is_better": X').replace(
        '"lower_is_better": false', '"lower_is_better": true').replace('"lower_is_better": X', '"lower_is_better": false')
    (tmp_path / "flipped.json").write_text(flipped)
    directed = tmp_path / "directed.csv"
    assert invoke_apart("convert", "--data", data, "--alerts", alerts, "--out", directed).returncode == 0
    done = run_triage("score", "--data", directed, "--candidates", tmp_path / "flipped.json", "--out",
                      tmp_path / "s.csv")  # a process of its own: warnings are printed by main()
    assert done.returncode == 0, done.stderr
    assert "2 series ('sigL', 'sigH'): the file's direction (signature_lower_is_better) contradicts the data's" in flat_text(done.stderr)
    kinds = {r["series_id"]: r["change_kind"] for r in csv.DictReader(open(tmp_path / "s.csv"))}
    assert kinds == {"sigL": "regression", "sigH": "regression"}  # the data's direction stands


def test_a_report_reads_the_direction_its_decisions_file_was_scored_with(both_directions, tmp_path):
    import pandas as pd

    data, cands = both_directions
    scored = tmp_path / "s.csv"
    assert runner.invoke(app, ["score", "--data", str(data), "--candidates", str(cands), "--out", str(scored)]).exit_code == 0
    bare = tmp_path / "bare.csv"
    pd.read_csv(data).drop(columns=["higher_is_better"]).to_csv(bare, index=False)
    result = runner.invoke(app, ["report", "--data", str(bare), "--decisions", str(scored), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert "regression +20.1%" in page and "regression -19.8%" in page  # lat_ms up, thr_ops down


def flat_text(text: str) -> str:
    return " ".join(text.split())
