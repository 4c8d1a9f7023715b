"""Walkthrough s18: the operator running ``triage watch`` / ``triage detect`` as a service, at resource limits.

Defects found (what the user did, what went wrong, what happens now):

1. Ran ``triage watch`` under a supervisor that sets ``PYTHONUNBUFFERED=1``
   (systemd units and container images commonly do) with its output in a
   file and a file-size limit (``ulimit -f``; a disk quota acts alike): the
   write that crossed the limit wrote part of the decisions and the rest was
   dropped without a word, because an unbuffered standard output writes
   once and does not look at how much was written. The output ended in half a
   line and the watcher exited 0 (2,000 real results: 1,781 of 1,988 lines,
   the last cut). Now the decisions are written until all of them are out
   or the system refuses: one line naming standard output, exit 2, every
   decision stored with ``--state``.
2. Ran ``triage detect --out FILE`` (or ``--out -``) under a file-size limit
   smaller than its output: "error: File too large", naming no file and not
   saying what became of the output. Now the line names the output (or
   standard output), says it is as it was (or was not created, or got
   nothing) and what to do; exit 2 as before.
3. Ran ``triage watch --state FILE`` under a memory limit (``ulimit -v``, a
   container's) and piped it a backlog of many series: the memory ran out in
   the middle (100,000 series states are kept by default) and the watcher
   ended with a ``MemoryError`` traceback, exit 1, or with "internal error:
   MemoryError: Out of memory while compressing data", or with a second
   traceback because reporting the first needed memory too; nothing said
   what was kept or what to change. Now: one line saying the memory ran out,
   that every printed decision is stored (the batch being decided was not),
   how many series states were held and to lower ``--cache-series``; exit 2,
   the store whole. And ``--cache-series`` now bounds what it says: a piped
   backlog was decided in batches of 16,384 lines whatever it was, every
   series of a batch in memory (``--cache-series 2000`` still held 16,735
   states when the memory ran out); with ``--state`` a batch is now at most
   ``--cache-series`` lines, and the same backlog passes the same limit.
4. Fed ``triage watch`` from two producers that spell one benchmark
   differently, ``db.Insert`` and ``db.insert`` (ids taken as
   case-insensitive), or one with a trailing space (``db.insert ``): each
   spelling became a series of its own, each with part of the history,
   without a word; the trailing space was a series here while ``detect`` on
   the same feed (and ``watch --csv``) read it stripped, as ``db.insert``
   (with a warning), so the two commands found different change points.
   The ids stay apart (a store keys them as sent), but the first line of each
   such new id now warns on stderr, naming both ids and how they differ
   (case, surrounding spaces, Unicode form), also against a store's series
   after a restart.
5. Ran ``triage detect --jobs 2 --workers processes`` under a low open-files
   limit (``ulimit -n 16``, a service unit's ``LimitNOFILE``): "error: Too
   many open files", naming neither the limit nor what needed the files.
   Now the line names ``--jobs 2 --workers processes``, the limit, that each
   worker process needs pipes and locks (threads need none) and what to do;
   exit 2 as before.
6. Ran ``triage watch --state FILE`` under a file-size limit (``ulimit -f``,
   ``LimitFSIZE``) that the store outgrew: "cannot write the state file
   (disk I/O error) ...: free space or fix the file system", SQLite's word
   for the refused write, which sent the operator looking for a broken disk.
   The store was whole (every printed decision stored, the refused batch
   not). Now the line also says this process may write files of at most N
   bytes (ulimit -f) and to raise the limit.
7. Ran ``triage detect`` under a memory limit (``ulimit -v``) too small for
   its replay: a ``MemoryError`` traceback followed by a second one (the
   report of the first ran out of memory too), exit 1; with ``--jobs 2``,
   "internal error: RuntimeError: can't start new thread"; or, when it ran
   out while the CSV was parsed, "not a valid CSV file: Error tokenizing
   data. C error: out of memory", calling a good file invalid. Now: one line
   saying the memory ran out while reading and replaying, the limit, that nothing was
   written (the output as it was) and what to do; exit 2. (``watch``'s
   message of defect 3 names the limit too.)
8. The producer piping into ``triage watch --state`` was killed in the
   middle of writing a line, so standard input ended in half a record:
   "error: <stdin>, line 101: not a JSON object: Unterminated string
   starting at", which read as a garbled feed (and is itself cut short).
   Now the line adds that the input ended in the middle of this line,
   without a line end (was its producer cut off?), and that every line
   before it is decided; exit 2 and the store as before.
9. Started ``triage watch --state new.db`` with a new store on a full disk
   (a 600 kB tmpfs filled) or under ``ulimit -f 1``: "cannot open the state
   file: database or disk is full" (or "disk I/O error"), and an empty
   ``new.db`` was left behind. Once space was freed, the next start called
   that file damaged ("is empty (0 bytes): truncated, or not a store written
   by triage; recover with ... --reset-state"), a recovery for a file no
   store was ever written to. Now a new file whose creation fails is removed
   again (a file that was there before never is), and the line names the
   file-size limit when there is one.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from helpers_cli import flat, invoke, run_triage
from warm_start import warm_triage

from triage.online.state_store import StateStore


def _feed(n: int, series: str = "s1") -> str:
    """``n`` JSON lines of one series: a step of +50 % at the middle (decisions from the fifth line on)."""
    return "".join(
        json.dumps(
            {
                "series_id": series,
                "commit": f"c{i:03d}",
                "value": 1.0 + 0.5 * (i >= n // 2) + 0.01 * (i % 3),
            }
        )
        + "\n"
        for i in range(n)
    )


def _run_limited(
    args: list[object],
    stdin: str,
    stdout: Path,
    *,
    fsize: int | None = None,
    env: dict[str, str] | None = None,
    append: bool = False,
) -> subprocess.CompletedProcess:
    """``triage ARGS`` in a process of its own, standard output into ``stdout``, at most ``fsize`` bytes a file.

    (Forked from the tests' warm server, :mod:`warm_start`, which sets the limit in the child before
    the command runs; a fresh interpreter when ``env`` changes the environment.)

    (The checkout's revision is read under the same limit: ``triage.core.versions`` asks git for
    no optional locks, so git writes nothing there; these runs once left ``.git/index.lock``.)
    """

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    with open(stdout, "ab" if append else "wb") as out:
        return subprocess.run(
            [*warm_triage(), *map(str, args)],
            input=stdin.encode(),
            stdout=out,
            stderr=subprocess.PIPE,
            preexec_fn=limit,
            timeout=300,
            env={**os.environ, **(env or {})},
        )


def _stderr(res: subprocess.CompletedProcess) -> str:
    return " ".join(res.stderr.decode().split())


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_watch_output_cut_by_a_file_size_limit_is_an_error(tmp_path, unbuffered):
    """Defect 1: with PYTHONUNBUFFERED=1 the output was cut at the limit and the watcher exited 0."""
    db, out = tmp_path / "state.db", tmp_path / "decisions.jsonl"
    feed = _feed(60)
    code, whole_text = invoke(
        ["watch", "--state", tmp_path / "whole.db", "--explain", "none"], stdin=feed
    )
    assert code == 0, whole_text
    whole = whole_text.encode()
    assert whole.count(b"\n") == 57 and len(whole) > 6000  # 56 decisions and the end-of-input line (stderr)

    # An output appended to (a service's log) 6,000 bytes short of the limit: the store fits, the decisions do not.
    limit = 2**20
    out.write_bytes(b"#" * (limit - 6000))
    res = _run_limited(
        ["watch", "--state", db, "--explain", "none"],
        feed,
        out,
        fsize=limit,
        env={"PYTHONUNBUFFERED": unbuffered},
        append=True,
    )
    text = _stderr(res)
    assert res.returncode == 2, text
    assert "error: <stdout>: cannot write the decisions (File too large)" in text, text
    written = out.read_bytes()[limit - 6000 :]
    assert whole.startswith(written) and len(written) == 6000
    with StateStore(db) as store:  # every decision stored: a re-run prints them again
        assert store.n_decisions() == 56


def _steps_csv(path: Path) -> Path:
    """20 series of 400 commits, a level change every 25 commits: 300 change points (24 kB as JSON lines)."""
    import random

    rng = random.Random(3)
    rows = [
        f"s{s},c{i:04d},{100 * 1.3 ** ((i // 25) % 4) + rng.gauss(0, 0.5):.4f}\n"
        for s in range(20)
        for i in range(400)
    ]
    path.write_text("series_id,commit,value\n" + "".join(rows))
    return path


def test_detect_output_beyond_a_file_size_limit_names_the_output(tmp_path):
    """Defect 2: 'error: File too large', naming no file and not saying what became of --out."""
    data = _steps_csv(tmp_path / "steps.csv")
    out = tmp_path / "cps.json"
    out.write_text("kept\n")
    for target, kept in (
        (out, f"{out} is as it was"),
        ("-", "nothing was written to standard output"),
    ):
        res = _run_limited(
            ["detect", "--data", data, "--out", target, "--format", "json"],
            "",
            tmp_path / "stdout",
            fsize=10_000,
        )
        text = _stderr(res)
        assert res.returncode == 2, text
        name = "<stdout>" if target == "-" else target
        assert f"error: {name}: cannot write the change points (File too large); {kept}" in text, (
            text
        )
    assert out.read_text() == "kept\n"
    assert (tmp_path / "stdout").read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cps.json",
        "stdout",
        "steps.csv",
    ]  # no temporary left


#: ``triage ARGS`` in a fresh interpreter whose address space is limited to what it holds after
#: loading the model and compiling the loop's kernels, plus ``argv[1]`` bytes.
OUT_OF_MEMORY = """
import resource, sys
from triage.cli.app import main
from triage.model_lookup import resolve_model
from triage.online.loop import OnlineTriage
from triage.core.history import Dataset, History
loop = OnlineTriage.from_model_dir(resolve_model("default", "online"))
loop.process_many([{"series_id": "w", "commit": f"c{i}", "value": 1.0 + i % 3} for i in range(12)])
# detect's replay kernels too (a lean replay's round kernels): loaded under the limit, LLVM itself ran out
# once in six full runs ("LLVM ERROR: out of memory", SIGABRT), a crash no handler can turn into a message.
loop.replay(Dataset([History(f"w{k}", [f"c{i}" for i in range(12)], [1.0 + i % 3 for i in range(12)], None)
                     for k in range(3)]), keep_states=False)
