"""Defects the sixteenth session's walkthroughs found in shared modules (the loaders and the value rules).

1. A long-layout CSV with a blank line named a bad value one row too early
   per blank line before it (pandas skips blank lines; the Otava, candidate
   and decision readers already counted file lines).
2. ``triage detect`` / ``summary`` read a value written ``1e-400`` as 0
   without a word, though README says values must be 0 or at least 1e-100
   in magnitude (``triage watch`` already quarantined such a series).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from helpers_cli import flat, invoke


@pytest.mark.parametrize("compressed", [False, True])
def test_a_bad_value_after_blank_lines_names_its_file_line(tmp_path: Path, compressed: bool) -> None:
    text = "series_id,commit,value\ns,a,1\n\n\ns,b,2\ns,c,oops\n"
    path = tmp_path / ("h.csv.gz" if compressed else "h.csv")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    code, out = invoke(["summary", "--data", path])
    assert code == 2, out
    assert "row 6: value 'oops' is not a number" in flat(out)


def test_detect_reading_in_parts_names_the_file_line_too(tmp_path: Path) -> None:
    """``detect`` reads a long CSV in parts (records counted, not lines)."""
    path = tmp_path / "h.csv"
    path.write_text("series_id,commit,value\ns,a,1.5\n\ns,b,2.5\n\nt,c,1.5\nt,d,oops\n")
    code, out = invoke(["detect", "--data", path, "--out", tmp_path / "cps.csv"])
    assert code == 2, out
    assert "row 7: value 'oops' is not a number" in flat(out)


def test_a_value_below_the_float_range_is_refused_naming_its_row(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("series_id,commit,value\nx,c1,1.5\nx,c2,1e-400\nx,c3,1\n")
    code, out = invoke(["detect", "--data", path, "--out", tmp_path / "cps.csv"])
    assert code == 2, out
    shown = flat(out)
    assert "row 3" in shown and "1e-400" in shown and "would be read as 0" in shown
    assert not (tmp_path / "cps.csv").exists()


def test_zeros_written_any_way_are_still_zeros(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("series_id,commit,value\nx,c1,0\nx,c2,0.000\nx,c3,-0.0\nx,c4,0e5\nx,c5,.0\nx,c6,1\n")
    code, out = invoke(["summary", "--data", path])
    assert code == 0, out
    from triage.loaders import load

    # read as zeros (the test had checked the exit code only)
    assert load(path)["x"].values.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_a_state_store_or_an_unnamed_parquet_given_as_data_is_named_for_what_it_is(tmp_path: Path) -> None:
    """3. ``detect --data state.db`` said "row 1: not a UTF-8 text file"."""
    state = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", state], stdin='{"series_id": "a", "commit": "c1", "value": 1}\n')
    assert code == 0, out
    for command in (["detect", "--data", state, "--out", tmp_path / "o.csv"], ["summary", "--data", state]):
        code, out = invoke(command)
        assert code == 2, out
        assert "is an SQLite database" in flat(out) and "UTF-8" not in out
    import pandas as pd

    parquet = tmp_path / "history.dat"
    pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1.0, 2.0]}).to_parquet(parquet)
    code, out = invoke(["summary", "--data", parquet])
    assert code == 2 and "Parquet file whose name does not end in .parquet" in flat(out)


def test_a_json_line_naming_two_series_is_refused(tmp_path: Path) -> None:
    feed = '{"series_id": "a", "commit": "c1", "value": 1}\n{"series_id": "a", "series": "b", "commit": "c2", "value": 2}\n'
    code, out = invoke(["watch"], stdin=feed)
    assert code == 2, out
    assert "line 2" in flat(out) and "both series_id 'a' and series 'b'" in flat(out)
    same = '{"series_id": "a", "series": "a", "commit": "c1", "value": 1}\n'
    assert invoke(["watch"], stdin=same)[0] == 0


def test_perfherder_data_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "perf.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"sig": [{"revision": "a", "value": 1.0}, {"revision": "b", "value": 2.0}]}')
    from triage.loaders import load

    data = load(path)
    assert [h.series_id for h in data] == ["sig"] and data["sig"].values.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(("name", "payload", "says"), [
    ("2848e5d0-py3.10.json", {"commit_hash": "2848e5d0", "results": {}, "version": 2}, "one file of an asv results"),
    ("machine.json", {"arch": "x86_64", "machine": "ubuntu-latest", "version": 1}, "one file of an asv results"),
    ("benchmarks.json", {"b.time_a": {"name": "b.time_a", "type": "time"}, "version": 2}, "asv's benchmarks.json"),
])
def test_one_piece_of_a_history_is_named_for_what_it_is(tmp_path: Path, name: str, payload: dict, says: str) -> None:
    import json

    path = tmp_path / name
    path.write_text(json.dumps(payload))
    code, out = invoke(["summary", "--data", path])
    assert code == 2, out
    assert says in flat(out) and "list of numbers" not in out


def test_a_row_of_more_cells_than_the_header_is_named_by_its_row(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("series_id,commit,value\ns,a,1\ns,b,2\ns,c,2,7\n")
    code, out = invoke(["summary", "--data", path])
    assert code == 2, out
    assert "h.csv, row 4: 4 cells where the header has 3" in flat(out)


def test_kbkssd_trims_the_rising_warm_up_of_a_higher_is_better_series(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    from triage.loaders import load

    rng = np.random.default_rng(0)
    rows = []
    for c in range(4):  # iterations of a throughput rising to 100 ops/s, then steady
        values = 100 - 60 * np.exp(-np.arange(200) / 12) + rng.normal(0, 1.0, 200)
        rows += [("s", f"c{c}", v) for v in values]
    frame = pd.DataFrame(rows, columns=["series_id", "commit", "value"])
    rates = tmp_path / "rates.csv"
    frame.assign(higher_is_better="true").to_csv(rates, index=False)
    untrimmed = load(rates)["s"].values
    trimmed = load(rates, trim_warmup="kbkssd")["s"].values
    assert (untrimmed < 97).all() and (trimmed > 98.5).all()  # the warm-up's low values are left out
    # a series of unknown direction is read as times, as before: no rise is cut
    times = tmp_path / "times.csv"
    frame.to_csv(times, index=False)
    np.testing.assert_allclose(load(times, trim_warmup="kbkssd")["s"].values, untrimmed)


def test_real_ids_that_differ_only_in_the_middle_are_told_apart_in_a_table() -> None:
    """8. The real emg3d-bench ids differ only inside their parameter (``('big')`` / ``('small')``):
    every row of an 80-column decision table read ``emg3d-be…da-py3.8``."""
    from triage.cli.tables import SERIES_WIDTH, shorten_ids

    ids = [f"emg3d-bench/memory.{bench}({param}'{size}')/meerkat/conda-py3.8"
           for bench, param in (("ResidualMemory.peakmem_residual", ""), ("SmoothingMemory.peakmem_smoothing", "0;"),
                                ("SmoothingMemory.peakmem_smoothing", "1;"))
           for size in ("big", "small")]
    for width in (SERIES_WIDTH, 20, 12):
        shown = shorten_ids(ids, width)
        assert len(set(shown.values())) == len(ids), (width, shown)
        assert all(len(c) <= width for c in shown.values())
        for sid, cell in shown.items():  # every piece shown is the id's own, in order
            at = 0
            for piece in filter(None, cell.split("…")):
                at = sid.index(piece, at) + len(piece)
