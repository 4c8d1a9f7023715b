"""Defects found by the thirty-first session's walkthroughs, fixed there.

1. ``triage score`` at 180 columns cut two otel-java series ids to
   "o…01Thread/otel-bench-runner" and "o…t:1000})/otel-bench-runner" (the
   series column stopped at 28 characters) while the reasons' column had
   about 100 to spare. A wide terminal now gives the ids what the reasons
   leave beyond 60 columns.
2. ``triage report``'s step column gave a false alert "change +14.6%" beside
   a reason saying the median moved 0.1 %: it took means, and one spike in
   the window carried them. It now takes medians, as the reasons do.
3. `synth --out` deleted a history the user had put in a folder synth wrote
   before, and replaced an edited one: it now checks the digest dataset.json
   records.
4. `report --out` over an earlier report deleted files of the user's kept in
   it; it now refuses, naming them, as `train --out` does.
5. A full disk: the error named no file for `candidates`, `convert`, `report`
   and `synth` (pandas, gzip, pyarrow and matplotlib name none), and `synth`
   left an empty folder. The output is named; the folder removed.
6. A feature matrix's bad label after a blank line was named a line too early.
7. `train --target-recall R --threshold T` took R without a word (`score`
   refuses the pair); it is refused.
8. `report` refused JSON-lines decisions opening with a blank line or a
   byte-order mark; one JSON-lines reader (`candidate_files.json_lines_table`).
9. The workspace's reason read over a confirmed change after the alert ("came
   straight back (a spike)" for a level that held until it); it stops there.
10. dask's "Failed to reconnect to scheduler" log line came before our own
   error when a scheduler died mid-run; it is filtered while a remote scheduler is in use.
11. `labels export --data` (and `train --labels`) lost each decided series'
   direction (higher_is_better); the overlay keeps every field but the labels.
12. A labels store copied with `cp` while `serve` ran lost its latest
   decisions (in the -wal file only); each decision is checkpointed into the file.
13. A queue built from another candidates file hid the decided alerts it did not
   list; they are listed as "decided earlier (not a candidate here)".
14. A Perfherder export's t_value was ignored, so its alerts got other P(true)
   than the same candidates as a CSV; it stands for the score now.
15. A Perfherder alert in two summaries was counted twice in `score`'s summary;
   a line gives the distinct alerts.
16. `--layout perfherder-csv` on a JSON export named columns the file has; it
   names the layout to give.
17. `models list --labels` squeezed its headers at 80 columns; the figures keep theirs.
18. Plurals: "1 candidates from perfherder", "2 seriess"; one helper.
19. MLflow's INFO lines came between `train`'s own; its logger is set to warnings.
20. `report --decisions` leaked Python's codec message for a file not in UTF-8.
21. `culprit` between adjacent commits printed a table with no row.
22. A model refused after `$TRIAGE_MODEL` chose it did not name the variable.
23. synth stopped before its dataset.json left its folder refused; the old digest
   is cleared before the history is replaced.
(The others: ``tests/test_sweep_cli_broken_pipe.py`` for an ``--out`` lost to
a reader that went away, ``tests/test_fixes_s21_shared.py`` for a held-back
commit's probability.)
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console

from triage.cli.tables import SERIES_WIDTH, decision_table

OTEL = "otel-java/io.opentelemetry.sdk.trace.SpanBenchmark.simpleSpanStartAddEventEnd_{}/otel-bench-runner"


def _render(table, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "series_id": [OTEL.format("01Thread"), OTEL.format("05Threads"), "rhai/bench_parse_full/gha-ubuntu-latest"],
        "commit": ["3f2a9c1d0e", "3f2a9c1d0e", "77ab01ce99"],
        "index": [1071, 1071, 526],
        "p_true": [0.97, 0.91, 0.12],
        "classification": ["true_positive", "true_positive", "false_positive"],
        "explanation": ["after median 15.3% off pre median (+0.86 toward true); more"] * 3,
    })


def test_a_wide_terminal_gives_the_series_ids_what_the_reasons_leave():
    text = _render(decision_table(_frame(), "3 candidates", 20, extra=("index",), wide=True, width=180), 180)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 180
    assert "rhai/bench_parse_full/gha-ubuntu-latest" in text  # whole
    # the otel ids (99 characters) keep 80 beside the reason: their head and where they differ
    assert "otel-java/io.opentelemetry.sdk.trace.Spa" in text and "AddEventEnd_05Threads/otel-bench-runner" in text
    assert "after median 15.3% off pre median (+0.86 toward true)" in text  # the reason on one line


def test_an_80_column_terminal_cuts_the_ids_and_keeps_the_table_inside():
    text = _render(decision_table(_frame(), "3 candidates", 20, extra=("index",), wide=False, width=80), 80)
    lines = [line for line in text.splitlines() if line.startswith("│")]
    assert lines and max(len(line) for line in text.splitlines()) <= 80
    cells = [line.split("│")[1].strip() for line in lines]
    assert "…" in cells[0] and SERIES_WIDTH <= len(cells[0]) < len(OTEL)
    assert cells[0] != cells[1] and "0.970" in lines[0] and "0.120" in lines[2]


def test_the_report_step_of_a_spike_is_the_medians_not_the_spikes():
    import numpy as np

    from triage.core.history import History
    from triage.report import step_text

    values = np.r_[np.full(10, 100.0), [100.1, 190.0, 100.2, 99.9, 100.1, 100.1, 100.2, 99.8, 100.1, 100.1]]
    h = History("t", [str(i) for i in range(20)], values, None, higher_is_better=False)
    assert step_text(h, 10) == "regression +0.1%"  # the means said +9.1 %
    step = History("t", [str(i) for i in range(20)], np.r_[np.full(10, 100.0), np.full(10, 120.0)], None,
                   higher_is_better=False)
    assert step_text(step, 10) == "regression +20.0%"


def test_synth_refuses_a_history_it_did_not_write_in_its_own_folder(tmp_path):
    """3. A history.csv copied into a folder `synth` had written (parquet) was deleted by the next
    `synth --out` of that folder, and an edited history.csv of synth's overwritten."""
    from helpers_cli import flat, invoke

    out = tmp_path / "sy"
    assert invoke(["synth", "--out", out])[0] == 0
    mine = "series_id,commit,value\ns,c1,1.0\n"
    (out / "history.csv").write_text(mine)
    code, text = invoke(["synth", "--out", out, "--seed", "3"])
    assert code == 2 and "is not the history `triage synth` wrote there" in flat(text), text
    assert (out / "history.csv").read_text() == mine  # kept
    (out / "history.csv").unlink()
    assert invoke(["synth", "--out", out, "--seed", "3", "--format", "csv"])[0] == 0  # synth's own: replaced
    assert not (out / "history.parquet").exists()
    with open(out / "history.csv", "a") as fh:  # edited since
        fh.write("s,c9,1.0\n")
    code, text = invoke(["synth", "--out", out])
    assert code == 2 and "changed since" in flat(text), text


