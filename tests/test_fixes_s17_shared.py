"""Shared-module defects reported by the seventeenth session's walkthroughs, each with its test.

1. ``--trim-warmup``'s help on ``summary``, ``convert`` and ``candidates`` said every series is
   read as times (a warm-up falls); a higher-is-better series has been read as a rate, whose
   warm-up rises, since the sixteenth session.
2. ``candidates --out -`` and ``convert --out -`` ended with "-> -"; ``score`` / ``label`` say
   "standard output".
"""

from __future__ import annotations

import pytest

from tests.helpers_cli import flat, invoke, step_history


@pytest.mark.parametrize("command", ["summary", "convert", "candidates"])
def test_trim_warmup_help_says_a_rate_warms_up_rising(command):
    code, out = invoke([command, "--help"])
    assert code == 0
    text = flat(out)
    assert "values read as times: a warm-up falls" not in text
    assert "higher-is-better series is a rate, whose warm-up rises" in text


@pytest.mark.parametrize(
    "args", [["convert"], ["candidates", "--detector", "perfherder"]], ids=["convert", "candidates"]
)
def test_writing_to_standard_output_is_named_so(tmp_path, args):
    data = step_history(tmp_path / "h.csv")
    code, out = invoke([*args, "--data", data, "--out", "-"])
    assert code == 0, out
    assert "-> standard output" in out and "-> -" not in out
