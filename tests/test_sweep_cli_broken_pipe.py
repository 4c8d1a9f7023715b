"""A reader that goes away (``triage ... | head -1``): exit 141 quietly, nothing half-written.

Real processes and real pipes: ``triage`` (``main()`` in a process forked from the tests' warm
server, :mod:`warm_start`; a fresh interpreter where the environment differs) writes
into a pipe whose read end is already closed (every write fails with EPIPE),
or into one read by a process that takes the first line and leaves, as
``head -1`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warm_start import warm_triage

from triage.synthetic import generate, preset_config

TRIAGE = Path(sys.executable).parent / "triage"
#: 128 + SIGPIPE, what a shell reports for ``yes | head -1``'s ``yes`` (see triage.cli.app).
BROKEN_PIPE_EXIT = 141

pytestmark = pytest.mark.skipif(
    not TRIAGE.exists(), reason="the triage script is not installed beside this Python"
)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pipes")
    path = folder / "h.csv"
    generate(preset_config("small", n_series=6), seed=3).to_frame().to_csv(path, index=False)
    return path


def run_into_closed_pipe(args: list[str], cwd: Path, tmpdir: Path) -> subprocess.CompletedProcess:
    """``triage ARGS`` with stdout a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*warm_triage(str(TRIAGE)), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, "TMPDIR": str(tmpdir), "COLUMNS": "120"},
            timeout=300,
        )
    finally:
        os.close(write_end)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize(
    "case", ["table", "csv-out", "json-out", "help", "version", "detectors", "summary"]
)
def test_a_closed_pipe_is_exit_141_with_nothing_on_stderr_and_no_temporary_file(
    case, history, tmp_path
):
    args = {
        "table": [
            "candidates",
            "--data",
            str(history),
            "--detector",
            "perfherder",
            "--out",
            "c.csv",
        ],
        "csv-out": ["candidates", "--data", str(history), "--detector", "perfherder", "--out", "-"],
        "json-out": [
            "candidates",
            "--data",
            str(history),
            "--detector",
            "perfherder",
            "--out",
            "-",
            "--format",
            "json",
        ],
        "help": ["candidates", "--help"],
        "version": ["--version"],
        "detectors": ["detectors"],
        "summary": ["summary", "--data", str(history)],
    }[case]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    done = run_into_closed_pipe(args, tmp_path, tmpdir)
    assert done.returncode == BROKEN_PIPE_EXIT, done.stderr.decode()
    assert done.stderr == b""
    assert leftovers(tmpdir) == []
    if case == "table":
        # The file it owns was written whole before the line about it failed.
        assert (tmp_path / "c.csv").read_text().startswith("series_id,commit")


def test_head_dash_1_reads_one_line_and_the_writer_stops_quietly(history, tmp_path):
    # Big enough to overflow the pipe's buffer: the writer is still writing when the reader leaves.
    big = tmp_path / "big.csv"
    generate(preset_config("small", n_series=60), seed=5).to_frame().to_csv(big, index=False)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    writer = subprocess.Popen(
        [*warm_triage(str(TRIAGE)), "convert", "--data", str(big), "--out", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    assert writer.stdout is not None and writer.stderr is not None
    first = writer.stdout.readline()
    writer.stdout.close()
    err = writer.stderr.read()
    code = writer.wait(timeout=300)
    assert first.startswith(b"series_id,")
    assert code == BROKEN_PIPE_EXIT, err.decode()
    assert (
        b"Traceback" not in err and b"Exception ignored" not in err and b"error" not in err.lower()
    )
    assert leftovers(tmpdir) == []


def test_watch_into_a_closed_pipe_keeps_its_state_and_replays_on_the_next_run(tmp_path):
    # Decisions are committed before they are printed: the one whose line could not be
    # written is in the store, and the next run on the same input says it is a replay.
    lines = "".join(
        json.dumps(
            {
                "series_id": "s1",
                "commit": f"c{i}",
                "value": 100.0 + (i % 3) + (25.0 if i > 20 else 0.0),
            }
        )
        + "\n"
        for i in range(40)
    )
    state = tmp_path / "state.db"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*warm_triage(str(TRIAGE)), "watch", "--state", str(state)],
            input=lines.encode(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    finally:
        os.close(write_end)
    assert done.returncode == BROKEN_PIPE_EXIT, done.stderr.decode()
    assert done.stderr == b""
    again = subprocess.run(
        [*warm_triage(str(TRIAGE)), "watch", "--state", str(state)],
        input=lines.encode(),
        capture_output=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr.decode()
    records = [json.loads(line) for line in again.stdout.decode().splitlines()]
    assert records and all(r.get("replayed") for r in records)


@pytest.mark.parametrize("case", ["score", "label", "evaluate"])
def test_a_closed_pipe_still_leaves_the_out_file_whole(case, history, tmp_path):
    """A walkthrough's `triage score ... --out h.csv --show 0 | head -1`: exit 141 as it should, but
    h.csv was missing in 4 of 5 runs (score, label and evaluate printed their tables and summary
    line before writing, so the reader leaving ended them before the file asked for)."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    if case == "score":
        made = subprocess.run([str(TRIAGE), "candidates", "--data", str(history), "--detector", "perfherder",
                               "--out", "c.csv"], cwd=tmp_path, capture_output=True, timeout=300)
        assert made.returncode == 0, made.stderr.decode()
        args, written = ["score", "--data", str(history), "--candidates", "c.csv", "--out", "s.csv"], "s.csv"
    elif case == "label":
        args, written = ["label", "--data", str(history), "--which", "all", "--out", "s.csv"], "s.csv"
    else:
        more = tmp_path / "more.csv"  # enough candidates of each kind for a split
        generate(preset_config("small", n_series=40), seed=3).to_frame().to_csv(more, index=False)
        args = ["evaluate", "--data", str(more), "--splits", "2", "--models", "rf", "--split-kinds", "random",
                "--no-track", "--out", "ev"]
        written = "ev/summary.md"
    done = run_into_closed_pipe(args, tmp_path, tmpdir)
    assert done.returncode == BROKEN_PIPE_EXIT, done.stderr.decode()
    assert (tmp_path / written).is_file()
    if written.endswith(".csv"):
        assert (tmp_path / written).read_text().startswith("series_id,commit")
    assert leftovers(tmpdir) == []
