"""Candidate and decision files with bad cells: refused naming the file, the row and the problem.

``score`` ranks the detector's ``score`` column among the file's candidates
(a model feature), so text there used to turn silently into "missing" and an
infinite score into the top rank. ``report`` read any ``classification`` and
drew a repeated decision twice.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.synthetic import generate, preset_config


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("decisions")
    history = folder / "h.csv"
    generate(preset_config("small", n_series=12), seed=4).to_frame().to_csv(history, index=False)
    cands = folder / "cands.csv"
    code, output = invoke(
        ["candidates", "--data", history, "--detector", "perfherder", "--out", cands]
    )
    assert code == 0, output
    scored = folder / "scored.csv"
    code, output = invoke(["score", "--data", history, "--candidates", cands, "--out", scored])
    assert code == 0, output
    return {"history": history, "cands": cands, "scored": scored, "folder": folder}


def edited(source: Path, target: Path, row: int, column: str, value: str) -> Path:
    """``source`` with one cell of data row ``row`` (0-based) replaced, every cell kept as text."""
    frame = pd.read_csv(source, dtype=str, keep_default_na=False)
    assert len(frame) > row
    frame.loc[row, column] = value
    frame.to_csv(target, index=False)
    return target


@pytest.mark.parametrize("value", ["abc", "inf", "-inf", "nan", "NaN"])
def test_a_detector_score_that_is_not_a_finite_number_is_refused(work, value, tmp_path):
    bad = edited(work["cands"], tmp_path / "c.csv", 1, "score", value)
    out = tmp_path / "s.csv"
    code, output = invoke(["score", "--data", work["history"], "--candidates", bad, "--out", out])
    assert code == 2, output
    assert f"{bad}, row 3: score {value!r} is not a finite number" in flat(output)
    assert not out.exists()


def test_an_empty_detector_score_stays_allowed(work, tmp_path):
    # A detector with no score of its own (a hand-made list) leaves the cell empty.
    blank = edited(work["cands"], tmp_path / "c.csv", 1, "score", "")
    code, output = invoke(
        ["score", "--data", work["history"], "--candidates", blank, "--out", tmp_path / "s.csv"]
    )
    assert code == 0, output


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        (
            "classification",
            "maybe",
            "classification 'maybe' is not true_positive, false_positive or not_scorable",
        ),
        ("classification", "", "classification '' is not true_positive, false_positive or not_scorable"),
        ("index", "abc", "index 'abc' is not a whole number"),
    ],
)
def test_a_decision_with_a_bad_cell_is_refused_and_no_report_is_written(
    work, column, value, problem, tmp_path
):
    bad = edited(work["scored"], tmp_path / "d.csv", 0, column, value)
    out = tmp_path / "report"
    code, output = invoke(["report", "--data", work["history"], "--decisions", bad, "--out", out])
    assert code == 2, output
    assert f"{bad}, row 2: {problem}" in flat(output)
    assert not out.exists()


def test_a_repeated_decision_is_refused(work, tmp_path):
    frame = pd.read_csv(work["scored"], dtype=str, keep_default_na=False)
    twice = tmp_path / "d.csv"
    pd.concat([frame, frame.iloc[[0]]]).to_csv(twice, index=False)
    out = tmp_path / "report"
    code, output = invoke(["report", "--data", work["history"], "--decisions", twice, "--out", out])
    assert code == 2, output
    assert f"{twice}, row {len(frame) + 2}: repeats the decision of row 2" in flat(output)
    assert not out.exists()


def test_a_directory_given_as_decisions_is_named_as_one(work, tmp_path):
    code, output = invoke(
        ["report", "--data", work["history"], "--decisions", tmp_path, "--out", tmp_path / "r"]
    )
    assert code == 2, output
    assert f"error: {tmp_path}: is a directory" in flat(output)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_score_reads_the_json_lines_that_candidates_writes(work, suffix, tmp_path):
    # `candidates --format json` wrote a file that `score --candidates` called unreadable.
    lines = tmp_path / f"cands{suffix}"
    code, output = invoke(
        [
            "candidates",
            "--data",
            work["history"],
            "--detector",
            "perfherder",
            "--out",
            lines,
            "--format",
            "json",
        ]
    )
    assert code == 0, output
    out = tmp_path / "s.csv"
    code, output = invoke(["score", "--data", work["history"], "--candidates", lines, "--out", out])
    assert code == 0, output
    from_csv = pd.read_csv(work["scored"])
    from_json = pd.read_csv(out)
    pd.testing.assert_frame_equal(from_json[from_csv.columns], from_csv, check_dtype=False)


def test_a_bad_json_line_among_candidates_is_named(work, tmp_path):
    lines = tmp_path / "cands.jsonl"
    lines.write_text('{"series_id": "x", "commit": "a", "index": 1}\n{"series_id": \n')
    code, output = invoke(
        ["score", "--data", work["history"], "--candidates", lines, "--out", tmp_path / "s.csv"]
    )
    assert code == 2, output
    assert f"{lines}, row 2: not a JSON object" in flat(output)


def gzipped(source: Path, target: Path, keep: int | None = None) -> Path:
    import gzip

    data = gzip.compress(source.read_bytes())
    target.write_bytes(data if keep is None else data[:keep])
    return target


def test_a_compressed_candidate_file_is_named_in_errors_not_its_decompressed_copy(work, tmp_path):
    bad = edited(work["cands"], tmp_path / "plain.csv", 0, "series_id", "no-such-series")
    packed = gzipped(bad, tmp_path / "cands.csv.gz")
    code, output = invoke(
        ["score", "--data", work["history"], "--candidates", packed, "--out", tmp_path / "s.csv"]
    )
    assert code == 2, output
    assert f"error: {packed}, row 2: unknown series 'no-such-series'" in flat(output)


def test_report_reads_compressed_decisions_by_their_bytes_and_names_a_truncated_one(work, tmp_path):
    # A truncated gzip ended in click's "Aborted." with exit 1 (an EOFError).
    cut = gzipped(work["scored"], tmp_path / "d.csv.gz", keep=200)
    code, output = invoke(
        ["report", "--data", work["history"], "--decisions", cut, "--out", tmp_path / "r1"]
    )
    assert code == 2, output
    assert f"error: {cut}: cannot decompress (gzip)" in flat(output)
    whole = gzipped(work["scored"], tmp_path / "decisions.bin")  # no suffix to go by
    code, output = invoke(
        ["report", "--data", work["history"], "--decisions", whole, "--out", tmp_path / "r2"]
    )
    assert code == 0, output
    assert (tmp_path / "r2" / "index.html").is_file()


def test_json_lines_decisions_with_a_null_index_are_placed_by_their_commit(work, tmp_path):
    from triage.loaders import load
    from triage.report import read_decisions

    frame = pd.read_csv(work["scored"])
    where = frame["index"].tolist()
    frame["index"] = None
    lines = tmp_path / "d.jsonl"
    frame.to_json(lines, orient="records", lines=True)
    code, output = invoke(
        ["report", "--data", work["history"], "--decisions", lines, "--out", tmp_path / "r"]
    )
    assert code == 0, output
    # each at its commit's position (the test had checked the exit code only)
    placed = read_decisions(lines, load(work["history"]))
    assert sorted(zip(placed["commit"].astype(str), placed["index"], strict=True)) == sorted(
        zip(frame["commit"].astype(str), where, strict=True))


def test_a_bad_json_lines_decision_is_named_by_its_line(work, tmp_path):
    frame = pd.read_csv(work["scored"])
    frame.loc[0, "classification"] = "maybe"
    lines = tmp_path / "d.jsonl"
    frame.to_json(lines, orient="records", lines=True)
    code, output = invoke(
        ["report", "--data", work["history"], "--decisions", lines, "--out", tmp_path / "r"]
    )
    assert code == 2, output
    assert f"{lines}, row 1: classification 'maybe'" in flat(output)
