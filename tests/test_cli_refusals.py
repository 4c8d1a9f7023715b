"""Refusals found by an exploratory bad-input sweep: stored files are never overwritten or moved.

Each test runs the real command in-process (typer's CliRunner, through the
same boundary as ``triage.cli.app.main``) on small files written here, and
checks both the exit code and that what was stored is still intact.
"""

from __future__ import annotations

import gzip
import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat
from helpers_cli import invoke as run_cli
from warm_start import warm_triage

from triage.core.errors import InputError


def invoke(args: list[object], stdin: str | None = None) -> tuple[int, str]:
    """Exit code and output of ``triage ARGS`` as one line (see helpers_cli)."""
    code, text = run_cli(args, stdin)
    return code, flat(text)


@pytest.fixture
def partial(tmp_path: Path) -> Path:
    """A partly measured history: a step from 100 to 120 between c and e."""
    path = tmp_path / "part.csv"
    path.write_text("commit,value\na,100\nb,\nc,101\nd,\ne,120\nf,\ng,121\n")
    return path


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """A dataset folder holding one long-layout history (two series of 60 commits)."""
    rng = np.random.default_rng(0)
    rows = [{"series_id": f"s{k}", "commit": f"c{i:03d}", "value": 100 + (10 if i >= 30 else 0) + rng.normal()}
            for k in range(2) for i in range(60)]
    folder = tmp_path / "ds"
    folder.mkdir()
    pd.DataFrame(rows).to_csv(folder / "history.csv", index=False)
    return folder


def test_sample_and_culprit_refuse_to_overwrite_their_inputs(partial: Path, tmp_path: Path) -> None:
    before = partial.read_bytes()
    code, out = invoke(["sample", "--data", partial, "--budget", "1", "--out", partial])
    assert code == 2 and "is an input of this command" in out
    oracle = tmp_path / "oracle.csv"
    oracle.write_text("commit,value\na,100\nb,100\nc,101\nd,119\ne,120\nf,121\ng,121\n")
    for target in (partial, oracle):
        code, out = invoke(["culprit", "--data", partial, "--before", "c", "--after", "e", "--levels", "1",
                            "--oracle", oracle, "--out", target])
        assert code == 2 and "is an input of this command" in out
    assert partial.read_bytes() == before
    assert oracle.read_text().startswith("commit,value\na,100")


def test_an_existing_file_inside_an_input_folder_is_not_overwritten(history: Path) -> None:
    data = history / "history.csv"
    before = data.read_bytes()
    code, out = invoke(["candidates", "--data", history, "--detector", "perfherder", "--out", data])
    assert code == 2 and "is an input of this command" in out
    assert data.read_bytes() == before
    # A new file in the folder is fine: it replaces nothing that is read.
    code, out = invoke(["candidates", "--data", history, "--detector", "perfherder", "--out", history / "c.csv"])
    assert code == 0, out
    assert (history / "c.csv").read_text().startswith("series_id")


