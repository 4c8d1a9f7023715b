"""Training leaves out the alerts that ``triage label`` and ``triage score`` call not scorable.

Found by a walkthrough: an alert with no commit before it in its window (at its
series' first commit, or right after a confirmed change point) is never judged
by ``label`` / ``score`` (:func:`triage.inference.not_scorable`), yet ``triage
train`` learned from it, its ``pre_*`` and ``norm_*`` columns nothing but the
catalogue's fill values for an empty window, and counted it in the training
table and the held-out figures. Of 102 triaged alerts in the history below, 6
are such alerts: train said "rf trained on 102 triaged candidates", label
called the same 6 not scorable. Training now takes its rows through the same
rule (:func:`triage.features.matrix.not_scorable`, which ``triage.inference``
imports), says in one line how many it left out, and refuses a history with
nothing scorable left.

The history: 24 series of 120 commits, a confirmed step at commit 60 (true), 3
false alerts each; series 0-3 have an alert at their first commit (2 true, 2
false), series 4-5 a false alert at commit 61, right after the confirmed step.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke_apart

from triage.core import labels
from triage.features.extract import extract_features
from triage.features.matrix import training_data
from triage.inference import NOT_SCORABLE, candidate_matrix, decide, not_scorable
from triage.loaders import load
from triage.training.classifier import TriageClassifier

#: Triaged alerts of the history, and those label / score call not scorable (by label).
N_TRIAGED = 24 + 24 * 3 + 4 + 2
LEFT_OUT = {labels.TRUE_POSITIVE: 2, labels.FALSE_POSITIVE: 4}
#: A small forest: these tests are about rows, not about the model.
SMALL = {"n_estimators": 20}


def _history(path: Path, *, first_only: bool = False) -> Path:
    rng = np.random.default_rng(1)
    rows = []
    for s in range(24):
        n, step = 120, 60
        values = 100 + rng.normal(0, 1, n)
        values[step:] += 8 if s % 2 == 0 else -8
        lab = [""] * n
        if first_only:  # every triaged alert at its series' first commit
            lab[0] = labels.TRUE_POSITIVE if s % 2 == 0 else labels.FALSE_POSITIVE
        else:
            lab[step] = labels.TRUE_POSITIVE
            for i in rng.choice(np.r_[10:50, 70:110], 3, replace=False):
                lab[i] = labels.FALSE_POSITIVE
            if s < 4:
                lab[0] = labels.TRUE_POSITIVE if s % 2 == 0 else labels.FALSE_POSITIVE
            if s in (4, 5):
                lab[step + 1] = labels.FALSE_POSITIVE
        rows += [{"series_id": f"bench.s{s:02d}", "commit": f"c{s:02d}{i:04d}", "value": round(values[i], 4),
                  "label": lab[i]} for i in range(n)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    return _history(tmp_path_factory.mktemp("history") / "history.csv")


@pytest.fixture(scope="module")
def matrix(history) -> pd.DataFrame:
    return extract_features(load(history), window="adaptive")


def test_the_history_holds_the_alerts_label_calls_not_scorable(matrix):
    """The premise: 6 of the 102 triaged alerts have an empty Pre (4 at index 0 or 61 false, 2 at index 0 true)."""
    triaged = matrix[matrix["label"].isin(labels.TRIAGED)]
    assert len(triaged) == N_TRIAGED
    empty = triaged[not_scorable(triaged)]
    assert empty["label"].value_counts().to_dict() == LEFT_OUT
    assert set(empty["index"]) == {0, 61}


def test_training_rows_are_the_triaged_alerts_label_would_judge(history, matrix):
    """The rows training takes are exactly the triaged ones label's decide() gives P(true) (one rule, not two)."""
    td = training_data(matrix)
    assert len(td) == N_TRIAGED - sum(LEFT_OUT.values())
    assert td.left_out == LEFT_OUT
    clf = TriageClassifier(model="rf", random_state=0, **SMALL).fit(matrix)
    triaged = candidate_matrix(load(history), labels.TRIAGED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NotScorable warning naming the 6
        calls = decide(clf, triaged, explain_top=0)["classification"]
    judged = triaged.loc[calls != NOT_SCORABLE, ["series_id", "commit"]]
    trained = matrix.iloc[td.rows][["series_id", "commit"]]
    assert set(map(tuple, trained.to_numpy())) == set(map(tuple, judged.to_numpy()))


def test_train_leaves_them_out_and_says_so_in_one_line(history, tmp_path):
    """`triage train`: the model is fitted on the 96 scorable alerts; one stderr line names the file, the 6 and why."""
    done = invoke_apart("train", "--data", history, "--out", tmp_path / "m", "--no-track", "--param", "n_estimators=20")
    assert done.returncode == 0, done.stderr
    assert "rf trained on 96 triaged candidates" in flat(done.stdout)
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["n_train"]["positives"] + manifest["n_train"]["negatives"] == 96
    assert manifest["n_train"]["positives"] == 24
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, done.stderr
    assert notes[0].startswith(f"note: {history}: 6 triaged rows (4 false_positive, 2 true_positive) left out")
    assert "not scorable, no commit before the alert in its window" in notes[0]


def test_train_refuses_a_history_with_no_scorable_alert(tmp_path):
    """Every triaged alert at a first commit: exit 2 naming the file and why, no model written (it trained on fills)."""
    data = _history(tmp_path / "first.csv", first_only=True)
    done = invoke_apart("train", "--data", data, "--out", tmp_path / "m", "--no-track")
    assert done.returncode == 2, done.stdout + done.stderr
    message = flat(done.stderr)
    assert f"error: {data}: no scorable triaged candidates to train on: 24 triaged rows" in message
    assert "(12 false_positive, 12 true_positive)" in message
    assert not (tmp_path / "m").exists()


def test_fit_on_a_feature_matrix_leaves_them_out(matrix):
    """The Python API: TriageClassifier.fit on a feature matrix takes the rows train takes."""
    clf = TriageClassifier(model="rf", random_state=0, **SMALL).fit(matrix)
    assert clf.n_train_["positives"] + clf.n_train_["negatives"] == 96
    assert clf.data_hash_ == training_data(matrix).data_hash()


def test_fit_with_an_explicit_target_keeps_every_row_given(matrix):
    """With y given the caller chose the rows: all are learned from (documented; the same before the fix)."""
    rows = matrix[matrix["label"].isin(labels.TRIAGED)]
    y = (rows["label"] == labels.TRUE_POSITIVE).to_numpy()
    clf = TriageClassifier(model="rf", random_state=0, features=["norm_mean_pre", "norm_mean_after"], **SMALL)
    clf.fit(rows, y, groups=rows["series_id"].to_numpy())
    assert clf.n_train_["positives"] + clf.n_train_["negatives"] == N_TRIAGED


def test_score_on_a_feature_matrix_leaves_them_out(matrix):
    """accuracy over the scorable triaged rows, as label's agreement line counts them: the 6 others' labels do not count."""
    clf = TriageClassifier(model="rf", random_state=0, **SMALL).fit(matrix)
    kept = matrix[matrix["label"].isin(labels.TRIAGED) & ~not_scorable(matrix)]
    expected = float(np.mean(clf.predict(kept) == kept["label"].to_numpy()))
    flipped = matrix.copy()
    empty = flipped["label"].isin(labels.TRIAGED).to_numpy() & not_scorable(flipped)
    flipped.loc[empty, "label"] = np.where(flipped.loc[empty, "label"] == labels.TRUE_POSITIVE,
                                           labels.FALSE_POSITIVE, labels.TRUE_POSITIVE)
    assert clf.score(matrix) == pytest.approx(expected)
    assert clf.score(flipped) == pytest.approx(expected)


def test_evaluate_measures_only_scorable_alerts(matrix):
    """The paper's protocol (evaluate, window-study) splits and measures the 96 as well, and records the 6."""
    from triage.training.evaluation import evaluate

    result = evaluate(matrix, models=("rf",), splits=("grouped",), n_splits=1, progress=False,
                      model_params={"rf": SMALL})
    assert result.settings["n_candidates"] == 96
    assert result.settings["not_scorable_left_out"] == LEFT_OUT


# ---------------------------------------------------------------- a walkthrough of the rule (same session)


def test_the_manifest_records_the_rows_left_out(history, tmp_path):
    done = invoke_apart("train", "--data", history, "--out", tmp_path / "m", "--no-track", "--param", "n_estimators=20")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["extra"]["not_scorable_left_out"] == LEFT_OUT


def test_window_zero_rows_take_no_ordinary_commit_right_after_a_change(history):
    """The commit after a change point has an empty Pre at K = 0: sampled as an ordinary commit it was left out
    again and counted as a triaged alert in train's note ("3 triaged rows (3 false_positive)" of unlabelled commits)."""
    from triage.training.online_matrix import online_matrix

    rows = online_matrix(load(history), ordinary_per_series=60, window=0, seed=0)
    after_change = rows[(rows["index"] == 61) & ~rows["series_id"].isin(["bench.s04", "bench.s05"])]
    assert after_change.empty
    td = training_data(rows)
    assert td.left_out == LEFT_OUT  # the triaged alerts only


def test_a_refusal_caused_by_the_rule_gives_no_status_code_hint(tmp_path):
    """Every false alert left out: "only true_positive candidates" is said with the rows left out, not with a
    hint about 0/1 label columns (the labels were words)."""
    rng = np.random.default_rng(2)
    rows = []
    for s in range(6):
        values = 100 + rng.normal(0, 1, 80)
        values[40:] += 8
        for i in range(80):
            lab = labels.TRUE_POSITIVE if i == 40 else labels.FALSE_POSITIVE if i == 0 else ""
            rows.append({"series_id": f"s{s}", "commit": f"c{s}{i:03d}", "value": values[i], "label": lab})
    data = tmp_path / "allfp.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    done = invoke_apart("train", "--data", data, "--out", tmp_path / "m", "--no-track")
    assert done.returncode == 2
    message = flat(done.stderr)
    assert "only true_positive candidates" in message and "6 triaged rows (6 false_positive) left out" in message
    assert "Perfherder's status codes" not in message


def test_window_study_says_what_it_left_out(history, tmp_path):
    done = invoke_apart("window-study", "--data", history, "--out", tmp_path / "ws", "--windows", "0,adaptive",
                        "--splits", "2", "--no-track", "--model", "rf")
    assert done.returncode == 0, done.stderr
    note = next(line for line in done.stderr.splitlines() if line.startswith("note:"))
    assert "triaged rows left out as not scorable" in note and "adaptive: 6" in note
    settings = json.loads((tmp_path / "ws" / "settings.json").read_text())
    assert settings["not_scorable_left_out"]["adaptive"] == 6


def test_a_matrix_without_index_or_pre_length_is_trained_whole_with_a_warning(matrix, tmp_path):
    bare = matrix.drop(columns=["index", "pre_series_length"])
    with pytest.warns(UserWarning, match="cannot be told apart: every triaged row is trained on"):
        td = training_data(bare)
    assert len(td) == N_TRIAGED and td.left_out == {}
