"""triage.training.compiled reproduces TriageClassifier.predict_proba (1e-12) for forests, XGBoost and calibrators."""

from __future__ import annotations

import numpy as np
import pytest

from triage.training.classifier import TriageClassifier
from triage.training.compiled import CompiledPredictor
from triage.training.model_files import load_model, save_model


def _data(seed: int = 0, n: int = 500, p: int = 10, nan_share: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (
        X[:, 0] + 0.7 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3] + rng.normal(scale=0.7, size=n) > 0.6
    ).astype(int)
    if nan_share:
        X[rng.random(X.shape) < nan_share] = np.nan
    return X, y


def _probe(p: int = 10, seed: int = 1, n: int = 4000) -> np.ndarray:
    """Random inputs, wider than the training data, with exact training-like ties and extremes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=2.0, size=(n, p))
    X[::50] = 0.0
    X[1::97, 0] = 1e30
    X[2::97, 1] = -1e30
    return X


CASES = [
    ("rf", {"n_estimators": 40}),
    ("rf", {"n_estimators": 25, "calibration": "isotonic"}),
    ("rf", {"n_estimators": 25, "calibration": "sigmoid", "class_weight": None}),
    ("xgb", {"n_estimators": 50}),
    ("xgb", {"n_estimators": 30, "calibration": "sigmoid"}),
    # Unbalanced classes without weights: a base score away from 0.5.
    ("xgb", {"n_estimators": 30, "class_weight": None, "calibration": "isotonic"}),
]


@pytest.mark.parametrize(
    ("model", "params"), CASES, ids=[f"{m}-{i}" for i, (m, _) in enumerate(CASES)]
)
def test_equals_predict_proba(model, params):
    X, y = _data()
    if params.get("class_weight", "balanced") is None:
        y = (X[:, 0] > 1.0).astype(int)  # about 16 % positives
    clf = TriageClassifier(model=model, random_state=0, **params).fit(X, y)
    fast = CompiledPredictor(clf)
    assert fast.compiled
    probe = _probe()
    expected = clf.predict_proba(probe)
    got = fast.predict_proba(probe)
    assert got.shape == expected.shape == (len(probe), 2)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # Not a constant model: the comparison means something.
    assert np.ptp(expected[:, 1]) > 0.5


@pytest.mark.parametrize("model", ["rf", "xgb"])
def test_missing_values_follow_the_library(model):
    X, y = _data(nan_share=0.15)
    clf = TriageClassifier(model=model, n_estimators=30, random_state=0).fit(X, y)
    probe = _probe()
    probe[np.random.default_rng(3).random(probe.shape) < 0.2] = np.nan
    probe[5, :] = np.inf  # the classifier treats infinities as missing
    np.testing.assert_allclose(
        CompiledPredictor(clf).predict_proba(probe), clf.predict_proba(probe), rtol=0, atol=1e-12
    )


def test_svm_falls_back_to_predict_proba():
    X, y = _data(n=200)
    clf = TriageClassifier(model="svm", random_state=0).fit(X, y)
    fast = CompiledPredictor(clf)
    assert not fast.compiled
    probe = _probe(n=300)
    np.testing.assert_array_equal(fast.predict_proba(probe), clf.predict_proba(probe))


@pytest.mark.parametrize("model", ["rf", "xgb"])
def test_loaded_model_directory_compiles_to_the_same_numbers(model, tmp_path):
    X, y = _data()
    clf = TriageClassifier(model=model, n_estimators=20, random_state=0).fit(X, y)
    save_model(clf, tmp_path / "m", window=0)
    loaded = load_model(tmp_path / "m")
    probe = _probe()
    np.testing.assert_allclose(
        CompiledPredictor(loaded).predict_proba(probe), clf.predict_proba(probe), rtol=0, atol=1e-12
    )


def test_wrong_width_and_unfitted_are_refused():
    X, y = _data(n=100)
    fast = CompiledPredictor(TriageClassifier(n_estimators=5).fit(X, y))
    with pytest.raises(ValueError, match=r"shape \(n, 10\)"):
        fast.predict_proba(np.zeros((3, 9)))
    with pytest.raises(ValueError, match="not fitted"):
        CompiledPredictor(TriageClassifier())
