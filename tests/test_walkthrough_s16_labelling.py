"""Walkthrough s16: batch-labelling a half-triaged real history and sharing the result.

A user took six emg3d-bench series of the real histories, ran `triage candidates
--detector binseg`, wrote a long CSV with a `label` column (some alerts triaged
true / false by the size of their step, the rest not_triaged / under_investigation,
one series fully triaged, one alert at the first commit of its series), ran
`triage label` (every format, --which, --threshold 0, --explain, --show, --out)
and `triage score`, then `triage report --decisions ...`.

Defects found:

1. The user edited one p_true of a `triage label` decisions file (0.3995 -> 0.95,
   p_false left at 0.6005, classification left false_positive) and ran `triage
   report` on it: the report was written without a word, showing P(true) 0.950 beside
   "false alert". `report` now refuses a row whose p_false and p_true do not add up
   to 1 (what label and score write), naming the file, the row and both values.
2. The user labelled one series with `triage label --format published` (the
   replication package's layout, offered by --help) and gave that file to `triage
   report --decisions`: the error said a decisions file needs series_id, p_true, ...
   "(found: Commit Hash;"MongoDB Label";"Prob. False";...)", a garbled header that
   did not say what was wrong. It now says the file is `label --format published`
   output, which has no series column, and to write --format csv or json.
3. The user edited the `label` cell of one decision to something no loader accepts
   (`<b>foo</b>`): `triage report` wrote the page showing it as the human label. A
   history with that label is refused at its row, so the report now refuses the
   decisions row the same way (naming the file, row and the accepted labels) and
   shows an accepted spelling (`Not Triaged`) as its canonical name.
4. The user asked `triage label --format published` for a history whose two alerted
   commits are shared by two series: the refusal said "(1 more commits are too)". It
   now says "(1 more commit is too)".
5. The user flipped the call of one `triage label` decision (p_true 0.40,
   false_positive -> true_positive, probabilities left consistent) while rows at
   p_true 0.55 stayed false: `triage report` drew it as a true alert. No threshold
   makes both calls; the report now refuses it naming both rows (score's
   duplicates, called false beside a stronger candidate, are still accepted).
6. In the report of the real history, an alert 7 commits after a confirmed change
   (emg3d peakmem_residual('small'), commit e9b5181b, true_positive at 66949e1f)
   had the step "change -9.6%": its 10-commit "before" mean reached over the
   confirmed 20 % drop, the other alert's step. The step column now stops at
   confirmed change points (the adaptive windows' rule): "change -2.5%" there.
7. `triage label --out -` (and `triage score --out -`) ended with "decisions written
   to -" on stderr; it now says "written to standard output".
8. `triage label` on the history once every alert was triaged printed an empty
   table and "0 of 0 called true at threshold 0.750", saying nothing of why. It now
   says the file has no untriaged candidate and that --which triaged checks the
   model on the triaged ones (the header-only --out is still written).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app

REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real" / "histories.csv.gz"
TRIAGE = str(Path(sys.executable).parent / "triage")
runner = CliRunner()


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    """Four real emg3d-bench series, half their binseg alerts triaged."""
    if not REAL.is_file():
        pytest.skip(f"real histories absent ({REAL}): this walkthrough needs them")
    tmp = tmp_path_factory.mktemp("s16")
    frame = pd.read_csv(REAL, dtype={"commit": str})
    ids = [s for s in frame["series_id"].unique() if s.startswith("emg3d-bench/")][:4]
    frame = frame[frame["series_id"].isin(ids)][["series_id", "commit", "timestamp", "value"]]
    data = tmp / "plain.csv"
    frame.to_csv(data, index=False)
    cands = tmp / "cands.csv"
    res = runner.invoke(app, ["candidates", "--data", str(data), "--detector", "binseg", "--out", str(cands)])
    assert res.exit_code == 0, res.output
    c = pd.read_csv(cands, dtype={"commit": str})
    labels: dict[tuple[str, str], str] = {}
    for i, r in enumerate(c.itertuples()):
        step = abs(r.mean_after - r.mean_before) / abs(r.mean_before)
        truth = "true_positive" if step > 0.03 else "false_positive"
        labels[(r.series_id, r.commit)] = truth if i % 2 == 0 else ("not_triaged" if i % 4 == 1 else "under_investigation")
    frame["label"] = [labels.get((s, k), "") for s, k in zip(frame["series_id"], frame["commit"], strict=True)]
    out = tmp / "history.csv"
    frame.to_csv(out, index=False)
    return out


@pytest.fixture(scope="module")
def decisions(history: Path) -> Path:
    out = history.parent / "decisions.csv"
    res = runner.invoke(app, ["label", "--data", str(history), "--out", str(out), "--show", "0"])
    assert res.exit_code == 0, res.output
    return out


def test_report_accepts_labels_own_decisions(history, decisions, tmp_path):
    res = runner.invoke(app, ["report", "--data", str(history), "--decisions", str(decisions),
                              "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "rep" / "index.html").is_file()


def test_report_refuses_edited_probability(history, decisions, tmp_path):
    """Defect 1: p_true edited, p_false and the call left as they were."""
    with open(decisions, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows, "label decided no alert"
    victim = next(r for r in rows if r["p_true"] not in ("", None))
    victim["p_true"] = f"{min(1.0, float(victim['p_true']) + 0.4):.4f}"
    edited = tmp_path / "edited.csv"
    with open(edited, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    code, err = invoke(["report", "--data", str(history), "--decisions", str(edited), "--out", str(tmp_path / "rep")])
    err = flat(err)
    assert code == 2, err
    assert "edited.csv, row" in err and "do not add up to 1" in err, err
    assert not (tmp_path / "rep" / "index.html").exists()


def test_report_names_the_published_layout(history, tmp_path):
    """Defect 2: `label --format published` output given to report."""
    one = pd.read_csv(history, dtype=str, keep_default_na=False)
    one = one[one["series_id"] == one["series_id"].iloc[0]]
    data = tmp_path / "one.csv"
    one.to_csv(data, index=False)
    pub = tmp_path / "published.csv"
    res = runner.invoke(app, ["label", "--data", str(data), "--format", "published", "--which", "all",
                              "--out", str(pub), "--show", "0"])
    assert res.exit_code == 0, res.output
    assert pub.read_text().startswith('"Commit Hash";')
    code, err = invoke(["report", "--data", str(data), "--decisions", str(pub), "--out", str(tmp_path / "rep")])
    err = flat(err)
    assert code == 2, err
    assert "published.csv, row 1" in err and "--format published" in err, err
    assert "--format csv" in err and "Prob. False" not in err, err


def test_report_checks_the_human_label(history, decisions, tmp_path):
    """Defect 3: the label column of a decisions file is read as the loaders read labels."""
    frame = pd.read_csv(decisions, dtype=str, keep_default_na=False)
    spelled = frame.copy()
    spelled["label"] = spelled["label"].str.replace("not_triaged", "Not Triaged")
    assert (spelled["label"] == "Not Triaged").any()
    spelled.to_csv(tmp_path / "spelled.csv", index=False)
    res = runner.invoke(app, ["report", "--data", str(history), "--decisions", str(tmp_path / "spelled.csv"),
                              "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Not Triaged" not in page and "<td>not_triaged</td>" in page
    bad = frame.copy()
    bad.loc[1, "label"] = "<b>foo</b>"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    code, err = invoke(["report", "--data", str(history), "--decisions", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "rep2")])
    err = flat(err)
    assert code == 2, err
    assert "bad.csv, row 3: unknown label '<b>foo</b>'" in err, err
    assert not (tmp_path / "rep2").exists()


def test_published_refusal_counts_in_english(history, tmp_path):
    """Defect 4: one real series under two ids, two commits alerted in both."""
    frame = pd.read_csv(history, dtype=str, keep_default_na=False)
    one = frame[frame["series_id"] == frame["series_id"].iloc[0]].copy()
    one["label"] = ""
    one.iloc[[40, 80], one.columns.get_loc("label")] = "not_triaged"
    twice = pd.concat([one.assign(series_id="a"), one.assign(series_id="b")])
    twice.to_csv(tmp_path / "twice.csv", index=False)
    res = runner.invoke(app, ["label", "--data", str(tmp_path / "twice.csv"), "--format", "published",
                              "--out", str(tmp_path / "pub.csv"), "--show", "0"])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.replace("│", " ").split())
    assert "(1 more commit is too)" in text, text


def test_report_refuses_a_call_no_threshold_makes(history, decisions, tmp_path):
    """Defect 5: a false call flipped to true below another false call."""
    frame = pd.read_csv(decisions, dtype=str, keep_default_na=False)
    p = pd.to_numeric(frame["p_true"], errors="coerce")
    false = frame.index[(frame["classification"] == "false_positive") & p.notna()]
    assert len(false) >= 2, "the walkthrough needs two alerts called false"
    victim = p[false].idxmin()
    flipped = frame.copy()
    flipped.loc[victim, "classification"] = "true_positive"
    flipped.to_csv(tmp_path / "flipped.csv", index=False)
    code, err = invoke(["report", "--data", str(history), "--decisions", str(tmp_path / "flipped.csv"), "--out", str(tmp_path / "rep")])
    err = flat(err)
    assert code == 2, err
    assert f"flipped.csv, row {victim + 2}: called true_positive at p_true" in err, err
    assert "no one threshold makes both calls" in err, err


def test_report_step_stops_at_a_confirmed_change(history):
    """Defect 6: step_text of an alert a few commits after a confirmed change."""
    import numpy as np

    from triage.core.history import Dataset
    from triage.report import step_text

    frame = pd.read_csv(history, dtype={"commit": str}, keep_default_na=False)
    ds = Dataset.from_frame(frame)
    for h in ds:
        confirmed = h.confirmed()
        for c in confirmed:
            nxt = confirmed[confirmed > c]
            for i in range(int(c) + 2, int(c) + 9):
                if i >= len(h.values) or (len(nxt) and i >= nxt[0]):
                    break
                stop = min(i + 10, int(nxt[0]) if len(nxt) else len(h.values))
                b, a = np.median(h.values[c:i]), np.median(h.values[i:stop])
                assert step_text(h, i) == f"{h.change_kind(b, a)} {100 * (a - b) / abs(b):+.1f}%", (h.series_id, i)
            return
    pytest.fail("no confirmed change in the walkthrough history")


def test_out_dash_is_named_standard_output(history, tmp_path):
    """Defect 7: the closing line of label / score --out -."""
    res = subprocess.run([*warm_triage(TRIAGE), "label", "--data", str(history), "--out", "-", "--show", "0"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("series_id,commit,label,p_false,p_true")
    assert "decisions written to standard output" in res.stderr, res.stderr
    assert "written to -" not in res.stderr


def test_label_says_there_is_nothing_untriaged(history, tmp_path):
    """Defect 8: a history whose alerts are all triaged."""
    frame = pd.read_csv(history, dtype=str, keep_default_na=False)
    frame.loc[frame["label"].isin(["not_triaged", "under_investigation"]), "label"] = ""
    data = tmp_path / "all_triaged.csv"
    frame.to_csv(data, index=False)
    res = runner.invoke(app, ["label", "--data", str(data), "--out", str(tmp_path / "d.csv")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "no untriaged candidate" in text and "0 of 0" not in text, text
    assert (tmp_path / "d.csv").read_text().startswith("series_id,commit,label")
