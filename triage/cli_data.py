"""Data commands: summary of a dataset (synth, plot and demo join here)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from triage.loaders import LAYOUTS, load
from triage.tables import dataset_summary

console = Console()


def summary(
    data: Path = typer.Option(..., "--data", help="Dataset file or directory (any supported layout)."),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    aggregate: str = typer.Option("mean", help="Statistic for several measurements per commit: mean, median, p90."),
    sort_timestamps: bool = typer.Option(False, "--sort-timestamps", help="Sort rows by timestamp (with a warning) instead of failing."),
) -> None:
    """Load a dataset and print series, commits and candidates by label."""
    dataset = load(data, layout=layout, aggregate=aggregate, sort_timestamps=sort_timestamps)
    console.print(dataset_summary(dataset))


def register(app: typer.Typer) -> None:
    app.command("summary")(summary)
