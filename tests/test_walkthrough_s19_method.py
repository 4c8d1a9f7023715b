"""Walkthrough s19: a statistician checks the training and evaluation protocol.

Defects found (what a user did, what went wrong, what happens now):

1. Loaded each history twice under two series ids (a copy, a re-run read as
   another series) and ran ``triage train`` / ``triage evaluate``. The grouped
   hold-out keeps series *ids* apart, so every copy had its twin on the other
   side: on candidates labelled at random (no feature can tell them apart,
   the right AUC is 0.5) the grouped split reported AUC 0.94, against 0.47
   without the copies, and nothing said why. Now ``train`` warns how many
   held-out candidates a training candidate of another series repeats row
   for row, and ``evaluate``'s records count them per split (``test_twins``)
   and its settings over the data (``twin_candidates``).
2. Read ``train``'s held-out 95 % intervals. They came from resampling
   held-out candidates one by one, though the hold-out is a sample of series
   and the candidates of one history go together: on simulated series with a
   series effect they held the AUC of fresh series about 70 % of the time.
   Now the bootstrap resamples whole held-out series; a hold-out of fewer
   than 5 series (``train`` on 5 series holds out one) gets no interval and
   a warning saying why, where resampling one series would have printed an
   interval of width 0.
3. Ran ``triage evaluate`` on a small history (fewer than 15 triaged
   candidates): the time split's validation (and, below 8, test) part was one
   candidate, which can never hold both classes, so the run always failed,
   blaming the labels. Now each part has at least 2 candidates.
4. Ran ``triage evaluate`` with all three split kinds on a history whose
   later candidates are all of one class: the random and grouped repetitions
   ran first, and the time split's error then threw their results away. The
   time split, the same in every repetition, is now checked before any model
   is fitted.
5. Chose features with ``triage select-features --data H`` and trained with
   ``triage train --data H --features fs.json``: the selection's
   cross-validation had seen the series the hold-out then took, so the
   held-out figures measured neither the choice nor the model on unseen
   series, and nothing said so. Now ``train`` warns when the feature set was
   chosen on the same candidates (its recorded data hash is theirs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.training import evaluation
from triage.training.evaluation import SplitError, cross_series_twins, evaluate, split_indices
from triage.training.pipeline import bootstrap_metrics


def _noise_history(path, *, n_series=12, copies=False, seed=0):
    """A long CSV of flat noisy series whose candidates are labelled at random: nothing to learn."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_series):
        values = 100 + rng.normal(0, 1, 120)
        at = set(rng.choice(np.arange(10, 110), 6, replace=False).tolist())
        for i, v in enumerate(values):
            label = str(rng.choice(["true_positive", "false_positive"])) if i in at else ""
            rows.append(
                {
                    "series_id": f"s{s:02d}",
                    "commit": f"c{s}_{i}",
                    "value": round(float(v), 4),
                    "label": label,
                }
            )
    frame = pd.DataFrame(rows)
    if copies:
        twin = frame.assign(series_id="copy-" + frame["series_id"], commit="x" + frame["commit"])
        frame = pd.concat([frame, twin])
    frame.to_csv(path, index=False)
    return path


def _matrix(n_series=20, per_series=6, seed=0, copies=False):
    """A feature matrix (contract columns) of random rows labelled at random."""
    rng = np.random.default_rng(seed)
    n = n_series * per_series
    frame = pd.DataFrame(
        {
            "series_id": np.repeat([f"s{i:02d}" for i in range(n_series)], per_series),
            # From commit 10: a candidate at a series' first commit is not scorable and left out of training.
            "index": np.tile((np.arange(per_series) + 1) * 10, n_series),
            "label": rng.choice(["true_positive", "false_positive"], n),
            "pre_mean": rng.normal(size=n),
            "after_mean": rng.normal(size=n),
        }
    )
    if copies:
        frame = pd.concat(
            [frame, frame.assign(series_id="copy-" + frame["series_id"])], ignore_index=True
        )
    return frame


