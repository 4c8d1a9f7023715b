"""Defects found by an alert sheriff's walkthrough on the real histories (score, label, report, serve, labels).

Each test reads a few series of ``../shared/data/real/histories.csv.gz``
(skipped without it) into its own folder, as a sheriff would extract them:

* the workspace (``triage serve --model ...``) showed an alert at a series'
  first commit (not scorable, no P(true)) with P(true) ``nan``, no model
  call, and sorted it among the scored alerts by chance (NaN compares false).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette suggests httpx2 for its test client
    from starlette.testclient import TestClient

OTEL = "otel-java/io.opentelemetry.sdk.SpanRecordBenchmark.threads4({spanSize:LARGE})/otel-bench-runner"


def _extract(frame: pd.DataFrame, folder: Path, *series: str) -> Path:
    out = folder / "history.csv"
    frame[frame["series_id"].isin(series)].to_csv(out, index=False)
    return out


def _cells(html: str) -> list[list[str]]:
    """The alert rows of a queue page as lists of cell texts."""
    rows = re.findall(r'<tr id="a-.*?</tr>', html, flags=re.S)
    return [[re.sub(r"<[^>]+>|\s+", " ", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)]
            for r in rows]


# ---------------------------------------------------------------- workspace: a not-scorable alert


def test_workspace_shows_a_first_commit_alert_as_not_scorable_and_last(real_frame, tmp_path: Path) -> None:
    from triage.cli.workspace import build_workspace
    from triage.workspace.app import create_app

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    cands = tmp_path / "cands.csv"
    # The sheriff's own detector flagged the first commit (nothing before it) and a real step.
    pd.DataFrame({"series_id": [OTEL, OTEL], "commit": [commits[0], commits[57]],
                  "detector": ["mine", "mine"], "score": [3.5, 9.0]}).to_csv(cands, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NotScorable warning names the first commit
        ws = build_workspace(data, tmp_path / "labels.sqlite", cands, "default", commit_url=None, sheriff="me",
                             token=None)
    page = TestClient(create_app(ws), base_url="http://localhost").get("/")
    assert page.status_code == 200
    rows = _cells(page.text)
    assert len(rows) == 2
    assert "nan" not in page.text
    # status, series, commit, date, change, direction, P(true), call, ...
    scored, unscored = rows
    assert scored[2] == commits[57][:12] and re.fullmatch(r"\d\.\d\d", scored[6])
    assert unscored[2] == commits[0][:12]
    assert unscored[6] == "" and unscored[7] == "not scorable"


# ---------------------------------------------------------------- workspace: compressed candidates


def test_workspace_reads_compressed_candidates_as_score_does(real_frame, tmp_path: Path) -> None:
    import gzip

    from triage.cli.workspace import build_workspace
    from triage.core.errors import InputError

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    text = f"series_id,commit,detector,score\n{OTEL},{commits[57]},edivisive,52.7\n{OTEL},{commits[129]},edivisive,6.0\n"
    cands = tmp_path / "cands.csv.gz"
    cands.write_bytes(gzip.compress(text.encode()))
    ws = build_workspace(data, tmp_path / "labels.sqlite", cands, None, commit_url=None, sheriff="me", token=None)
    assert [a.commit for a in ws.alerts] == [commits[57], commits[129]]
    # A bad row of the compressed file is named by the file given, not the decompressed copy.
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(text.replace(commits[129], "deadbeef").encode()))
    with pytest.raises(InputError) as err:
        build_workspace(data, tmp_path / "labels2.sqlite", bad, None, commit_url=None, sheriff="me", token=None)
    assert str(err.value).startswith(f"{bad}, row 3: commit 'deadbeef' is not in series")


# ---------------------------------------------------------------- labels agreement: readable at 80 columns


def test_labels_agreement_table_is_whole_on_an_80_column_terminal(real_frame, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from helpers_cli import invoke

    from triage.core import labels as L
    from triage.workspace.store import LabelsStore

    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    store = LabelsStore(tmp_path / "labels.sqlite")
    said = ["true", "false", "true", "false", "unsure", "true"]
    called = [L.TRUE_POSITIVE, L.TRUE_POSITIVE, L.FALSE_POSITIVE, L.FALSE_POSITIVE, L.TRUE_POSITIVE, L.TRUE_POSITIVE]
    model = "models:/triage-xgb-candidates@champion"
    for commit, decision, call in zip(commits[50:56], said, called, strict=True):
        store.record(OTEL, commit, decision, who="ann", p_true=0.5, model_call=call, model=model)
    store.close()
    code, text = invoke(["labels", "agreement", "--labels", tmp_path / "labels.sqlite"])  # CliRunner: 80 columns
    assert code == 0, text
    assert "…" not in text
    year, week, _ = datetime.now(UTC).isocalendar()
    row = next(line for line in text.splitlines() if f"{year}-W{week:02d}" in line)
    # 5 true/false decisions: both true 2, model only 1, sheriff only 1, both false 1
    assert row.replace("│", " ").split() == [f"{year}-W{week:02d}", "5", "2", "1", "1", "1", "0.667", "0.667", "0.600"]
    assert model in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


# ---------------------------------------------------------------- score: the threshold of a detector the model does not know


@pytest.mark.parametrize(("detectors", "why"), [
    (["mine", "mine"], "none for detector 'mine'"),
    (["perfherder", "edivisive"], "none for a file of several detectors (perfherder, edivisive)"),
    (None, "the file names no detector"),
])
def test_score_says_the_model_has_no_threshold_for_the_files_detector(real_frame, tmp_path: Path, detectors,
                                                                         why: str) -> None:
    from helpers_cli import flat, invoke

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    cands = pd.DataFrame({"series_id": [OTEL, OTEL], "commit": [commits[57], commits[129]]})
    if detectors is not None:
        cands["detector"] = detectors
    cands.to_csv(tmp_path / "cands.csv", index=False)
    code, text = invoke(["score", "--data", data, "--candidates", tmp_path / "cands.csv", "--show", "0"])
    assert code == 0, text
    line = flat(text)
    # Not the per-detector policy text ("... (per detector; else 0)"), which read as this file's cut.
    assert "else 0" not in line
    from triage.inference import load_classifier
    from triage.model_lookup import resolve_model

    general = f"{load_classifier(resolve_model(None, 'scoring')).threshold_:.3f}"  # the bundle's, whatever it is
    assert re.search(rf"called true at threshold {re.escape(general)} \(the model's general threshold; of its "
                     rf"per-detector ones, {re.escape(why)}\)", line), line


# ---------------------------------------------------------------- score: the default model's reasons in words


def test_default_scoring_reasons_are_words_not_column_names(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    rhai = [s for s in real_frame["series_id"].unique() if s.startswith("rhai/")][:2]
    data = _extract(real_frame, tmp_path, OTEL, *rhai)
    cands = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", "edivisive", "--out", cands])
    assert code == 0, text
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out, "--explain", "5"])
    assert code == 0, text
    why = pd.read_csv(out)["explanation"].dropna()
    assert len(why) > 20
    # Every reason of the bundled default-scoring model (pair_*, ctx_* and det_score_rank columns)
    # was "pair_overlap = 1 (+2.05 toward true)": a column name a sheriff cannot read.
    raw = why[why.str.contains(r"\b(?:pair|ctx|det)_[a-z_]+ =", regex=True)]
    assert raw.empty, raw.iloc[0]
    assert why.str.contains("toward").all()


# ---------------------------------------------------------------- label --format published: rows of one commit in several series


def _rhai_with_shared_alerts(real_frame: pd.DataFrame, folder: Path) -> tuple[Path, list[str], str]:
    """Two rhai benchmarks (one project: the same commits) with an untriaged alert on one commit of both."""
    rhai = [s for s in real_frame["series_id"].unique() if s.startswith("rhai/")][:2]
    frame = real_frame[real_frame["series_id"].isin(rhai)].copy()
    commits = list(dict.fromkeys(frame.loc[frame["series_id"] == rhai[0], "commit"]))
    shared = commits[400]
    frame["label"] = ""
    frame.loc[frame["commit"] == shared, "label"] = "not_triaged"
    frame.loc[(frame["series_id"] == rhai[0]) & (frame["commit"] == commits[800]), "label"] = "not_triaged"
    path = folder / "rhai.csv"
    frame.to_csv(path, index=False)
    return path, rhai, shared


def test_label_published_refuses_a_commit_alerted_in_several_series(real_frame, tmp_path: Path) -> None:
    from helpers_cli import flat, invoke

    data, rhai, shared = _rhai_with_shared_alerts(real_frame, tmp_path)
    out = tmp_path / "classified_points.csv"
    out.write_text("earlier results\n")
    code, text = invoke(["label", "--data", data, "--format", "published", "--out", out])
    assert code == 2, text
    line = flat(text)
    assert (f"Invalid value for --format: the published layout has no series column, and commit {shared!r} is an "
            "alert in 2 series here: their rows could not be told apart") in line, line
    assert out.read_text() == "earlier results\n"
    # One series: nothing to tell apart, the published layout is written.
    one = tmp_path / "one.csv"
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    frame[frame["series_id"] == rhai[0]].to_csv(one, index=False)
    code, text = invoke(["label", "--data", one, "--format", "published", "--out", out])
    assert code == 0, text
    lines = out.read_text().splitlines()
    assert lines[0].startswith('"Commit Hash";') and len(lines) == 3


# ---------------------------------------------------------------- mozilla_or_ensemble: the union with Mozilla's alerts


def test_mozilla_or_ensemble_keeps_every_perfherder_alert(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    # perfherder flags commits 208 and 211 of this empymod series: one voting event of the ensemble
    sid = "empymod-bench/transform.Fourier.time_dlf_splined('Small')/dtr-latitude/conda-py3.6-numpy1.17"
    data = _extract(real_frame, tmp_path, sid)
    found = {}
    for detector in ("perfherder", "mozilla_or_ensemble"):
        out = tmp_path / f"{detector}.csv"
        code, text = invoke(["candidates", "--data", data, "--detector", detector, "--out", out])
        assert code == 0, text
        found[detector] = set(pd.read_csv(out)["index"])
    assert {208, 211} <= found["perfherder"]
    assert found["perfherder"] <= found["mozilla_or_ensemble"], found["perfherder"] - found["mozilla_or_ensemble"]


# ---------------------------------------------------------------- labels export: an --out named for another format


@pytest.mark.parametrize("name", ["decisions.json", "decisions.parquet.gz", "decisions.yaml"])
@pytest.mark.parametrize("with_data", [False, True])
def test_labels_export_refuses_an_out_named_for_a_format_it_does_not_write(real_frame, tmp_path: Path, name: str,
                                                                           with_data: bool) -> None:
    from helpers_cli import flat, invoke

    from triage.workspace.store import LabelsStore

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record(OTEL, commits[57], "true", who="ann", p_true=1.0, model_call="true_positive", model="default")
    store.close()
    out = tmp_path / name
    out.write_text("kept\n")
    code, text = invoke(["labels", "export", "--labels", tmp_path / "labels.sqlite", "--out", out,
                         *(["--data", data] if with_data else [])])
    # Was exit 0 with CSV text in a .json / a gzipped CSV as .parquet.gz, which triage then refused to read.
    assert code == 2, text
    assert f"Invalid value for --out: {name}: labels export writes CSV" in flat(text)
    assert out.read_text() == "kept\n"
    # A .parquet is Parquet, and reads back.
    code, text = invoke(["labels", "export", "--labels", tmp_path / "labels.sqlite", "--out", tmp_path / "d.parquet",
                         *(["--data", data] if with_data else [])])
    assert code == 0, text
    back = pd.read_parquet(tmp_path / "d.parquet")
    assert (back.loc[back["commit"] == commits[57], "label"] == "true_positive").all()


# ---------------------------------------------------------------- no candidates, as JSON lines


def test_json_lines_of_no_candidate_go_through_score_and_report(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    # perfherder finds nothing in this real otel-java series (a quiet day for the sheriff)
    quiet = OTEL.replace("LARGE", "MEDIUM")
    data = _extract(real_frame, tmp_path, quiet)
    cands, scored = tmp_path / "cands.jsonl", tmp_path / "scored.jsonl"
    code, text = invoke(["candidates", "--data", data, "--detector", "perfherder", "--format", "json", "--out", cands])
    assert code == 0 and "0 candidates" in text, text
    assert cands.read_bytes() == b""  # JSON lines of no record
    # Was "error: cands.jsonl: file is empty" (exit 2): README's pipe candidates | score broke on a quiet day.
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--format", "json", "--out", scored])
    assert code == 0, text
    assert "0 of 0 called true" in text
    code, text = invoke(["report", "--data", data, "--decisions", scored, "--candidates", cands, "--out", tmp_path / "r"])
    assert code == 0, text
    assert "(0 decisions)" in text and (tmp_path / "r" / "index.html").is_file()


# ---------------------------------------------------------------- --out named for the other format


@pytest.mark.parametrize(("command", "out", "fmt"), [
    ("candidates", "cands.json", None),
    ("candidates", "cands.jsonl.gz", "csv"),
    ("candidates", "cands.csv", "json"),
    ("score", "scored.json", None),
    ("score", "scored.csv.zst", "json"),
    ("label", "decisions.jsonl", "published"),
])
def test_out_named_for_the_other_format_is_refused(real_frame, tmp_path: Path, command: str, out: str,
                                                   fmt: str | None) -> None:
    from helpers_cli import flat, invoke

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    cands = tmp_path / "given.csv"
    pd.DataFrame({"series_id": [OTEL], "commit": [commits[57]], "detector": ["edivisive"]}).to_csv(cands, index=False)
    args = {"candidates": ["--detector", "perfherder"], "score": ["--candidates", cands], "label": []}[command]
    target = tmp_path / out
    code, text = invoke([command, "--data", data, *args, "--out", target, *(["--format", fmt] if fmt else [])])
    # Was written: CSV text in cands.json, which `triage score --candidates cands.json` then refused
    # ("not valid JSON"), or JSON lines in a .csv.
    assert code == 2, text
    assert f"Invalid value for --out: {Path(out).name}: --format" in flat(text)
    assert not target.exists()


def test_candidates_written_as_json_lines_are_scored(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    data = _extract(real_frame, tmp_path, OTEL)
    cands = tmp_path / "cands.json"
    code, text = invoke(["candidates", "--data", data, "--detector", "perfherder", "--format", "json", "--out", cands])
    assert code == 0, text
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--show", "0"])
    assert code == 0, text
    assert "1 of 1 called true" in text


# ---------------------------------------------------------------- a detector parameter that contradicts its name


@pytest.mark.parametrize(("detector", "param", "message"), [
    ("hybrid_ks", "test=welch", "parameter test='welch' of detector 'hybrid_ks' contradicts its name, which fixes "
                                "test='ks': use hybrid_welch"),
    ("mozilla_or_ensemble", "always=", "parameter always=() of detector 'mozilla_or_ensemble' contradicts its name, "
                                       "which fixes always=('perfherder',): use ensemble"),
])
def test_a_parameter_that_contradicts_the_detectors_name_is_refused(real_frame, tmp_path: Path, detector: str,
                                                                    param: str, message: str) -> None:
    from helpers_cli import flat, invoke

    data = _extract(real_frame, tmp_path, OTEL)
    out = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", detector, "--param", param, "--out", out])
    # Was written: Welch-test candidates labelled hybrid_ks in the detector column, which `score`
    # then judged at hybrid_ks's threshold.
    assert code == 2, text
    assert message in flat(text)
    assert not out.exists()
    # The value the name fixes may still be given.
    same = "test=ks" if detector == "hybrid_ks" else "always=perfherder"
    code, text = invoke(["candidates", "--data", data, "--detector", detector, "--param", same, "--out", out])
    assert code == 0, text


# ---------------------------------------------------------------- serve: one standard input for two inputs


def test_serve_refuses_data_and_candidates_both_from_standard_input(real_frame, tmp_path: Path) -> None:
    import socket

    from helpers_cli import flat, invoke

    data = _extract(real_frame, tmp_path, OTEL)
    with socket.socket() as busy:  # a port in use: the refusal must come before the port is taken
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, text = invoke(["serve", "--data", "-", "--candidates", "-", "--labels", tmp_path / "labels.sqlite",
                             "--port", port], stdin=data.read_text())
    # Was served: the data read standard input to its end, the candidates were an empty file, 0 alerts.
    assert code == 2, text
    assert "--data and --candidates cannot both be - (one standard input)" in flat(text)
    assert not (tmp_path / "labels.sqlite").exists()


# ---------------------------------------------------------------- plots: a few far outliers squashed the rest


RHAI_SPIKED = "rhai/bench_engine_new_raw/gha-ubuntu-latest"  # first runs at ~57,000 ns/iter, then 20-400


def _spiked(real_frame: pd.DataFrame, folder: Path):
    from triage.loaders import load

    return load(_extract(real_frame, folder, RHAI_SPIKED))[RHAI_SPIKED]


def _svg_text(draw, path: Path) -> str:
    """What ``draw(path)`` writes as an SVG with its text kept as text (tick labels, legend)."""
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):
        draw(path)
    return path.read_text()


def test_workspace_plot_scale_leaves_out_a_few_far_outliers(real_frame, tmp_path: Path) -> None:
    from triage.workspace.plot import series_figure

    h = _spiked(real_frame, tmp_path)
    assert h.values.max() > 50_000 and (h.values > 1_000).sum() <= 4
    fig = series_figure(h, [(500, "untriaged", 0.4, "false_positive"), (2, "untriaged", 0.1, "false_positive")],
                        title=RHAI_SPIKED)
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    # Was 0 to 60,000 and more: the 1,650 commits after the first runs a flat line along the bottom.
    assert high < 1_000 and low > -100
    labels = ax.get_legend_handles_labels()[1]
    assert "4 values off the scale, up to 5.767e+04" in labels, labels


def test_report_plot_scale_leaves_out_a_few_far_outliers(real_frame, tmp_path: Path) -> None:
    from triage.report import plot_series

    h = _spiked(real_frame, tmp_path)
    svg = _svg_text(lambda p: plot_series(h, p, candidates=np.array([2, 500])), tmp_path / "plot.svg")
    ticks = [float(t.replace("\u2212", "-")) for t in re.findall(r">(\u2212?[\d.]+)</text>", svg)]
    assert "4 values off the scale, up to 5.767e+04" in svg
    # The y ticks stop near the values' bulk (were up to 60000; the x ticks go to 1600).
    assert max(ticks) < 2_000, ticks


def test_plot_command_scale_leaves_out_a_few_far_outliers(real_frame, tmp_path: Path) -> None:
    from matplotlib.image import imread

    from triage.plotting import plot_history

    h = _spiked(real_frame, tmp_path)
    png = plot_history(h, tmp_path / "plot.png")
    rgb = imread(png)[..., :3]
    blue = np.all(np.abs(rgb - np.array([31, 119, 180]) / 255) < 0.08, axis=-1)  # the value line, tab:blue
    width = blue.shape[1]
    rows = np.flatnonzero(blue[:, int(0.3 * width): int(0.85 * width)].any(axis=1))
    # The line after the first runs spans much of the plot's height (was a few pixel rows at the bottom).
    assert len(rows) > 60, len(rows)


def test_a_fresh_step_at_the_last_commit_stays_on_the_plot_scale(real_frame, tmp_path: Path) -> None:
    from triage.loaders import load
    from triage.workspace.plot import series_figure

    # empymod's last commit dropped from ~0.80 to 0.58 s: 11 spans of the quantiles below them
    sid = "empymod-bench/kernel.Kernel.time_fields('Big')/dtr-latitude/conda-py3.6"
    h = load(_extract(real_frame, tmp_path, sid))[sid]
    assert h.values[-1] < 0.6 < 0.75 < h.values[-2]
    ax = series_figure(h, [(len(h) - 1, "untriaged", 0.9, "true_positive")], title=sid).axes[0]
    low, _ = ax.get_ylim()
    assert low < h.values[-1]
    assert not any("off the scale" in label for label in ax.get_legend_handles_labels()[1])


# ---------------------------------------------------------------- score: one Perfherder alert in two summaries


def test_an_alert_listed_in_two_summaries_gets_one_call(real_frame, tmp_path: Path) -> None:
    import json

    from helpers_cli import invoke

    data = _extract(real_frame, tmp_path, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    alert = {"id": 1, "status": 0, "amount_pct": 32.0, "is_regression": False,
             "series_signature": {"signature_hash": OTEL, "suite": "otel", "test": "span", "machine_platform": "linux"}}
    # Reassigned: the same alert in its first summary and in the one it was moved to.
    summaries = [{"id": 10, "revision": commits[57], "status": 3, "alerts": [alert]},
                 {"id": 11, "revision": commits[57], "status": 0, "alerts": [{**alert, "id": 2}]}]
    cands = tmp_path / "alerts.json"
    cands.write_text(json.dumps({"results": summaries}))
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out, "--explain", "0"])
    assert code == 0, text
    scored = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(scored) == 2 and scored["p_true"].nunique() == 1
    # Was one row true and the other false, "duplicate: a stronger candidate is within 5 commits" (itself).
    assert scored["classification"].tolist() == ["true_positive", "true_positive"], scored["explanation"].tolist()
    # The report reads score's output: one alert (was "row 3: repeats the decision of row 2").
    code, text = invoke(["report", "--data", data, "--decisions", out, "--candidates", cands, "--out", tmp_path / "r"])
    assert code == 0, text
    assert "(1 decisions)" in text or "(1 decision)" in text
    # A row copied whole is still a garbled file.
    twice = tmp_path / "twice.csv"
    pd.concat([scored, scored.iloc[[0]]]).to_csv(twice, index=False)
    code, text = invoke(["report", "--data", data, "--decisions", twice, "--out", tmp_path / "r2"])
    assert code == 2 and "row 4: repeats the decision of row 2" in text, text


# ---------------------------------------------------------------- a detector file with its own p_true


def _own_probability_candidates(real_frame: pd.DataFrame, folder: Path) -> tuple[Path, Path, list[str]]:
    """A sheriff's own (ML) detector: its file carries its own p_true, 0.5 on every row."""
    data = _extract(real_frame, folder, OTEL)
    commits = list(dict.fromkeys(real_frame.loc[real_frame["series_id"] == OTEL, "commit"]))
    cands = folder / "mine.csv"
    pd.DataFrame({"series_id": OTEL, "commit": [commits[57], commits[150]], "detector": "mine",
                  "p_true": [0.5, 0.5]}).to_csv(cands, index=False)
    return data, cands, commits


