"""The data commands through the real console entry point."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest
from helpers_cli import run_triage as triage
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app
from triage.loaders import load

runner = CliRunner()



def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "summary", "plot", "demo"):
        assert command in result.output


def test_synth_then_summary_and_plot(tmp_path):
    result = runner.invoke(
        app, ["synth", "--preset", "small", "--out", str(tmp_path / "d"), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "d" / "history.csv").exists() and (tmp_path / "d" / "dataset.json").exists()
    result = runner.invoke(app, ["summary", "--data", str(tmp_path / "d")])
    assert result.exit_code == 0 and "true_positive" in result.output
    png = tmp_path / "s.png"
    result = runner.invoke(app, ["plot", "--data", str(tmp_path / "d"), "--out", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input_exits_non_zero_with_located_message(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("series_id,commit,value\ns,a,1\ns,b,zzz\n")
    proc = triage("summary", "--data", str(bad))
    assert proc.returncode == 2
    assert "bad.csv, row 3: value 'zzz' is not a number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_series_for_plot(tmp_path, shared_data):
    proc = triage(
        "plot",
        "--data",
        str(shared_data / "mongodb_demo.csv"),
        "--series",
        "nope",
        "--out",
        str(tmp_path / "x.png"),
    )
    assert proc.returncode == 2 and "unknown series 'nope'" in proc.stderr


@pytest.mark.slow
def test_demo_runs_every_job_end_to_end(tmp_path):
    proc = triage("demo", "--out", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stderr
    demo = tmp_path / "demo"
    assert (demo / "series.png").read_bytes()[:4] == b"\x89PNG"
    assert (demo / "report" / "index.html").is_file()
    for name in ("labelled.csv", "candidates.csv", "scored.csv"):
        assert len((demo / name).read_text().splitlines()) > 1, name
    for step in (
        "batch labelling",
        "perfherder + triage",
        "online loop (K = 4)",
        "report:",
        "default-scoring",
        "0.75 (fixed)",  # the policy in words, not its spelling "0.75 0.75"
        "real-data figures",  # the manifests' figures are on each model's own data
    ):
        assert step in proc.stdout, step
    # online-w4's row: the loop's threshold (0.98; its fit's 0.68 was shown) and every row it trained
    # on, as its model card counts them (64,739; its fit part's 58,259 was shown).
    row = " ".join(line for line in proc.stdout.splitlines() if "online-w4" in line or "loop's" in line)
    assert "64,739" in row and "0.98 (the" in row and "0.68" not in row, row
    # Perfherder's fresh candidates are scored as `triage score` scores them: with the scoring model.
    from triage.candidate_files import read_candidates
    from triage.cli.demo import unlabelled
    from triage.inference import load_classifier
    from triage.model_lookup import resolve_model
    from triage.scoring import score_candidates

    again = score_candidates(
        unlabelled(load(demo / "data" / "history.parquet")),
        read_candidates(demo / "candidates.csv"),
        load_classifier(resolve_model(None, "scoring")),
    )
    scored = pd.read_csv(demo / "scored.csv")
    # equal_nan: an alert right after a confirmed change has no P(true) in both (not scorable)
    assert np.allclose(scored["p_true"].to_numpy(), again["p_true"].to_numpy(), equal_nan=True)
    assert (scored["classification"] == again["classification"]).all()


# --------------------------------------------------------------------------- version, errors, formats, pipes


def test_version_and_completion_are_offered():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("triage (changepoint-triage) ")
    assert "--install-completion" in runner.invoke(app, ["--help"]).output


def test_file_names_with_brackets_are_printed_literally(tmp_path):
    import io

    from rich.console import Console

    from triage.cli.tables import error_line
    from triage.core.errors import InputError

    sink = io.StringIO()
    Console(file=sink, width=200).print(
        error_line(InputError("runs[bold].csv", 3, "bad [red]value"))
    )
    assert sink.getvalue() == "error: runs[bold].csv, row 3: bad [red]value\n"
    # Through the real entry point: `[/]` used to end in a markup traceback.
    proc = triage("summary", "--data", str(tmp_path / "x[/]y.csv"))
    assert proc.returncode == 2
    assert f"error: {tmp_path / 'x[/]y.csv'}: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_summary_as_json_from_compressed_stdin(tmp_path):
    import gzip
    import json

    raw = gzip.compress(b"series_id,commit,value,label\ns,a,1,\ns,b,2,3\ns,a,5,\nt,a,1,\n")
    proc = subprocess.run(
        [
            *warm_triage(),
            "summary",
            "--data",
            "-",
            "--format",
            "json",
        ],
        input=raw,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    # a,b,a: the re-run of a joins a; Perfherder status 3 (invalid) is a false positive
    assert summary["series"] == 2 and summary["commits"] == 3 and summary["false_positive"] == 1


def test_convert_perfherder_data_and_alerts_to_training_labels(tmp_path):
    import json

    data = tmp_path / "data.json"
    data.write_text(
        json.dumps(
            {
                "sig": [
                    {"revision": f"r{i}", "push_timestamp": 1_700_000_000 + i, "value": v}
                    for i, v in enumerate([5.0, 5.1, 7.0, 7.1])
                ]
            }
        )
    )
    alerts = tmp_path / "alerts.json"
    alerts.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "revision": "r2",
                        "alerts": [
                            {
                                "status": 4,
                                "series_signature": {
                                    "signature_hash": "sig",
                                    "lower_is_better": True,
                                },
                            }
                        ],
                    }
                ]
            }
        )
    )
    out = tmp_path / "labelled.csv"
    result = runner.invoke(
        app, ["convert", "--data", str(data), "--alerts", str(alerts), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    # The alert's lower_is_better travels with the series into the long layout.
    assert lines[0] == "series_id,commit,timestamp,value,label,higher_is_better"
    assert lines[3].startswith("sig,r2,") and lines[3].endswith(",true_positive,false")


def test_plain_progress_prints_each_tenth_once(monkeypatch):
    import io

    from rich.console import Console

    from triage.cli import progress as P

    monkeypatch.setattr(P, "QUIET_SECONDS", 0.0)
    sink = io.StringIO()
    with P.JobProgress(
        "detect", 95, "series", console=Console(file=sink, force_terminal=False)
    ) as job:
        for _ in range(95):
            job.advance(1)
    lines = sink.getvalue().splitlines()
    assert [line.split(":")[1].split("%")[0].strip() for line in lines] == [
        str(10 * k) for k in range(1, 11)
    ]
    assert lines[-1].startswith("detect: 100% (95/95 series")


def test_chunks_cover_every_item_once():
    from triage.cli.progress import chunks

    for n in (0, 1, 19, 20, 1000):
        parts = chunks(n, 20, minimum=3, maximum=40)
        assert [i for s in parts for i in range(n)[s]] == list(range(n))


def test_commit_order_file_places_retriggers_and_late_measurements(tmp_path):
    """A real-shaped export (as in ../shared/data/real, rows in the order they were measured, each
    carrying its commit's push time): commit c2 is retriggered after c4 and c3 is first measured only
    after c4 (a backfill). ``--commit-order`` puts both in history order; without it c3 keeps the place
    of its first appearance, where its push time goes backwards."""
    import json

    sid = "rhai/bench_engine_new/gha-ubuntu-latest"
    rows = [
        ("c1", "2020-04-19T10:36:33Z", 96095.0),
        ("c2", "2020-04-20T03:12:58Z", 100016.0),
        ("c4", "2020-04-21T16:28:08Z", 84804.0),
        ("c2", "2020-04-20T03:12:58Z", 100020.0),
        ("c3", "2020-04-21T09:30:00Z", 84810.0),
        ("c5", "2020-04-23T11:00:00Z", 84790.0),
    ]
    data = tmp_path / "history.csv"
    data.write_text(
        "series_id,commit,timestamp,value\n" + "".join(f"{sid},{c},{t},{v}\n" for c, t, v in rows)
    )
    order = tmp_path / "order.txt"
    order.write_text("# git rev-list --reverse main\nc1\nc2\n\nc3\nc4\nc5\n")

    def converted(*extra: str) -> list[list[str]]:
        out = tmp_path / "out.csv"
        result = runner.invoke(app, ["convert", "--data", str(data), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        return [line.split(",") for line in out.read_text().splitlines()[1:]]

    result = runner.invoke(app, ["summary", "--data", str(data)])
    assert result.exit_code != 0 and "go backwards" in str(result.exception)
    ordered = converted("--commit-order", str(order))
    assert [r[1] for r in ordered] == ["c1", "c2", "c3", "c4", "c5"]
    assert float(ordered[1][3]) == pytest.approx(
        (100016.0 + 100020.0) / 2
    )  # the retrigger joined c2

    result = runner.invoke(
        app, ["summary", "--data", str(data), "--commit-order", str(order), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["commits"] == 5

    cands = tmp_path / "cands.csv"
    result = runner.invoke(
        app,
        [
            "candidates",
            "--data",
            str(data),
            "--detector",
            "perfherder",
            "--commit-order",
            str(order),
            "--out",
            str(cands),
        ],
    )
    assert result.exit_code == 0, result.output

    # a commit missing from the order, and a bad order file, stop with the file and line
    short = tmp_path / "short.txt"
    short.write_text("c1\nc2\nc4\nc5\n")
    result = triage("summary", "--data", str(data), "--commit-order", str(short))
    assert result.returncode == 2 and "'c3' is not in the given commit order" in result.stderr
    twice = tmp_path / "twice.txt"
    twice.write_text("c1\nc2\nc1\n")
    result = triage("summary", "--data", str(data), "--commit-order", str(twice))
    assert (
        result.returncode == 2 and "row 3" in result.stderr and "listed twice" in result.stderr
    ), result.stderr
