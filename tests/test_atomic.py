"""Atomic writes: the old file survives a failed write, nothing is left behind."""

from __future__ import annotations

import os
import stat

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
