"""Walkthrough s16: the on-call operator running ``triage watch`` / ``triage detect`` on real histories.

Defects found (what a user did, what went wrong):

1. Gave ``triage watch --state FILE`` a state file this user may not write
   (``chmod 444``, or a store in a read-only folder). The healthy store was
   reported as damaged ("cannot be read (disk I/O error)", "attempt to write a
   readonly database") with the advice to run ``--reset-state``; doing so moved
   the good store aside as ``FILE.damaged-<time>`` and started from nothing. A
   new store in a read-only folder said only "unable to open database file".
   Now: one line saying the file (or its folder) is not writable, exit 2, and
   ``--reset-state`` never moves it.
2. Kept the state behind a symbolic link (``state.db -> /data/state.db``) and
   ran ``--reset-state`` after the store was damaged: the link was renamed to
   ``state.db.damaged-<time>``, the damaged file stayed where it was and the
   new store became a plain file where the link had been (not on the disk the
   link pointed to); the advice named ``state.db.damaged-<time>``. Now the file
   the link leads to is moved aside beside itself and the new store is created
   through the link, which stays.
3. Piped a real rhai history (commits re-measured two to four arrivals later)
   into ``triage watch`` without ``--state``: the output depended on how the
   lines reached the watcher. Lines waiting together on the pipe (one batch)
   printed a ``"replayed": true`` decision for each re-run, while the same
   lines one at a time (a slow producer, or ``--csv``) printed nothing for
   them, as README says of a re-run of a waiting commit in memory: 1,652
   against 1,648 lines for one series. Now a re-run after a later commit of
   its series prints nothing in a batch too.
4. Sent a value beyond what a float holds: ``1e400`` (JSON or ``--csv``)
   stopped the whole watcher with "value inf is not a finite number", while
   ``1e300`` (and a 400-digit integer) quarantine only their series as README
   promises; ``1e-400`` was read as 0.0 and decided as the value 0, silently.
   Now both quarantine their series, naming the line and the value as sent,
   and the stream goes on.
5. Restarted a watcher on its state with another ``--model`` (on-call picked
   the default after the state was built with ``online-w3``): the refusal read
   "the state was built with model d32622c456a0, this is model 70bfe6037211",
   two hashes that do not say which model to give. Now the store keeps the
   model's name (a bundled name, else its folder) and the refusal names both.
6. Typed ``triage watch --follow`` without ``--csv``: "error: <input>: --follow
   needs --csv FILE", naming a file "<input>" that does not exist; and
   ``triage watch --reset-state`` without ``--state`` was accepted silently
   (nothing to reset: the operator who meant a state file learned nothing).
   Both are now usage errors naming the option, exit 2.
7. Redirected the watcher's output to a full disk (``> /dev/full``): "error:
   No space left on device", naming no file and not saying whether the
   decisions were kept. Now the line names standard output and says the
   decisions are stored with ``--state`` and how to get them printed again.
8. Started the watcher from a supervisor that closes standard input
   (``triage watch --state s.db <&-``): "internal error: TypeError: 'NoneType'
   object is not iterable", exit 1, and an empty state file was created. Now:
   one line saying standard input is closed, exit 2, no file created.
9. Mixed up the options: ``triage watch --csv state.db`` (the state file) or
   ``--csv history.parquet``: "line 1: not UTF-8 text (invalid start byte at
   byte 103 of the line)". Now the line says the file is an SQLite database
   (give it as --state) or a Parquet file (replay it with ``triage detect``).
10. Gave ``--state`` a symbolic link whose target folder is gone (a disk not
    mounted): "cannot open the state file: unable to open database file".
    Now the line names the link's target and the missing folder.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers_cli import flat, invoke, make_unwritable, run_triage
from warm_start import warm_triage

from triage.online.state_store import StateStore

SERIES = "rhai/bench_engine_new/gha-ubuntu-latest"


def _rhai_series(n: int | None) -> list[dict]:
    """The first ``n`` results (None: all) of one real rhai series, as records with timestamps."""
    from conftest import SHARED_DATA

    path = SHARED_DATA / "real" / "histories.csv.gz"
    if not path.is_file():
        pytest.skip(f"real histories {path} are absent (../shared beside the checkout)")
    records: list[dict] = []
    with gzip.open(path, "rt") as fh:
        header = next(fh).strip().split(",")
        for raw in fh:
            if not raw.startswith(SERIES + ","):
                if records:
                    break
                continue
            row = dict(zip(header, raw.strip().split(","), strict=True))
            records.append({"series_id": row["series_id"], "commit": row["commit"],
                            "value": float(row["value"]), "timestamp": row["timestamp"]})
            if len(records) == n:
                break
    assert len(records) == (n or 1653), "expected the rhai series' results"
    return records


@pytest.fixture(scope="module")
def rhai_lines() -> list[str]:
    """The first 60 results of one real rhai series as JSON lines (as a CI job would send them)."""
    return [json.dumps(r) for r in _rhai_series(60)]


@pytest.fixture(scope="module")
def rhai_all() -> list[dict]:
    """All 1,653 results of the rhai series (1,640 commits: 13 re-measured a few arrivals later)."""
    return _rhai_series(None)


def _stdin(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def test_read_only_state_file_is_not_called_damaged_nor_moved(rhai_lines, tmp_path, request):
    db = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[:30]))
    assert code == 0, out
    with StateStore(db) as store:
        arrivals = store.n_arrivals()
    assert arrivals == 30
    before = db.read_bytes()
    make_unwritable(db, request)

    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[30:]))
    text = flat(out)
    assert code == 2, text
    assert "state.db: is read-only" in text and "damaged" not in text and "--reset-state" not in text, text

    code, out = invoke(["watch", "--state", db, "--reset-state"], stdin=_stdin(rhai_lines[30:]))
    assert code == 2, flat(out)
    assert "is read-only" in flat(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]  # nothing moved aside
    assert db.read_bytes() == before


def test_state_in_read_only_folder_names_the_folder(rhai_lines, tmp_path, request):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "state.db"
    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[:10]))
    assert code == 0, out
    make_unwritable(folder, request)

    for target in (db, folder / "new.db"):
        code, out = invoke(["watch", "--state", target], stdin=_stdin(rhai_lines[10:20]))
        text = flat(out)
        assert code == 2, text
        assert f"the folder {folder} is not writable" in text and "damaged" not in text, text
    assert sorted(p.name for p in folder.iterdir()) == ["state.db"]


def test_reset_state_through_a_symlink_moves_the_linked_file_and_keeps_the_link(rhai_lines, tmp_path):
    real_dir, link_dir = tmp_path / "disk", tmp_path / "here"
    real_dir.mkdir()
    link_dir.mkdir()
    real = real_dir / "state.db"
    link = link_dir / "state.db"
    link.symlink_to(real)
    code, out = invoke(["watch", "--state", link], stdin=_stdin(rhai_lines[:30]))
    assert code == 0, out
    assert real.is_file() and link.is_symlink()
    with open(real, "r+b") as fh:  # damaged: a truncated store
        fh.truncate(10_000)

    code, out = invoke(["watch", "--state", link], stdin="")
    assert code == 2
    assert f"kept as {real}.damaged-<time>" in flat(out), flat(out)

    code, out = invoke(["watch", "--state", link, "--reset-state"], stdin=_stdin(rhai_lines))
    assert code == 0, flat(out)
    assert link.is_symlink() and os.readlink(link) == str(real)
    backups = [p for p in real_dir.iterdir() if p.name.startswith("state.db.damaged-")]
    assert len(backups) == 1 and backups[0].stat().st_size == 10_000
    assert sorted(p.name for p in link_dir.iterdir()) == ["state.db"]
    with StateStore(real) as store:
        assert store.n_arrivals() == 60


@pytest.mark.filterwarnings("ignore::triage.online.records.ConflictingRedelivery")
def test_in_memory_rerun_output_does_not_depend_on_batching(rhai_all):
    from triage.model_lookup import resolve_model
    from triage.online.loop import OnlineTriage

    def loop() -> OnlineTriage:
        return OnlineTriage.from_model_dir(resolve_model("default", "online"), explain="none")

    def shown(decisions) -> list[tuple[str, bool]]:
        return [(d.commit, d.replayed) for d in decisions if d is not None]

    one_by_one = loop()
    singly = shown(one_by_one.process_one(r["series_id"], r["commit"], r["value"], r["timestamp"])
                   for r in rhai_all)
    together = shown(loop().process_many(rhai_all))
    assert len(singly) == 1640 - 4 + 9  # 9 re-runs came while their commit was still the latest
    assert together == singly


@pytest.mark.filterwarnings("ignore::triage.online.records.ConflictingRedelivery")
def test_watch_piped_backlog_prints_what_csv_prints(rhai_all, tmp_path):
    csv_file = tmp_path / "rhai.csv"
    csv_file.write_text("series_id,commit,timestamp,value\n" + "".join(
        f"{r['series_id']},{r['commit']},{r['timestamp']},{r['value']!r}\n" for r in rhai_all))
    piped = run_triage("watch", stdin="".join(json.dumps(r) + "\n" for r in rhai_all))
    assert piped.returncode == 0, piped.stderr
    code, out = invoke(["watch", "--csv", csv_file])
    assert code == 0
    from_csv = [line for line in out.splitlines() if line.startswith("{")]
    assert piped.stdout.splitlines() == from_csv
    assert len(from_csv) == 1648


def test_value_beyond_a_float_quarantines_its_series(rhai_lines, tmp_path):
    """Both kinds of literal (below the smallest float, above the largest) in one feed, each in its own
    series; the real series' decisions are those of a feed without them (in-process: the same loop)."""
    real = [json.loads(line) for line in rhai_lines[:30]]
    # (series, commit, value as sent): the real series, and two more whose second value no float holds
    feed = [(r["series_id"], r["commit"], repr(r["value"])) for r in real[:10]]
    feed += [("other", "o1", "2.0"), ("other", "o2", "1e-400")]
    feed += [(r["series_id"], r["commit"], repr(r["value"])) for r in real[10:20]]
    feed += [("other", "o3", "3.0"), ("another", "a1", "2.0"), ("another", "a2", "-2.5E+400")]
    feed += [(r["series_id"], r["commit"], repr(r["value"])) for r in real[20:]]
    as_json = "".join(f'{{"series_id": "{s}", "commit": "{c}", "value": {v}}}\n' for s, c, v in feed)
    csv_file = tmp_path / "feed.csv"
    csv_file.write_text("series_id,commit,value\n" + "".join(f"{s},{c},{v}\n" for s, c, v in feed))
    code, out = invoke(["watch", "--explain", "none"], stdin="".join(
        f'{{"series_id": "{s}", "commit": "{c}", "value": {v}}}\n' for s, c, v in feed if s == SERIES))
    assert code == 0, out
    expected = [line for line in out.splitlines() if line.startswith("{")]
    assert len(expected) == 30 - 4  # the last 4 wait for their confirmation
    for got, at in ((run_triage("watch", "--explain", "none", stdin=as_json), "<stdin>, line {}"),
                    (run_triage("watch", "--explain", "none", "--csv", csv_file), f"{csv_file}, line {{}}")):
        assert got.returncode == 0, got.stderr
        for series, literal, line in (("other", "1e-400", 12), ("another", "-2.5E+400", 25)):
            where = at.format(line + (at != "<stdin>, line {}"))  # the CSV's header is its line 1
            assert (f"quarantined series {series!r} ({where}): value {literal} is outside the usable range"
                    in got.stderr), got.stderr
            assert f'"{series}"' not in got.stdout
        assert got.stdout.splitlines() == expected


