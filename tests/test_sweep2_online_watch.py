"""``triage watch`` in production: ids a state file cannot hold, and an interrupted watcher's exit status.

JSON lines on standard input go to a process of its own (forked from the tests' warm server,
:mod:`warm_start`; Ctrl-C's test starts the installed script): only a real pipe (a file
descriptor) is read in batches, and the good line before a bad one *in the same batch* is
what those tests pin (in this interpreter, standard input has no descriptor: batches of one
line). So do Ctrl-C, a followed file rotated under the watcher, and raw bytes with a BOM.
The refused --csv files are read the same way in any process: checked in this interpreter
(:func:`watch`, stdout and stderr apart).
"""

from __future__ import annotations

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

FAST = ["--confirm-after", "0", "--min-pre", "0"]


def stored(state: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(state)
    try:
        return db.execute("SELECT series_id, commit_id FROM decisions ORDER BY 1, 2").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("field", ["series_id", "commit"])
def test_a_lone_surrogate_escape_in_an_id_is_refused_naming_the_line(tmp_path, field):
    # "\ud800" is valid JSON but no Unicode text: SQLite cannot store it. It used to
    # fail the whole batch with a bare "'utf-8' codec can't encode" (no line), and the
    # good line before it, in the same batch, was neither printed nor stored.
    state = tmp_path / "state.db"
    bad = {"series_id": "s1", "commit": "c2", "value": 2.0}
    bad[field] = bad[field] + "\ud800"
    stdin = json.dumps({"series_id": "s1", "commit": "c1", "value": 1.0}) + "\n" + json.dumps(bad) + "\n"
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", "--state", str(state), *FAST], input=stdin, capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "<stdin>, line 2:" in done.stderr and field in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert [json.loads(x)["commit"] for x in done.stdout.splitlines()] == ["c1"]
    assert stored(state) == [("s1", "c1")]


def test_an_interrupted_watcher_exits_non_zero_and_keeps_what_it_printed(tmp_path):
    # Ctrl-C used to end the command with exit status 0, as if the input had been read to its end.
    state = tmp_path / "state.db"
    # Ctrl-C's default action for the child, whatever the test worker's: a process
    # started with SIGINT ignored keeps it ignored (Python then installs no handler),
    # which made this test exit 0 whenever the xdist worker ignored SIGINT.
    proc = subprocess.Popen(
        [str(TRIAGE), "watch", "--state", str(state), *FAST],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"series_id": "s1", "commit": "c1", "value": 1.0}) + "\n")
        proc.stdin.flush()
        first = proc.stdout.readline()  # decided and stored: the watcher now waits for more
        assert json.loads(first)["commit"] == "c1"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert stored(state) == [("s1", "c1")]


def test_an_integer_too_long_for_python_is_refused_naming_the_line(tmp_path):
    # A value of 5,000 digits: json.loads raises a plain ValueError (Python's
    # int-string limit), which used to escape the line check: the error named no
    # line and the good line before it, in the same batch, was neither printed nor stored.
    state = tmp_path / "state.db"
    stdin = (
        json.dumps({"series_id": "s1", "commit": "c1", "value": 1.0}) + "\n"
        + '{"series_id": "s1", "commit": "c2", "value": 1' + "0" * 5000 + "}\n"
    )
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", "--state", str(state), *FAST], input=stdin, capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "<stdin>, line 2:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert [json.loads(x)["commit"] for x in done.stdout.splitlines()] == ["c1"]
    assert stored(state) == [("s1", "c1")]


def test_a_byte_order_mark_before_the_first_json_line_is_skipped(tmp_path):
    # As --csv skips it (PowerShell's Out-File and some editors write one).
    stdin = "\ufeff" + json.dumps({"series_id": "s1", "commit": "c1", "value": 1.0}) + "\n"
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", *FAST], input=stdin.encode(), capture_output=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(x)["commit"] for x in done.stdout.decode().splitlines()] == ["c1"]


@pytest.mark.parametrize("header", ["series_id,commit,value,value", "series_id,commit,series_id,value"])
def test_a_csv_header_naming_a_needed_column_twice_is_refused(tmp_path, header):
    # Which of the two columns was read depended on their order (the last one won), silently.
    data = tmp_path / "r.csv"
    data.write_text(header + "\na,c1,1,2\n")
    code, out, err = watch(["--csv", data, *FAST])
    assert code == 2, err
    assert "r.csv, line 1:" in err and "twice" in err, err
    assert out == ""


@pytest.mark.parametrize("rotation", ["truncate", "replace"])
def test_a_followed_csv_that_is_truncated_or_replaced_stops_the_watcher_with_an_error(tmp_path, rotation):
    # logrotate's copytruncate, or a new file renamed over the old one: the
    # watcher used to wait forever at its old position (or on the old file),
    # deciding nothing more and saying nothing.
    data = tmp_path / "r.csv"
    data.write_text("series_id,commit,value\ns1,c1,1.0\n")
    proc = subprocess.Popen(
        [*warm_triage(str(TRIAGE)), "watch", "--csv", str(data), "--follow", "--poll", "0.05", *FAST],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["commit"] == "c1"
        if rotation == "truncate":
            data.write_text("series_id,commit,value\n")
        else:
            new = tmp_path / "new.csv"
            new.write_text("series_id,commit,value\ns1,c2,1.0\n")
            new.replace(data)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "r.csv" in err and ("truncated" in err or "replaced" in err), err


def test_an_unknown_explain_mode_names_the_option_and_creates_no_state_file(tmp_path):
    # It was refused as "explain must be ..." after the state file had been created.
    from helpers_cli import flat, invoke

    state = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", state, "--explain", "bogus"], stdin="")
    assert code == 2, out
    assert "--explain" in flat(out) and "bogus" in flat(out), out
    assert not state.exists()


@pytest.mark.parametrize("cell", ["1_000", "\uff11\uff12"])
def test_a_csv_value_with_digit_underscores_or_non_ascii_digits_is_refused_as_detect_refuses_it(tmp_path, cell):
    # Python's float() reads "1_000" as 1000.0 and full-width "１２" as 12.0; detect on the same file refuses them.
    data = tmp_path / "r.csv"
    data.write_text(f"series_id,commit,value\na,c1,1.5\na,c2,{cell}\n", encoding="utf-8")
    code, out, err = watch(["--csv", data, *FAST])
    assert code == 2, err
    assert f"r.csv, line 3: value {cell!r} is not a number" in err, err
    assert [json.loads(x)["commit"] for x in out.splitlines()] == ["c1"]
