"""Loaders: the layouts people have, round trips, and every bad-input case."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.loaders import UnsortedTimestampsWarning, load, write_long


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- real files


def test_mongodb_demo_loads(shared_data):
    dataset = load(shared_data / "mongodb_demo.csv")
    assert len(dataset) == 1
    history = dataset["mongodb_demo"]
    assert len(history) == 507
    assert dataset.label_counts() == {
        "true_positive": 2,
        "false_positive": 2,
        "not_triaged": 2,
        "under_investigation": 0,
    }
    # Line 74 of the file (header = line 1) is the first not_triaged row: position 72.
    assert history.labels[72] == labels.NOT_TRIAGED
    assert history.values[72] == pytest.approx(559.373091560733)
    assert list(history.confirmed()) == [267, 410]


def test_tigerbeetle_json_loads(shared_data):
    history = next(iter(load(shared_data / "tigerbeetle.json")))
    assert len(history) == 365
    assert history.values[10] == 15672  # the spike the README mentions
    assert history.commits[15] == "15"


def test_otava_csv_one_series_per_metric(tmp_path):
    path = write(
        tmp_path,
        "time,commit,throughput,latency,branch\n"
        "2024-01-01 10:00:00 +0000,a1,10,1.5,main\n"
        "2024-01-02 10:00:00 +0000,b2,11,,main\n"
        "2024-01-03 10:00:00 +0000,c3,12,1.7,main\n",
    )
    dataset = load(path)
    assert dataset.series_ids == ["throughput@main", "latency@main"]  # the branch is part of the id
    assert list(dataset["latency@main"].commits) == ["a1", "c3"]  # empty cell = not measured
    assert dataset["throughput@main"].timestamps[2] == np.datetime64("2024-01-03T10:00:00")
    assert load(path, branch="main").series_ids == ["throughput", "latency"]


def test_otava_bad_metric_value_names_row(tmp_path):
    path = write(tmp_path, "time,commit,throughput\n2024-01-01,a,10\n2024-01-02,b,oops\n2024-01-03,c,12\n")
    with pytest.raises(InputError, match=r"row 3: .*'oops' is not a number"):
        load(path)


def test_several_measurements_are_aggregated(tmp_path):
    path = write(
        tmp_path,
        "series_id,commit,value,label\ns,a,1,\ns,a,2,\ns,a,6,fixed\ns,b,5,\n",
    )
    assert list(load(path)["s"].values) == [3.0, 5.0]
    assert list(load(path, aggregate="median")["s"].values) == [2.0, 5.0]
    p90 = load(path, aggregate="p90")["s"]
    assert p90.values[0] == pytest.approx(np.quantile([1, 2, 6], 0.9))
    assert list(p90.n_measurements) == [3, 1]
    assert p90.labels[0] == labels.TRUE_POSITIVE  # Perfherder "fixed"


def test_interleaved_series_are_separated(tmp_path):
    path = write(tmp_path, "series_id,commit,value\nx,1,1\ny,1,10\nx,2,2\ny,2,20\n")
    dataset = load(path)
    assert list(dataset["x"].values) == [1, 2] and list(dataset["y"].values) == [10, 20]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("invalid", labels.FALSE_POSITIVE),
        ("Fixed", labels.TRUE_POSITIVE),
        ("backedout", labels.TRUE_POSITIVE),
        ("acknowledged", labels.TRUE_POSITIVE),
        ("untriaged", labels.NOT_TRIAGED),
        ("investigating", labels.UNDER_INVESTIGATION),
        ("true_positive", labels.TRUE_POSITIVE),
        ("", labels.NONE),
    ],
)
def test_perfherder_statuses_map(raw, expected):
    assert labels.normalise_label(raw) == expected


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", r"file is empty"),
        ("series_id,commit,value\n", r"header but no data rows"),
        ("series_id,value\ns,1\n", r"row 1: missing column 'commit'"),
        ("series_id,commit,value\ns,a,1\ns,b,abc\n", r"row 3: value 'abc' is not a number"),
        ("series_id,commit,value\ns,a,1\ns,b,inf\n", r"row 3: value 'inf' is not finite"),
        ("series_id,commit,value\ns,a,1\ns,b,\n", r"row 3: value is missing"),
        ("series_id,commit,value\ns,a,1\ns,b,nan\n", r"row 3: value 'nan' is not a number"),
        ("series_id,commit,value,label\ns,a,1,\ns,b,2,maybe\n", r"row 3: unknown label 'maybe'"),
        ("series_id,commit,value\ns,,1\n", r"row 2: commit is missing"),
        ("series_id,commit,timestamp,value\ns,a,2024-01-02,1\ns,b,2024-01-01,2\n", r"row 3: timestamps of series 's' go backwards"),
        ("series_id,commit,timestamp,value\ns,a,2024-01-02,1\ns,b,yesterday,2\n", r"row 3: timestamp 'yesterday' is not a date"),
        ("series_id,commit,value,label\ns,a,1,fixed\ns,a,2,invalid\n", r"row 3: label 'false_positive' disagrees"),
    ],
)
def test_bad_long_csv_is_rejected_with_row(tmp_path, text, pattern):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=pattern) as info:
        load(path, layout="long")
    assert str(path) in str(info.value)


def test_unsorted_timestamps_sorted_on_request(tmp_path):
    path = write(
        tmp_path,
        "series_id,commit,timestamp,value\ns,a,2024-01-02,1\ns,b,2024-01-01,2\ns,c,2024-01-03,3\n",
    )
    with pytest.warns(UnsortedTimestampsWarning, match="row 3"):
        history = load(path, sort_timestamps=True)["s"]
    assert list(history.commits) == ["b", "a", "c"]
    assert list(history.values) == [2, 1, 3]


def test_mongodb_layout_bad_value(tmp_path):
    path = write(tmp_path, '"Value";"MongoDB.Label"\n1.5;""\nx;"true_positive"\n', "m.csv")
    with pytest.raises(InputError, match=r"m.csv, row 3: value 'x' is not a number"):
        load(path)


def test_mongodb_layout_missing_label_column(tmp_path):
    path = write(tmp_path, '"Value";"Other"\n1.5;""\n', "m.csv")
    with pytest.raises(InputError, match=r"missing column 'MongoDB.Label'"):
        load(path, layout="mongodb")


def test_unknown_layout_header(tmp_path):
    path = write(tmp_path, "a,b\n1,2\n")
    with pytest.raises(InputError, match=r"row 1: cannot tell the layout"):
        load(path)


def test_missing_file_and_empty_dir(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="cannot tell the layout of this directory"):
        load(tmp_path)


def test_bad_parquet_row_is_named(tmp_path):
    path = tmp_path / "h.parquet"
    pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1.0, np.inf]}).to_parquet(path)
    with pytest.raises(InputError, match=r"h.parquet, row 2: value 'inf' is not finite"):
        load(path)


def test_json_list_rejects_null(tmp_path):
    path = write(tmp_path, "[1, 2, null]", "s.json")
    with pytest.raises(InputError, match=r"row 3: value is missing"):
        load(path)


# --------------------------------------------------------------------------- writing


def test_write_is_atomic_and_keeps_old_file_on_failure(tmp_path, monkeypatch):
    dataset = Dataset([History("s", ["a", "b"], [1.0, 2.0], [labels.NONE, labels.TRUE_POSITIVE])])
    path = write_long(dataset, tmp_path / "out.csv")
    before = path.read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(OSError, match="disk full"):
        write_long(dataset, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temp file left behind


# --------------------------------------------------------------------------- properties

labels_st = st.sampled_from([lab for lab in labels.CANONICAL])
# Usable values: 0 or 1e-100 <= |x| <= 1e12 (triage.core.values refuses subnormal-scale magnitudes).
finite = st.one_of(st.just(0.0), st.floats(min_value=1e-100, max_value=1e12) | st.floats(min_value=-1e12, max_value=-1e-100))


@st.composite
def datasets(draw):
    n_series = draw(st.integers(1, 3))
    histories = []
    for s in range(n_series):
        n = draw(st.integers(1, 12))
        values = draw(st.lists(finite, min_size=n, max_size=n))
        commit_labels = draw(st.lists(labels_st, min_size=n, max_size=n))
        stamps = np.datetime64("2024-01-01T00:00:00") + np.sort(
            np.array(draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n)))
        ).astype("timedelta64[s]")
        histories.append(
            History(f"series {s}", [f"c{i}" for i in range(n)], values, commit_labels, timestamps=stamps.astype("datetime64[ns]"))
        )
    return Dataset(histories)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dataset=datasets(), suffix=st.sampled_from([".csv", ".parquet"]))
def test_long_layout_round_trip(tmp_path, dataset, suffix):
    path = write_long(dataset, tmp_path / f"rt{suffix}")
    back = load(path)
    assert back.series_ids == dataset.series_ids
    for a in dataset:
        b = back[a.series_id]
        assert list(b.commits) == list(a.commits)
        np.testing.assert_allclose(b.values, a.values, rtol=1e-15)
        assert list(b.labels) == list(a.labels)
        assert (b.timestamps == a.timestamps).all()


bad_cells = st.sampled_from(["abc", "inf", "-inf", "", "1e999", "nan", "1,5"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(finite, min_size=1, max_size=10),
    position=st.integers(0, 9),
    bad=bad_cells,
)
def test_malformed_value_is_rejected_at_its_row(tmp_path, values, position, bad):
    position = position % len(values)
    cells = [repr(v) for v in values]
    cells[position] = f'"{bad}"'
    lines = ["series_id,commit,value"] + [f"s,c{i},{c}" for i, c in enumerate(cells)]
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        load(path, layout="long")
    assert info.value.row == position + 2
    assert "value" in info.value.problem


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=st.text(min_size=1, max_size=12).filter(lambda t: t.strip() and "\n" not in t and "\r" not in t))
def test_unknown_labels_are_rejected(tmp_path, label):
    try:
        labels.normalise_label(label)
        return  # a known spelling
    except KeyError:
        pass
    frame = pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1, 2], "label": ["", label]})
    path = tmp_path / "labels.parquet"
    frame.to_parquet(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"row 2: unknown label"):
            load(path)


# --------------------------------------------------------------------------- timestamps (one rule, triage.core.timestamps)

TIMESTAMP_CASES = [
    # (input, instant in ns since the epoch UTC, or None for "rejected")
    ("2024-05-01T12:00:00Z", 1714564800 * 10**9),
    ("2024-05-01T12:00:00", 1714564800 * 10**9),  # naive = UTC
    ("2024-05-01 14:00:00+02:00", 1714564800 * 10**9),
    ("2024-05-01T14:00:00+0200", 1714564800 * 10**9),
    ("2024-05-01T12:00:00 UTC", 1714564800 * 10**9),  # not ISO: the general parser
    ("2024-05-01T12:00:00.123456789Z", 1714564800 * 10**9 + 123456789),  # nanoseconds kept
    ("20240501", 1714521600 * 10**9),  # ISO basic form: a date, not seconds
    ("May 1 2024", 1714521600 * 10**9),
    ("01/05/2024", 1704412800 * 10**9),  # month first
    ("1714564800", 1714564800 * 10**9),  # numeric text: seconds since the epoch
    ("1714564800.5", 1714564800 * 10**9 + 500_000_000),
    ("1714564800000", None),  # milliseconds are not guessed: outside the range
    ("3000-01-01", None),
    ("yesterday", None),
]


@pytest.mark.parametrize(("text", "expected"), TIMESTAMP_CASES)
def test_one_timestamp_rule_for_files_and_the_online_loop(text, expected):
    from triage.core.timestamps import parse_column, to_ns
    from triage.online.loop import to_ns as loop_to_ns

    instants, missing, bad = parse_column(pd.Series([text, " "]))
    assert list(missing) == [False, True]
    if expected is None:
        assert bad[0]
        with pytest.raises(ValueError):
            to_ns(text)
    else:
        assert not bad[0] and int(instants[0].astype(np.int64)) == expected
        assert to_ns(text) == loop_to_ns(text) == expected


def test_timestamp_numbers_objects_and_missing_values():
    import datetime as dt

    from triage.core.timestamps import parse_column, to_ns

    s = 1714564800
    for value in (s, float(s), np.int64(s), np.float64(s), np.datetime64("2024-05-01T12:00:00"),
                  dt.datetime(2024, 5, 1, 12), pd.Timestamp("2024-05-01T14:00", tz="Europe/Paris")):
        assert to_ns(value) == s * 10**9, value
    for value in (None, pd.NaT, np.datetime64("NaT"), "", "  "):
        assert to_ns(value) is None
    for value in (True, float("nan"), float("inf"), [s]):
        with pytest.raises(ValueError):
            to_ns(value)
    instants, missing, bad = parse_column(pd.Series([s, np.nan, np.inf]))
    assert int(instants[0].astype(np.int64)) == s * 10**9 and list(missing) == [False, True, False]
    assert list(bad) == [False, False, True]


def test_epoch_seconds_columns_load(tmp_path):
    path = write(tmp_path, "series_id,commit,timestamp,value\ns,a,1714564800,1\ns,b,1714564860,2\n")
    history = load(path)["s"]
    assert list(history.timestamps) == [np.datetime64("2024-05-01T12:00:00"), np.datetime64("2024-05-01T12:01:00")]
    frame = pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "timestamp": [1714564800, 1714564860],
                          "value": [1.0, 2.0]})
    frame.to_parquet(tmp_path / "h.parquet", index=False)
    assert list(load(tmp_path / "h.parquet")["s"].timestamps) == list(history.timestamps)


# --------------------------------------------------------------------------- retriggers, from_frame, indexing


def test_a_retrigger_belongs_to_its_commit_wherever_it_appears(tmp_path):
    # Commit a measured again after b and c (a re-run days later): one commit, two measurements.
    path = write(
        tmp_path,
        "series_id,commit,timestamp,value\n"
        "s,a,2024-01-01T00:00:00,10\ns,b,2024-01-02T00:00:00,20\n"
        "s,c,2024-01-03T00:00:00,30\ns,a,2024-01-05T00:00:00,14\n",
    )
    history = load(path)["s"]
    assert list(history.commits) == ["a", "b", "c"]  # first appearance
    assert list(history.values) == [12.0, 20.0, 30.0]
    assert list(history.n_measurements) == [2, 1, 1]
    assert str(history.timestamps[0]).startswith("2024-01-01")


def test_commit_order_given_wins_over_first_appearance():
    frame = pd.DataFrame({"series_id": "s", "commit": ["b", "a", "c", "b"], "value": [2.0, 1.0, 3.0, 4.0]})
    history = Dataset.from_frame(frame, commit_order=["a", "b", "c"])["s"]
    assert list(history.commits) == ["a", "b", "c"]
    assert list(history.values) == [1.0, 3.0, 3.0]
    with pytest.raises(InputError, match=r"<frame>, row 3: commit 'c' is not in the given commit order"):
        Dataset.from_frame(frame, commit_order=["a", "b"])


def test_from_frame_validates_like_a_file():
    frame = pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1.0, float("nan")]})
    with pytest.raises(InputError, match=r"<frame>, row 2: value"):
        Dataset.from_frame(frame)
    with pytest.raises(InputError, match="missing column 'value'"):
        Dataset.from_frame(frame.drop(columns="value"))


def test_dataset_iterates_histories_and_indexes_by_id_and_position():
    frame = pd.DataFrame({"series_id": ["x", "x", "y"], "commit": ["1", "2", "1"], "value": [1.0, 2.0, 3.0]})
    dataset = Dataset.from_frame(frame)
    assert [h.series_id for h in dataset] == ["x", "y"]
    assert dataset[0] is dataset["x"] and dataset[-1] is dataset["y"]
    assert "x" in dataset and 0 not in dataset
    with pytest.raises(IndexError, match="out of range"):
        dataset[2]
    with pytest.raises(KeyError, match="unknown series 'z'"):
        dataset["z"]


@pytest.mark.parametrize(
    ("higher", "before", "after", "kind"),
    [(True, 10, 8, "regression"), (True, 10, 12, "improvement"), (False, 10, 12, "regression"),
     (False, 10, 8, "improvement"), (None, 10, 12, "change")],
)
def test_change_kind_follows_the_units_direction(higher, before, after, kind):
    history = History("s", ["a"], [1.0], None, higher_is_better=higher)
    assert history.change_kind(before, after) == kind



def test_a_compressed_input_keeps_its_own_name_as_the_source(tmp_path):
    import gzip

    path = tmp_path / "h.csv.gz"
    path.write_bytes(gzip.compress(b"series_id,commit,value\ns,a,1\ns,b,2\n"))
    data = load(path)
    assert data.source == str(path) and len(data["s"]) == 2
