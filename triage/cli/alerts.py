"""Operations commands: ``triage label``, ``triage score``, ``triage report``.

``label``  classifies the untriaged candidates of a dataset (Bauer et al.,
           ICPE 2022, Section 3.3) -> :mod:`triage.batch_label`
``score``  scores candidates of any detector (ours, Apache Otava, Perfherder)
           -> :mod:`triage.scoring`
``report`` writes a static HTML page of decisions and plots -> :mod:`triage.report`

Every command reads the dataset with :func:`triage.loaders.load` (any layout),
prints a rich table and exits 2 with one line on bad input (see
:func:`triage.cli.app.main`). Heavy imports happen inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from triage.cli.options import (
    COMMIT_ORDER_HELP,
    DATA_HELP,
    Aggregate,
    Branch,
    FailOn,
    TrimWarmup,
    check_fail_on,
    fail_on,
    read_commit_order,
)
from triage.cli.progress import JobProgress, chunks
from triage.cli.tables import check_format, console_for, count, decision_table, output_name
from triage.cli.validation import check_option_applies, check_text_table, output_file

console = Console()
err_console = Console(stderr=True)

SCHEDULER_HELP = "Run on a dask cluster, partitioned by series: local (a LocalCluster on this machine) or a scheduler address (tcp://host:8786)."
MODEL_HELP = (
    "Model: `default` (the bundled adaptive-window model), a bundled name (default-adaptive, "
    "default-w0, ...), a directory written by `triage train` (checksums are verified) or "
    "models:/name@alias from the registry."
)
MODEL_ENV = "TRIAGE_MODEL"
EXPLAIN_HELP = "Top contributing features to report per decision (0 = none)."


def label(
    data: Annotated[Path, typer.Option("--data", help=DATA_HELP)],
    model: Annotated[str, typer.Option("--model", help=MODEL_HELP, envvar=MODEL_ENV)] = "default",
    out: Annotated[Path | None, typer.Option("--out", parser=output_file, help="File to write (atomically; - = stdout); default: print only.")] = None,
    which: Annotated[str, typer.Option("--which", help="untriaged (default), triaged (check the model reproduces them) or all.")] = "untriaged",
    threshold: Annotated[float | None, typer.Option("--threshold", help="Override the model's decision threshold on P(true).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv (series_id, commit, label, p_false, p_true, classification, change_pct, change_kind, explanation), json (the same as JSON lines) or published (the ICPE 2022 replication package's ;-separated layout; it has no series column, so a commit alerted in several series is refused).")] = "csv",
    explain_top: Annotated[int, typer.Option("--explain", help=EXPLAIN_HELP)] = 3,
    show: Annotated[int, typer.Option("--show", help="Rows to print, most likely true first (0: no table; the summary lines still print).")] = 20,
    n_jobs: Annotated[int, typer.Option("--n-jobs", help="Processes for feature extraction (-1 = all cores).")] = 1,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help=SCHEDULER_HELP)] = None,
    aggregate: Aggregate = "mean",
    trim_warmup: TrimWarmup = "none",
    branch: Branch = None,
    fail: FailOn = "none",
) -> None:
    """Classify untriaged candidates (not_triaged, under_investigation) with a trained model."""
    from triage.cli.validation import (
        check_aggregation,
        check_int,
        check_n_jobs,
        check_number,
        check_output_not_input,
    )

    check_output_not_input(out, data)
    check_text_table(out, "label")
    check_aggregation(aggregate, trim_warmup)
    fail = check_fail_on(fail)
    check_n_jobs(n_jobs)
    check_int("--explain", explain_top, low=0)
    check_int("--show", show, low=0)
    check_number("--threshold", threshold, low=0, high=1)
    import pandas as pd

    from triage.batch_label import (
        OUTPUT_COLUMNS,
        SELECTIONS,
        agreement,
        label_candidates,
        write_decisions,
    )
    from triage.core.atomic import write_frame
    from triage.inference import NOT_SCORABLE_WHY, load_classifier
    from triage.loaders import load
    from triage.model_lookup import resolve_model

    if which not in SELECTIONS:
        raise typer.BadParameter(f"must be one of {', '.join(SELECTIONS)}, got {which!r}", param_hint="--which")
    check_format(fmt, ("csv", "json", "published"))
    check_out_suffix(out, fmt)
    console = console_for(out)
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise typer.BadParameter("--threshold must be in [0, 1]")
    clf = load_classifier(resolve_model(model, "alerts"))
    dataset = load(data, aggregate=aggregate, trim_warmup=trim_warmup, branch=branch)
    # Series are labelled independently: in about ten parts, each a progress step.
    ids = dataset.series_ids
    parts = []
    if scheduler is not None:  # the cluster labels the series partitions; no local chunks left
        from triage.distributed import map_frames

        parts, ids = [map_frames(label_candidates, dataset, scheduler, clf, which=which, threshold=threshold, explain_top=explain_top)], []
    with JobProgress(f"label ({which})", len(ids), "series") as progress:
        for part in chunks(len(ids), 10, minimum=200):
            parts.append(label_candidates(dataset.subset(ids[part]), clf, which=which, threshold=threshold,
                                          explain_top=explain_top, n_jobs=n_jobs))
            progress.advance(part.stop - part.start)
    decisions = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    if fmt == "published" and out is not None:
        # The published layout has no series column: benchmarks of one project share their
        # commits, and rows of one commit in several series could not be told apart.
        shared = decisions.groupby("commit", sort=False)["series_id"].nunique()
        if (shared > 1).any():
            commit, more = str(shared.index[shared > 1][0]), int((shared > 1).sum()) - 1
            raise typer.BadParameter(
                f"the published layout has no series column, and commit {commit!r} is an alert in "
                f"{int(shared[commit])} series here" + (f" ({more:,} more commit{' is' if more == 1 else 's are'} too)" if more else "") +
                ": their rows could not be told apart; use --format csv (series_id first) or label one series "
                "at a time", param_hint="--format")
    if out is not None:
        # Written before anything is printed: a reader of the table that goes away (`| head -1`)
        # ends the command (exit 141), and the file asked for must not be lost with it.
        if fmt == "json":
            frame = decisions[list(OUTPUT_COLUMNS)].copy()
            frame[["p_false", "p_true"]] = frame[["p_false", "p_true"]].round(4)
            write_frame(frame, out, "json")
        else:
            write_decisions(decisions, out, fmt=fmt)
    cut = clf.threshold_ if threshold is None else threshold
    n_true = int((decisions["classification"] == "true_positive").sum())
    if len(decisions):
        if show:  # --show 0 in a script: the summary line only (it printed a table of headers and no row)
            console.print(decision_table(_with_step(decisions), count(len(decisions), {"untriaged": "untriaged candidate", "triaged": "triaged candidate", "all": "candidate"}[which]), show, extra=("label",),
                                         wide=console.width >= 110, width=console.width))
        console.print(f"{n_true:,} of {len(decisions):,} called true at threshold {cut:.3f}"
                      f"{_not_scorable_note(decisions['p_true'], cut)}", soft_wrap=True)
    else:
        # An empty table and "0 of 0 called true" said nothing of why.
        none = {"untriaged": "no untriaged candidate (not_triaged, under_investigation; "
                             "--which triaged checks the model on the triaged ones)",
                "triaged": "no triaged candidate (true_positive, false_positive)",
                "all": "no candidate (a label other than empty)"}[which]
        console.print(f"{escape(str(data))}: {none}; nothing to decide", soft_wrap=True)
    for ref, name in (("label", "human labels"), ("truth_label", "ground truth")):
        stats = agreement(decisions, ref)
        if stats["n"]:
            left_out = (f" ({stats['not_scorable']:,} not scorable left out: {NOT_SCORABLE_WHY})"
                        if stats["not_scorable"] else "")
            console.print(f"agreement with {name} on {stats['n']:,} candidates{left_out}: "
                          f"accuracy {stats['accuracy']:.3f}, "
                          f"sensitivity {stats['sensitivity']:.3f}, specificity {stats['specificity']:.3f}"
                          f"{in_sample_note(clf, data)}",
                          soft_wrap=True)
    if out is not None:
        console.print(f"decisions written to [bold]{output_name(out)}[/]", soft_wrap=True)
    fail_on(fail, decisions, err_console)


def score(
    data: Annotated[Path, typer.Option("--data", help=DATA_HELP)],
    candidates: Annotated[Path, typer.Option("--candidates", help="Candidates: `triage candidates` CSV or JSON lines, an Otava JSON/CSV report or a Perfherder alerts export (JSON/CSV); - = stdin.")],
    model: Annotated[str, typer.Option("--model", help=MODEL_HELP.replace("the bundled adaptive-window model", "the bundled scoring model, default-scoring: candidate-bounded windows"), envvar=MODEL_ENV)] = "default",
    out: Annotated[Path | None, typer.Option("--out", parser=output_file, help="File to write (atomically; - = stdout): the detector's fields plus p_false, p_true, classification, explanation, change_pct, change_kind.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv or json (JSON lines, one scored candidate per line).")] = "csv",
    target_recall: Annotated[float | None, typer.Option("--target-recall", help="Threshold reaching this recall on the triaged candidates of --data.")] = None,
    threshold: Annotated[float | None, typer.Option("--threshold", help="Fixed threshold on P(true) (default: the model's).")] = None,
    layout: Annotated[str, typer.Option("--layout", help="Candidate layout: auto, candidates, candidates-json, otava-json, otava-csv, perfherder-json, perfherder-csv.")] = "auto",
    explain_top: Annotated[int, typer.Option("--explain", help=EXPLAIN_HELP)] = 3,
    show: Annotated[int, typer.Option("--show", help="Rows to print, most likely true first (0: no table; the summary lines still print).")] = 20,
    n_jobs: Annotated[int, typer.Option("--n-jobs", help="Processes for feature extraction (-1 = all cores).")] = 1,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help=SCHEDULER_HELP)] = None,
    commit_order: Annotated[Path | None, typer.Option("--commit-order", help=COMMIT_ORDER_HELP + " The same file `triage candidates --commit-order` was given: its candidates' indices count in that order.")] = None,
    suppress: Annotated[int | None, typer.Option("--suppress-radius", help="Of the candidates called true within this many commits of each other, only the strongest stays true, the others are marked duplicates (one alert per change). Default: the model's (default-scoring: 10, chosen on validation data); 0 keeps every true call (two regressions a few commits apart).")] = None,
    newest_model: Annotated[str | None, typer.Option("--newest-model", help="Model for the candidates fewer than 13 commits from their series' end (a model directory or bundled name; none: --model scores them too). Default: the one --model's manifest names, if any (default-scoring names none; the bundled scoring-newest is trained for them). --threshold applies to it too; otherwise its own per-detector threshold.")] = None,
    aggregate: Aggregate = "mean",
    trim_warmup: TrimWarmup = "none",
    branch: Branch = None,
    fail: FailOn = "none",
) -> None:
    """Score detector candidates with P(true change) and a decision.

    With the bundled scoring model, of several candidates called true within
    10 commits of each other (its suppression radius; --suppress-radius)
    only the strongest stays true; the others are marked as duplicates (one
    alert per change).
    """
    from triage.cli.validation import (
        check_aggregation,
        check_int,
        check_n_jobs,
        check_number,
        check_output_not_input,
    )

    check_output_not_input(out, data, candidates, commit_order)
    check_text_table(out, "score")
    check_aggregation(aggregate, trim_warmup)
    fail = check_fail_on(fail)
    check_n_jobs(n_jobs)
    check_int("--explain", explain_top, low=0)
    check_int("--show", show, low=0)
    check_int("--suppress-radius", suppress, low=0)
    check_number("--threshold", threshold, low=0, high=1)
    check_number("--target-recall", target_recall, low=0, high=1, low_open=True)
    import pandas as pd

    from triage.candidate_files import read_candidates
    from triage.core.atomic import is_stdio, write_frame
    from triage.distributed import joblib_on
    from triage.inference import load_classifier
    from triage.loaders import load
    from triage.model_lookup import resolve_model
    from triage.readers.source import display_name, plain_file
    from triage.scoring import (
        default_threshold,
        newest_route,
        route_threshold,
        score_candidates,
        threshold_for_recall,
    )

    check_format(fmt)
    check_out_suffix(out, fmt)
    console = console_for(out)
    if is_stdio(data) and is_stdio(candidates):
        raise typer.BadParameter("--data and --candidates cannot both be - (one standard input)")
    if target_recall is not None and threshold is not None:
        raise typer.BadParameter("give --target-recall or --threshold, not both")
    check_option_applies("--commit-order", data, "auto", commit_order, ("long", "jsonl"),
                         "the long layout and JSON lines")
    clf = load_classifier(resolve_model(model, "scoring"))
    _check_scoring_features(clf)
    route = newest_route(clf, newest_model)
    dataset = load(data, commit_order=read_commit_order(commit_order), aggregate=aggregate, trim_warmup=trim_warmup,
                   branch=branch)
    with plain_file(candidates, directory_ok=False) as plain:
        table = read_candidates(plain, layout)
    # Placing the candidates comes later and names table.source: the user's file,
    # not the decompressed copy (gone by then).
    table.source = display_name(candidates)
    cut, how = default_threshold(clf, table)
    if target_recall is not None:
        cut, n = threshold_for_recall(dataset, clf, target_recall)
        how = f"recall {target_recall:g} on {n:,} triaged candidates of --data{in_sample_note(clf, data)}"
    elif threshold is not None:
        cut, how = threshold, "fixed"
    # the file's layout is news only when it is another tool's ("56 candidates (candidates)" read as a stutter)
    source = "" if table.layout == "candidates" else f" ({table.layout} file)"
    with console.status(f"scoring {len(table):,} candidates{source}"), joblib_on(scheduler, n_jobs) as jobs:
        scored = score_candidates(dataset, table, clf, threshold=cut, explain_top=explain_top, n_jobs=jobs,
                                  newest=route, newest_threshold=threshold, radius=suppress)
    n_true = int((scored["classification" if "triage_classification" not in scored else "triage_classification"] == "true_positive").sum())
    # Ours for the table, where the detector's file had a column of the same name (its own p_true):
    # renamed beside it, the table's sort met two columns called p_true (an internal error).
    ours = {f"triage_{c}": c for c in ("p_true", "classification", "explanation", "change_pct", "change_kind")
            if f"triage_{c}" in scored}
    view = scored.drop(columns=list(ours.values())).rename(columns=ours)
    if out is not None:
        # Written before anything is printed: a reader of the table that goes away (`| head -1`)
        # ends the command (exit 141), and the file asked for must not be lost with it.
        written = scored
        if fmt == "json":  # candidate files are read as text; JSON should carry their numbers as numbers
            written = scored.copy()
            for col in written.columns.difference(["series_id", "commit", "explanation", "classification"]):
                if written[col].dtype == object or pd.api.types.is_string_dtype(written[col]):
                    numbers = pd.to_numeric(written[col], errors="coerce")
                    if numbers.notna().sum() == (written[col].astype(str) != "").sum():
                        written[col] = numbers
        write_frame(written, out, fmt)
    if show:  # --show 0: the summary line only, as for label
        console.print(decision_table(_with_step(view), f"{count(len(scored), 'candidate')}{source}", show, extra=("index",),
                                     wide=console.width >= 110, width=console.width))
    console.print(f"{n_true:,} of {len(scored):,} called true at threshold {cut:.3f} ({how})"
                  f"{_not_scorable_note(scored['triage_p_true' if 'triage_p_true' in scored else 'p_true'], cut)}", soft_wrap=True)
    _repeats_note(console, scored)
    _recent_note(console, dataset, clf, scored, route,
                 None if route is None else route_threshold(route, table, threshold))
    if out is not None:
        console.print(f"scores written to [bold]{output_name(out)}[/]", soft_wrap=True)
    fail_on(fail, view, err_console)


def _repeats_note(console, scored) -> None:
    """Say how many distinct alerts there are when rows repeat one (a Perfherder alert in two summaries).

    Such a file is read row for row (each row keeps its summary), and "38 of 42
    called true" counted the repeated alerts twice.
    """
    if not {"series_id", "index"} <= set(scored.columns):
        return
    repeat = scored.duplicated(["series_id", "index"]).to_numpy()
    if not repeat.any():
        return
    call = scored["triage_classification" if "triage_classification" in scored else "classification"]
    n_true = int((call[~repeat] == "true_positive").sum())
    n = int(repeat.sum())
    console.print(f"{n:,} row{'s repeat' if n > 1 else ' repeats'} an alert of an earlier row (the same commit of "
                  f"the same series: an alert in two summaries): {int((~repeat).sum()):,} distinct alerts, "
                  f"{n_true:,} called true", soft_wrap=True)


def in_sample_note(clf, data: Path) -> str:
    """" (in-sample: ...)" when ``clf`` was trained on the file ``data`` (its manifest's source), else "".

    Its own training rows judged by it read as a check: 0.997 "agreement with human labels"
    for a model beside 0.626 for the bundled one, on rows only the first had learned from.
    """
    from triage.core.versions import file_sha256

    source = ((getattr(clf, "manifest_", None) or {}).get("extra") or {}).get("source") or {}
    trained_on = [str(v) for k in ("data", "labels") if isinstance(v := source.get(k), str) and v != "-"]
    if str(data) == "-" or not trained_on:
        return ""
    here = Path(data).resolve()  # resolved on both sides: x/../data or a symlink is the same file
    same_path = any(Path(p).resolve() == here for p in trained_on)
    # A copy under another name is the same data: by the digest the model recorded (the size first,
    # so that a file of another size is never read twice).
    same_bytes = (here.is_file() and source.get("data_bytes") == here.stat().st_size
                  and source.get("data_sha256") == file_sha256(here))
    if not (same_path or same_bytes):
        return ""
    return (" (in-sample: the model was trained on this file, so this is no check of it; judge it on series "
            "it never saw, as train's held-out figures do)")


def check_out_suffix(out: Path | None, fmt: str) -> None:
    """Refuse an ``--out`` whose name says the other of CSV and JSON lines than ``--format`` writes.

    ``--out cands.json`` without ``--format json`` got CSV text, which ``triage score``
    then read as JSON (by its name) and refused: "not valid JSON".
    """
    if out is None or str(out) == "-":
        return
    suffixes = [s.lower() for s in out.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if fmt == "json" and kind in (".csv", ".tsv"):
        raise typer.BadParameter(f"{out.name}: --format json writes JSON lines; name the file .jsonl, or give "
                                 "--format csv", param_hint="--out")
    if fmt != "json" and kind in (".json", ".jsonl", ".ndjson"):
        raise typer.BadParameter(f"{out.name}: --format {fmt} does not write JSON; give --format json for JSON "
                                 "lines, or name the file .csv", param_hint="--out")


def _not_scorable_note(p_true, cut: float) -> str:
    """`` (2 not scorable: no commit before the alert in its window)`` for the decisions without a P(true), or ``""``.

    Such an alert (:func:`triage.inference.not_scorable`: at its series'
    first commit or right after a confirmed change point) is called neither
    true nor false, except at threshold 0, which calls every alert true.
    """
    import pandas as pd

    from triage.inference import NOT_SCORABLE_WHY

    n = int(pd.to_numeric(p_true, errors="coerce").isna().sum())
    if not n:
        return ""
    return f" ({n:,} not scorable: {NOT_SCORABLE_WHY}" + (
        ", called true without P(true))" if cut <= 0.0 else ")")


def _check_scoring_features(clf) -> None:
    """Refuse a model whose pair_* / ctx_* columns `score` does not build for it (an online model).

    `score` computes them only for a model trained on candidate-bounded windows
    (its manifest says so, :func:`triage.inference.candidate_windowing`) and
    pair_* for an adaptive-window model trained with ``--shift-measures``; the
    online models get theirs from `triage detect`. Without this check the
    missing columns surface as an internal KeyError.
    """
    from triage.core.errors import InputError
    from triage.inference import candidate_windowing, model_features, shift_measures

    source = (getattr(clf, "manifest_", None) or {}).get("_path")
    honest = candidate_windowing(clf) or {}
    built = {"pair_": bool(honest.get("pair")) or shift_measures(clf), "ctx_": bool(honest.get("context"))}
    missing = [n for n in model_features(clf, source)
               if any(n.startswith(prefix) and not ok for prefix, ok in built.items())]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise InputError(source, None, f"this model needs features {shown}, which `triage score` builds only for a "
                         "model trained on candidate-bounded windows: an online model is for `triage detect` / `triage watch`; "
                         "score with default-scoring or an alerts model")


def _recent_note(console, dataset, clf, scored, route=None, route_cut: float | None = None) -> None:
    """Say how many candidates are too recent for the model to see their new level hold, and who scored them.

    With a newest-candidates model (``route``, :func:`triage.scoring.newest_route`):
    how many it scored. Without: how many of those called false the scoring
    model may have scored low for want of later commits.
    """
    from triage.features.candidate_context import HOLD_HORIZON
    from triage.inference import candidate_windowing
    from triage.scoring import near_end, too_recent_to_hold

    if scored.empty:
        return
    # where the candidates are in --data (a detector's own index, e.g. Otava's, is kept beside as given)
    series = scored["triage_series_id" if "triage_series_id" in scored else "series_id"].astype(str).to_numpy()
    index = scored["triage_index" if "triage_index" in scored else "index"].to_numpy()
    if route is not None:
        p_true = scored["triage_p_true" if "triage_p_true" in scored else "p_true"]
        # a not-scorable alert is left to no model (routed_rows)
        n = int((near_end(dataset, series, index, route.horizon) & p_true.notna().to_numpy()).sum())
        if n:
            console.print(f"{n:,} of the candidates lie{'s' if n == 1 else ''} fewer than {route.horizon} commits "
                          f"from the end of {'its' if n == 1 else 'their'} series: scored by the newest-candidates "
                          f"model {route.name} at its threshold {route_cut or 0.0:.3f} (trained on such candidates; "
                          "--newest-model none scores them with --model)", soft_wrap=True)
        return
    called = scored["triage_classification" if "triage_classification" in scored else "classification"]
    recent = too_recent_to_hold(dataset, clf, series, index)
    n = int((recent & (called != "true_positive").to_numpy()).sum())
    if n:
        console.print(f"{n:,} of the candidates not called true lie{'s' if n == 1 else ''} fewer than {HOLD_HORIZON} "
                      f"commits from the end of {'its' if n == 1 else 'their'} series: too recent to see the new level "
                      "hold, which this model scores low whatever the step's size; score again when more commits "
                      "have arrived" + ("" if candidate_windowing(clf) is None else
                                        ", or with --newest-model scoring-newest (trained on such candidates)"),
                      soft_wrap=True)


def report(
    data: Annotated[Path, typer.Option("--data", help=DATA_HELP)],
    decisions: Annotated[Path, typer.Option("--decisions", help="Decisions from `triage label` or `triage score`: CSV or JSON lines, compressed or not (- = stdin).")],
    out: Annotated[Path, typer.Option("--out", help="Report directory (index.html + plots/): a new or empty directory, or an earlier report (marked by its .triage-report file), replaced atomically.")],
    candidates: Annotated[Path | None, typer.Option("--candidates", help="Detector candidates to draw (any layout `triage score` reads).")] = None,
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "Change-point triage report",
    max_plots: Annotated[int, typer.Option("--max-plots", help="Plot at most this many series (most likely true alerts first).")] = 100,
    commit_order: Annotated[Path | None, typer.Option("--commit-order", help=COMMIT_ORDER_HELP + " The same file the candidates were found with.")] = None,
    aggregate: Aggregate = "mean",
    trim_warmup: TrimWarmup = "none",
    branch: Branch = None,
) -> None:
    """Write a static HTML report: a summary table (most likely true first) and a plot per series."""
    from triage.cli.validation import (
        check_aggregation,
        check_folder_not_stdout,
        check_int,
        check_not_in_model_dir,
    )
    from triage.loaders import load

    check_aggregation(aggregate, trim_warmup)
    check_int("--max-plots", max_plots, low=0)
    check_folder_not_stdout("--out", out)  # a file in the way is named below, with what it is
    check_not_in_model_dir("--out", out)
    if sum(str(p) == "-" for p in (data, decisions, candidates)) > 1:
        raise typer.BadParameter("only one of --data, --decisions and --candidates can be - (one standard input)")
    from triage.readers.source import plain_file
    from triage.report import build_report, candidate_points, check_inputs_outside, read_decisions

    check_inputs_outside(out, {"--data": data, "--decisions": decisions, "--candidates": candidates})
    check_option_applies("--commit-order", data, "auto", commit_order, ("long", "jsonl"),
                         "the long layout and JSON lines")
    dataset = load(data, commit_order=read_commit_order(commit_order), aggregate=aggregate, trim_warmup=trim_warmup,
                   branch=branch)
    # Compressed by their bytes, like every input; errors name the file given.
    with plain_file(decisions, directory_ok=False) as plain:
        frame = read_decisions(plain, dataset)
    points = None
    if candidates is not None:
        with plain_file(candidates, directory_ok=False) as plain:
            points = candidate_points(plain, dataset)
    n_plots = min(max_plots, len(set(frame["series_id"]) | set(points or {})))
    with JobProgress("report", n_plots, "plots") as progress:
        named = [("decisions", decisions), *([("candidates", candidates)] if candidates is not None else [])]
        page = build_report(dataset, frame, out, candidates=points, title=title, max_plots=max_plots,
                            progress=progress.advance,
                            inputs=[(what, "<stdin>" if str(f) == "-" else str(f)) for what, f in named])
    console.print(f"report written to [bold]{escape(str(page))}[/] ({len(frame):,} decision{'' if len(frame) == 1 else 's'})",
                  soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("label")(label)
    app.command("score")(score)
    app.command("report")(report)


def _with_step(frame):
    """``frame`` with the table's ``step`` cell (``regression +12.3%``) from its change_pct / change_kind columns.

    A not-scorable row gets none: "regression +19.8%: not scorable" read as a verdict.
    """
    from triage.inference import NOT_SCORABLE
    from triage.steps import cell_text

    if "change_kind" not in frame:
        return frame
    cells = [cell_text(p, k) if c != NOT_SCORABLE else ""
             for p, k, c in zip(frame["change_pct"], frame["change_kind"], frame["classification"], strict=True)]
    return frame.assign(step=cells)
