"""The rich tables the CLI prints for the product's objects: datasets, decisions, evaluations.

Each function turns one object into a :class:`rich.table.Table`; commands
print them (one-off tables of a single command stay in that command).
"""

from __future__ import annotations

import math
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from triage.core.atomic import is_stdio
from triage.core.history import Dataset

#: ``--format`` of commands that write tables: CSV or JSON lines (one object per row).
TABLE_FORMATS = ("csv", "json")


def writes_stdout(path: str | Path | None) -> bool:
    """True when writing ``path`` puts the bytes on this process's standard output.

    ``-``, and ``/dev/stdout`` or any other name of the file, pipe or terminal
    that standard output is.
    """
    if path is None:
        return False
    if is_stdio(path):
        return True
    try:
        here, there = os.fstat(sys.stdout.fileno()), os.stat(str(path))
    except (OSError, ValueError):  # not there yet; a stdout without a descriptor (tests)
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def output_name(path: str | Path) -> str:
    """How a summary line names where a command wrote: "standard output" for ``-`` (it said "written to -"),
    else the path as rich markup-safe text."""
    from rich.markup import escape

    return "standard output" if writes_stdout(path) else escape(str(path))


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 candidate``, ``2 candidates``, ``1,000 series``: a number and its noun, the plural where it is one.

    The one home: summary lines read "1 candidates from cusum" and "1 series, 1 commits".
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def console_for(out: str | Path | None) -> Console:
    """Where a command's human-readable lines go: stderr when its data goes to stdout (``--out -``, ``/dev/stdout``)."""
    return Console(stderr=True) if writes_stdout(out) else Console()


def error_line(exc: BaseException) -> Text:
    """``error: <message>`` with the message as literal text.

    File names may contain brackets (``runs[bold].csv``, ``x[/]y.csv``): they
    must be printed as they are, never read as rich markup.
    """
    return Text.assemble(("error:", "bold red"), " ", str(exc))


def check_format(fmt: str, allowed: tuple[str, ...] = TABLE_FORMATS) -> str:
    import typer

    if fmt not in allowed:
        # named as every other option is ("Invalid value for --format: ...", not "Invalid value: --format ...")
        raise typer.BadParameter(f"must be one of {', '.join(allowed)}, got {fmt!r}", param_hint="--format")
    return fmt


def dataset_summary_rows(dataset: Dataset) -> dict[str, int]:
    """The figures of :func:`dataset_summary` as a mapping (``triage summary --format json``)."""
    counts = dataset.label_counts()
    rows = {"series": len(dataset), "commits": dataset.n_commits(), "candidates": sum(counts.values()), **counts}
    if any(h.true_change is not None for h in dataset):
        rows["true_change_points"] = sum(len(h.true_change_points()) for h in dataset)
    directions = [h.higher_is_better for h in dataset]
    rows["higher_is_better_series"] = sum(d is True for d in directions)
    rows["lower_is_better_series"] = sum(d is False for d in directions)
    # The table's "direction unknown" row: a script saw two counts that did not add up to the series.
    rows["direction_unknown_series"] = sum(d is None for d in directions)
    return rows


def dataset_summary(dataset: Dataset, title: str | None = None) -> Table:
    """Series, commits and candidates by label, as a table."""
    counts = dataset.label_counts()
    table = Table(title=Text(title or f"Dataset {dataset.source or ''}".strip()))
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("series", f"{len(dataset):,}")
    table.add_row("commits", f"{dataset.n_commits():,}")
    table.add_row("candidates", f"{sum(counts.values()):,}")
    for label, n in counts.items():
        table.add_row(f"  {label}", f"{n:,}")
    truth = sum(len(h.true_change_points()) for h in dataset)
    if any(h.true_change is not None for h in dataset):
        table.add_row("true change points (ground truth)", f"{truth:,}")
    directions = [h.higher_is_better for h in dataset]
    if any(d is not None for d in directions):
        # What `report` will call a regression depends on it: show what the data said.
        table.add_row("series, higher is better", f"{sum(d is True for d in directions):,}")
        table.add_row("series, lower is better", f"{sum(d is False for d in directions):,}")
        table.add_row("series, direction unknown", f"{sum(d is None for d in directions):,}")
    return table


#: Widest a decision table's series column gets, and the least the other columns leave it.
SERIES_WIDTH, SERIES_MIN_WIDTH = 28, 8
#: Widest an identifier cell (commit, label, index) gets; the least room the reasons need.
CELL_WIDTH, WHY_MIN_WIDTH = 14, 30
#: The room a wide terminal keeps for the reasons before it gives the rest to the series ids.
WHY_WIDE = 60


