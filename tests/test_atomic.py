"""Atomic writes: the old file survives a failed write, nothing is left behind."""

from __future__ import annotations

import os
import stat

import numpy as np
import pandas as pd
import pytest

from triage.core.atomic import atomic_write, write_csv_atomic, write_text_atomic


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    path = write_text_atomic("old\n", tmp_path / "out.txt")

    def half_then_crash(tmp):
        tmp.write_text("half of the new")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, half_then_crash)
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_new_file_gets_the_umask_mode_not_a_private_one(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_csv_atomic(pd.DataFrame({"a": [1, 2]}), tmp_path / "sub" / "x.csv")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert pd.read_csv(path)["a"].tolist() == [1, 2]


def test_fsync_path_writes_the_text(tmp_path):
    path = write_text_atomic("ü\n", tmp_path / "f.json", fsync=True)
    assert path.read_text(encoding="utf-8") == "ü\n"


# --------------------------------------------------------------------------- what the destination is


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real" / "out.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_csv_atomic(pd.DataFrame({"a": [1]}), link)
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert target.read_text() == "a\n1\n"
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "real" / "new.csv")
    write_text_atomic("x\n", dangling)
    assert dangling.is_symlink() and (tmp_path / "real" / "new.csv").read_text() == "x\n"


def test_a_device_is_written_into_never_replaced(tmp_path):
    devnull = "/dev/null"
    if not os.path.exists(devnull):
        pytest.skip("no /dev/null here")
    before = os.stat(devnull)
    write_text_atomic("discarded\n", devnull)
    after = os.stat(devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_fifo_receives_the_content(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    write_text_atomic("through the pipe\n", fifo)
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_dash_is_stdout(capfdbinary):
    write_csv_atomic(pd.DataFrame({"a": [1, 2]}), "-")
    assert capfdbinary.readouterr().out == b"a\n1\n2\n"


def test_a_directory_or_a_file_parent_is_a_clear_error(tmp_path):
    from triage.core.errors import InputError

    with pytest.raises(InputError, match="is a directory; expected a file path"):
        write_text_atomic("x", tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="a parent of this path is a file"):
        write_text_atomic("x", tmp_path / "file" / "out.csv")
    assert (tmp_path / "file").read_text() == ""


def test_json_lines_format(tmp_path):
    from triage.core.atomic import write_frame

    path = write_frame(pd.DataFrame({"series_id": ["s"], "p": [0.5]}), tmp_path / "x.jsonl", "json")
    assert path.read_text() == '{"series_id":"s","p":0.5}\n'


def test_json_lines_keep_every_digit_slashes_and_missing_cells(tmp_path):
    """As the CSV: a probability reads back exactly; ids with '/' unescaped; NaN, None and NaT as null."""
    import json

    from triage.core.atomic import write_frame

    p = 0.12345678901234568
    frame = pd.DataFrame({
        "series_id": ["django-asv/query", "r"], "p_true": [p, float("nan")], "index": np.array([3, 4], dtype=np.int64),
        "timestamp": pd.to_datetime(["2024-05-01T12:00:00", None]), "note": ["x", None], "flag": [True, False],
    })
    text = write_frame(frame, tmp_path / "x.jsonl", "json").read_text()
    assert "django-asv/query" in text and "\\/" not in text
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows[0] == {"series_id": "django-asv/query", "p_true": p, "index": 3, "timestamp": "2024-05-01T12:00:00.000",
                       "note": "x", "flag": True}
    assert rows[1]["p_true"] is None and rows[1]["timestamp"] is None and rows[1]["note"] is None
    gz = write_frame(frame, tmp_path / "x.jsonl.gz", "json")
    import gzip

    assert gzip.decompress(gz.read_bytes()).decode() == text


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.zst", ".csv"])
def test_a_table_is_compressed_as_its_name_says_and_reads_back(tmp_path, suffix):
    from triage.readers.source import compression

    frame = pd.DataFrame({"series_id": ["s"] * 3, "commit": ["a", "b", "c"], "value": [1.0, 2.0, 3.5]})
    path = write_csv_atomic(frame, tmp_path / f"t{suffix}")
    assert compression(path) == {".csv.gz": "gzip", ".csv.zst": "zstd", ".csv": None}[suffix]
    assert pd.read_csv(path).equals(frame)
