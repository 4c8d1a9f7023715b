"""The tests' fork server (tests/warm_start.py) runs a command as a fresh interpreter does, or falls back to one."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import warm_start
from warm_start import FRESH, warm_triage


def _both(args: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    warm = subprocess.run([*warm_triage(), *args], capture_output=True, text=True, timeout=300, **kwargs)
    fresh = subprocess.run([*FRESH, *args], capture_output=True, text=True, timeout=300, **kwargs)
    return warm, fresh


def _server_log() -> str:
    warm_triage()
    address = next(reversed(warm_start._servers.values()))[1]
    return Path(address).with_name("server.log").read_text()


def _forked() -> int:
    return sum(line.startswith("child ") for line in _server_log().splitlines())


def test_a_forked_command_prints_and_exits_as_a_fresh_one(tmp_path):
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{1 + (i >= 10)}\n" for i in range(20)))
    before = _forked()
    for args in (["summary", "--data", str(data)], ["summary", "--data", str(tmp_path / "absent.csv")],
                 ["candidates", "--data", str(data), "--detector", "nope", "--out", "-"]):
        warm, fresh = _both(args, cwd=tmp_path)
        assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr), args
    assert _forked() - before == 3  # all three were forked, not run fresh


def test_the_working_directory_and_standard_input_are_the_callers(tmp_path):
    (tmp_path / "h.csv").write_text("series_id,commit,value\ns,a,1\ns,b,2\n")
    warm, fresh = _both(["summary", "--data", "h.csv", "--format", "json"], cwd=tmp_path)
    assert warm.returncode == 0 and warm.stdout == fresh.stdout
    warm, fresh = _both(["summary", "--data", "-", "--format", "json"], input="series_id,commit,value\ns,a,1\ns,b,2\n")
    assert warm.returncode == 0 and warm.stdout == fresh.stdout and '"source": "<stdin>"' in warm.stdout


def test_another_environment_or_a_closed_stream_runs_a_fresh_interpreter(tmp_path):
    warm_triage()
    log_before = _server_log()
    env = {**os.environ, "COLUMNS": "61"}  # rich reads it when the CLI's consoles are made, at import
    done = subprocess.run([*warm_triage(), "--version"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and "changepoint-triage" in done.stdout
    assert "exec ['--version']: environment COLUMNS='61'" in _server_log()[len(log_before):]
    closed = subprocess.run([*warm_triage(), "--version"], capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert closed.returncode == 0 and "changepoint-triage" in closed.stdout


def _children_of_servers() -> set[int]:
    servers = {server.pid for server, _ in warm_start._servers.values()}
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if int(status.split("PPid:\t")[1].split()[0]) in servers:
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_stub_killed_by_sigkill_takes_its_command_with_it(tmp_path):
    warm_triage()
    before = _children_of_servers()
    stub = subprocess.Popen([*warm_triage(), "watch", "--state", str(tmp_path / "s.db")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (_children_of_servers() - before) and time.time() < deadline:
        time.sleep(0.05)
    child = _children_of_servers() - before
    assert len(child) == 1
    stub.send_signal(signal.SIGKILL)
    assert stub.wait(timeout=60) == -signal.SIGKILL
    deadline = time.time() + 30
    while _children_of_servers() & child and time.time() < deadline:
        time.sleep(0.05)
    assert not _children_of_servers() & child


def test_a_file_size_limit_holds_in_the_forked_command_as_in_a_fresh_one(tmp_path):
    import resource

    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s{k},c{i},{1 + (i >= 30)}\n" for k in range(40)
                                                         for i in range(60)))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    before = _forked()
    args = ["convert", "--data", str(data), "--out", "x.csv"]
    warm, fresh = _both(args, cwd=tmp_path, preexec_fn=limit)
    assert _forked() - before == 1
    assert warm.returncode == fresh.returncode == 2, warm.stderr
    assert warm.stderr == fresh.stderr and "File too large" in warm.stderr
