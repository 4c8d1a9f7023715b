"""``triage watch`` on a real pipe: bytes that are not UTF-8 are refused naming the line.

They used to be replaced by U+FFFD, so two different commit ids (``\\xff`` and
``\\xfe``) became the same one, and the second result was taken for a
re-delivery of the first and silently dropped.

Those bytes go through a real pipe to a process of its own (:mod:`warm_start`). A store built with
other loop settings and a --csv that is a pipe or a device are refused in this
interpreter (:func:`watch`: stdout and stderr apart), as no process matters there.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_cli import watch_apart as watch
from warm_start import warm_triage

TRIAGE = Path(sys.executable).parent / "triage"

pytestmark = pytest.mark.skipif(
    not TRIAGE.exists(), reason="the triage script is not installed beside this Python"
)


@contextlib.contextmanager
def at_most(seconds: int):
    """Interrupt the block after ``seconds`` (a watch that opens a pipe with no writer waits for ever)."""

    def give_up(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def line(commit: bytes, value: float) -> bytes:
    return (
        b'{"series_id": "s1", "commit": "' + commit + b'", "value": ' + str(value).encode() + b"}\n"
    )


def test_a_line_that_is_not_utf8_is_refused_and_the_lines_before_it_are_stored(tmp_path):
    state = tmp_path / "state.db"
    stdin = line(b"c1", 100.0) + line(b"c2", 101.0) + line(b"c\xff", 102.0) + line(b"c\xfe", 103.0)
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", "--state", str(state), "--confirm-after", "0", "--min-pre", "0"],
        input=stdin,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr.decode()
    err = done.stderr.decode()
    assert "<stdin>, line 3: not UTF-8 text" in err and "Traceback" not in err
    decided = [json.loads(x)["commit"] for x in done.stdout.decode().splitlines()]
    assert decided == ["c1", "c2"]
    db = sqlite3.connect(state)
    try:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type = 'table'")]
    finally:
        db.close()
    assert tables  # the store was written, not left half-made


def test_valid_utf8_commit_ids_pass_unchanged(tmp_path):
    stdin = line("é-1".encode(), 100.0) + line("漢".encode(), 101.0)
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", "--confirm-after", "0", "--min-pre", "0"],
        input=stdin,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(x)["commit"] for x in done.stdout.decode().splitlines()] == ["é-1", "漢"]


def results(start: int, stop: int, shift_from: int = 20) -> bytes:
    return b"".join(
        line(f"c{i}".encode(), 100.0 + i % 3 + (25.0 if i >= shift_from else 0.0))
        for i in range(start, stop)
    )


def stored_rows(state: Path) -> list[tuple]:
    db = sqlite3.connect(state)
    try:
        return sorted(db.execute("select * from decisions")) + sorted(
            db.execute("select * from series")
        )
    finally:
        db.close()  # an open connection would make the next watch see the store in use


@pytest.fixture(scope="module")
def k4_state(tmp_path_factory) -> Path:
    """A store decided by the default loop (K = 4) on 40 commits, built once for the module."""
    state = tmp_path_factory.mktemp("k4") / "state.db"
    code, _, err = watch(["--state", state], stdin=results(0, 40))
    assert code == 0, err
    return state


@pytest.mark.parametrize(
    "other", [["--confirm-after", "0"], ["--confirm-after", "6"], ["--min-pre", "30"]]
)
def test_a_state_built_with_other_loop_settings_is_refused_and_kept(tmp_path, k4_state, other):
    # Decided with K = 4, a store holds four commits waiting for their confirmation;
    # with K = 0 they were never decided, and nothing was printed for the new ones.
    import shutil

    state = tmp_path / "state.db"
    shutil.copyfile(k4_state, state)  # each case its own copy of the store built once
    before = stored_rows(state)
    code, out, err = watch(["--state", state, *other], stdin=results(40, 50))
    assert code == 2, err
    assert (
        f"error: {state}: the state was built with" in err
        and other[0].lstrip("-").replace("-", "_") in err
    )
    assert out == ""
    assert stored_rows(state) == before
    code, out, err = watch(["--state", state, "--reset-state", *other], stdin=results(0, 50))
    assert code == 0, err
    assert out


def test_watch_csv_names_a_device_or_pipe_as_such_not_as_missing(tmp_path):
    import os

    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        with at_most(120):
            code, _, err = watch(["--csv", path], stdin=b"")
        assert code == 2, err
        assert f"error: {path}: is not a regular file" in err and "no such file" not in err
