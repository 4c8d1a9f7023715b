"""The data commands through the real console entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from triage.cli.app import app

runner = CliRunner()


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from triage.cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "summary", "plot", "demo"):
        assert command in result.output


def test_synth_then_summary_and_plot(tmp_path):
    result = runner.invoke(app, ["synth", "--preset", "small", "--out", str(tmp_path / "d"), "--format", "csv"])
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
    proc = triage("plot", "--data", str(shared_data / "mongodb_demo.csv"), "--series", "nope", "--out", str(tmp_path / "x.png"))
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
    for step in ("batch labelling", "perfherder + triage", "online loop (window 0)", "report:"):
        assert step in proc.stdout, step
