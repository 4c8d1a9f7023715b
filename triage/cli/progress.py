"""Progress of a long job on stderr: a rich bar on a terminal, plain lines elsewhere.

A job that takes more than a few seconds (``detect``, ``candidates``,
``label``, ``report``) reports how far it is (``score`` extracts the
features of all candidates in one call and shows a spinner on a terminal). On a terminal that
is one live bar, redrawn in place, narrowed to fit the terminal's width. Without a terminal (CI logs, ``2>
file``), or on one that cannot redraw in place (``TERM=dumb``: rich draws no
live bar there, so there was no progress at all), redrawing would repeat the
line hundreds of times, so instead one
plain line is printed each time another tenth of the work is done, and never
twice for the same tenth (nothing in the first two seconds, so quick jobs stay
quiet)::

    detect: 30% (2,340/7,800 series, 41 s)

stdout stays clean for data (``--out -``).
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

STEPS = 10  # plain-line progress: one line per tenth
QUIET_SECONDS = 2.0  # plain lines start only once a job has run this long: short jobs stay silent


class JobProgress:
    """``with JobProgress("detect", total, "series") as p: ... p.advance(k)``."""

    def __init__(self, name: str, total: int, unit: str = "items", console: Console | None = None):
        self.name = name
        self.total = max(int(total), 0)
        self.unit = unit
        self.console = console or Console(stderr=True)
        self.done = 0
        self._printed = 0  # tenths already printed (plain mode)
        self._started = time.perf_counter()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> JobProgress:
        self._started = time.perf_counter()
        if self.console.is_interactive:  # a terminal, and not a dumb one
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(bar_width=self._bar_width()), MofNCompleteColumn(),
                TextColumn(self.unit), TimeElapsedColumn(), console=self.console, transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.name, total=self.total)
        return self

    def _bar_width(self) -> int:
        """The bar's columns: at most rich's 40, fewer when the name, the count, the unit and the
        elapsed time would not fit beside it (COLUMNS=40 cut the count to ``245769/24…``)."""
        digits = len(str(self.total))
        beside = len(self.name) + (2 * digits + 1) + len(self.unit) + len("0:00:00") + 4  # 4 separating spaces
        return max(5, min(40, self.console.width - beside - 1))

    def advance(self, n: int = 1) -> None:
        self.done = min(self.done + int(n), self.total)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done)
            return
        if not self.total:
            return
        tenth = self.done * STEPS // self.total
        if tenth > self._printed and time.perf_counter() - self._started >= QUIET_SECONDS:
            self._printed = tenth
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def line(self) -> str:
        pct = 100 * self.done // self.total if self.total else 100
        seconds = time.perf_counter() - self._started
        return f"{self.name}: {pct}% ({self.done:,}/{self.total:,} {self.unit}, {seconds:.0f} s)"

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)


def chunks(n: int, parts: int = 20, *, minimum: int = 1, maximum: int | None = None) -> list[slice]:
    """About ``parts`` consecutive slices of ``range(n)``, each of ``minimum..maximum`` items."""
    size = max(minimum, -(-n // parts) if n else 1)
    if maximum is not None:
        size = min(size, maximum)
    return [slice(a, min(a + size, n)) for a in range(0, n, size)]
