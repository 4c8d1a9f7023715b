"""TCPDBench F-measure and the triage classification metrics."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.core import metrics


def test_doctests_including_tcpdbench_published_examples():
    result = doctest.testmod(metrics, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 15
    assert result.failed == 0


def test_tcpdbench_examples_precision_and_recall():
    s = metrics.f_measure({1: [10, 20], 2: [11, 20], 3: [10], 4: [0, 5]}, [10, 20])
    assert (s.f, s.precision, s.recall) == (1.0, 1.0, 1.0)
    assert metrics.f1({1: [], 2: [10], 3: [50]}, [10]) == pytest.approx(0.9090909090909091)
    assert metrics.f1({1: [], 2: [10], 3: [50]}, []) == pytest.approx(0.8)


def test_one_to_one_matching():
    # two predictions near one change point: only one matches
    s = metrics.f_measure({1: [50]}, [49, 51])
    assert s.precision == pytest.approx(2 / 3)  # {0, 49, 51}: 0 and one of them
    assert s.recall == 1.0
    # the closest prediction is taken
    assert metrics.true_positives({10, 14}, {12, 15}, margin=3) == {10, 14}


def test_margin_one_and_f2():
    ann = {1: [100, 200]}
    assert metrics.f_measure(ann, [101, 203], margin=1).recall == pytest.approx(2 / 3)
    assert metrics.f_measure(ann, [101, 203], margin=5).recall == 1.0
    s = metrics.f_measure(ann, [100, 150, 160, 200])
    assert s.precision == pytest.approx(3 / 5) and s.recall == 1.0
    assert metrics.f2(ann, [100, 150, 160, 200]) == pytest.approx(5 * 0.6 / (4 * 0.6 + 1))
    assert metrics.f2(ann, [100, 150, 160, 200]) > metrics.f1(ann, [100, 150, 160, 200])  # recall weighs more


def test_bad_arguments():
    with pytest.raises(ValueError):
        metrics.f_measure({}, [1])
    with pytest.raises(ValueError):
        metrics.f_measure({1: [1]}, [1], beta=0)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.integers(0, 3), st.lists(st.integers(0, 200), max_size=6), min_size=1, max_size=4),
    st.lists(st.integers(0, 200), max_size=8),
    st.integers(0, 10),
)
def test_f_measure_is_a_valid_score(annotations, predictions, margin):
    s = metrics.f_measure(annotations, predictions, margin)
    assert 0.0 <= s.precision <= 1.0 and 0.0 <= s.recall <= 1.0 and 0.0 <= s.f <= 1.0
    assert min(s.precision, s.recall) - 1e-12 <= s.f <= max(s.precision, s.recall) + 1e-12
    # predicting exactly the union of annotations gives full precision
    union = sorted(set().union(*map(set, annotations.values())))
    assert metrics.f_measure(annotations, union, margin).precision == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=2, max_size=30))
def test_auc_equals_pairwise_definition(pairs):
    y = [p for p, _ in pairs]
    s = [float(v) for _, v in pairs]
    pos = [v for yy, v in zip(y, s, strict=True) if yy]
    neg = [v for yy, v in zip(y, s, strict=True) if not yy]
    if not pos or not neg:
        assert np.isnan(metrics.roc_auc(y, s))
        return
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg))
    assert metrics.roc_auc(y, s) == pytest.approx(wins / (len(pos) * len(neg)))


def test_classification_report_on_a_known_case():
    y = np.array([1, 1, 1, 0, 0, 0, 0, 0])
    scores = np.array([0.9, 0.8, 0.3, 0.6, 0.2, 0.1, 0.1, 0.05])
    r = metrics.classification_report(y, scores, threshold=0.5)
    assert r["accuracy"] == pytest.approx(6 / 8)
    assert r["sensitivity"] == pytest.approx(2 / 3)
    assert r["specificity"] == pytest.approx(4 / 5)
    assert r["auc"] == pytest.approx(14 / 15)


def test_classification_metrics_reject_non_binary_labels():
    with pytest.raises(ValueError, match="0/1"):
        metrics.confusion([0, 2], [0, 1])
    assert metrics.confusion(np.array([True, False]), np.array([True, True])) == metrics.Confusion(1, 1, 0, 0)


def test_classification_report_agrees_with_scikit_learn_on_ties():
    """The one binary-metrics definition: training's hold-out and evaluation use it."""
    from sklearn.metrics import accuracy_score, recall_score, roc_auc_score

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    scores = np.round(rng.random(300) * 0.5 + 0.3 * y, 2)  # rounded: many ties
    r = metrics.classification_report(y, scores, threshold=0.45)
    pred = scores >= 0.45
    assert r["auc"] == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    assert r["accuracy"] == pytest.approx(accuracy_score(y, pred))
    assert r["sensitivity"] == pytest.approx(recall_score(y, pred))
    assert r["specificity"] == pytest.approx(recall_score(1 - y, ~pred))
    assert list(r) == ["auc", "accuracy", "sensitivity", "specificity"]


def test_confusion_rates_are_nan_without_a_class():
    rates = metrics.confusion(np.array([True, True]), np.array([True, False])).rates()
    assert rates["accuracy"] == 0.5 and rates["sensitivity"] == 0.5 and np.isnan(rates["specificity"])
    assert all(np.isnan(v) for v in metrics.confusion([], []).rates().values())
