"""A non-UTF-8 byte in a CSV is reported at its own line, not at the header's or at none.

Text readers decode a buffer at a time (``readline`` 8 KiB, pandas more), so
the byte offset of their error says nothing about the file's line; the line
is found again in the file (:func:`triage.readers.source.non_utf8_line`).
"""

from __future__ import annotations

import gzip

import pytest
from helpers_cli import flat, invoke

import triage.readers.source as source
from triage.core.errors import InputError
from triage.loaders import load, long_csv_parts


def _long_csv(path, rows: int, bad_line: int) -> None:
    """A long CSV of ``rows`` data rows whose file line ``bad_line`` holds a Latin-1 ``é`` (0xE9)."""
    lines = ["series_id,commit,value"] + [f"s{i // 100},c{i},{i}.5" for i in range(rows)]
    lines[bad_line - 1] = lines[bad_line - 1].replace("c", "caf\xe9-", 1)
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))


@pytest.mark.parametrize(("rows", "bad_line"), [(3, 4), (5000, 3001)])
def test_load_names_the_line_of_the_bad_byte(tmp_path, rows, bad_line):
    # rows=3: the byte is inside the header's readline buffer (was "row 1");
    # rows=5000: beyond it, inside pandas' (was no row at all).
    path = tmp_path / "history.csv"
    _long_csv(path, rows, bad_line)
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.row == bad_line
    assert "not a UTF-8 text file" in info.value.problem


def test_streamed_parts_name_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "history.csv"
    _long_csv(path, 5000, 4321)
    with pytest.raises(InputError) as info:
        for _ in long_csv_parts(path, rows_per_part=1000):
            pass
    assert info.value.row == 4321


def test_convert_of_a_gzipped_file_and_of_stdin_names_the_line(tmp_path):
    path = tmp_path / "history.csv"
    _long_csv(path, 5000, 2500)
    packed = tmp_path / "history.csv.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    code, out = invoke(["convert", "--data", packed, "--out", tmp_path / "out.csv"])
    assert code == 2
    assert f"{packed}, row 2500: not a UTF-8 text file" in flat(out)
    code, out = invoke(["convert", "--data", "-", "--out", tmp_path / "out.csv"], stdin=path.read_bytes())  # type: ignore[arg-type]
    assert code == 2
    assert "<stdin>, row 2500: not a UTF-8 text file" in flat(out)


def test_an_otava_csv_names_the_line(tmp_path):
    path = tmp_path / "otava.csv"
    path.write_bytes(b"time,commit,metric\n2024-01-01,a,1\n2024-01-02,b,2\n2024-01-03,\xff,3\n")
    with pytest.raises(InputError) as info:
        load(path, layout="otava")
    assert info.value.row == 4


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_a_character_cut_by_a_chunk_end_is_not_an_error(tmp_path, monkeypatch, chunk):
    # 2-, 3- and 4-byte characters across every chunk boundary, then a lone continuation byte on line 4.
    path = tmp_path / "x.csv"
    path.write_bytes("é\n€x\n😀\n".encode() + b"ab\x80\n")
    monkeypatch.setattr(source, "UTF8_CHUNK", chunk)
    assert source.non_utf8_line(path) == 4
    path.write_bytes("é\n€x\n😀\n".encode())
    assert source.non_utf8_line(path) is None
    path.write_bytes(b"a\nb\n\xe2\x82")  # the file ends inside a character
    assert source.non_utf8_line(path) == 3


def test_a_gab_data_js_and_an_otava_config_name_the_line(tmp_path):
    data_js = tmp_path / "data.js"
    data_js.write_bytes(b'window.BENCHMARK_DATA = {\n  "entries": {\n    "x\xe9": []\n  }\n}\n')
    with pytest.raises(InputError) as info:
        load(data_js)
    assert info.value.row == 3
    config = tmp_path / "otava.yaml"
    config.write_bytes(b"tests:\n  t:\n    type: csv\n    file: caf\xe9.csv\n")
    with pytest.raises(InputError) as info:
        load(config)
    assert info.value.row == 4
