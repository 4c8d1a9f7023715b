"""Defects of the Apache Otava inputs found by the thirty-third session's walkthrough (a team migrating from Otava).

1. A comma-separated Otava CSV whose quoted header names a metric with ``;``
   in it (``"time","commit","solver(False;True;iso;big)"``) was refused
   ("cannot tell the layout from the header"; through a config "missing
   column 'time'"): the delimiter sniffer counted the characters inside the
   quotes. It now counts only those outside quotes, and a config's test
   without ``csv_options: {delimiter}`` is read at ``,``, Otava's default (a
   header that looks otherwise is refused saying which delimiter to set).

2. Keys of an Otava config were ignored without a word: ``attributes``
   (``time_column: ts, attributes: [git_sha, version]``: the commit id became
   the time text and the SHA was lost; ``attributes: [commit, build_number]``
   without ``metrics``: the build number read as a metric), a metric's
   ``scale``, ``templates`` with a test's ``inherit``, and ``${VAR}`` in
   ``file``. Attributes are now never metrics and the first named like a
   commit id (commit, revision, sha, git_sha, ...) keys the rows, a scale
   multiplies its metric's values, a test takes its templates' settings
   under its own, ``${VAR}`` is the environment variable (one not set is an
   error), and any other key is warned about by name.

3. An Otava JSON report (``triage score --candidates``) whose changes carry
   no commit attribute was refused ("change has neither attributes.commit nor
   index") although the CSV had no commit column either and triage keyed its
   rows by their time. Such a change is now placed by its group's ``time``
   (epoch seconds or a date); a commit id under another attribute name
   (``git_sha``, ...) is taken as the config reader takes it.

4. A JSON report of several tests, one JSON object per test one after
   another as Otava prints them, was refused ("Extra data"). Every object is
   now read; a damaged later one is refused naming its line and which
   document it is.

5. ``nan`` cells in an Otava CSV: a column of nothing else vanished without a
   word; one ``nan`` among numbers refused the whole file ("value 'nan' is
   not a number"). A ``nan`` (any case) is now a missing value, skipped as
   an empty cell is (asv's reader skips its NaN so too; the long layout,
   one value a row, still refuses an empty or nan value), and one warning
   per file counts them by column and names a column left without a number.

6. A data file a config names that does not exist was reported as
   ``error: tests/missing.csv: no such file``, naming neither the config nor
   the test; both are named now, and where the file was looked for.
"""

from __future__ import annotations

import json
import warnings

import pytest

from triage.candidate_files import read_candidates, resolve
from triage.core.errors import InputError
from triage.loaders import load
from triage.readers.otava import sniff_delimiter

ROWS = '"2024-03-01 10:00:00 +0000","a1",10\n"2024-03-02 10:00:00 +0000","a2",11\n'


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- 1. delimiters inside quotes


def test_a_quoted_header_name_holding_semicolons_is_read_comma_separated(tmp_path):
    data = _write(tmp_path / "semihdr.csv", '"time","commit","solver(False;True;iso;big)"\n' + ROWS)
    assert sniff_delimiter(data.read_text().splitlines()[0]) == ","
    ds = load(data)
    assert [h.series_id for h in ds] == ["solver(False;True;iso;big)"]
    assert list(ds["solver(False;True;iso;big)"].commits) == ["a1", "a2"]


def test_a_config_without_a_delimiter_reads_the_quoted_header_at_a_comma(tmp_path):
    _write(tmp_path / "semihdr.csv", '"time","commit","solver(False;True;iso;big)"\n' + ROWS)
    config = _write(tmp_path / "otava.yaml", "tests:\n  s:\n    type: csv\n    file: semihdr.csv\n"
                    "    time_column: time\n")
    ds = load(config)
    assert list(ds["s/solver(False;True;iso;big)"].values) == [10.0, 11.0]


def test_a_config_without_a_delimiter_refuses_a_semicolon_file_naming_the_option(tmp_path):
    _write(tmp_path / "semi.csv", "time;commit;thr\n2024-03-01 10:00:00 +0000;a1;10\n")
    config = _write(tmp_path / "otava.yaml", "tests:\n  s:\n    file: semi.csv\n")
    with pytest.raises(InputError, match=r"semi\.csv, row 1: .*looks ';'-separated.*delimiter: ';'"):
        load(config)
    _write(config, "tests:\n  s:\n    file: semi.csv\n    csv_options: {delimiter: ';'}\n")
    assert list(load(config)["s/thr"].values) == [10.0]


# ---------------------------------------------------------------- 2. config keys

