"""The two ends of the pipeline around triage: warm-up trimming going in, targeted measurements going out.

``triage steady``   JMH / Google Benchmark JSON results -> the long layout of steady iterations (KB-KSSD / CP-SSD per fork)
``triage sample``   the next commits to measure, with the estimated history and its band (GP)
``triage culprit``  the commits to measure to localise a change between two measured commits
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from triage.cli.tables import console_for, count, distinct_numbers, writes_stdout
from triage.cli.validation import (
    check_choice,
    check_output_not_input,
    check_table_suffix,
    output_file,
)
from triage.core.atomic import destination, is_stdio, write_csv_atomic, write_table_atomic
from triage.core.errors import InputError
from triage.core.values import value_problem

console = Console()
#: Most series `triage steady`'s table shows (the CSV of --starts has every fork).
STEADY_ROWS = 40
#: Most never-steady forks `triage steady` names after its table.
NEVER_ROWS = 5

PARTIAL_HELP = (
    "CSV with commit,value (optional series_id), one row per commit in history order; empty value = "
    "not measured; gzip/zstd compressed or - for stdin."
)


def steady(
    files: list[Path] = typer.Argument(
        ...,
        help="JMH or Google Benchmark JSON result files (or JSON arrays of runs: arrays of iteration values; gzip/zstd compressed or not), one per commit, in history order.",
    ),
    out: Path = typer.Option(
        ..., "--out", parser=output_file, help="Long-layout CSV of the steady iterations to write (Parquet for a .parquet name; - = stdout)."
    ),
    # cpssd by default: on generated JMH-like histories its commit values spread least and
    # perfherder finds the most changes in them (BENCHMARKS.md, "Warm-up trimming for the detectors").
    method: str = typer.Option(
        "cpssd", "--trim-warmup",
        help="cpssd (Traini et al.; the default: the steadiest commit values in this project's benchmark), "
             "kbkssd (Beseda et al.), kstep or none.",
    ),
    commits: str = typer.Option(
        None, "--commits", help="Comma-separated commit ids (default: the file names' stems); one id given to "
        "several files in a row pools them as re-runs of that commit."
    ),
    starts_out: Path = typer.Option(
        None,
        "--starts",
        parser=output_file,
        help="CSV (Parquet for a .parquet name) to write: series_id, commit, fork, iterations, steady_start (empty: never steady), cut (iterations left out: the steady start; for a fork never steady the median start of its series' steady forks, 0 if none) per run.",
    ),
    series: str = typer.Option(
        None,
        "--series",
        help="Series id of the files that are arrays of runs (default: each file's stem, i.e. one series per file).",
    ),
) -> None:
    """Cut each JMH fork (each Google Benchmark run, each run of a JSON array of runs) to its steady state and write the long layout."""
    from triage.cli.tables import writes_stdout
    from triage.readers.jmh import SameStem, steady_long
    from triage.steady_state import CHOICES, NONE, make, too_short_note

    # Any case, as convert and summary take it (steady_state.make lowers it too).
    method = check_choice("--trim-warmup", method.strip().lower(), CHOICES)
    check_output_not_input(out, *files)
    check_output_not_input(starts_out, *files, option="--starts")
    # It wrote CSV text under any name: st.parquet and st.json were files no reader took.
    check_table_suffix(out, "steady writes a long CSV")
    if starts_out is not None:
        check_table_suffix(starts_out, "--starts writes a CSV", option="--starts")
    if starts_out is not None and (
        (writes_stdout(out) and writes_stdout(starts_out))
        or (str(starts_out) != "-" and Path(starts_out).resolve() == Path(out).resolve())
    ):
        raise typer.BadParameter("--starts and --out name the same file", param_hint="--starts")
    if series is not None and not series.strip():
        raise typer.BadParameter("the series id is empty", param_hint="--series")
    if series is not None:
        # Written as typed (" parse ", a quoted shell variable), where every reader strips ids.
        series = series.strip()
    ids = [c.strip() for c in commits.split(",")] if commits else None
    given_stdin = [f for f in files if str(f) == "-"]
    if len(given_stdin) > 1:
        raise typer.BadParameter("- (standard input) can be read only once", param_hint="FILES")
    if given_stdin and ids is None:
        # The commit id is the file's stem by default; standard input has none ("-").
        raise typer.BadParameter(
            "- (standard input) has no file name to take its commit id from: give it with --commits",
            param_hint="FILES",
        )
    if ids is not None and "" in ids:
        raise typer.BadParameter(
            f"commit id {ids.index('') + 1} of {len(ids)} is empty", param_hint="--commits"
        )
    # Both places checked before any work: a --starts that cannot be written
    # (a directory, under a file) must not leave --out already replaced.
    for target in (out, starts_out):
        if target is not None:
            destination(target)
    try:
        long, starts = steady_long(files, ids, trim_warmup=method, runs_series=series)
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        if ids:
            raise typer.BadParameter(str(exc), param_hint="--commits") from None
        # Without --commits the ids are the file names' stems: the files clash.
        raise typer.BadParameter(
            f"{exc} (name each file's commit with --commits)" if isinstance(exc, SameStem) else str(exc),
            param_hint="FILES",
        ) from None
    write_table_atomic(long, out)
    if starts_out is not None:
        write_table_atomic(starts.astype({"steady_start": "Int64"}), starts_out)
    # The CSV on stdout (--out - or /dev/stdout): the table goes to stderr, out of the data.
    say = Console(stderr=True) if writes_stdout(out) or writes_stdout(starts_out) else console
    table = Table(title=f"Steady-state starts ({method})")
    # Two-line headers: on one line they held the numeric columns at their width, and on 80
    # columns (a CI log) the series id was folded every 13 characters.
    for col in ("series", "commits", "forks", "never\nsteady", "median\nstart", "iterations\nkept"):
        # The whole series id, folded if need be: an ellipsis made org.acme.Bench.parse[size=1]:avgt
        # and :thrpt one name.
        table.add_column(col, justify="left" if col == "series" else "right",
                         overflow="fold" if col == "series" else "ellipsis")
    groups = list(starts.groupby("series_id", sort=False))
    # One row per benchmark: 2,000 benchmarks wrote a 2,007-line table into the CI log.
    for series, grp in groups[:STEADY_ROWS]:
        s = grp["steady_start"]
        kept = int((grp["iterations"] - grp["cut"]).sum())
        table.add_row(
            # Text, not markup: JMH names its series Bench.parse[size=1024].
            Text(str(series)),
            str(grp["commit"].nunique()),
            str(len(grp)),
            str(int(s.isna().sum())),
            "-" if s.isna().all() else f"{s.dropna().median():.0f}",
            f"{kept} / {int(grp['iterations'].sum())}",
        )
    say.print(table)
    if len(groups) > STEADY_ROWS:
        rest = pd.concat([grp for _, grp in groups[STEADY_ROWS:]])
        unsteady = int(rest.groupby("series_id")["steady_start"].apply(lambda s: s.isna().any()).sum())
        say.print(f"... and {len(groups) - STEADY_ROWS:,} more series ({unsteady:,} of them with a fork never "
                  "steady); --starts FILE writes every fork's start", highlight=False)
    single = starts[starts["iterations"] == 1]
    if len(single):
        # Single-shot forks (-bm ss, -i 1) showed as "never steady" in every row, as if the runs had
        # been seen to drift: one iteration holds no warm-up to find, and nothing of it is cut.
        unjudged = int(single["steady_start"].isna().sum())
        say.print(
            f"{count(len(single), 'fork')} of {count(single['series_id'].nunique(), 'series', 'series')} "
            f"{'has' if len(single) == 1 else 'have'} one iteration (single-shot): no warm-up can be "
            "found within one iteration; kept whole"
            + (f" (the 'never steady' column counts {'it' if unjudged == 1 else f'these {unjudged}'})"
               if unjudged else ""),
            markup=False,
            highlight=False,
        )
    never = starts[starts["steady_start"].isna() & (starts["iterations"] > 1)]
    # The table counts them per series; which fork of which commit, and what became of it,
    # took --starts and a look at the long file.
    for fate, these in (
        ("cut where the steady forks of its series became steady (the median of their starts)",
         never[never["cut"] > 0]),
        ("kept whole (every iteration in its commit's value; no fork of its series steady)", never[never["cut"] == 0]),
    ):
        if not len(these):
            continue
        shown = "; ".join(
            f"{row.series_id} commit {row.commit} fork {row.fork} ({row.iterations} iterations"
            + (f", first {row.cut} cut)" if row.cut else ")")
            for row in these.head(NEVER_ROWS).itertuples()
        )
        more = len(these) - NEVER_ROWS
        say.print(
            f"never steady by {method} (still moving, or too short to tell), {fate}: {shown}"
            + (f"; ... and {more:,} more (--starts FILE lists every fork)" if more > 0 else "")
            + too_short_note(method, these["iterations"].to_numpy(), getattr(make(method), "min_run", None)),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    # soft_wrap: a long --out path stays one line (a CI log is 80 columns).
    say.print(
        f"{len(long):,} {'' if method == NONE else 'steady '}{'iteration' if len(long) == 1 else 'iterations'}"
        f"{' (none cut)' if method == NONE else ''} -> {_where(out)}"
        # Its fork column invites --trim-warmup on it later: a second cut of the steady parts moved
        # every commit's value (0.3-5 % on JMH forks of 10-40 iterations), without a word.
        + ("" if method == NONE else f" (cut by {method} already: read it without --trim-warmup)"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def sample(
    data: Path = typer.Option(..., "--data", help=PARTIAL_HELP),
    budget: int = typer.Option(..., "--budget", min=1, help="How many commits to measure next."),
    series: str = typer.Option(None, "--series", help="Series id when the file holds several."),
    kernel: str = typer.Option("brownian", "--kernel", help="brownian, rbf, matern or rq."),
    out: Path = typer.Option(
        None,
        "--out",
        parser=output_file,
        help="CSV to write (- = stdout): every commit with estimate, 95% band (where a reading of the commit would fall, its noise included) and the next-measurement rank.",
    ),
) -> None:
    """The next commits to measure (those removing the most uncertainty over the whole history), with the estimated history and its band."""
    from triage.sampling import KERNELS
    from triage.sampling.partial import read_partial, sample_plan

    check_choice("--kernel", kernel, KERNELS)
    check_output_not_input(out, data)
    if out is not None:
        destination(out)  # a directory or a path under a file: refused before the fit
    # The CSV on stdout (--out - or /dev/stdout): the table goes to stderr, out of the data.
    say = console_for(out)
    history = read_partial(data, series)
    if out is None and len(history.measured) == len(history.commits):
        # Nothing to choose and no estimate asked for: the fit took 29 CPU-s on a real series of
        # 1,640 commits (its cost grows with the measured commits) to print an empty table.
        say.print(f"{history.series_id}: {count(len(history.commits), 'commit')}, every commit is measured: "
                  "nothing left to measure (--out FILE writes the estimated history)", markup=False, highlight=False)
        return
    try:
        plan = sample_plan(history, budget, kernel)
    except ValueError as exc:
        raise InputError(data, None, str(exc)) from None
    if out is not None:
        write_csv_atomic(plan, out)
    chosen = plan[plan["next"].notna()].sort_values("next")
    title = f"{history.series_id}: {len(history.measured)} of {count(len(plan), 'commit')} measured; measure next"
    table = Table(title=Text(title), min_width=min(len(title), say.width))
    for col in ("rank", "commit", "position", "estimate", "95% band"):
        # The whole commit id (folded if need be): it is what the user goes and measures.
        table.add_column(col, justify="left" if col == "commit" else "right",
                         overflow="fold" if col == "commit" else "ellipsis")
    # one precision for the whole table, enough to tell every estimate and band end apart
    shown = iter(distinct_numbers([x for _, r in chosen.iterrows() for x in (r["estimate"], r["lower"], r["upper"])]))
    for _, r in chosen.iterrows():
        estimate, lower, upper = next(shown), next(shown), next(shown)
        table.add_row(str(r["next"]), Text(str(r["commit"])), str(r["position"]), estimate, f"{lower} .. {upper}")
    say.print(table)
    unmeasured = len(plan) - len(history.measured)
    if unmeasured < budget:
        # Fewer than asked, or an empty table: say why rather than leave it to be guessed.
        say.print(
            "every commit is measured: nothing left to measure"
            if unmeasured == 0
            else f"only {unmeasured} commit{'' if unmeasured == 1 else 's'} of the history "
            f"{'is' if unmeasured == 1 else 'are'} not measured (--budget {budget})"
        )
    if out is not None:
        say.print(f"estimated history of {count(len(plan), 'commit')} -> {_where(out)}", markup=False, highlight=False,
                  soft_wrap=True)


def culprit(
    data: Path = typer.Option(..., "--data", help=PARTIAL_HELP),
    before: str = typer.Option(
        ...,
        "--before",
        help="Last measured commit at the old level (its id, or a unique prefix of 4+ characters).",
    ),
    after: str = typer.Option(
        ...,
        "--after",
        help="First measured commit at the new level (its id, or a unique prefix of 4+ characters).",
    ),
    oracle: Path = typer.Option(
        None,
        "--oracle",
        help="CSV commit,value answering each measurement (with series_id: the series of --data, or --series); default: ask interactively.",
    ),
    strategy: str = typer.Option(
        "bayes", "--strategy", help="bayes (posterior over the culprit) or bisect."
    ),
    series: str = typer.Option(None, "--series", help="Series id when the file holds several."),
    levels: int = typer.Option(
        5, "--levels", min=1, help="Measured commits on each side that set the old and new level."
    ),
    max_measurements: int = typer.Option(
        None, "--max-measurements", min=1, help="Stop after this many (default: until localised)."
    ),
    tolerance: int = typer.Option(
        0,
        "--tolerance",
        min=0,
        help="bayes: stop when the culprit is known within this many commits (0 = exactly).",
    ),
    out: Path = typer.Option(
        None, "--out", parser=output_file, help="CSV of the measurements made, in order (- = stdout)."
    ),
    next_only: bool = typer.Option(
        False,
        "--next",
        help="Print only the next commit to measure (its id on stdout) and exit 0, for readings that take hours "
        "(a backfill): add the reading to --data as a row commit,value and run again; once the search needs "
        "no more, the culprit is printed as without --next.",
    ),
) -> None:
    """The sequence of commits to measure that localises a change between two measured commits."""
    import pandas as pd

    from triage.sampling import STRATEGIES, find_culprit, levels_around
    from triage.sampling.culprit import CONFIDENCE, neighbour_spread
    from triage.sampling.partial import read_partial

    check_choice("--strategy", strategy, STRATEGIES)
    if next_only and (oracle is not None or out is not None):
        raise typer.BadParameter("--next asks for one reading at a time: its readings go into --data, not "
                                 "--oracle or --out", param_hint="--next")
    if next_only and max_measurements is not None:
        # Each run would count only its own readings: the cap would never bind.
        raise typer.BadParameter("--next goes without --max-measurements (the readings so far are in --data)",
                                 param_hint="--next")
    if is_stdio(data) and is_stdio(oracle):
        # The oracle read an exhausted standard input: "<stdin>: file is empty".
        raise typer.BadParameter("- (standard input) can be read only once: it is --data", param_hint="--oracle")
    check_output_not_input(out, data, oracle)
    if out is not None:
        # Refused now, not after the search: typed-in readings would be lost.
        destination(out)
    # The CSV on stdout (--out - or /dev/stdout): tables, lines and prompts go to stderr.
    say = Console(stderr=True) if next_only else console_for(out)  # --next: stdout holds the commit alone
    history = read_partial(data, series)
    a, b = history.position(before, data), history.position(after, data)
    if b <= a:
        raise InputError(
            data, None, f"--after {after!r} must come after --before {before!r} in the history"
        )
    measured = set(history.measured.tolist())
    for name, p in (("--before", a), ("--after", b)):
        if p not in measured:
            raise InputError(
                data, None, f"{name} commit {str(history.commits[p])!r} has no measured value"
            )
    left = [p for p in sorted(measured) if p <= a][-levels:]
    right = [p for p in sorted(measured) if p >= b][:levels]
    # Commits of the gap measured already: evidence from the start, never asked for again.
    inside = {p: float(history.values[p]) for p in sorted(measured) if a < p < b}
    old, new, sigma = levels_around(history.values[left], history.values[right])
    ratio = abs(new - old) / sigma if sigma > 0 else float("inf")
    spread = neighbour_spread(history.values[left], history.values[right])
    if spread == 0 or ratio >= 3:
        # Only for a clear step: below 3 noise scales one reading often sits nearer the other level
        # (7 of 8 correct gaps were warned about at 0.5), and the warning below says so instead.
        _check_ends(say, history, a, b, old, new)
    if spread > 0 and ratio < 3:
        # Said before any reading, not only after the search: on a step of 0.6 noise scales the
        # search had asked for 19 readings by hand before it said the step was too small.
        say.print(
            f"warning: the step between the levels is {ratio:.1f} noise scales; below 3 a reading in the gap "
            "is often nearer the wrong level, so the search may ask for many readings and end with a lead, "
            "not a culprit" + ("" if next_only else " (--max-measurements caps them)"),
            markup=False,
            highlight=False,
        )
    answers = None
    if oracle is not None:
        # A file of many series (the whole export the readings come from) answers for the
        # series of --data: it was "N series in the file: choose one with --series".
        given = read_partial(oracle, series if series else None, prefer=history.series_id)
        answers = dict(zip(given.commits, given.values, strict=True))

    # Every reading as it arrives: a search cut short keeps the ones already made.
    readings: list[tuple[int, float]] = []

    def measure(pos: int) -> float:
        commit = str(history.commits[pos])
        if next_only:
            raise _NextReading(pos)
        if answers is None and is_stdio(data):
            # The prompt read the standard input that --data had emptied: "the input ended
            # before commit ... was measured", as if the user had typed ^D.
            raise InputError(
                "<stdin>",
                None,
                f"commit {commit!r} is to be measured, but standard input held --data (-), so no reading "
                "can be typed there: give the readings with --oracle FILE, or --data as a file",
            )
        if answers is None:
            value = _ask(commit, pos, say)
        elif commit not in answers or not np.isfinite(answers[commit]):
            raise InputError(
                oracle, None, f"no measurement of commit {commit!r} (asked by the search)"
            )
        else:
            value = float(answers[commit])
        readings.append((pos, value))
        return value

    def steps(made: list[tuple[int, float]]) -> pd.DataFrame:
        rows = [
            {
                "step": i,
                "commit": history.commits[pos],
                "position": pos,
                "value": v,
                "nearer": "new" if abs(v - new) < abs(v - old) else "old",
            }
            for i, (pos, v) in enumerate(made, start=1)
        ]
        return pd.DataFrame(rows, columns=["step", "commit", "position", "value", "nearer"])

    try:
        search = find_culprit(
            a,
            b,
            measure,
            old,
            new,
            sigma,
            strategy=strategy,
            max_measurements=max_measurements,
            tolerance=tolerance,
            known=inside,
        )
    except _NextReading as wanted:
        commit = str(history.commits[wanted.position])
        typer.echo(commit)  # alone on stdout, for a script that orders the backfill
        say.print(
            f"next: measure {commit} (position {wanted.position}; {count(len(inside), 'reading')} of the gap "
            f"so far), add the row {commit},<value> to {data} and run again",
            markup=False, highlight=False, soft_wrap=True,
        )
        return
    except InputError as exc:
        if out is None or not readings:
            raise
        # Measurements by hand can take hours each: never drop them with the search.
        write_csv_atomic(steps(readings), out)
        from triage.cli.tables import writes_stdout

        # "the 1 readings made are in -": one reading is one, and - is standard output.
        one = len(readings) == 1
        where = "went to standard output" if writes_stdout(out) else f"{'is' if one else 'are'} in {out}"
        made_so_far = "the reading made" if one else f"the {len(readings)} readings made"
        raise InputError(exc.source, exc.row, f"{exc.problem}; {made_so_far} {where}") from None
    except KeyboardInterrupt:  # a stop between two readings (in the search itself): kept as well
        if out is not None and readings:
            write_csv_atomic(steps(readings), out)
        raise
    except ValueError as exc:
        raise InputError(data, None, str(exc)) from None
    made = steps(search.measured)
    old_text, new_text, *values = distinct_numbers([old, new, *made["value"]])
    title = f"{history.series_id}: change between {before} (level {old_text}) and {after} (level {new_text})"
    # As wide as the title needs (up to the terminal): a title is wrapped to its table's width, and a
    # table of short ids, or of no rows, cut the levels and commit ids over a dozen centred lines.
    table = Table(title=Text(title), min_width=min(len(title), say.width))
    for col in ("#", "commit", "position", "value", "nearer"):
        table.add_column(col, justify="left" if col == "commit" else "right",
                         overflow="fold" if col == "commit" else "ellipsis")
    for r, value in zip(made.itertuples(), values, strict=True):
        table.add_row(str(r.step), Text(str(r.commit)), str(r.position), value, r.nearer)
    if len(made):
        say.print(table)
    else:  # headers over no row read as a search that found nothing
        say.print(Text(f"{title}: nothing to measure between them"))
    assert search.culprit is not None
    within = f", within {count(tolerance, 'commit')}" if tolerance and strategy == "bayes" else ""
    made_for = f"{count(len(search.measured), 'measurement')} for {count(b - a - 1 - len(inside), 'unmeasured commit')}"
    say.print(
        f"culprit: {history.commits[search.culprit]} (position {search.culprit}{within}), "
        f"confidence {search.confidence:.2f}, {made_for}"
        + (f" ({len(inside)} more of the gap measured already: used, not measured again)" if inside else ""),
        markup=False,
        highlight=False,
    )
    if strategy == "bisect" and search.span is not None and search.span[0] < search.span[1]:
        # Stopped early (--max-measurements): the answer was the last commit of the range still
        # open, shown as "culprit: X, confidence 0.00" with no word that it is not the culprit.
        first, last = search.span
        say.print(
            f"not settled: --max-measurements reached with the culprit still one of the "
            f"{last - first + 1} commits from {history.commits[first]} to {history.commits[last]} "
            f"(positions {first} to {last}); measure on, or raise --max-measurements",
            markup=False,
            highlight=False,
        )
    if strategy == "bayes" and search.confidence < CONFIDENCE:
        # The answer is then only the likeliest place: say so rather than let it read as settled.
        say.print(
            f"not settled: the search stopped at confidence {search.confidence:.2f}, short of its "
            f"{CONFIDENCE:.2f} target ({'--max-measurements reached' if max_measurements is not None and len(search.measured) >= max_measurements else 'no commit left that would settle it'}); "
            "measure the commits beside the culprit, or measure again where readings disagree",
            markup=False,
            highlight=False,
        )
    # The step in noise scales is what decides whether any search can succeed (BENCHMARKS.md,
    # "Culprit search": success by shift / noise); say so when it is small.
    if spread == 0:
        # levels_around's stand-in (a tenth of the step) would read as "10 noise scales".
        say.print(
            f"noise unknown: the {len(left) + len(right)} neighbours have no spread, so the search "
            "took a tenth of the step for it; measure more commits on each side (--levels) or "
            "re-measure around the culprit"
        )
    else:
        say.print(
            f"step {ratio:.1f} noise scales (the {len(left) + len(right)} neighbours' spread)"
            + (
                "; below 3 a reading in the gap is often nearer the wrong level: treat the culprit "
                "as a lead and re-measure around it"
                if ratio < 3
                else ""
            )
        )
    if out is not None:
        write_csv_atomic(made, out)


class _NextReading(Exception):
    """The search's next reading, asked for under ``--next``: the command prints it and stops."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


