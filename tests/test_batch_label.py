"""Batch labelling of untriaged alerts (triage.batch_label, `triage label`).

Also home of :func:`trained_model`, the small models the other test modules of
triage.scoring / explain / report import: until a bundled default model
exists, they are trained here once per test process on the synthetic
``small`` preset, enlarged to 400 series because the preset's 40 series hold
only ~80 triaged candidates, too few for a model that generalises to the
untriaged ones.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from triage.batch_label import OUTPUT_COLUMNS, PUBLISHED_HEADER, agreement, label_candidates
from triage.cli.app import app
from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import History
from triage.features.catalogue import N_CHARACTERISTICS, normalised_moments
from triage.features.fast import window_characteristics
from triage.inference import ALL_FEATURES, candidate_matrix, load_classifier, point_features
from triage.loaders import load, write_long
from triage.synthetic import generate, preset_config

TRAIN_CONFIG = preset_config("small", n_series=400)
MODEL_PARAMS = {"rf": {"n_estimators": 100}, "xgb": {"n_estimators": 60, "max_depth": 4}, "svm": {}}


def training_matrix() -> pd.DataFrame:
    """Feature matrix of the triaged candidates of the enlarged small preset (seed 0)."""
    dataset = generate(TRAIN_CONFIG, seed=0)
    return candidate_matrix(dataset, labels.TRIAGED)


@functools.cache
def _matrix() -> pd.DataFrame:
    return training_matrix()


@functools.cache
def trained_model(kind: str = "rf") -> Path:
    """A model directory (rf, xgb or svm) trained through training.pipeline, once per process."""
    from triage.training.pipeline import train

    root = Path(tempfile.mkdtemp(prefix="triage-test-model-"))
    atexit.register(shutil.rmtree, root, True)
    train(_matrix(), root / kind, model=kind, window="adaptive", test_size=0, track=False,
          model_params=MODEL_PARAMS[kind], random_state=0)
    return root / kind


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return trained_model("rf")


@pytest.fixture(scope="module")
def clf(model_dir):
    return load_classifier(model_dir)


runner = CliRunner()


# --------------------------------------------------------------------------- windows and features


def test_windows_are_bounded_by_neighbouring_confirmed_change_points():
    rng = np.random.default_rng(3)
    values = np.r_[rng.normal(10, 1, 30), rng.normal(20, 1, 30), rng.normal(15, 1, 40)]
    commit_labels = np.full(100, "", dtype=object)
    commit_labels[[30, 60]] = labels.TRUE_POSITIVE
    commit_labels[45] = labels.NOT_TRIAGED
    commit_labels[80] = labels.UNDER_INVESTIGATION
    h = History("s", [f"c{i}" for i in range(100)], values, commit_labels)
    rows = point_features(h, [45, 80])
    nc = N_CHARACTERISTICS
    # Candidate 45 sits between confirmed 30 and 60: Pre = [31, 44], After = [45, 59].
    np.testing.assert_allclose(rows.loc[0, ALL_FEATURES[:nc]].to_numpy(float), window_characteristics(values[31:45]))
    np.testing.assert_allclose(rows.loc[0, ALL_FEATURES[nc:2 * nc]].to_numpy(float), window_characteristics(values[45:60]))
    np.testing.assert_allclose(rows.loc[0, ALL_FEATURES[2 * nc:]].to_numpy(float),
                               normalised_moments(values[31:45], values[45:60]))
    # Candidate 80: Pre = [61, 79], After runs to the end of the series.
    np.testing.assert_allclose(rows.loc[1, ALL_FEATURES[nc:2 * nc]].to_numpy(float), window_characteristics(values[80:]))
    assert rows["pre_series_length"].tolist() == [14, 19]
    assert rows["after_series_length"].tolist() == [15, 20]
    assert rows["commit"].tolist() == ["c45", "c80"]


def test_point_features_keep_the_requested_order_and_repeats():
    from triage.features.extract import extract_features

    dataset = generate("small", seed=0)
    h = max(dataset, key=lambda s: len(s.candidates()))
    wanted = [int(h.candidates()[-1]), 3, int(h.candidates()[0]), 3]
    rows = point_features(h, wanted)
    assert rows["index"].tolist() == wanted
    reference = extract_features(dataset, candidates={h.series_id: wanted}).set_index("index")
    np.testing.assert_array_equal(rows[list(ALL_FEATURES)].to_numpy(), reference.loc[wanted, list(ALL_FEATURES)].to_numpy())
    # Other confirmed change points than the labels: the windows move.
    moved = point_features(h, [wanted[0]], confirmed=[wanted[0] - 2])
    assert moved.loc[0, "pre_series_length"] == 1


# --------------------------------------------------------------------------- synthetic ground truth


def test_untriaged_accuracy_well_above_chance_on_synthetic(clf, tmp_path):
    # Unseen series with 15 % of the candidates left untriaged; ground truth in truth_label.
    path = write_long(generate(preset_config("small", n_series=300, not_triaged_share=0.15), seed=8),
                      tmp_path / "history.csv")
    dataset = load(path)
    decisions = label_candidates(dataset, clf, which="untriaged", explain_top=0)
    assert set(decisions["label"]) <= labels.UNTRIAGED
    stats = agreement(decisions, "truth_label")
    assert stats["n"] >= 60
    majority = max((decisions["truth_label"] == labels.TRUE_POSITIVE).mean(),
                   (decisions["truth_label"] == labels.FALSE_POSITIVE).mean())
    # Measured 0.755 on 102 candidates (majority class 0.51).
    assert stats["accuracy"] >= majority + 0.1, stats
    assert stats["sensitivity"] > 0.5 and stats["specificity"] > 0.5, stats


def test_model_reproduces_the_triaged_candidates_it_learned_from(clf):
    decisions = label_candidates(generate(TRAIN_CONFIG, seed=0), clf, which="triaged", explain_top=0)
    stats = agreement(decisions, "label")
    assert stats["n"] > 600
    assert stats["accuracy"] >= 0.95, stats


def test_probabilities_and_decisions_are_consistent(clf):
    dataset = generate(preset_config("small", n_series=60, not_triaged_share=0.3), seed=5)
    decisions = label_candidates(dataset, clf, which="all", explain_top=2)
    np.testing.assert_allclose(decisions["p_false"] + decisions["p_true"], 1.0)
    called = decisions["p_true"] >= clf.threshold_
    assert (decisions["classification"] == np.where(called, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE)).all()
    assert decisions["explanation"].str.count("; ").eq(1).all()
    strict = label_candidates(dataset, clf, which="all", threshold=0.99, explain_top=0)
    assert (strict["classification"] == labels.TRUE_POSITIVE).sum() <= called.sum()


# --------------------------------------------------------------------------- CLI and the real demo file


def test_cli_labels_the_mongodb_demo_end_to_end(shared_data, model_dir, tmp_path):
    out = tmp_path / "decisions.csv"
    result = runner.invoke(app, ["label", "--data", str(shared_data / "mongodb_demo.csv"),
                                 "--model", str(model_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out, keep_default_na=False)
    assert tuple(frame.columns) == OUTPUT_COLUMNS
    # The demo's two not_triaged candidates, at rows 72 and 165 of the file.
    assert frame["commit"].tolist() == [72, 165]
    assert set(frame["label"]) == {labels.NOT_TRIAGED}
    assert set(frame["classification"]) <= {labels.TRUE_POSITIVE, labels.FALSE_POSITIVE}
    np.testing.assert_allclose(frame["p_false"] + frame["p_true"], 1.0, atol=2e-4)
    assert (frame["explanation"].str.len() > 0).all()

    triaged = tmp_path / "triaged.csv"
    result = runner.invoke(app, ["label", "--data", str(shared_data / "mongodb_demo.csv"), "--model",
                                 str(model_dir), "--which", "triaged", "--out", str(triaged)])
    assert result.exit_code == 0, result.output
    assert "agreement with human labels on 4 candidates" in result.output
    assert sorted(pd.read_csv(triaged)["commit"]) == [267, 410, 432, 448]


def test_cli_published_layout(shared_data, model_dir, tmp_path):
    out = tmp_path / "classified_points.csv"
    result = runner.invoke(app, ["label", "--data", str(shared_data / "mongodb_demo.csv"), "--model",
                                 str(model_dir), "--format", "published", "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines[0] == ";".join(f'"{h}"' for h in PUBLISHED_HEADER)
    commit, label, p_false, p_true, cls = lines[1].split(";")
    assert (commit, label) == ("72", "not_triaged") and cls in ("TRUE", "FALSE")
    assert abs(float(p_false) + float(p_true) - 1) < 2e-3


def test_synthetic_file_round_trip_through_the_cli(model_dir, tmp_path):
    path = write_long(generate(preset_config("small", n_series=30, not_triaged_share=0.4), seed=2),
                      tmp_path / "history.csv")
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["label", "--data", str(path), "--model", str(model_dir), "--out", str(out),
                                 "--explain", "0"])
    assert result.exit_code == 0, result.output
    assert "agreement with ground truth" in result.output
    frame = pd.read_csv(out, keep_default_na=False)
    expected = load(path).label_counts()
    assert len(frame) == expected[labels.NOT_TRIAGED] + expected[labels.UNDER_INVESTIGATION]
    assert (frame["explanation"] == "").all()


def test_missing_model_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such model directory"):
        load_classifier(tmp_path / "nope")


def test_a_fixed_window_model_gets_fixed_windows(clf, tmp_path):
    from triage.inference import model_window
    from triage.training.model_files import save_model

    assert model_window(clf) == "adaptive"
    fixed = load_classifier(save_model(clf, tmp_path / "w2", window=2))
    assert model_window(fixed) == 2
    dataset = generate(preset_config("small", n_series=20, not_triaged_share=0.5), seed=3)
    adaptive = label_candidates(dataset, clf, which="untriaged", explain_top=0)
    w2 = label_candidates(dataset, fixed, which="untriaged", explain_top=0)
    assert (w2[["series_id", "commit"]].to_numpy() == adaptive[["series_id", "commit"]].to_numpy()).all()
    # After = [p, p + 2] at most: other features, other probabilities.
    assert not np.allclose(w2["p_true"], adaptive["p_true"])
    rows = candidate_matrix(dataset, labels.UNTRIAGED, window=2)
    assert rows["after_series_length"].max() <= 3
