"""github-action-benchmark's ``data.js`` (the ``gh-pages`` history of Rust, Go, JMH... projects).

The file is one JavaScript assignment::

    window.BENCHMARK_DATA = {
      "lastUpdate": 1700000000000,
      "repoUrl": "https://github.com/owner/repo",
      "entries": {
        "<suite>": [
          {"commit": {"id": "<sha>", "timestamp": "...", ...}, "date": 1700000000000,
           "tool": "cargo", "benches": [{"name": "...", "value": 123, "unit": "ns/iter", "range": "± 4"}]},
          ...
        ]
      }
    }

(the plain JSON object, as ``data.json``, is read too). One series per
(suite, bench name): ``<suite>/<name>``. Runs are in the order the action
appended them; a commit run again later (a re-run) belongs to its commit,
which keeps its first place. The timestamp is the run's ``date``.

Direction (:func:`higher_is_better`): the ``customBiggerIsBetter`` and
``customSmallerIsBetter`` tools say it; else the unit (:func:`unit_direction`):
a rate, something per time (``ops/s``, ``MiB/s``, ``items/s``, ``events/sec``,
``rows per second``, ``it_per_s``), is higher-is-better; a time or a size
(``ns``, ``ms``, ``B``, ``MiB``), alone or per operation (``ns/iter``,
``B/op``, ``allocs/op``), lower-is-better; else the ``benchmarkjs`` and
``pytest`` tools' output (ops/s) higher-is-better; anything else is unknown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from triage.core import timestamps
from triage.core.errors import InputError
from triage.core.history import Dataset, Trim, dataset_from_long
from triage.core.json_input import overlong_integer
from triage.readers.source import not_utf8

PREFIX = re.compile(r"^\s*window\.BENCHMARK_DATA\s*=\s*")
BIGGER_IS_BETTER_TOOLS = frozenset({"customBiggerIsBetter", "benchmarkjs", "pytest"})
#: Time units, as benchmark tools spell them (lower-cased; both micro signs).
TIME_UNIT = re.compile(r"^(ns|nsecs?|nanoseconds?|us|µs|μs|usecs?|microseconds?|ms|msecs?|milliseconds?"
                       r"|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?)$")
#: Sizes: bytes and bits with a decimal or binary prefix (``B``, ``kB``, ``KiB``, ``MB``, ``Gbit``, ``bytes``).
SIZE_UNIT = re.compile(r"^([kmgtpe]i?)?(b|bytes?|bits?)$")
#: What a benchmark counts per operation where less is better, besides times and sizes (Go's ``allocs/op``).
COST_UNIT = re.compile(r"^(allocs?|allocations?)$")
#: The operation a cost is counted per (``ns/op``, ``ns/iter``, ``B/op``).
PER_OPERATION = re.compile(r"^(ops?|operations?|iters?|iterations?|it|calls?|runs?|requests?|reqs?)$")
#: Rates spelled as one word.
RATE_WORD = re.compile(r"^(fps|qps|rps|tps|iops)$")
#: "<thing> per <unit>": ``ops/s``, ``ops / s``, ``rows per second``, ``it_per_s``, ``per_s``.
PER = re.compile(r"\s*/\s*|\s+per\s+|_per_|^per[_\s]+")


def is_gab(path: Path) -> bool:
    """A ``data.js`` assignment (by its first bytes)."""
    try:
        with open(path, encoding="utf-8-sig") as fh:  # a BOM (Windows editors) before the assignment
            return bool(PREFIX.match(fh.read(200)))
    except (UnicodeDecodeError, OSError):
        return False


def unit_direction(unit: str) -> bool | None:
    """True for a rate (something per time: ``ops/s``, ``MiB/s``, ``items/s``, ``events/sec``,
    ``msg/s``, ``rows per second``, ``it_per_s``), False for a time or a size, alone or per
    operation (``ns``, ``ms``, ``MiB``, ``ns/iter``, ``B/op``, ``allocs/op``), None for any other unit.

    Not guessed: ``MiB/s``, ``items/s`` and ``events/sec`` were read as times, and a throughput's
    drop was called an improvement.
    """
    text = unit.strip().lower()
    if not text:
        return None
    parts = PER.split(text, maxsplit=1) if PER.search(text) else [text]
    if len(parts) == 1:
        word = parts[0]
        if TIME_UNIT.match(word) or SIZE_UNIT.match(word):
            return False
        return True if RATE_WORD.match(word) else None
    thing, per = (p.strip() for p in parts)
    if TIME_UNIT.match(per):
        # Something per time is a rate; a time per time (a ratio) says nothing.
        return None if TIME_UNIT.match(thing) or PER.search(thing) else True
    if PER_OPERATION.match(per) and (TIME_UNIT.match(thing) or SIZE_UNIT.match(thing) or COST_UNIT.match(thing)):
        return False
    return None


def higher_is_better(unit: str, tool: str) -> bool | None:
    """github-action-benchmark's direction for a unit and a tool (see the module docstring)."""
    if tool in ("customSmallerIsBetter", "customBiggerIsBetter"):  # the user's own word
        return tool == "customBiggerIsBetter"
    by_unit = unit_direction(unit)
    if by_unit is not None:
        return by_unit
    return True if tool in BIGGER_IS_BETTER_TOOLS else None