del loop
size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size + int(sys.argv.pop(1)), resource.RLIM_INFINITY))
main()
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs /proc to size the limit")
def test_watch_out_of_memory_says_what_is_stored_and_what_to_change(tmp_path):
    """Defect 3: a MemoryError traceback (or an internal error), exit 1, nothing said about the store."""
    import random

    rng = random.Random(1)
    feed = "".join(
        json.dumps({"series_id": f"x{s}", "commit": f"c{c}", "value": 1 + rng.random()}) + "\n"
        for c in range(2)
        for s in range(30_000)
    )
    db = tmp_path / "state.db"

    def run(*args: object) -> subprocess.CompletedProcess:
        command = [
            sys.executable,
            "-c",
            OUT_OF_MEMORY,
            str(120 * 2**20),
            "watch",
            "--state",
            db,
            *args,
        ]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
        return subprocess.run(
            list(map(str, command)),
            input=feed,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    res = run()
    text = " ".join(res.stderr.split())
    assert res.returncode == 2, text
    assert "Traceback" not in text and "internal error" not in text, text
    assert "error: out of memory while deciding (this process may use " in text, text
    assert f"MB of address space: ulimit -v): every decision printed is stored in {db}" in text, (
        text
    )
    assert "give a lower --cache-series or more memory" in text, text
    with StateStore(db) as store:  # whole batches only: a series without its state would be refused
        arrivals = store.n_arrivals()
        assert arrivals < 60_000 and len(store.series_ids()) == min(arrivals, 30_000)

    res = run("--cache-series", 2000)  # the advice: the same backlog through the same limit
    assert res.returncode == 0, res.stderr
    with StateStore(db) as store:
        assert store.n_arrivals() == 60_000 and len(store.series_ids()) == 30_000


def test_watch_warns_of_series_ids_differing_only_by_case_or_spaces(tmp_path):
    """Defect 4: ids differing by case or a trailing space split a series in two without a word."""
    lines = []
    for i in range(30):
        for sid in ("db.Insert", "db.insert", "db.insert "):
            lines.append(
                json.dumps({"series_id": sid, "commit": f"c{i:02d}", "value": 1.0 + 0.01 * (i % 3)})
            )
    db = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", db, "--explain", "none"], stdin="\n".join(lines) + "\n")
    assert code == 0, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: series 'db.insert' (<stdin>, line 2) differs from series 'db.Insert' only by case: watch "
        "decides them as two series; if they are one, send one spelling",
        "warning: series 'db.insert ' (<stdin>, line 3) differs from series 'db.insert' only by surrounding "
        "spaces (detect and watch --csv read both as one series, stripped): watch decides them as two series; "
        "if they are one, send one spelling",
    ]
    with StateStore(db) as store:  # the ids as sent, each its own series
        assert store.series_ids() == ["db.Insert", "db.insert", "db.insert "]
        assert store.n_arrivals() == 90

    # A restart knows the store's series; a third spelling in a decomposed accent is named in ASCII.
    more = [
        {"series_id": "DB.INSERT", "commit": "c00", "value": 1.0},
        {"series_id": "caf\u00e9", "commit": "c00", "value": 1.0},
        {"series_id": "cafe\u0301", "commit": "c00", "value": 1.0},
        {"series_id": "db.Insert", "commit": "c30", "value": 1.0},
    ]
    code, out = invoke(["watch", "--state", db], stdin="".join(json.dumps(r) + "\n" for r in more))
    assert code == 0, out
    text = flat(out)
    assert (
        "warning: series 'DB.INSERT' (<stdin>, line 1) differs from series 'db.Insert' only by case"
        in text
    )
    assert (
        "series 'cafe\\u0301' (<stdin>, line 3) differs from series 'caf\\xe9' only in Unicode form"
        in text
    )
    assert text.count("warning:") == 2, text


