"""Walkthrough s19: a performance engineer's metrics of every magnitude and sign.

Latencies in seconds (1e-9..1e-6), throughputs near 1e9 ops/s, binary sizes
and instruction counts with small integer steps, counts 0-3, deltas that
cross zero, values with 15-17 significant digits, series of 3 to 30,000
commits and a unit change of 12 orders of magnitude, through ``candidates``,
``score``, ``label``, ``detect``, ``watch``, ``report``, ``plot``, ``sample``
and ``culprit``.

Defects found (what a user did, what went wrong, what happens now):

1. Fed an instruction count of 5e12 that rose by 16 (a deterministic metric:
   every commit before it one value, every commit after another) to
   ``score``, ``label`` and ``watch``. ``score`` and ``label`` said
   "noise-free, no change: ... are all one value" with P(true) 0 (the
   feature catalogue reads windows that agree to ten significant digits as
   one value), while ``watch`` alarmed "noise-free step" at the same commit
   and withdrew the alarm five commits later (its re-check's scale of a
   flat Pre is 1e-9 of the level): three answers for one commit, one of
   them saying unequal values were one value. Now the online rule compares
   with the catalogue's tolerance too: all three say no change, and the
   explanation says the values are one value to 10 significant digits. A
   16-byte step in 5e8 bytes (3e-8 of the value) is still a step everywhere.
2. Scored ``pelt``'s candidates on a series that is 0 for 80 commits and
   then noisy around 10: one false alert was explained "new level held over
   the next 10 commits -0.902 (1 = held, 0 = went back)", a value off the
   scale the phrase gives (the next commits went back past the old level).
   Now such a value says so: "new level not held: the next 10 commits went
   back past the old level (-0.902; ...)".
3. Watched a delta metric (noise sd 0.1 around 0, then +0.5): the alarm's
   reasons read "after median 8.13e+04% off pre median", an 81,300 % change
   of a metric whose level was never away from 0 (relative change is not
   defined there in any useful sense). Now a relative change of a Pre whose
   level lies within its noise of 0 (``pair_rel_noise`` >= 1) says so: "...
   off pre median (pre level within its noise of 0)".
4. Put one latency series in a file three times, in ns, in seconds (x
   1e-9) and x 1e9, ran ``candidates --detector perfherder`` and ``score``:
   the same step got P(true) 0.957 in two units and 1.0 in the third. The
   detector's scores agreed to 14 digits, but the file's ranking of them
   (``det_score_rank``) told the rounding apart. Now scores within 1e-12 of
   each other rank as one; on the 372 real histories no detector score moves
   (perfherder, edivisive, cusum, hybrid_welch candidates checked).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from helpers_cli import invoke

from triage.explain import describe

FLAT_PRE = 60


def _flat_step(path, level: float, step: float, n_after: int = 20):
    """One series ``m``: FLAT_PRE commits at ``level``, then ``n_after`` at ``level + step``; the step at c60."""
    values = [level] * FLAT_PRE + [level + step] * n_after
    rows = "".join(f"m,c{i},{v!r}\n" for i, v in enumerate(values))
    path.write_text("series_id,commit,value\n" + rows)
    return path, values


def _score_step(tmp_path, history) -> pd.Series:
    cand = tmp_path / "cand.csv"
    cand.write_text(f"series_id,commit\nm,c{FLAT_PRE}\n")
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", history, "--candidates", cand, "--out", out])
    assert code == 0, text
    return pd.read_csv(out).iloc[0]


def _watch(values: list[float]) -> list[dict]:
    feed = "".join(
        json.dumps({"series_id": "m", "commit": f"c{i}", "value": float(v)}) + "\n"
        for i, v in enumerate(values)
    )
    code, text = invoke(["watch"], stdin=feed)
    assert code == 0, text
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_a_step_below_ten_significant_digits_is_no_change_for_score_and_label(tmp_path):
    history, values = _flat_step(tmp_path / "instructions.csv", 5e12, 16.0)
    scored = _score_step(tmp_path, history)
    assert scored["p_true"] == 0.0 and scored["classification"] == "false_positive"
    assert "one value to 10 significant digits" in scored["explanation"]

    labelled = tmp_path / "labelled.csv"
    labels = [
        "true_positive" if i == 10 else "not_triaged" if i == FLAT_PRE + 0 else ""
        for i in range(len(values))
    ]
    labelled.write_text(
        "series_id,commit,value,label\n"
        + "".join(
            f"m,c{i},{v!r},{lab}\n" for i, (v, lab) in enumerate(zip(values, labels, strict=True))
        )
    )
    out = tmp_path / "decided.csv"
    code, text = invoke(["label", "--data", labelled, "--out", out])
    assert code == 0, text
    decided = pd.read_csv(out).iloc[0]
    assert decided["commit"] == f"c{FLAT_PRE}" and decided["p_true"] == 0.0
    assert "one value to 10 significant digits" in decided["explanation"]


def test_watch_agrees_that_a_step_below_ten_significant_digits_is_no_change(tmp_path):
    _, values = _flat_step(tmp_path / "instructions.csv", 5e12, 16.0)
    lines = _watch(values)
    assert not any(r.get("decision") for r in lines), (
        lines
    )  # was: alarmed at c60 as a noise-free step ...
    assert not any(r.get("withdrawn") for r in lines), lines  # ... and withdrawn at c65
    (at_step,) = [r for r in lines if r.get("commit") == f"c{FLAT_PRE}"]
    assert at_step["probability"] == 0.0


def test_a_sixteen_byte_step_in_5e8_bytes_stays_a_step_for_score_and_watch(tmp_path):
    history, values = _flat_step(tmp_path / "size.csv", 5e8, 16.0)
    scored = _score_step(tmp_path, history)
    assert scored["p_true"] == 1.0 and scored["explanation"].startswith("noise-free step")
    lines = _watch(values)
    alarms = [r for r in lines if r.get("decision")]
    assert [r["commit"] for r in alarms] == [f"c{FLAT_PRE}"]
    assert not any(r.get("withdrawn") for r in lines)


def test_a_new_level_that_went_back_past_the_old_one_says_so():
    assert describe("ctx_persist_after", -0.902) == (
        "new level not held: the next 10 commits went back past the old level (-0.902; 1 = held, 0 = went back)"
    )
    assert (
        describe("ctx_persist_after", 0.25)
        == "new level held over the next 10 commits 0.25 (1 = held, 0 = went back)"
    )


def test_a_relative_change_of_a_level_near_zero_says_it_means_little():
    rng = np.random.default_rng(19)
    delta = 0.1 * rng.standard_normal(120)
    delta[60:] += 0.5
    (alarm,) = [r for r in _watch(list(delta)) if r.get("decision")]
    assert alarm["commit"] == "c60"
    (relative,) = [f for f in alarm["top_features"] if "off pre median" in f]
    assert "(pre level within its noise of 0)" in relative
    # A level well away from 0 keeps the plain phrase.
    assert (
        describe("pair_rel_change", 0.2, {"pair_rel_noise": 0.02})
        == "after median 20% off pre median"
    )


def test_one_series_in_three_units_scores_the_same(tmp_path):
    rng = np.random.default_rng(0)
    shape = 1 + 0.03 * rng.standard_normal(300)
    shape[100:] *= 1.15
    shape[200:] *= 0.9
    history = tmp_path / "units.csv"
    history.write_text(
        "series_id,commit,value\n"
        + "".join(
            f"{sid},c{i},{v!r}\n"
            for sid, scale in (("ns", 100.0), ("s", 100e-9), ("x1e9", 100e9))
            for i, v in enumerate((scale * shape).tolist())
        )
    )
    cands, scored = tmp_path / "cands.csv", tmp_path / "scored.csv"
    code, text = invoke(
        ["candidates", "--data", history, "--detector", "perfherder", "--out", cands]
    )
    assert code == 0, text
    code, text = invoke(["score", "--data", history, "--candidates", cands, "--out", scored])
    assert code == 0, text
    table = pd.read_csv(scored).pivot(index="index", columns="series_id", values="p_true")
    assert len(table) == 2 and table.notna().all().all(), table  # the two steps, found in every unit
    assert (table.nunique(axis=1) == 1).all(), table
