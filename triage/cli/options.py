"""Option values shared by several command groups: windows and ``--param`` items.

Each parser turns text into a value or raises ``typer.BadParameter`` (exit 2
with the message); the grammars themselves live with what they describe
(:mod:`triage.core.params` for ``key=value``, :mod:`triage.features.windows`
for the Pre/After window).
"""

from __future__ import annotations

from typing import Annotated

import typer

from triage.core import params
from triage.features.windows import ADAPTIVE


def parse_window(text: str, option: str = "--window") -> str | int:
    """``"adaptive"`` (any case) or a fixed window of ``w >= 0`` commits; an error names ``option``."""
    text = str(text).strip().lower()
    if text == ADAPTIVE:
        return ADAPTIVE
    try:
        w = int(text)
    except ValueError:
        raise typer.BadParameter(f"window must be 'adaptive' or an integer >= 0, got {text!r}",
                                 param_hint=option) from None
    if w < 0:
        raise typer.BadParameter(f"window must be >= 0, got {w}", param_hint=option)
    return w


#: Most windows one study compares: each is a full evaluation protocol (the paper's Fig. 2 has 21).
MAX_STUDY_WINDOWS = 200


def parse_windows(text: str) -> list[str | int]:
    """``"0-10,adaptive"`` -> [0, 1, ..., 10, "adaptive"]; at most :data:`MAX_STUDY_WINDOWS` of them."""
    out: list[str | int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = (int(v) for v in part.split("-", 1))
            if hi < lo:
                raise typer.BadParameter(f"window range {part!r} runs backwards", param_hint="--windows")
            if hi - lo + 1 > MAX_STUDY_WINDOWS:
                raise typer.BadParameter(f"window range {part!r} holds {hi - lo + 1:,} windows; one study compares "
                                         f"at most {MAX_STUDY_WINDOWS}", param_hint="--windows")
            out.extend(range(lo, hi + 1))
        elif part:
            out.append(parse_window(part, "--windows"))
    if len(out) > MAX_STUDY_WINDOWS:
        raise typer.BadParameter(f"{len(out):,} windows; one study compares at most {MAX_STUDY_WINDOWS}",
                                 param_hint="--windows")
    return out


def parse_model_params(items: list[str] | None) -> dict[str, object]:
    """``--param KEY=VALUE`` items of a model, values inferred (grammar: :mod:`triage.core.params`)."""
    refuse_repeated_keys("--param", items)
    try:
        return params.parse_params(items)
    except ValueError as exc:
        raise typer.BadParameter(f"--param: {exc}") from None


def refuse_repeated_keys(option: str, items: list[str] | None) -> None:
    """A key given twice (``--param t=5 --param t=9``) is refused: the library keeps the last one
    silently, and on a long command line the user may well have meant the first."""
    seen: dict[str, str] = {}
    for item in items or ():
        key = item.partition("=")[0].strip()
        if key in seen:
            raise typer.BadParameter(f"{key!r} is given twice ({seen[key]!r}, {item!r})", param_hint=option)
        if key:
            seen[key] = item

#: ``--data`` of every command reading a dataset other than ``summary`` / ``convert`` / ``plot``, which list
#: the layouts: four spellings named the module ``triage.loaders`` and left out that ``-`` reads stdin.
DATA_HELP = "Dataset (any layout `triage summary` reads; a directory, gzip/zstd compressed or - for stdin)."

TRIM_WARMUP_HELP = (
    "Aggregate only the steady part of each commit's measurements (each fork's, with a fork column): kbkssd, "
    "cpssd, kstep or none. A higher-is-better series is a rate, whose warm-up rises; any other is read as "
    "times, whose warm-up falls."
)
AGGREGATE_HELP = "Statistic for several measurements per commit: mean, median, p90."
BRANCH_HELP = "Otava CSVs with a branch column: only this branch (default: every branch, series <metric>@<branch>)."

# How --data becomes one value per commit. `candidates` takes them, and so does every command that
# reads its candidates back with the data (score, report, serve) or labels alerts on it (label):
# read differently, they would judge other values than the detector saw.
Aggregate = Annotated[str, typer.Option("--aggregate", help=AGGREGATE_HELP)]
TrimWarmup = Annotated[str, typer.Option("--trim-warmup", help=TRIM_WARMUP_HELP)]
Branch = Annotated[str | None, typer.Option("--branch", help=BRANCH_HELP)]
#: ``--fail-on`` choices, and the exit code of a command that found what it names.
FAIL_ON = ("none", "true", "regression")
EXIT_FLAGGED = 3
FailOn = Annotated[str, typer.Option("--fail-on", help=(
    "For a CI job: exit 3 (after --out is written and the table printed) when a candidate is called true "
    "(true) or called true with a regression step (regression: the data must say which way is better; "
    "change_kind). none (default): exit 0. Errors stay exit 2."))]
COMMIT_ORDER_HELP = (
    "Text file of commit ids in history order, one a line (long layout): re-measured commits (retriggers) "
    "are placed by it instead of by their first appearance."
)


def read_commit_order(path) -> list[str] | None:
    """``--commit-order FILE``: commit ids in history order, one a line (blank lines and ``#`` comments skipped).

    ``None`` when no file is given. A missing or unreadable file, an empty one or
    a commit listed twice is an :class:`~triage.core.errors.InputError` naming the
    file and the line.
    """
    if path is None:
        return None
    from pathlib import Path

    from triage.core.errors import InputError
    from triage.readers.source import plain_file

    path = Path(path)
    try:
        # compressed like every input (gzip / zstd), by its bytes
        with plain_file(path, directory_ok=False) as plain:
            raw = plain.read_bytes()
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read it: {exc.strerror}") from None
    try:
        lines = raw.decode("utf-8-sig").splitlines()  # a BOM stuck to the first id
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        raise InputError(path, raw[:start].count(b"\n") + 1, "not UTF-8 text") from None
    order: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        commit = line.strip()
        if not commit or commit.startswith("#"):
            continue
        if commit in seen:
            raise InputError(path, number, f"commit {commit!r} is listed twice (first on line {seen[commit]})")
        seen[commit] = number
        order.append(commit)
    if not order:
        raise InputError(path, None, "no commit ids (one a line)")
    return order


def check_fail_on(value: str) -> str:
    """``--fail-on``: one of :data:`FAIL_ON` (any case), else a usage error."""
    text = str(value).strip().lower()
    if text not in FAIL_ON:
        raise typer.BadParameter(f"must be one of {', '.join(FAIL_ON)}, got {value!r}", param_hint="--fail-on")
    return text


#: How many flagged decisions the ``--fail-on`` line names.
FAIL_ON_NAMED = 5


def fail_on(rule: str, frame, err_console) -> None:
    """End with :data:`EXIT_FLAGGED` when ``rule`` finds a flagged decision; a line on stderr says why.

    ``frame``: the decisions (``series_id``, ``commit``, ``classification``,
    ``change_pct``, ``change_kind``). A CI job gating a merge on a new
    regression read exit 0 whatever the model called (a walkthrough of a
    team coming from Apache Otava). The line names the first
    :data:`FAIL_ON_NAMED` flagged ones with their step: on a CI log's 80
    columns the table has no room for the reasons the step leads.
    """
    if rule == "none":
        return
    from triage.steps import cell_text

    calls = frame["classification"].tolist()
    kinds = [str(k) if isinstance(k, str) else "" for k in frame["change_kind"]] if "change_kind" in frame \
        else [""] * len(frame)
    flagged = [i for i, (c, k) in enumerate(zip(calls, kinds, strict=True))
               if c == "true_positive" and (rule == "true" or k == "regression")]
    if flagged:
        what = "called true" if rule == "true" else "called true with a regression step"
        pcts = frame["change_pct"].tolist() if "change_pct" in frame else [None] * len(frame)
        named = []
        for i in flagged[:FAIL_ON_NAMED]:
            step = cell_text(pcts[i], kinds[i])
            named.append(f"{frame['series_id'].iloc[i]} at {frame['commit'].iloc[i]}" + (f" ({step})" if step else ""))
        more = f" and {len(flagged) - len(named):,} more" if len(flagged) > len(named) else ""
        n = len(flagged)
        err_console.print(f"{n:,} candidate{'' if n == 1 else 's'} {what}: exit {EXIT_FLAGGED} (--fail-on {rule}): "
                          f"{'; '.join(named)}{more}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_FLAGGED)
    if rule == "regression" and "change" in kinds and not any(k in ("regression", "improvement") for k in kinds):
        err_console.print("note: --fail-on regression, but no series here says which way is better "
                          "(higher_is_better / lower_is_better / direction): no step can be a regression",
                          markup=False, highlight=False, soft_wrap=True)