# 1 ------------------------------------------------------------------ copies across the grouped split


def test_train_warns_when_held_out_candidates_are_copies_of_training_ones(tmp_path):
    data = _noise_history(tmp_path / "copies.csv", copies=True)
    code, out = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track"])
    assert code == 0, out
    text = flat(out)
    assert "have a feature row identical to a training candidate's in another series" in text
    assert "give each history one series id" in text


def test_train_says_nothing_of_copies_when_there_are_none(tmp_path):
    data = _noise_history(tmp_path / "plain.csv")
    code, out = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track"])
    assert code == 0, out
    assert "identical to a training candidate" not in flat(out)


def test_evaluate_counts_the_test_rows_another_series_repeats():
    plain = evaluate(
        _matrix(),
        models=["rf"],
        splits=["grouped"],
        n_splits=2,
        progress=False,
        model_params={"rf": {"n_estimators": 10}},
    )
    assert (plain.records["test_twins"] == 0).all() and plain.settings["twin_candidates"] == 0
    copied = evaluate(
        _matrix(copies=True),
        models=["rf"],
        splits=["grouped"],
        n_splits=2,
        progress=False,
        model_params={"rf": {"n_estimators": 10}},
    )
    assert (copied.records["test_twins"] > 0).all()
    assert copied.settings["twin_candidates"] == 240


def test_twins_are_rows_of_other_series_only():
    X = np.array([[1.0, np.nan], [1.0, np.nan], [-0.0, 2.0], [0.0, 2.0], [5.0, 5.0]])
    groups = np.array(["a", "b", "a", "a", "c"])
    # row 1 repeats row 0 of another series (NaN equal to NaN); row 3 repeats row 2 of its own series only
    assert cross_series_twins(X, groups, np.array([0, 2, 4]), np.array([1, 3])).tolist() == [1]


def test_a_row_of_constants_shared_by_unrelated_series_is_no_twin():
    """Windows of one or two commits give rows of constants that unrelated series share: a window-0
    training on 200 distinct histories was warned of "the same history under two series ids"."""
    rng = np.random.default_rng(5)
    degenerate = np.array([0.0, 0.5, 4.0])
    groups, rows = [], []
    for s in range(6):
        for k in range(5):
            groups.append(f"s{s}")
            rows.append(degenerate if k == 0 else rng.standard_normal(3))
    X, groups = np.array(rows), np.array(groups)
    seen, test = np.flatnonzero(np.isin(groups, ["s0", "s1", "s2"])), np.flatnonzero(np.isin(groups, ["s3", "s4", "s5"]))
    assert cross_series_twins(X, groups, seen, test).tolist() == []
    # A copy still is: half or more of its held-out rows repeat one series.
    X[groups == "s5"] = X[groups == "s1"]
    assert cross_series_twins(X, groups, seen, test).tolist() == np.flatnonzero(groups == "s5").tolist()


# 2 ------------------------------------------------------------------ bootstrap over series


def test_held_out_interval_resamples_whole_series():
    rng = np.random.default_rng(3)
    n_series = 12
    y = rng.integers(0, 2, n_series)
    y[:2] = [0, 1]
    proba = np.clip(0.3 * y + rng.uniform(0, 0.7, n_series), 0, 1)
    groups = np.array([f"s{i}" for i in range(n_series)])
    one = bootstrap_metrics(y, proba, 0.5, groups=groups, seed=1)
    # each series now holds its candidate five times over: no more independent evidence
    five = bootstrap_metrics(
        np.repeat(y, 5), np.repeat(proba, 5), 0.5, groups=np.repeat(groups, 5), seed=1
    )
    for m in ("auc", "accuracy"):
        assert five[f"{m}_ci_low"] == pytest.approx(one[f"{m}_ci_low"])
        assert five[f"{m}_ci_high"] == pytest.approx(one[f"{m}_ci_high"])
    by_candidate = bootstrap_metrics(np.repeat(y, 5), np.repeat(proba, 5), 0.5, seed=1)
    assert (
        by_candidate["auc_ci_high"] - by_candidate["auc_ci_low"]
        < five["auc_ci_high"] - five["auc_ci_low"]
    )