def _check_ends(say: Console, history, a: int, b: int, old: float, new: float) -> None:
    """Warn when ``--before``'s own reading is nearer the new level, or ``--after``'s the old.

    The levels are the medians of the measured neighbours on each side; an end
    at the other level says the change is not between the two commits (one
    before --before, or one after --after), where the search would still name
    a commit of the gap with a high confidence (c055 at 0.98 for a --before
    already at the new level; a real rhai drop 20 commits past --after).
    """
    for name, pos, own, other, own_word, other_word in (
        ("--before", a, old, new, "old", "new"),
        ("--after", b, new, old, "new", "old"),
    ):
        value = float(history.values[pos])
        if abs(value - other) < abs(value - own):
            shown_value, shown_other, shown_own = distinct_numbers([value, other, own])
            say.print(
                f"warning: {name} {history.commits[pos]} reads {shown_value}, nearer the {other_word} level "
                f"({shown_other}) than the {own_word} ({shown_own}): the change may not lie between --before "
                "and --after (the search assumes it does); check the ends, or widen the gap",
                markup=False,
                highlight=False,
            )


def _where(out: Path) -> str:
    """Where a summary line says the CSV went: "-> -" read as a typo in a CI log, as in the other commands."""
    return "standard output" if writes_stdout(out) else str(out)




