"""Walkthrough s21: a sheriff checking that the explanations are true, on real histories.

Real series of ../shared/data/real (``django-asv``, ``rhai``, ``otel-java``,
``emg3d-bench``'s memory series, ``empymod-bench``) went through ``triage
candidates`` (binseg, edivisive, hybrid_levene, cusum) + ``triage score``,
``triage label`` (``default-adaptive``) and ``triage watch --explain all``
(``online-w4``), and every number an explanation states was recomputed with
numpy from the windows the docs describe (candidate-bounded Pre / After of at
most 60 commits, the pair measures on the nearest 30 of each, the ``ctx_*``
fixed windows of 10 and 30 commits, adaptive windows for ``label``, the
online Pre since the last alarm with withdrawals undone and After = p and
the K = 4 next). What held (no test here, as each test below fails without
its fix): every percentage, median shift, noise-sd shift, separation,
effect size, noise ratio, consistency, count of neighbouring candidates,
dominance, persistence, drift, detector-score rank and "after mean ... sd
above / below pre" of 1,000+ explained rows of ``score`` matches (rtol 6e-3,
3 significant digits shown), as do ``label``'s window characteristics (lag-1
autocorrelations, sd of differences, spreads) and ``watch``'s pair measures
(6,000+ phrases); every sign agrees with its "toward true / false"; values
x 1000 and x 1e-6 give the same explanation text and P(true) for ``score``
and ``label``; rule-decided rows say "noise-free step" / "noise-free, no
change" with the right window lengths, a not-scorable row says so.

Defects found and fixed (what a user did, what went wrong, what happens now):

1. Scored a Perfherder-style alert at the second commit of a real
   ``django-asv`` series (Pre holds one commit). Its explanation said "too few
   commits after it to see the new level hold" (946 commits follow it) and
   "no relative change (pre median is 0)" (the Pre median is 4.2e-5); ``watch
   --explain all`` said "pre median is 0" for the first two commits of every
   series; and "shift 1 of the strongest candidate's within 10 commits (1 =
   strongest)" (0 with a neighbour) of a shift that is undefined. All are
   undefined because Pre holds fewer than 2 commits. Now: "no relative
   change (pre window under 2 commits)", "no new level to see hold: fewer
   than 2 commits before it", "no shift on 10 commits each side to rank
   among its neighbours: fewer than 2 commits before it".
2. Scored ``edivisive`` / ``hybrid_levene`` candidates on real ``rhai``
   series (integer ns/iter): candidates whose 10-commit medians before and
   after are equal (a zero step on the fixed windows) were explained "too few
   commits after it to see the new level hold", "too few commits before it to
   see a drift" and "no earlier stretch to compare the new level with" at
   commit 878 of 1,640: all three untrue; the ratios are undefined because
   the step they divide by is 0 (and a zero shift, alone, was "shift 1 of
   the strongest candidate's"). Now "no new level to see hold: the 10
   commits from it on have the median of the 10 before" (and the like).
3. A ``django-asv`` candidate whose next 10 commits moved 28.5 steps further
   the same way was explained "new level held over the next 10 commits 28.5
   (1 = held, 0 = went back)": off the phrase's scale, the new level was not
   held (as a value below 0 already said). Now "new level not held: the next
   10 commits moved on past it, further than the step (28.5; ...)".
4. "new level 0.006 shifts from any earlier level" read as if every earlier
   level were that close; the number is the distance to the *nearest* one
   (a minimum). Now "from the nearest earlier level" (and "nearest later
   level" for the old level coming back).
5. Scored ``hybrid_levene``'s candidates on a real ``rhai`` series: one
   whose Pre is eleven commits of 31 ns (after the candidate at 1428) was
   explained "after mean 174769166643615232.0 sd above pre": the sd of
   eleven equal values came out of the min-max normalisation as rounding
   (9e-19), and the explanation divided by it (its spread phrase read "after
   sd 1.6e+17x pre sd"). Now a normalised sd of at most 1e-12 is a window of
   equal values: "after mean 1.1 sd above pre" (After's sd, as for any flat
   Pre), "after sd 15% of the Pre+After range"; a shift of 1000 sd or more is
   written with three significant digits.

Found, not fixed here (outside triage/explain.py; reproductions in the
session's report): ``watch`` gives the commits of an empty Pre a probability
and reasons ("pre window is empty ...", e.g. P 0.80 at the first commit)
where ``score`` / ``label`` mark such an alert not scorable; "after mean 3.0
sd below pre" measures in *after's* sd when Pre's is 0 (a Pre of one commit
or a flat Pre), which the words do not say (``tests/test_explain.py`` pins
those words).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke

DJANGO = "django-asv/form_benchmarks.form_clean.benchmark.FormClean.time_form_clean/ubuntu-latest/conda-py3.10"
RHAI = "rhai/bench_engine_new_raw/gha-ubuntu-latest"
OTEL = (
    "otel-java/io.opentelemetry.sdk.LogRecordBenchmark.threads1({logSize:LARGE})/otel-bench-runner"
)
#: Every feature of the bundled scoring model explained (it has 64).
ALL = 80
#: One explained reason: the phrase and its signed contribution.
PIECE = re.compile(r"(.*?) \((?:([+-])(\d+\.\d\d) toward (true|false)|(0\.00), (neither way))\)(?:; |$)")


@pytest.fixture(scope="module")
def real(real_frame) -> pd.DataFrame:
    frame = real_frame[["series_id", "commit", "timestamp", "value"]]
    return frame[frame["series_id"].isin([DJANGO, RHAI, OTEL])].drop_duplicates(
        ["series_id", "commit"]
    )


def _values(real: pd.DataFrame, sid: str) -> np.ndarray:
    return real.loc[real["series_id"] == sid, "value"].to_numpy(dtype=np.float64)


def _score(real: pd.DataFrame, tmp_path, sid: str, indices: list[int]) -> dict[int, list[str]]:
    """``triage score --explain ALL`` of the candidates ``indices`` of series ``sid``: index -> reasons."""
    data = tmp_path / "h.csv"
    real[real["series_id"] == sid].to_csv(data, index=False)
    cands = tmp_path / "c.csv"
    pd.DataFrame({"series_id": sid, "index": indices}).to_csv(cands, index=False)
    out = tmp_path / "s.csv"
    code, text = invoke(
        [
            "score",
            "--data",
            data,
            "--candidates",
            cands,
            "--out",
            out,
            "--explain",
            ALL,
            "--show",
            0,
        ]
    )
    assert code == 0, text
    scored = pd.read_csv(out)
    reasons = {}
    for i, e in zip(scored["index"], scored["explanation"], strict=True):
        pieces = PIECE.findall(e)
        assert "; ".join(f"{a} ({b}{c} toward {d})" if d else f"{a} ({z}, {w})" for a, b, c, d, z, w in pieces) == e
        assert all((b == "+") == (d == "true") for _, b, _, d, _, _ in pieces if d)
        reasons[int(i)] = [a for a, *_ in pieces]
    return reasons


def test_an_alert_at_the_second_commit_is_not_said_to_lack_later_commits_or_a_nonzero_pre(
    real, tmp_path
):
    x = _values(real, DJANGO)
    assert (
        x[0] != 0 and x.size > 900
    )  # Pre (commit 0 alone) has a median far from 0; 900+ commits follow
    reasons = _score(real, tmp_path, DJANGO, [1, 400])[1]
    text = " | ".join(reasons)
    assert "pre median is 0" not in text and "too few commits after it" not in text
    assert "no relative change (pre window under 2 commits)" in reasons
    assert "no new level to see hold: fewer than 2 commits before it" in reasons
    assert (
        "no shift on 10 commits each side to rank among its neighbours: fewer than 2 commits before it"
        in reasons
    )


def test_a_zero_step_on_the_fixed_windows_is_not_said_to_lack_commits(real, tmp_path):
    x = _values(real, RHAI)
    p = 878
    assert np.median(x[p - 10 : p]) == np.median(
        x[p : p + 10]
    )  # integer ns: equal medians, a zero step
    assert x.size - p > 30 and p > 30  # commits enough on both sides
    reasons = _score(real, tmp_path, RHAI, [p])[p]
    text = " | ".join(reasons)
    assert (
        "too few commits" not in text
        and "no earlier stretch" not in text
        and "no later stretch" not in text
    )
    same = "the 10 commits from it on have the median of the 10 before"
    assert f"no new level to see hold: {same}" in reasons
    assert f"no shift to measure a drift before it by: {same}" in reasons
    assert "shift on 10 commits each side 0 noise sd" in reasons
    assert f"no shift on 10 commits each side to rank among its neighbours: {same}" in reasons


def test_a_level_that_moved_on_far_past_the_step_is_not_said_to_have_held(real, tmp_path):
    x = _values(real, DJANGO)
    p = 198
    before, after = np.median(x[p - 10 : p]), np.median(x[p : p + 10])
    ratio = (np.median(x[p + 10 : p + 20]) - before) / (after - before)
    assert ratio > 20
    reasons = _score(real, tmp_path, DJANGO, [p])[p]
    (held,) = [r for r in reasons if "the next 10 commits" in r]
    assert held == (
        f"new level not held: the next 10 commits moved on past it, further than the step "
        f"({ratio:.3g}; 1 = held, 0 = went back)"
    )


def test_the_earlier_and_later_levels_are_the_nearest_ones_as_computed(real, tmp_path):
    x = _values(real, DJANGO)
    p = 400
    before, after = np.median(x[p - 10 : p]), np.median(x[p : p + 10])
    step = abs(after - before)
    medians = np.array([np.median(x[i : i + 10]) for i in range(x.size - 9)])
    seen = np.min(np.abs(medians[: p - 19] - after)) / step  # windows ending before p - 10
    back = np.min(np.abs(medians[p + 20 :] - before)) / step  # windows starting at p + 20 or later
    reasons = _score(real, tmp_path, DJANGO, [p])[p]
    assert (
        f"new level {seen:.3g} shifts from the nearest earlier level (0 = seen before)" in reasons
    )
    assert (
        f"old level {back:.3g} shifts from the nearest later level (0 = it comes back)" in reasons
    )


def test_watch_does_not_say_pre_median_is_0_for_the_first_commits(real, tmp_path):
    feed = tmp_path / "feed.csv"
    real[real["series_id"] == OTEL].head(10)[["series_id", "commit", "value"]].to_csv(
        feed, index=False
    )
    assert (real.loc[real["series_id"] == OTEL, "value"].head(2) > 0).all()
    # --min-pre 0: the model is asked about a series' first commits (by default the stream rule holds
    # them back and gives its own reason)
    code, text = invoke(["watch", "--csv", feed, "--explain", "all", "--min-pre", "0"])
    assert code == 0, text
    first_two = [json.loads(line) for line in text.splitlines() if line.startswith("{")][:2]
    reasons = [r for d in first_two for r in d["top_features"]]
    assert reasons and not any("pre median is 0" in r for r in reasons)
    assert any(r.startswith("no relative change (pre window under 2 commits)") for r in reasons)


def test_a_flat_pre_is_not_said_to_be_left_behind_by_1e17_sd(real, tmp_path):
    x = _values(real, RHAI)
    p = 1440
    assert (
        np.ptp(x[1429:p]) == 0 and np.ptp(x[p : p + 60]) > 0
    )  # Pre (after the candidate at 1428): 11 x 31 ns
    reasons = _score(real, tmp_path, RHAI, [1428, p])[p]
    (level,) = [r for r in reasons if r.startswith("after mean")]
    after = x[p : p + 60]
    assert (
        level == f"after mean {(after.mean() - x[p - 1]) / after.std(ddof=1):.1f} sd above pre"
    )  # in After's sd
    spread = after.std(ddof=1) / np.ptp(np.concatenate([x[1429:p], after]))
    assert (
        f"after sd {spread:.0%} of the Pre+After range" in reasons
    )  # not "after sd 1.6e+17x pre sd"
