"""Explanations (triage.explain): exact contributions for forests and XGBoost, plain phrases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_batch_label import _matrix, trained_model

from triage.explain import PHRASES, contributions, describe, explain
from triage.inference import ALL_FEATURES
from triage.training.model_files import load_model


@pytest.fixture(scope="module")
def matrix() -> pd.DataFrame:
    return _matrix()


def _naive_forest_contributions(forest, x: np.ndarray) -> tuple[float, np.ndarray]:
    """One row, tree by tree, node by node: the textbook treeinterpreter walk."""
    contrib = np.zeros(len(x))
    bias = 0.0
    for tree in forest.estimators_:
        t = tree.tree_
        def p_true(node, t=t):
            v = t.value[node, 0]
            return v[1] / v.sum()
        node = 0
        bias += p_true(0)
        while t.children_left[node] >= 0:
            f = t.feature[node]
            go_left = x[f] <= t.threshold[node] if not np.isnan(x[f]) else bool(t.missing_go_to_left[node])
            child = t.children_left[node] if go_left else t.children_right[node]
            contrib[f] += p_true(child) - p_true(node)
            node = child
    n = len(forest.estimators_)
    return bias / n, contrib / n


def test_forest_contributions_sum_to_the_prediction(matrix):
    clf = load_model(trained_model("rf"))
    rows = matrix.iloc[:200]
    c = contributions(clf, rows)
    assert c.exact and c.unit == "probability"
    assert c.values.shape == (200, len(clf.feature_names_))
    np.testing.assert_allclose(c.bias + c.values.sum(axis=1), c.score, atol=1e-10)
    # No calibrator on the forest: the explained score is the model's P(true).
    np.testing.assert_allclose(c.score, clf.predict_proba(rows)[:, 1], atol=1e-10)


def test_forest_contributions_match_a_node_by_node_walk(matrix):
    clf = load_model(trained_model("rf"))
    rows = matrix.iloc[[0, 7, 123]]
    c = contributions(clf, rows)
    X = rows[clf.feature_names_].to_numpy(float)
    for i in range(len(rows)):
        bias, contrib = _naive_forest_contributions(clf.estimator_, X[i])
        assert c.bias[i] == pytest.approx(bias, abs=1e-12)
        np.testing.assert_allclose(c.values[i], contrib, atol=1e-12)


def test_xgboost_shap_contributions_sum_to_the_margin(matrix):
    clf = load_model(trained_model("xgb"))
    rows = matrix.iloc[:200]
    c = contributions(clf, rows)
    assert c.exact and c.unit == "log-odds"
    np.testing.assert_allclose(c.bias + c.values.sum(axis=1), c.score, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(1 / (1 + np.exp(-c.score)), clf.predict_proba(rows)[:, 1], atol=1e-5)


def test_svm_occlusion_contributions(matrix):
    clf = load_model(trained_model("svm"))
    rows = matrix.iloc[:20]
    c = contributions(clf, rows)
    assert not c.exact
    np.testing.assert_allclose(c.score, clf.predict_proba(rows)[:, 1], atol=1e-12)
    # Occluding a feature already at the training mean changes nothing.
    mean = clf.estimator_.named_steps["scale"].mean_
    at_mean = rows[clf.feature_names_].copy()
    at_mean.iloc[:, 0] = mean[0]
    assert np.abs(contributions(clf, at_mean).values[:, 0]).max() < 1e-12
    reasons = explain(clf, rows, top=2)
    assert all(len(r) == 2 for r in reasons)


@pytest.mark.parametrize("kind", ["rf", "xgb"])
def test_explain_lists_the_strongest_features_first(matrix, kind):
    clf = load_model(trained_model(kind))
    rows = matrix.iloc[:50]
    reasons = explain(clf, rows, top=3)
    assert len(reasons) == 50 and all(len(r) == 3 for r in reasons)
    c = contributions(clf, rows)
    # The level pair and the spread pair are one fact each: their contributions are summed.
    names = list(c.names)
    merged = c.values.copy()
    for a, b in (("norm_mean_pre", "norm_mean_after"), ("norm_sd_pre", "norm_sd_after")):
        merged[:, names.index(b)] += merged[:, names.index(a)]
        merged[:, names.index(a)] = 0.0
    for i, r in enumerate(reasons):
        assert len(set(s.rsplit(" (", 1)[0] for s in r)) == 3  # no fact twice
        shown = [float(s.rsplit("(", 1)[1].split()[0]) for s in r]  # "+0.21" / "-0.08"
        strongest = np.sort(np.abs(merged[i]))[::-1][:3]
        np.testing.assert_allclose(np.abs(shown), strongest, atol=0.006)
        for s in r:
            assert ("toward true" in s) == s.rsplit("(", 1)[1].startswith("+")


def test_plain_phrases():
    row = pd.Series({"norm_mean_pre": 0.2, "norm_mean_after": 0.8, "norm_sd_pre": 0.25, "norm_sd_after": 0.1})
    assert describe("norm_mean_after", 0.8, row) == "after mean 2.4 sd above pre"
    down = pd.Series({"norm_mean_pre": 0.9, "norm_mean_after": 0.3, "norm_sd_pre": 0.0, "norm_sd_after": 0.2})
    assert describe("norm_mean_pre", 0.9, down) == "after mean 3.0 sd below pre"
    assert describe("norm_mean_after", 0.8) == "after mean at 80% of the Pre+After range"
    assert describe("norm_sd_after", 0.1, row) == "after sd 0.4x pre sd"
    assert describe("pre_series_length", 14.0) == "pre window has 14 commits"
    assert describe("after_series_length", 1.0) == "after window has 1 commit"
    assert describe("after_hurst", 0.8123) == "after Hurst exponent 0.812 (0.5 = no memory)"
    # Every feature column has a phrase of its own (no "name = value" fallback).
    for col in ALL_FEATURES:
        assert not describe(col, 1.0, row).startswith(col), col
    assert set(PHRASES) == {c.split("_", 1)[1] for c in ALL_FEATURES if c.startswith("pre_")}


def test_explain_gives_every_row_of_a_batch_its_reasons(matrix):
    # Its speed is a benchmark figure (benchmarks/bench_explain.py, BENCHMARKS.md "Explanations").
    clf = load_model(trained_model("rf"))
    rows = pd.concat([matrix] * 2, ignore_index=True).iloc[:1000]
    reasons = explain(clf, rows, top=3)
    assert len(reasons) == 1000
    assert all(len(r) == 3 for r in reasons)
    assert reasons[: len(matrix)] == explain(clf, rows.iloc[: len(matrix)], top=3)  # a row's reasons are its own


def test_empty_input():
    clf = load_model(trained_model("rf"))
    assert explain(clf, _matrix().iloc[:0]) == []
