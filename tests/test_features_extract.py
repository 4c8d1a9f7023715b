"""The feature matrix (triage.features.extract) on hand-built, real and synthetic histories."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.core.history import Dataset, History
from triage.features import catalogue
from triage.features.extract import candidate_features, extract_features, matrix_columns
from triage.loaders import load

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MONGODB = SHARED / "data" / "mongodb_demo.csv"

LEN = catalogue.feature_columns().index


def _history(sid, values, labels, *, timestamps=False, truth=None):
    n = len(values)
    return History(
        series_id=sid,
        commits=[f"{sid}-c{i}" for i in range(n)],
        values=np.asarray(values, dtype=float),
        labels=np.array(labels, dtype=object),
        timestamps=(
            np.datetime64("2024-01-01T00:00:00", "ns") + np.arange(n) * np.timedelta64(3600, "s")
            if timestamps
            else None
        ),
        truth_label=np.array(truth, dtype=object) if truth is not None else None,
    )


@pytest.fixture(scope="module")
def hand_dataset() -> Dataset:
    rng = np.random.default_rng(7)
    n = 60
    a = 100 + rng.normal(0, 1, n)
    a[20:] += 8  # a real step at 20
    a[45:] -= 5  # and at 45
    labels_a = [""] * n
    labels_a[20] = "true_positive"
    labels_a[45] = "true_positive"
    labels_a[33] = "false_positive"
    labels_a[21] = "not_triaged"  # right after a confirmed change: Pre is empty
    labels_a[0] = "false_positive"  # first commit: Pre is empty
    truth = [""] * n
    truth[20], truth[45], truth[33], truth[21], truth[0] = (
        "true_positive",
        "true_positive",
        "false_positive",
        "false_positive",
        "false_positive",
    )
    b = np.full(12, 5.0)  # constant series
    labels_b = [""] * 12
    labels_b[6] = "under_investigation"
    labels_b[11] = "false_positive"  # last commit: After = p alone
    c = np.array([1.0, 2.0, 4.0])  # shorter than the repeat length
    labels_c = ["", "true_positive", "false_positive"]
    return Dataset(
        [
            _history("a", a, labels_a, timestamps=True, truth=truth),
            _history("b", b, labels_b),
            _history("c", c, labels_c),
        ]
    )


def test_columns_dtypes_and_default_candidates(hand_dataset):
    df = extract_features(hand_dataset)
    assert list(df.columns) == matrix_columns()
    assert list(df.columns[:6]) == list(catalogue.METADATA_COLUMNS)
    assert df["series_id"].tolist() == ["a"] * 5 + ["b"] * 2 + ["c"] * 2
    assert df["index"].tolist() == [0, 20, 21, 33, 45, 6, 11, 1, 2]
    assert df["index"].dtype == np.int64
    assert df["commit"].tolist()[:2] == ["a-c0", "a-c20"]
    assert pd.api.types.is_datetime64_dtype(df["timestamp"])
    assert df.loc[df.series_id == "b", "timestamp"].isna().all()
    assert df.loc[df.series_id == "a", "timestamp"].notna().all()
    assert df["label"].tolist()[:3] == ["false_positive", "true_positive", "not_triaged"]
    assert df.loc[df.series_id == "a", "truth_label"].tolist()[2] == "false_positive"
    assert (df.loc[df.series_id != "a", "truth_label"] == "").all()
    feats = df[catalogue.feature_columns()]
    assert (feats.dtypes == np.float64).all()
    assert np.isfinite(feats.to_numpy()).all()  # empty, constant and short windows included


def test_window_lengths_follow_the_definitions(hand_dataset):
    df = extract_features(hand_dataset).set_index(["series_id", "index"])
    # series a: confirmed 20 and 45
    assert df.loc[("a", 33), "pre_series_length"] == 12  # [21, 32]
    assert df.loc[("a", 33), "after_series_length"] == 12  # [33, 44]
    assert df.loc[("a", 21), "pre_series_length"] == 0  # right after 20
    assert df.loc[("a", 20), "pre_series_length"] == 20  # p itself confirmed: Pre [0, 19]
    assert df.loc[("a", 20), "after_series_length"] == 25  # [20, 44]
    assert df.loc[("a", 0), "pre_series_length"] == 0
    assert df.loc[("b", 11), "after_series_length"] == 1
    fixed = extract_features(hand_dataset, window=0).set_index(["series_id", "index"])
    assert (fixed["after_series_length"] == 1).all()
    fixed3 = extract_features(hand_dataset, window=3).set_index(["series_id", "index"])
    assert fixed3.loc[("a", 33), "after_series_length"] == 4
    assert fixed3.loc[("b", 11), "after_series_length"] == 1  # capped by the series end


def test_rows_equal_single_candidate_vectors(hand_dataset):
    df = extract_features(hand_dataset, window=2)
    for _, row in df.iterrows():
        h = hand_dataset[row.series_id]
        vec = candidate_features(h.values, row["index"], h.confirmed(), 2)
        np.testing.assert_array_equal(row[catalogue.feature_columns()].to_numpy(dtype=float), vec)


def test_change_points_override(hand_dataset):
    # Declaring no confirmed change in series a widens every window.
    df = extract_features(hand_dataset, change_points={"a": []}).set_index(["series_id", "index"])
    assert df.loc[("a", 33), "pre_series_length"] == 33
    assert df.loc[("a", 33), "after_series_length"] == 27
    # Other series keep their labels.
    assert df.loc[("c", 2), "pre_series_length"] == 0  # c's confirmed change at 1
    with pytest.raises(ValueError, match="outside"):
        extract_features(hand_dataset, change_points={"a": [99]})


def test_candidates_and_names(hand_dataset):
    df = extract_features(
        hand_dataset, candidates={"a": [40, 10, 40]}, names=["hurst", "norm_mean"]
    )
    assert df["index"].tolist() == [10, 40]
    assert df["label"].tolist() == ["", ""]  # unlabelled commits may be described too
    assert list(df.columns[6:]) == ["pre_hurst", "after_hurst", "norm_mean_pre", "norm_mean_after"]
    full = extract_features(hand_dataset, candidates=[("a", 10), ("a", 40)])
    np.testing.assert_array_equal(
        df[list(df.columns[6:])].to_numpy(), full[list(df.columns[6:])].to_numpy()
    )
    with pytest.raises(KeyError, match="zzz"):
        extract_features(hand_dataset, candidates={"zzz": [1]})
    with pytest.raises(ValueError, match="outside"):
        extract_features(hand_dataset, candidates={"b": [12]})
    with pytest.raises(ValueError, match="unknown characteristic"):
        extract_features(hand_dataset, names=["nope"])
    with pytest.raises(ValueError, match="implementation"):
        extract_features(hand_dataset, implementation="turbo")
    with pytest.raises(ValueError, match="window"):
        extract_features(hand_dataset, window="fixed")


def test_non_finite_value_in_a_window_names_series_and_index():
    values = np.arange(30.0)
    values[12] = np.nan
    labels = [""] * 30
    labels[10] = "false_positive"
    labels[25] = "true_positive"
    labels[28] = "false_positive"
    ds = Dataset([_history("broken", values, labels)])
    with pytest.raises(ValueError, match=r"series 'broken', candidate index 10.*index 12"):
        extract_features(ds)
    # The NaN lies outside the windows of 28 (Pre starts after the change at 25).
    df = extract_features(ds, candidates={"broken": [28]})
    assert np.isfinite(df[catalogue.feature_columns()].to_numpy()).all()
    with pytest.raises(ValueError, match="non-finite"):
        candidate_features(np.array([1.0, np.inf, 2.0]), 2)


def test_no_candidates_gives_an_empty_matrix_with_the_contract_columns():
    ds = Dataset([_history("quiet", np.arange(5.0), [""] * 5)])
    df = extract_features(ds)
    assert df.empty and list(df.columns) == matrix_columns()
    assert df["index"].dtype == np.int64
    assert list(extract_features(Dataset([])).columns) == matrix_columns()


def test_parallel_equals_serial(hand_dataset):
    serial = extract_features(hand_dataset)
    parallel = extract_features(hand_dataset, n_jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)


def test_reference_implementation_agrees(hand_dataset):
    fast = extract_features(hand_dataset, window=5)
    ref = extract_features(hand_dataset, window=5, implementation="reference")
    cols = catalogue.feature_columns()
    np.testing.assert_allclose(ref[cols].to_numpy(), fast[cols].to_numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.shared
def test_real_mongodb_history():
    if not MONGODB.exists():
        pytest.skip(
            f"{MONGODB} is absent: the shared real data lives in ../shared beside the checkout"
        )
    ds = load(MONGODB)
    h = next(iter(ds))
    df = extract_features(ds)
    assert df["index"].tolist() == h.candidates().tolist() == [72, 165, 267, 410, 432, 448]
    assert df["label"].tolist() == [
        "not_triaged",
        "not_triaged",
        "true_positive",
        "true_positive",
        "false_positive",
        "false_positive",
    ]
    assert np.isfinite(df[catalogue.feature_columns()].to_numpy()).all()
    by_index = df.set_index("index")
    # Confirmed changes at 267 and 410: Pre of 432 is [411, 431], After [432, 506].
    assert by_index.loc[432, "pre_series_length"] == 21
    assert by_index.loc[432, "after_series_length"] == 75
    assert by_index.loc[267, "pre_series_length"] == 267
    assert by_index.loc[267, "after_series_length"] == 143
    ref = extract_features(ds, window=10, implementation="reference")
    fast = extract_features(ds, window=10)
    cols = catalogue.feature_columns()
    np.testing.assert_allclose(ref[cols].to_numpy(), fast[cols].to_numpy(), rtol=1e-6, atol=1e-8)


def test_synthetic_small_preset():
    from triage import synthetic  # (an import error is a failure, not a skip)

    ds = synthetic.generate("small", seed=0)
    df = extract_features(ds, window=5)
    assert len(df) == sum(len(h.candidates()) for h in ds)
    assert list(df.columns) == matrix_columns()
    assert np.isfinite(df[catalogue.feature_columns()].to_numpy()).all()
    assert set(df["truth_label"]) <= {"true_positive", "false_positive"}


def test_candidate_windows_and_pair_block():
    from triage.core.history import Dataset, History
    from triage.features.level_shift import PAIR_COLUMNS, pair_features, resolution

    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(10, 0.1, 100), rng.normal(12, 0.1, 100)]
    h = History("s", [f"c{i}" for i in range(200)], x, None)
    m = extract_features(Dataset([h]), candidates={"s": [30, 100, 150]}, candidate_windows=True, max_len=40, pair=True)
    assert list(m.columns[-len(PAIR_COLUMNS):]) == list(PAIR_COLUMNS)
    row = m[m["index"] == 100].iloc[0]
    # Pre = [31, 100) capped to 40 -> [60, 100); After = [100, 140)
    assert np.allclose(row[list(PAIR_COLUMNS)].to_numpy(float), pair_features(x[60:100], x[100:140], resolution(x)), equal_nan=True)
    assert row["pair_robust_shift"] > 10
    with pytest.raises(ValueError, match="adaptive"):
        extract_features(Dataset([h]), candidates={"s": [30]}, candidate_windows=True, window=5)
