"""Defects the twenty-first session's walkthroughs found in shared modules, fixed there.

1. (warm-up) ``summary`` and ``candidates`` blamed the data file for a bad
   ``--trim-warmup`` or ``--aggregate`` ("x.csv: unknown steady-state
   method") where ``convert`` and ``steady`` named the option.
2. (warm-up) a JSON array of runs given to ``--data`` was refused with the
   whole array in the message (1,117 characters) and no word of the layout
   that reads it.
3. (online) ``detect`` and ``watch`` ended in an internal error
   (ZeroDivisionError) on a Pre of zeros and values near 1e-100: the
   incremental lumpiness squared a variance that underflowed.
4. (explain) a contribution rounding to 0 read "-0.00 toward false"; a
   commit the stream rule holds back (min_pre, an alarm awaiting its
   re-check) had reasons toward true and no word of the rule.
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


def test_an_array_of_runs_under_data_is_shown_short_and_pointed_to_its_layout(tmp_path):
    """(warm-up) a plain JSON array of runs (what `steady` reads) given to --data was 'row 1: value
    '[0.9017, ... all 120 numbers]' is not a number', a 1,117-character line."""
    import json

    runs = tmp_path / "c1.json"
    runs.write_text(json.dumps([[1.0 + 0.001 * (i % 7) for i in range(60)] for _ in range(2)]))
    code, text = invoke(["summary", "--data", runs])
    assert code == 2, text
    line = flat(text)
    assert len(line) < 300 and "characters)" in line
    assert "read by `--layout jmh` (one file per commit) or `triage steady`" in line
    code, text = invoke(["summary", "--data", runs, "--layout", "jmh"])
    assert code == 0, text


def test_detect_and_watch_take_zeros_mixed_with_values_near_1e_100(tmp_path):
    """(online) Pre holding 0 and 1e-100 (both in the usable range) squared its variance to 0 in the
    incremental lumpiness: ZeroDivisionError, an internal error of `detect` and `watch --csv`."""
    data = tmp_path / "alt.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{0 if i % 2 == 0 else 1e-100}\n" for i in range(40)))
    code, text = invoke(["detect", "--data", data, "--out", tmp_path / "cp.csv"])
    assert code == 0, text
    assert (tmp_path / "cp.csv").read_text().startswith("series_id,commit,index,probability")
    code, text = invoke(["watch", "--csv", data])
    assert code == 0, text
    assert '"commit": "c35"' in text  # decided at c39, K = 4


def test_a_contribution_that_rounds_to_zero_points_neither_way():
    """(explain) a contribution of -0.001 printed '-0.00 toward false'."""
    from triage.explain import _direction

    assert _direction(-0.001) == _direction(0.004) == "0.00, neither way"
    assert _direction(-0.3) == "-0.30 toward false" and _direction(0.21) == "+0.21 toward true"


def test_watch_says_why_a_commit_above_the_threshold_raised_no_alarm(tmp_path):
    """(explain) `watch --explain all` gave the first commits of a series reasons all toward true (P(true)
    0.80 for the first) and decision false, without a word of the stream rule (min_pre: no alarm while Pre
    holds fewer than 5 commits) that decides them false whatever the model says."""
    import json

    data = tmp_path / "f.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{208732160 if i < 30 else 250000000}\n"
                                                         for i in range(40)))
    code, text = invoke(["watch", "--csv", data, "--explain", "all"])
    assert code == 0, text
    records = {r["commit"]: r for r in map(json.loads, (t for t in text.splitlines() if t.startswith("{")))}
    assert records["c0"]["top_features"][0] == "held back by the stream rule: 0 commits before it, fewer than min_pre 5"
    assert records["c1"]["top_features"][0].startswith("held back by the stream rule: 1 commit before it")
    assert not any(f.startswith("held back by the stream rule") for f in records["c20"]["top_features"])
    # The model is not asked about a held-back commit: no probability (it had printed 0.69 for c0, the
    # model's view of an empty Pre), and no model reasons beside the rule's.
    assert records["c0"]["probability"] is None and records["c0"]["top_features"] == records["c0"]["top_features"][:1]
    assert records["c4"]["probability"] is None and records["c5"]["probability"] is not None


def test_a_held_back_commit_has_no_probability_in_the_store_either(tmp_path):
    """The null probability of a commit the stream rule held back survives the state store: re-sent, it is
    replayed as null (SQLite keeps it as NULL, read back as None), and the series' memory copy the same."""
    import json

    lines = "".join(json.dumps({"series_id": "s", "commit": f"c{i}", "value": 100.0 + i % 3}) + "\n"
                    for i in range(12))
    state = tmp_path / "state.db"
    code, first = invoke(["watch", "--state", state], stdin=lines)
    assert code == 0, first
    code, again = invoke(["watch", "--state", state], stdin=lines)
    assert code == 0, again
    recs = [json.loads(t) for t in first.splitlines() if t.startswith("{")]
    replayed = [json.loads(t) for t in again.splitlines() if t.startswith("{")]
    assert [r["probability"] is None for r in recs] == [True] * 5 + [False] * (len(recs) - 5)
    assert [r["probability"] for r in replayed] == [r["probability"] for r in recs]
    assert all(r["replayed"] for r in replayed)
    # The rule's reason is given under the default --explain positive too (the model gives none here).
    assert recs[0]["top_features"] == ["held back by the stream rule: 0 commits before it, fewer than min_pre 5"]
    assert recs[5]["top_features"] == []
