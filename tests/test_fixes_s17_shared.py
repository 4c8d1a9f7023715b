"""Shared-module defects reported by the seventeenth session's walkthroughs, each with its test.

1. ``--trim-warmup``'s help on ``summary``, ``convert`` and ``candidates`` said every series is
   read as times (a warm-up falls); a higher-is-better series has been read as a rate, whose
   warm-up rises, since the sixteenth session.
2. ``candidates --out -`` and ``convert --out -`` ended with "-> -"; ``score`` / ``label`` say
   "standard output".
3. ``candidates --detector ensemble --param min_votes=9`` loaded the data and then failed on its
   first series ("detector 'ensemble' failed on series ..."): the rule across parameters is
   now ``Ensemble.check_params``, which ``make`` and ``fit`` call.
4. ``OnlineTriage.from_model_dir`` hashed ``manifest.json`` read again after loading the model: a
   model swapped in between (``train --out``) gave the state store the new model's identity with
   the old model's classifier. The id is now the hash of the manifest the classifier came with
   (the load is redone when they differ).
5. ``evaluate --out`` (``EvaluationResult.save``), ``window-study --out`` and the training plots
   wrote with plain ``to_csv`` / ``write_text`` / ``savefig``: a kill or a full disk mid-write
   left a cut file where the last good one was. They now write through ``triage.core.atomic``.
6. ``score`` / ``label`` tables ended in a RecursionError (exit 1, no output file) when two groups
   of series ids read alike under the column's cut but shared nothing at both ends among them
   (four asv ids of two suites ending in ``@main``): the "middle" was the whole id again.
7. A workspace series page read every decision of the labels store (0.4 s per page at 50,000
   decisions): ``LabelsStore.current(series_id)`` reads one series'.
8. ``triage steady`` printed one table row per benchmark (2,000 benchmarks: 2,007 lines in a CI
   log); it shows 40 and counts the rest.
9. SIGTERM (systemd's stop, ``kill``) ended a command at once: no ``finally`` ran, so the copy of
   a compressed or piped input stayed in $TMPDIR, a half-written ``.<out>.tmp`` beside ``--out``
   and a ``.report.tmp-*`` folder. It is now handled as Ctrl-C is, with exit status 143.
10. Replacing an existing output gave it the umask's mode: a ``chmod 600`` file came back 644
    (and the umask was read by setting it to 0 and back, which races with other threads).
11. ``PYTHONIOENCODING=latin-1``: a table's "…" ended ``score`` before it wrote anything
    (UnicodeEncodeError); ``PYTHONWARNINGS=error``: the tool's own UserWarnings (an alert left
    unscored) were internal errors.
12. ``convert --out x.jsonl`` wrote a CSV under a JSON-lines name; ``detect --out -`` ended
    "-> -".
13. Series ids that differ only by surrounding spaces (``a`` and ``a ``) were read as one series,
    their commits averaged as re-runs, without a word; the composed and decomposed forms of
    ``café`` were two series printed alike. Both are now warned about.
14. ``sample``'s "choose one with --series" listed ids raw: one holding a line break broke the
    one-line error (now repr).
15. Ctrl-C on ``detect --workers processes`` printed a KeyboardInterrupt traceback from every
    worker: the workers now leave SIGINT to the parent, which stops the pool.
16. ``watch --csv`` on a quoted cell holding a line break stopped on the next line with "1 fields,
    the header has 4"; it now names the line where the cell opens and points to ``detect``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import flat, invoke, step_history


@pytest.mark.parametrize("command", ["summary", "convert", "candidates"])
def test_trim_warmup_help_says_a_rate_warms_up_rising(command):
    code, out = invoke([command, "--help"])
    assert code == 0
    text = flat(out)
    assert "values read as times: a warm-up falls" not in text
    assert "higher-is-better series is a rate, whose warm-up rises" in text


@pytest.mark.parametrize(
    "args", [["convert"], ["candidates", "--detector", "perfherder"]], ids=["convert", "candidates"]
)
def test_writing_to_standard_output_is_named_so(tmp_path, args):
    data = step_history(tmp_path / "h.csv")
    code, out = invoke([*args, "--data", data, "--out", "-"])
    assert code == 0, out
    assert "-> standard output" in out and "-> -" not in out


def test_an_ensemble_asking_more_votes_than_members_is_a_usage_error_before_loading(tmp_path):
    # It was found on the first series, after loading: "detector 'ensemble' failed on series ...".
    code, out = invoke(["candidates", "--data", tmp_path / "missing.csv", "--detector", "ensemble",
                        "--param", "min_votes=9", "--out", tmp_path / "e.csv"])
    text = flat(out)
    assert code == 2 and "min_votes=9" in text and "8 members" in text, out
    assert "missing.csv" not in text and "series" not in text


def test_the_online_loop_takes_its_model_id_from_the_manifest_it_loaded(tmp_path, monkeypatch):
    # The id was hashed from manifest.json read again after the load: a model swapped in between
    # gave the state store the new model's identity with the old model's classifier.
    import hashlib
    import shutil

    from triage.online.loop import OnlineTriage
    from triage.training import model_files

    model = tmp_path / "m"
    shutil.copytree("models/online-w4", model)
    real_load = model_files.load_model
    calls = []

    def load_then_swap(path):
        clf = real_load(path)
        calls.append(path)
        if len(calls) == 1:  # `train --out` swaps another model in right after the first load
            shutil.copytree("models/online-w3", tmp_path / "new")
            shutil.rmtree(model)
            (tmp_path / "new").rename(model)
        return clf

    monkeypatch.setattr(model_files, "load_model", load_then_swap)
    loop = OnlineTriage.from_model_dir(model)
    assert len(calls) == 2  # loaded again
    assert loop.classifier.manifest_["window"] == 3
    assert loop.model_id == hashlib.sha256((model / "manifest.json").read_bytes()).hexdigest()


def test_evaluate_and_window_study_outputs_are_whole_or_untouched(tmp_path, monkeypatch):
    # EvaluationResult.save and window-study wrote with plain to_csv / write_text / savefig: a kill
    # (here: a failure) mid-write left a cut file where the last good one was.
    import pandas as pd

    from triage.training.evaluation import EvaluationResult
    from triage.training.plots import window_png

    for name in ("records.csv", "summary.csv", "window.png"):
        (tmp_path / name).write_text("the last good one")

    def cut_short(self, path_or_buf=None, *args, **kwargs):
        if hasattr(path_or_buf, "write"):
            path_or_buf.write(b"series,")
        else:
            with open(path_or_buf, "w") as fh:
                fh.write("series,")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", cut_short)
    with pytest.raises(OSError):
        EvaluationResult(pd.DataFrame({"model": ["rf"], "split": ["random"], "auc": [0.9]})).save(tmp_path)
    monkeypatch.undo()

    from matplotlib.figure import Figure

    def savefig_cut_short(self, fname, *args, **kwargs):
        with open(fname, "w") as fh:
            fh.write("\x89PNG")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", savefig_cut_short)
    table = pd.DataFrame({"window": ["0"], "auc_mean": [0.8], "auc_ci_low": [0.7], "auc_ci_high": [0.9]})
    with pytest.raises(OSError):
        window_png(table, tmp_path / "window.png")
    for name in ("records.csv", "summary.csv", "window.png"):
        assert (tmp_path / name).read_text() == "the last good one"


def test_two_groups_of_alike_ids_are_shortened_without_end():
    from triage.cli.tables import shorten_ids

    x, y = "x" * 30, "y" * 30
    ids = [f"p{x}1{y}q", f"p{x}2{y}q", f"r{x}3{y}s", f"r{x}4{y}s"]
    shown = shorten_ids(ids, 20)
    assert len(set(shown.values())) == 4 and all(len(v) <= 20 for v in shown.values())
    # Groups whose middles read alike keep the plain cut, which tells the groups apart.
    ids = [f"p{x}1{y}q", f"p{x}2{y}q", f"r{x}1{y}s", f"r{x}2{y}s"]
    shown = shorten_ids(ids, 20)
    assert shown[ids[0]] != shown[ids[2]] and all(len(v) <= 20 for v in shown.values())


def test_score_shows_asv_ids_of_two_suites_on_one_branch(tmp_path):
    ids = [f"proj/model_benchmarks.model_save_{w}.benchmark.Save{w.title()}.time_save_{w}/ubuntu-latest/conda-py3.10@main"
           for w in ("existing", "new")]
    ids += [f"proj/query_benchmarks.query_{w}.benchmark.Query{w.title()}.time_query_{w}/ubuntu-latest/conda-py3.12@main"
            for w in ("get_or_create", "in_bulk")]
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(
        f"{s},c{i},{1.0 + 0.5 * (i >= 30) + 0.01 * (i % 3)}\n" for s in ids for i in range(60)))
    cands = tmp_path / "c.csv"
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])[0] == 0
    code, out = invoke(["score", "--data", data, "--candidates", cands, "--out", tmp_path / "s.csv"])
    assert code == 0, out
    assert (tmp_path / "s.csv").exists()


def test_the_current_decisions_of_one_series_are_read_alone(tmp_path):
    # A series page read every decision of the store (0.4 s per page at 50,000 decisions).
    from triage.workspace.store import LabelsStore

    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record("a", "c1", "true", who="ann")
    store.record("b", "c1", "false", who="ann")
    store.record("a", "c2", "false", who="ann")
    store.record("a", "c1", "false", who="bob", seen=None)  # decided again: the latest wins
    store.undo("a", "c2", who="ann")
    assert store.current("a") == {k: d for k, d in store.current().items() if k[0] == "a"}
    assert [(k, d.label, d.who) for k, d in store.current("a").items()] == [(("a", "c1"), "false_positive", "bob")]
    assert store.current("nobody") == {}


def test_steady_shows_at_most_forty_series_and_counts_the_rest(tmp_path):
    # 2,000 benchmarks wrote a 2,007-line table.
    import json

    rng = np.random.default_rng(0)
    path = tmp_path / "c1.json"
    path.write_text(json.dumps({"context": {}, "benchmarks": [
        {"name": f"BM_{i}", "run_type": "iteration", "repetition_index": r, "real_time": float(v), "time_unit": "ns"}
        for i in range(45) for r, v in enumerate(100 + rng.standard_normal(3))]}))
    code, out = invoke(["steady", path, "--trim-warmup", "none", "--out", tmp_path / "long.csv"])
    assert code == 0, out
    assert "BM_39" in out and "BM_40" not in out
    assert "... and 5 more series" in flat(out)


# SIGHUP (a closed terminal) since the thirty-second session: it ended the process at once too.
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_stop_by_signal_cleans_up_as_ctrl_c_does(tmp_path, sig, code):
    # SIGTERM (systemd's stop, `kill`) ended the process at once: no `finally` ran, and the copy of
    # standard input stayed in $TMPDIR (40 MB per stop for the real histories).
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from triage.cli.app import main; main()", "summary", "--data", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
        preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGHUP)],
    )
    proc.stdin.write(b"series_id,commit,value\n" + b"".join(b"s,c%d,1.0\n" for i in range(5000)))
    proc.stdin.flush()
    for _ in range(200):  # the copy of standard input is being written: the stream is still open
        if any(tmp.iterdir()):
            break
        time.sleep(0.05)
    assert any(tmp.iterdir()), "no copy of standard input appeared"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert list(tmp.iterdir()) == []
    assert b"Traceback" not in err


def test_a_hangup_is_left_alone_under_nohup(tmp_path):
    """nohup ignores SIGHUP so that a command outlives its terminal: the handler is not put in its place."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from triage.cli.app import main; main()", "summary", "--data", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    proc.stdin.write(b"series_id,commit,value\n" + b"".join(b"s,c%d,1.0\n" for i in range(500)))
    proc.stdin.flush()

    def caught(status: str, sig: int) -> bool:  # the process's mask of caught signals (/proc)
        mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:"))
        return bool(mask >> (sig - 1) & 1)

    status = Path(f"/proc/{proc.pid}/status")
    for _ in range(1200):  # main() has set its handlers once SIGTERM is caught (a hang guard of 60 s)
        if caught(status.read_text(), signal.SIGTERM):
            break
        time.sleep(0.05)
    text = status.read_text()
    assert caught(text, signal.SIGTERM) and not caught(text, signal.SIGHUP), text
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=60)  # closes standard input: the summary comes out
    assert proc.returncode == 0, err
    assert b"Dataset <stdin>" in out


