"""Consumers of a ``not_scorable`` decision (an alert at its series' first commit, no P(true)).

5b80bfb made ``triage label`` / ``triage score`` write such a row with empty
``p_false`` / ``p_true`` and the classification ``not_scorable``; the code
reading or summarising decisions did not know it:

1. ``triage report --decisions`` refused the row ("p_true '' is not a
   probability"); it is now shown as "not scorable" (an empty ``p_true`` on
   any other row is still refused).
2. The label / score table printed ``nan`` and ``false`` for it; now ``—``
   and ``not scorable``, with a caption counting them.
3. ``label --format published`` wrote ``FALSE`` (and ``agreement`` counted
   the row as called false); now ``NA`` for the probabilities and the call,
   and ``agreement`` leaves such rows out and counts them.
4. ``--target-recall`` (``scoring.threshold_for_recall``) measured recall
   on triaged candidates at index 0 too, from the empty-window fill values.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.batch_label import agreement, label_candidates
from triage.core.errors import InputError
from triage.core.history import Dataset
from triage.inference import NOT_SCORABLE, NotScorable, load_classifier
from triage.model_lookup import resolve_model
from triage.scoring import threshold_for_recall


def _frame(label_at: dict[int, str], n_series: int = 2) -> pd.DataFrame:
    """Series of 80 commits with a 20 % step at commit 40, labels at the commits of ``label_at``."""
    rng = np.random.default_rng(1)
    rows = []
    for k in range(1, n_series + 1):
        sid = f"s{k}"
        values = np.r_[rng.normal(100, 1, 40), rng.normal(120, 1, 40)]
        for i, x in enumerate(values):
            rows.append({"series_id": sid, "commit": f"{sid}c{i:02d}", "value": round(float(x), 3),
                         "label": label_at.get(i, "")})
    return pd.DataFrame(rows)


@pytest.fixture()
def first_commit_data(tmp_path) -> Path:
    """Untriaged alerts at commits 0 (not scorable) and 40 (a clear step) of s1 and s2."""
    path = tmp_path / "first.csv"
    _frame({0: "not_triaged", 40: "not_triaged"}).to_csv(path, index=False)
    return path


def _label(data: Path, out: Path, *extra: object) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        code, output = invoke(["label", "--data", data, "--out", out, *extra])
    assert code == 0, output
    return output


# ---------------------------------------------------------------------- 1. triage report


class _Rows:
    """The summary table's rows of a report page, as lists of cell texts, with each row's class."""

    def __init__(self, page: str):
        from html.parser import HTMLParser

        self.rows: list[tuple[str, list[str]]] = []
        rows = self.rows

        class Parser(HTMLParser):
            cell: list[str] | None = None

            def handle_starttag(self, tag, attrs):
                if tag == "tr":
                    rows.append((dict(attrs).get("class") or "", []))
                elif tag == "td":
                    self.cell = []

            def handle_endtag(self, tag):
                if tag == "td" and self.cell is not None:
                    rows[-1][1].append("".join(self.cell).strip())
                    self.cell = None

            def handle_data(self, data):
                if self.cell is not None:
                    self.cell.append(data)

        Parser(convert_charrefs=True).feed(page)

    def of(self, commit: str) -> tuple[str, list[str]]:
        return next(r for r in self.rows if len(r[1]) > 2 and r[1][2] == commit)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_report_shows_a_not_scorable_row_as_not_scorable(first_commit_data, tmp_path, fmt):
    decisions = tmp_path / f"decisions.{fmt}"
    _label(first_commit_data, decisions, "--format", fmt)
    out = tmp_path / "report"
    code, output = invoke(["report", "--data", first_commit_data, "--decisions", decisions, "--out", out])
    assert code == 0, output
    page = (out / "index.html").read_text()
    rows = _Rows(page)
    kind, cells = rows.of("s1c00")
    # columns: #, series, commit, index, step, human label, P(true), model, why
    assert kind == "unscored"
    assert cells[6] == "\u2014" and cells[7] == "not scorable"
    assert "first commit of its series" in cells[8]
    assert rows.of("s2c00")[1][7] == "not scorable"
    assert rows.of("s1c40")[1][7] == "true alert" and float(rows.of("s1c40")[1][6]) > 0.5
    # Listed after every judged alert; counted apart; never a number, never a false alert.
    order = [r[1][2] for r in rows.rows if len(r[1]) > 2]
    assert order[-2:] == ["s1c00", "s2c00"]
    assert "<b>2</b> not scorable" in page
    assert all(c[6] == "\u2014" or 0.0 <= float(c[6]) <= 1.0 for _, c in rows.rows if len(c) > 6)
    assert (out / "plots" / "s1.png").stat().st_size > 0

def _report_of(frame: pd.DataFrame, data, decisions, out) -> tuple[int, str]:
    """``triage report`` on ``frame`` written to ``decisions`` (a hand-edited decisions file)."""
    frame.to_csv(decisions, index=False)
    return invoke(["report", "--data", data, "--decisions", decisions, "--out", out])



def test_report_still_refuses_an_empty_p_true_on_a_called_row(first_commit_data, tmp_path):
    decisions = tmp_path / "decisions.csv"
    _label(first_commit_data, decisions)
    frame = pd.read_csv(decisions, dtype=str, keep_default_na=False)
    # A call without its probability is a broken file, not an unscorable alert.
    broken = frame.copy()
    broken.loc[broken["commit"] == "s1c40", "p_true"] = ""
    row = int(np.flatnonzero(broken["commit"] == "s1c40")[0]) + 2
    code, output = _report_of(broken, first_commit_data, tmp_path / "broken.csv", tmp_path / "r1")
    assert code == 2 and f"row {row}: p_true '' is not a probability" in flat(output), output
    # A not_scorable row carrying a probability is just as inconsistent.
    odd = frame.copy()
    odd.loc[odd["commit"] == "s1c00", "p_true"] = "0.7"
    code, output = _report_of(odd, first_commit_data, tmp_path / "odd.csv", tmp_path / "r2")
    assert code == 2 and "row 2: p_true '0.7' on a not_scorable row" in flat(output), output
    # An unknown classification names the three accepted ones.
    bad = frame.copy()
    bad.loc[bad["commit"] == "s1c00", "classification"] = "maybe"
    code, output = _report_of(bad, first_commit_data, tmp_path / "bad.csv", tmp_path / "r3")
    assert code == 2 and "classification 'maybe' is not true_positive, false_positive or not_scorable" in flat(
        output), output


# ---------------------------------------------------------------------- 2. the label / score table


def test_label_table_shows_not_scorable_instead_of_nan_and_false(first_commit_data, tmp_path):
    output = _label(first_commit_data, tmp_path / "decisions.csv")
    lines = {line.split()[1]: line for line in output.translate(str.maketrans("│┃", "  ")).splitlines()
             if len(line.split()) > 1 and line.split()[1] in ("s1c00", "s2c00", "s1c40")}
    for commit in ("s1c00", "s2c00"):
        assert "\u2014" in lines[commit] and "not scorable" in lines[commit], lines[commit]
        assert "nan" not in lines[commit] and "false" not in lines[commit], lines[commit]
    assert "true" in lines["s1c40"]
    assert "2 not scorable (no commit before the alert in its window: first commit of a series" in flat(output)

def _score_first_and_later(data, tmp_path) -> tuple[int, str]:
    """``triage score`` of s1's first commit and a later one (the warning naming the first silenced)."""
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c00\ns1,s1c40\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        return invoke(["score", "--data", data, "--candidates", cands])



