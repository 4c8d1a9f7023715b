"""What typing triage.training turned up in model_files: a manifest verify_model_dir
passes must load, and the values load_model hands on must be checked before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_training import make_matrix

from triage.training import model_files
from triage.training.classifier import TriageClassifier
from triage.training.model_files import (
    CHECKSUMS,
    ModelFileError,
    load_model,
    save_model,
    verify_model_dir,
)


@pytest.fixture(scope="module")
def matrix() -> pd.DataFrame:
    return make_matrix(60, 3, seed=7)


@pytest.fixture(scope="module")
def fitted(matrix) -> TriageClassifier:
    return TriageClassifier(model="rf", n_estimators=10).fit(matrix)


def _rewrite_manifest(path: Path, change) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))
    names = sorted(p.name for p in path.iterdir() if p.name != CHECKSUMS)
    (path / CHECKSUMS).write_text("".join(f"{model_files._sha256(path / n)}  {n}\n" for n in names))


def test_a_manifest_without_features_that_verifies_also_loads(fitted, matrix, tmp_path):
    # 'features' is optional to the checks (read with .get); load_model read it
    # with [] and so raised a bare KeyError for a directory it had just verified.
    path = save_model(fitted, tmp_path / "m")
    _rewrite_manifest(path, lambda m: m.pop("features"))
    verify_model_dir(path)
    clf = load_model(path)
    assert clf.feature_names_ is None
    X = matrix[fitted.feature_names_].to_numpy()
    np.testing.assert_array_equal(clf.predict_proba(X), fitted.predict_proba(X))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update({"class_weight": 5}), "class_weight 5"),
        (lambda m: m.update({"class_weight": {"0": "heavy"}}), "class_weight"),
        (lambda m: m.update({"random_state": "seven"}), "random_state 'seven'"),
        (lambda m: m.update({"random_state": True}), "random_state True"),
        (lambda m: m.update({"data_hash": 3}), "data_hash must be text"),
        (lambda m: m.update({"n_train": [1, 2]}), "n_train must be an object of counts"),
        (lambda m: m.pop("data_hash"), "lacks 'data_hash'"),
        (lambda m: m.pop("n_train"), "lacks 'n_train'"),
    ],
)
def test_values_load_model_hands_on_are_checked(change, message, fitted, tmp_path):
    path = save_model(fitted, tmp_path / "m")
    _rewrite_manifest(path, change)
    with pytest.raises(ModelFileError, match=message):
        load_model(path)


@pytest.mark.parametrize("class_weight", [None, "balanced", {"0": 1.0, "1": 3}])
def test_valid_class_weights_and_seeds_still_load(class_weight, fitted, tmp_path):
    path = save_model(fitted, tmp_path / "m")
    _rewrite_manifest(path, lambda m: m.update({"class_weight": class_weight, "random_state": None}))
    clf = load_model(path)
    assert clf.class_weight == class_weight
    assert clf.random_state is None
