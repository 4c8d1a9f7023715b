"""Walkthrough s18: performance engineers bringing the files they have (locales, encodings, compression).

Defects found (what a user did, what went wrong, what happens now):

1. Gave a long CSV whose every data row has one cell more than its header: a
   trailing separator on each row (``s1,c1,2024-03-01,100.5,``) or, worse, a
   decimal comma in a comma-separated file (``s1,c1,2024-03-01,100,5``).
   pandas then takes the first column as the rows' index and shifts every
   other column left by one: the trailing-separator file was refused with
   "row 2: value is missing", and the decimal-comma file was read without a
   word as one series per commit, each valued by the digits after the comma
   (``triage summary``, ``convert``, ``detect``, ``candidates`` and the Otava
   and candidate-file readers alike). Now cells that are all blank after the
   header's last column (trailing separators) are dropped, and a row with a
   non-blank cell there is refused naming its line and the cell counts (with
   a hint about decimal commas in a comma-separated file). R's
   ``write.table`` files (a row number before each row, none in the header)
   are still read as pandas read them.
2. Exported a history from Excel on a German machine: timestamps written
   ``01.05.2024 12:00`` (day first, as every locale that writes dotted dates
   means them). They were read month first (dateutil's rule for slashed
   dates), so 1 May became 5 January: a file of days 1-12 got wrong dates
   without a word, and one running on to the 13th was refused as "timestamps
   go backwards" (the advice, sorting, would have scrambled its commits).
   Now dotted dates are read day first, in files and in ``triage watch``.
3. Brought an Otava CSV from the same machine (``;``, values ``4,948``) with
   one integer metric and one with decimal commas: the decimal-comma column
   was taken for a text attribute and left out without a word (one series
   instead of two; with no integer column, "no numeric metric column").
   Long-layout files refused such a value as "value '100,25' is not a
   number", not saying what to change. Now such a column is a metric, and a
   value written with a decimal comma or thousands separators (``100,25``,
   ``1.234,5``, ``1,234.5``, ``1 234,5``) is refused at its row saying so and
   how to export plain numbers (long layout, ``detect``'s parts, MongoDB demo
   layout, Otava CSVs, directories and configs). In a comma-separated
   Otava file only ``1,234.5`` counts so: a quoted ``"0,1"`` (a list of
   CPUs) is still a text attribute.
4. Gave ``--data`` (or ``--candidates``) a ``.bz2``, ``.xz`` or ``.zip`` file
   (a zip holding one CSV, as a CI artifact download is), a workbook
   (``.xlsx``) or Excel's "Unicode Text" export (UTF-16): "row 1: not a
   UTF-8 text file", or a header shown with a NUL between its characters,
   naming neither what the file is nor what to do (README: gzip and zstd
   are read). Now one line says what it is and how to read it (``xz -dk
   FILE``; ``unzip FILE history.csv`` naming the zip's one member;
   ``iconv -f UTF-16 -t UTF-8``).
5. Exported from Excel's plain "CSV" on Windows (cp1252, ``säule``): "row
   2: not a UTF-8 text file", without what to do. The line now says how to
   convert it (save as 'CSV UTF-8', or ``iconv -f CP1252 -t UTF-8``).
6. Converted a history whose timestamps carry milliseconds
   (``2024-03-01T10:00:00.250Z``, as CI systems log them) with ``triage
   convert --out x.csv``: every fraction was dropped (10:00:00.250 and
   10:00:00.750 both written 10:00:00), while a Parquet ``--out`` kept them.
   Now the CSV keeps the fraction where there is one (to the nanosecond);
   whole seconds are written as before.
7. Gave timestamps with a zone name, as ``date`` prints them in CI logs
   (``Wed May  1 12:00:00 CEST 2024``, ``2024-10-27 00:00:00 CEST``,
   ``... Europe/Berlin``): "is not a date/time", which it is. Now the line
   says the zone's name is not read (an abbreviation names several zones)
   and to write the UTC offset or UTC with Z. UTC and GMT by name are read
   as before.
8. Labelled Perfherder data with a hand-edited alerts export whose revision
   was upper case (``010ABCDEF``; the data has ``010abcdef``): "the data has
   no such revision", with the revision right there. The line now names the
   data's spelling and says the two differ only in case.
9. Wrote a history to Parquet from pandas with one timestamp missing (NaT,
   a Parquet null): it was read without a word, the commit given no time
   (``convert`` wrote an empty cell), where a blank CSV cell is refused as
   "timestamp is missing"; a column of nulls only was kept as timestamps.
   Now a null is missing, as in a CSV: refused at its record, and a column
   of nulls only means no timestamps. (Value columns of float32, decimal,
   string and categorical type, and zone-aware timestamps, were checked and
   give the right numbers.)
10. Downloaded a CI artifact as ``artifact.tar.gz`` (or ``.tar``) holding
    the history: read as a CSV whose header was the tar header, "no
    'series_id' column (found: history.csv 0000644 0000000 ...)". Now the
    line says it is a tar archive and gives the ``tar -xf`` command naming
    its one member. (A text export named ``.xls``, as web applications
    write them, is still read as text: workbooks are told by content.)
11. Exported a sheet from Excel whose rows below the data had once been
    touched: the CSV ends in lines of separators only (``;;;``). ``summary``,
    ``detect`` and the rest refused it at the first of them, "series_id is
    missing". Now such rows at the end are dropped (by ``load`` and by
    ``detect``'s parts alike, wherever a part ends); one amid the data is
    still refused at its line.
12. Piped a Parquet history into ``triage convert --data -`` (README:
    standard input takes any format): "<stdin>: is a Parquet file whose name
    does not end in .parquet: rename it so", which cannot be done to a
    pipe; a Parquet file gzipped as ``upload.gz`` was refused so too. Now
    Parquet content on standard input or inside gzip / zstd is read as
    Parquet (``detect`` reads it whole); a regular file without the suffix
    is still asked to be renamed. A Parquet candidate file (``--candidates
    cands.parquet``) was told "whose name does not end in .parquet: rename
    it so", though it does and candidates are never read from Parquet; it
    is now told to give that input as CSV.
13. Brought a French export, dates written ``01/05/2024 12:00`` (day
    first). README's rule reads slashed dates month first, but one column
    got both readings: ``12/05/2024`` as 5 December and ``13/05/2024`` (no
    month 13, so dateutil swapped it) as 13 May, ending in "timestamps go
    backwards; sort the file" (which would scramble the commits), or, in a
    file of days 1-12 only plus one later day, wrong dates without a word.
    Now a column holding a slashed date that cannot be month first is read
    day first throughout, and a date in it that cannot be day first is
    refused at its row; without such a date the column stays month first.
    ``detect``, which reads a long CSV in parts, tells it from the whole
    column too (a part of days 1-12 only is read day first when another
    part shows the file's dates are).
14. Gave a CSV written "for Excel", whose first line is Excel's separator
    hint ``sep=;``: "cannot tell the layout from the header ('sep=;')".
    Now the line says what that first line is and to delete it. And a JSON
    list or JSON-lines record holding ``"100,5"`` now gets the decimal-comma
    words of item 3 instead of "is not a number".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke
from warm_start import warm_triage

from triage.core.errors import InputError
from triage.loaders import load, long_csv_parts


def _rows(n: int = 40, *, step_at: int = 20) -> list[tuple[str, str, str, float]]:
    """One series s1: n commits c00.., two a day, a +30 step at ``step_at``; values with 2 decimals."""
    return [
        (
            "s1",
            f"c{i:02d}",
            f"2024-03-{1 + i // 2:02d}T{(i % 2) * 12:02d}:00:00",
            round(100 + 0.37 * (i % 5) + (30 if i >= step_at else 0), 2),
        )
        for i in range(n)
    ]


def _long_csv(
    path: Path,
    *,
    sep: str = ",",
    row_end: str = "",
    header_end: str = "",
    newline: str = "\n",
    value=lambda v: f"{v:.2f}",
) -> Path:
    lines = [sep.join(("series_id", "commit", "timestamp", "value")) + header_end]
    lines += [sep.join((s, c, t, value(v))) + row_end for s, c, t, v in _rows()]
    path.write_bytes((newline.join(lines) + newline).encode())
    return path


# --------------------------------------------------------------------------- 1. a cell more on every row


def test_trailing_separator_on_every_row_is_dropped(tmp_path):
    plain = load(_long_csv(tmp_path / "plain.csv"))
    trailing = load(_long_csv(tmp_path / "trailing.csv", row_end=","))
    assert trailing.series_ids == ["s1"]
    assert list(trailing["s1"].values) == list(plain["s1"].values)
    assert list(trailing["s1"].commits) == list(plain["s1"].commits)
    assert list(trailing["s1"].timestamps) == list(plain["s1"].timestamps)
    parts = list(long_csv_parts(tmp_path / "trailing.csv", rows_per_part=7))
    assert [v for p in parts for v in p["s1"].values] == list(plain["s1"].values)


def test_decimal_comma_in_a_comma_separated_file_is_refused_at_its_line(tmp_path):
    path = _long_csv(tmp_path / "fr.csv", value=lambda v: f"{v:.2f}".replace(".", ","))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 2
    assert "5 cells where the header has 4" in err.value.problem
    assert "decimal comma" in err.value.problem
    with pytest.raises(InputError) as err:
        list(long_csv_parts(path, rows_per_part=7))
    assert err.value.row == 2 and "5 cells where the header has 4" in err.value.problem


def test_a_cell_more_on_every_row_is_refused_by_summary(tmp_path):
    path = _long_csv(tmp_path / "extra.csv", row_end=",7")
    code, out = invoke(["summary", "--data", path])
    assert code == 2
    assert "extra.csv, row 2: 5 cells where the header has 4" in flat(out)


def test_blank_lines_and_a_trailing_separator_name_the_file_line(tmp_path):
    path = tmp_path / "gaps.csv"
    body = [",".join((s, c, t, f"{v:.2f}")) + "," for s, c, t, v in _rows()]
    body[5] = body[5][:-1] + ",oops"
    path.write_text("series_id,commit,timestamp,value\n\n" + "\n".join(body) + "\n")
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 8  # header, a blank line, then rows 3..


def test_otava_csv_with_a_trailing_separator_on_every_row(tmp_path):
    path = tmp_path / "otava.csv"
    lines = ["time,commit,throughput"] + [f"{t},{c},{v:.2f}," for _, c, t, v in _rows()]
    path.write_text("\n".join(lines) + "\n")
    data = load(path)
    assert data.series_ids == ["throughput"]
    assert list(data["throughput"].values) == [v for *_, v in _rows()]


# --------------------------------------------------------------------------- 2. dotted dates are day first


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("01.05.2024", "2024-05-01T00:00:00"),
        ("01.05.2024 12:00", "2024-05-01T12:00:00"),
        ("1.5.2024 7:05:03", "2024-05-01T07:05:03"),
        ("02.03.2024 10:00:00+02:00", "2024-03-02T08:00:00"),
        ("31.12.2024 23:59", "2024-12-31T23:59:00"),
    ],
)
def test_dotted_dates_are_read_day_first(text, iso):
    from triage.core import timestamps

    assert timestamps.to_ns(text) == pd.Timestamp(iso).value
    instants, missing, bad = timestamps.parse_column(pd.Series([text, "2024-01-01"]))
    assert not missing.any() and not bad.any()
    assert instants[0] == np.datetime64(iso, "ns")


def test_german_excel_dates_keep_the_file_order(tmp_path):
    # 1 to 14 May, two results a day, as a German Excel writes dates: day first
    path = tmp_path / "de.csv"
    lines = ["series_id;commit;timestamp;value"]
    lines += [
        f"s1;c{i:02d};{1 + i // 2:02d}.05.2024 {(i % 2) * 12:02d}:00;{100 + i % 3}"
        for i in range(28)
    ]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8-sig")
    data = load(path)
    stamps = pd.to_datetime(data["s1"].timestamps)
    assert stamps[0] == pd.Timestamp("2024-05-01T00:00:00")
    assert stamps[-1] == pd.Timestamp("2024-05-14T12:00:00")
    assert (np.diff(stamps.asi8) == 12 * 3600 * 10**9).all()


# --------------------------------------------------------------------------- 3. numbers in a locale's spelling

LOCALE_HINT = "is written with a decimal comma or a thousands separator"


def _otava_de(path: Path) -> Path:
    """An Otava CSV as Excel writes it on a German machine: ';', a BOM, CRLF, p99 with a decimal comma."""
    lines = ["time;commit;throughput;p99"]
    lines += [
        f"2024-03-{1 + i // 2:02d} {(i % 2) * 12:02d}:00:00 +0100;c{i:02d};{1500 + i % 7};4,{900 + i}"
        for i in range(30)
    ]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8-sig")
    return path


def test_otava_metric_with_decimal_commas_is_refused_not_dropped(tmp_path):
    path = _otava_de(tmp_path / "bench.csv")
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 2
    assert "'4,900'" in err.value.problem and LOCALE_HINT in err.value.problem
    code, out = invoke(["summary", "--data", tmp_path])  # a directory of Otava CSVs
    assert code == 2 and "row 2: value '4,900' " + LOCALE_HINT in flat(out)


@pytest.mark.parametrize(
    ("sep", "cell"), [(";", "100,25"), (";", "1.234,5"), (",", '"1,234.5"'), ("\t", "1 234,5")]
)
def test_long_layout_value_in_a_locale_spelling_says_what_to_change(tmp_path, sep, cell):
    path = tmp_path / "de.csv"
    lines = [sep.join(("series_id", "commit", "value"))] + [
        sep.join(("s1", f"c{i}", "100.5")) for i in range(5)
    ]
    lines[4] = sep.join(("s1", "c3", cell))
    path.write_text("\n".join(lines) + "\n")
    for read in (load, lambda p: list(long_csv_parts(p))):
        with pytest.raises(InputError) as err:
            read(path)
        assert err.value.row == 5
        assert LOCALE_HINT in err.value.problem and "decimal point" in err.value.problem


def test_a_plain_number_and_a_real_non_number_keep_their_words(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("series_id;commit;value\ns1;c1;1.234\ns1;c2;n/a\n")
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 3 and err.value.problem == "value 'n/a' is not a number"


# --------------------------------------------------------------------------- 4. compressions and encodings not read


def _history_text() -> str:
    return "series_id,commit,timestamp,value\n" + "".join(
        f"{s},{c},{t},{v:.2f}\n" for s, c, t, v in _rows()
    )


@pytest.mark.parametrize(
    ("name", "pack", "words"),
    [
        ("h.csv.bz2", lambda b: __import__("bz2").compress(b), "is bzip2-compressed"),
        ("h.csv.xz", lambda b: __import__("lzma").compress(b), "is xz-compressed"),
        (
            "h.csv",
            lambda b: __import__("bz2").compress(b),
            "is bzip2-compressed",
        ),  # whatever the suffix
    ],
)
def test_other_compressions_are_named_with_what_to_do(tmp_path, name, pack, words):
    path = tmp_path / name
    path.write_bytes(pack(_history_text().encode()))
    for command in (
        ["summary", "--data", path],
        ["convert", "--data", path, "--out", tmp_path / "o.csv"],
    ):
        code, out = invoke(command)
        assert code == 2
        assert f"{path}: {words}; only gzip and zstd" in flat(
            out
        ) and f"-dk {path}, then give the decompressed" in flat(out)
        assert "UTF-8" not in flat(out)
    assert not (tmp_path / "o.csv").exists()


def test_a_zip_holding_one_csv_names_the_member_to_extract(tmp_path):
    import zipfile

    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("history.csv", _history_text())
    code, out = invoke(["summary", "--data", path])
    assert code == 2 and f"{path}: is a zip archive" in flat(out)
    assert f"extract it first (unzip {path} history.csv, then give history.csv)" in flat(out)
    code, out = invoke(["summary", "--data", "-"], stdin=path.read_bytes().decode("latin-1"))
    assert code == 2 and "<stdin>: is a zip archive" in flat(out)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_text_is_named_as_such(tmp_path, encoding):
    path = tmp_path / "unicode.txt"
    path.write_bytes(_history_text().replace(",", "\t").encode(encoding))
    with pytest.raises(InputError) as err:
        load(path)
    assert "is UTF-16 text" in err.value.problem and "CSV UTF-8" in err.value.problem
    assert f"iconv -f UTF-16 -t UTF-8 {path} > converted.txt" in err.value.problem


def test_a_workbook_is_not_read_as_text(tmp_path):
    path = tmp_path / "results.xlsx"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 60)
    with pytest.raises(InputError) as err:
        load(path)
    assert "spreadsheet workbook" in err.value.problem and "CSV UTF-8" in err.value.problem


def test_a_windows_1252_export_says_how_to_convert(tmp_path):
    path = tmp_path / "cp1252.csv"
    path.write_bytes(_history_text().replace("s1,", "säule,").encode("cp1252"))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 2 and "not a UTF-8 text file" in err.value.problem
    assert "iconv -f CP1252 -t UTF-8" in err.value.problem


# --------------------------------------------------------------------------- 6. fractions of a second


def test_convert_keeps_fractions_of_a_second(tmp_path):
    path = tmp_path / "ms.csv"
    path.write_text(
        "series_id,commit,timestamp,value\n"
        "s1,a,2024-03-01T10:00:00.250Z,1.5\n"
        "s1,b,2024-03-01T10:00:00.750+00:00,1.6\n"
        "s1,c,2024-03-01T12:00:01.123456789+02:00,1.7\n"
        "s1,d,1709287202,1.8\n"
    )
    out = tmp_path / "out.csv"
    code, text = invoke(["convert", "--data", path, "--out", out])
    assert code == 0, text
    written = pd.read_csv(out, dtype=str)["timestamp"].tolist()
    assert written == [
        "2024-03-01T10:00:00.25",
        "2024-03-01T10:00:00.75",
        "2024-03-01T10:00:01.123456789",
        "2024-03-01T10:00:02",
    ]
    again = load(out)
    assert list(again["s1"].timestamps) == list(load(path)["s1"].timestamps)


def test_convert_of_whole_seconds_is_written_as_before(tmp_path):
    out = tmp_path / "out.csv"
    code, text = invoke(["convert", "--data", _long_csv(tmp_path / "in.csv"), "--out", out])
    assert code == 0, text
    assert out.read_text().splitlines()[1] == "s1,c00,2024-03-01T00:00:00,100.0,"


# --------------------------------------------------------------------------- 7. a time zone by its name


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("2024-10-27 00:00:00 CEST", "CEST"),
        ("Wed May  1 12:00:00 CEST 2024", "CEST"),  # what `date` prints in a CI log
        ("2024-05-01T12:00:00 Europe/Berlin", "Europe/Berlin"),
    ],
)
def test_a_time_zone_name_is_refused_saying_to_write_the_offset(tmp_path, text, zone):
    path = tmp_path / "tz.csv"
    path.write_text(
        f"series_id,commit,timestamp,value\ns1,c1,2024-01-01T00:00:00Z,1.5\ns1,c2,{text},1.6\n"
    )
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 3
    assert (
        f"names its time zone ({zone!r})" in err.value.problem and "UTC offset" in err.value.problem
    )


def test_utc_and_gmt_by_name_are_still_read():
    from triage.core import timestamps

    assert timestamps.to_ns("2024-05-01 12:00 UTC") == timestamps.to_ns("2024-05-01 12:00 GMT")
    assert timestamps.to_ns("2024-05-01 12:00 UTC") == pd.Timestamp("2024-05-01T12:00:00").value


# --------------------------------------------------------------------------- 8. a revision in another case


def test_perfherder_alert_on_a_revision_in_another_case_says_so(tmp_path):
    import json

    points = [
        {
            "revision": f"{i:03d}abcdef",
            "push_timestamp": f"2024-03-{1 + i:02d}T00:00:00",
            "value": 100.0 + i % 3,
        }
        for i in range(20)
    ]
    data = tmp_path / "perf.json"
    data.write_text(json.dumps({"sig1": points}))
    alerts = tmp_path / "alerts.json"
    alert = {"series_signature": {"signature_hash": "sig1"}, "status": 2}
    alerts.write_text(json.dumps({"results": [{"revision": "010ABCDEF", "alerts": [alert]}]}))
    with pytest.raises(InputError) as err:
        load(data, alerts=alerts)
    assert (
        "the data has no such revision (it has '010abcdef', which differs only in case"
        in err.value.problem
    )


# --------------------------------------------------------------------------- 9. Parquet: nulls and column types


def _parquet(path: Path, **columns) -> Path:
    rows = _rows()
    frame = pd.DataFrame(
        {
            "series_id": [r[0] for r in rows],
            "commit": [r[1] for r in rows],
            "timestamp": pd.to_datetime([r[2] for r in rows]),
            "value": [r[3] for r in rows],
        }
    )
    for name, make in columns.items():
        frame[name] = make(frame[name])
    frame.to_parquet(path, index=False)
    return path


def test_parquet_null_timestamp_is_missing_at_its_record(tmp_path):
    def one_null(ts):
        ts = ts.copy()
        ts.iloc[3] = pd.NaT
        return ts

    with pytest.raises(InputError) as err:
        load(_parquet(tmp_path / "nat.parquet", timestamp=one_null))
    assert err.value.row == 4 and err.value.problem == "timestamp is missing"
    every = load(
        _parquet(
            tmp_path / "allnat.parquet",
            timestamp=lambda ts: pd.Series(pd.NaT, index=ts.index, dtype="datetime64[ns]"),
        )
    )
    assert every["s1"].timestamps is None  # as a CSV whose timestamp column is blank


@pytest.mark.parametrize(
    "make",
    [
        lambda v: v.astype("float32"),
        lambda v: v.map(lambda x: __import__("decimal").Decimal(f"{x:.2f}")),
        lambda v: v.map(lambda x: f"{x:.2f}"),
        lambda v: v.astype("category"),
    ],
    ids=["float32", "decimal", "string", "categorical"],
)
def test_parquet_value_column_types_give_the_numbers(tmp_path, make):
    data = load(_parquet(tmp_path / "v.parquet", value=make))
    expected = np.array([r[3] for r in _rows()])
    np.testing.assert_allclose(data["s1"].values, expected, rtol=1e-6)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_parquet_aware_timestamps_are_their_instants_in_utc(tmp_path, zone):
    data = load(
        _parquet(
            tmp_path / "tz.parquet",
            timestamp=lambda ts: ts.dt.tz_localize("UTC").dt.tz_convert(zone),
        )
    )
    assert list(data["s1"].timestamps) == list(
        pd.to_datetime([r[2] for r in _rows()]).to_numpy("datetime64[ns]")
    )


@pytest.mark.parametrize("mode", ["w", "w:gz"])
def test_a_tar_archive_names_the_member_to_extract(tmp_path, mode):
    import io
    import tarfile

    path = tmp_path / ("artifact.tar" + (".gz" if mode.endswith("gz") else ""))
    body = _history_text().encode()
    with tarfile.open(path, mode) as archive:
        info = tarfile.TarInfo("history.csv")
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row is None
    assert (
        err.value.problem
        == f"is a tar archive; extract the history from it first (tar -xf {path} history.csv, then give history.csv)"
    )


def test_a_text_export_named_xls_is_read_as_text(tmp_path):
    path = tmp_path / "report.xls"  # web applications export text under this name
    path.write_text(_history_text())
    assert load(path)["s1"].values.tolist() == [r[3] for r in _rows()]


# --------------------------------------------------------------------------- 11. a spreadsheet's empty rows


def _excel_rows(path: Path, *, blank_at: int | None = None, trailing: int = 3) -> Path:
    lines = ["series_id;commit;timestamp;value"] + [
        ";".join((s, c, t, f"{v:.2f}")) for s, c, t, v in _rows()
    ]
    if blank_at is not None:
        lines.insert(blank_at, ";;;")
    path.write_text("\r\n".join(lines + [";;;"] * trailing) + "\r\n", encoding="utf-8-sig")
    return path


@pytest.mark.parametrize("rows_per_part", [7, 38, 40, 50_000])
def test_empty_rows_a_spreadsheet_exports_at_the_end_are_dropped(tmp_path, rows_per_part):
    path = _excel_rows(tmp_path / "excel.csv")
    expected = [r[3] for r in _rows()]
    assert load(path)["s1"].values.tolist() == expected
    parts = list(long_csv_parts(path, rows_per_part=rows_per_part))
    assert [v for p in parts for v in p["s1"].values] == expected


@pytest.mark.parametrize("rows_per_part", [7, 9, 50_000])
def test_an_empty_row_amid_the_data_is_still_refused_at_its_line(tmp_path, rows_per_part):
    path = _excel_rows(tmp_path / "excel.csv", blank_at=9)
    for read in (load, lambda p: list(long_csv_parts(p, rows_per_part=rows_per_part))):
        with pytest.raises(InputError) as err:
            read(path)
        assert err.value.row == 10 and err.value.problem == "series_id is missing"


def test_a_file_of_empty_rows_only_has_no_data_rows(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("series_id;commit;value\n;;\n;;\n")
    for read in (load, lambda p: list(long_csv_parts(p))):
        with pytest.raises(InputError) as err:
            read(path)
        assert "no data rows" in err.value.problem


# --------------------------------------------------------------------------- 12. Parquet on a pipe


def test_parquet_on_standard_input_is_read(tmp_path):
    import subprocess

    path = _parquet(tmp_path / "h.parquet")
    res = subprocess.run(
        [
            *warm_triage(),
            "convert",
            "--data",
            "-",
            "--out",
            "-",
        ],
        input=path.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr.decode()
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 41 and lines[1] == "s1,c00,2024-03-01T00:00:00,100.0,"


def test_parquet_inside_gzip_without_its_suffix_is_read(tmp_path):
    import gzip

    path = tmp_path / "upload.gz"
    path.write_bytes(gzip.compress(_parquet(tmp_path / "h.parquet").read_bytes()))
    assert load(path)["s1"].values.tolist() == [r[3] for r in _rows()]


# --------------------------------------------------------------------------- 13. one convention per column


def test_a_day_first_slashed_column_is_read_day_first_throughout(tmp_path):
    # a French export: 1 to 14 May, two results a day
    path = tmp_path / "fr.csv"
    lines = ["series_id;commit;timestamp;value"]
    lines += [
        f"s1;c{i:02d};{1 + i // 2:02d}/05/2024 {(i % 2) * 12:02d}:00;{100 + i % 3}"
        for i in range(28)
    ]
    path.write_text("\n".join(lines) + "\n")
    stamps = pd.to_datetime(load(path)["s1"].timestamps)
    assert stamps[0] == pd.Timestamp("2024-05-01T00:00:00")
    assert (np.diff(stamps.asi8) == 12 * 3600 * 10**9).all()


def test_slashed_dates_stay_month_first_when_nothing_says_otherwise():
    from triage.core import timestamps

    instants, _, bad = timestamps.parse_column(
        pd.Series(["05/12/2024", "05/13/2024", "01/05/2024"])
    )
    assert not bad.any()
    assert list(instants) == list(
        pd.to_datetime(["2024-05-12", "2024-05-13", "2024-01-05"]).to_numpy("datetime64[ns]")
    )
    assert (
        timestamps.to_ns("01/05/2024") == pd.Timestamp("2024-01-05").value
    )  # one value: README's rule


def test_a_column_of_both_conventions_is_refused_at_the_odd_row(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("series_id,commit,timestamp,value\ns1,a,13/05/2024,1.5\ns1,b,05/14/2024,1.6\n")
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.row == 3


def test_an_archive_of_several_files_says_to_extract_it(tmp_path):
    import zipfile

    path = tmp_path / "results.zip"  # an asv results directory, zipped
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("results/benchmarks.json", "{}")
        archive.writestr("results/m1/machine.json", "{}")
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.problem.endswith(f"(unzip {path}, then give the extracted file or folder)")


# --------------------------------------------------------------------------- 14. Excel's separator line; JSON values


def test_excel_separator_hint_line_is_named(tmp_path):
    path = tmp_path / "for-excel.csv"
    path.write_text("sep=;\n" + _history_text().replace(",", ";"))
    code, out = invoke(["summary", "--data", path])
    assert code == 2
    assert (
        "row 1: the first line 'sep=;' is Excel's separator hint, not a header: delete that line"
        in flat(out)
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("l.json", '["100.5", "100,5"]'),
        ("l.jsonl", '{"series_id": "s", "commit": "c1", "value": "100,5"}\n'),
    ],
)
def test_json_values_in_a_locale_spelling_say_what_to_change(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load(path)
    assert LOCALE_HINT in err.value.problem


def test_r_write_table_row_names_are_still_read_as_row_names(tmp_path):
    # write.table(df, sep = ","): a row number before each row, none in the header (pandas reads them as the index)
    path = tmp_path / "r.csv"
    lines = ['"series_id","commit","timestamp","value"']
    lines += [f'"{i}","{s}","{c}","{t}",{v:.2f}' for i, (s, c, t, v) in enumerate(_rows(), start=1)]
    path.write_text("\n".join(lines) + "\n")
    expected = [r[3] for r in _rows()]
    assert load(path)["s1"].values.tolist() == expected
    assert [v for p in long_csv_parts(path, rows_per_part=7) for v in p["s1"].values] == expected


def test_a_quoted_list_in_a_comma_separated_otava_file_stays_an_attribute(tmp_path):
    path = tmp_path / "otava.csv"
    lines = ["time,commit,cpus,throughput"] + [f'{t},{c},"0,1",{v:.2f}' for _, c, t, v in _rows()]
    path.write_text("\n".join(lines) + "\n")
    assert load(path).series_ids == ["throughput"]


def test_a_parquet_candidate_file_is_not_told_to_rename_itself(tmp_path):
    data = _long_csv(tmp_path / "h.csv")
    candidates = tmp_path / "cands.parquet"
    pd.DataFrame({"series_id": ["s1"], "commit": ["c20"]}).to_parquet(candidates, index=False)
    code, out = invoke(
        ["score", "--data", data, "--candidates", candidates, "--out", tmp_path / "s.csv"]
    )
    assert code == 2
    assert (
        "cands.parquet: is a Parquet file, and only a history (--data) is read from Parquet"
        in flat(out)
    )
    assert "rename" not in flat(out)


@pytest.mark.parametrize("rows_per_part", [3, 7, 50_000])
def test_detect_parts_read_a_day_first_column_as_load_does(tmp_path, rows_per_part):
    # series a: 1-12 May then 1 June (no day over 12 in its part); series b shows day first (13 May)
    path = tmp_path / "fr.csv"
    a = [f"a,a{i},{d:02d}/05/2024,{100 + i % 3}" for i, d in enumerate(range(1, 13))] + [
        "a,a12,01/06/2024,101"
    ]
    b = [f"b,b{i},{d:02d}/05/2024,{100 + i % 3}" for i, d in enumerate(range(10, 16))]
    path.write_text("series_id,commit,timestamp,value\n" + "\n".join(a + b) + "\n")
    whole = load(path)
    parts = list(long_csv_parts(path, rows_per_part=rows_per_part))
    for sid in ("a", "b"):
        streamed = next(p[sid] for p in parts if sid in p)
        assert list(streamed.timestamps) == list(whole[sid].timestamps)
    assert pd.Timestamp(whole["a"].timestamps[-1]) == pd.Timestamp("2024-06-01")