def test_score_table_shows_not_scorable(first_commit_data, tmp_path):
    code, output = _score_first_and_later(first_commit_data, tmp_path)
    assert code == 0, output
    row = next(line for line in output.splitlines() if "s1c00" in line)
    assert "not scorable" in row and "\u2014" in row and "nan" not in row and "false" not in row, row


# ---------------------------------------------------------------------- 3. published format, agreement


def test_published_format_writes_na_not_false_for_a_not_scorable_alert(first_commit_data, tmp_path):
    out = tmp_path / "classified_points.csv"
    _label(first_commit_data, out, "--format", "published")
    lines = out.read_text().splitlines()
    assert "s1c00;not_triaged;NA;NA;NA" in lines and "s2c00;not_triaged;NA;NA;NA" in lines, lines
    judged = next(line for line in lines if line.startswith("s1c40;"))
    assert judged.endswith(";TRUE") and "NA" not in judged
    # Read back as the replication package's readers would: NA is missing, not a call.
    frame = pd.read_csv(out, sep=";")
    first = frame[frame["Commit Hash"] == "s1c00"].iloc[0]
    assert pd.isna(first["Prob. True"]) and pd.isna(first["Classification"])
    # At threshold 0 every alert is called true, the unscorable one too (still without probabilities).
    _label(first_commit_data, out, "--format", "published", "--threshold", "0")
    assert "s1c00;not_triaged;NA;NA;TRUE" in out.read_text().splitlines()


