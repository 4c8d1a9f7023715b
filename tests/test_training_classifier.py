"""TriageClassifier: learns a real signal, not noise; estimator contract; bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_training import make_matrix
from sklearn.base import clone
from sklearn.metrics import recall_score, roc_auc_score

from triage.core.errors import InputError
from triage.features.matrix import training_data
from triage.training.classifier import TriageClassifier

SMALL = {"rf": {"n_estimators": 60}, "svm": {}, "xgb": {"n_estimators": 80}}


@pytest.fixture(scope="module")
def train_matrix() -> pd.DataFrame:
    return make_matrix(250, 3, seed=1)


@pytest.fixture(scope="module")
def test_matrix() -> pd.DataFrame:
    return make_matrix(200, 3, seed=2)


def _triaged(matrix: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    rows = matrix[matrix["label"].isin(["true_positive", "false_positive"])]
    return rows, (rows["label"] == "true_positive").to_numpy()


@pytest.mark.parametrize("model", ["rf", "svm", "xgb"])
def test_learns_the_signal(model, train_matrix, test_matrix):
    clf = TriageClassifier(model=model, **SMALL[model]).fit(train_matrix)
    rows, y = _triaged(test_matrix)
    proba = clf.predict_proba(rows)
    assert proba.shape == (len(rows), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert roc_auc_score(y, proba[:, 1]) > 0.8
    assert clf.score(test_matrix) > 0.75
    assert list(clf.classes_) == ["false_positive", "true_positive"]
    assert set(clf.predict(rows)) <= {"false_positive", "true_positive"}


def test_noise_gives_chance_auc():
    clf = TriageClassifier(n_estimators=100).fit(make_matrix(250, 3, seed=3, signal=False))
    rows, y = _triaged(make_matrix(250, 3, seed=4, signal=False))
    assert abs(roc_auc_score(y, clf.predict_proba(rows)[:, 1]) - 0.5) < 0.08


def test_untriaged_rows_are_not_trained_on(train_matrix):
    clf = TriageClassifier(n_estimators=10).fit(train_matrix)
    n_triaged = int(train_matrix["label"].isin(["true_positive", "false_positive"]).sum())
    assert n_triaged < len(train_matrix)
    assert clf.n_train_["fit"] + clf.n_train_["validation"] == n_triaged
    # ...but they can be predicted: that is what the model is for.
    untriaged = train_matrix[train_matrix["label"] == "not_triaged"]
    assert len(clf.predict(untriaged)) == len(untriaged)


def test_constructor_stores_parameters_only_and_clone_keeps_model_params():
    clf = TriageClassifier(model="nonsense", n_estimators=7, max_depth=3)
    assert clf.get_params()["n_estimators"] == 7
    assert not any(k.endswith("_") for k in vars(clf))
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    twin.set_params(model="rf", n_estimators=5)
    assert twin.n_estimators == 5
    with pytest.raises(ValueError, match="model must be one of"):
        clf.fit(np.zeros((4, 2)), [0, 1, 0, 1])


def test_model_params_reach_the_model(train_matrix):
    clf = TriageClassifier(n_estimators=13, max_depth=4).fit(train_matrix)
    assert len(clf.estimator_.estimators_) == 13
    assert clf.estimator_.max_depth == 4


def test_plain_arrays_and_numeric_labels(train_matrix):
    td = training_data(train_matrix)
    clf = TriageClassifier(model="xgb", n_estimators=30).fit(td.X, td.y)
    assert list(clf.classes_) == [0, 1]
    assert clf.feature_names_ is None
    assert set(np.unique(clf.predict(td.X))) <= {0, 1}
    with pytest.raises(ValueError, match="features"):
        clf.predict(td.X[:, :3])


@pytest.mark.parametrize("target", [0.9, 0.97])
def test_target_recall_is_reached_on_validation_data(train_matrix, target):
    td = training_data(train_matrix)
    half = len(td.y) // 2
    val = (td.X[half:], td.y[half:])
    clf = TriageClassifier(n_estimators=60, threshold=f"recall:{target}").fit(
        td.X[:half], td.y[:half], validation=val
    )
    assert recall_score(val[1], clf.predict(val[0])) >= target
    # the highest such threshold: a hair higher would miss the target
    p = clf.predict_proba(val[0])[:, 1]
    assert recall_score(val[1], p >= np.nextafter(clf.threshold_, 1.0) + 1e-9) < target


def test_fbeta_policy_favours_recall(train_matrix):
    td = training_data(train_matrix)
    half = len(td.y) // 2
    val = (td.X[half:], td.y[half:])
    f1 = TriageClassifier(n_estimators=60, threshold="fbeta:1").fit(td.X[:half], td.y[:half], validation=val)
    f3 = TriageClassifier(n_estimators=60, threshold="f3").fit(td.X[:half], td.y[:half], validation=val)
    assert f3.threshold_ <= f1.threshold_
    assert recall_score(val[1], f3.predict(val[0])) >= recall_score(val[1], f1.predict(val[0]))


def test_learned_threshold_uses_a_held_out_part_without_explicit_validation(train_matrix):
    clf = TriageClassifier(n_estimators=30, threshold="recall:0.95").fit(train_matrix)
    assert clf.n_train_["validation"] > 0
    assert clf.threshold_policy_ == "recall:0.95"


def test_feature_subset_and_missing_columns(train_matrix, tmp_path):
    fs = tmp_path / "fs.json"
    fs.write_text('{"names": ["pre_mean", "after_mean", "norm_mean_pre", "norm_mean_after"]}')
    clf = TriageClassifier(features=str(fs), n_estimators=20).fit(train_matrix)
    assert clf.feature_names_ == ["pre_mean", "after_mean", "norm_mean_pre", "norm_mean_after"]
    with pytest.raises(InputError, match="lacks column.*after_mean"):
        clf.predict(train_matrix.drop(columns=["after_mean"]))
    with pytest.raises(InputError, match="lacks column.*pre_nonexistent"):
        TriageClassifier(features=["pre_nonexistent"]).fit(train_matrix)


def test_no_triaged_rows_is_a_clear_error(train_matrix):
    untriaged = train_matrix.assign(label="not_triaged")
    with pytest.raises(InputError, match="no triaged candidates"):
        TriageClassifier().fit(untriaged)
    one_class = train_matrix.assign(label="true_positive")
    with pytest.raises(ValueError, match="two classes|only"):
        TriageClassifier().fit(one_class)


def test_infinite_features_are_treated_as_missing(train_matrix):
    m = train_matrix.copy()
    m.loc[m.index[:20], "pre_sd"] = np.inf
    clf = TriageClassifier(n_estimators=20).fit(m)
    assert np.isfinite(clf.predict_proba(m)).all()


def test_hyperparameter_search_picks_from_the_space(train_matrix):
    clf = TriageClassifier(n_estimators=20, search=2).fit(train_matrix)
    assert set(clf.best_params_) <= {"n_estimators", "max_features", "min_samples_leaf", "max_depth"}
    assert 0.5 < clf.search_score_ <= 1.0
    assert clf.params_["n_estimators"] == clf.best_params_["n_estimators"]


def test_scikit_learn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    known = {
        # model keywords (**model_params) are stored as attributes by design
        "check_no_attributes_set_in_init",
        "check_supervised_y_2d",
    }
    results = check_estimator(TriageClassifier(n_estimators=5), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed <= known, failed


def test_forest_scores_are_added_in_tree_order_whatever_n_jobs(train_matrix, test_matrix):
    # scikit-learn's threaded predict_proba adds the trees' votes in the order its
    # threads finish; the last bits then differ from run to run and moved the
    # real-data benchmark's out-of-fold thresholds. The score must be the
    # sequential sum, every time.
    clf = TriageClassifier(model="rf", n_estimators=40, n_jobs=2, random_state=0).fit(train_matrix)
    X = test_matrix[clf.feature_names_].to_numpy(dtype=float)
    trees = clf.estimator_.estimators_
    total = np.zeros(len(X))
    for tree in trees:
        total += tree.predict_proba(X.astype(np.float32))[:, 1]
    expected = total / len(trees)
    for _ in range(3):
        assert np.array_equal(clf._raw_score(X), expected)
    assert clf.estimator_.n_jobs == 2  # the fitted model keeps its setting
