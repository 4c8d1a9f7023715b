"""Defects found walking through the README on the real histories (otel-java, rhai).

1. ``triage label``'s table on an 80-column terminal (or a pipe) cut the
   model's call to ``fal…`` / ``mod…`` and the human label to
   ``true_positi…``; at 110-119 columns, with the reasons, it ran past the
   terminal's edge and lost the end of each line. The series column now
   gives up what the other columns need.
2. ``triage watch --csv`` read only commas: a ``;``, tab or ``|`` separated
   long CSV, which every other command reads, was refused with "header lacks
   column(s) series_id, commit, value" although its header names them.
3. Without a state store, ``OnlineTriage`` (``triage watch`` without
   ``--state``) recognised a re-sent commit only when it was the series'
   latest: a re-run of a commit still waiting for its decision (the real
   rhai histories re-measure commits two to four arrivals later) was taken
   as a new commit, decided twice, and its second value entered Pre and
   After; ``watch --csv`` (one record at a time) then printed other decisions
   than the same lines piped as JSON (one batch) or a run with ``--state``.

Inputs are generated here; nothing of the real data is used.
"""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke
from rich.console import Console

from triage.cli.tables import decision_table
from triage.model_lookup import resolve_model
from triage.online.loop import OnlineTriage
from triage.online.records import ConflictingRedelivery
from triage.online.state_store import StateStore

# ---------------------------------------------------------------- 1. the table's width


