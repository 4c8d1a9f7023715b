"""Defects in shared modules found or left open before the twenty-second session, fixed there.

1. A long file compressed with gzip whose timestamps go backwards, read with
   ``--sort-timestamps``: the warning named the reader's temporary
   decompressed copy (``/tmp/triage-input-.../h.csv``), gone by the time it
   is read, not the file the user gave.
"""

from __future__ import annotations

import gzip
import warnings

import pytest
from helpers_cli import invoke

from triage.core.history import UnsortedTimestampsWarning
from triage.loaders import load

UNSORTED = "series_id,commit,value,timestamp\na,c1,1.0,2024-01-02\na,c2,2.0,2024-01-01\na,c3,2.0,2024-01-03\n"


def test_sorting_a_gzipped_file_warns_with_the_users_file_name(tmp_path):
    given = tmp_path / "h.csv.gz"
    given.write_bytes(gzip.compress(UNSORTED.encode()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = load(given, sort_timestamps=True)
    assert [h.commits.tolist() for h in dataset] == [["c2", "c1", "c3"]]
    sorted_notes = [str(w.message) for w in caught if issubclass(w.category, UnsortedTimestampsWarning)]
    assert sorted_notes == [f"{given}: series 'a' sorted by timestamp (first out-of-order row 3)"]


def test_the_command_line_names_the_gzipped_file_and_stdin(tmp_path):
    given = tmp_path / "h.csv.gz"
    given.write_bytes(gzip.compress(UNSORTED.encode()))
    for data, stdin, name in ((given, None, str(given)), ("-", UNSORTED, "<stdin>")):
        with pytest.warns(UnsortedTimestampsWarning) as caught:
            code, text = invoke(["summary", "--data", data, "--sort-timestamps"], stdin=stdin)
        assert code == 0, text
        assert [str(w.message).split(": series")[0] for w in caught] == [name]
