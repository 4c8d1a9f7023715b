"""`triage candidates` and `triage detectors` round trips."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app
from triage.cli.detectors import CANDIDATE_COLUMNS, candidates_frame
from triage.core.history import Dataset, History
from triage.detectors import make
from triage.loaders import load, write_long

runner = CliRunner()


def _dataset() -> Dataset:
    rng = np.random.default_rng(0)
    series = []
    for k, at in enumerate((40, 70, None)):
        x = 100 + rng.normal(0, 1, 120)
        if at is not None:
            x[at:] += 10
        series.append(History(f"s{k}", [f"c{k}_{i:03d}" for i in range(120)], x, None))
    return Dataset(series)


def test_candidates_round_trip(tmp_path):
    data = write_long(_dataset(), tmp_path / "history.csv")
    out = tmp_path / "cands.csv"
    result = runner.invoke(app, ["candidates", "--data", str(data), "--detector", "perfherder", "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert list(frame.columns[:5]) == list(CANDIDATE_COLUMNS)
    assert {"t", "mean_before", "mean_after", "rel_change_pct"} <= set(frame.columns)
    assert list(zip(frame.series_id, frame["index"], strict=True)) == [("s0", 40), ("s1", 70)]
    assert list(frame.commit) == ["c0_040", "c1_070"]
    assert set(frame.detector) == {"perfherder"}
    # the same as calling the detector directly on the loaded series
    loaded = load(data)
    direct = make("perfherder").detect(loaded["s0"].values)
    assert frame.score.iloc[0] == direct[0].score


def test_candidates_with_parameters_and_no_result(tmp_path):
    data = write_long(_dataset(), tmp_path / "history.csv")
    out = tmp_path / "c.csv"
    result = runner.invoke(
        app,
        ["candidates", "--data", str(data), "--detector", "edivisive", "--param", "min_magnitude=0.5", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert frame.empty and list(frame.columns) == list(CANDIDATE_COLUMNS)


def test_candidates_frame_for_an_ensemble_lists_methods():
    frame = candidates_frame(_dataset(), "ensemble", {"members": ("perfherder", "pelt", "cusum"), "min_votes": 2})
    assert list(frame["index"]) == [40, 70]
    assert all("perfherder" in m for m in frame.methods)


def test_unknown_detector_or_parameter_is_a_clear_error(tmp_path):
    data = write_long(_dataset(), tmp_path / "history.csv")
    out = tmp_path / "c.csv"
    for extra, message in (
        (["--detector", "nope"], "unknown detector 'nope'"),
        (["--detector", "pelt", "--param", "alpha=1"], "unknown parameter 'alpha'"),
        (["--detector", "pelt", "--param", "penalty=high"], "penalty"),
        (["--detector", "hybrid_welch", "--param", "test=anova"],
         "parameter test='anova' of detector 'hybrid_welch' must be one of welch, mwu, ks, cvm, levene"),
    ):
        result = runner.invoke(app, ["candidates", "--data", str(data), "--out", str(out), *extra])
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.replace("│", " ").split())
    assert not out.exists()


def test_console_entry_point_exits_non_zero_without_traceback(tmp_path):
    data = write_long(_dataset(), tmp_path / "history.csv")
    proc = subprocess.run(
        [*warm_triage(), "candidates", "--data", str(data),
         "--out", str(tmp_path / "c.csv"), "--detector", "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "unknown detector 'nope'" in " ".join(proc.stderr.replace("│", " ").split())
    assert "Traceback" not in proc.stderr


def test_detectors_command_lists_defaults():
    result = runner.invoke(app, ["detectors"])
    assert result.exit_code == 0
    assert "perfherder" in result.output and "t_threshold=7.0" in result.output


# --------------------------------------------------------------------------- pipes, JSON lines, models by name


def test_candidates_as_json_lines_on_stdout_then_scored_from_stdin(tmp_path):
    import json

    data = write_long(_dataset(), tmp_path / "history.csv")
    result = runner.invoke(app, ["candidates", "--data", str(data), "--detector", "perfherder", "--out", "-",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(r["series_id"], r["index"]) for r in rows] == [("s0", 40), ("s1", 70)]
    csv_result = runner.invoke(app, ["candidates", "--data", str(data), "--detector", "perfherder", "--out", "-"])
    cands = csv_result.stdout[csv_result.stdout.index("series_id,"):]
    cands = cands[: cands.index("\n2 candidates")] + "\n" if "\n2 candidates" in cands else cands
    # The bundled adaptive model by name from the environment; candidates from stdin.
    scored = runner.invoke(app, ["score", "--data", str(data), "--candidates", "-", "--out", str(tmp_path / "s.jsonl"),
                                 "--format", "json"], input=cands, env={"TRIAGE_MODEL": "default-adaptive"})
    assert scored.exit_code == 0, scored.output
    lines = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [(r["series_id"], r["index"]) for r in lines] == [("s0", 40), ("s1", 70)]
    assert all(0.0 <= r["p_true"] <= 1.0 for r in lines)


def test_an_unknown_model_name_lists_the_bundled_ones(tmp_path):
    data = write_long(_dataset(), tmp_path / "history.csv")
    result = runner.invoke(app, ["label", "--data", str(data), "--model", "nope"])
    assert result.exit_code != 0
    assert "no bundled model of this name (bundled: default-adaptive" in str(result.exception)


def test_watch_writes_the_field_names_it_reads():
    import json

    lines = "".join(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 100.0 + (i % 3)}) + "\n" for i in range(3))
    lines += json.dumps({"series": "s", "commit": "c3", "value": 101.0}) + "\n"  # the older name is read too
    # the window-0 model decides every commit at once (the default, K = 4, would still be waiting)
    result = runner.invoke(app, ["watch", "--model", "default-w0"], input=lines)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert out and all(r["series_id"] == "s" and "series" not in r for r in out)
