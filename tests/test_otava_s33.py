"""Defects of the Apache Otava inputs found by the thirty-third session's walkthrough (a team migrating from Otava).

1. A comma-separated Otava CSV whose quoted header names a metric with ``;``
   in it (``"time","commit","solver(False;True;iso;big)"``) was refused
   ("cannot tell the layout from the header"; through a config "missing
   column 'time'"): the delimiter sniffer counted the characters inside the
   quotes. It now counts only those outside quotes, and a config's test
   without ``csv_options: {delimiter}`` is read at ``,``, Otava's default (a
   header that looks otherwise is refused saying which delimiter to set).
"""

from __future__ import annotations

import pytest

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
