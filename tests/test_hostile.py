"""The hostile-input sweep of issue 14, kept in the suite: one row per case.

Each row is (case id, command line, stdin, expected exit code, message
fragment). Commands run in-process through typer's CliRunner and the same
boundary as ``triage.cli.app.main``: an InputError is a clear error (exit 2),
an OS error naming a file is a clear error (exit 2), anything else is an
internal error (exit 1: what used to be a traceback). Every case must end
with its expected code and say its fragment; no case may end in exit 1.
Most cases are refused before any work (that is the point), so the table is
fast; a few accepted cases run the real job on tiny inputs.

Numeric edges are drawn by hypothesis: any float through the loader and the
online loop is either refused with a located message or computed with, never
a crash or a NaN. Two `watch` processes on one store: one refuses, the store
stays intact (subprocesses, the only ones here).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import BOX, invoke
from helpers_training import make_matrix
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warm_start import warm_triage

from triage.cli.validation import exit_code_for
from triage.core.errors import InputError
from triage.core.values import MAX_ABS, MIN_ABS, check_values, value_problem

# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """A workspace of small real-shaped inputs; cases name them by {placeholder}."""
    root = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    rows = ["series_id,commit,value,label"]
    for s in ("perf/a", "perf/b"):
        values = np.r_[rng.normal(100, 1, 30), rng.normal(110, 1, 30)]
        for i, v in enumerate(values):
            label = "true_positive" if i == 30 else ("not_triaged" if i == 45 else "")
            rows.append(f"{s},{s}@{i},{v:.4f},{label}")
    (root / "data.csv").write_text("\n".join(rows) + "\n")
    for name, bad in (("subnormal.csv", "1e-308"), ("huge.csv", "1e308"), ("huge_neg.csv", "-1.5e300")):
        lines = rows.copy()
        lines[5] = lines[5].rsplit(",", 2)[0] + f",{bad},"
        (root / name).write_text("\n".join(lines) + "\n")
    (root / "latin1.json").write_bytes("[1.0, 2.0, \"caf\xe9\"]".encode("latin-1"))
    (root / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (root / "nested.json").write_text("[" * 5000 + "]" * 5000)
    (root / "empty.csv").write_text("")
    (root / "cands.csv").write_text("series_id,commit,index\nperf/a,perf/a@30,30\n")
    (root / "scored.csv").write_text(  # our own `score` output, fed back as candidates
        "series_id,commit,index,p_false,p_true,classification,explanation\n"
        "perf/a,perf/a@30,30,0.2,0.8,true_positive,earlier reasons\n"
    )
    make_matrix(40, 3, seed=1).to_parquet(root / "matrix.parquet")
    (root / "garbage.db").write_bytes(b"not a database, just text " * 50)
    (root / "afile.txt").write_text("I am a file\n")
    (root / "link.csv").symlink_to(root / "data.csv")
    (root / "empty.db").write_bytes(b"")
    # A store whose decisions table was dropped (earlier commits would be decided again as new).
    dropped = root / "dropped.db"
    _watch_store(dropped, root)
    with closing(sqlite3.connect(dropped)) as db:
        db.execute("DROP TABLE decisions")
    malformed = root / "malformed.db"  # a page overwritten with garbage
    _watch_store(malformed, root)
    with open(malformed, "r+b") as fh:
        fh.seek(4096)  # pages 2 and 3: table roots, whatever holds them
        fh.write(b"\xff" * 8192)
    no_series = root / "noseries.db"
    _watch_store(no_series, root)
    with closing(sqlite3.connect(no_series)) as db:
        db.execute("DROP TABLE series")
    emptied = root / "emptystate.db"
    _watch_store(emptied, root)
    with closing(sqlite3.connect(emptied)) as db:
        db.execute("UPDATE series SET state = '{}'")
        db.commit()
    return root


def _watch_store(path: Path, root: Path) -> None:
    lines = "".join(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 1.0 + i % 3}) + "\n" for i in range(8))
    code, out = invoke(["watch", "--state", str(path)], lines)
    assert code == 0, out


def _stream(bad_value: str) -> str:
    """Two series; series 'bad' carries ``bad_value`` (raw JSON text) at its 5th commit."""
    out = []
    for i in range(20):
        out.append(json.dumps({"series_id": "good", "commit": f"g{i}", "value": 100.0 + i % 3}))
        value = bad_value if i == 4 else str(100.0 + i % 2)
        out.append(f'{{"series_id": "bad", "commit": "b{i}", "value": {value}}}')
    return "\n".join(out) + "\n"


M = ["--matrix", "{matrix.parquet}", "--out", "{model}", "--no-track"]
E = ["evaluate", "--matrix", "{matrix.parquet}", "--no-track", "--splits", "1"]

# (id, args, stdin, expected exit code, fragment of the message)
CASES: list[tuple[str, list[str], str | None, int, str]] = [
    # train: every option checked before reading or fitting
    ("train-threshold-negative", ["train", *M, "--threshold", "-1"], None, 2, "--threshold"),
    ("train-threshold-2", ["train", *M, "--threshold", "2"], None, 2, "outside [0, 1]"),
    ("train-threshold-nan", ["train", *M, "--threshold", "nan"], None, 2, "nan is outside [0, 1]"),
    ("train-threshold-recall-abc", ["train", *M, "--threshold", "recall:abc"], None, 2, "not a number"),
    ("train-threshold-fbeta-0", ["train", *M, "--threshold", "fbeta:0"], None, 2, "beta > 0"),
    ("train-target-recall-0", ["train", *M, "--target-recall", "0"], None, 2, "--target-recall"),
    ("train-target-recall-nan", ["train", *M, "--target-recall", "nan"], None, 2, "finite"),
    ("train-unknown-model", ["train", *M, "--model", "lstm"], None, 2, "must be one of rf, svm, xgb"),
    ("train-param-negative-trees", ["train", *M, "--param", "n_estimators=-3"], None, 2, "n_estimators"),
    ("train-param-unknown", ["train", *M, "--param", "no_such=1"], None, 2, "no_such"),
    ("train-param-text", ["train", *M, "--param", "n_estimators=abc"], None, 2, "n_estimators"),
    ("train-param-not-kv", ["train", *M, "--param", "n_estimators"], None, 2, "not key=value"),
    ("train-test-size-1", ["train", *M, "--test-size", "1"], None, 2, "--test-size"),
    ("train-test-size-nan", ["train", *M, "--test-size", "nan"], None, 2, "finite"),
    ("train-test-size-negative", ["train", *M, "--test-size", "-0.1"], None, 2, "--test-size"),
    ("train-n-jobs-0", ["train", *M, "--n-jobs", "0"], None, 2, "--n-jobs"),
    ("train-seed-negative", ["train", *M, "--seed", "-1"], None, 2, "--seed"),
    ("train-window-text", ["train", *M, "--window", "wide"], None, 2, "window"),
    ("train-missing-matrix", ["train", "--matrix", "{nothing.parquet}", "--out", "{model}", "--no-track"], None, 2,
     "no such file"),
    ("train-out-is-input", ["train", "--matrix", "{matrix.parquet}", "--out", "{matrix.parquet}", "--no-track"], None,
     2, "input of this command"),
    ("train-out-is-a-file", ["train", "--matrix", "{matrix.parquet}", "--out", "{afile.txt}", "--no-track"], None, 2,
     "not a directory"),
    ("train-garbage-tracking-db", ["train", "--matrix", "{matrix.parquet}", "--out", "{model}",
                                   "--tracking-uri", "sqlite:///{garbage.db}"], None, 2, "not a SQLite database"),
    ("train-tracking-uri-no-scheme", ["train", "--matrix", "{matrix.parquet}", "--out", "{model}",
                                      "--tracking-uri", "mlruns.db"], None, 2, "not a tracking URI"),
    ("train-unreachable-server", ["train", "--matrix", "{matrix.parquet}", "--out", "{model}",
                                  "--tracking-uri", "http://127.0.0.1:9"], None, 2, "cannot be used"),
    ("models-list-unreachable-server", ["models", "list", "--tracking-uri", "http://127.0.0.1:9"], None, 2,
     "cannot be used"),
    ("train-data-and-matrix", ["train", *M, "--data", "{data.csv}"], None, 2, "exactly one"),
    # evaluate / window-study
    ("evaluate-splits-0", [*E[:-1], "0"], None, 2, "--splits"),
    ("evaluate-splits-negative", [*E[:-1], "-1"], None, 2, "--splits"),
    ("evaluate-no-models", [*E, "--models", ","], None, 2, "at least one"),
    ("evaluate-unknown-model", [*E, "--models", "rf,lstm"], None, 2, "lstm"),
    ("evaluate-unknown-split", [*E, "--split-kinds", "random,weird"], None, 2, "weird"),
    ("evaluate-out-is-a-file", [*E, "--out", "{afile.txt}"], None, 2, "not a directory"),
    ("evaluate-bad-threshold", [*E, "--threshold", "inf"], None, 2, "inf is outside [0, 1]"),
    ("evaluate-garbage-tracking-db", ["evaluate", "--matrix", "{matrix.parquet}", "--splits", "1",
                                      "--tracking-uri", "sqlite:///{garbage.db}"], None, 2, "not a SQLite database"),
    ("evaluate-param-no-model", [*E, "--param", "n_estimators=5"], None, 2, "MODEL.KEY=VALUE"),
    ("window-study-bad-windows", ["window-study", "--out", "{ws}", "--data", "{data.csv}", "--windows", "a-b"], None,
     2, "--windows"),
    ("window-study-bad-split", ["window-study", "--out", "{ws}", "--data", "{data.csv}", "--split", "weird"], None,
     2, "--split"),
    # registry
    ("models-list-garbage-db", ["models", "list", "--tracking-uri", "sqlite:///{garbage.db}"], None, 2,
     "not a SQLite database"),
    ("models-list-missing-folder", ["models", "list", "--tracking-uri", "sqlite:///{nowhere}/x.db"], None, 2,
     "does not exist"),
    ("models-promote-no-store", ["models", "promote", "nobody", "3", "--tracking-uri", "sqlite:///{reg.db}"], None, 2,
     "no such tracking store"),
    # data commands and readers
    ("synth-seed-negative", ["synth", "--out", "{synth}", "--seed", "-1"], None, 2, "--seed"),
    ("synth-out-is-a-file", ["synth", "--out", "{afile.txt}"], None, 2, "not a directory"),
    ("synth-unknown-preset", ["synth", "--out", "{synth}", "--preset", "nope"], None, 2, "Invalid value for --preset"),
    ("summary-subnormal-values", ["summary", "--data", "{subnormal.csv}"], None, 2, "row 6: value 1e-308 is outside"),
    ("summary-huge-values", ["summary", "--data", "{huge.csv}"], None, 2, "row 6: value 1e+308 is outside"),
    ("summary-huge-negative", ["summary", "--data", "{huge_neg.csv}"], None, 2, "outside the usable range"),
    ("summary-latin1-json", ["summary", "--data", "{latin1.json}"], None, 2, "not a UTF-8 text file"),
    ("summary-binary-garbage", ["summary", "--data", "{garbage.bin}"], None, 2, "garbage.bin"),
    ("summary-deeply-nested-json", ["summary", "--data", "{nested.json}"], None, 2, "nested too deeply"),
    ("summary-empty-file", ["summary", "--data", "{empty.csv}"], None, 2, "empty"),
    ("summary-accepted", ["summary", "--data", "{data.csv}"], None, 0, "commits 120"),
    ("convert-out-is-input", ["convert", "--data", "{data.csv}", "--out", "{data.csv}"], None, 2,
     "input of this command"),
    ("convert-out-symlink-to-input", ["convert", "--data", "{data.csv}", "--out", "{link.csv}"], None, 2,
     "input of this command"),
    ("plot-unknown-extension", ["plot", "--data", "{data.csv}", "--out", "{plot.xyz}"], None, 2, ".png"),
    ("plot-out-is-input", ["plot", "--data", "{data.csv}", "--out", "{data.csv}"], None, 2, "input of this command"),
    ("plot-huge-values", ["plot", "--data", "{huge.csv}", "--out", "{plot.png}"], None, 2, "outside the usable range"),
    ("candidates-out-is-input", ["candidates", "--data", "{data.csv}", "--detector", "cusum", "--out", "{data.csv}"],
     None, 2, "input of this command"),
    ("candidates-subnormal", ["candidates", "--data", "{subnormal.csv}", "--detector", "cusum", "--out", "{c.csv}"],
     None, 2, "outside the usable range"),
    ("candidates-pvalue-2", ["candidates", "--data", "{data.csv}", "--detector", "edivisive", "--param",
                             "max_pvalue=2", "--out", "{c.csv}"], None, 2, "max_pvalue=2.0 of detector 'edivisive'"),
    ("candidates-pvalue-nan", ["candidates", "--data", "{data.csv}", "--detector", "edivisive", "--param",
                               "max_pvalue=nan", "--out", "{c.csv}"], None, 2, "in (0, 1)"),
    ("candidates-cusum-drift-negative", ["candidates", "--data", "{data.csv}", "--detector", "cusum", "--param",
                                         "drift=-1", "--out", "{c.csv}"], None, 2, "drift=-1.0 of detector 'cusum'"),
    ("candidates-pelt-jump-0", ["candidates", "--data", "{data.csv}", "--detector", "pelt", "--param", "jump=0",
                                "--out", "{c.csv}"], None, 2, "jump=0"),
    ("select-features-out-is-input", ["select-features", "--data", "{data.csv}", "--out", "{data.csv}"], None, 2,
     "input of this command"),
    ("select-features-n-jobs-0", ["select-features", "--data", "{data.csv}", "--out", "{fs.json}", "--n-jobs", "0"],
     None, 2, "--n-jobs"),
    # applying a model
    ("label-out-is-input", ["label", "--data", "{data.csv}", "--out", "{data.csv}"], None, 2, "input of this command"),
    ("label-n-jobs-0", ["label", "--data", "{data.csv}", "--n-jobs", "0"], None, 2, "--n-jobs"),
    ("label-threshold-1.5", ["label", "--data", "{data.csv}", "--threshold", "1.5"], None, 2, "--threshold"),
    ("label-threshold-nan", ["label", "--data", "{data.csv}", "--threshold", "nan"], None, 2, "finite"),
    ("label-accepted", ["label", "--data", "{data.csv}", "--out", "{labels.csv}"], None, 0, ""),
    ("score-out-is-candidates", ["score", "--data", "{data.csv}", "--candidates", "{cands.csv}", "--out",
                                 "{cands.csv}"], None, 2, "input of this command"),
    ("score-rescores-its-own-output", ["score", "--data", "{data.csv}", "--candidates", "{scored.csv}", "--out",
                                       "{rescored.csv}"], None, 0, "scores written to"),
    ("score-target-recall-0", ["score", "--data", "{data.csv}", "--candidates", "{cands.csv}", "--target-recall", "0"],
     None, 2, "--target-recall"),
    ("detect-batch-series-0", ["detect", "--data", "{data.csv}", "--out", "{d.csv}", "--batch-series", "0"], None, 2,
     "--batch-series"),
    ("detect-out-is-input", ["detect", "--data", "{data.csv}", "--out", "{data.csv}"], None, 2,
     "input of this command"),
    ("detect-subnormal", ["detect", "--data", "{subnormal.csv}", "--out", "{d.csv}"], None, 2,
     "outside the usable range"),
    # watch: numbers, stores
    ("watch-poll-negative", ["watch", "--poll", "-1"], "", 2, "--poll"),
    ("watch-cache-series-negative", ["watch", "--cache-series", "-1"], "", 2, "--cache-series"),
    ("watch-subnormal-series-quarantined", ["watch"], _stream("1e-308"), 0, "quarantined series 'bad'"),
    ("watch-huge-series-quarantined", ["watch"], _stream("1e308"), 0, "quarantined series 'bad'"),
    ("watch-int-too-large-quarantined", ["watch"], _stream("1" + "0" * 400), 0, "quarantined series 'bad'"),
    # a failed run's NaN: skipped with a warning, the series going on (thirty-second session; it stopped the stream)
    ("watch-nan-line", ["watch"], _stream("NaN"), 0, "skipped a commit without a value"),
    ("watch-empty-store", ["watch", "--state", "{empty.db}"], "", 2, "is empty (0 bytes)"),
    ("watch-dropped-decisions-table", ["watch", "--state", "{dropped.db}"], "", 2, "has no decisions table"),
    ("watch-malformed-page", ["watch", "--state", "{malformed.db}"], "", 2, "--reset-state"),
    ("watch-dropped-series-table", ["watch", "--state", "{noseries.db}"], "", 2, "has no series table"),
    ("watch-empty-state-object", ["watch", "--state", "{emptystate.db}"], "", 2, "lacks 'n'"),
    ("watch-garbage-store", ["watch", "--state", "{garbage.db}"], "", 2, "not a state file"),
    # the workspace's labels store
    ("labels-export-empty-store", ["labels", "export", "--labels", "{empty.db}", "--out", "{export.csv}"], None, 2,
     "is empty (0 bytes)"),
    ("labels-export-garbage-store", ["labels", "export", "--labels", "{garbage.db}", "--out", "{export.csv}"], None, 2,
     "file is not a database"),
    # malformed.db is a damaged *watch* store: since 68c452b named as another database, not as a damaged labels store
    ("labels-export-malformed-store", ["labels", "export", "--labels", "{malformed.db}", "--out", "{export.csv}"], None,
     2, "not a triage labels store"),
    # model directories
    ("label-model-with-fifo", ["label", "--data", "{data.csv}", "--model", "{fifo-model}"], None, 2,
     "not a regular file"),
    ("label-model-nan-threshold", ["label", "--data", "{data.csv}", "--model", "{nan-model}"], None, 2,
     "not a finite number in [0, 1]"),
    ("label-model-escaping-manifest", ["label", "--data", "{data.csv}", "--model", "{escape-model}"], None, 2,
     "not a plain name inside"),
]


def _fill(ws: Path, args: list[str]) -> list[str]:
    out = []
    for a in args:
        while "{" in a:
            start, end = a.index("{"), a.index("}")
            name = a[start + 1:end]
            a = a[:start] + (str(ws) if name == "ws" else str(ws / name)) + a[end + 1:]
        out.append(a)
    return out


@pytest.fixture(scope="module")
def tampered_models(ws) -> None:
    """Copies of the bundled adaptive model, each tampered one way (checksums recomputed)."""
    import shutil

    from triage.model_lookup import resolve_model
    from triage.training import model_files

    source = resolve_model("default", "alerts")

    def copy(name: str) -> Path:
        target = ws / name
        if not target.exists():
            shutil.copytree(source, target)
        return target

    def reseal(path: Path) -> None:
        names = sorted(p.name for p in path.iterdir() if p.name != model_files.CHECKSUMS)
        (path / model_files.CHECKSUMS).write_text("".join(f"{model_files._sha256(path / n)}  {n}\n" for n in names))

    fifo = copy("fifo-model")
    estimator = json.loads((fifo / "manifest.json").read_text())["files"]["estimator"]
    if not (fifo / estimator).is_fifo():
        (fifo / estimator).unlink()
        os.mkfifo(fifo / estimator)
    for name, change in (("nan-model", lambda m: m["threshold"].update({"value": float("nan")})),
                         ("escape-model", lambda m: m["files"].update({"estimator": "../data.csv"}))):
        path = copy(name)
        manifest = json.loads((path / "manifest.json").read_text())
        change(manifest)
        (path / "manifest.json").write_text(json.dumps(manifest))
        reseal(path)


@pytest.mark.parametrize(("case", "args", "stdin", "code", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_hostile_case(case, args, stdin, code, fragment, ws, tampered_models, monkeypatch, tmp_path):
    monkeypatch.setenv("TRIAGE_ERROR_LOG", str(tmp_path / "errors.log"))
    monkeypatch.chdir(tmp_path)  # a case that writes by default writes here
    got, output = invoke(_fill(ws, args), stdin)
    assert "Traceback" not in output
    assert got == code, output[-3000:]
    flat = " ".join(output.translate(BOX).split())  # rich wraps long lines inside a box
    assert " ".join(fragment.split()) in flat, output[-3000:]
    # No case changes an input: checked after each one (a test after them all checked nothing when
    # run alone, or on an xdist worker that had run few of them).
    assert (ws / "data.csv").read_text().startswith("series_id,commit,value,label\nperf/a,perf/a@0,")
    assert (ws / "link.csv").is_symlink()
    assert (ws / "cands.csv").read_text() == "series_id,commit,index\nperf/a,perf/a@30,30\n"


def test_reset_state_keeps_the_damaged_store_and_starts_over(ws, tmp_path):
    store = tmp_path / "s.db"
    store.write_bytes((ws / "dropped.db").read_bytes())
    code, out = invoke(["watch", "--state", str(store), "--reset-state"], _stream("101.0"))
    assert code == 0, out
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("s.db.damaged-")]
    assert len(kept) == 1 and kept[0].read_bytes() == (ws / "dropped.db").read_bytes()
    assert "kept as" in out
    code, out = invoke(["watch", "--state", str(store)], "")
    assert code == 0, out  # the new store is healthy


def test_the_checked_state_format_is_the_one_the_store_writes():
    from triage.online import state_store, store_checks

    assert store_checks.STATE_FORMAT_VERSION == state_store.FORMAT_VERSION


def test_internal_errors_print_version_and_log_not_a_traceback(tmp_path, monkeypatch):
    log = tmp_path / "errors.log"
    monkeypatch.setenv("TRIAGE_ERROR_LOG", str(log))
    lines: list[str] = []
    try:
        {}["missing"]
    except KeyError as exc:
        code = exit_code_for(exc, lines.append)
    assert code == 1
    assert lines[0].startswith("internal error: KeyError") and "triage " in lines[0] and str(log) in lines[0]
    assert "Traceback" in log.read_text() and "Traceback" not in lines[0]
    lines.clear()
    assert exit_code_for(OSError(28, "No space left on device", "/full/out.csv"), lines.append) == 2
    assert lines == ["error: /full/out.csv: No space left on device"]


# ---------------------------------------------------------------------- numeric edges (hypothesis)

edge_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e-308, -1e-308, 5e-324, 1e308, -1.7e308, MIN_ABS, MAX_ABS, MIN_ABS / 2, MAX_ABS * 2, 0.0, -0.0]),
)


@settings(max_examples=60, deadline=None)
@given(x=edge_floats)
def test_any_float_is_refused_with_its_row_or_is_usable(x):
    problem = value_problem(x)
    usable = math.isfinite(x) and (x == 0 or MIN_ABS <= abs(x) <= MAX_ABS)
    assert (problem is None) == usable
    if usable:
        assert check_values([1.0, x], "f.csv", [2, 3])[1] == x
    else:
        with pytest.raises(InputError, match=r"f\.csv, row 3: value"):
            check_values([1.0, x], "f.csv", [2, 3])


@pytest.fixture(scope="module")
def online_loop():
    from triage.model_lookup import resolve_model
    from triage.online.loop import OnlineTriage

    return OnlineTriage.from_model_dir(resolve_model("default", "online"), explain="none")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=edge_floats, scale=st.sampled_from([1e-90, 1.0, 1e90]))
def test_the_online_loop_refuses_or_decides_finitely(online_loop, x, scale):
    """A value at the edges never crashes the loop, never stops the series, never yields NaN."""
    from triage.online.loop import RejectedCommit

    sid = f"edge-{len(online_loop.states)}"
    for i in range(12):
        online_loop.process_one(sid, f"c{i}", scale * (1.0 + 0.01 * (i % 3)))
    try:
        decision = online_loop.process_one(sid, "edge", x)
    except RejectedCommit as exc:
        assert value_problem(x) is not None and exc.series == sid
    else:
        assert value_problem(x) is None
        assert decision is None or math.isfinite(decision.probability)
    after = online_loop.process_one(sid, "next", scale)  # the series goes on either way
    assert after is None or math.isfinite(after.probability)


# ---------------------------------------------------------------------- two watchers, one store


@pytest.mark.slow
def test_two_watch_processes_on_one_store_one_refuses_and_the_store_stays_intact(tmp_path):
    db = tmp_path / "shared.db"
    cmd = [*warm_triage(), "watch", "--state", str(db)]
    first = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first.stdin.write(json.dumps({"series_id": "s", "commit": "c0", "value": 1.0}) + "\n")
        first.stdin.flush()
        # Until the first holds the store's lock (a read is refused), not a guess of 0.5 s after the
        # file appears: on a loaded machine the second could open it first.
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0) as probe:
                    probe.execute("SELECT COUNT(*) FROM meta").fetchone()
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    break
            time.sleep(0.1)
        second = subprocess.run(cmd, input=json.dumps({"series_id": "s", "commit": "c1", "value": 2.0}) + "\n",
                                capture_output=True, text=True, timeout=180)
        assert second.returncode == 2, second.stderr
        assert "in use by another process" in second.stderr and "Traceback" not in second.stderr
        for i in range(1, 6):
            first.stdin.write(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 1.0 + i % 2}) + "\n")
        first.stdin.close()
        assert first.wait(timeout=180) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    from triage.model_lookup import DEFAULTS, bundled_model
    from triage.online.state_store import StateStore

    # the default online model decides commit p once K more commits have arrived: 6 - K decisions
    k = int(json.loads((bundled_model(DEFAULTS["online"]) / "manifest.json").read_text())["window"])
    with StateStore(db) as store:  # opens: the integrity and consistency checks pass
        assert store.n_decisions() == 6 - k
        assert store.series_ids() == ["s"]

