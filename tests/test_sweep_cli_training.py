"""``train`` / ``evaluate --features FILE``: a bad feature-set file is named, and found before the work.

A feature set naming a column the matrix lacks was reported as the *data's*
problem ("small: feature matrix lacks column(s) x"), and a file that is not a
feature set at all was read only after the feature extraction.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_cli import flat, invoke
from helpers_training import make_matrix


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fs") / "matrix.parquet"
    make_matrix(100, 3, seed=7).to_parquet(path)
    return path


@pytest.fixture
def bad_data(tmp_path: Path) -> Path:
    """Data whose first row is bad: an error about --features shows it was read first."""
    path = tmp_path / "data.csv"
    path.write_text("series_id,commit,value\ns,c1,not-a-number\n")
    return path


@pytest.mark.parametrize("command", ["train", "evaluate"])
@pytest.mark.parametrize(
    ("content", "problem"), [("{not json", "not valid JSON"), ("[]", "must be a non-empty list")]
)
def test_a_feature_set_that_cannot_be_read_is_refused_before_the_data(
    command, content, problem, bad_data, tmp_path
):
    features = tmp_path / "fs.json"
    features.write_text(content)
    out = ["--out", tmp_path / "model"] if command == "train" else []
    code, output = invoke([command, "--data", bad_data, "--features", features, "--no-track", *out])
    assert code == 2, output
    assert str(features) in flat(output) and problem in flat(output)
    assert "not-a-number" not in output


def test_a_feature_set_naming_a_column_the_matrix_lacks_names_the_feature_set(
    matrix_file, tmp_path
):
    features = tmp_path / "fs.json"
    features.write_text(json.dumps({"names": ["pre_mean", "no_such_column"]}))
    out = tmp_path / "model"
    code, output = invoke(
        ["train", "--matrix", matrix_file, "--features", features, "--out", out, "--no-track"]
    )
    assert code == 2, output
    assert f"error: {features}: names column(s) the feature matrix lacks: no_such_column" in flat(
        output
    )
    assert not out.exists()


def edited_matrix(source: Path, target: Path, row: int, column: str, value: str) -> Path:
    import pandas as pd

    frame = pd.read_parquet(source).astype({column: object})
    frame.loc[row, column] = value
    if target.suffix == ".csv":
        frame.to_csv(target, index=False)
    else:  # Parquet holds one type a column: all text, as a hand-made table would
        frame.astype({column: str}).to_parquet(target)
    return target


@pytest.mark.parametrize(("suffix", "row"), [(".csv", "row 5"), (".parquet", "row 4")])
@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("label", "maybe", "unknown label 'maybe'"),
        ("label", "True_Positive", "unknown label 'True_Positive'"),
        ("pre_mean", "abc", "pre_mean 'abc' is not a number"),
    ],
)
def test_a_matrix_cell_that_is_not_a_label_or_a_number_is_named_with_its_row(
    matrix_file, suffix, row, column, value, problem, tmp_path
):
    # An unknown label made the row silently untriaged; a text feature was named without its row.
    bad = edited_matrix(matrix_file, tmp_path / f"m{suffix}", 3, column, value)
    out = tmp_path / "model"
    code, output = invoke(["train", "--matrix", bad, "--out", out, "--no-track"])
    assert code == 2, output
    assert f"error: {bad}, {row}: {problem}" in flat(output)
    assert not out.exists()
