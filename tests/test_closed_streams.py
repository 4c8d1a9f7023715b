"""A shell that closed stdout or stderr (``>&-``, ``2>&-``): a clear refusal, never an internal error.

Found in the sixteenth session's walkthrough: with stdout closed every
command ended in "internal error: AttributeError: 'NoneType' object has no
attribute 'flush'" (Python leaves ``sys.stdout`` None), and the lowest free
descriptor, 1, would have gone to the next file opened (a state store).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers_cli import step_history

ENTRY = [sys.executable, "-c", "from triage.cli.app import main; main()"]


def _run(args: list[object], close: int, stdin: str | None = None) -> subprocess.CompletedProcess:
    def close_fd() -> None:
        os.close(close)

    kept = {1: None, 2: subprocess.PIPE}  # the closed one must not be redirected by subprocess
    return subprocess.run([*ENTRY, *map(str, args)], preexec_fn=close_fd, input=stdin, text=True, timeout=300,
                          stdout=subprocess.PIPE if close != 1 else None,
                          stderr=kept[2] if close != 2 else None)


def test_a_closed_stdout_is_a_clear_refusal(tmp_path: Path) -> None:
    data = step_history(tmp_path / "h.csv")
    proc = _run(["summary", "--data", data], close=1)
    assert proc.returncode == 2, proc.stderr
    assert "standard output is closed" in proc.stderr and "internal error" not in proc.stderr


def test_watch_with_a_closed_stdout_creates_no_state(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    proc = _run(["watch", "--state", state], close=1, stdin='{"series_id": "a", "commit": "c1", "value": 1}\n')
    assert proc.returncode == 2, proc.stderr
    assert "standard output is closed" in proc.stderr
    assert not state.exists()


def test_a_closed_stderr_still_runs_and_exits_with_the_commands_code(tmp_path: Path) -> None:
    data = step_history(tmp_path / "h.csv")
    ok = _run(["summary", "--data", data], close=2)
    assert ok.returncode == 0 and "series" in ok.stdout and "40" in ok.stdout
    bad = _run(["summary", "--data", tmp_path / "missing.csv"], close=2)
    assert bad.returncode == 2
