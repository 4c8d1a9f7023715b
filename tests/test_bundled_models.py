"""The bundled models: load safely, stay small, and do what models/README.md says."""

from __future__ import annotations

import pytest

from triage.batch_label import label_candidates
from triage.cli.demo import ADAPTIVE_MODEL, MODELS_DIR, ONLINE_MODEL
from triage.core import labels
from triage.inference import load_classifier
from triage.loaders import load


@pytest.mark.parametrize("name", [ADAPTIVE_MODEL, ONLINE_MODEL])
def test_bundled_model_loads_verified_and_is_small(name):
    path = MODELS_DIR / name
    size = sum(f.stat().st_size for f in path.iterdir())
    assert size < 5 * 2**20, f"{name} is {size / 2**20:.1f} MiB"
    clf = load_classifier(path)  # verifies checksums and library versions
    assert str(clf.manifest_["window"]) == ("adaptive" if name == ADAPTIVE_MODEL else "0")


def test_adaptive_model_reproduces_mongodbs_triage(shared_data):
    dataset = load(shared_data / "mongodb_demo.csv")
    decisions = label_candidates(dataset, load_classifier(MODELS_DIR / ADAPTIVE_MODEL), which="triaged")
    assert sorted(decisions["index"]) == [267, 410, 432, 448]
    assert (decisions["classification"] == decisions["label"]).all()
    assert decisions.loc[decisions["label"] == labels.TRUE_POSITIVE, "p_true"].min() > 0.6
