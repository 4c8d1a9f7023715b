"""Online commands: ``triage watch`` (decide new results as they arrive) and ``triage detect``
(replay whole histories through the same loop, the paper's Section 4 experiment).

Both run :class:`triage.online.loop.OnlineTriage` (Bauer et al., ICPE 2022,
Algorithm 1) with a model of a fixed window K; the confirmation delay is
that K unless ``--confirm-after`` says otherwise (see :mod:`triage.online.loop`
for K, the refractory period and the re-check).

``triage watch`` input, one result per line:

* JSON lines on stdin: ``{"series_id": ..., "commit": ..., "value": ...,
  "timestamp": ...}`` (timestamp optional: ISO-8601 or seconds since the epoch;
  the value a JSON number or a number written as text, ``"101.5"``, as the
  loaders read a JSON-lines feed); blank lines are skipped;
* or ``--csv FILE``: a CSV with a header naming at least ``series_id``,
  ``commit``, ``value`` (``timestamp`` optional, other columns ignored);
  ``--follow`` keeps reading as lines are appended, like ``tail -f``.

Output: one JSON line per decided commit on stdout, ``{"series_id", "commit",
"probability", "decision", "top_features"}`` (``series_id`` as in the input;
an input record may also name its series ``series``), plus ``"decided_at"``
(the commit whose arrival completed the decision, K > 0; ``probability`` is
null where the stream rule held the commit back without asking the model) and
``"replayed": true`` when the commit had been decided before (re-delivery
after a restart). With K > 0 the first K commits of a series print nothing
when they arrive. A re-check that takes an alarm back prints its own line,
``{"series_id", "commit", "withdrawn": true, "decided_at", "score"}``. The
lines already waiting on stdin are decided in one transaction. With
``--state FILE.db`` every decision is committed with its state update before
it is printed, so a killed watcher restarted on the same input continues
exactly where it stopped. A bad line stops the command with exit status 2 and
``error: <source>, line N: <problem>`` on stderr; every line before it is
decided and stored, the bad one changes nothing. Three kinds of line are
skipped instead, with a line on stderr, and the stream goes on: a value no
series can compute with quarantines its series, a late commit (a new
commit whose timestamp is older than its series' latest) is not decided, and
neither is a failed run's result (a value null, "", NaN or Infinity, an empty
CSV cell). At the end of the input a line on stderr counts what was read and
printed. Ctrl-C ends it with exit
status 130 (every printed decision is stored); a followed CSV that is
truncated or replaced (log rotation) ends it with an error (exit 2) instead
of a wait for lines that never come.
"""

from __future__ import annotations

import csv
import errno
import gc
import io
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import IO

import typer
from rich.console import Console

from triage.cli.options import DATA_HELP
from triage.cli.tables import count
from triage.cli.validation import check_text_table, output_file
from triage.core.errors import InputError
from triage.core.history import change_kind, direction_of
from triage.core.json_input import json_record
from triage.core.values import beyond_float, locale_number
from triage.model_lookup import resolve_model

err_console = Console(stderr=True)
#: How messages name standard input (``--csv -``, JSON lines piped in).
STDIN = "<stdin>"

MODEL_HELP = (
    "Online model: `default` (the bundled `online-w4`, confirmation delay 4), a bundled name, a directory with a fixed "
    "window K (train one with `triage train --window K`) or models:/name@alias."
)
CONFIRM_HELP = (
    "Confirmation delay K: decide commit p when the K-th commit after it arrives "
    "(After = p and those K). Default: the model's window, the After its rows were built with "
    "(another K gives it windows it never saw: online-w4 with K = 0 finds nothing); "
    "0 = the paper's loop, with a window-0 model (default-w0). 0 to 20."
)
MIN_PRE_HELP = (
    "Commits Pre must hold before a change point can be declared (0 = the paper's loop as is; "
    "default: the model's, else 5)."
)