def test_agreement_leaves_out_not_scorable_rows_and_counts_them(tmp_path):
    # Triaged alerts: false at commit 0 (not scorable) and 20, true at the step (40), in 3 series.
    data = tmp_path / "triaged.csv"
    _frame({0: "false_positive", 20: "false_positive", 40: "true_positive"}, n_series=3).to_csv(data, index=False)
    clf = load_classifier(resolve_model("default", "alerts"))
    with pytest.warns(NotScorable):
        decisions = label_candidates(Dataset.from_frame(pd.read_csv(data, dtype={"label": str},
                                                                    keep_default_na=False)),
                                     clf, which="triaged", explain_top=0)
    assert (decisions.loc[decisions["index"] == 0, "classification"] == NOT_SCORABLE).all()
    stats = agreement(decisions, "label")
    assert stats["n"] == 6 and stats["not_scorable"] == 3
    # Through the command: the figure is on the 6 judged alerts, not on 9 with 3 "called false".
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        code, output = invoke(["label", "--data", data, "--which", "triaged", "--explain", "0"])
    assert code == 0, output
    assert "agreement with human labels on 6 candidates" in flat(output), output


# ---------------------------------------------------------------------- 4. --target-recall


def test_target_recall_leaves_out_triaged_candidates_at_a_first_commit(tmp_path):
    data = tmp_path / "triaged.csv"
    _frame({0: "false_positive", 20: "false_positive", 40: "true_positive", 60: "false_positive"},
           n_series=3).to_csv(data, index=False)
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c40\ns2,s2c40\n")
    code, output = invoke(["score", "--data", data, "--candidates", cands, "--model", "default-adaptive",
                           "--target-recall", "0.9"])
    assert code == 0, output
    # 3 series x commits 20, 40, 60; the three at commit 0 have no P(true) to measure recall with.
    assert "(recall 0.9 on 9 triaged candidates of --data)" in flat(output), output


def test_target_recall_with_only_first_commit_false_alerts_is_refused(tmp_path):
    frame = _frame({0: "false_positive", 40: "true_positive"})
    clf = load_classifier(resolve_model("default-adaptive", "alerts"))
    with pytest.raises(InputError, match=r"to measure recall on \(2 not scorable left out: no commit before the alert in its window\)"):
        threshold_for_recall(Dataset.from_frame(frame), clf, 0.9)


# ---------------------------------------------------------------------- 5. --target-recall with the scoring model


