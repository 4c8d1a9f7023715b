"""Walkthrough s19: a build engineer wiring ``triage`` into scripts, Makefiles and CI jobs.

Defects found (what a user did, what went wrong, what happens now):

1. Ran ``triage label`` / ``triage score`` in a narrow terminal pane
   (``COLUMNS=40``). The table was too narrow for its columns, and rich
   shared the width out evenly: P(true) read ``0.…`` and the model's call
   was cut to nothing, the two cells the table is read for. Now, that narrow,
   the cells lose their padding, P(true) and the call keep their full width,
   and the identifiers (series, commit, label, index) share what is left.
2. Ran ``triage score`` on a file of 21 candidates: the table was titled
   "21 candidates" over 20 rows (``--show`` 20), as if one had been lost. Now
   the title says how many of them are shown.
3. Wrote ``triage train ... --out -`` as for every other ``--out``: it
   trained for as long as it takes and left a model folder named ``-`` in the
   working directory (``-`` is standard output everywhere else; ``evaluate``
   and ``window-study`` refused it). Now it is a usage error before any work,
   exit 2, as there.
4. Ran ``triage select-features --out -`` in CI (no terminal): the
   generation bar was drawn once, at the end, into the log (a line of box
   characters), and the summary line said "-> -". Now it prints
   ``JobProgress``'s plain line per tenth of the generations on stderr (a
   terminal keeps the live bar, also on stderr), and says "standard output".
5. Gave ``--format xml`` or ``--detector nope`` by mistake: the usage error
   read "Invalid value: --format must be ..." / "Invalid value: unknown
   detector ...", unlike every other option's "Invalid value for --x: ...".
   Now those name their option the same way (``--format``, ``--detector``,
   ``--param``).
6. Used ``--n-jobs`` with ``triage detect`` as with ``label``, ``score``,
   ``train`` and ``evaluate``: "No such option: --n-jobs" (detect spelled it
   ``--jobs``, and refused ``-1``). Now ``--n-jobs`` is another name of
   ``--jobs``, and ``-1`` means all cores there too.
7. Ran ``triage culprit`` from a script with its standard input closed
   (``< /dev/null``): the error was glued to the unanswered prompt
   ("value of commit c29 (position 29): error: <stdin>: ..."). Now the
   prompt's line ends first.
8. Piped ``triage sample --out -`` / ``triage steady ... --out -`` into the
   next step: the summary line on stderr ended "-> -", read in a CI log as a
   typo; the other commands say "-> standard output". Now these do too.
9. Read ``triage detect --help`` (and ``train``, ``evaluate``,
   ``window-study``, ``candidates``, ``select-features``, ``serve``) to
   learn whether ``--data -`` works in a pipeline: the help said "any layout
   triage.loaders reads" (a Python module) or "any supported layout", and
   nothing about standard input, which each of them reads. Now every
   ``--data`` says it takes a directory, gzip/zstd and ``-`` for stdin.
10. Listed ``triage detectors`` in a 40-column pane to copy a default:
    "min_back_window…" (the value cut off) and "mozilla_or_ensem…" (a name
    ``--detector`` then refused). Now both columns fold: every name and
    ``key=value`` is there whole.
11. Piped a results CSV into ``triage watch --csv -`` (``-`` is standard
    input for ``--data`` and ``--candidates``): "error: -: no such file",
    and ``--csv /dev/stdin`` on a pipe is refused as "not a regular file".
    Now ``--csv -`` reads the CSV from standard input, line by line, with
    the same checks and the same decisions as the file (``--follow`` with it
    is a usage error: stdin cannot be waited on as a file).
12. Ran ``triage demo --seed -1`` (``synth``, ``train`` and ``evaluate``
    refuse it naming ``--seed``): "internal error: ValueError: expected
    non-negative integer", exit 1, after the demo had begun writing. Now a
    usage error naming ``--seed``, exit 2, before anything is written.
13. Gave ``label`` / ``score`` ``--show 0`` in a cron job to keep only the
    "N of M called true" line: an empty table (headers, no row) was printed
    above it. Now ``--show 0`` prints no table (the help says so).
14. Tried ``triage plot --out -`` to pipe the PNG on: "Invalid value for
    --out: must be one of .png, got ''". Now it says that plot writes a
    .png file, not standard output.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
from helpers_cli import flat, invoke, step_history
from rich.console import Console

from triage.cli.tables import decision_table


def _triaged_history(path, n_series: int = 6):
    """A long CSV of ``n_series`` series of 60 commits: a labelled true step at 30 and a labelled
    false alert at 15 in each; the last series' alerts left untriaged (``not_triaged``)."""
    rng = np.random.default_rng(7)
    rows = []
    for k in range(n_series):
        values = np.r_[rng.normal(100, 1, 30), rng.normal(100 + 8 + k, 1, 30)]
        for i, v in enumerate(values):
            label = ""
            if i in (15, 30):
                label = "not_triaged" if k == n_series - 1 else ("true_positive" if i == 30 else "false_positive")
            rows.append({"series_id": f"bench.suite.case{k:02d}", "commit": f"{k}{i:02d}" + "e" * 20,
                         "value": round(float(v), 3), "label": label})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _render(table, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


# ---------------------------------------------------------------- 1. and 2. the decisions table


def test_a_40_column_table_keeps_p_true_and_the_call_whole():
    frame = pd.DataFrame({
        "series_id": [f"linux-standalone.query.t{k:05d}" for k in range(4)],
        "commit": [f"{k}e35fad73fc7" for k in range(4)],
        "label": ["under_investigation", "not_triaged", "not_triaged", "not_triaged"],
        "p_true": [0.971, 0.312, 0.167, 0.081],
        "classification": ["true_positive", "false_positive", "false_positive", "false_positive"],
        "explanation": [""] * 4,
    })
    for width in (36, 40, 50):
        lines = _render(decision_table(frame, "4 untriaged candidates", 20, extra=("label",), wide=False,
                                       width=width), width)
        assert max(len(line) for line in lines) <= width
        assert lines[-1].endswith("┘")  # the right edge is there
        body = "\n".join(lines)
        for p in ("0.971", "0.312", "0.167", "0.081"):
            assert p in body, (width, body)
        assert "P(true)" in body and "model" in body
        assert sum("│true " in line for line in lines) == 1 and sum("│false│" in line for line in lines) == 3


def test_label_at_columns_40_prints_every_probability_it_writes(tmp_path, monkeypatch):
    data = _triaged_history(tmp_path / "h.csv")
    out = tmp_path / "decided.csv"
    monkeypatch.setenv("COLUMNS", "40")
    code, text = invoke(["label", "--data", data, "--out", out])
    assert code == 0, text
    table = [line for line in text.splitlines() if line.startswith(("┃", "│"))]
    assert table and max(len(line) for line in table) <= 40
    for p in pd.read_csv(out)["p_true"]:
        assert f"{p:.3f}" in text, text
    assert "0.…" not in text


def test_the_title_says_how_many_rows_are_shown():
    frame = pd.DataFrame({"series_id": ["s"] * 5, "commit": list("abcde"), "p_true": np.linspace(0.9, 0.1, 5),
                          "classification": ["true_positive"] * 5, "explanation": [""] * 5})
    cut = "\n".join(_render(decision_table(frame, "5 candidates", 3, wide=False, width=80), 80))
    assert "5 candidates (3 most likely true shown" in flat(cut)
    whole = "\n".join(_render(decision_table(frame, "5 candidates", 20, wide=False, width=80), 80))
    assert "shown" not in whole


# ---------------------------------------------------------------- 3. train --out -


def test_train_refuses_standard_output_as_its_model_folder(tmp_path, monkeypatch):
    data = _triaged_history(tmp_path / "h.csv")
    monkeypatch.chdir(tmp_path)
    code, text = invoke(["train", "--data", data, "--out", "-", "--no-track"])
    assert code == 2, text
    assert "a folder cannot be standard output" in flat(text)
    assert not (tmp_path / "-").exists()


# ---------------------------------------------------------------- 4. select-features in CI


def test_select_features_to_stdout_without_a_terminal_draws_no_bar(tmp_path):
    data = _triaged_history(tmp_path / "h.csv")
    code, text = invoke(["select-features", "--data", data, "--out", "-", "--generations", "2",
                         "--population", "4", "--folds", "2", "--trees", "5"])
    assert code == 0, text
    assert "━" not in text  # no rich bar in a log
    assert "-> standard output" in flat(text)
    start = text.index("{")
    chosen = json.JSONDecoder().raw_decode(text[start:])[0]
    assert chosen["names"]


# ---------------------------------------------------------------- 5. usage errors name their option


def test_format_and_detector_errors_name_their_option(tmp_path):
    data = step_history(tmp_path / "h.csv")
    for args, option in ((["--detector", "perfherder", "--format", "xml"], "--format"),
                         (["--detector", "nope"], "--detector"),
                         (["--detector", "pelt", "--param", "model=foo"], "--param")):
        code, text = invoke(["candidates", "--data", data, "--out", tmp_path / "c.csv", *args])
        assert code == 2, text
        assert f"Invalid value for {option}:" in flat(text), (args, text)
    code, text = invoke(["summary", "--data", data, "--format", "yaml"])
    assert code == 2 and "Invalid value for --format: must be table or json" in flat(text), text


# ---------------------------------------------------------------- 6. detect --n-jobs


def test_detect_takes_n_jobs_as_the_other_commands_do(tmp_path):
    data = step_history(tmp_path / "h.csv")
    results = {}
    for args in (["--jobs", "1"], ["--n-jobs", "2"], ["--n-jobs", "-1"]):
        out = tmp_path / f"d{args[1]}.csv"
        code, text = invoke(["detect", "--data", data, "--out", out, *args])
        assert code == 0, (args, text)
        results[args[1]] = out.read_text()
    assert results["1"] == results["2"] == results["-1"]
    code, text = invoke(["detect", "--data", data, "--out", tmp_path / "d0.csv", "--n-jobs", "0"])
    assert code == 2 and "must be >= 1 (or -1), got 0" in flat(text), text


# ---------------------------------------------------------------- 7. culprit with stdin closed


def test_culprit_prompt_line_ends_before_the_error(tmp_path):
    rows = ["commit,value"] + [f"c{i},{'' if 2 < i < 7 else 100 + 10 * (i >= 5)}" for i in range(10)]
    data = tmp_path / "partial.csv"
    data.write_text("\n".join(rows) + "\n")
    code, text = invoke(["culprit", "--data", data, "--before", "c2", "--after", "c7"], stdin="")
    assert code == 2, text
    assert "the input ended before commit" in text
    assert not re.search(r"\): error", text), text


# ---------------------------------------------------------------- 8. sample / steady say where the CSV went


def test_sample_and_steady_to_stdout_say_standard_output(tmp_path):
    rows = ["commit,value"] + [f"c{i},{'' if i % 3 else 100 + (i >= 15)}" for i in range(30)]
    data = tmp_path / "partial.csv"
    data.write_text("\n".join(rows) + "\n")
    code, text = invoke(["sample", "--data", data, "--budget", "2", "--out", "-"])
    assert code == 0, text
    assert "-> standard output" in flat(text) and "-> -" not in text
    runs = tmp_path / "r1.json"
    runs.write_text(json.dumps([[1.0, 0.9, 0.8] + [0.5] * 7, [1.1, 0.6] + [0.5] * 8]))
    code, text = invoke(["steady", runs, "--series", "parse", "--out", "-"])
    assert code == 0, text
    assert "steady iterations -> standard output" in flat(text)


# ---------------------------------------------------------------- 9. --data's help says what it takes


def test_every_dataset_option_says_it_reads_stdin():
    import typer

    from triage.cli.app import app

    root = typer.main.get_command(app)
    checked = []
    for name in ("candidates", "detect", "train", "evaluate", "window-study", "select-features", "serve",
                 "label", "score", "report", "summary", "convert"):
        command = root.commands[name]  # type: ignore[attr-defined]
        (option,) = [p for p in command.params if "--data" in getattr(p, "opts", ())]
        assert "- for stdin" in option.help and "triage.loaders" not in option.help, (name, option.help)
        checked.append(name)
    assert len(checked) == 12


# ---------------------------------------------------------------- 10. triage detectors in a narrow pane


def test_detectors_at_40_columns_keep_every_name_and_value(monkeypatch):
    from triage.core.params import as_text
    from triage.detectors import defaults, names

    monkeypatch.setenv("COLUMNS", "40")
    code, text = invoke(["detectors"])
    assert code == 0, text
    assert "…" not in text
    cells = "".join(line[1:-1].split("│")[1].replace(" ", "") for line in text.splitlines()
                    if line.startswith("│") and line.count("│") == 3)
    for name in names():
        for key, value in defaults(name).items():
            assert f"{key}={as_text(value)}".replace(" ", "") in cells, (name, key)


# ---------------------------------------------------------------- 11. watch --csv -


def test_watch_reads_a_csv_piped_in_as_dash(tmp_path):
    rows = "".join(f"s1,c{i},{100 + 20 * (i >= 30) + (i % 3) * 0.5}\n" for i in range(40))
    feed = tmp_path / "feed.csv"
    feed.write_text("series_id,commit,value\n" + rows)
    code, from_file = invoke(["watch", "--csv", feed])
    assert code == 0, from_file
    code, piped = invoke(["watch", "--csv", "-"], stdin=feed.read_text())
    assert code == 0, piped
    # K = 4: the last four wait; and the end-of-input line (stderr)
    assert piped == from_file and len(piped.splitlines()) == 37 and "end of input: 40 records read" in piped
    code, text = invoke(["watch", "--csv", "-"], stdin="series_id,commit,value\ns1,c0,1\ns1,c1,x\n")
    assert code == 2 and "<stdin>, line 3: value 'x' is not a number" in text, text
    code, text = invoke(["watch", "--csv", "-", "--follow"], stdin="")
    assert code == 2 and "Invalid value for --follow" in flat(text), text


# ---------------------------------------------------------------- 12. demo --seed -1


def test_demo_refuses_a_negative_seed_as_a_usage_error(tmp_path):
    code, text = invoke(["demo", "--seed", "-1", "--out", tmp_path / "d"])
    assert code == 2, text
    assert "Invalid value for --seed: must be in [0, 4294967295], got -1" in flat(text)
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------- 13. --show 0


def test_show_0_prints_the_summary_line_without_an_empty_table(tmp_path):
    data = _triaged_history(tmp_path / "h.csv")
    code, text = invoke(["label", "--data", data, "--show", "0"])
    assert code == 0, text
    assert "called true at threshold" in text
    assert not any(line.startswith(("┏", "┃", "└")) for line in text.splitlines()), text


# ---------------------------------------------------------------- 14. plot --out -


def test_plot_to_standard_output_says_it_writes_a_png_file(tmp_path):
    data = step_history(tmp_path / "h.csv")
    code, text = invoke(["plot", "--data", data, "--out", "-"])
    assert code == 2, text
    assert "Invalid value for --out: plot writes a .png file, not standard output ('-')" in flat(text)
