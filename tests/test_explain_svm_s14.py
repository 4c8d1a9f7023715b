"""SVM explanations near P(true) = 0 or 1: occlusion on the margin, which does not saturate.

The calibrated P(true) saturates far from the boundary, so occluding one
feature there barely moves it: every contribution was near 0 and the ranking
was bent by the sigmoid's flat tails. The contributions are now measured on
the SVM's own score (the pipeline's decision function, before calibration).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_batch_label import _matrix, trained_model

from triage.core import labels
from triage.explain import contributions, explain, grouped_contributions
from triage.training.model_files import load_model


@pytest.fixture(scope="module")
def svm():
    return load_model(trained_model("svm"))


@pytest.fixture(scope="module")
def matrix() -> pd.DataFrame:
    return _matrix()


def _saturated_rows(svm, matrix) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows whose P(true) is below 0.1 or above 0.95, and that P(true)."""
    p = svm.predict_proba(matrix)[:, 1]
    pick = np.flatnonzero((p < 0.1) | (p > 0.95))
    return matrix.iloc[pick], p[pick]


def _margin_occlusion(svm, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Feature by feature, apart from triage.explain: (margin (n,), margin minus
    the margin with x_j at the training mean (n, p))."""
    pipe = svm.estimator_
    X = rows[svm.feature_names_].to_numpy(dtype=np.float64)
    X = np.where(np.isfinite(X), X, pipe.named_steps["impute"].statistics_)
    mean = pipe.named_steps["scale"].mean_
    margin = pipe.decision_function(X)
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        occluded = X.copy()
        occluded[:, j] = mean[j]
        out[:, j] = margin - pipe.decision_function(occluded)
    return margin, out


def _top(values: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-np.abs(values), axis=1, kind="stable")[:, :k]


def test_the_rows_are_saturated_at_both_ends(svm, matrix):
    _, p = _saturated_rows(svm, matrix)
    assert (p < 0.1).sum() >= 5 and (p > 0.95).sum() >= 5
    # Platt scaling maps a larger margin to a larger P(true) here: no sign flip.
    assert float(np.ravel(svm.calibrator_.coef_)[0]) > 0


def test_the_top_contribution_is_clearly_non_zero_near_0_and_1(svm, matrix):
    rows, p = _saturated_rows(svm, matrix)
    top = np.abs(contributions(svm, rows).values).max(axis=1)
    # Measured on P(true) the top contributions of these rows were 0.01-0.18 (the least 0.033 near 0,
    # 0.011 near 1); on the margin they are 0.26-1.15 (0.153-1.67 since the model leaves out the
    # two alerts no model is asked about, thirty-third session: a model of 684 rows, not 686).
    for end in (p < 0.1, p > 0.95):
        assert top[end].min() > 0.1, top[end]


def test_contributions_near_0_and_1_are_the_margin_occlusion(svm, matrix):
    rows, p = _saturated_rows(svm, matrix)
    c = contributions(svm, rows)
    _, expected = _margin_occlusion(svm, rows)
    assert c.unit == "margin" and not c.exact
    np.testing.assert_allclose(c.values, expected, rtol=1e-9, atol=1e-9)
    # The bias is the margin at the training mean; the score stays the calibrated P(true).
    mean = svm.estimator_.named_steps["scale"].mean_
    np.testing.assert_allclose(c.bias, svm.estimator_.decision_function(mean[None, :])[0], atol=1e-12)
    np.testing.assert_allclose(c.score, p, atol=1e-12)


def test_the_ranking_is_the_margin_ranking(svm, matrix):
    rows, _ = _saturated_rows(svm, matrix)
    c = contributions(svm, rows)
    _, expected = _margin_occlusion(svm, rows)
    np.testing.assert_array_equal(_top(c.values, 3), _top(expected, 3))


def test_explain_reports_the_margin_ranking_in_words(svm, matrix):
    rows, p = _saturated_rows(svm, matrix)
    reasons = explain(svm, rows, top=3)
    c = contributions(svm, rows)
    merged, _, _ = grouped_contributions(c)
    assert len(reasons) == len(rows) and all(len(r) == 3 for r in reasons)
    for i, r in enumerate(reasons):
        shown = np.array([float(s.rsplit("(", 1)[1].split()[0]) for s in r])  # "+0.83" / "-0.41"
        np.testing.assert_allclose(np.abs(shown), np.sort(np.abs(merged[i]))[::-1][:3], atol=0.006)
        assert abs(shown[0]) > 0.2, r
        for s in r:
            assert ("toward true" in s) == s.rsplit("(", 1)[1].startswith("+")
    # Near 1 the strongest reason leans toward true for most rows, near 0 toward false.
    first = np.array([float(r[0].rsplit("(", 1)[1].split()[0]) for r in reasons])
    assert (first[p > 0.95] > 0).mean() > 0.5
    assert (first[p < 0.1] < 0).mean() > 0.5


def test_a_decreasing_platt_map_flips_the_margin(svm, matrix):
    """Were the calibration to run the other way, "toward true" must still mean toward a higher P(true)."""
    import copy

    rows, _ = _saturated_rows(svm, matrix)
    flipped = copy.deepcopy(svm)
    flipped.calibrator_.coef_ = -flipped.calibrator_.coef_
    np.testing.assert_allclose(contributions(flipped, rows).values, -contributions(svm, rows).values, atol=1e-12)


def test_a_decreasing_isotonic_map_flips_the_margin(svm, matrix):
    import copy

    from sklearn.isotonic import IsotonicRegression

    rows, _ = _saturated_rows(svm, matrix)
    X = matrix[svm.feature_names_].to_numpy(dtype=np.float64)
    y = (matrix["label"].astype(str) == labels.TRUE_POSITIVE).to_numpy()
    flipped = copy.deepcopy(svm)
    # Fitted with increasing="auto" on a reversed target: increasing_ is numpy's False, not Python's.
    flipped.calibrator_ = IsotonicRegression(increasing="auto", out_of_bounds="clip").fit(
        svm.estimator_.decision_function(X), ~y
    )
    assert not flipped.calibrator_.increasing_ and flipped.calibrator_.increasing_ is not False
    np.testing.assert_allclose(contributions(flipped, rows).values, -contributions(svm, rows).values, atol=1e-12)
