"""Feature commands: ``triage select-features`` (genetic subset selection)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from triage.cli.options import DATA_HELP, parse_window
from triage.cli.progress import JobProgress
from triage.cli.tables import console_for, writes_stdout
from triage.cli.validation import output_file
from triage.core.errors import InputError
from triage.loaders import load


def select_features_command(
    data: Annotated[Path, typer.Option("--data", help=DATA_HELP)],
    out: Annotated[Path, typer.Option("--out", parser=output_file, help="Feature-set JSON file to write (- = stdout).")],
    window: Annotated[str, typer.Option(help="Pre/After window: 'adaptive' or a number of commits.")] = "adaptive",
    metric: Annotated[str, typer.Option(help="Fitness: accuracy or auc (grouped cross-validation).")] = "accuracy",
    population: Annotated[int, typer.Option(min=2, help="Individuals per generation.")] = 200,
    generations: Annotated[int, typer.Option(min=0, help="Most generations evolved.")] = 71,
    patience: Annotated[int, typer.Option(min=1, help="Stop after this many generations without a better score.")] = 10,
    unit: Annotated[str, typer.Option(help="Gene = one feature 'column' or one 'characteristic' (pre and after together).")] = "column",
    folds: Annotated[int, typer.Option(min=2, help="Cross-validation folds, grouped by series (at most one per series: fewer series, fewer folds).")] = 5,
    trees: Annotated[int, typer.Option(min=1, help="Trees per random forest.")] = 100,
    seed: Annotated[int, typer.Option(help="Random seed (the run is reproducible).")] = 0,
    n_jobs: Annotated[int, typer.Option("--n-jobs", help="Parallel fitness evaluations (-1 = all cores).")] = 1,
) -> None:
    """Choose the feature subset with a genetic algorithm (Bauer et al., ICPE 2022)."""
    from triage.cli.validation import check_choice, check_int, check_n_jobs, check_output_not_input

    # With --out - (or /dev/stdout) the JSON goes to stdout: the progress and the
    # summary lines go to stderr, or `> fs.json` would hold them too.
    console = console_for(out)
    check_output_not_input(out, data)
    check_n_jobs(n_jobs)
    check_int("--seed", seed, low=0, high=2**32 - 1)  # numpy's range, checked before the extraction
    # Imported here so that `triage --help` stays fast.
    from triage.features.extract import extract_features
    from triage.features.feature_sets import METRICS, save_feature_set
    from triage.features.selection import UNITS, GeneticSelector, select_features

    check_choice("--metric", metric, tuple(METRICS))  # the options named, as every bad option is
    check_choice("--unit", unit, tuple(UNITS))

    selector = GeneticSelector(
        population=population,
        generations=generations,
        patience=patience,
        metric=metric,
        unit=unit,
        n_splits=folds,
        n_estimators=trees,
        seed=seed,
        n_jobs=n_jobs,
    )
    try:
        selector.check_params()
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    window_value = parse_window(window)
    dataset = load(data)
    with console.status("extracting features"):
        try:
            frame = extract_features(dataset, window=window_value, n_jobs=n_jobs)
        except InputError as exc:
            raise exc.located(data) from None
        except ValueError as exc:
            raise InputError(data, None, str(exc)) from None
    with _generations_progress(generations) as on_generation:
        try:
            feature_set = select_features(frame, selector=selector, callback=on_generation)
        except InputError as exc:
            raise exc.located(data) from None
        except ValueError as exc:
            raise InputError(data, None, str(exc)) from None
    feature_set.extra["window"] = window
    from triage.features.matrix import left_out_note

    if note := left_out_note(feature_set.extra.get("not_scorable_left_out") or {}):
        Console(stderr=True).print(f"note: {data}: {note}", markup=False, highlight=False, soft_wrap=True)
    save_feature_set(feature_set, out)
    where = "standard output" if writes_stdout(out) else str(out)
    console.print(
        f"{len(feature_set.names)} of {feature_set.extra['n_columns']} columns, "
        f"{feature_set.metric} {feature_set.fitness:.4f} after {feature_set.generations} "
        f"generation{'' if feature_set.generations == 1 else 's'} "
        f"({feature_set.n_evaluated} subsets evaluated) -> {where}",
        markup=False,  # the path as it is: brackets in a file name are not markup
        soft_wrap=True,
    )
    console.print(", ".join(feature_set.names), highlight=False)


@contextmanager
def _generations_progress(generations: int) -> Iterator[Callable[[int, int, float, int], None]]:
    """The genetic search's progress on stderr: on a terminal a bar with the best fitness so far,
    elsewhere :class:`JobProgress`'s plain line per tenth. A rich bar on a pipe or a CI log was
    printed once, drawn, at the end, and on stdout unless --out was standard output."""
    err = Console(stderr=True)
    if not err.is_interactive:
        with JobProgress("select-features", generations, "generations", console=err) as plain:
            yield lambda gen, total, best, n_eval: plain.advance(gen - plain.done)
        return
    bar = Progress(
        TextColumn("[bold]generation"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("best {task.fields[best]:.4f}  subsets {task.fields[n_eval]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    with bar:
        task = bar.add_task("ga", total=generations, best=0.0, n_eval=0)
        yield lambda gen, total, best, n_eval: bar.update(task, completed=gen, best=best, n_eval=n_eval)


def register(app: typer.Typer) -> None:
    app.command("select-features")(select_features_command)