def test_report_refuses_to_replace_a_report_folder_holding_files_of_the_users(tmp_path):
    """4. `report --out rep` over an earlier report deleted the user's notes and a copy of the decisions
    kept in rep/ (`train --out` refuses the same); a report folder holding only the report is replaced."""
    from helpers_cli import flat, invoke

    data = tmp_path / "small"
    assert invoke(["synth", "--out", data])[0] == 0
    cands, scored, rep = tmp_path / "c.csv", tmp_path / "s.csv", tmp_path / "rep"
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])[0] == 0
    assert invoke(["score", "--data", data, "--candidates", cands, "--out", scored])[0] == 0
    args = ["report", "--data", data, "--decisions", scored, "--candidates", cands, "--out", rep, "--max-plots", "2"]
    assert invoke(args)[0] == 0
    assert invoke(args)[0] == 0  # its own report: replaced
    (rep / "notes.txt").write_text("mine\n")
    (rep / "plots" / "keep.csv").write_text("x\n")
    code, text = invoke(args)
    assert code == 2 and "plots/keep.csv" in flat(text) and "notes.txt" in flat(text), text
    assert (rep / "notes.txt").read_text() == "mine\n" and (rep / "plots" / "keep.csv").exists()


def test_a_full_disk_names_the_output_and_leaves_no_empty_folder(tmp_path, monkeypatch):
    """5. On a full disk `candidates`, `convert`, `report` and `synth` said only "error: No space left
    on device" (pandas, gzip, pyarrow and matplotlib name no file), and `synth` left an empty folder."""
    import errno

    import pytest

    from triage import report, synthetic
    from triage.core.atomic import atomic_write

    def full(_tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        atomic_write(tmp_path / "c.csv", full)
    assert info.value.filename == str(tmp_path / "c.csv") and not list(tmp_path.iterdir())

    monkeypatch.setattr(synthetic, "atomic_write", lambda path, write: full(path))
    with pytest.raises(OSError):
        synthetic.write_synthetic(tmp_path / "syn" / "inner", "small", 0)
    assert not (tmp_path / "syn" / "inner").exists()

    data = synthetic.generate(synthetic.preset_config("small", n_series=2), seed=0)
    frame = pd.DataFrame({"series_id": [h.series_id for h in data], "index": [5, 5], "p_true": [0.9, 0.1],
                          "classification": ["true_positive", "false_positive"]})
    monkeypatch.setattr(report, "plot_series", lambda *a, **k: full(None))
    with pytest.raises(OSError) as info:
        report.build_report(data, frame, tmp_path / "rep")
    assert info.value.filename == str(tmp_path / "rep")


def test_a_bad_label_in_a_feature_matrix_names_its_file_line(tmp_path):
    """6. (architecture review) `train --matrix m.csv` named a bad label after a blank line one line too
    early: it counted records, where every other CSV reader names the file's line."""
    from helpers_cli import flat, invoke

    m = tmp_path / "m.csv"
    m.write_text("series_id,label,pre_mean\ns1,true_positive,1.0\n\ns2,false_positive,2.0\ns3,tp,3.0\n")
    code, text = invoke(["train", "--matrix", m, "--window", "0", "--out", tmp_path / "model", "--no-track"])
    assert code == 2 and "m.csv, row 5: unknown label 'tp'" in flat(text), text


@pytest.mark.parametrize("args", [["--target-recall", "0.9", "--threshold", "0.5"], ["--threshold", "nan"],
                                  ["--threshold", "recall:1.5"]])
def test_train_threshold_options_are_checked_as_score_checks_them(tmp_path, args):
    """7. (architecture review) `train` let --target-recall win over --threshold without a word where
    `score` refuses the pair; the policy's ranges are checked once, by parse_policy."""
    from helpers_cli import flat, invoke

    code, text = invoke(["train", "--preset", "small", "--out", tmp_path / "m", "--no-track", *args])
    assert code == 2 and "Invalid value for --threshold" in flat(text), text
    assert not (tmp_path / "m").exists()


def test_json_lines_decisions_after_a_blank_line_or_a_byte_order_mark_are_read(tmp_path):
    """8. (architecture review) `report` took a decisions file for JSON lines only when its first byte
    was "{": one opening with a blank line or a byte-order mark was read as a CSV and refused ("needs
    series_id ..."), while `score` read the same candidates file. One JSON-lines reader now."""
    from helpers_cli import invoke

    from triage.loaders import load
    from triage.report import read_decisions

    data = tmp_path / "small"
    assert invoke(["synth", "--out", data])[0] == 0
    cands, scored = tmp_path / "c.csv", tmp_path / "s.jsonl"
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])[0] == 0
    assert invoke(["score", "--data", data, "--candidates", cands, "--out", scored, "--format", "json"])[0] == 0
    plain = read_decisions(scored, load(data))
    for prefix in (b"\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n \n"):
        odd = tmp_path / "odd.jsonl"
        odd.write_bytes(prefix + scored.read_bytes())
        got = read_decisions(odd, load(data))
        assert got[["series_id", "commit", "index"]].equals(plain[["series_id", "commit", "index"]]), prefix