def test_labels_export_never_writes_over_its_store(tmp_path: Path) -> None:
    from triage.workspace.store import LabelsStore

    store_path = tmp_path / "labels.sqlite"
    store = LabelsStore(store_path)
    store.record("s0", "c030", "true", who="alice")
    store.close()
    link = tmp_path / "link.sqlite"
    link.symlink_to(store_path)
    for out in (store_path, link):
        code, text = invoke(["labels", "export", "--labels", store_path, "--out", out])
        # Refused as a SQLite database before it could be found to be the input as well.
        assert code == 2 and "is a SQLite database" in flat(text), text
    with sqlite3.connect(store_path) as db:  # still a database, decision kept
        assert db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] > 0
    code, text = invoke(["labels", "export", "--labels", store_path, "--out", tmp_path / "export.csv"])
    assert code == 0, text
    assert "c030" in (tmp_path / "export.csv").read_text()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_reset_state_never_moves_a_directory_or_device_aside(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    if kind == "directory":
        state.mkdir()
        (state / "notes.txt").write_text("keep")
    else:
        os.mkfifo(state)  # stands in for a device: not a regular file, must stay where it is
    line = '{"series_id": "s", "commit": "a", "value": 1}\n'
    for extra in ([], ["--reset-state"]):
        code, out = invoke(["watch", "--state", state, *extra], stdin=line)
        assert code == 2, out
        assert "not a regular file" in out and "--reset-state" not in out.split("error:")[-1]
    assert not list(tmp_path.glob("state.damaged-*"))
    if kind == "directory":
        assert (state / "notes.txt").read_text() == "keep"
    else:
        assert state.is_fifo()


def test_truncated_gzip_is_a_located_error_not_aborted(partial: Path, tmp_path: Path) -> None:
    broken = tmp_path / "part.csv.gz"
    broken.write_bytes(gzip.compress(partial.read_bytes())[:30])
    for args in (["sample", "--data", broken, "--budget", "1"],
                 ["culprit", "--data", broken, "--before", "c", "--after", "e"]):
        code, out = invoke(args)
        assert code == 2, out
        assert "part.csv.gz" in out and "cannot decompress" in out


def test_culprit_asks_again_for_a_non_finite_value_and_names_an_ended_input(partial: Path, tmp_path: Path) -> None:
    out_csv = tmp_path / "steps.csv"
    code, out = invoke(["culprit", "--data", partial, "--before", "c", "--after", "e", "--levels", "1",
                        "--max-measurements", "1", "--out", out_csv], stdin="nan\ninf\n119\n")
    assert code == 0, out
    assert out.count("not a finite number") == 2
    steps = pd.read_csv(out_csv)
    assert steps["value"].tolist() == [119.0] and steps["nearer"].tolist() == ["new"]
    code, out = invoke(["culprit", "--data", partial, "--before", "c", "--after", "e", "--levels", "1"], stdin="")
    assert code == 2 and "input ended before commit 'd' was measured" in out


def test_a_repeated_candidate_row_is_refused(history: Path, tmp_path: Path) -> None:
    cands = tmp_path / "c.csv"
    assert invoke(["candidates", "--data", history, "--detector", "perfherder", "--out", cands])[0] == 0
    lines = cands.read_text().splitlines()
    assert len(lines) > 1, "the step at commit 30 is a candidate"
    cands.write_text("\n".join([*lines, lines[1]]) + "\n")
    code, out = invoke(["score", "--data", history, "--candidates", cands, "--out", tmp_path / "s.csv"])
    assert code == 2, out
    assert f"row {len(lines) + 1}: repeats the candidate of row 2" in out
    assert not (tmp_path / "s.csv").exists()


def test_train_on_too_few_labels_is_a_data_error(tmp_path: Path) -> None:
    from triage.training.evaluation import SplitError, split_indices

    y = np.array([1, 0, 0, 0, 0, 0])
    groups = np.array(["a", "a", "b", "b", "c", "c"])
    with pytest.raises(SplitError, match="1 positive rows in 1 series"):
        split_indices("grouped", y, groups, np.arange(6), seed=0)
    rows = [{"series_id": f"s{k}", "commit": f"c{i:03d}", "value": 100.0 + (10 if i >= 30 else 0) + 0.1 * (i % 3),
             "label": "true_positive" if (k == 0 and i == 30) else ("false_positive" if i == 15 else "")}
            for k in range(3) for i in range(60)]
    data = tmp_path / "few.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    code, out = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track"])
    assert code == 2, out
    assert "few.csv" in out and "could not put both classes" in out
    assert not (tmp_path / "m").exists()


def test_negative_counts_are_refused(history: Path, tmp_path: Path) -> None:
    cands = tmp_path / "c.csv"
    assert invoke(["candidates", "--data", history, "--detector", "perfherder", "--out", cands])[0] == 0
    for option in ("--show", "--explain"):
        code, out = invoke(["score", "--data", history, "--candidates", cands, option, "-1"])
        assert code == 2 and option in out, out
    code, out = invoke(["report", "--data", history, "--decisions", cands, "--out", tmp_path / "r", "--max-plots", "-1"])
    assert code == 2 and "--max-plots" in out, out
    assert not (tmp_path / "r").exists()


def test_one_class_training_data_names_its_file(tmp_path: Path) -> None:
    rows = [{"series_id": f"s{k}", "commit": f"c{i:03d}", "value": 100.0 + (10 if i >= 30 else 0) + 0.1 * (i % 3),
             "label": "true_positive" if i == 30 else ""} for k in range(4) for i in range(60)]
    data = tmp_path / "onlytrue.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    code, out = invoke(["train", "--data", data, "--out", tmp_path / "m", "--no-track"])
    assert code == 2, out
    assert "onlytrue.csv: only true_positive candidates" in out and "<input>" not in out


def test_culprit_names_an_unmeasured_bound_plainly(partial: Path) -> None:
    code, out = invoke(["culprit", "--data", partial, "--before", "b", "--after", "e"])
    assert code == 2 and "--before commit 'b' has no measured value" in out, out