def test_detect_worker_processes_beyond_the_open_files_limit(tmp_path):
    """Defect 5: 'error: Too many open files', naming neither the limit nor what needed the files."""
    data = _steps_csv(tmp_path / "steps.csv")

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))

    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "from triage.cli.app import main; main()",
            "detect",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "cps.csv"),
            "--jobs",
            "2",
            "--workers",
            "processes",
        ],
        capture_output=True,
        text=True,
        preexec_fn=low_limit,
        timeout=120,
    )
    text = " ".join(res.stderr.split())
    assert res.returncode == 2, text
    assert (
        "error: --jobs 2 --workers processes: too many open files: this process may open 16 (ulimit -n); each "
        "worker process needs pipes and locks (--workers threads needs none)" in text
    ), text
    assert not (tmp_path / "cps.csv").exists()


def test_state_store_beyond_a_file_size_limit_says_so_and_stays_whole(tmp_path):
    """Defect 6: 'disk I/O error ...: free space or fix the file system' for a file-size limit."""
    db, out = tmp_path / "state.db", tmp_path / "decisions.jsonl"
    feed = "".join(_feed(40, series=f"s{k}") for k in range(60))  # 2,400 lines, 60 series
    res = _run_limited(["watch", "--state", db, "--explain", "none"], feed, out, fsize=200_000)
    text = _stderr(res)
    assert res.returncode == 2, text
    assert (
        f"error: {db}: cannot write the state file (disk I/O error; this process may write files of at most "
        in text
    )
    assert (
        "200,000 bytes (ulimit -f)); nothing of this batch was stored" in text
        and "raise the limit" in text
    ), text
    with StateStore(
        db
    ) as store:  # whole: opens, and holds no more than was decided before the refused batch
        assert store.n_decisions() == out.read_text().count("\n")

    # the limit raised (no limit in this process: in-process): re-sent
    code, said = invoke(["watch", "--state", db, "--explain", "none"], stdin=feed)
    assert code == 0, flat(said)
    with StateStore(db) as store:
        assert store.n_arrivals() == 2400 and store.n_decisions() == 60 * 36