def distinct_numbers(values: Iterable[float], digits: int = 4) -> list[str]:
    """``values`` with ``digits`` significant digits, more where that would print two different values alike.

    ``5e+08 .. 5e+08`` named a band on a binary's size whose ends differ by a
    few hundred bytes; up to 15 digits are used, then the values are equal
    to the precision a float carries.
    """
    numbers = [float(v) for v in values]
    distinct = sorted(set(numbers))
    start = digits
    if len(distinct) > 1:
        # the digits that resolve the closest two values (fewer leave a rounded
        # mantissa such as 5.0000002e+08 for 500000016)
        gap = min(b - a for a, b in zip(distinct, distinct[1:], strict=False))
        top = max(abs(distinct[0]), abs(distinct[-1]))
        if gap > 0 and top > 0:
            start = max(digits, min(15, math.ceil(math.log10(top / gap)) + 1))
            if start > digits:
                # whole numbers in full (500000153, not 5.0000015e+08) once digits are added
                start = max(start, min(15, math.floor(math.log10(top)) + 1))
    for d in range(start, 16):
        texts = [f"{v:.{d}g}" for v in numbers]
        if len(set(texts)) == len(distinct):
            return texts
    return [f"{v:.15g}" for v in numbers]


def shorten_ids(ids: Iterable[object], width: int) -> dict[str, str]:
    """Each of ``ids`` as a table shows it in ``width`` columns: a longer one cut in the middle.

    Series ids of one project share their head and often their end
    (``otel-java/io.opentelemetry.sdk.…/otel-bench-runner``) and differ just
    before it: cut at the end, every row read ``otel-java/io.opentelemetry.…``.
    So a long id keeps its head, ``…`` and a tail that reaches back past the
    end the ids have in common to the whole word (letters and digits) where
    it differs from the others (``o…01Thread/otel-bench-runner``), as far as
    the width allows with one character of head; the head goes too when that
    alone tells the id apart (``…2Threads/otel-bench-runner``). Without such a
    need, or when no tail that fits reaches the difference, head and tail
    share the width. One cut for the whole column, so the rows line up. The
    one place a table shortens a series id. Ids that fit are left as they are. Ids that would still read
    alike (they differ only in the middle, beyond any tail's reach) each show the stretch where they
    differ from their nearest neighbour instead, between two "…".
    """
    distinct = sorted({str(s) for s in ids})
    if width < 3:  # no room for a head, "…" and a tail
        return {s: s[:width] for s in distinct}
    most = width - 2  # the longest tail that keeps one character of the head
    tail = (width - 1) // 2
    for s in (s for s in distinct if len(s) > width):
        shared = max((_common_suffix(s, o) for o in distinct if o != s), default=-1)
        if shared < 0:
            continue
        unique = shared + 1  # the shortest tail no other id ends with
        start = len(s) - unique
        while start > 0 and s[start - 1].isalnum():  # back to the start of the differing word
            start -= 1
        word = len(s) - start
        if word <= most:
            tail = max(tail, word)
        elif unique <= width - 1:  # as much of the word as fits; the head only when it must go
            tail = max(tail, most if unique <= most else width - 1)
        # else: they differ beyond any tail's reach: the even cut, whose head may show it
    plain = {s: f"{s[:width - 1 - tail]}…{s[len(s) - tail:]}" if len(s) > width else s for s in distinct}
    shown = dict(plain)
    if width < 7:
        return shown
    groups: dict[str, list[str]] = {}
    for s in distinct:
        groups.setdefault(shown[s], []).append(s)
    # Ids that differ only in their middle (emg3d-bench/memory.…('big')/meerkat/conda-py3.8 and
    # ('small'), …Smoothing…(0;'big')…) read alike under any head-and-tail cut: without what
    # each group of alike ids shares at both ends, their middles are cut the same way, between
    # two "…". Per group: two groups share less (often nothing) than each group's own ids, and
    # a "middle" that was the whole id recursed for ever.
    for alike in (g for g in groups.values() if len(g) > 1):
        head = min(_common_prefix(alike[0], o) for o in alike[1:])
        end = min(_common_suffix(alike[0], o) for o in alike[1:])
        middles = {s: s[head : len(s) - end] for s in alike}
        room = width - (head > 0) - (end > 0)
        if not (head or end) or not all(middles.values()):
            continue  # nothing the group shares to drop: its cut stays
        inner = shorten_ids(middles.values(), room)
        for s in alike:
            shown[s] = ("…" if head else "") + inner[middles[s]] + ("…" if end else "")
    # Two groups' middles can read alike once their ends are gone (p…1…q and r…1…s both "…1…"):
    # those ids keep the plain cut, which at least told the groups apart.
    counts = Counter(shown.values())
    return {s: plain[s] if counts[shown[s]] > 1 and shown[s] != plain[s] else shown[s] for s in distinct}


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def decision_table(frame, title: str, limit: int, extra: tuple[str, ...] = (), *, wide: bool = True,
                   width: int | None = None) -> Table:
    """The ``limit`` most likely true alerts of a decisions frame (``triage label`` / ``score``).

    ``wide``: room for the first reason (a terminal of 110 columns or more).
    ``width``: the console's columns; the series column (the only one cut
    short by design) gives up what the other columns need, so that the call,
    P(true) and the human label are never cut ("fal…") and the table never
    runs past the terminal's edge. The reasons are left out when even that
    does not make room for them; on a terminal too narrow for the rest too,
    every column is cut as rich shares the width out.
    A ``step`` column (``regression +12.3%``), when the frame has one, leads the
    reason. A ``not_scorable`` row (no commit before the alert in its window, no P(true))
    comes last, with "—" for P(true) and "not scorable" for the call; the
    caption counts them.
    """
    from triage.inference import NOT_SCORABLE

    top = frame.sort_values("p_true", ascending=False, kind="stable", na_position="last").head(limit)
    unjudged = int((frame["classification"] == NOT_SCORABLE).sum()) if len(frame) else 0
    # The columns' widths as the shown rows need them (a header is never narrower than its name).
    needs = {col: min(CELL_WIDTH, max([len(col), *(len(str(v)) for v in top[col])] if col in top else [len(col)]))
             for col in ("commit", *extra)}
    needs["P(true)"] = len("P(true)")
    needs["model"] = len("not scorable") if (top["classification"] == NOT_SCORABLE).any() else len("false")
    series_width = SERIES_WIDTH
    min_widths: dict[str, int | None] = dict.fromkeys(needs)
    exact: dict[str, int] = {}  # a terminal too narrow for the rules' padding: each column's width
    with_why = wide  # the reasons need room; on a narrow terminal they stay in the CSV only
    padding = 1
    if width is not None:
        def room(why: bool) -> int:  # what is left for the series: 3 columns of rules and padding per column
            n_cols = 2 + len(extra) + 2 + why
            return width - (3 * n_cols + 1) - sum(needs.values()) - (WHY_MIN_WIDTH if why else 0)

        if with_why and room(True) < SERIES_MIN_WIDTH:
            with_why = False
        if room(with_why) >= SERIES_MIN_WIDTH:
            # A wide terminal gives the series ids more than SERIES_WIDTH where the reasons
            # leave it: at 180 columns two otel-java series read "o…01Thread/otel-bench-runner"
            # and "o…t:1000})/otel-bench-runner" while the reasons had 100 columns to spare.
            longest = max((len(str(v)) for v in top["series_id"]), default=0)
            steps = top["step"] if "step" in top else [""] * len(top)
            why_need = min(WHY_WIDE, max((len(_first_reason(r)) + (len(str(s)) + 2 if s else 0)
                                          for r, s in zip(top.get("explanation", [""] * len(top)), steps, strict=True)),
                                         default=0))
            spare = room(with_why) + (WHY_MIN_WIDTH - max(WHY_MIN_WIDTH, why_need) if with_why else 0)
            series_width = min(room(with_why), max(SERIES_WIDTH, min(longest, spare)))
            min_widths = dict(needs)
        else:
            # Too narrow even so (COLUMNS=40): rich shared the width out evenly and cut P(true)
            # to "0.…" and the call to nothing, the two cells the table is read for. The cells
            # lose their padding, P(true) and the call keep their width, and the identifiers
            # share what is left.
            series_width = SERIES_MIN_WIDTH
            ids = {"series": min(SERIES_WIDTH, max(len(str(s)) for s in top["series_id"]) if len(top) else 6),
                   **{col: needs[col] for col in ("commit", *extra)}}
            left = width - (len(ids) + 2 + 1) - needs["P(true)"] - needs["model"]
            if left >= 3 * len(ids):  # a few characters of each identifier
                shares = _fill(ids, left)
                series_width, padding = shares.pop("series"), 0
                exact = {**shares, "P(true)": needs["P(true)"], "model": needs["model"]}
    shown = shorten_ids(top["series_id"], series_width)
    if 0 < len(top) < len(frame):  # "21 candidates" over 20 rows read as if one had been lost
        title = f"{title} ({len(top):,} most likely true shown: --show)"
    table = Table(title=Text(title), padding=(0, padding))
    for col in ("series", "commit", *extra, "P(true)", "model"):
        # Identifiers on one line (cut with an ellipsis: a series id in its middle, by
        # shorten_ids, the others at their end); the reason takes what is left.
        table.add_column(col, justify="right" if col == "P(true)" else "left", no_wrap=True,
                         overflow="ellipsis", max_width=series_width if col == "series" else CELL_WIDTH,
                         min_width=None if col == "series" else min_widths[col],
                         width=series_width if exact and col == "series" else exact.get(col))
    if with_why:
        table.add_column("why", overflow="fold", min_width=WHY_MIN_WIDTH)
    if unjudged:
        table.caption = Text(f"{unjudged:,} not scorable (no commit before the alert in its window: first commit "
                             "of a series or right after a confirmed change): no P(true), no true/false call")
    for rec in top.to_dict("records"):
        is_true = rec["classification"] == "true_positive"
        p_true = float(rec["p_true"])
        why = _first_reason(rec.get("explanation", ""))
        if rec.get("step"):  # the step first (`regression +12.3%`): on a narrow terminal, in the file only
            why = f"{rec['step']}: {why}" if why else str(rec["step"])
        # Text, not str: a JMH series is named like Bench.parse[size=1024], which as
        # markup would be swallowed as a style, and "[/]" would be an error.
        cells = [
            Text(shown[str(rec["series_id"])]),
            Text(str(rec["commit"])),
            *[Text(str(rec.get(c, ""))) for c in extra],
            # No P(true) (not scorable, or kept true at threshold 0 without one): a dash, never "nan".
            "—" if math.isnan(p_true) else f"{p_true:.3f}",
            Text("true", style="bold red") if is_true else
            Text("not scorable", style="italic yellow") if rec["classification"] == NOT_SCORABLE else "false",
        ]
        table.add_row(*cells, *([Text(why)] if with_why else []))
    return table