@pytest.mark.shared
def test_target_recall_with_the_default_scoring_model_on_the_mongodb_demo(shared_data, tmp_path):
    # Was an internal KeyError: the recall curve's rows lacked the pair_* / ctx_* columns (and the
    # candidate-bounded windows) default-scoring is applied with; they are now built as `score` builds them.
    from triage.loaders import load
    from triage.training.thresholds import TargetRecall, choose_threshold

    data = shared_data / "mongodb_demo.csv"
    cands = tmp_path / "perfherder.csv"
    code, output = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])
    assert code == 0, output
    code, output = invoke(["score", "--data", data, "--candidates", cands, "--target-recall", "0.9"])
    assert code == 0, output
    assert "(recall 0.9 on 4 triaged candidates of --data)" in flat(output), output
    # The curve is measured on the rows `score` gives the triaged candidates (as one detector run):
    # score them at threshold 0 and pick the threshold from their P(true) -- the same one.
    dataset = load(data)
    h = next(iter(dataset))
    triaged = h.indices_with({"true_positive", "false_positive"})
    (tmp_path / "triaged.csv").write_text("series_id,commit\n" + "".join(f"{h.series_id},{h.commits[i]}\n"
                                                                          for i in triaged))
    scored_file = tmp_path / "scored.csv"
    code, scored_output = invoke(["score", "--data", data, "--candidates", tmp_path / "triaged.csv",
                                  "--threshold", "0", "--out", scored_file])
    assert code == 0, scored_output
    scored = pd.read_csv(scored_file)
    y = (h.labels[scored["index"].to_numpy()] == "true_positive").astype(np.int64)
    assert 0 < y.sum() < len(y)
    expected = choose_threshold(TargetRecall(0.9), y, scored["p_true"].to_numpy(dtype=float))
    assert f"at threshold {expected:.3f} (recall 0.9" in flat(output), output
    cut, n = threshold_for_recall(dataset, load_classifier(resolve_model("default", "scoring")), 0.9)
    assert n == 4 and cut == pytest.approx(expected, abs=1e-9)


def test_target_recall_with_the_default_scoring_model_leaves_out_first_commits(tmp_path):
    data = tmp_path / "triaged.csv"
    _frame({0: "false_positive", 20: "false_positive", 40: "true_positive", 60: "false_positive"},
           n_series=3).to_csv(data, index=False)
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c40\ns2,s2c40\n")
    code, output = invoke(["score", "--data", data, "--candidates", cands, "--target-recall", "0.9"])
    assert code == 0, output
    assert "(recall 0.9 on 9 triaged candidates of --data)" in flat(output), output


# ---------------------------------------------------------------------- 6. report after --threshold 0


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_report_reads_label_at_threshold_0_with_its_first_commit_alerts(first_commit_data, tmp_path, fmt):
    # Threshold 0 calls every alert true, the two at commit 0 too, which have no P(true).
    decisions = tmp_path / f"x.{fmt}"
    _label(first_commit_data, decisions, "--threshold", "0", "--format", fmt)
    out = tmp_path / "report"
    code, output = invoke(["report", "--data", first_commit_data, "--decisions", decisions, "--out", out])
    assert code == 0, output
    page = (out / "index.html").read_text()
    rows = _Rows(page)
    for commit in ("s1c00", "s2c00"):
        kind, cells = rows.of(commit)
        assert kind == "true" and cells[6] == "\u2014" and cells[7] == "true alert", cells
        assert "threshold 0 calls every alert true" in cells[8]
    kind, cells = rows.of("s1c40")
    assert kind == "true" and 0.5 < float(cells[6]) <= 1.0
    order = [r[1][2] for r in rows.rows if len(r[1]) > 2]
    assert order[-2:] == ["s1c00", "s2c00"]
    assert "<b>4</b> likely true alerts" in page and "<b>2</b> of them without P(true)" in page
    assert "not scorable (no commit before the alert in its window)</span>" not in page  # none left uncalled


def test_report_reads_score_at_threshold_0(first_commit_data, tmp_path):
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c00\ns1,s1c40\n")
    scored = tmp_path / "scored.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        code, output = invoke(["score", "--data", first_commit_data, "--candidates", cands, "--threshold", "0",
                               "--out", scored])
    assert code == 0, output
    code, output = invoke(["report", "--data", first_commit_data, "--decisions", scored, "--out", tmp_path / "r"])
    assert code == 0, output
    kind, cells = _Rows((tmp_path / "r" / "index.html").read_text()).of("s1c00")
    assert kind == "true" and cells[6] == "\u2014" and cells[7] == "true alert"