GAMMA = ("ts,throughput,p99,git_sha,version\n"
         '2024-03-01 10:00:00 +0000,1505.2,4.076,0000000a,"1.0.0, build 0"\n'
         '2024-03-02 10:00:00 +0000,1512.3,3.924,0000001a,"1.0.0, build 1"\n')


def test_attributes_name_the_commit_column_and_are_never_metrics(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    type: csv\n    file: gamma.csv\n"
                    "    time_column: ts\n    attributes: [version, git_sha]\n")
    ds = load(config)
    assert sorted(h.series_id for h in ds) == ["g/p99", "g/throughput"]
    assert list(ds["g/throughput"].commits) == ["0000000a", "0000001a"]
    _write(tmp_path / "build.csv", "time,commit,build_number,throughput\n2024-03-01 10:00:00 +0000,c0,1000,101.5\n"
           "2024-03-02 10:00:00 +0000,c1,1001,99.5\n")
    _write(config, "tests:\n  b:\n    file: build.csv\n    attributes: [commit, build_number]\n")
    ds = load(config)
    assert [h.series_id for h in ds] == ["b/throughput"]
    assert list(ds["b/throughput"].commits) == ["c0", "c1"]


def test_a_missing_attribute_column_is_an_error_naming_it(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    file: gamma.csv\n    time_column: ts\n"
                    "    attributes: [sha1]\n")
    with pytest.raises(InputError, match=r"gamma\.csv, row 1: missing column 'sha1', of the config's attributes"):
        load(config)


def test_a_metric_scale_multiplies_its_values(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    file: gamma.csv\n    time_column: ts\n"
                    "    attributes: [git_sha, version]\n    metrics:\n      p99_ms: {column: p99, scale: 1000}\n"
                    "      throughput: {scale: 1e-3}\n")
    ds = load(config)
    assert ds["g/p99_ms"].values == pytest.approx([4076.0, 3924.0])
    assert ds["g/throughput"].values == pytest.approx([1.5052, 1.5123])


def test_a_test_inherits_its_templates_settings_under_its_own(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "templates:\n  common:\n    type: csv\n    time_column: ts\n"
                    "    attributes: [git_sha, version]\n    metrics:\n      throughput: {direction: 1}\n"
                    "      p99: {direction: 1}\n"
                    "tests:\n  g:\n    inherit: common\n    file: gamma.csv\n    metrics:\n"
                    "      p99: {direction: -1}\n")
    ds = load(config)
    assert list(ds["g/p99"].commits) == ["0000000a", "0000001a"]
    assert ds["g/throughput"].higher_is_better is True and ds["g/p99"].higher_is_better is False
    _write(config, "templates: {}\ntests:\n  g:\n    inherit: commn\n    file: gamma.csv\n")
    with pytest.raises(InputError, match=r"test 'g' inherits template 'commn', which 'templates:' does not define"):
        load(config)


def test_an_environment_variable_in_file_is_expanded(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    file: ${OTAVA_S33_DATA}/gamma.csv\n"
                    "    time_column: ts\n    attributes: [git_sha]\n")
    monkeypatch.delenv("OTAVA_S33_DATA", raising=False)
    with pytest.raises(InputError, match=r"otava\.yaml: test 'g': .*environment variable OTAVA_S33_DATA, which is not set"):
        load(config)
    monkeypatch.setenv("OTAVA_S33_DATA", str(tmp_path / "data"))
    assert list(load(config)["g/throughput"].commits) == ["0000000a", "0000001a"]