def test_train_reports_the_series_bootstrap_interval(tmp_path):
    data = _noise_history(tmp_path / "plain.csv", n_series=30)  # 6 held-out series
    from triage.features.extract import extract_features
    from triage.features.matrix import training_data
    from triage.loaders import load
    from triage.training.pipeline import train

    matrix = extract_features(load(data), window="adaptive")
    result = train(matrix, tmp_path / "m", track=False, model_params={"n_estimators": 20})
    assert result.test is not None
    td = training_data(matrix)
    _, _, test_idx = split_indices("grouped", td.y, td.groups, td.order, seed=0)
    expected = bootstrap_metrics(
        *result.test, result.metrics["heldout_threshold"], groups=td.groups[test_idx], seed=0
    )
    assert result.metrics["auc_ci_low"] == expected["auc_ci_low"]
    assert result.metrics["auc_ci_high"] == expected["auc_ci_high"]


# 3 ------------------------------------------------------------------ small time splits


def test_time_split_of_a_dozen_candidates_has_two_in_validation_and_test():
    y = np.tile([0, 1], 6)
    order = np.arange(12.0)
    train, val, test = split_indices("time", y, np.array(["s"] * 12), order, seed=0)
    assert val.tolist() == [8, 9] and test.tolist() == [10, 11]
    assert train.tolist() == list(range(8))


# 4 ------------------------------------------------------------------ time split checked first


def test_evaluate_refuses_an_impossible_time_split_before_fitting(monkeypatch):
    frame = _matrix(seed=1)
    frame.loc[frame["index"] >= 40, "label"] = "true_positive"  # the latest candidates: one class
    fitted = []
    real = evaluation._run_one
    monkeypatch.setattr(evaluation, "_run_one", lambda *a: fitted.append(a[5]) or real(*a))
    with pytest.raises(SplitError, match="time split"):
        evaluate(
            frame,
            models=["rf"],
            splits=["random", "grouped", "time"],
            n_splits=2,
            progress=False,
            model_params={"rf": {"n_estimators": 10}},
        )
    assert fitted == []


# 5 ------------------------------------------------------------------ feature set chosen on the hold-out


def test_train_warns_when_the_feature_set_saw_the_held_out_series(tmp_path):
    data = _noise_history(tmp_path / "h.csv")
    fs = tmp_path / "fs.json"
    code, out = invoke(
        [
            "select-features",
            "--data",
            data,
            "--out",
            fs,
            "--population",
            4,
            "--generations",
            0,
            "--trees",
            5,
        ]
    )
    assert code == 0, out
    code, out = invoke(
        ["train", "--data", data, "--features", fs, "--out", tmp_path / "m", "--no-track"]
    )
    assert code == 0, out
    assert "was chosen (select-features) on these same candidates" in flat(out)
    other = _noise_history(tmp_path / "other.csv", seed=1)
    code, out = invoke(
        ["train", "--data", other, "--features", fs, "--out", tmp_path / "m2", "--no-track"]
    )
    assert code == 0, out
    assert "select-features" not in flat(out)


def test_a_hold_out_of_one_series_gets_no_interval_but_a_warning(tmp_path):
    data = _noise_history(tmp_path / "five.csv", n_series=5)
    code, out = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track"])
    assert code == 0, out
    text = flat(out)
    assert (
        "the hold-out is 1 series (fewer than 5): too few to give its figures an interval" in text
    )
    assert "[" not in text.split("auc", 1)[1].split("accuracy", 1)[0]  # no interval beside the AUC
