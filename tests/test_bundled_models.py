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
    # the online default decides commit p once K = 4 more commits have arrived (chosen on real validation data)
    assert str(clf.manifest_["window"]) == ("adaptive" if name == ADAPTIVE_MODEL else "4")


def test_adaptive_model_learned_real_noise():
    # Its synthetic-`default` predecessor did not carry over to real histories
    # (BENCHMARKS.md, "Batch labelling on real data"); models/README.md says which preset.
    manifest = load_classifier(MODELS_DIR / ADAPTIVE_MODEL).manifest_
    assert manifest["extra"]["source"] == {"preset": "realnoise", "seed": 0}
    # its threshold was chosen on the real validation part (BENCHMARKS.md, the rule for
    # default-adaptive's threshold): the mean balanced accuracy over four detectors peaked there
    assert manifest["n_features"] == 44 and manifest["threshold"]["policy"] == "0.75"


def test_adaptive_model_reproduces_mongodbs_triage(shared_data):
    dataset = load(shared_data / "mongodb_demo.csv")
    decisions = label_candidates(dataset, load_classifier(MODELS_DIR / ADAPTIVE_MODEL), which="triaged")
    assert sorted(decisions["index"]) == [267, 410, 432, 448]
    assert (decisions["classification"] == decisions["label"]).all()
    assert decisions.loc[decisions["label"] == labels.TRUE_POSITIVE, "p_true"].min() > 0.6


# --------------------------------------------------------------------------- found by name


def _bundled_dirs():
    from triage.model_lookup import bundled_models_dir

    return sorted(p.name for p in bundled_models_dir().iterdir() if (p / "manifest.json").is_file())


@pytest.mark.parametrize("name", _bundled_dirs())
def test_every_bundled_directory_is_found_by_its_name(name):
    from triage.model_lookup import bundled_model, resolve_model

    assert resolve_model(name) == bundled_model(name) == MODELS_DIR / name
    assert (resolve_model(name) / "manifest.json").is_file()


def test_default_means_the_model_for_the_job_and_a_path_is_itself(tmp_path):
    from triage.core.errors import InputError
    from triage.model_lookup import resolve_model

    assert resolve_model(None, "alerts").name == ADAPTIVE_MODEL
    assert resolve_model("default", "online").name == ONLINE_MODEL
    assert resolve_model(str(MODELS_DIR / ONLINE_MODEL)) == MODELS_DIR / ONLINE_MODEL
    with pytest.raises(InputError, match="not a model directory"):
        resolve_model(str(tmp_path / "missing-model"))
    with pytest.raises(InputError, match="no bundled model of this name"):
        resolve_model("default-nothing")


def test_registry_uris_go_to_the_tracking_module(monkeypatch, tmp_path):
    from triage.model_lookup import resolve_model
    from triage.training import tracking

    seen = []
    monkeypatch.setattr(tracking, "resolve_registry_uri", lambda uri: seen.append(uri) or tmp_path, raising=False)
    assert resolve_model("models:/triage-xgb-adaptive@champion") == tmp_path
    assert seen == ["models:/triage-xgb-adaptive@champion"]

