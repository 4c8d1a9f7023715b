"""Defects found walking through ``triage score`` / ``label`` on the real otel-java histories.

1. The decision tables cut a long series id at its end, so the otel-java
   series all read ``otel-java/io.opentelemetry.…`` and rows could not be told
   apart. A long id is now cut in the middle: its head, ``…`` and the tail
   where the ids differ.
2. A candidate CSV separated by ``;``, tab or ``|`` was refused ("cannot tell
   the candidate layout") although data CSVs accept those delimiters. Its
   header is now split, and the file read, at the sniffed delimiter; errors
   still name the file, the row and the problem.

Each test reads three series of ``../shared/data/real/histories.csv.gz``.
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers_cli import invoke

from triage.candidate_files import read_candidates
from triage.cli.tables import SERIES_WIDTH, shorten_ids
from triage.sniffing import candidate_layout

SPAN = "otel-java/io.opentelemetry.sdk.trace.SpanBenchmark.simpleSpanStartAddEventEnd_{}/otel-bench-runner"
#: Three real series whose ids differ only 27 characters from their end.
SPAN_IDS = [SPAN.format(k) for k in ("01Thread", "02Threads", "05Threads")]
LOG = "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({{logSize:{}}})/otel-bench-runner"
LOG_IDS = [LOG.format(k) for k in ("LARGE", "MEDIUM", "SMALL")]


@pytest.fixture
def real(shared_data, tmp_path):
    """The three SpanBenchmark series as a long CSV and perfherder's candidates for them."""
    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz")
    assert set(SPAN_IDS) <= set(frame["series_id"]) and set(LOG_IDS) <= set(frame["series_id"])
    data, cands = tmp_path / "otel.csv", tmp_path / "c.csv"
    frame[frame["series_id"].isin(SPAN_IDS)].to_csv(data, index=False)
    code, out = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])
    assert code == 0, out
    return data, cands


def _series_cells(out: str) -> list[str]:
    return [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")
            and line.split("│")[1].strip()]


# ---------------------------------------------------------------- 1. ids cut in the middle


@pytest.mark.parametrize("columns", ["80", "120"])
def test_score_table_tells_the_real_otel_java_series_apart(real, monkeypatch, columns):
    data, cands = real
    monkeypatch.setenv("COLUMNS", columns)
    code, out = invoke(["score", "--data", data, "--candidates", cands])
    assert code == 0, out
    cells = _series_cells(out)
    scored = pd.read_csv(cands)
    assert len(cells) == len(scored)
    assert "otel-java/io.opentelemetry.…" not in out
    # Cut, and given at least SERIES_WIDTH (more where the other columns leave it: thirty-first session)
    assert all(SERIES_WIDTH <= len(c) < min(map(len, SPAN_IDS)) and "…" in c for c in cells)
    # One shown name per series, and each is that series' own (its head and tail).
    assert len(set(cells)) == scored["series_id"].nunique() == 3
    for cell in cells:
        head, tail = cell.split("…")
        assert sum(s.startswith(head) and s.endswith(tail) for s in SPAN_IDS) == 1, cell
    assert any("01Thread/otel-bench-runner" in c for c in cells)


def test_label_table_at_80_columns_tells_the_real_series_apart(real, tmp_path, monkeypatch):
    data, cands = real
    frame, flagged = pd.read_csv(data), pd.read_csv(cands)
    frame["label"] = ""
    for sid, index in zip(flagged["series_id"], flagged["index"], strict=True):
        frame.loc[frame.index[frame["series_id"] == sid][index], "label"] = "not_triaged"
    labelled = tmp_path / "labelled.csv"
    frame.to_csv(labelled, index=False)
    monkeypatch.setenv("COLUMNS", "80")
    code, out = invoke(["label", "--data", labelled])
    assert code == 0, out
    cells = _series_cells(out)
    assert len(cells) == len(flagged) and len(set(cells)) == 3
    assert max(len(line) for line in out.splitlines() if line.startswith("│")) <= 80


def test_shorten_ids_keeps_head_and_distinguishing_tail_of_real_ids():
    shown = shorten_ids([*LOG_IDS, LOG_IDS[0], "rhai/short"], SERIES_WIDTH)
    assert shown["rhai/short"] == "rhai/short"  # an id that fits is left alone
    cut = [shown[s] for s in LOG_IDS]
    assert len(set(cut)) == 3 and all(len(c) == SERIES_WIDTH for c in cut)
    for sid, c in zip(LOG_IDS, cut, strict=True):
        head, tail = c.split("…")
        assert head and sid.startswith(head) and sid.endswith(tail)
    assert shown[LOG_IDS[1]].endswith("MEDIUM})/otel-bench-runner")
    # Alone, a long id keeps as much head as tail.
    (alone,) = shorten_ids([SPAN_IDS[0]], SERIES_WIDTH).values()
    assert alone == "otel-java/io.o…-bench-runner"


# ---------------------------------------------------------------- 2. candidate CSV delimiters


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_candidate_csv_with_other_delimiters_scores_as_the_comma_one(real, tmp_path, sep):
    data, cands = real
    other = tmp_path / "cands.csv"
    pd.read_csv(cands).to_csv(other, sep=sep, index=False)
    assert candidate_layout(other) == "candidates"
    assert len(read_candidates(other, "candidates")) == len(pd.read_csv(cands))
    outs = []
    for path in (cands, other):
        scored = tmp_path / f"scored_{path.stem}.csv"
        code, out = invoke(["score", "--data", data, "--candidates", path, "--out", scored])
        assert code == 0, out
        outs.append(pd.read_csv(scored))
    pd.testing.assert_frame_equal(outs[0], outs[1])


def test_semicolon_candidate_csv_errors_name_file_row_and_problem(real, tmp_path):
    data, cands = real
    frame = pd.read_csv(cands).astype({"index": object})
    frame.loc[2, "index"] = "abc"  # line 4 of the file (header = line 1)
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, sep=";", index=False)
    code, out = invoke(["score", "--data", data, "--candidates", bad])
    assert code == 2
    assert "bad.csv" in out and "row 4" in out and "index 'abc' is not a number" in out