def test_a_replaced_output_keeps_its_mode(tmp_path):
    # A `chmod 600` output came back 644 (the umask's mode) when a command wrote it again.
    data = step_history(tmp_path / "h.csv")
    out = tmp_path / "c.csv"
    out.write_text("old")
    out.chmod(0o600)
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", out])[0] == 0
    assert out.stat().st_mode & 0o777 == 0o600 and out.read_text() != "old"


def _long_id_history(path):
    sid = "proj/" + "very_long_benchmark_name." * 6 + "time_it"
    path.write_text("series_id,commit,value\n" + "".join(
        f"{sid},c{i},{1.0 + 0.5 * (i >= 20) + 0.01 * (i % 3)}\n" for i in range(40)))
    (path.parent / "c.csv").write_text(f"series_id,commit\n{sid},c0\n{sid},c20\n")
    return path, path.parent / "c.csv"


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "latin-1"}, {"PYTHONWARNINGS": "error"}],
                         ids=["latin-1", "warnings-error"])
def test_score_runs_under_a_narrow_encoding_and_warnings_as_errors(tmp_path, env):
    # latin-1: the table's "…" ended the command before it wrote anything (UnicodeEncodeError);
    # PYTHONWARNINGS=error: the alert at the first commit (NotScorable, a UserWarning) did.
    data, cands = _long_id_history(tmp_path / "h.csv")
    out = tmp_path / "s.csv"
    proc = subprocess.run(
        [sys.executable, "-c", "from triage.cli.app import main; main()", "score", "--data", str(data),
         "--candidates", str(cands), "--out", str(out)],
        capture_output=True, env={**os.environ, "COLUMNS": "80", **env}, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode("latin-1")
    assert out.exists()


def test_convert_refuses_a_json_lines_name_and_detect_names_standard_output(tmp_path):
    data = step_history(tmp_path / "h.csv")
    code, out = invoke(["convert", "--data", data, "--out", tmp_path / "x.jsonl"])
    assert code == 2 and "x.jsonl" in flat(out) and not (tmp_path / "x.jsonl").exists()
    code, out = invoke(["detect", "--data", data, "--out", "-"])
    assert code == 0 and "-> standard output" in out, out


def test_ids_read_as_one_or_printing_alike_are_warned_about(tmp_path):
    import unicodedata

    from triage.loaders import load

    spaced = tmp_path / "spaced.csv"
    spaced.write_text('series_id,commit,value\na,c1,1\n"a ",c1,3\n')
    with pytest.warns(UserWarning, match="'a' and 'a ' differ only by surrounding spaces"):
        assert len(load(spaced)) == 1
    forms = tmp_path / "forms.csv"
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    forms.write_text(f"series_id,commit,value\n{nfc},c1,1\n{nfd},c1,2\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="two Unicode forms"):
        assert len(load(forms)) == 2


def test_sample_names_the_series_of_a_file_one_line_each(tmp_path):
    # An id holding a line break broke the one-line "choose one with --series" error.
    path = tmp_path / "partial.csv"
    path.write_text('series_id,commit,value\n"line\nbreak",c1,1.0\n"line\nbreak",c2,\nb,c1,1.0\nb,c2,\n')
    code, out = invoke(["sample", "--data", path, "--budget", "1", "--out", tmp_path / "e.csv"])
    assert code == 2 and "choose one with --series ('line\\nbreak', 'b')" in out, out


def test_replay_workers_leave_ctrl_c_to_their_parent():
    # Ctrl-C on `detect --workers processes` printed a KeyboardInterrupt traceback per worker.
    from triage.online import loop

    before = signal.getsignal(signal.SIGINT)
    try:
        loop._init_worker(Path("m"), {}, {})
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
        loop._SHARED.clear()


def test_watch_csv_names_a_quoted_line_break_where_it_starts(tmp_path):
    # It stopped one line later with "1 fields, the header has 3".
    path = tmp_path / "q.csv"
    path.write_text('series_id,commit,value\ns,c1,1.0\n"a ""quoted"" id",c1,2.0\n"line\nbreak",c1,1.0\n')
    code, out = invoke(["watch", "--csv", path])
    text = flat(out)
    assert code == 2 and "line 4: a quoted cell holds a line break" in text, out  # not line 3's ""
