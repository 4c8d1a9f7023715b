"""Defects found by a new user's walkthrough of the two ends of the pipeline (steady, sample, culprit, --scheduler).

1. ``--scheduler tcp://host:port`` where something other than a dask
   scheduler listens: a service that talks first (an SSH server, a proxy)
   ended as "internal error: MemoryError: Unable to allocate 3.07 EiB" (dask
   read its banner as a frame length), and one that accepts and never answers
   (the dashboard's HTTP port given instead of 8786) hung for ever: dask's
   handshake has no deadline. Both are now "cannot reach a dask scheduler",
   exit 2, within the connect timeout. (The probe that does it first ran
   ``asyncio.run`` in the caller's thread, which a caller running an event
   loop, a notebook calling ``map_series``, refuses; it now runs in a thread
   of its own.)
2. ``triage steady`` on a JMH file with an entry whose ``benchmark`` is
   empty (or blank) wrote its iterations with an empty ``series_id``; the
   file it wrote was then refused by ``triage summary`` ("row 2: series_id
   is missing"). It is now refused at the entry, naming the file and row.
3. ``triage sample`` on a history whose measured commits all read the same
   (a deterministic stretch of a real rhai series, or a single reading) gave a
   95 % band of +-0.73 *in whatever unit the values were*: in nanoseconds a
   plausible band, the same history in seconds -0.73 s .. 0.73 s around
   85e-9 s (scikit-learn's normalize_y divides by 1 when the spread is 0 or
   below 10 eps, as it also is for any history of values near 1e-20). Such
   values are now fitted in units of their magnitude: the band scales with
   the unit.
4. ``triage culprit --data one-series.csv --oracle histories.csv.gz`` (the
   whole export the readings come from, 372 series) was refused: "372 series
   in the file: choose one with --series", though ``--data`` names its one
   series. The oracle now answers for the series of ``--data`` when it holds
   it. (The same refusal listed two series as "(s1, s2, ...)", as if there
   were more.)
5. ``triage steady`` over builds whose units differ: a result without
   ``scoreUnit`` was warned about as "A.run is in , c1.json has it in
   ns/op"; and a build in ``us/op`` converted to the first build's ``ns/op``
   could leave the usable value range (1e98 us -> 1e101 ns), written as such
   and then refused by every reader of the output. The first now says
   "without a unit (no 'scoreUnit')", the second is refused naming the file,
   the series and the conversion.
6. ``triage sample --data`` / ``triage culprit --oracle`` with a header that
   names a column twice (``commit,value,value``: two runs side by side) read
   the first ``value`` without a word, where README says every CSV reader
   refuses such a header naming the column and its positions. They now do.
7. ``triage steady`` on an array of runs with a bare number where a run
   belongs (``[[0.91, 0.52, ...], 0.49]``) said the file "mixes runs (arrays
   of numbers) and JMH benchmark objects", though it holds no object; it now
   says what the entry is and what was expected there.
8. ``triage culprit`` answered by hand, the input ending after one reading:
   "the 1 readings made are in -" (with ``--out -``: the reading went to
   standard output). It now says "the reading made is in FILE" / "went to
   standard output".
9. ``triage sample`` on a history of one commit printed "1 of 1 commits
   measured" and "estimated history of 1 commits".
10. ``triage steady`` on single-shot JMH results (``-bm ss -i 1``: forks of
    one iteration) counted every fork "never steady" with KB-KSSD and kstep
    (steady at 0 with CP-SSD) and said nothing more, as if the runs had been
    seen to drift. It now says that those forks have one iteration, that no
    warm-up can be found within one, and that they are kept whole.
11. ``triage culprit --strategy bisect --max-measurements 2`` on a real
    drop hidden in a gap of 25 answered "culprit: <the last commit of the
    range still open>, confidence 0.00" and nothing more (the "not settled"
    note was only for ``bayes``). It now says the search is not settled and
    which commits the culprit is still among.
12. ``--scheduler tls://host:port`` with no TLS configured in dask ended as
    "internal error: TypeError: TLS expects a `ssl_context` argument"; it is
    now "cannot reach a dask scheduler" with dask's own hint (check your TLS
    configuration), exit 2. (The handshake probe of 1. uses the connection
    arguments the dask client would, so a configured TLS still connects.)
13. ``--scheduler`` at a running dask scheduler with no workers (started,
    its workers not yet, or gone) hung for ever without a word: the tasks
    waited for a worker. It is now "the dask scheduler at ... has no workers
    (none joined within 30 s)", exit 2.
14. The scheduler stopped while a command used it: "internal error:
    OSError: Timed out trying to connect ..." (or FutureCancelledError,
    scheduler-connection-lost, with tasks out). It is now "the connection to
    the dask scheduler at ... was lost during the run", exit 2.
15. ``triage sample`` / ``culprit`` on a file with a ``series_id`` column and
    a row whose cell is blank: "2 series in the file: choose one with
    --series (rhai/..., )", a series named ""; a file whose cells were all
    blank became one series without a name. Such a row is now refused at its
    line ("series_id is missing"), as the long layout's reader does.
16. ``triage culprit --data -`` (the history piped in) without ``--oracle``
    prompted for readings on the standard input the history had emptied and
    ended with "the input ended before commit ... was measured", as if the
    user had typed ^D; with ``--oracle -`` too, "<stdin>: file is empty". It
    now says that standard input held ``--data`` and the readings need
    ``--oracle FILE``, and refuses ``-`` read twice.
17. ``triage steady runs.json --series " parse "`` (a quoted variable with
    a space) wrote the series id with its spaces; it is now stripped, as
    ``sample`` / ``culprit`` strip ``--series``.
18. ``triage sample`` on a file with a row of more cells than the header
    said "not a readable CSV file: Error tokenizing data. C error: Expected
    2 fields in line 22, saw 3" with no row where errors name it; it is now
    "row 22: 3 cells where the header has 2".
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke


def _extract(frame: pd.DataFrame, out: Path, *series: str) -> Path:
    frame[frame["series_id"].isin(series)].to_csv(out, index=False)
    return out


# -- 1. --scheduler at an address where no dask scheduler answers -------------------------------


def _server(reply: bytes | None) -> tuple[socket.socket, str]:
    """A TCP server on localhost: each connection gets ``reply`` at once (None: never a byte)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)  # kept open: the client must give up by itself
            if reply is not None:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return srv, f"tcp://127.0.0.1:{srv.getsockname()[1]}"