def test_another_model_refusal_names_both_models(rhai_lines, tmp_path):
    db = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", db, "--model", "online-w3"], stdin=_stdin(rhai_lines[:20]))
    assert code == 0, out
    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[20:]))
    text = flat(out)
    assert code == 2, text
    assert "the state was built with model online-w3 (" in text and "this run's is online-w4 (" in text, text
    with StateStore(db) as store:
        assert store.n_arrivals() == 20  # the refused run changed nothing


@pytest.mark.parametrize(("args", "needs"), [(["--follow"], "--follow: needs --csv FILE"),
                                             (["--reset-state"], "--reset-state: needs --state FILE")])
def test_option_that_needs_another_is_a_usage_error(rhai_lines, args, needs):
    code, out = invoke(["watch", *args], stdin=_stdin(rhai_lines[:10]))
    text = flat(out)
    assert code == 2, text
    assert f"Invalid value for {needs}" in text and "<input>" not in text, text


def test_full_disk_under_stdout_is_named(rhai_lines, tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    db = tmp_path / "state.db"
    with open("/dev/full", "w") as full:
        got = subprocess.run([*warm_triage(), "watch", "--state", str(db)], input=_stdin(rhai_lines[:30]), stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=300)
    assert got.returncode == 2, got.stderr
    assert got.stderr.startswith("error: <stdout>: cannot write the decisions (No space left on device)"), got.stderr
    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[:30]))
    assert code == 0
    assert sum('"replayed": true' in line for line in out.splitlines()) == 26  # all stored, printed again