def test_score_a_detector_file_with_its_own_p_true(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    data, cands, commits = _own_probability_candidates(real_frame, tmp_path)
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out])
    # Was an internal error: "The column label 'p_true' is not unique" (the table met two p_true).
    assert code == 0, text
    scored = pd.read_csv(out)
    assert scored["p_true"].tolist() == [0.5, 0.5]  # the detector's own, kept
    assert scored.loc[0, "triage_p_true"] > 0.9 and scored.loc[0, "classification"] == "true_positive"
    assert "1.000" in text and "0.500" not in text  # the table shows ours


def test_report_shows_the_models_p_true_not_the_detectors(real_frame, tmp_path: Path) -> None:
    from helpers_cli import invoke

    data, cands, _ = _own_probability_candidates(real_frame, tmp_path)
    scored = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", scored])
    assert code == 0, text
    ours = pd.read_csv(scored)["triage_p_true"]
    code, text = invoke(["report", "--data", data, "--decisions", scored, "--out", tmp_path / "r"])
    assert code == 0, text
    page = (tmp_path / "r" / "index.html").read_text()
    shown = [float(p) for p in re.findall(r'<span class="bar"[^>]*></span>([\d.]+)<', page)]
    # Was 0.500 twice: the detector's own p_true beside the model's call.
    assert sorted(shown) == sorted(round(p, 3) for p in ours), shown