def _decisions(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({
        "series_id": [f"suite/io.example.sdk.SpanRecordBenchmark.threads{k}/runner" for k in range(n)],
        "commit": [f"{k:02d}" + "ab" * 19 for k in range(n)],
        "label": ["true_positive", "false_positive"] * (n // 2),
        "p_true": np.linspace(0.9, 0.1, n),
        "classification": ["true_positive", "false_positive"] * (n // 2),
        "explanation": ["after mean 2.8 sd below pre (+2.41 toward true)"] * n,
    })


def _render(table, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("width", "wide"), [(80, False), (100, False), (110, True), (119, True)])
def test_label_table_keeps_the_call_and_fits(width, wide):
    lines = _render(decision_table(_decisions(), "4 all candidates", 20, extra=("label",), wide=wide, width=width),
                    width)
    assert max(len(line) for line in lines) <= width
    header = next(line for line in lines if "P(true)" in line)
    assert "model" in header and "mod…" not in header
    body = "\n".join(lines)
    assert "true_positive" in body and "false_positive" in body
    assert "│ false " in body and "│ true " in body
    assert lines[-1].endswith("┘")  # the right edge is there: nothing ran past the terminal


@pytest.mark.parametrize("width", [80, 60])
def test_not_scorable_call_fits_at_80_and_a_narrow_table_still_ends_at_the_edge(width):
    frame = _decisions()
    frame.loc[3, ["p_true", "classification"]] = [np.nan, "not_scorable"]
    lines = _render(decision_table(frame, "4 all candidates", 20, extra=("label",), wide=False, width=width), width)
    assert max(len(line) for line in lines) <= width
    assert any(line.endswith("┘") for line in lines)
    if width == 80:
        assert "│ not scorable │" in "\n".join(lines)


def test_label_cli_table_at_80_columns(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    rows = []
    for k in range(2):
        sid = f"bench/very.long.benchmark.name.Suite.case{k}/runner-machine"
        values = np.r_[rng.normal(100, 1, 40), rng.normal(125, 1, 40)]
        for i, x in enumerate(values):
            rows.append({"series_id": sid, "commit": f"{k}{i:02d}" + "f" * 37, "value": round(float(x), 3),
                         "label": "not_triaged" if i in (40, 20) else ""})
    data = tmp_path / "h.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    monkeypatch.setenv("COLUMNS", "80")
    code, out = invoke(["label", "--data", data])
    assert code == 0, out
    table = [line for line in out.splitlines() if line.startswith(("┃", "│"))]
    assert table and max(len(line) for line in table) <= 80
    assert "mod…" not in out and "fal…" not in out and "not_triag…" not in out
    assert "not_triaged" in out


# ---------------------------------------------------------------- 2. watch --csv delimiters


def _stream_rows() -> list[tuple[str, str, str, float]]:
    rng = np.random.default_rng(5)
    values = np.r_[rng.normal(100, 1, 30), rng.normal(140, 1, 30)]
    return [("s1", f"c{i:02d}", f"2024-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z", round(float(x), 3))
            for i, x in enumerate(values)]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_watch_csv_reads_the_long_layouts_delimiters(tmp_path, sep):
    rows = _stream_rows()
    comma, other = tmp_path / "comma.csv", tmp_path / "other.csv"
    comma.write_text("series_id,commit,timestamp,value\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    other.write_text(sep.join(("series_id", "commit", "timestamp", "value")) + "\n"
                     + "".join(sep.join(map(str, r)) + "\n" for r in rows))
    code, expected = invoke(["watch", "--csv", comma])
    assert code == 0, expected
    code, got = invoke(["watch", "--csv", other])
    assert code == 0, got
    assert "header lacks" not in got
    decided = [json.loads(line) for line in got.splitlines() if line.startswith("{")]
    assert len(decided) == len(rows) - 4  # online-w4: all but the 4 still waiting
    assert got == expected


# ---------------------------------------------------------------- 3. in-memory re-runs


def _feed(loop: OnlineTriage, records) -> list[dict]:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConflictingRedelivery)
        for r in records:
            d = loop.process_one(*r)
            if d is not None:
                out.extend(d.records())
    return out


def _rerun_records() -> list[tuple[str, str, float]]:
    """60 commits with a step at 30; c10 and c40 measured again two arrivals later, c20 again at once."""
    rng = np.random.default_rng(7)
    values = np.r_[rng.normal(100, 1, 30), rng.normal(130, 1, 30)]
    records: list[tuple[str, str, float]] = []
    for i, x in enumerate(values):
        records.append(("s", f"c{i:02d}", float(x)))
        if i in (12, 42):  # a re-run of c10 / c40 after c11 and c12 / c41 and c42: both still waiting
            records.append(("s", f"c{i - 2:02d}", float(values[i - 2]) * 1.2))
        if i == 20:
            records.append(("s", "c20", float(x)))
    return records


def test_in_memory_rerun_of_a_waiting_commit_is_decided_once(tmp_path):
    model = resolve_model("online-w4", "online")
    records = _rerun_records()
    memory = _feed(OnlineTriage.from_model_dir(model, explain="none"), records)
    stored = _feed(OnlineTriage.from_model_dir(model, store=StateStore(tmp_path / "s.db"), explain="none"), records)
    fresh = [r for r in memory if not r.get("replayed")]
    commits = [r["commit"] for r in fresh if "withdrawn" not in r]
    assert len(commits) == len(set(commits)), "a commit was decided twice"
    assert "c10" in commits and "c40" in commits
    # The same decisions, on the first values, as with a state store (which remembers every arrival).
    assert fresh == [r for r in stored if not r.get("replayed")]
    # And as one batch (what `watch` does with piped JSON lines).
    batch = OnlineTriage.from_model_dir(model, explain="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConflictingRedelivery)
        decided = batch.process_many(records)
    as_batch = [line for d in decided if d is not None and not d.replayed for line in d.records()]
    assert fresh == as_batch


def test_in_memory_rerun_of_a_waiting_commit_warns_on_another_value():
    loop = OnlineTriage.from_model_dir(resolve_model("online-w4", "online"), explain="none")
    for i in range(8):
        loop.process_one("s", f"c{i}", 100.0 + i % 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert loop.process_one("s", "c6", 150.0) is None  # c6 waits for its decision: nothing decided
    messages = [str(w.message) for w in caught if issubclass(w.category, ConflictingRedelivery)]
    assert len(messages) == 1 and "c6" in messages[0] and "150" in messages[0]


# ---------------------------------------------------------------- 4. detect's summary line


@pytest.mark.parametrize("grouped", [True, False])
def test_detect_summary_counts_with_thousands_separators(tmp_path, grouped):
    """``detect``'s line gave ``(247392 commits, 65,076 commits/s)`` on the real histories: one number grouped, one not."""
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({
        "series_id": np.repeat(["a", "b"], 700),
        "commit": [f"c{i}" for i in range(1400)],
        "value": np.round(rng.normal(100, 1, 1400), 3),
    })
    data = tmp_path / "h.csv"
    # grouped: the streamed reader (parts of whole series); interleaved rows: read whole.
    (frame if grouped else frame.iloc[np.r_[0:700:2, 700:1400:2, 1:700:2, 701:1400:2]]).to_csv(data, index=False)
    code, out = invoke(["detect", "--data", data, "--out", tmp_path / "d.csv"])
    assert code == 0, out
    assert "1,400 commits" in out, out


# ---------------------------------------------------------------- 5. watch --csv ids


def test_watch_csv_takes_ids_as_the_readers_do(tmp_path):
    """``s1, c00, 100.1`` is commit ``c00`` for every reader; ``watch --csv`` kept ``' c00'``.

    With a state store the same commit sent later as ``c00`` (JSON lines, or
    a file without the spaces) was then a new commit, decided twice.
    """
    rows = _stream_rows()
    plain, spaced = tmp_path / "plain.csv", tmp_path / "spaced.csv"
    plain.write_text("series_id,commit,value\n" + "".join(f"{s},{c},{v}\n" for s, c, _, v in rows))
    spaced.write_text("series_id, commit, value\n" + "".join(f"{s} , {c} , {v}\n" for s, c, _, v in rows))
    code, expected = invoke(["watch", "--csv", plain])
    assert code == 0, expected
    code, got = invoke(["watch", "--csv", spaced])
    assert code == 0, got
    assert got == expected
    code, converted = invoke(["convert", "--data", spaced, "--out", "-"])
    assert code == 0, converted
    assert {line.split(",")[1] for line in converted.splitlines()[1:] if line.startswith("s1,")} == {
        json.loads(line)["commit"] for line in got.splitlines() if line.startswith("{")} | {c for _, c, _, _ in rows[-4:]}
    # Sent again as JSON to the same store: every commit is known (replayed), none decided twice.
    db = tmp_path / "state.db"
    code, first = invoke(["watch", "--state", db, "--csv", spaced])
    assert code == 0, first
    lines = "".join(json.dumps({"series_id": s, "commit": c, "value": v}) + "\n" for s, c, _, v in rows)
    code, again = invoke(["watch", "--state", db], stdin=lines)
    assert code == 0, again
    records = [json.loads(line) for line in again.splitlines() if line.startswith("{")]
    assert records and all(r.get("replayed") for r in records)


# ---------------------------------------------------------------- 6. the report's counts


def test_report_counts_group_thousands(tmp_path):
    """The report's header read ``8023 decisions 1970 likely true alerts`` where the terminal said 8,023."""
    n = 1200
    rng = np.random.default_rng(13)
    data = tmp_path / "h.csv"
    pd.DataFrame({"series_id": "s", "commit": [f"c{i}" for i in range(n)],
                  "value": np.round(rng.normal(100, 1, n), 3)}).to_csv(data, index=False)
    decisions = tmp_path / "d.csv"
    pd.DataFrame({"series_id": "s", "commit": [f"c{i}" for i in range(1, n)], "p_true": 0.9,
                  "classification": "true_positive"}).to_csv(decisions, index=False)
    code, out = invoke(["report", "--data", data, "--decisions", decisions, "--candidates", decisions,
                        "--out", tmp_path / "rep", "--max-plots", 0])
    assert code == 0, out
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<b>1,199</b> decisions" in page and "<b>1,199</b> likely true alerts" in page
    assert "<b>1,199</b> detector candidates" in page