def test_closed_stdin_is_a_clear_error(tmp_path):
    import sys

    db = tmp_path / "state.db"
    got = subprocess.run([sys.executable, "-c", "from triage.cli.app import main; main()", "watch", "--state", str(db)],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TRIAGE_ERROR_LOG": str(tmp_path / "errors.log")},
                         preexec_fn=lambda: os.close(0))  # as `<&-`: the interpreter starts without stdin
    assert got.returncode == 2, got.stderr
    assert got.stderr.strip() == "error: <stdin>: standard input is closed: pipe JSON lines into watch, or give --csv FILE"
    assert not db.exists()


def test_csv_option_given_a_state_or_parquet_file_says_what_it_is(rhai_lines, tmp_path):
    import pandas as pd

    db = tmp_path / "state.db"
    code, out = invoke(["watch", "--state", db], stdin=_stdin(rhai_lines[:20]))
    assert code == 0, out
    parquet = tmp_path / "history.parquet"
    try:
        pd.DataFrame([json.loads(line) for line in rhai_lines]).to_parquet(parquet)
    except ImportError:
        parquet = None
    code, out = invoke(["watch", "--csv", db])
    assert code == 2 and "state.db: is an SQLite database (a watch state? give it as --state)" in flat(out), flat(out)
    if parquet is not None:
        code, out = invoke(["watch", "--csv", parquet])
        assert code == 2 and "history.parquet: is a Parquet file, not a CSV" in flat(out), flat(out)


def test_state_link_into_a_missing_folder_names_it(rhai_lines, tmp_path):
    link = tmp_path / "state.db"
    target = tmp_path / "unmounted" / "state.db"
    link.symlink_to(target)
    code, out = invoke(["watch", "--state", link], stdin=_stdin(rhai_lines[:10]))
    text = flat(out)
    assert code == 2, text
    assert f"is a link to {target}, whose folder {target.parent} does not exist" in text, text
    target.parent.mkdir()
    code, out = invoke(["watch", "--state", link], stdin=_stdin(rhai_lines[:10]))
    assert code == 0 and target.is_file() and link.is_symlink()