@pytest.mark.parametrize(("content", "problem"), [
    (b"", "is empty: no header line"),
    (gzip.compress(b"series_id,commit,value\ns,a,1\n", mtime=0), "is gzip-compressed"),
    (b"series_id,commit,value\ns,a,1\ns,b,\xa4\xff2\n", "line 3: not UTF-8 text"),
    (("\ufeffseries_id,commit,value\n" + "".join(f"s,c{i},{100 + i % 2}\n" for i in range(12))).encode(), None),
], ids=["empty", "gzip", "not-utf8", "byte-order-mark"])
def test_watch_csv_reads_or_names_the_problem(tmp_path: Path, content: bytes, problem: str | None) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes(content)
    code, out = invoke(["watch", "--csv", path, "--state", tmp_path / "state.db"])
    if problem is None:  # the byte order mark is read past: commit c0 decided 4 commits later
        assert code == 0, out
        assert '"commit": "c0"' in out and '"decided_at": "c4"' in out
    else:
        assert code == 2, out
        assert "results.csv" in out and problem in out
    code, out = invoke(["watch", "--csv", tmp_path])
    assert code == 2 and "is a directory" in out


def test_a_hand_edited_series_state_names_the_store_and_the_series(tmp_path: Path) -> None:
    import json

    state = tmp_path / "state.db"
    stream = "".join(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 100 + i % 2}) + "\n" for i in range(8))
    assert invoke(["watch", "--state", state], stdin=stream)[0] == 0
    db = sqlite3.connect(state)
    (text,) = db.execute("SELECT state FROM series WHERE series_id = 's'").fetchone()
    edited = json.loads(text)
    edited["n"] = "abc"
    db.execute("UPDATE series SET state = ? WHERE series_id = 's'", (json.dumps(edited),))
    db.commit()
    db.close()
    code, out = invoke(["watch", "--state", state], stdin=json.dumps({"series_id": "s", "commit": "c8", "value": 1}))
    assert code == 2, out
    assert "state.db" in out and "stored state of series 's' is unreadable" in out and "--reset-state" in out


