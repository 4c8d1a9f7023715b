"""A feature matrix without ``series_id`` is refused by everything that splits by series.

It used to fall back to one group per row: the grouped hold-out then held out
single candidates, a series' other candidates stayed in training, and the
held-out scores were overstated without a word.
"""

from __future__ import annotations

import pytest
from helpers_cli import flat, invoke
from helpers_training import make_matrix

from triage.core.errors import InputError
from triage.features.matrix import training_data
from triage.features.selection import select_features
from triage.training.classifier import TriageClassifier


@pytest.fixture
def no_series():
    return make_matrix(40, 3, seed=1).drop(columns="series_id")


def test_training_data_names_the_missing_column(no_series):
    with pytest.raises(InputError, match=r"no 'series_id' column: the grouped hold-out"):
        training_data(no_series, source="m.parquet")
    # With the column the groups are the series, not the rows.
    td = training_data(make_matrix(40, 3, seed=1))
    assert len(set(td.groups)) == 40


def test_classifier_fit_and_selection_refuse_it(no_series):
    with pytest.raises(InputError, match="'series_id'"):
        TriageClassifier(model="rf").fit(no_series)
    with pytest.raises(ValueError, match="'series_id'"):  # selection checked it already
        select_features(no_series)


def test_train_from_such_a_matrix_is_a_clear_error(tmp_path, no_series):
    matrix = tmp_path / "noseries.parquet"
    no_series.to_parquet(matrix)
    code, out = invoke(["train", "--matrix", matrix, "--out", tmp_path / "model", "--no-track", "--model", "rf"])
    assert code == 2, out
    assert f"{matrix}: feature matrix has no 'series_id' column" in flat(out)
    assert not (tmp_path / "model").exists()