def test_the_workspace_reason_stops_at_a_confirmed_change_as_the_report_does():
    """9. (architecture review) A step to 110 with a confirmed one to 130 twelve commits later: the
    workspace said "median rose 29% ... and came straight back (a spike)" (its 30 commits after the
    alert reached into the next level), the report "+11.3%"."""
    import numpy as np

    from triage.core import labels as L
    from triage.core.history import History
    from triage.report import step_text
    from triage.workspace.alerts import reason

    rng = np.random.default_rng(0)
    values = np.r_[np.full(40, 100.0), np.full(12, 110.0), np.full(40, 130.0)] + rng.normal(0, 0.5, 92)
    lab = np.full(92, L.NONE, dtype=object)
    lab[40], lab[52] = L.NOT_TRIAGED, L.TRUE_POSITIVE
    h = History("s", [f"c{i}" for i in range(92)], values, lab, higher_is_better=False)
    why, pct, direction = reason(h, 40)
    assert "rose 10" in why and "stayed up until the next confirmed change (12 commits)" in why, why
    assert direction == "regression" and abs(pct - 10.0) < 1.0
    assert step_text(h, 40).startswith("regression +10.")


def test_dasks_reconnect_note_is_left_to_our_own_error(caplog):
    """10. A scheduler killed mid-run: dask's client logged "Failed to reconnect to scheduler after 10.00
    seconds, closing client" to stderr before the command's own line saying the same."""
    import logging

    from triage.distributed import _without_reconnect_note

    logger = logging.getLogger("distributed.client")
    with caplog.at_level(logging.ERROR, logger="distributed.client"):
        with _without_reconnect_note():
            logger.error("Failed to reconnect to scheduler after 10.00 seconds, closing client")
            logger.error("another error")
        logger.error("Failed to reconnect to scheduler after 1.00 seconds, closing client")  # outside: kept
    assert [r.getMessage() for r in caplog.records] == [
        "another error", "Failed to reconnect to scheduler after 1.00 seconds, closing client"]