@pytest.mark.parametrize(
    "reply",
    [b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n" + b"\xff" * 64, None],
    ids=["talks-first", "silent"],
)
def test_scheduler_address_of_another_service_is_a_clear_error(tmp_path, real_frame, monkeypatch, reply):
    import triage.distributed as distributed

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 2.0)
    data = _extract(real_frame, tmp_path / "h.csv", *real_frame["series_id"].drop_duplicates()[:2])
    out = tmp_path / "c.csv"
    srv, address = _server(reply)
    result: list[tuple[int, str]] = []
    args = ["candidates", "--data", data, "--detector", "binseg", "--out", out, "--scheduler", address]
    # In a thread: before the fix the silent server held the command for ever.
    worker = threading.Thread(target=lambda: result.append(invoke(args)), daemon=True)
    worker.start()
    worker.join(15)
    srv.close()
    assert result, "the command was still waiting for the scheduler's handshake after 15 s"
    code, output = result[0]
    assert code == 2, output
    assert f"--scheduler: cannot reach a dask scheduler at '{address}'" in flat(output)
    assert "internal error" not in output
    assert not out.exists()


# -- 2. a JMH entry whose benchmark name is empty --------------------------------------------------


def _jmh_entry(name: str, raw: list[list[float]], mode: str = "avgt", unit: str = "us/op") -> dict:
    return {"benchmark": name, "mode": mode, "primaryMetric": {"scoreUnit": unit, "rawData": raw}}


