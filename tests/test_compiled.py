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


@pytest.mark.parametrize("model", ["rf", "xgb"])
def test_every_row_count_around_the_blocks_gives_the_library_numbers(model):
    """Rows go through the trees in blocks of 64, eight side by side, the rest
    (a single row) eight trees side by side: every split of a batch gives the
    library's numbers bit for bit. Trees of uneven depth (pruned by gamma) and
    a tree count that is no multiple of eight."""
    X, y = _data(nan_share=0.05)
    params = {"n_estimators": 23}
    if model == "xgb":
        params["gamma"] = 10.0  # trees of depth 0 (a single leaf) to 5
    clf = TriageClassifier(model=model, random_state=0, **params).fit(X, y)
    fast = CompiledPredictor(clf)
    if model == "xgb":
        depths = fast._args[3][:, 1]
        assert depths.min() < depths.max()
    probe = _probe(n=200)
    probe[np.random.default_rng(4).random(probe.shape) < 0.05] = np.nan
    expected = clf.predict_proba(probe)[:, 1]
    for n in (1, 3, 7, 8, 9, 63, 64, 65, 71, 200):
        np.testing.assert_array_equal(fast.positive_proba(probe[:n]), expected[:n])


def test_bundled_online_model_on_real_feature_rows(shared_data):
    """The bundled online model (400 trees) on the rows the online loop builds
    from real histories: the compiled walk gives XGBoost's own numbers."""
    import json
    from pathlib import Path

    from triage.online.loop import OnlineTriage

    model_dir = Path(__file__).resolve().parents[1] / "models" / "online-w4"
    loop = OnlineTriage.from_model_dir(model_dir, explain="none")
    values = np.asarray(json.loads((shared_data / "tigerbeetle.json").read_text()), dtype=float)
    pre = loop.new_state("tigerbeetle").pre
    rows = []
    for i in range(len(values) - 5):
        rows.append(pre.features_array(values[i : i + 5]))
        pre.learn_one(values[i])
    X = np.array(rows)
    clf = load_model(model_dir)
    expected = clf.predict_proba(X)[:, 1]
    assert np.ptp(expected) > 0.5
    np.testing.assert_array_equal(CompiledPredictor(clf).positive_proba(X), expected)
    np.testing.assert_array_equal(CompiledPredictor(clf).positive_proba(X[:1]), expected[:1])