def test_labels_export_with_data_keeps_each_series_direction(tmp_path):
    """11. (sheriff walkthrough) `labels export --data` wrote every decided series without its direction
    (16 of 23 "direction unknown"): the overlay rebuilt each History field by field and lost
    higher_is_better, so the report then said "change -85.1%" for an improvement."""
    import numpy as np

    from triage.core import labels as L
    from triage.core.history import Dataset, History
    from triage.workspace.store import LabelsStore, overlay

    h = History("ops", [f"c{i}" for i in range(20)], np.r_[np.full(10, 100.0), np.full(10, 80.0)],
                np.full(20, L.NONE, dtype=object), higher_is_better=True)
    store = LabelsStore(tmp_path / "l.sqlite")
    store.record("ops", "c10", "true", who="ann")
    out, n = overlay(Dataset([h], source="<t>"), store)
    assert n == 1 and out["ops"].higher_is_better is True and out["ops"].labels[10] == L.TRUE_POSITIVE
    assert out["ops"].index_of("c10") == 10


def test_a_labels_store_copied_while_open_holds_every_decision(tmp_path):
    """12. (sheriff walkthrough) `cp labels.sqlite copy.sqlite` while `serve` ran kept 42 of 44 decisions:
    the last two were in the -wal file only, and `train --labels copy.sqlite` used an older decision."""
    import shutil

    from triage.workspace.store import LabelsStore

    store = LabelsStore(tmp_path / "l.sqlite")
    for k in range(5):
        store.record("s", f"c{k}", "true", who="ann")
    store.record("s", "c4", "false", who="bob")
    shutil.copyfile(tmp_path / "l.sqlite", tmp_path / "copy.sqlite")  # the main file alone, store still open
    copy = LabelsStore(tmp_path / "copy.sqlite", create=False)
    assert len(copy) == 6 and copy.current()[("s", "c4")].label == "false_positive"
    store.close()


