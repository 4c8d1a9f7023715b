"""Data commands: generate synthetic histories, summarise a dataset, plot a series, the demo."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from triage.cli.options import (
    AGGREGATE_HELP,
    BRANCH_HELP,
    COMMIT_ORDER_HELP,
    TRIM_WARMUP_HELP,
    read_commit_order,
)
from triage.cli.tables import console_for, count, dataset_summary, dataset_summary_rows, output_name
from triage.cli.validation import check_table_suffix, output_file
from triage.core.errors import InputError
from triage.loaders import LAYOUTS, load

console = Console()

DATA_HELP = (
    "Dataset: long CSV/Parquet, MongoDB demo CSV, Otava CSV / directory / YAML config, asv results "
    "directory, github-action-benchmark data.js, Perfherder performance JSON, JMH / Google Benchmark JSON results, JSON list; "
    "gzip/zstd compressed or - for stdin (README: Input formats)."
)
ALERTS_HELP = "Perfherder alerts export (JSON) labelling Perfherder performance data."
# Every command that loads timestamped rows takes it: the loader's error advises it.
SORT_HELP = ("Sort rows by timestamp (with a warning) instead of failing; a commit measured more than once "
             "stands at its earliest timestamp.")


def _check_layout_options(data: Path, layout: str, alerts: Path | None, commit_order: Path | None) -> None:
    from triage.cli.validation import check_option_applies
    from triage.core.atomic import is_stdio

    if alerts is not None and is_stdio(alerts) and is_stdio(data):
        # The data would take all of it, and the alerts read as "file is empty".
        raise typer.BadParameter("only one of --data and --alerts can be - (one standard input)", param_hint="--alerts")
    check_option_applies("--alerts", data, layout, alerts, ("perfherder",), "Perfherder performance data")
    check_option_applies("--commit-order", data, layout, commit_order, ("long", "jsonl"),
                         "the long layout and JSON lines")


def _check_synth_folder(out: Path) -> None:
    """Refuse a folder holding a ``history.*`` or ``dataset.json`` that ``synth`` did not write.

    ``synth`` replaces ``dataset.json`` and ``history.<format>`` and deletes
    the other format's history (it would shadow the new one): in a folder of
    the user's own data that lost their files without a word.
    """
    names = ("history.parquet", "history.csv", "dataset.json")
    if not out.is_dir() or not any((out / name).exists() for name in names):
        return
    try:
        meta = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if not (isinstance(meta, dict) and meta.get("generator") == "triage.synthetic"):
        found = ", ".join(name for name in names if (out / name).exists())
        raise typer.BadParameter(
            f"{out} holds {found} not written by `triage synth` (no synth dataset.json); "
            "give a new or empty folder, or one synth wrote",
            param_hint="--out",
        )
    # A synth folder may still hold a history synth did not write: the user's own file copied
    # in beside synth's, or synth's edited since. dataset.json records the digest of the one
    # it wrote; any other would be replaced or deleted (a walkthrough lost a copied-in
    # history.csv to the next `synth --out` of the folder).
    digest = meta.get("history_sha256")
    if isinstance(digest, str):
        from triage.core.versions import file_sha256

        for name in names[:2]:
            path = out / name
            if path.is_file() and file_sha256(path) != digest:
                raise typer.BadParameter(
                    f"{path} is not the history `triage synth` wrote there (its digest differs from the one "
                    "dataset.json records: another file, or changed since); move it, or give another folder",
                    param_hint="--out",
                )


def _check_not_a_model_dir(out: Path) -> None:
    """Refuse an ``--out`` folder that is, or lies inside, a model directory.

    ``check_output_dir`` looks only above the folder (``train --out`` may replace a
    model); files written into one fail its checksums and the model no longer loads.
    """
    from triage.cli.validation import check_not_in_model_dir
    from triage.training.model_dirs import is_model_dir

    check_not_in_model_dir("--out", out)
    if is_model_dir(out):
        raise typer.BadParameter(f"{out} is a model directory: its files would fail its checksums "
                                 "and the model would no longer load; give another folder", param_hint="--out")


def synth(
    out: Path = typer.Option(
        ..., "--out", help="Directory to write history.<format> and dataset.json into."
    ),
    preset: str = typer.Option(
        "small",
        help="Preset: small (tests, demo), default (the benchmark) or realnoise (noise fitted to real histories; bundled models).",
    ),
    seed: int = typer.Option(0, help="Random seed; the same preset and seed give the same rows."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or csv."),
) -> None:
    """Generate a synthetic dataset with ground truth in the long layout."""
    from triage.cli.validation import check_choice, check_int, check_output_dir
    from triage.synthetic import PRESETS, write_synthetic

    check_int("--seed", seed, low=0, high=2**32 - 1)
    # bad options are usage errors naming the option, like every other command's
    check_choice("--preset", preset, tuple(PRESETS))
    check_choice("--format", fmt, ("parquet", "csv"))
    check_output_dir("--out", out)
    _check_not_a_model_dir(out)
    _check_synth_folder(out)
    with console.status(f"generating preset {preset!r} (seed {seed})"):
        path = write_synthetic(out, preset, seed, fmt=fmt)
    _print_summary(load(path), title=f"Synthetic preset {preset!r}, seed {seed}: {path}")


def _print_summary(dataset, title: str | None = None) -> None:
    """:func:`dataset_summary` with its title whole.

    The table is only as wide as its figures (35 columns), and rich breaks a
    longer title inside words to fit (``/work/shared/data/real/histories.cs``,
    then ``v.gz``). A title that fits the terminal widens the table to it;
    a longer one is printed above the table as one line (the terminal wraps
    it, and a path copied from it stays whole).
    """
    table = dataset_summary(dataset, title=title)
    heading = table.title
    length = len(heading.plain if isinstance(heading, Text) else str(heading or ""))
    if length + 4 <= console.width:
        table.min_width = length + 4
    else:
        console.print(heading, soft_wrap=True)
        table.title = None
    console.print(table)


def summary(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    aggregate: str = typer.Option("mean", help=AGGREGATE_HELP),
    sort_timestamps: bool = typer.Option(False, "--sort-timestamps", help=SORT_HELP),
    trim_warmup: str = typer.Option(
        "none",
        "--trim-warmup",
        help=TRIM_WARMUP_HELP,
    ),
    branch: str = typer.Option(None, "--branch", help=BRANCH_HELP),
    alerts: Path = typer.Option(None, "--alerts", help=ALERTS_HELP),
    commit_order: Path = typer.Option(None, "--commit-order", help=COMMIT_ORDER_HELP),
    fmt: str = typer.Option(
        "table", "--format", help="table (default) or json (one object on stdout)."
    ),
) -> None:
    """Load a dataset and print series, commits and candidates by label."""
    from triage.cli.validation import check_aggregation

    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"must be table or json, got {fmt!r}", param_hint="--format")
    check_aggregation(aggregate, trim_warmup)
    _check_layout_options(data, layout, alerts, commit_order)
    dataset = load(
        data,
        layout=layout,
        aggregate=aggregate,
        sort_timestamps=sort_timestamps,
        trim_warmup=trim_warmup,
        branch=branch,
        alerts=alerts,
        commit_order=read_commit_order(commit_order),
    )
    if fmt == "json":
        typer.echo(json.dumps({"source": dataset.source, **dataset_summary_rows(dataset)}))
        return
    _print_summary(dataset)


def convert(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    out: Path = typer.Option(
        ...,
        "--out",
        parser=output_file,
        help="Long-layout file to write: .csv (.csv.gz, .csv.zst compressed), .parquet or - (CSV on stdout).",
    ),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    aggregate: str = typer.Option("mean", help=AGGREGATE_HELP),
    trim_warmup: str = typer.Option(
        "none",
        "--trim-warmup",
        help=TRIM_WARMUP_HELP,
    ),
    branch: str = typer.Option(None, "--branch", help=BRANCH_HELP),
    alerts: Path = typer.Option(None, "--alerts", help=ALERTS_HELP),
    commit_order: Path = typer.Option(None, "--commit-order", help=COMMIT_ORDER_HELP),
    sort_timestamps: bool = typer.Option(False, "--sort-timestamps", help=SORT_HELP),
) -> None:
    """Write any readable input in the long layout, one value per commit (e.g. Perfherder data + alerts -> labelled training data)."""
    from triage.cli.validation import check_aggregation, check_output_not_input

    check_aggregation(aggregate, trim_warmup)
    check_output_not_input(out, data, alerts, commit_order)
    check_table_suffix(out, "convert writes a long CSV")
    _check_layout_options(data, layout, alerts, commit_order)
    from triage.loaders import write_long

    dataset = load(
        data,
        layout=layout,
        aggregate=aggregate,
        sort_timestamps=sort_timestamps,
        branch=branch,
        alerts=alerts,
        trim_warmup=trim_warmup,
        commit_order=read_commit_order(commit_order),
    )
    written = write_long(dataset, out)
    console_for(out).print(
        f"{count(len(dataset), 'series', 'series')}, {count(dataset.n_commits(), 'commit')} -> {output_name(written)}",
        highlight=False,
    )


def plot(
    data: Path = typer.Option(..., "--data", help=DATA_HELP),
    out: Path = typer.Option(..., "--out", parser=output_file, help="PNG file to write."),
    series: str = typer.Option(None, "--series", help="Series id (default: the first series)."),
    layout: str = typer.Option("auto", help=f"One of {', '.join(LAYOUTS)}."),
    sort_timestamps: bool = typer.Option(False, "--sort-timestamps", help=SORT_HELP),
) -> None:
    """Render one series with its true change points and candidates as a PNG."""
    from triage.cli.validation import check_choice, check_output_not_input

    check_output_not_input(out, data)
    if str(out) == "-":  # it was "must be one of .png, got ''", which told a pipeline user nothing
        raise typer.BadParameter("plot writes a .png file, not standard output ('-'): name a file", param_hint="--out")
    # plot_history writes PNG whatever the name: a .svg or .pdf would hold PNG bytes.
    check_choice("--out", out.suffix.lower(), (".png",))
    from triage.plotting import plot_history

    dataset = load(data, layout=layout, sort_timestamps=sort_timestamps)
    if series is None:
        history = next(iter(dataset))
    elif series in dataset:
        history = dataset[series]
    else:
        # Real series ids are long (benchmark/machine/environment): name the likely ones.
        near = difflib.get_close_matches(series, [h.series_id for h in dataset], n=3)
        hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
        raise InputError(
            data, None, f"unknown series {series!r} (the file has {len(dataset)} series){hint}"
        )
    plot_history(history, out)
    # A file name is text, not rich markup ('x[red]y.png' lost its brackets, 'z[/]w.png' was an
    # internal error after the PNG was written); soft_wrap keeps a long path whole.
    console.print(f"wrote {escape(str(out))}", highlight=False, soft_wrap=True)


def demo(
    out: Path = typer.Option(Path("demo-out"), "--out", help="Directory for the demo's files."),
    seed: int = typer.Option(
        2026, help="Seed of the synthetic data (the bundled models were trained on seed 0)."
    ),
) -> None:
    """Every job once: synthetic data, bundled models, batch labelling, scoring, online loop, report."""
    from triage.cli.demo import run_demo
    from triage.cli.validation import check_int

    # as synth checks it: a negative seed was an internal error from numpy, exit 1
    check_int("--seed", seed, low=0, high=2**32 - 1)
    _check_not_a_model_dir(out)
    run_demo(out, seed=seed, console=console)


def register(app: typer.Typer) -> None:
    app.command("synth")(synth)
    app.command("summary")(summary)
    app.command("convert")(convert)
    app.command("plot")(plot)
    app.command("demo")(demo)