def _fail(exc: Exception) -> None:
    # The message printed literally: file names may hold [ ].
    from triage.cli.tables import error_line

    err_console.print(error_line(exc), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _output(record: dict[str, object]) -> dict[str, object]:
    """An output record with the input's field name, ``series_id``, first."""
    if "series" in record:
        record = {"series_id": record["series"], **{k: v for k, v in record.items() if k != "series"}}
    return record


# ---------------------------------------------------------------------- input


def _bad(source: object, number: int, problem: str) -> InputError:
    """An InputError that says "line N" (stdin has lines, not table rows)."""
    return InputError(f"{source}, line {number}", None, problem)


def _json_records(stream: io.TextIOBase, source: str, first: int = 1) -> Iterator[tuple[int, dict]]:
    """(line number, record) for each non-blank JSON line; InputError names a bad line."""
    for number, line in enumerate(stream, start=first):
        if not line.strip():
            continue
        try:
            line.encode("utf-8")
        except UnicodeEncodeError as exc:  # a byte _waiting_lines could not decode, escaped
            raise _bad(source, number, f"not UTF-8 text (byte 0x{ord(line[exc.start]) - 0xDC00:02x} "
                       f"at character {exc.start + 1} of the line)") from None
        if number == 1 and line.startswith("\ufeff"):
            line = line[1:]  # a UTF-8 byte order mark (PowerShell, some editors), as --csv skips it
        try:
            record = json_record(line)
        except ValueError as exc:
            raise _bad(source, number, str(exc)) from None
        if "\\ud" in line or "\\uD" in line:  # an escaped surrogate: valid JSON, but maybe no Unicode text
            _check_unicode(record, source, number)
        value = record.get("value")
        if isinstance(value, str) and not value.strip():
            record["value"] = value = None  # "" is a failed run's result as null is (and a --csv empty cell)
        if isinstance(value, str):
            # A number sent as text ("value": "101.5", as some producers quote every field): the
            # loaders read it so (`detect --data feed.jsonl` replayed the feed), `watch --csv` too,
            # but piped in, the same line stopped the watcher as "value '101.5' is not a number".
            try:
                record["value"] = parsed = _text_number(value)
            except ValueError:
                if (locale := locale_number(value)) is not None:  # "100,5": say what to change, as the loaders do
                    raise _bad(source, number, locale) from None
                # any other text: the loop refuses it, naming the line
            else:
                if (parsed == 0.0 or math.isinf(parsed)) and (problem := beyond_float(value)) is not None:
                    record[UNUSABLE] = problem
        elif isinstance(value, float) and (value == 0.0 or math.isinf(value)):
            # 1e400 parses as inf, 1e-400 as 0.0: the literal tells a unit problem from a real 0.
            literal = json.loads(line.lstrip("\ufeff"), parse_float=str).get("value")
            if isinstance(literal, str) and (problem := beyond_float(literal)) is not None:
                record[UNUSABLE] = problem
        yield number, record


def _text_number(text: str) -> float:
    """A value written as text, read as the loaders read it (``ValueError`` when it is no number).

    ``float()`` also reads ``"1_000"`` and ``"１２"`` (full-width digits), which
    ``detect`` and the other loaders refuse: refused here too.
    """
    if "_" in text or not text.strip().isascii():
        raise ValueError(text)
    return float(text)


def _check_unicode(record: dict, source: str, number: int) -> None:
    """Refuse an id holding a lone surrogate (``"\\ud800"``): the state file could not store it."""
    for key in ("series_id", "commit"):
        value = record[key]
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise _bad(source, number, f"{key} {value!r} is not Unicode text: a lone surrogate "
                           f"\\u{ord(value[exc.start]):04x} at character {exc.start + 1} "
                           "(escape a character outside the BMP as a surrogate pair, or send it as UTF-8)") from None


#: Key of a record whose value's text lies beyond a float (``1e400``, ``1e-400``): the problem, for quarantine.
UNUSABLE = "\0unusable"


#: Most commits of a piped stream decided in one transaction. Each series'
#: state is serialised once per transaction, so with a backlog over 1,000
#: series a batch of 16,384 lines serialises a state once per 16 commits
#: (4,096: once per 4; BENCHMARKS.md, "Online loop speed").
BATCH_LINES = 16384


def _waiting_lines(
    stream: io.TextIOBase, limit: int = BATCH_LINES, cut: list[int] | None = None
) -> Iterator[list[tuple[int, str]]]:
    """Batches of (line number, line) from ``stream``: each batch holds the lines already waiting.

    ``cut`` gets the number of a last line that the input ended in the middle
    of (no line end after it).

    A producer that writes faster than the loop decides leaves a backlog on
    the pipe; deciding it in one :meth:`OnlineTriage.process_many` (one
    transaction, one predictor call per round) instead of a transaction per
    line is what makes a piped stream fast. A slow producer still gets each
    line decided as soon as it arrives (a batch of one). Streams without a
    file descriptor (a test's StringIO) give batches of one line.
    """
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        for number, line in enumerate(stream, start=1):
            if cut is not None and not line.endswith("\n"):
                cut.append(number)
            yield [(number, line)]
        return
    import os
    import select

    pending = b""
    number = 0
    eof = False
    while not eof:
        chunk = os.read(fd, 1 << 16)  # blocks until the producer writes or closes
        if not chunk:
            eof = True
        pending += chunk
        # Take what else is already waiting, without blocking, up to the batch size.
        while not eof and pending.count(b"\n") < limit and select.select([fd], [], [], 0)[0]:
            more = os.read(fd, 1 << 16)
            if not more:
                eof = True
            pending += more
        lines = pending.split(b"\n")
        pending = lines.pop()  # an incomplete last line waits for its end
        if eof and pending:
            lines.append(pending)
            pending = b""
            if cut is not None:
                cut.append(number + len(lines))
        for start in range(0, len(lines), limit):
            batch = []
            for raw in lines[start : start + limit]:
                number += 1
                # Not "replace": two different ids would both become U+FFFD, the same
                # commit. Escaped bytes reach _json_records, which names the line.
                batch.append((number, raw.decode("utf-8", errors="surrogateescape")))
            yield batch


def _json_batches(stream: io.TextIOBase, source: str, limit: int = BATCH_LINES) -> Iterator[list[tuple[int, dict]]]:
    """Batches of (line number, record) of the waiting JSON lines (at most ``limit``); a bad line ends the stream.

    The good lines before a bad one are yielded first (they get decided), then
    the InputError naming the bad line is raised.
    """
    cut: list[int] = []
    for lines in _waiting_lines(stream, limit, cut):
        batch: list[tuple[int, dict]] = []
        try:
            for number, line in lines:
                batch.extend(_json_records(io.StringIO(line), source, first=number))
        except InputError as exc:
            if batch:
                yield batch
            if cut and exc.source == f"{source}, line {cut[0]}":
                # A producer killed mid-write: "not a JSON object: Unterminated string starting at" said nothing of it.
                raise _bad(source, cut[0], f"{exc.problem} (the input ended in the middle of this line, without "
                           "a line end: was its producer cut off? every line before it is decided)") from None
            raise
        if batch:
            yield batch


def _csv_lines(path: Path, follow: bool, poll: float, stream: IO[bytes] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, complete line) of a growing text file (or of ``stream``, named ``path``); waits
    at the end when ``follow``."""
    number = 0
    pending = b""
    # Bytes, decoded line by line: a text-mode file decodes a whole buffer at a
    # time, and its error could not say which line is not UTF-8.
    with open(path, "rb") if stream is None else nullcontext(stream) as fh:
        while True:
            chunk = fh.readline()
            if chunk:
                pending += chunk
                if not pending.endswith(b"\n"):
                    continue  # a line still being written
                number += 1
                yield number, _decoded(path, number, pending)
                pending = b""
            elif follow:
                _check_not_rotated(path, fh)
                time.sleep(poll)
            else:
                if pending:
                    number += 1
                    yield number, _decoded(path, number, pending)
                return


def _check_not_rotated(path: Path, fh) -> None:
    """Refuse to wait on a followed file that was truncated or replaced: nothing would ever arrive."""
    import os

    try:
        now = os.stat(path)
    except FileNotFoundError:
        now = None
    if now is None or not os.path.samestat(now, os.fstat(fh.fileno())):
        raise InputError(path, None, "was replaced or removed while being followed (log rotation?): the lines "
                         "read so far are decided; run watch again on the new file (re-sent commits are "
                         "decided once)")
    if now.st_size < fh.tell():
        raise InputError(path, None, f"was truncated while being followed (now {now.st_size} bytes, "
                         f"{fh.tell()} were read; copytruncate rotation?): the lines read so far are decided; "
                         "run watch again (re-sent commits are decided once)")


def _decoded(path: Path, number: int, line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, number, f"not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line)") from None


def _csv_records(path: Path, follow: bool, poll: float) -> Iterator[tuple[int, dict]]:
    if str(path) == "-":
        # `... | triage watch --csv -`: "-" is standard input for every other input option; here it was
        # "-: no such file", and a pipe given as /dev/stdin is refused (it cannot be followed).
        path = Path(STDIN)
        lines = _csv_lines(path, False, poll, sys.stdin.buffer)
    else:
        _check_csv_file(path)
        lines = _csv_lines(path, follow, poll)
    from triage.readers.otava import sniff_delimiter

    columns: list[str] | None = None
    delimiter = ","
    for number, line in lines:
        if number == 1 and line.startswith("\ufeff"):
            line = line[1:]  # a UTF-8 byte order mark (spreadsheet exports) is no part of the first column's name
        if columns is None:
            # As every long-layout reader: `,` `;` tab or `|`, told by the header.
            delimiter = sniff_delimiter(line)
        if line.count('"') % 2:
            # A quoted cell runs on past this line: read as one line, it was "1 fields, the header has
            # 4" on the next, after the decisions before it were printed.
            raise _bad(path, number, 'a quoted cell holds a line break (a " opened on this line is not '
                       "closed on it): --csv reads one record a line; replay such a file with `triage detect "
                       "--data FILE`")
        try:
            fields = next(csv.reader([line], delimiter=delimiter))
        except (csv.Error, StopIteration) as exc:
            if columns is None:
                raise _bad(path, number, "empty or unreadable header") from None
            raise _bad(path, number, f"unreadable CSV line: {exc}") from None
        if columns is None:
            columns = [f.strip() for f in fields]
            missing = [c for c in ("series_id", "commit", "value") if c not in columns]
            if missing:
                raise _bad(path, number, f"header lacks column(s) {', '.join(missing)}")
            twice = [c for c in ("series_id", "commit", "value", "timestamp") if columns.count(c) > 1]
            if twice:
                raise _bad(path, number, f"header names column(s) {', '.join(twice)} twice: which one to read?")
            continue
        if not any(f.strip() for f in fields):
            continue
        if len(fields) != len(columns):
            raise _bad(path, number, f"{len(fields)} fields, the header has {len(columns)}")
        row = dict(zip(columns, fields, strict=True))
        value: float | None
        try:
            # An empty cell is a failed run's result, as JSON's null: the loop says so and watch skips it.
            value = _text_number(row["value"]) if row["value"].strip() else None
        except ValueError:
            raise _bad(path, number, locale_number(row["value"]) or f"value {row['value']!r} is not a number") from None
        # Ids as every long-layout reader takes them (`s1, c00` is commit `c00`, not ` c00`).
        record = {"series_id": row["series_id"].strip(), "commit": row["commit"].strip(), "value": value}
        if value is not None and (value == 0.0 or math.isinf(value)) and (problem := beyond_float(row["value"])) is not None:
            record[UNUSABLE] = problem
        if row.get("timestamp", "").strip():
            record["timestamp"] = row["timestamp"]
        for key in ("higher_is_better", "lower_is_better", "direction"):  # an alarm's change_kind
            if row.get(key, "").strip():
                record[key] = row[key]
        yield number, record
    if columns is None and not follow:
        raise InputError(path, None, "is empty: no header line (series_id, commit, value)")


def _check_csv_file(path: Path) -> None:
    """Refuse a --csv that is no plain-text file watch can read line by line (and follow)."""
    if path.is_dir():
        raise InputError(path, None, "is a directory, expected a CSV file")
    if path.exists() and not path.is_file():
        # Its first bytes would be consumed by the compression check, and a
        # pipe cannot be followed; JSON lines on stdin are the streaming input.
        raise InputError(path, None, "is not a regular file (a pipe or a device): give a CSV file, "
                         "or pipe JSON lines into `triage watch`")
    if not path.is_file():
        raise InputError(path, None, "no such file")
    from triage.readers.source import compression

    kind = compression(path)
    if kind is not None:  # a growing plain-text file is what --csv follows
        tool = {"gzip": "zcat", "zstd": "zstdcat"}.get(kind, f"{kind} -dc")
        raise InputError(path, None, f"is {kind}-compressed; --csv reads plain text, which it can follow: "
                         f"pipe it decompressed ({tool} {path} | triage watch --csv -), or decompress it first")
    with open(path, "rb") as fh:
        head = fh.read(16)
    # Binary files were "line 1: not UTF-8 text (invalid start byte at byte 103 of the line)".
    if head.startswith(b"SQLite format 3\x00"):
        raise InputError(path, None, "is an SQLite database (a watch state? give it as --state), not a CSV")
    if head.startswith(b"PAR1"):
        raise InputError(path, None, "is a Parquet file, not a CSV: replay it with `triage detect --data FILE`, "
                         "or write it as CSV for --csv")


def _check_loop_options(min_pre: int | None, confirm_after: int | None) -> None:
    """The loop's own checks name its parameters (``min_pre``); the user typed options."""
    from triage.cli.validation import check_int
    from triage.online.loop import MAX_CONFIRM

    check_int("--min-pre", min_pre, low=0)
    check_int("--confirm-after", confirm_after, low=0, high=MAX_CONFIRM)


# ---------------------------------------------------------------------- commands


def watch(
    model: str = typer.Option("default", "--model", help=MODEL_HELP, envvar="TRIAGE_MODEL"),
    state: Path = typer.Option(
        None, "--state", help="SQLite state file (created if absent); default: in memory."
    ),
    csv_file: Path = typer.Option(
        None, "--csv", help="Read results from this CSV (series_id, commit, value[, timestamp][, higher_is_better, lower_is_better or direction: an alarm's change_kind]; `,` `;` tab or `|`, as its header shows; - = stdin) instead of JSON lines on stdin."
    ),
    follow: bool = typer.Option(
        False, "--follow", help="With --csv: keep reading as lines are appended."
    ),
    reset_state: bool = typer.Option(
        False, "--reset-state", help="Forget the state file's series and decisions first."
    ),
    explain: str = typer.Option(
        "positive", help="Which decisions get the model's top_features: positive, all, none (a commit the stream rule held back gets the rule's reason unless none)."
    ),
    min_pre: int = typer.Option(None, "--min-pre", help=MIN_PRE_HELP),
    confirm_after: int = typer.Option(None, "--confirm-after", help=CONFIRM_HELP),
    durable: bool = typer.Option(
        False, "--durable", help="fsync every decision (survives power loss, slower)."
    ),
    poll: float = typer.Option(0.2, help="Seconds between checks for new lines with --follow."),
    cache_series: int = typer.Option(
        100_000, "--cache-series", help="With --state: series states kept in memory (LRU); a piped backlog is decided in "
        "batches of at most this many lines."
    ),
) -> None:
    """Decide each new result as it arrives; one JSON line per commit on stdout."""
    from triage.cli.validation import check_choice, check_int, check_not_in_model_dir, check_number
    from triage.online.loop import EXPLAIN_MODES

    check_choice("--explain", explain, EXPLAIN_MODES)  # before a state file is created
    check_number("--poll", poll, low=0, high=3600)
    check_not_in_model_dir("--state", state)
    _check_loop_options(min_pre, confirm_after)
    check_int("--cache-series", cache_series, low=1)
    from triage.core.values import out_of_range
    from triage.online.loop import OnlineTriage, RejectedCommit, missing_value
    from triage.online.records import LateCommit
    from triage.online.state_store import StateStore
    from triage.online.store_checks import set_aside_if_damaged

    if follow and csv_file is None:  # the message named "<input>" as if it were a file
        raise typer.BadParameter("needs --csv FILE (JSON lines on stdin are read as they come)", param_hint="--follow")
    if follow and str(csv_file) == "-":
        raise typer.BadParameter("needs --csv FILE, a file it can wait on (a CSV on stdin is read as it comes)",
                                 param_hint="--follow")
    if reset_state and state is None:  # nothing to reset: an operator who meant a file learned nothing
        raise typer.BadParameter("needs --state FILE (without it the state is in memory and starts empty)",
                                 param_hint="--reset-state")
    if (csv_file is None or str(csv_file) == "-") and sys.stdin is None:  # `triage watch <&-`: it was an internal error (TypeError)
        _fail(InputError("<stdin>", None, "standard input is closed: pipe JSON lines into watch, or give --csv FILE"))
    store = None
    thresholds = gc.get_threshold()
    out_of_memory: int | None = None  # series states in memory when the memory ran out
    loop: OnlineTriage | None = None
    # Address space kept for the moment the memory runs out: released first, it lets the
    # unwinding and the message run (without it, they ran out too: chained MemoryErrors, exit 1).
    reserve: bytearray | None = bytearray(16 << 20)
    unraisable_hook = sys.unraisablehook
    # A finaliser's MemoryError on the way out printed "Exception ignored in: " and then ran out itself.
    sys.unraisablehook = lambda u: None if isinstance(u.exc_value, MemoryError) else unraisable_hook(u)
    try:
        model_dir = resolve_model(model, "online")
        if state is not None:
            # The model is checked before the store is opened: a mistyped or refused --model with
            # --reset-state wiped the state and then failed, and without it left a new empty store.
            # (Uncompiled: only the model's fitness for the loop is checked here.)
            OnlineTriage.from_model_dir(model_dir, explain="none", compiled=False, min_pre=min_pre,
                                        confirm_after=confirm_after)
            if reset_state and (kept := set_aside_if_damaged(state)) is not None:
                print(f"damaged state file kept as {kept}; starting a new one", file=sys.stderr)
            store = StateStore(state, durable=durable)
            if reset_state:
                # Said, not silent: a --reset-state left in a service's unit wiped the state at every restart.
                forgotten = (len(store.series_ids()), store.n_arrivals())
                store.reset()
                if forgotten != (0, 0):
                    err_console.print(f"--reset-state: {state} forgot {count(forgotten[0], 'series', 'series')} "
                                      f"and {count(forgotten[1], 'commit')} it had received; the loop starts afresh",
                                      markup=False, highlight=False, soft_wrap=True)
        loop = OnlineTriage.from_model_dir(
            model_dir,
            store=store,
            explain=explain,
            min_pre=min_pre,
            confirm_after=confirm_after,
            max_cached_series=cache_series if store is not None else None,
        )
        # A watcher keeps thousands of series states alive (many small
        # containers); the collector's full passes over them were about a
        # tenth of a backlog's CPU time. Objects alive after start-up are
        # frozen out of its passes, and young ones are collected less often.
        # (Undone on the way out: a test may run the command in its process.)
        gc.freeze()
        gc.set_threshold(50_000, 20, 100)
        source = str(csv_file) if csv_file is not None and str(csv_file) != "-" else STDIN
        batches = (
            ([r] for r in _csv_records(csv_file, follow, poll))
            if csv_file is not None
            # A batch's series states are all in memory until it is committed: with a store, no more
            # lines than --cache-series (a backlog of 16,384 new series held 16,384 states whatever it said).
            else _json_batches(sys.stdin, source, BATCH_LINES if store is None else min(BATCH_LINES, cache_series))
        )
        out = sys.stdout
        quarantined: set[str] = set()  # series whose values the loop cannot compute with (issue 14)
        def quarantine(series: str, number: int, problem: str) -> None:
            quarantined.add(series)
            err_console.print(f"quarantined series {series!r} ({source}, line {number}): "
                              f"{problem}; its later commits are skipped",
                              markup=False, highlight=False, soft_wrap=True)

        alike = _AlikeIds(store.series_ids() if store is not None else ())
        # For the end-of-input line: an operator could tell neither how far the stream had come nor
        # what it had raised without opening the store.
        tally = _Tally()
        # Each series' direction as its records say it (higher_is_better / lower_is_better /
        # direction fields): an alarm's change_kind. Not stored: every record may carry it.
        directions: dict[str, bool] = {}
        for batch in batches:
            tally.records += len(batch)
            for _, r in batch:
                if isinstance(r, dict) and (said := direction_of(r)) is not None:
                    directions[_series_of(r)] = said
            alike.check(batch, source)
            if any(UNUSABLE in r for _, r in batch):
                usable: list[tuple[int, dict]] = []
                for n, r in batch:
                    if UNUSABLE in r and _series_of(r) not in quarantined:
                        quarantine(_series_of(r), n, r[UNUSABLE])
                    if _series_of(r) not in quarantined:
                        usable.append((n, r))
                batch = usable  # the series' lines before its unusable one are decided
            elif quarantined:
                batch = [(n, r) for n, r in batch if _series_of(r) not in quarantined]
            failed = [(n, r, m) for n, r in batch if (m := missing_value(_series_of(r), r.get("commit"), r.get("value")))]
            if failed:
                # Set aside before the batch is decided: one failed run in a batch had sent every
                # line of it through one transaction each (a backlog's speed lost to a null).
                for number, _, exc in failed:
                    tally.skipped += 1
                    err_console.print(f"skipped a commit without a value ({source}, line {number}): {exc}; "
                                      "it is not decided, its series goes on",
                                      markup=False, highlight=False, soft_wrap=True)
                skip = {number for number, _, _ in failed}
                batch = [(n, r) for n, r in batch if n not in skip]
            try:
                decisions = loop.process_many([record for _, record in batch])
            except RejectedCommit:
                # Nothing of the batch was decided: one by one, so every line
                # before the bad one is decided and the error names its line.
                decisions = []
                for number, record in batch:
                    if quarantined and _series_of(record) in quarantined:
                        continue
                    try:
                        decisions.append(loop.process_many([record])[0])
                    except RejectedCommit as exc:
                        if out_of_range(_value_of(record)):  # one series' unit, not a garbled stream
                            quarantine(exc.series, number, exc.problem)
                            continue
                        if isinstance(exc, LateCommit):
                            # One build finished after a later one: stopping here stopped every
                            # series, and a restart on the same feed stopped at this line again.
                            tally.skipped += 1
                            err_console.print(f"skipped a late commit ({source}, line {number}): {exc}; "
                                              "it is not decided (its series has moved past it)",
                                              markup=False, highlight=False, soft_wrap=True)
                            continue
                        _write(out, decisions, directions)
                        raise _bad(source, number, str(exc)) from None
            _write(out, decisions, directions)
            tally.add(decisions)
        if csv_file is None or not follow:
            err_console.print(tally.line(len(quarantined), loop), markup=False, highlight=False,
                              soft_wrap=True)
    except (InputError, ValueError) as exc:
        _fail(exc)
    except KeyboardInterrupt:
        # Every printed decision is already committed; the rest was not read or
        # rolled back. Not 0: a supervisor must tell this from the input's end.
        err_console.print("interrupted: every printed decision is stored; run watch again and re-send the "
                          "rest (re-sent commits are decided once)", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    except (MemoryError, SystemError) as exc:
        # It was a MemoryError traceback, exit 1, or an "internal error" that itself ran out of memory
        # while it was printed. The reserve and the states go first, so that the message can be printed.
        # (Out of memory, C code can also fail without setting its MemoryError: "SystemError: error
        # return without exception set", 2 in 4 runs of one backlog under `ulimit -v`.)
        reserve = None  # first: telling a SystemError's cause reads a file, which itself ran out (a CI run)
        if isinstance(exc, SystemError) and not _near_memory_limit():
            raise
        out_of_memory = 0 if loop is None else len(loop.states)
        if loop is not None:
            loop.states.clear()
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if store is not None:
            store.close()
        sys.unraisablehook = unraisable_hook
    del reserve
    if out_of_memory is not None:
        loop = None
        gc.collect()
        _out_of_memory(state, out_of_memory, cache_series)


def _memory_limit() -> str:
    """`` (this process may use N MB of address space: ulimit -v)`` when it has such a limit, else ``""``."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return ""
    return f" (this process may use {limit >> 20:,} MB of address space: ulimit -v)"


def _near_memory_limit(margin: int = 64 << 20) -> bool:
    """True when this process's address space is within ``margin`` bytes of its limit (``ulimit -v``)."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return False
    try:
        with open("/proc/self/status", "rb") as fh:
            size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith(b"VmSize:"))
    except MemoryError:  # not even a file's few bytes to spare: as near as it gets
        return True
    except (OSError, StopIteration, ValueError):
        return False
    return size + margin >= limit


def _out_of_memory(state: Path | None, held: int, cache_series: int) -> None:
    """Say that the memory ran out, what is kept and what to change; exit 2."""
    if state is None:
        advice = (f"the in-memory state of {held:,} series is lost; give --state FILE (with it, --cache-series "
                  "bounds the series states held in memory) or more memory, and send the stream again")
    else:
        advice = (f"every decision printed is stored in {state}, the lines being decided were not; {held:,} series "
                  f"states were held in memory (--cache-series {cache_series:,}): give a lower --cache-series or "
                  "more memory, run watch again and re-send from the first line whose decision was not printed "
                  "(re-sent commits print their stored decision)")
    err_console.print(f"error: out of memory while deciding{_memory_limit()}: {advice}", markup=False, highlight=False,
                      soft_wrap=True)
    raise typer.Exit(2)


class _AlikeIds:
    """Warn when a new series id differs from a known one only by case, surrounding spaces or Unicode form.

    Ids are compared as sent: ``DB.insert`` and ``db.insert`` (two producers
    spelling one benchmark) were two series, each with half the history,
    without a word; ``db.insert `` was a series of its own here while
    ``detect`` (and ``watch --csv``) read it stripped, as ``db.insert``. The
    ids stay apart (a state store keys them as sent); the warning names both,
    once for each new id.
    """

    def __init__(self, known) -> None:
        self.seen: set[str] = set(known)
        self.keys: dict[str, list[str]] = {}
        for sid in sorted(self.seen):
            self.keys.setdefault(self._key(sid), []).append(sid)

    @staticmethod
    def _key(sid: str) -> str:
        import unicodedata

        return unicodedata.normalize("NFC", sid.strip()).casefold()

    def check(self, batch: list[tuple[int, dict]], source: str) -> None:
        import unicodedata

        for number, record in batch:
            sid = _series_of(record)
            if sid in self.seen:
                continue
            self.seen.add(sid)
            others = self.keys.setdefault(self._key(sid), [])
            others.append(sid)
            if len(others) == 1:
                continue
            nfc = unicodedata.normalize("NFC", sid.strip())
            if spaced := [o for o in others[:-1] if o.strip() == sid.strip()]:
                first, what = spaced[0], ("only by surrounding spaces (detect and watch --csv read both as one "
                                          "series, stripped)")
            elif forms := [o for o in others[:-1] if unicodedata.normalize("NFC", o.strip()) == nfc]:
                first, what = forms[0], "only in Unicode form (composed and decomposed accents): they print alike"
            else:
                first, what = others[0], "only by case"
            shown = ascii if "Unicode" in what else repr
            err_console.print(f"warning: series {shown(sid)} ({source}, line {number}) differs from series "
                              f"{shown(first)} {what}: watch decides them as two series; if they are one, send "
                              "one spelling", markup=False, highlight=False, soft_wrap=True)


def _series_of(record) -> str:
    """The series a record names, as the loop names it (a numeric id as its text, as RejectedCommit has it)."""
    return str(record.get("series_id", record.get("series")) if isinstance(record, dict) else record[0])


def _value_of(record) -> object:
    return record.get("value") if isinstance(record, dict) else record[2]


class _Tally:
    """What a ``watch`` run read and printed, for its line at the end of the input."""

    def __init__(self) -> None:
        self.records = self.decided = self.alarms = self.withdrawn = self.replayed = self.skipped = 0

    def add(self, decisions) -> None:
        for d in decisions:
            if d is None:
                continue
            self.decided += 1
            self.replayed += d.replayed
            self.alarms += bool(d.decision) and not d.replayed
            self.withdrawn += d.withdrawal is not None and not d.replayed

    def line(self, quarantined: int, loop) -> str:
        held = len(loop.states) if loop is not None else 0
        replayed = f" ({self.replayed:,} replayed: their commits sent again)" if self.replayed else ""
        parts = [f"{count(self.decided, 'decision')} printed{replayed}",
                 f"{count(self.alarms, 'new alarm')}", f"{count(self.withdrawn, 'new withdrawal')}"]
        if self.skipped:
            parts.append(f"{count(self.skipped, 'line')} skipped")
        if quarantined:
            parts.append(f"{count(quarantined, 'series', 'series')} quarantined")
        return (f"end of input: {count(self.records, 'record')} read; " + ", ".join(parts)
                + f"; {count(held, 'series', 'series')} in memory")


def _write(out, decisions, directions: dict[str, bool] | None = None) -> None:
    """Print the output records of committed decisions (None: the arrival decided nothing yet).

    An alarm's record gets ``change_kind`` from its series' direction in ``directions``
    (``change`` when unknown), as ``detect``'s rows do.
    """
    lines = [
        json.dumps(_output(_with_kind(line, directions))) for d in decisions if d is not None for line in d.records()
    ]
    if lines:
        try:
            _write_all(out, "\n".join(lines) + "\n")
        except BrokenPipeError:
            raise  # the reader went away: the command's SIGPIPE exit (141)
        except OSError as exc:  # a full disk under a redirected stdout: the message named no file
            raise InputError("<stdout>", None, f"cannot write the decisions ({exc.strerror or exc}); those "
                             "decided so far are stored when --state is given: run watch again and re-send "
                             "(re-sent commits print their stored decision)") from None


def _with_kind(record: dict[str, object], directions: dict[str, bool] | None) -> dict[str, object]:
    """``record`` with ``change_kind`` after ``change_pct`` when it is an alarm's (it has ``before`` / ``after``)."""
    if "before" not in record or "after" not in record:
        return record
    kind = change_kind(float(record["before"]), float(record["after"]),  # type: ignore[arg-type]
                       (directions or {}).get(str(record["series"])))
    out: dict[str, object] = {}
    for key, value in record.items():
        out[key] = value
        if key == "change_pct":
            out["change_kind"] = kind
    return out


def _write_all(out, text: str) -> None:
    """Write ``text`` to ``out`` whole, or raise: a short write is never taken for a whole one.

    Under ``PYTHONUNBUFFERED=1`` (a systemd unit's or a container's usual
    setting) standard output's binary layer is the raw file, whose ``write``
    may write part of the bytes (a file-size limit or a quota reached in the
    middle) and returns how many; the text layer does not look, so the rest
    was dropped without an error and the watcher exited 0 with its output cut
    in the middle of a line. So the bytes go to the file descriptor until all
    are written (writing the rest again gets the system's error), past
    Python's buffers: a failed write leaves nothing in them for a later flush
    to fail on again.
    """
    import os

    out.flush()
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # a test's StringIO
        out.write(text)
        out.flush()
        return
    data = memoryview(text.encode(out.encoding or "utf-8", errors=out.errors or "strict"))
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:  # a non-blocking output that is full: wait until it takes more
            import select

            select.select([], [fd], [])
            continue
        data = data[n:]


def _count_lines(path: Path) -> int:
    """Newlines in a file (the progress bar's total for a streamed CSV), read in blocks."""
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            n += block.count(b"\n")
    return n


def detect(
    data: Path = typer.Option(
        ..., "--data", help=DATA_HELP
    ),
    model: str = typer.Option("default", "--model", help=MODEL_HELP, envvar="TRIAGE_MODEL"),
    out: Path = typer.Option(
        ..., "--out", parser=output_file, help="File to write (- = stdout): series_id, commit, index, probability, before, after, change_pct, change_kind (the alarm's levels, signed change, and regression / improvement by the data's direction)."
    ),
    fmt: str = typer.Option("csv", "--format", help="csv or json (JSON lines)."),
    layout: str = typer.Option("auto", help="Input layout (see `triage summary --help`)."),
    min_pre: int = typer.Option(None, "--min-pre", help=MIN_PRE_HELP),
    confirm_after: int = typer.Option(None, "--confirm-after", help=CONFIRM_HELP),
    batch_series: int = typer.Option(
        4096, "--batch-series", help="Series replayed side by side per batch."
    ),
    commits_per_batch: int = typer.Option(
        16,
        "--commits-per-batch",
        help="Commits of each series per batch (one predictor call each).",
    ),
    jobs: int = typer.Option(1, "--jobs", "--n-jobs", help="Workers the series are partitioned over (-1 = all cores; "
                             "--n-jobs, as the other commands spell it, is the same option)."),
    workers: str = typer.Option(
        "auto",
        "--workers",
        help="How --jobs run: threads of one process (the compiled replay releases the GIL, so memory holds "
        "one interpreter and one model), spawned processes (one interpreter and model each), or auto "
        "(default): threads for a forest or XGBoost model, processes for an SVM, whose predict_proba holds the GIL.",
    ),
    scheduler: str = typer.Option(None, "--scheduler", help="Replay on a dask cluster, partitioned by series: local or a scheduler address (the model path must be readable by the workers)."),
    screen: bool = typer.Option(
        True,
        "--screen/--no-screen",
        help="Skip a commit's costliest Pre characteristic where a bound of the model's probability "
        "without it stays below the threshold (same change points and probabilities; --no-screen: "
        "every row in full).",
    ),
) -> None:
    """Replay whole histories through the online loop and write the change points it finds."""
    from triage.cli.validation import check_choice, check_int, check_n_jobs, check_output_not_input
    from triage.online.loop import WORKERS

    check_output_not_input(out, data)
    check_text_table(out, "detect")
    check_choice("--workers", workers, WORKERS)
    _arrow_memory_to_the_system()
    check_int("--batch-series", batch_series, low=1)
    check_int("--commits-per-batch", commits_per_batch, low=1)
    check_n_jobs(jobs, "--jobs")
    if jobs == -1:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    _check_loop_options(min_pre, confirm_after)
    import pandas as pd

    from triage.cli.progress import JobProgress, chunks
    from triage.cli.tables import check_format, writes_stdout
    from triage.distributed import map_frames
    from triage.loaders import load
    from triage.online.loop import FOUND_COLUMNS, OnlineTriage, RejectedCommit, replay_in_processes

    check_format(fmt)
    out_of_memory = False
    reserve: bytearray | None = bytearray(16 << 20)  # as watch's: released first when the memory runs out
    try:
        model_dir = resolve_model(model, "online")
        loop_kwargs: dict[str, object] = {"min_pre": min_pre, "confirm_after": confirm_after}
        # A bad model fails here, once (uncompiled: this process only checks it).
        OnlineTriage.from_model_dir(model_dir, explain="none", compiled=False, **loop_kwargs)
        replay_kwargs: dict[str, object] = {
            "batch_series": batch_series, "commits_per_batch": commits_per_batch, "screen": screen
        }
        streamed = None
        if scheduler is None:
            streamed = _detect_streamed(data, layout, model_dir, jobs, loop_kwargs, replay_kwargs, workers)
        if streamed is not None:
            found, n_series, n, seconds = streamed
            _write_found(found, out, fmt)
            err_console.print(
                f"{count(len(found), 'change point')} in {n_series:,} series ({count(n, 'commit')}, "
                f"{n / max(seconds, 1e-9):,.0f} commits/s) -> {'standard output' if writes_stdout(out) else out}",
                markup=False,
                highlight=False,
                soft_wrap=True,  # a long --out path stays one line (a CI log is 80 columns)
            )
            return
        dataset = load(data, layout=layout)
        started = time.perf_counter()
        ids = dataset.series_ids
        try:
            # Series are independent: replayed in about 20 parts, each a progress step,
            # spread over --jobs workers.
            parts = [
                (part.start, part.stop)
                for part in chunks(len(ids), max(20, 4 * jobs), minimum=256, maximum=batch_series)
            ]
            with JobProgress("detect", len(ids), "series", console=err_console) as progress:
                found = replay_in_processes(
                    model_dir,
                    dataset,
                    jobs=jobs,
                    parts=parts,
                    loop_kwargs=loop_kwargs,
                    replay_kwargs=replay_kwargs,
                    on_part=progress.advance,
                    workers=workers,
                ) if scheduler is None else map_frames(
                    lambda d: pd.DataFrame(replay_in_processes(model_dir, d, jobs=1, loop_kwargs=loop_kwargs,
                                                               replay_kwargs=replay_kwargs),
                                           columns=list(FOUND_COLUMNS)),
                    dataset, scheduler)
        except RejectedCommit as exc:
            raise InputError(data, None, str(exc)) from None
        seconds = time.perf_counter() - started
        _write_found(found, out, fmt)
    except (InputError, ValueError) as exc:
        if "C error: out of memory" not in str(exc):  # pandas' tokenizer: "not a valid CSV file"
            _fail(exc)
        reserve = None
        out_of_memory = True
    except OSError as exc:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        # It was "error: Too many open files", naming neither the limit nor what needed the files.
        _fail(_too_many_files(exc, data, jobs, workers))
    except (MemoryError, SystemError, RuntimeError) as exc:
        # It was a MemoryError traceback and a second one from reporting it (exit 1), or "internal error:
        # RuntimeError: can't start new thread" for --jobs 2 under `ulimit -v`.
        if isinstance(exc, SystemError) and not _near_memory_limit():
            raise
        if isinstance(exc, RuntimeError) and "can't start new thread" not in str(exc):
            raise
        reserve = None
        out_of_memory = True
    del reserve
    if out_of_memory:
        gc.collect()
        _fail(InputError(data, None, f"out of memory while reading and replaying{_memory_limit()}: nothing was written "
                         f"({_kept(out)}); raise the memory limit{' or give fewer --jobs' if jobs > 1 else ''} "
                         "and run detect again"))
    n = dataset.n_commits()
    err_console.print(
        f"{count(len(found), 'change point')} in {len(dataset):,} series ({count(n, 'commit')}, "
        f"{n / max(seconds, 1e-9):,.0f} commits/s) -> {'standard output' if writes_stdout(out) else out}",
        markup=False,
        highlight=False,
        soft_wrap=True,  # a long --out path stays one line (a CI log is 80 columns)
    )


def _too_many_files(exc: OSError, data: Path, jobs: int, workers: str) -> InputError:
    """The error for an open-files limit reached: the limit, what uses many files, what to do."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    which = "the system's open-files table is full" if exc.errno == errno.ENFILE else (
        f"this process may open {limit} (ulimit -n)")
    if jobs > 1 and workers != "threads":  # worker processes: pipes and locks each
        return InputError(f"--jobs {jobs} --workers {workers}", None, f"too many open files: {which}; each worker "
                          "process needs pipes and locks (--workers threads needs none): raise the limit "
                          "(ulimit -n 1024) and run detect again")
    return InputError(data, None, f"too many open files: {which}; raise the limit (ulimit -n 1024) and run "
                      "detect again")




def _write_found(found, out: Path, fmt: str) -> None:
    import pandas as pd

    from triage.core.atomic import write_frame
    from triage.online.loop import FOUND_COLUMNS

    frame = pd.DataFrame(found, columns=list(FOUND_COLUMNS))
    if fmt == "csv":  # repr() keeps every digit of a probability (the CSV round-trips exactly)
        frame = frame.assign(probability=frame["probability"].map(repr))
    try:
        write_frame(frame, out, fmt)
    except BrokenPipeError:
        raise  # the reader went away: the command's SIGPIPE exit (141)
    except OSError as exc:
        import os

        if exc.filename is not None and os.path.realpath(exc.filename) != os.path.realpath(out):
            raise  # the error names another file: the boundary prints it so
        # A file-size limit or a full disk met while the table was written: it was "error: File too large",
        # naming no file (or only --out) and not saying what became of --out.
        from triage.cli.tables import writes_stdout

        raise InputError("<stdout>" if writes_stdout(out) else out, None, f"cannot write the change points "
                         f"({exc.strerror or exc}); {_kept(out)}: free space or raise the file-size limit "
                         "(ulimit -f), then run detect again") from None


def _kept(out: Path) -> str:
    """What became of a ``--out`` that was not written."""
    from triage.cli.tables import writes_stdout

    if writes_stdout(out):
        return "nothing was written to standard output"
    return f"{out} is as it was" if Path(out).exists() else f"{out} was not created"


def _detect_streamed(data: Path, layout: str, model_dir, jobs: int, loop_kwargs, replay_kwargs, workers: str):
    """`detect` on a long-layout CSV read part by part: (found, series, commits, seconds); None for other inputs.

    Memory then holds a few parts instead of the whole dataset (the
    `default` preset's 2.16 M commits took 2.1 GB loaded at once). A file
    whose series' rows are not grouped, Parquet, stdin and the other layouts
    are left to the whole-file path.
    """
    from triage.cli.progress import JobProgress
    from triage.loaders import DATASET_FILES, SeriesNotGrouped, long_csv_parts
    from triage.online.loop import RejectedCommit, replay_parts
    from triage.readers.source import plain_file
    from triage.sniffing import data_layout

    if layout not in ("auto", "long") or str(data) == "-":
        return None
    if data.is_dir():  # a directory written by `triage synth`: its dataset file, as `load` finds it
        data = next((data / name for name in DATASET_FILES if (data / name).exists()), data)
        if data.is_dir():
            return None
    with plain_file(data) as plain:
        if plain.suffix.lower() == ".parquet" or (layout == "auto" and data_layout(plain) != "long"):
            return None
        counts = {"series": 0, "commits": 0}

        def done(part) -> None:
            commits = part.n_commits()
            counts["series"] += len(part)
            counts["commits"] += commits
            progress.advance(commits)

        started = time.perf_counter()
        try:
            # Progress counts the file's rows by the commits of each part done
            # (the number of series is unknown until the end).
            with JobProgress("detect", max(_count_lines(plain) - 1, 0), "rows", console=err_console) as progress:
                found = replay_parts(
                    model_dir, long_csv_parts(plain), jobs=jobs, loop_kwargs=loop_kwargs, workers=workers,
                    replay_kwargs=replay_kwargs, on_part=done,
                )
                progress.advance(progress.total)  # re-run rows (several per commit) were not counted
        except SeriesNotGrouped:
            return None
        except RejectedCommit as exc:
            raise InputError(data, None, str(exc)) from None
        return found, counts["series"], counts["commits"], time.perf_counter() - started


def _arrow_memory_to_the_system() -> None:
    """Let pandas' text columns (arrow buffers) allocate with malloc instead of arrow's mimalloc pool.

    A streamed read frees each chunk's text after parsing it; mimalloc kept
    that memory, malloc hands it to the next chunk. Measured on the 2.16 M
    replay (`--workers threads`): peak RSS 511-521 -> 490-496 MB at about
    the same CPU (BENCHMARKS.md). ``ARROW_DEFAULT_MEMORY_POOL``, when set,
    decides.
    """
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        import pyarrow
    except ImportError:  # pandas then keeps text as Python objects
        return
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())


def register(app: typer.Typer) -> None:
    app.command("watch")(watch)
    app.command("detect")(detect)
