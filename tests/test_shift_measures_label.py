"""A labelling model with the scale-free shift measures (``triage train --shift-measures``).

Such a model reads the ``pair_*`` columns of its own adaptive windows as well
as the paper's characteristics; ``triage label`` and ``triage score`` must
build exactly those rows for it, and the option is refused where it has no
meaning.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from helpers_cli import flat, invoke

from triage.core import labels
from triage.features.extract import extract_features
from triage.features.level_shift import PAIR_COLUMNS
from triage.inference import load_classifier, shift_measures
from triage.loaders import load


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("shift_hist")
    code, text = invoke(["synth", "--preset", "small", "--seed", "3", "--format", "csv", "--out", folder])
    assert code == 0, text
    return folder / "history.csv"


@pytest.fixture(scope="module")
def shift_model(history: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("shift_model") / "m"
    code, text = invoke(["train", "--data", history, "--model", "xgb", "--window", "adaptive", "--shift-measures",
                         "--monotone-shifts", "--no-track", "--out", out])
    assert code == 0, text
    return out


def test_the_model_lists_the_shift_measures_and_says_so(shift_model: Path, history: Path, tmp_path: Path) -> None:
    clf = load_classifier(shift_model)
    assert set(PAIR_COLUMNS) <= set(clf.feature_names_)
    assert shift_measures(clf)
    plain = tmp_path / "plain"
    code, text = invoke(["train", "--data", history, "--model", "xgb", "--no-track", "--out", plain])
    assert code == 0, text
    assert not shift_measures(load_classifier(plain))


def test_label_gives_the_model_the_shift_measures_of_its_adaptive_windows(shift_model: Path, history: Path,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "decisions.csv"
    code, text = invoke(["label", "--data", history, "--model", shift_model, "--which", "triaged", "--out", out,
                         "--show", "0"])
    assert code == 0, text
    decided = pd.read_csv(out)
    clf = load_classifier(shift_model)
    dataset = load(history)
    rows = extract_features(dataset, window="adaptive", pair=True,
                            candidates={h.series_id: h.indices_with(labels.TRIAGED) for h in dataset})
    expected = clf.predict_proba(rows[clf.feature_names_])[:, 1]
    got = decided.set_index(["series_id", "commit"]).loc[
        list(zip(rows["series_id"], rows["commit"], strict=True)), "p_true"].to_numpy(float)
    assert len(got) == len(rows) > 20
    np.testing.assert_allclose(got, expected, rtol=0, atol=5.1e-5)  # the file rounds P to 4 places
    # and the decisions agree with the human labels far better than chance
    truth = (rows["label"] == labels.TRUE_POSITIVE).to_numpy()
    assert ((expected >= clf.threshold_) == truth).mean() > 0.8


def test_score_builds_the_same_columns_for_such_a_model(shift_model: Path, tmp_path: Path) -> None:
    real = SHARED_DATA / "real" / "histories.csv.gz"
    if not real.is_file():
        pytest.skip(f"real histories {real} are absent (../shared beside the checkout)")
    frame = pd.read_csv(real)
    sid = frame["series_id"].iloc[0]
    one = frame[frame["series_id"] == sid]
    data = tmp_path / "one.csv"
    one.to_csv(data, index=False)
    cands = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", "binseg", "--out", cands])
    assert code == 0, text
    scored = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--model", shift_model, "--out", scored,
                         "--show", "0"])
    assert code == 0, text
    result = pd.read_csv(scored)
    assert len(result) == len(pd.read_csv(cands)) > 0
    judged = result["p_true"].notna()
    assert judged.any() and result.loc[judged, "p_true"].between(0, 1).all()


@pytest.mark.parametrize("extra", [["--window", "0"], ["--candidate-windows"]])
def test_shift_measures_outside_adaptive_windows_is_refused(history: Path, tmp_path: Path, extra: list[str]) -> None:
    code, text = invoke(["train", "--data", history, "--model", "xgb", "--shift-measures", *extra, "--no-track",
                         "--out", tmp_path / "m"])
    assert code == 2, text
    assert "--shift-measures" in flat(text)
    assert not (tmp_path / "m").exists()


def test_shift_measures_with_a_matrix_is_refused(history: Path, tmp_path: Path) -> None:
    matrix = tmp_path / "fm.parquet"
    extract_features(load(history), window="adaptive").to_parquet(matrix)
    code, text = invoke(["train", "--matrix", matrix, "--model", "xgb", "--shift-measures", "--no-track",
                         "--out", tmp_path / "m"])
    assert code == 2, text
    assert "--shift-measures" in flat(text) and "--matrix" in flat(text)
