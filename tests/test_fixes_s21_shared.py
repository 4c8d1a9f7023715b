"""Defects the twenty-first session's walkthroughs found in shared modules, fixed there.

1. (warm-up) ``summary`` and ``candidates`` blamed the data file for a bad
   ``--trim-warmup`` or ``--aggregate`` ("x.csv: unknown steady-state
   method") where ``convert`` and ``steady`` named the option.
"""

from __future__ import annotations

import pytest
from helpers_cli import flat, invoke


@pytest.mark.parametrize("command", [["summary"], ["candidates", "--detector", "perfherder", "--out", "-"]])
@pytest.mark.parametrize(("option", "value"), [("--trim-warmup", "bogus"), ("--aggregate", "p95")])
def test_a_bad_aggregation_option_is_named_not_the_data_file(tmp_path, command, option, value):
    data = tmp_path / "x.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{i % 3}\n" for i in range(30)))
    code, text = invoke([command[0], "--data", data, *command[1:], option, value])
    assert code == 2, text
    assert option in flat(text) and "x.csv" not in flat(text)