@pytest.mark.parametrize("name", ["", "   "])
def test_steady_refuses_a_jmh_entry_with_an_empty_benchmark_name(tmp_path, name):
    import json

    src = tmp_path / "c1.json"
    src.write_text(json.dumps([_jmh_entry("org.acme.A.run", [[1.0] * 20]), _jmh_entry(name, [[2.0] * 20])]))
    out = tmp_path / "long.csv"
    code, output = invoke(["steady", src, "--out", out, "--trim-warmup", "none"])
    # It wrote rows with an empty series_id, which summary then refused ("series_id is missing").
    assert code == 2, output
    assert "c1.json, row 2: the 'benchmark' name is empty" in flat(output)
    assert not out.exists()


# -- 3. sample: the band of a history without spread, in its own unit ---------------------------

RHAI = "rhai/bench_eval_expression_single/gha-ubuntu-latest"


def _rhai_flat_stretch(real_frame: pd.DataFrame) -> pd.DataFrame:
    """12 consecutive commits of a real rhai series that all read 85 ns/iter (a deterministic stretch)."""
    per = real_frame[real_frame["series_id"] == RHAI].groupby("commit", sort=False)["value"].mean()
    values = per.to_numpy()
    for i in range(len(values) - 12):
        if values[i : i + 12].min() == values[i : i + 12].max():
            return per.iloc[i : i + 12].reset_index()
    pytest.skip(f"no stretch of 12 equal readings in {RHAI}")


def test_sample_band_of_a_constant_history_scales_with_its_unit(tmp_path, real_frame):
    stretch = _rhai_flat_stretch(real_frame)
    plans = {}
    for unit, factor in (("ns", 1.0), ("s", 1e-9)):
        part = pd.DataFrame({"commit": stretch["commit"], "value": stretch["value"] * factor})
        part.loc[part.index % 3 != 0, "value"] = None  # 4 of the 12 measured, all alike
        data = tmp_path / f"partial_{unit}.csv"
        part.to_csv(data, index=False)
        out = tmp_path / f"estimate_{unit}.csv"
        code, output = invoke(["sample", "--data", data, "--budget", "2", "--out", out])
        assert code == 0, output
        plans[unit] = pd.read_csv(out)
    ns, s = plans["ns"], plans["s"]
    # The same history in seconds: the same estimate and band, in seconds. Before, the band was
    # +-0.73 in either unit: -0.73 s .. 0.73 s around 85e-9 s (negative times).
    assert (s["lower"] > 0).all(), s
    for col in ("estimate", "lower", "upper"):
        assert s[col].to_numpy() == pytest.approx(ns[col].to_numpy() * 1e-9, rel=1e-6), col
    assert s["next"].fillna(0).tolist() == ns["next"].fillna(0).tolist()


# -- 4. culprit: the whole export as the oracle --------------------------------------------------

MEM = "emg3d-bench/memory.SolverMemory.peakmem_solver(True;'iso')/meerkat/conda-py3.8"


def test_culprit_oracle_of_many_series_answers_for_the_series_of_data(tmp_path, real_frame):
    from conftest import SHARED_DATA

    series = real_frame[real_frame["series_id"] == MEM].reset_index(drop=True)
    if series.empty:
        pytest.skip(f"no series {MEM} in the real histories")
    commits = series["commit"].drop_duplicates().tolist()
    # The largest step of the series (peak memory halves); 30 commits around it hidden.
    per = series.groupby("commit", sort=False)["value"].mean().to_numpy()
    at = int(abs(per[1:] / per[:-1] - 1).argmax()) + 1
    partial = series[["series_id", "commit", "value"]].copy()
    partial.loc[partial["commit"].isin(commits[at - 15 : at + 15]), "value"] = None
    data = tmp_path / "partial.csv"
    partial.to_csv(data, index=False)
    export = SHARED_DATA / "real" / "histories.csv.gz"  # 372 series: the readings to come
    out = tmp_path / "readings.csv"
    code, output = invoke([
        "culprit", "--data", data, "--before", commits[at - 16][:8], "--after", commits[at + 15][:8],
        "--oracle", export, "--out", out,
    ])
    # It was "372 series in the file: choose one with --series", though --data names its one series.
    assert code == 0, output
    assert f"culprit: {commits[at]} (position {at})" in flat(output)
    assert len(pd.read_csv(out)) >= 1