def test_an_unknown_key_is_warned_about_by_name(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    file: gamma.csv\n    time_column: ts\n"
                    "    attribute: [git_sha]\n    metrics:\n      p99: {directon: -1}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(config)
    said = " ".join(str(w.message) for w in caught)
    assert "test 'g': 'attribute' is not an Otava csv test setting" in said
    assert "metric 'p99': 'directon' is not a metric setting" in said


# ---------------------------------------------------------------- 3. a report without a commit attribute

NO_COMMIT = "".join(f"2024-03-{d:02d} 10:00:00 +0000,{v}\n" for d, v in ((1, 10), (2, 11), (3, 20), (4, 21)))


def test_a_report_without_a_commit_attribute_places_its_changes_by_time(tmp_path):
    data = _write(tmp_path / "t.csv", "time,throughput\n" + NO_COMMIT)
    ds = load(data)
    report = _write(tmp_path / "report.json", json.dumps({"t": [
        {"time": 1709460000, "attributes": {}, "changes": [{"metric": "throughput", "pvalue": 0.001}]},
        {"time": "2024-03-04 10:00:00 +0000", "attributes": {"version": "1.1"},
         "changes": [{"metric": "throughput", "pvalue": 0.002}]},
    ]}))
    series, index = resolve(ds, read_candidates(report))
    assert series == ["throughput", "throughput"] and list(index) == [2, 3]
    _write(report, json.dumps({"t": [{"time": 1709546400 + 3600, "changes": [{"metric": "throughput"}]}]}))
    with pytest.raises(InputError, match=r"report\.json, row 1: the change has no commit, only its time "
                       r"2024-03-04T11:00:00\+00:00, and series 'throughput' has no commit at that time"):
        resolve(ds, read_candidates(report))


def test_a_report_takes_a_commit_id_under_a_commit_like_attribute(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  g:\n    file: gamma.csv\n    time_column: ts\n"
                    "    attributes: [version, git_sha]\n")
    report = _write(tmp_path / "report.json", json.dumps({"g": [
        {"time": 1709373600, "attributes": {"version": "1.0.0, build 1", "git_sha": "0000001a"},
         "changes": [{"metric": "p99"}]}]}))
    table = read_candidates(report)
    assert list(table.commits) == ["0000001a"]
    assert resolve(load(config), table) == (["g/p99"], [1])


# ---------------------------------------------------------------- 4. one JSON object per test


def test_a_report_of_one_object_per_test_reads_every_object(tmp_path):
    alpha = {"alpha": [{"time": 1, "attributes": {"commit": "a2"}, "changes": [{"metric": "thr"}]}]}
    beta = {"beta": [{"time": 2, "attributes": {"commit": "b3"}, "changes": [{"metric": "lat"}]}]}
    report = _write(tmp_path / "report.json", json.dumps(alpha) + "\n" + json.dumps(beta, indent=1) + "\n")
    table = read_candidates(report)
    assert list(table.fields["test"]) == ["alpha", "beta"] and list(table.commits) == ["a2", "b3"]
    assert [k[0] for k in table.keys] == ["thr", "lat"]
    _write(report, json.dumps(alpha) + "\n" + json.dumps(beta)[:-3] + "\n")
    with pytest.raises(InputError, match=r"report\.json, row 3: not valid JSON: .* in JSON document 2 of the file: .*truncated"):
        read_candidates(report)


# ---------------------------------------------------------------- 5. nan cells


def test_nan_cells_are_missing_values_counted_in_one_warning(tmp_path):
    data = _write(tmp_path / "nan.csv", "time,commit,thr,lat,gone\n2024-03-01 10:00:00 +0000,a1,10,nan,nan\n"
                  "2024-03-02 10:00:00 +0000,a2,11,2,\n2024-03-03 10:00:00 +0000,a3,12,NaN,NAN\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load(data)
    assert sorted(h.series_id for h in ds) == ["lat", "thr"]
    assert list(ds["lat"].commits) == ["a2"] and list(ds["thr"].values) == [10.0, 11.0, 12.0]
    said = [str(w.message) for w in caught if "'nan'" in str(w.message)]
    assert len(said) == 1
    assert "nan.csv: 4 'nan' cells read as missing values" in said[0]
    assert "'lat': 2, 'gone': 2" in said[0] and "'gone' has no number at all, so no series" in said[0]


def test_a_listed_metric_with_nan_cells_reads_through_a_config(tmp_path):
    _write(tmp_path / "t.csv", "time,commit,lat\n2024-03-01 10:00:00 +0000,a0,nan\n2024-03-02 10:00:00 +0000,a1,1\n"
           "2024-03-03 10:00:00 +0000,a2,-nan\n")
    config = _write(tmp_path / "otava.yaml", "tests:\n  t:\n    file: t.csv\n    metrics: [lat]\n")
    with pytest.warns(UserWarning, match=r"t\.csv: 2 'nan' cells read as missing values"):
        assert list(load(config)["t/lat"].commits) == ["a1"]


# ---------------------------------------------------------------- 6. a missing data file


def test_a_missing_data_file_names_the_config_and_the_test(tmp_path):
    _write(tmp_path / "gamma.csv", GAMMA)
    config = _write(tmp_path / "otava.yaml", "tests:\n  ok:\n    file: gamma.csv\n    time_column: ts\n"
                    "  gone:\n    file: tests/missing.csv\n")
    with pytest.raises(InputError, match=r"otava\.yaml: test 'gone': file 'tests/missing\.csv' does not exist "
                       r"\(looked for from the working directory and the config's\)"):
        load(config)