# ---------------------------------------------------------------- Otava: a report on a file with a branch column


@pytest.mark.parametrize("report", ["json", "csv"])
def test_otava_report_of_a_branch_file_is_placed(real_frame, tmp_path: Path, report: str) -> None:
    import json

    from helpers_cli import invoke

    one = real_frame[real_frame["series_id"] == OTEL].drop_duplicates("commit")
    stamps = pd.to_datetime(one["timestamp"]).dt.strftime("%Y-%m-%d %H:%M:%S +0000")
    data = tmp_path / "svc.csv"  # an Otava test file: series throughput@main
    pd.DataFrame({"time": stamps, "commit": one["commit"], "branch": "main", "throughput": one["value"]}).to_csv(
        data, index=False)
    commit = one["commit"].iloc[57]
    change = {"metric": "throughput", "index": 57, "forward_change_percent": 31.8, "pvalue": 1e-9}
    if report == "json":
        cands = tmp_path / "report.json"
        cands.write_text(json.dumps({"svc": [{"time": stamps.iloc[57], "attributes": {"commit": commit, "branch": "main"},
                                              "changes": [change]}]}))
    else:
        cands = tmp_path / "report.csv"
        pd.DataFrame([{"time": stamps.iloc[57], "commit": commit, "branch": "main", **change}]).to_csv(cands, index=False)
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--show", "1"])
    # Was "unknown series 'throughput' / 'svc.throughput' / 'svc/throughput'": the data names it throughput@main.
    assert code == 0, text
    assert "throughput@main" in text and "1 of 1 called true" in text


# ---------------------------------------------------------------- pelt / binseg: a step between two grid points


@pytest.mark.parametrize("detector", ["pelt", "binseg"])
def test_penalised_search_puts_a_step_between_grid_points_on_its_commit(real_frame, tmp_path: Path,
                                                                          detector: str) -> None:
    from helpers_cli import invoke

    # peak memory, nearly deterministic: 208 MB to 176 MB at commit 28, 176 to 157 MB at 33
    sid = "emg3d-bench/memory.ResidualMemory.peakmem_residual('big')/meerkat/conda-py3.8"
    data = _extract(real_frame, tmp_path, sid)
    out = tmp_path / "cands.csv"
    code, text = invoke(["candidates", "--data", data, "--detector", detector, "--out", out])
    assert code == 0, text
    found = set(pd.read_csv(out)["index"])
    # Were 25 and 30 (and 30, 35): the jump=5 grid's points on either side, neither the commit that changed.
    assert {28, 33} <= found, sorted(found)[:12]
    assert not {25, 35} & found, sorted(found)[:12]