def test_several_series_listed_in_full_without_a_trailing_ellipsis(tmp_path):
    data = tmp_path / "two.csv"
    data.write_text("series_id,commit,value\ns1,a,1\ns1,b,\ns2,a,2\ns2,b,\n")
    code, output = invoke(["sample", "--data", data, "--budget", "1"])
    assert code == 2, output
    assert "2 series in the file: choose one with --series ('s1', 's2')" in flat(output)


# -- 5. steady: units across the builds of one history ------------------------------------------


def _write_jmh(path: Path, entries: list[dict]) -> Path:
    import json

    path.write_text(json.dumps(entries))
    return path


def test_steady_names_a_result_without_a_score_unit(tmp_path):
    a = _write_jmh(tmp_path / "c1.json", [_jmh_entry("org.acme.A.run", [[1000.0] * 20], unit="ns/op")])
    b = tmp_path / "c2.json"
    entry = _jmh_entry("org.acme.A.run", [[1.0] * 20])
    del entry["primaryMetric"]["scoreUnit"]
    _write_jmh(b, [entry])
    with pytest.warns(UserWarning) as caught:
        code, output = invoke(["steady", a, b, "--out", tmp_path / "long.csv", "--trim-warmup", "none"])
    assert code == 0, output
    said = " ".join(str(w.message) for w in caught)
    # It read "org.acme.A.run is in , .../c1.json has it in ns/op".
    assert "c2.json: org.acme.A.run is without a unit (no 'scoreUnit'), " in said, said
    assert "c1.json has it in ns/op" in said, said


def test_steady_refuses_a_unit_conversion_that_leaves_the_usable_range(tmp_path):
    a = _write_jmh(tmp_path / "c1.json", [_jmh_entry("org.acme.A.run", [[1.0, 2.0]], unit="ns/op")])
    b = _write_jmh(tmp_path / "c2.json", [_jmh_entry("org.acme.A.run", [[1e98, 2e98]], unit="us/op")])
    out = tmp_path / "long.csv"
    code, output = invoke(["steady", a, b, "--out", out, "--trim-warmup", "none"])
    # It wrote 1e+101 (us converted to ns), which summary then refused at its row.
    assert code == 2, output
    said = flat(output)
    assert "c2.json: org.acme.A.run in us/op, converted to ns/op (the unit of " in said, said
    assert "c1.json): value 1e+101 is outside the usable range" in said, said
    assert not out.exists()


# -- 6. sample / culprit: a header that names a column twice -------------------------------------


@pytest.mark.parametrize("option", ["--data", "--oracle"])
def test_partial_history_with_a_column_named_twice_is_refused(tmp_path, real_frame, option):
    per = real_frame[real_frame["series_id"] == MEM].groupby("commit", sort=False)["value"].mean()
    if per.empty:
        pytest.skip(f"no series {MEM} in the real histories")
    # Two runs side by side, both headed `value` (a spreadsheet export): which one is meant?
    rows = ["commit,value,value"] + [
        f"{c},{'' if 100 < i < 130 else v},{v * 1.01}" for i, (c, v) in enumerate(per.items())
    ]
    twice = tmp_path / "twice.csv"
    twice.write_text("\n".join(rows) + "\n")
    clean = tmp_path / "clean.csv"
    pd.DataFrame({"commit": per.index, "value": per.to_numpy()}).to_csv(clean, index=False)
    commits = per.index.tolist()
    args = {
        "--data": ["sample", "--data", twice, "--budget", "2"],
        "--oracle": ["culprit", "--data", clean, "--before", commits[100], "--after", commits[130],
                     "--oracle", twice],
    }[option]
    if option == "--oracle":  # the gap must be unmeasured in --data for the oracle to be asked
        part = pd.read_csv(clean)
        part.loc[101:129, "value"] = None
        part.to_csv(clean, index=False)
    code, output = invoke(args)
    # The first `value` was read without a word (pandas renamed the second `value.1`).
    assert code == 2, output
    assert "twice.csv, row 1: column 'value' (columns 2 and 3) is named more than once" in flat(output)


