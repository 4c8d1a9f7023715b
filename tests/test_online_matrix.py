"""Training rows for the online model: positives, ordinary negatives, Pre bounds."""

from __future__ import annotations

import numpy as np
import pytest

from triage.core import labels
from triage.features.extract import extract_features
from triage.training.online_matrix import online_matrix


def test_rows_are_confirmed_points_false_alerts_and_ordinary_commits(small_dataset):
    matrix = online_matrix(small_dataset, ordinary_per_series=5, seed=0)
    for h in small_dataset:
        rows = matrix[matrix["series_id"] == h.series_id]
        idx = set(rows["index"])
        assert set(h.confirmed()) <= idx
        assert set(np.flatnonzero(h.labels == labels.FALSE_POSITIVE)) <= idx
        # untriaged candidates are never training rows
        assert not idx & set(h.indices_with(labels.UNTRIAGED))
        positives = set(rows.loc[rows["label"] == labels.TRUE_POSITIVE, "index"])
        assert positives == set(h.confirmed())
        ordinary = idx - set(h.candidates())
        assert len(ordinary) == min(5, len(h) - 1 - len(h.candidates()))
    assert set(matrix["label"]) == {labels.TRUE_POSITIVE, labels.FALSE_POSITIVE}


def test_window_zero_features_with_pre_bounded_by_positives(small_dataset):
    matrix = online_matrix(small_dataset, ordinary_per_series=3, use_truth=True, seed=1)
    h = next(iter(small_dataset))
    rows = matrix[matrix["series_id"] == h.series_id]
    direct = extract_features(
        small_dataset,
        candidates=[(h.series_id, int(i)) for i in rows["index"]],
        window=0,
        change_points={h.series_id: h.true_change_points()},
    )
    feature_cols = [c for c in direct.columns if c.startswith(("pre_", "after_", "norm_"))]
    np.testing.assert_array_equal(rows[feature_cols].to_numpy(), direct[feature_cols].to_numpy())
    assert (rows["after_series_length"] == 1).all()  # After is the commit alone


def test_sampling_is_seeded_and_zero_means_candidates_only(small_dataset):
    a = online_matrix(small_dataset, ordinary_per_series=4, seed=3)
    b = online_matrix(small_dataset, ordinary_per_series=4, seed=3)
    assert a["index"].tolist() == b["index"].tolist()
    paper = online_matrix(small_dataset, ordinary_per_series=0)
    counts = small_dataset.label_counts()
    assert len(paper) == counts[labels.TRUE_POSITIVE] + counts[labels.FALSE_POSITIVE]


def test_bad_arguments(small_dataset):
    with pytest.raises(ValueError, match="ordinary_per_series"):
        online_matrix(small_dataset, ordinary_per_series=-1)


def _detected(model_dir, dataset, threshold: float | None = None) -> int:
    from triage.online.loop import OnlineTriage

    kwargs = {} if threshold is None else {"threshold": threshold}
    return len(OnlineTriage.from_model_dir(model_dir, explain="none", **kwargs).replay(dataset))


def test_train_window_zero_learns_the_per_commit_question(tmp_path):
    # The CLI trains online models on ordinary commits too; the paper's
    # candidates-only rows make a loop that fires on many ordinary commits.
    from typer.testing import CliRunner

    from triage.cli.app import app
    from triage.synthetic import generate

    # The online model's F1 threshold is learnt on one grouped tenth of the small preset's
    # series, a handful of changes (train warns: fewer than 20 positives): measured over seeds
    # 0-5 it lay between 0.11 and 0.61 and the alarms between 8 and 865 (26 true changes), and
    # leaving out the rows no model is asked about (not scorable, thirty-third session) moved
    # seeds 1 and 2 from 0.53 / 0.59 to 0.13 / 0.38 (28 / 22 alarms to 880 / 308). What the
    # ordinary commits do is compared at one threshold, the paper's 0.5: 23-57 alarms against
    # its 595-880 at every seed.
    runner = CliRunner()
    common = ["train", "--preset", "small", "--window", "0", "--no-track", "--test-size", "0"]
    for seed in (0, 1, 2):
        result = runner.invoke(app, [*common, "--seed", str(seed), "--out", str(tmp_path / f"online{seed}")])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, [*common, "--ordinary-per-series", "0", "--out", str(tmp_path / "paper")])
    assert result.exit_code == 0, result.output

    from triage.training.model_files import load_model

    assert load_model(tmp_path / "online0").manifest_["threshold"]["policy"] == "fbeta:1"
    assert load_model(tmp_path / "paper").manifest_["threshold"]["policy"] == "0.5"

    fresh = generate("small", seed=7)
    truth = sum(len(h.true_change_points()) for h in fresh)
    online = float(np.median([_detected(tmp_path / f"online{seed}", fresh, 0.5) for seed in (0, 1, 2)]))
    paper = _detected(tmp_path / "paper", fresh)  # its own threshold: 0.5
    assert 0.25 * truth <= online <= 4 * truth, (online, truth)
    assert paper > 4 * truth and online < paper / 4, (online, paper, truth)
