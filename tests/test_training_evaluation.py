"""The evaluation protocol: split properties, metrics, window study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_training import make_matrix

from triage.features.matrix import training_data
from triage.training.evaluation import (
    METRICS,
    evaluate,
    split_indices,
    window_markdown,
    window_study,
)
from triage.training.plots import window_png

FAST = {"rf": {"n_estimators": 25}, "xgb": {"n_estimators": 30}}


@pytest.fixture(scope="module")
def td():
    return training_data(make_matrix(120, 3, seed=7))


@pytest.mark.parametrize("kind", ["random", "grouped", "time"])
def test_splits_partition_the_rows(kind, td):
    train, val, test = split_indices(kind, td.y, td.groups, td.order, seed=3)
    together = np.concatenate([train, val, test])
    assert len(together) == len(np.unique(together)) == len(td.y)
    assert abs(len(test) / len(td.y) - 0.2) < 0.06
    assert abs(len(val) / (len(train) + len(val)) - 0.1) < 0.05
    for part in (train, val, test):
        assert set(td.y[part]) == {0, 1}


def test_grouped_split_keeps_each_series_on_one_side(td):
    train, val, test = split_indices("grouped", td.y, td.groups, td.order, seed=1)
    assert not set(td.groups[test]) & set(td.groups[np.r_[train, val]])
    assert not set(td.groups[val]) & set(td.groups[train])


def test_time_split_tests_on_later_candidates(td):
    train, val, test = split_indices("time", td.y, td.groups, td.order, seed=1)
    assert td.order[test].min() >= td.order[val].max() >= td.order[train].max()
    again = split_indices("time", td.y, td.groups, td.order, seed=99)
    assert all(np.array_equal(a, b) for a, b in zip((train, val, test), again, strict=True))


def test_time_order_falls_back_to_index_without_timestamps():
    m = make_matrix(60, 3, seed=2, timestamps=False)
    t = training_data(m)
    np.testing.assert_array_equal(t.order, m["index"].to_numpy()[t.rows])


def test_random_splits_differ_between_repetitions(td):
    a = split_indices("random", td.y, td.groups, td.order, seed=0)[2]
    b = split_indices("random", td.y, td.groups, td.order, seed=1)[2]
    assert not np.array_equal(a, b)


def test_evaluate_reports_every_model_and_split():
    result = evaluate(make_matrix(120, 3, seed=8), models=["rf", "xgb"], n_splits=3, n_jobs=1,
                      progress=False, model_params=FAST)
    assert len(result.records) == 2 * 3 * 3
    summary = result.summary()
    assert set(zip(summary["split"], summary["model"], strict=True)) == {
        (s, m) for s in ("random", "grouped", "time") for m in ("rf", "xgb")
    }
    for m in METRICS:
        assert (summary[f"{m}_ci_low"] <= summary[f"{m}_mean"]).all()
        assert (summary[f"{m}_mean"] <= summary[f"{m}_ci_high"]).all()
    assert (summary["auc_mean"] > 0.75).all()
    diff = result.differences()
    assert set(diff["split"]) == {"grouped - random", "time - random"}
    assert "| split | model | auc |" in result.to_markdown()
    assert result.settings["n_candidates"] == len(training_data(make_matrix(120, 3, seed=8)))


def test_evaluate_on_noise_is_near_chance():
    result = evaluate(make_matrix(120, 3, seed=9, signal=False), models=["rf"], splits=["random"],
                      n_splits=4, progress=False, model_params=FAST)
    assert abs(result.summary()["auc_mean"].iloc[0] - 0.5) < 0.1


def test_parallel_gives_the_same_numbers_as_serial():
    m = make_matrix(80, 3, seed=10)
    kw = dict(models=["rf"], splits=["random", "time"], n_splits=2, progress=False, model_params=FAST)
    serial = evaluate(m, n_jobs=1, **kw).records.drop(columns=["fit_seconds", "cpu_seconds"])
    parallel = evaluate(m, n_jobs=2, **kw).records.drop(columns=["fit_seconds", "cpu_seconds"])
    pd.testing.assert_frame_equal(serial, parallel)


def test_window_study_table_and_plot(tmp_path):
    built = []

    def build(w):
        built.append(w)
        # a stand-in for extract_features(dataset, window=w): wider windows, clearer signal
        return make_matrix(80, 3, seed=11, signal=(w == "adaptive" or w >= 2))

    table = window_study(build, [0, 2, "adaptive"], n_splits=2, progress=False, model_params={"n_estimators": 20})
    assert built == [0, 2, "adaptive"]
    assert list(table["window"]) == ["0", "2", "adaptive"]
    assert table.loc[table["window"] == "2", "auc_mean"].item() > table.loc[table["window"] == "0", "auc_mean"].item()
    png = window_png(table, tmp_path / "w.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| adaptive |" in window_markdown(table)


def test_unknown_model_or_split_is_rejected(td):
    with pytest.raises(ValueError, match="unknown model"):
        evaluate(td, models=["lstm"], n_splits=1, progress=False)
    with pytest.raises(ValueError, match="unknown split"):
        evaluate(td, splits=["sideways"], n_splits=1, progress=False)


def test_the_progress_bar_goes_to_stderr_and_names_the_window(capsys):
    """evaluate's and window-study's bars went to stdout, into a file the tables were redirected to,
    and window-study printed one identical line per window."""
    from triage.training.evaluation import window_study

    matrix = make_matrix(60, 3, seed=2)
    window_study(lambda w: matrix, windows=[0, "adaptive"], n_splits=2, progress=True,
                 model_params={"n_estimators": 5})
    out, err = capsys.readouterr()
    assert "evaluating" not in out
    assert "window 0: evaluating 1 model(s) x 1 split(s) x 2" in err
    assert "window adaptive: evaluating" in err