def _ask(commit: str, pos: int, say: Console) -> float:
    """One measurement typed in: a usable number, asked again otherwise; the input ending is an error.

    The prompt goes where ``say`` prints (stderr when the CSV goes to stdout);
    click's prompt would still put a space on stdout for each question.
    """
    while True:
        try:
            say.print(
                f"value of commit {commit} (position {pos}): ", end="", markup=False, highlight=False
            )
            line = sys.stdin.readline()
        except (KeyboardInterrupt, OSError):
            # ^C, SIGTERM, SIGHUP; or a terminal closed under us, whose reads and writes fail with
            # EIO (that OSError had escaped the caller's keeping of the readings typed so far).
            line = ""
        if not line:
            # stdin closed, ^D or ^C: the readings so far are kept by the caller. The prompt's
            # line ended first: the error was glued to it ("...(position 29): error: <stdin>: ...").
            with contextlib.suppress(OSError):
                say.print()
            raise InputError(
                "<stdin>", None, f"the input ended before commit {commit!r} was measured"
            )
        try:
            value = float(line.strip())
        except ValueError:
            say.print(
                f"{line.strip()!r} is not a number; type the measured value of commit {commit}",
                markup=False,
                highlight=False,
            )
            continue
        problem = value_problem(value)
        if problem is None:
            return value
        say.print(
            f"{problem}; type the measured value of commit {commit}", markup=False, highlight=False
        )


def register(app: typer.Typer) -> None:
    app.command("steady")(steady)
    app.command("sample")(sample)
    app.command("culprit")(culprit)