def test_a_decided_alert_stays_in_the_queue_built_from_another_candidates_file(tmp_path):
    """13. (sheriff walkthrough) `serve --candidates cands_binseg.csv` over a store of decisions made on
    perfherder's candidates: 9 of the 40 decided alerts were in no page, without a word, and binseg's
    neighbouring commit showed the same change untriaged."""
    import numpy as np

    from triage.core import labels as L
    from triage.core.history import Dataset, History
    from triage.workspace.alerts import DECIDED_EARLIER, build_alerts

    values = np.r_[np.full(30, 100.0), np.full(30, 120.0)] + np.random.default_rng(1).normal(0, 0.5, 60)
    h = History("s", [f"c{i:02d}" for i in range(60)], values, np.full(60, L.NONE, dtype=object),
                higher_is_better=False)
    data = Dataset([h], source="<t>")
    cands = tmp_path / "c.csv"
    cands.write_text("series_id,commit,index,detector\ns,c31,31,binseg\n")
    alerts = build_alerts(data, cands, decided=[("s", "c30"), ("s", "c31"), ("gone", "x"), ("s", "nope")])
    by_commit = {a.commit: a for a in alerts}
    assert sorted(by_commit) == ["c30", "c31"]  # a decision on data this queue lacks is no alert
    assert by_commit["c30"].detector == DECIDED_EARLIER and by_commit["c30"].p_true is None
    assert "rose 20" in by_commit["c30"].reason and by_commit["c31"].detector == "binseg"


def test_a_perfherder_export_is_scored_as_the_same_candidates_file(tmp_path):
    """14. (sheriff walkthrough) The same alerts as `triage candidates --detector perfherder` output and as a
    Perfherder alert-summary export got other P(true) (4 of 40 calls flipped): the export's own t_value
    was ignored where the CSV's score (the same t) ranks the candidates. t_value now stands for score."""
    import json

    from helpers_cli import invoke

    data, cands = tmp_path / "small", tmp_path / "c.csv"
    assert invoke(["synth", "--out", data])[0] == 0
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])[0] == 0
    found = pd.read_csv(cands, dtype={"commit": str})
    assert len(found) > 5
    export = {"results": [
        {"id": 4000 + k, "revision": rec["commit"], "alerts": [
            {"id": 90000 + k, "status": 0, "t_value": rec["score"], "series_signature": {"signature_hash": rec["series_id"]}}]}
        for k, rec in enumerate(found.to_dict("records"))]}
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps(export))
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert invoke(["score", "--data", data, "--candidates", cands, "--out", a])[0] == 0
    assert invoke(["score", "--data", data, "--candidates", alerts, "--out", b])[0] == 0
    pa, pb = pd.read_csv(a, dtype={"commit": str}), pd.read_csv(b, dtype={"revision": str})
    assert pa["p_true"].round(6).fillna(-1).tolist() == pb["p_true"].round(6).fillna(-1).tolist()
    assert pa["classification"].tolist() == pb["classification"].tolist()


def test_score_counts_an_alert_in_two_summaries_once(tmp_path):
    """15. (sheriff walkthrough) A Perfherder alert repeated in a second summary was scored and counted
    twice ("38 of 42 called true" for 40 alerts); the rows stay, and a line gives the distinct count."""
    import json

    from helpers_cli import flat, invoke

    data, cands = tmp_path / "small", tmp_path / "c.csv"
    assert invoke(["synth", "--out", data])[0] == 0
    assert invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])[0] == 0
    found = pd.read_csv(cands, dtype={"commit": str})
    summaries = [{"id": 4000 + k, "revision": r["commit"], "alerts": [
        {"id": 90000 + k, "status": 0, "t_value": r["score"], "series_signature": {"signature_hash": r["series_id"]}}]}
        for k, r in enumerate(found.to_dict("records"))]
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps({"results": [*summaries, dict(summaries[-1], id=5999)]}))
    out = tmp_path / "s.csv"
    code, text = invoke(["score", "--data", data, "--candidates", alerts, "--out", out, "--show", "0"])
    assert code == 0, text
    scored = pd.read_csv(out)
    assert len(scored) == len(found) + 1
    n_true = int((scored["classification"].iloc[:-1] == "true_positive").sum())
    assert "1 row repeats an alert of an earlier row" in flat(text)
    assert f"{len(found):,} distinct alerts, {n_true:,} called true" in flat(text)


