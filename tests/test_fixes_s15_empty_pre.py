"""An alert right after a confirmed change point has an empty Pre window: not scorable, as one at index 0.

Found on the real otel-java histories: a series labelled ``true_positive`` at
commit 57 and ``not_triaged`` at 58. Pre starts after the previous confirmed
change point, so the alert at 58 has no commit before it in its window, yet
``triage label`` gave it P(true) 0.55 and called it true "because" the "pre
window is empty: no level to compare" (and ``triage score`` judged it from
"pre median is 0"). :func:`triage.inference.not_scorable` only tested
``index == 0``; it now tests the row's Pre length (``pre_series_length``), in
``label`` and ``score`` alike, and the messages say "no commit before the
alert in its window" instead of "first commit of a series".

Each test reads one series of ``../shared/data/real/histories.csv.gz``
(skipped without it) into its own folder.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.core.history import Dataset
from triage.inference import NOT_SCORABLE, NotScorable, candidate_matrix, not_scorable
from triage.scoring import model_rows

OTEL = "otel-java/io.opentelemetry.sdk.SpanRecordBenchmark.threads4({spanSize:LARGE})/otel-bench-runner"
#: The series' commits (re-runs once) and the labels of the example: a confirmed change at 57, alerts at 58 and 120.
LABELS = {57: "true_positive", 58: "not_triaged", 120: "not_triaged"}


@pytest.fixture(scope="module")
def otel() -> pd.DataFrame:
    from conftest import SHARED_DATA

    path = SHARED_DATA / "real" / "histories.csv.gz"
    if not path.is_file():
        pytest.skip(f"real histories {path} are absent (../shared beside the checkout)")
    frame = pd.read_csv(path)
    return frame[frame["series_id"] == OTEL].reset_index(drop=True)


def _commits(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["commit"]))


def _data(frame: pd.DataFrame, folder: Path, label_at: dict[int, str] = LABELS) -> Path:
    commits = _commits(frame)
    by_commit = {commits[i]: lab for i, lab in label_at.items()}
    out = folder / "otel.csv"
    frame.assign(label=frame["commit"].map(by_commit).fillna("")).to_csv(out, index=False)
    return out


def _quiet(args: list[object]) -> tuple[int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        return invoke(args)


# ---------------------------------------------------------------------- not_scorable itself


def test_not_scorable_is_every_row_with_an_empty_pre_window(otel):
    commits = _commits(otel)
    frame = otel.assign(label=otel["commit"].map({commits[i]: lab for i, lab in
                                                  {**LABELS, 0: "not_triaged"}.items()}).fillna(""))
    matrix = candidate_matrix(Dataset.from_frame(frame))
    assert matrix["index"].tolist() == [0, 57, 58, 120]
    assert matrix["pre_series_length"].tolist()[:3] == [0, 57, 0] and matrix["pre_series_length"].iloc[3] > 0
    assert not_scorable(matrix).tolist() == [True, False, True, False]
    # Without the length column (a matrix from elsewhere): index 0 alone, as before.
    assert not_scorable(matrix.drop(columns="pre_series_length")).tolist() == [True, False, False, False]


# ---------------------------------------------------------------------- triage label


def test_label_leaves_the_alert_right_after_a_confirmed_change_without_p_true(otel, tmp_path):
    data = _data(otel, tmp_path)
    commits = _commits(otel)
    out = tmp_path / "decisions.csv"
    with pytest.warns(NotScorable, match=rf"commit '{commits[58]}': an alert with no commit before it in its "
                                         "window \\(at the first commit of its series or right after a confirmed "
                                         "change\\) cannot be judged"):
        code, output = invoke(["label", "--data", data, "--out", out])
    assert code == 0, output
    rows = pd.read_csv(out, dtype=str, keep_default_na=False).set_index("commit")
    after = rows.loc[commits[58]]
    assert after["classification"] == NOT_SCORABLE and after["p_true"] == "" and after["p_false"] == ""
    assert "right after a confirmed change" in after["explanation"]
    assert "pre window is empty" not in after["explanation"]
    later = rows.loc[commits[120]]
    assert later["classification"] in ("true_positive", "false_positive") and 0 <= float(later["p_true"]) <= 1
    assert "(1 not scorable: no commit before the alert in its window)" in flat(output), output
    assert "1 not scorable (no commit before the alert in its window" in flat(output), output


def test_label_agreement_leaves_out_a_triaged_alert_right_after_a_confirmed_change(otel, tmp_path):
    # A false alert the sheriff rejected right after the confirmed change: judged on nothing before.
    data = _data(otel, tmp_path, {57: "true_positive", 58: "false_positive", 120: "false_positive"})
    code, output = _quiet(["label", "--data", data, "--which", "triaged", "--explain", "0"])
    assert code == 0, output
    assert ("agreement with human labels on 2 candidates (1 not scorable left out: no commit before the alert "
            "in its window)") in flat(output), output


# ---------------------------------------------------------------------- triage score


@pytest.mark.parametrize("model", ["default", "default-adaptive"])
def test_score_leaves_the_alert_right_after_a_confirmed_change_without_p_true(otel, tmp_path, model):
    data = _data(otel, tmp_path)
    commits = _commits(otel)
    cands = tmp_path / "cands.csv"
    pd.DataFrame({"series_id": OTEL, "commit": [commits[0], commits[58], commits[120]]}).to_csv(cands, index=False)
    out = tmp_path / "scored.csv"
    with pytest.warns(NotScorable, match="2 alerts with no commit before them in their window"):
        code, output = invoke(["score", "--data", data, "--candidates", cands, "--model", model, "--out", out])
    assert code == 0, output
    scored = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert scored["classification"].tolist()[:2] == [NOT_SCORABLE, NOT_SCORABLE]  # index 0 as before, and 58
    assert scored["p_true"].tolist()[:2] == ["", ""]
    assert scored["classification"].iloc[2] != NOT_SCORABLE and 0 <= float(scored["p_true"].iloc[2]) <= 1
    assert "(2 not scorable: no commit before the alert in its window)" in flat(output), output


def test_score_rows_of_the_scoring_model_have_an_empty_pre_right_after_a_confirmed_change(otel, tmp_path):
    # Candidate-bounded windows stop at the confirmed change point too: Pre of 58 is empty, of 0 as well.
    from triage.inference import load_classifier
    from triage.loaders import load
    from triage.model_lookup import resolve_model

    dataset = load(_data(otel, tmp_path))
    clf = load_classifier(resolve_model("default", "scoring"))
    matrix = model_rows(dataset, clf, [OTEL] * 4, np.array([0, 58, 63, 120]))
    assert matrix["pre_series_length"].tolist()[:2] == [0, 0]
    assert not_scorable(matrix).tolist() == [True, True, False, False]


def test_target_recall_leaves_out_triaged_alerts_right_after_a_confirmed_change(otel, tmp_path):
    data = _data(otel, tmp_path, {30: "false_positive", 57: "true_positive", 58: "false_positive",
                                  120: "false_positive"})
    cands = tmp_path / "cands.csv"
    pd.DataFrame({"series_id": [OTEL], "commit": [_commits(otel)[120]]}).to_csv(cands, index=False)
    code, output = _quiet(["score", "--data", data, "--candidates", cands, "--model", "default-adaptive",
                           "--target-recall", "0.9"])
    assert code == 0, output
    assert "(recall 0.9 on 3 triaged candidates of --data)" in flat(output), output


# ---------------------------------------------------------------------- triage report


def test_report_reads_label_at_threshold_0_with_an_alert_right_after_a_confirmed_change(otel, tmp_path):
    data = _data(otel, tmp_path)
    commits = _commits(otel)
    decisions = tmp_path / "decisions.csv"
    code, output = _quiet(["label", "--data", data, "--out", decisions, "--threshold", "0"])
    assert code == 0, output
    frame = pd.read_csv(decisions, dtype=str, keep_default_na=False).set_index("commit")
    assert frame.loc[commits[58], "classification"] == "true_positive" and frame.loc[commits[58], "p_true"] == ""
    code, output = invoke(["report", "--data", data, "--decisions", decisions, "--out", tmp_path / "r"])
    assert code == 0, output
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<b>1</b> of them without P(true): no commit before the alert in its window" in page
    # Elsewhere an empty p_true on a true row is still a broken file, even at threshold 0.
    broken = frame.reset_index()
    broken.loc[broken["commit"] == commits[120], "p_true"] = ""
    broken.to_csv(tmp_path / "broken.csv", index=False)
    code, output = invoke(["report", "--data", data, "--decisions", tmp_path / "broken.csv", "--out",
                           tmp_path / "r2"])
    assert code == 2 and "p_true '' is not a probability" in flat(output), output
    assert "threshold 0" not in flat(output)


def test_report_shows_a_not_scorable_alert_right_after_a_confirmed_change(otel, tmp_path):
    data = _data(otel, tmp_path)
    decisions = tmp_path / "decisions.csv"
    code, output = _quiet(["label", "--data", data, "--out", decisions])
    assert code == 0, output
    code, output = invoke(["report", "--data", data, "--decisions", decisions, "--out", tmp_path / "r"])
    assert code == 0, output
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<b>1</b> not scorable (no commit before the alert in its window)" in page
    assert "right after a confirmed change" in page