def test_detect_out_of_memory_is_one_line_and_writes_nothing(tmp_path):
    """Defect 7: a MemoryError traceback, then another from reporting it; exit 1."""
    data = tmp_path / "many.csv"
    rows = (
        f"svc{s:05d},c{c:02d},{100 + (s * 7 + c * 3) % 11 / 10}\n"
        for s in range(25_000)
        for c in range(12)
    )
    data.write_text("series_id,commit,value\n" + "".join(rows))
    out = tmp_path / "cps.csv"
    out.write_text("kept\n")
    command = [
        sys.executable,
        "-c",
        OUT_OF_MEMORY,
        str(200 * 2**20),
        "detect",
        "--data",
        data,
        "--out",
        out,
    ]
    res = subprocess.run(
        list(map(str, command)),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    text = " ".join(res.stderr.split())
    assert res.returncode == 2, text
    assert "Traceback" not in text and "internal error" not in text, text
    assert (
        f"error: {data}: out of memory while reading and replaying (this process may use " in text
    ), text
    assert (
        f"MB of address space: ulimit -v): nothing was written ({out} is as it was); raise the memory limit"
        in text
    )
    assert out.read_text() == "kept\n"


def test_watch_input_cut_in_the_middle_of_a_line_says_so(tmp_path):
    """Defect 8: a half-written last line read as a garbled feed."""
    lines = _feed(30).splitlines()
    cut = lines[29][:25]  # '{"series_id": "s1", "comm'
    db = tmp_path / "state.db"
    res = run_triage(
        "watch", "--state", db, "--explain", "none", stdin="\n".join(lines[:29]) + "\n" + cut
    )
    text = " ".join(res.stderr.split())
    assert res.returncode == 2, text
    assert (
        "error: <stdin>, line 30: not a JSON object: Unterminated string starting at (column 21) (the input ended in the "
        "middle of this line, without a line end: was its producer cut off? every line before it is decided)"
        in text
    )
    assert res.stdout.count("\n") == 25
    with StateStore(db) as store:
        assert store.n_arrivals() == 29 and store.n_decisions() == 25

    # The same through a stream without a file descriptor; a whole last line without a line end is no error.
    code, out = invoke(["watch", "--explain", "none"], stdin="\n".join(lines[:29]) + "\n" + cut)
    assert code == 2 and "the input ended in the middle of this line" in flat(out), flat(out)
    code, out = invoke(["watch", "--explain", "none"], stdin="\n".join(lines))
    assert code == 0 and out.count("\n") == 27, out  # 26 decisions and the end-of-input line (stderr)
    code, out = invoke(
        ["watch", "--explain", "none"], stdin=lines[0] + "\n" + cut + "\n" + lines[1] + "\n"
    )
    assert (
        code == 2
        and "line 2: not a JSON object" in flat(out)
        and "ended in the middle" not in flat(out)
    )


def test_a_new_store_that_cannot_be_created_leaves_no_empty_file(tmp_path):
    """Defect 9: the failed creation left an empty file that the next start called damaged."""
    db = tmp_path / "new.db"
    feed = _feed(10)
    res = _run_limited(["watch", "--state", db], feed, tmp_path / "out", fsize=1024)
    text = _stderr(res)
    assert res.returncode == 2, text
    assert (
        f"error: {db}: cannot open the state file: disk I/O error; this process may write files of at most "
        "1,024 bytes (ulimit -f)" in text
    ), text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]

    code, out = invoke(
        ["watch", "--state", db, "--explain", "none"], stdin=feed
    )  # the limit gone: a new store
    assert code == 0 and "damaged" not in out, flat(out)
    with StateStore(db) as store:
        assert store.n_arrivals() == 10


def test_a_store_that_was_there_is_never_removed_when_it_cannot_be_opened(tmp_path):
    """Defect 9's fix removes only what it created: an existing store that cannot be written stays."""
    db = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", db, "--explain", "none"], stdin=_feed(10))
    assert code == 0, out
    before = db.read_bytes()
    res = _run_limited(["watch", "--state", db], _feed(40), tmp_path / "out", fsize=1024)
    assert res.returncode == 2, _stderr(res)
    assert db.read_bytes() == before
