"""Detector commands: run a statistical detector over a dataset to produce candidates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from triage.cli.options import (
    AGGREGATE_HELP,
    BRANCH_HELP,
    COMMIT_ORDER_HELP,
    DATA_HELP,
    TRIM_WARMUP_HELP,
    read_commit_order,
    refuse_repeated_keys,
)
from triage.cli.progress import JobProgress
from triage.cli.tables import check_format, console_for, count, output_name
from triage.cli.validation import check_option_applies, check_text_table, output_file
from triage.core.atomic import write_frame
from triage.core.history import Dataset
from triage.loaders import LAYOUTS, load

console = Console()

#: Leading columns of a candidate CSV; detector-specific fields follow.
CANDIDATE_COLUMNS = ("series_id", "commit", "index", "detector", "score")


def candidates_frame(
    dataset: Dataset,
    detector_name: str,
    params: dict | None = None,
    progress: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Run detector ``detector_name`` on every series; one row per change point.

    Columns: ``series_id, commit, index, detector, score`` then the detector's
    fields (see each detector's docstring), in first-seen order.
    ``progress(1)`` is called after each series.
    """
    from triage.detectors import make

    rows: list[dict] = []
    for history in dataset:
        det = make(detector_name, **(params or {}))
        values = history.values
        try:
            cps = det.detect(values)
        except ValueError as exc:  # the command reports it as a bad parameter: name the series too
            raise ValueError(f"detector {detector_name!r} failed on series {history.series_id!r} "
                             f"({len(values)} commits): {exc}") from exc
        for cp in cps:
            row = {
                "series_id": history.series_id,
                "commit": history.commits[cp.index],
                "index": cp.index,
                "detector": detector_name,
                "score": cp.score,
            }
            row.update({k: v for k, v in cp.fields.items() if k not in row})
            rows.append(row)
        if progress is not None:
            progress(1)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(CANDIDATE_COLUMNS))
    return frame


def candidates(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    detector: str = typer.Option(..., "--detector", help="Detector name (list them with `triage detectors`)."),
    param: list[str] = typer.Option(
        [], "--param", help="Detector parameter key=value (repeatable); see `triage detectors`."
    ),
    out: Path = typer.Option(..., "--out", parser=output_file, help="Candidate file to write (- = stdout)."),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    aggregate: str = typer.Option("mean", help=AGGREGATE_HELP),
    trim_warmup: str = typer.Option("none", "--trim-warmup", help=TRIM_WARMUP_HELP),
    fmt: str = typer.Option("csv", "--format", help="csv or json (JSON lines, one candidate per line)."),
    branch: str = typer.Option(None, "--branch", help=BRANCH_HELP),
    commit_order: Path = typer.Option(None, "--commit-order", help=COMMIT_ORDER_HELP),
    scheduler: str = typer.Option(None, "--scheduler", help="Run on a dask cluster, partitioned by series: local (a LocalCluster on this machine) or a scheduler address (tcp://host:8786)."),
) -> None:
    """Run a change-point detector on every series and write the candidates as CSV or JSON lines."""
    from triage.cli.alerts import check_out_suffix
    from triage.cli.validation import check_aggregation, check_output_not_input

    check_output_not_input(out, data)
    check_text_table(out, "candidates")
    check_aggregation(aggregate, trim_warmup)
    refuse_repeated_keys("--param", param)
    # scipy.stats and ruptures take seconds to import: only when a detector runs.
    from triage.detectors import make, names, parse_params
    from triage.distributed import map_frames

    try:
        params = parse_params(detector, param)
        make(detector, **params)  # constructor-level errors before loading data
    except ValueError as exc:
        # the option at fault, as every other usage error names it (was "Invalid value: unknown detector")
        raise typer.BadParameter(str(exc), param_hint="--detector" if detector not in names() else "--param") from None
    check_format(fmt)
    check_out_suffix(out, fmt)
    say = console_for(out)
    check_option_applies("--commit-order", data, layout, commit_order, ("long", "jsonl"),
                         "the long layout and JSON lines")
    dataset = load(data, layout=layout, aggregate=aggregate, trim_warmup=trim_warmup, branch=branch,
                   commit_order=read_commit_order(commit_order))
    from triage.core.errors import InputError

    try:
        with JobProgress(f"candidates ({detector})", len(dataset), "series") as progress:
            frame = (candidates_frame(dataset, detector, params, progress=progress.advance) if scheduler is None
                     else map_frames(candidates_frame, dataset, scheduler, detector, params))
    except InputError:  # a ValueError too, but the data's or the cluster's (--scheduler), not --param's
        raise
    except ValueError as exc:  # a parameter value the detector rejects when it runs
        raise typer.BadParameter(str(exc), param_hint="--param") from None
    write_frame(frame, out, fmt)
    # soft_wrap: rich would break a long --out path at 80 columns, and a log reader could not copy it.
    say.print(f"{count(len(frame), 'candidate')} from {detector} on {count(len(dataset), 'series', 'series')} -> {output_name(out)}",
              highlight=False, soft_wrap=True)


def list_detectors() -> None:
    """List the detectors and their default parameters."""
    from triage.core.params import as_text
    from triage.detectors import defaults, names

    # Folded, never cut: at COLUMNS=40 "min_back_window=12," read "min_back_window…" (the value lost)
    # and "mozilla_or_ensemble" read "mozilla_or_ensem…", a name `--detector` then refused.
    table = Table()
    table.add_column("detector", overflow="fold")
    table.add_column("default parameters", overflow="fold")
    for name in names():
        # Written as --param takes them: members=perfherder,hybrid_welch,... (always= : none).
        table.add_row(name, "; ".join(f"{k}={as_text(v)}" for k, v in defaults(name).items()))
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("candidates")(candidates)
    app.command("detectors")(list_detectors)
