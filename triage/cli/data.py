"""Data commands: generate synthetic histories, summarise a dataset, plot a series, the demo."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from triage.cli.tables import dataset_summary
from triage.core.errors import InputError
from triage.loaders import LAYOUTS, load

console = Console()

DATA_HELP = "Dataset file or directory (long CSV/Parquet, MongoDB demo CSV, Otava CSV, JSON list)."


def synth(
    out: Path = typer.Option(..., "--out", help="Directory to write history.<format> and dataset.json into."),
    preset: str = typer.Option("small", help="Preset: small (tests, demo), default (the benchmark) or realnoise (noise fitted to real histories; bundled models)."),
    seed: int = typer.Option(0, help="Random seed; the same preset and seed give the same rows."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or csv."),
) -> None:
    """Generate a synthetic dataset with ground truth in the long layout."""
    from triage.synthetic import PRESETS, write_synthetic

    if preset not in PRESETS:
        raise InputError(None, None, f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    if fmt not in ("parquet", "csv"):
        raise InputError(None, None, f"unknown format {fmt!r} (use parquet or csv)")
    with console.status(f"generating preset {preset!r} (seed {seed})"):
        path = write_synthetic(out, preset, seed, fmt=fmt)
    console.print(dataset_summary(load(path), title=f"Synthetic preset {preset!r}, seed {seed}: {path}"))


def summary(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    aggregate: str = typer.Option("mean", help="Statistic for several measurements per commit: mean, median, p90."),
    sort_timestamps: bool = typer.Option(False, "--sort-timestamps", help="Sort rows by timestamp (with a warning) instead of failing."),
    trim_warmup: str = typer.Option("none", "--trim-warmup", help="Aggregate only the steady part of each commit's measurements: kbkssd, cpssd or none."),
) -> None:
    """Load a dataset and print series, commits and candidates by label."""
    dataset = load(data, layout=layout, aggregate=aggregate, sort_timestamps=sort_timestamps, trim_warmup=trim_warmup)
    console.print(dataset_summary(dataset))


def plot(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    out: Path = typer.Option(..., "--out", help="PNG file to write."),
    series: str = typer.Option(None, "--series", help="Series id (default: the first series)."),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
) -> None:
    """Render one series with its true change points and candidates as a PNG."""
    from triage.plotting import plot_history

    dataset = load(data, layout=layout)
    if series is None:
        history = next(iter(dataset))
    elif series in dataset:
        history = dataset[series]
    else:
        raise InputError(data, None, f"unknown series {series!r} (the file has {len(dataset)} series)")
    plot_history(history, out)
    console.print(f"wrote {out}")


def demo(
    out: Path = typer.Option(Path("demo-out"), "--out", help="Directory for the demo's files."),
    seed: int = typer.Option(2026, help="Seed of the synthetic data (the bundled models were trained on seed 0)."),
) -> None:
    """Every job once: synthetic data, bundled models, batch labelling, scoring, online loop, report."""
    from triage.cli.demo import run_demo

    run_demo(out, seed=seed, console=console)


def register(app: typer.Typer) -> None:
    app.command("synth")(synth)
    app.command("summary")(summary)
    app.command("plot")(plot)
    app.command("demo")(demo)