def test_report_refuses_an_empty_p_true_on_a_true_row_outside_a_threshold_0_file(first_commit_data, tmp_path):
    decisions = tmp_path / "x.csv"
    _label(first_commit_data, decisions, "--threshold", "0")
    frame = pd.read_csv(decisions, dtype=str, keep_default_na=False)
    assert (frame.loc[frame["commit"] == "s1c00", "p_true"] == "").all()
    # A row called false: the file was not written at threshold 0, so a first-commit alert would be not_scorable.
    mixed = frame.copy()
    mixed.loc[mixed["commit"] == "s2c40", "classification"] = "false_positive"
    code, output = _report_of(mixed, first_commit_data, tmp_path / "mixed.csv", tmp_path / "r1")
    assert code == 2 and "row 2: p_true '' is not a probability (a true_positive row with no commit before it in " \
                          "its window may leave it empty only in a file written at threshold 0" in flat(output), output
    # Away from a first commit an empty p_true is a broken file even at threshold 0.
    broken = frame.copy()
    broken.loc[broken["commit"] == "s1c40", "p_true"] = ""
    row = int(np.flatnonzero(broken["commit"] == "s1c40")[0]) + 2
    code, output = _report_of(broken, first_commit_data, tmp_path / "broken.csv", tmp_path / "r2")
    assert code == 2 and f"row {row}: p_true '' is not a probability" in flat(output), output
    assert "threshold 0" not in flat(output)


# ---------------------------------------------------------------------- 7. label / score: the not scorable count


def test_label_and_score_say_how_many_alerts_were_not_scorable(first_commit_data, tmp_path):
    import re

    output = _label(first_commit_data, tmp_path / "d.csv")
    assert re.search(r"2 of 4 called true at threshold [0-9.]+ \(2 not scorable: no commit before the alert in its window\)",
                     flat(output)), output
    output = _label(first_commit_data, tmp_path / "d.csv", "--threshold", "0")
    assert ("4 of 4 called true at threshold 0.000 (2 not scorable: no commit before the alert in its window, called true "
            "without P(true))") in flat(output), output
    code, output = _score_first_and_later(first_commit_data, tmp_path)
    assert code == 0, output
    assert re.search(r"1 of 2 called true at threshold [0-9.]+ \(.*\) \(1 not scorable: no commit before the alert in its window\)",
                     flat(output)), output
    # None at a first commit: nothing said.
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c40\ns2,s2c40\n")
    code, output = invoke(["score", "--data", first_commit_data, "--candidates", cands])
    assert code == 0, output
    assert "not scorable" not in flat(output), output


def test_agreement_line_says_how_many_were_left_out(tmp_path):
    import re

    data = tmp_path / "triaged.csv"
    _frame({0: "false_positive", 20: "false_positive", 40: "true_positive"}, n_series=3).to_csv(data, index=False)
    output = _label(data, tmp_path / "d.csv", "--which", "triaged", "--explain", "0")
    assert ("agreement with human labels on 6 candidates (3 not scorable left out: no commit before the alert in its window): "
            "accuracy") in flat(output), output
    assert re.search(r"of 9 called true at threshold [0-9.]+ \(3 not scorable: no commit before the alert in its window\)",
                     flat(output)), output
    # Nothing left out: the line as before.
    clean = tmp_path / "clean.csv"
    _frame({20: "false_positive", 40: "true_positive"}).to_csv(clean, index=False)
    output = _label(clean, tmp_path / "d2.csv", "--which", "triaged", "--explain", "0")
    assert "agreement with human labels on 4 candidates: accuracy" in flat(output), output
    assert "not scorable" not in flat(output), output