def test_a_csv_layout_named_for_a_json_file_names_the_layout(tmp_path):
    """16. (sheriff walkthrough) `score --layout perfherder-csv` on the alert-summary JSON said "a Perfherder
    export needs a signature column (...) and 'revision'", columns the file has; it now names the layout."""
    from helpers_cli import flat, invoke

    data = tmp_path / "small"
    assert invoke(["synth", "--out", data])[0] == 0
    alerts = tmp_path / "alerts.json"
    alerts.write_text('{"results": [{"revision": "r1", "alerts": [{"series_signature": {"signature_hash": "s"}}]}]}')
    code, text = invoke(["score", "--data", data, "--candidates", alerts, "--layout", "perfherder-csv"])
    assert code == 2 and "is JSON, not a CSV as --layout perfherder-csv reads: give --layout perfherder-json" in flat(text)


def test_models_list_labels_keeps_its_headers_at_80_columns(tmp_path):
    """17. (sheriff walkthrough) `models list --labels` at 80 columns squeezed "precision" to "n" under a
    long model URI; the figures' headers keep their width, the names fold."""
    import io

    from rich.console import Console

    from triage.cli.training import _sheriff_agreement_table
    from triage.workspace.store import LabelsStore

    store = LabelsStore(tmp_path / "l.sqlite")
    model = "models:/triage-rf-scoring-with-a-rather-long-name@champion"
    for k in range(4):
        store.record("s", f"c{k}", "true" if k % 2 else "false", who="ann", p_true=0.7, model_call="true_positive",
                     model=model)
    store.close()
    rows = [{"name": "triage-rf-scoring-with-a-rather-long-name", "version": "12", "aliases": ["champion"]}]
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(_sheriff_agreement_table(tmp_path / "l.sqlite", rows))
    text = console.file.getvalue()
    assert all(h in text for h in ("decisions", "precision", "recall", "agreement", "registered")), text
    assert "0.500" in text  # precision of 4 true calls, 2 of them true


def test_summary_lines_say_one_candidate_and_one_series(tmp_path):
    """18. (CLI review) "1 candidates from perfherder on 1 series", "1 series, 40 commits" from convert's
    neighbour, "2 seriess" in steady: one plural helper (`triage.cli.tables.count`)."""
    from helpers_cli import flat, invoke, step_history

    from triage.cli.tables import count

    assert (count(1, "candidate"), count(2, "candidate"), count(2, "series", "series")) == (
        "1 candidate", "2 candidates", "2 series")
    data = step_history(tmp_path / "h.csv")
    code, text = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", tmp_path / "c.csv"])
    assert code == 0 and "1 candidate from perfherder on 1 series ->" in flat(text), text
    code, text = invoke(["convert", "--data", data, "--out", tmp_path / "h2.csv"])
    assert code == 0 and "1 series, 40 commits ->" in flat(text), text


def test_mlflow_info_lines_stay_out_of_a_commands_output(tmp_path, monkeypatch):
    """19. (CLI review) `train` with a new store printed MLflow's "INFO mlflow.store.db.utils: Creating
    initial MLflow database tables..." between its own lines; MLflow's warnings still show, and
    MLFLOW_LOGGING_LEVEL, when given, decides."""
    import logging

    from triage.training import tracking

    monkeypatch.delenv("MLFLOW_LOGGING_LEVEL", raising=False)
    logger = logging.getLogger("mlflow")
    monkeypatch.setattr(logger, "level", logging.INFO)
    tracking._client(f"sqlite:///{tmp_path / 'ml.db'}")
    assert logger.level == logging.WARNING
    monkeypatch.setenv("MLFLOW_LOGGING_LEVEL", "DEBUG")
    logger.setLevel(logging.DEBUG)
    tracking._client(f"sqlite:///{tmp_path / 'ml.db'}")
    assert logger.level == logging.DEBUG