def test_a_library_warning_is_one_line_naming_the_input(tmp_path: Path) -> None:
    import subprocess

    data = tmp_path / "uns.csv"
    data.write_text("series_id,commit,timestamp,value\ns,a,2024-01-02,1\ns,b,2024-01-01,2\ns,c,2024-01-03,3\n")
    res = subprocess.run([*warm_triage(), "summary", "--data", str(data), "--sort-timestamps"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == f"warning: {data}: series 's' sorted by timestamp (first out-of-order row 3)"


def test_a_tracking_uri_never_turns_another_database_or_a_typo_into_a_store(tmp_path: Path) -> None:
    from triage.workspace.store import LabelsStore

    labels = tmp_path / "labels.sqlite"
    LabelsStore(labels).close()

    def tables(db: Path) -> set[str]:
        con = sqlite3.connect(db)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()

    before = tables(labels)
    for args in (["models", "list"], ["models", "promote", "m", "1"]):
        code, out = invoke([*args, "--tracking-uri", f"sqlite:///{labels}"])
        assert code == 2 and "not an MLflow tracking store" in out, out
    assert tables(labels) == before
    typo = tmp_path / "mlrun.db"
    for args in (["models", "list"], ["models", "promote", "m", "1"]):
        code, out = invoke([*args, "--tracking-uri", f"sqlite:///{typo}"])
        assert code == 2 and "no such tracking store" in out, out
    assert not typo.exists()
    # A real (empty) MLflow store: the registry answers for itself.
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns.db"
    MlflowClient(tracking_uri=f"sqlite:///{store}").search_experiments()
    code, out = invoke(["models", "promote", "nobody", "3", "--tracking-uri", f"sqlite:///{store}"])
    assert code == 2 and "no such registered model" in out, out


@pytest.fixture
def tiny_labelled(tmp_path: Path) -> Path:
    """Four series, each with one true and (but the first) one false candidate: too few for a random split."""
    rows = [{"series_id": f"s{k}", "commit": f"c{i:03d}", "value": 100.0 + (10 if i >= 30 else 0) + 0.3 * ((i * 7) % 5),
             "label": "true_positive" if i == 30 else ("false_positive" if (i == 15 and k == 0) else "")}
            for k in range(4) for i in range(60)]
    path = tmp_path / "tiny.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_window_study_and_evaluate_on_too_few_labels_name_the_data(tiny_labelled: Path, tmp_path: Path) -> None:
    for args in (["window-study", "--windows", "0", "--splits", "2", "--out", tmp_path / "ws"],
                 ["evaluate", "--window", "0", "--splits", "2", "--models", "rf", "--split-kinds", "random"]):
        code, out = invoke([*args, "--data", tiny_labelled, "--no-track"])
        assert code == 2, out
        assert "tiny.csv: random split: 4 true and 1 false candidates" in out, out


def test_window_study_refuses_a_range_it_could_never_finish(tiny_labelled: Path, tmp_path: Path) -> None:
    for windows, problem in (("0-99999999", "holds 100,000,000 windows"), ("9-3", "runs backwards")):
        code, out = invoke(["window-study", "--data", tiny_labelled, "--windows", windows, "--out", tmp_path / "ws",
                            "--no-track"])
        assert code == 2 and problem in out, out
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(("change", "problem"), [
    (lambda m: m.update({"extra": [1]}), "the manifest's extra is list, not an object"),
    (lambda m: m["extra"]["online"].update({"threshold": float("nan")}), "extra.online.threshold must be a number in [0, 1], got nan"),
    (lambda m: m["extra"]["online"].update({"withdraw_below": "a"}), "extra.online.withdraw_below must be a finite number >= 0, got 'a'"),
    (lambda m: m.update({"window": 1_000_000}), "window 1000000 is over the loop's largest confirmation delay"),
], ids=["extra-list", "nan-threshold", "text-withdraw", "huge-window"])
def test_an_edited_online_manifest_is_refused_naming_the_model_and_field(history: Path, tmp_path: Path, change,
                                                                         problem: str) -> None:
    import json
    import shutil

    from triage.model_lookup import resolve_model
    from triage.training import model_files

    model = tmp_path / "model"
    shutil.copytree(resolve_model("default", "online"), model)
    manifest = json.loads((model / "manifest.json").read_text())
    change(manifest)
    (model / "manifest.json").write_text(json.dumps(manifest))
    names = sorted(p.name for p in model.iterdir() if p.name != model_files.CHECKSUMS)
    (model / model_files.CHECKSUMS).write_text("".join(f"{model_files._sha256(model / n)}  {n}\n" for n in names))
    code, out = invoke(["detect", "--data", history, "--model", model, "--out", tmp_path / "d.csv"])
    assert code == 2, out
    assert str(model) in out and problem in out


def test_serve_on_a_port_in_use_fails_at_once_and_creates_no_store(history: Path, tmp_path: Path) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        code, out = invoke(["serve", "--data", history, "--labels", tmp_path / "l.sqlite", "--port", str(port)])
    finally:
        taken.close()
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in out, out
    assert list(tmp_path.glob("l.sqlite*")) == []


def test_the_workspace_resolves_its_model_like_the_other_commands(history: Path, tmp_path: Path) -> None:
    from triage.cli.workspace import build_workspace

    ws = build_workspace(history, tmp_path / "l.sqlite", None, "default", commit_url=None, sheriff="me", token=None)
    try:
        assert ws.model_name == "default"
    finally:
        ws.store.close()
    with pytest.raises(InputError, match="no-such-model"):
        build_workspace(history, tmp_path / "m.sqlite", None, "no-such-model", commit_url=None, sheriff="me",
                        token=None)
    assert not (tmp_path / "m.sqlite").exists()


def test_select_features_names_its_data_once(tiny_labelled: Path, tmp_path: Path) -> None:
    frame = pd.read_csv(tiny_labelled)
    frame["label"] = frame["label"].replace("false_positive", "")  # one class left
    data = tmp_path / "onlytrue.csv"
    frame.to_csv(data, index=False)
    code, out = invoke(["select-features", "--data", data, "--window", "0", "--out", tmp_path / "fs.json"])
    assert code == 2, out
    assert f"{data}: only true_positive candidates" in out and "<input>" not in out and out.count(str(data)) == 1


@pytest.mark.parametrize("command", [
    ["convert", "--data", "{history}"],
    ["candidates", "--data", "{history}", "--detector", "perfherder"],
    ["plot", "--data", "{history}"],
    ["sample", "--data", "{partial}", "--budget", "1"],
])
def test_a_file_output_ending_in_a_separator_is_refused_not_written_as_a_file(
    command: list[str], history: Path, partial: Path, tmp_path: Path
) -> None:
    # Path("new/") drops the separator: the command would write a file named "new".
    target = tmp_path / "new"
    args = [a.format(history=history, partial=partial) for a in command] + ["--out", f"{target}{os.sep}"]
    code, out = invoke(args)
    assert code == 2, out
    assert "ends with a path separator" in out
    assert not target.exists()
    code, out = invoke([a.format(history=history, partial=partial) for a in command]
                       + ["--out", str(tmp_path / ("new.png" if command[0] == "plot" else "new.csv"))])
    assert code == 0, out


@pytest.mark.parametrize("blocker", ["data", "report"])
def test_demo_refuses_a_file_where_it_writes_a_folder_before_any_work(blocker: str, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    (out / blocker).write_text("mine\n")
    code, text = invoke(["demo", "--out", out])
    assert code == 2, text
    assert f"{out / blocker}: exists and is not a directory" in text
    assert sorted(p.name for p in out.iterdir()) == [blocker]  # nothing written
    assert (out / blocker).read_text() == "mine\n"