#: The dates pandas can hold, in ms since the epoch (the format's unit).
def _check_date(date: object, path: Path, where: str) -> None:
    """A run's ``date``: absent, or milliseconds since the epoch that pandas can hold; else an error naming the run."""
    if date is not None and (why := timestamps.epoch_ms_problem(date, "github-action-benchmark")) is not None:
        raise InputError(path, None, f"{where}: {why}")


def read_gab(
    path: str | Path, *, aggregate: str = "mean", sort_timestamps: bool = False, trim: Trim = None
) -> Dataset:
    """Read a github-action-benchmark ``data.js`` (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # utf-8-sig: a BOM is not JSON's
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    m = PREFIX.match(text)
    # The prefix is replaced by its newlines only, so JSON errors keep the file's line numbers.
    body = ("\n" * text[: m.end()].count("\n") + text[m.end():]) if m else text
    body = body.rstrip().rstrip(";")
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, f"not a github-action-benchmark data file: {exc.msg}") from None
    except ValueError:  # an integer of more digits than Python converts
        raise overlong_integer(path, body) from None
    except RecursionError:
        raise InputError(path, None, "JSON nested too deeply to be a github-action-benchmark data file") from None
    entries = payload.get("entries") if isinstance(payload, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise InputError(path, None, "no 'entries' object (expected window.BENCHMARK_DATA = {entries: {...}})")
    records: list[dict] = []
    higher: dict[str, bool | None] = {}
    # Which (suite, bench) each series id came from: "a/b" + "c" and "a" + "b/c" are both "a/b/c",
    # and their values would be averaged as re-runs of one benchmark without a word.
    origin: dict[str, tuple[str, str]] = {}
    for suite, runs in entries.items():
        if not isinstance(runs, list):
            raise InputError(path, None, f"entries[{suite!r}] is not a list of runs")
        for number, run in enumerate(runs, start=1):
            where = f"suite {suite!r}, run {number}"
            commit = run.get("commit") if isinstance(run, dict) else None
            if not isinstance(commit, dict) or not commit.get("id"):
                raise InputError(path, None, f"{where}: no commit id")
            benches = run.get("benches")
            if not isinstance(benches, list):
                raise InputError(path, None, f"{where}: no 'benches' list")
            tool = str(run.get("tool", ""))
            _check_date(run.get("date"), path, where)
            for bench in benches:
                if not isinstance(bench, dict) or "name" not in bench or "value" not in bench:
                    raise InputError(path, None, f"{where}: a bench without name or value")
                value = bench["value"]
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise InputError(path, None, f"{where}, bench {bench['name']!r}: value {value!r} is not a number")
                if isinstance(value, int) and not -1e308 < value < 1e308:  # float() would overflow
                    raise InputError(path, None, f"{where}, bench {bench['name']!r}: value of {len(str(abs(value)))} digits "
                                     "is too large to be a measurement")
                sid = f"{suite}/{bench['name']}"
                # Stripped, as the series id is read: bench "x" and "x " are one id too.
                first = origin.setdefault(sid.strip(), (suite, str(bench["name"])))
                if first != (suite, str(bench["name"])):
                    raise InputError(path, None, f"{where}, bench {bench['name']!r}: its series id {sid!r} is also "
                                                 f"bench {first[1]!r} of suite {first[0]!r}; rename one of them")
                records.append({"series_id": sid, "commit": str(commit["id"]), "date": run.get("date"),
                                "value": float(value), "_where": where})
                higher.setdefault(sid, higher_is_better(str(bench.get("unit", "")), tool))
    if not records:
        raise InputError(path, None, "no benchmark results in the file")
    frame = pd.DataFrame.from_records(records)
    where = frame.pop("_where")
    dated = frame["date"].notna()
    if dated.all():
        frame["timestamp"] = pd.to_datetime(frame.pop("date"), unit="ms", utc=True).dt.tz_localize(None)
    elif dated.any():
        # Dropping every run's timestamp for one run without its own lost them all without a word.
        raise InputError(path, None, f"{where[~dated].iloc[0]}: no 'date' (the other runs have one; "
                         "github-action-benchmark writes each run's date in milliseconds since the epoch)")
    else:
        frame.pop("date")  # a file without dates: commits in run order, no timestamps
    try:
        return dataset_from_long(frame, None, path, aggregate=aggregate, sort_timestamps=sort_timestamps,
                                 higher_is_better=higher, trim=trim)
    except InputError as exc:  # name the run, not a position in the flattened table
        run = where.iloc[exc.row - 1] if exc.row else None
        raise InputError(path, None, f"{run}: {exc.problem}" if run else exc.problem) from None