# -- 7. steady: an array of runs with a number where a run belongs -------------------------------


def test_steady_names_a_number_among_runs_for_what_it_is(tmp_path):
    src = tmp_path / "c1.json"
    src.write_text("[[0.91, 0.52, 0.50, 0.51], 0.49]")  # the second run's brackets forgotten
    code, output = invoke(["steady", src, "--out", tmp_path / "long.csv", "--series", "parse"])
    # It said "mixes runs (arrays of numbers) and JMH benchmark objects": there is no object.
    assert code == 2, output
    assert "c1.json, row 2: is 0.49: expected a run (an array of numbers)" in flat(output)


# -- 8. culprit: readings kept when the typed input ends -----------------------------------------


def _gap(per: pd.Series, at: int, tmp_path: Path) -> tuple[Path, str, str]:
    """--data with the 29 commits around position ``at`` unmeasured; (file, before, after)."""
    part = pd.DataFrame({"commit": per.index, "value": per.to_numpy()})
    part.loc[at - 14 : at + 14, "value"] = None
    data = tmp_path / "partial.csv"
    part.to_csv(data, index=False)
    return data, str(per.index[at - 15]), str(per.index[at + 15])


@pytest.mark.parametrize("out_name", ["readings.csv", "-"])
def test_culprit_says_where_the_one_reading_went_when_the_input_ends(tmp_path, real_frame, out_name):
    per = real_frame[real_frame["series_id"] == MEM].groupby("commit", sort=False)["value"].mean()
    if per.empty:
        pytest.skip(f"no series {MEM} in the real histories")
    at = int(abs(per.to_numpy()[1:] / per.to_numpy()[:-1] - 1).argmax()) + 1
    data, before, after = _gap(per, at, tmp_path)
    out = tmp_path / out_name if out_name != "-" else "-"
    code, output = invoke(
        ["culprit", "--data", data, "--before", before, "--after", after, "--out", out],
        stdin=f"{per.iloc[at + 5]}\n",  # one reading typed, then the input ends
    )
    assert code == 2, output
    said = flat(output)
    # It said "the 1 readings made are in -".
    assert "the 1 readings" not in said
    if out_name == "-":
        assert "the reading made went to standard output" in said, said
    else:
        assert f"the reading made is in {out}" in said, said
        assert len(pd.read_csv(out)) == 1


# -- 9. sample: a history of one commit ----------------------------------------------------------


def test_sample_counts_one_commit_in_the_singular(tmp_path, real_frame):
    first = real_frame[real_frame["series_id"] == RHAI].head(1)[["commit", "value"]]
    if first.empty:
        pytest.skip(f"no series {RHAI} in the real histories")
    data = tmp_path / "one.csv"
    first.to_csv(data, index=False)
    out = tmp_path / "estimate.csv"
    code, output = invoke(["sample", "--data", data, "--budget", "1", "--out", out])
    assert code == 0, output
    said = flat(output)
    # It said "1 of 1 commits measured" and "estimated history of 1 commits".
    assert "1 of 1 commit measured; measure next" in said, said
    assert f"estimated history of 1 commit -> {out}" in said, said
    assert "every commit is measured: nothing left to measure" in said


# -- 10. steady: single-shot forks ----------------------------------------------------------------