def _first_reason(explanation: object) -> str:
    """The reason a decision table shows: the first of an ``explanation`` cell's ``; ``-separated ones."""
    return str(explanation or "").split("; ")[0]


def _fill(needs: dict[str, int], room: int) -> dict[str, int]:
    """``room`` columns shared out over ``needs``: a column that needs less than an even share keeps
    its need, the others split the rest evenly (the first ones get the odd columns)."""
    shares: dict[str, int] = {}
    rest = dict(needs)
    while rest:
        even = room // len(rest)
        small = {k: v for k, v in rest.items() if v <= even}
        if not small:
            for i, k in enumerate(rest):
                shares[k] = even + (i < room - even * len(rest))
            break
        for k, v in small.items():
            shares[k] = v
            room -= v
            del rest[k]
    return {k: shares[k] for k in needs}


def evaluation_table(result) -> Table:
    """Table 1 of the paper from a :class:`~triage.training.evaluation` result: each mean over its 95 % interval.

    The interval goes on a second line of the cell, without vertical rules:
    "0.521 [0.458, 0.584]" side by side for four metrics needed about 120
    columns, and at 80 rich folded each cell over three lines and cut the
    headers to "sensiti…".
    """
    from rich import box

    summary = result.summary()
    s = result.settings
    table = Table(title=(f"{s['n_splits']} split{'' if s['n_splits'] == 1 else 's'}, {s['n_candidates']:,} candidates "
                         f"({s['n_positive']:,} true) in {s['n_series']:,} series: mean, "
                         + ("95 % interval below" if s["n_splits"] > 1 else "no interval from one split")),
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    metrics = [m for m in ("auc", "accuracy", "sensitivity", "specificity") if f"{m}_mean" in summary]
    timings = [(c, h) for c, h in (("fit_seconds_mean", "fit s"), ("cpu_seconds_mean", "cpu s")) if c in summary]
    table.add_column("split")
    table.add_column("model")
    for m in metrics:
        table.add_column(m, justify="right", no_wrap=True)
    for _, h in timings:
        table.add_column(h, justify="right", no_wrap=True)
    # One split has no spread: "0.700–0.700" read as an interval known exactly.
    spread = s["n_splits"] > 1
    for _, r in summary.iterrows():
        table.add_row(
            str(r["split"]), str(r["model"]),
            *[f"{r[f'{m}_mean']:.3f}\n" + (f"{r[f'{m}_ci_low']:.3f}–{r[f'{m}_ci_high']:.3f}" if spread else "-")
              for m in metrics],
            *[f"{r[c]:.2f}" for c, _ in timings],
        )
    return table


def differences_table(result) -> Table:
    """Stricter splits minus random splits, per model and metric."""
    diff = result.differences()
    table = Table(title="Stricter splits minus random splits (mean)")
    for col in diff.columns:
        table.add_column(str(col), justify="left" if col in ("split", "model") else "right")
    for row in diff.itertuples(index=False):
        table.add_row(*[f"{v:+.3f}" if isinstance(v, float) else str(v) for v in row])
    return table