def test_a_decisions_file_not_in_utf8_is_named_as_the_other_inputs_name_it(tmp_path):
    """20. (CLI review) `report --decisions` of a Latin-1 file leaked Python's "'utf-8' codec can't decode
    byte ..." where every other input says what the file is and how to convert it."""
    from helpers_cli import flat, invoke

    data = tmp_path / "small"
    assert invoke(["synth", "--out", data])[0] == 0
    latin = tmp_path / "d.csv"
    latin.write_bytes("series_id,commit,p_true,classification\nsérie,c1,0.5,true_positive\n".encode("latin-1"))
    code, text = invoke(["report", "--data", data, "--decisions", latin, "--out", tmp_path / "r"])
    assert code == 2 and "d.csv, row 2: not a UTF-8 text file" in flat(text) and "codec" not in text, text


def test_culprit_between_adjacent_commits_prints_no_empty_table(tmp_path):
    """21. (CLI review) `culprit --before c029 --after c030` printed a table of headers and no row."""
    from helpers_cli import flat, invoke

    data = tmp_path / "full.csv"
    data.write_text("series_id,commit,value\n" + "".join(
        f"a,c{i:03d},{100 + (5 if i >= 30 else 0) + 0.1 * (i % 3)}\n" for i in range(60)))
    code, text = invoke(["culprit", "--data", data, "--before", "c029", "--after", "c030"], stdin="")
    assert code == 0, text
    assert "nothing to measure between them" in flat(text) and "┏" not in text
    assert "culprit: c030 (position 30)" in flat(text)


def test_a_refused_model_chosen_by_the_environment_says_so(monkeypatch):
    """22. (CLI review) `TRIAGE_MODEL=online-w4 triage score ...` was refused naming the bundled path only:
    the variable that chose it (and feeds every command loading a model) was not named."""
    import sys

    from triage.cli.app import _model_from_environment
    from triage.core.errors import InputError
    from triage.model_lookup import bundled_model

    refused = InputError(bundled_model("online-w4"), None, "this model needs features ...")
    monkeypatch.setenv("TRIAGE_MODEL", "online-w4")
    monkeypatch.setattr(sys, "argv", ["triage", "score", "--data", "d", "--candidates", "c.csv"])
    assert "$TRIAGE_MODEL=online-w4" in (_model_from_environment(refused) or "")
    monkeypatch.setattr(sys, "argv", ["triage", "score", "--model", "online-w4"])
    assert _model_from_environment(refused) is None  # given on the command line
    monkeypatch.setattr(sys, "argv", ["triage", "score"])
    assert _model_from_environment(InputError("d.csv", 3, "bad value")) is None  # not a model's error
    # another model folder (a --newest-model, a report --out in a model folder): not the variable's
    assert _model_from_environment(InputError(bundled_model("default-w0"), None, "refused")) is None
    monkeypatch.setenv("TRIAGE_MODEL", "default")
    assert "$TRIAGE_MODEL=default" in (_model_from_environment(refused) or "")


def test_synth_stopped_before_its_dataset_json_leaves_its_folder_usable(tmp_path, monkeypatch):
    """23. (review of the day's diff) Stopped between the new history and its dataset.json (Ctrl-C, a full
    disk), synth left its own history beside the old digest, and every later `synth --out` was refused."""
    import pytest
    from helpers_cli import invoke

    from triage import synthetic

    out = tmp_path / "s3"
    assert invoke(["synth", "--out", out])[0] == 0
    real_write = synthetic.write_text_atomic

    def stop_at_dataset_json(text, path, **kw):
        if "history_sha256" in text and '"history_sha256": null' not in text:
            raise KeyboardInterrupt
        return real_write(text, path, **kw)

    monkeypatch.setattr(synthetic, "write_text_atomic", stop_at_dataset_json)
    with pytest.raises(KeyboardInterrupt):
        synthetic.write_synthetic(out, "small", seed=1)
    monkeypatch.setattr(synthetic, "write_text_atomic", real_write)
    assert invoke(["synth", "--out", out, "--seed", "2"])[0] == 0
    (out / "history.parquet").write_bytes(b"someone else's")  # a history synth did not write: refused still
    assert invoke(["synth", "--out", out])[0] == 2