def test_steady_says_why_single_shot_forks_count_as_never_steady(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    files = []
    for commit in ("c1", "c2"):
        # JMH -bm ss -f 20 -i 1: twenty forks of one cold-start iteration each.
        forks = [[round(float(rng.normal(50.0, 2.0)), 3)] for _ in range(20)]
        files.append(_write_jmh(tmp_path / f"{commit}.json",
                                [_jmh_entry("org.acme.Cold.start", forks, mode="ss", unit="ms/op")]))
    out = tmp_path / "long.csv"
    code, output = invoke(["steady", *files, "--out", out, "--trim-warmup", "kbkssd"])
    assert code == 0, output
    said = flat(output)
    # The table said "never steady 40" and nothing else, as if the runs had been seen to drift.
    assert "40 forks of 1 series have one iteration (single-shot): no warm-up can be found within one " \
           "iteration; kept whole (the 'never steady' column counts these 40)" in said, said
    assert len(pd.read_csv(out)) == 40


# -- 11. culprit --strategy bisect stopped by --max-measurements ------------------------------------

URLIZE = "django-asv/template_benchmarks.template_tag_urlize.benchmark.Urlize.time_urlize/ubuntu-latest/conda-py3.12"


def test_culprit_bisect_cut_short_says_it_is_not_settled(tmp_path, real_frame):
    per = real_frame[real_frame["series_id"] == URLIZE].groupby("commit", sort=False)["value"].mean()
    if per.empty:
        pytest.skip(f"no series {URLIZE} in the real histories")
    # The real drop of this series (0.0026 s -> 0.00016 s, at position 51) inside a gap of 25.
    part = pd.DataFrame({"commit": per.index, "value": per.to_numpy()})
    part.loc[40:64, "value"] = None
    data, oracle = tmp_path / "partial.csv", tmp_path / "measured.csv"
    part.to_csv(data, index=False)
    pd.DataFrame({"commit": per.index, "value": per.to_numpy()}).to_csv(oracle, index=False)
    before, after = str(per.index[39]), str(per.index[65])
    code, output = invoke([
        "culprit", "--data", data, "--before", before, "--after", after, "--oracle", oracle,
        "--strategy", "bisect", "--max-measurements", "2",
    ])
    assert code == 0, output
    said = flat(output)
    # It said only "culprit: <the range's last commit> ..., confidence 0.00".
    assert "not settled: --max-measurements reached with the culprit still one of the" in said, said
    full = invoke([
        "culprit", "--data", data, "--before", before, "--after", after, "--oracle", oracle,
        "--strategy", "bisect",
    ])
    assert full[0] == 0 and "not settled" not in flat(full[1]), full[1]


# -- 12. --scheduler tls://... without a TLS configuration ----------------------------------------


def test_scheduler_tls_address_without_tls_configuration_is_a_clear_error(tmp_path, real_frame):
    data = _extract(real_frame, tmp_path / "h.csv", *real_frame["series_id"].drop_duplicates()[:2])
    out = tmp_path / "c.csv"
    srv, address = _server(None)
    tls = address.replace("tcp://", "tls://")
    try:
        code, output = invoke(["candidates", "--data", data, "--detector", "binseg", "--out", out,
                               "--scheduler", tls])
    finally:
        srv.close()
    # It ended as "internal error: TypeError: TLS expects a `ssl_context` argument ...".
    assert code == 2, output
    said = flat(output)
    assert f"--scheduler: cannot reach a dask scheduler at '{tls}'" in said, said
    assert "check your TLS configuration" in said, said
    assert not out.exists()


# -- 13. --scheduler at a scheduler without workers -------------------------------------------------


def _scheduler_without_workers():
    """A dask scheduler in a subprocess on a free localhost port, no workers: (process, address)."""
    import os
    import subprocess
    import sys
    import time

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    sched = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
         "--dashboard-address", ":0", "--no-show"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "DASK_LOGGING__DISTRIBUTED": "error"},
    )
    # A hang guard, with room for a loaded CI machine: a failure, not a skip (a skip had let the
    # coverage vanish without a word on a slow machine).
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if sched.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return sched, f"tcp://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    sched.terminate()
    sched.wait(10)
    pytest.fail(f"the dask scheduler did not start within 90 s (exit code {sched.returncode})")


