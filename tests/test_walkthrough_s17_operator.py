"""Walkthrough s17: the operator wiring ``triage`` into shell scripts, CI jobs, cron and systemd.

Defects found (what a user did, what went wrong, what happens now):

1. Ran a long job (``triage detect`` on the 372 real histories) in a terminal
   that says ``TERM=dumb`` (an Emacs shell, a CI runner that allocates a
   pseudo-terminal but sets ``TERM=dumb``): no progress at all, not a bar and
   not the plain lines README promises "otherwise" (rich draws no live bar on
   a dumb terminal, and ``JobProgress`` took every terminal for a bar). Now a
   terminal that cannot redraw in place gets the plain line per tenth.
2. Ran the same job in a narrow terminal (``COLUMNS=40``): the bar kept its
   40 columns and the count beside it was cut to ``245769/24…``. Now the bar
   narrows so that the count, the unit and the time stay whole.
"""

from __future__ import annotations

import io

from rich.console import Console

from triage.cli import progress as P


def _run(console: Console, total: int = 50) -> None:
    with P.JobProgress("detect", total, "rows", console=console) as job:
        for _ in range(total):
            job.advance(1)


def test_dumb_terminal_gets_plain_lines(monkeypatch):
    """Defect 1: a terminal with TERM=dumb printed no progress at all."""
    monkeypatch.setattr(P, "QUIET_SECONDS", 0.0)
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, _environ={"TERM": "dumb"}, width=80)
    assert console.is_terminal and console.is_dumb_terminal
    _run(console)
    lines = sink.getvalue().splitlines()
    assert [line for line in lines if line.startswith("detect: ")] == [
        f"detect: {10 * k}% ({5 * k:,}/50 rows, 0 s)" for k in range(1, 11)
    ]
    assert "\r" not in sink.getvalue() and "\x1b" not in sink.getvalue()


def test_capable_terminal_still_gets_the_bar(monkeypatch):
    monkeypatch.setattr(P, "QUIET_SECONDS", 0.0)
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, _environ={"TERM": "xterm"}, width=80)
    _run(console)
    text = sink.getvalue()
    assert "detect: 10%" not in text  # no plain lines on a terminal that redraws
    assert "50/50" in text


def test_narrow_terminal_keeps_the_count_whole(monkeypatch):
    """Defect 2: COLUMNS=40 cut the count beside the bar (``245769/24…``)."""
    monkeypatch.setattr(P, "QUIET_SECONDS", 0.0)
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, _environ={"TERM": "xterm"}, width=40, color_system=None)
    _run(console, total=248_075 // 1000 * 1000)
    text = sink.getvalue()
    assert "…" not in text
    assert "248000/248000 rows" in text