def _candidates_in_thread(args: list, wait: float, meanwhile=None, waiting=None) -> list[tuple[int, str]]:
    """``invoke(args)`` in a daemon thread; ``meanwhile()`` once ``waiting`` (an Event) is set; the
    result, if any, after ``wait`` s."""
    result: list[tuple[int, str]] = []
    worker = threading.Thread(target=lambda: result.append(invoke(args)), daemon=True)
    worker.start()
    if meanwhile is not None:
        assert waiting is not None and waiting.wait(60), "the command never reached the point to interrupt"
        meanwhile()
    worker.join(wait)
    return result


def test_scheduler_without_workers_is_a_clear_error(tmp_path, real_frame, monkeypatch):
    import triage.distributed as distributed

    sched, address = _scheduler_without_workers()
    try:
        monkeypatch.setattr(distributed, "WORKER_TIMEOUT", 2.0, raising=False)
        data = _extract(real_frame, tmp_path / "h.csv", *real_frame["series_id"].drop_duplicates()[:2])
        out = tmp_path / "c.csv"
        args = ["candidates", "--data", data, "--detector", "binseg", "--out", out, "--scheduler", address]
        result = _candidates_in_thread(args, 15)
    finally:
        sched.terminate()
        sched.wait(10)
    # It waited for a worker for ever, without a word.
    assert result, "the command was still waiting for a worker after 15 s"
    code, output = result[0]
    assert code == 2, output
    assert f"--scheduler: the dask scheduler at '{address}' has no workers" in flat(output), output
    assert not out.exists()


# -- 14. --scheduler: the scheduler lost during the run ----------------------------------------------


def test_scheduler_lost_during_the_run_is_a_clear_error(tmp_path, real_frame, monkeypatch):
    import triage.distributed as distributed

    sched, address = _scheduler_without_workers()
    try:
        # Dask's reconnect gives up after the client's timeout: 2 s rather than 10.
        monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 2.0)
        # Stopped once the command waits for a worker (connected): a fixed 3 s could fall before
        # the connection on a busy machine, which is the other error.
        import distributed as dask_distributed

        waiting = threading.Event()
        wait_for_workers = dask_distributed.Client.wait_for_workers

        def waits(self, *a, **kw):
            waiting.set()
            return wait_for_workers(self, *a, **kw)

        monkeypatch.setattr(dask_distributed.Client, "wait_for_workers", waits)
        data = _extract(real_frame, tmp_path / "h.csv", *real_frame["series_id"].drop_duplicates()[:2])
        out = tmp_path / "c.csv"
        args = ["candidates", "--data", data, "--detector", "binseg", "--out", out, "--scheduler", address]
        result = _candidates_in_thread(args, 12, meanwhile=sched.terminate, waiting=waiting)
    finally:
        sched.terminate()
        sched.wait(10)
    assert result, "the command was still running 12 s after its scheduler stopped"
    code, output = result[0]
    # It ended as "internal error: OSError: Timed out trying to connect to tcp://... after 10 s".
    assert code == 2, output
    assert f"--scheduler: the connection to the dask scheduler at '{address}' was lost during the run" \
        in flat(output), output
    assert not out.exists()


# -- 15. sample / culprit: a row without a series_id ------------------------------------------------


def test_partial_history_row_without_series_id_is_refused_at_its_row(tmp_path, real_frame):
    rows = real_frame[real_frame["series_id"] == RHAI].head(60)[["series_id", "commit", "value"]].copy()
    if rows.empty:
        pytest.skip(f"no series {RHAI} in the real histories")
    rows.loc[rows.index[10:50], "value"] = None
    rows.loc[rows.index[7], "series_id"] = ""  # a hand-edited export: one cell lost
    data = tmp_path / "partial.csv"
    rows.to_csv(data, index=False)
    code, output = invoke(["sample", "--data", data, "--budget", "2"])
    # It said "2 series in the file: choose one with --series (rhai/..., )".
    assert code == 2, output
    assert "partial.csv, row 9: series_id is missing" in flat(output), output


def test_scheduler_probe_works_under_a_running_event_loop(tmp_path, real_frame):
    """The handshake probe of 1. (asyncio.run) must not break a caller that runs a loop (a notebook)."""
    import asyncio

    import triage.distributed as distributed
    from triage.core.errors import InputError
    from triage.core.history import Dataset

    frame = real_frame[real_frame["series_id"] == RHAI].head(50)
    dataset = Dataset.from_frame(frame)
    srv, address = _server(b"SSH-2.0-OpenSSH_9.6p1\r\n" + b"\xff" * 64)

    async def notebook_cell() -> str:
        try:
            distributed.map_series(len, dataset, address)
        except InputError as exc:
            return str(exc)
        return "no error"

    try:
        said = asyncio.run(notebook_cell())
    finally:
        srv.close()
    assert f"cannot reach a dask scheduler at '{address}'" in said, said
    assert "something answers there, but its reply is no dask message" in said, said


# -- 16. culprit --data - : standard input holds the history, not the readings ----------------------


def test_culprit_with_data_on_standard_input_says_where_readings_must_come_from(tmp_path, real_frame):
    per = real_frame[real_frame["series_id"] == MEM].groupby("commit", sort=False)["value"].mean()
    if per.empty:
        pytest.skip(f"no series {MEM} in the real histories")
    at = int(abs(per.to_numpy()[1:] / per.to_numpy()[:-1] - 1).argmax()) + 1
    data, before, after = _gap(per, at, tmp_path)
    text = data.read_text()
    code, output = invoke(["culprit", "--data", "-", "--before", before, "--after", after], stdin=text)
    # It prompted on the emptied input: "the input ended before commit ... was measured".
    assert code == 2, output
    assert "standard input held --data (-), so no reading can be typed there: give the readings " \
           "with --oracle FILE" in flat(output), output
    code, output = invoke(["culprit", "--data", "-", "--before", before, "--after", after, "--oracle", "-"],
                          stdin=text)
    # It said "<stdin>: file is empty" of the oracle.
    assert code == 2, output
    assert "- (standard input) can be read only once: it is --data" in flat(output), output
    oracle = tmp_path / "measured.csv"
    pd.DataFrame({"commit": per.index, "value": per.to_numpy()}).to_csv(oracle, index=False)
    code, output = invoke(["culprit", "--data", "-", "--before", before, "--after", after, "--oracle", oracle],
                          stdin=text)
    assert code == 0, output
    assert f"culprit: {per.index[at]} (position {at})" in flat(output), output


# -- 17. steady --series with spaces around it ------------------------------------------------------


def test_steady_series_id_is_written_stripped(tmp_path):
    src = tmp_path / "c1.json"
    src.write_text("[[0.91, 0.52, 0.50, 0.51, 0.50], [0.88, 0.51, 0.50, 0.52, 0.49]]")
    out = tmp_path / "long.csv"
    code, output = invoke(["steady", src, "--series", " parse ", "--out", out, "--trim-warmup", "none"])
    assert code == 0, output
    # It wrote " parse " (spaces and all), where sample, culprit and the long reader strip ids.
    assert set(pd.read_csv(out, dtype=str, keep_default_na=False)["series_id"]) == {"parse"}


# -- 18. sample / culprit: a row with more cells than the header ------------------------------------


def test_partial_history_row_with_extra_cells_is_named_by_its_row(tmp_path, real_frame):
    per = real_frame[real_frame["series_id"] == RHAI].groupby("commit", sort=False)["value"].mean().head(40)
    if per.empty:
        pytest.skip(f"no series {RHAI} in the real histories")
    lines = ["commit,value"] + [f"{c},{'' if 5 < i < 35 else v}" for i, (c, v) in enumerate(per.items())]
    lines[21] += ",ns/iter"  # a unit pasted into one row
    data = tmp_path / "partial.csv"
    data.write_text("\n".join(lines) + "\n")
    code, output = invoke(["sample", "--data", data, "--budget", "2"])
    # It said "partial.csv: not a readable CSV file: Error tokenizing data. C error: Expected 2 fields
    # in line 22, saw 3": no row where the project's errors name it.
    assert code == 2, output
    assert "partial.csv, row 22: 3 cells where the header has 2" in flat(output), output
