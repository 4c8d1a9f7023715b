"""Walkthrough s19: a performance engineer moving from Perfherder and Apache Otava checks the namesakes.

The user read the published algorithms (treeherder's ``perfalert``
``detect_changes`` and ``perf/alerts.py``; Otava's ``analysis.py`` and
``change_point_divisive/``), built small series whose outcome can be worked
out by hand (a clean step, two close steps, a spike, a step at either end, a
series shorter than the windows, equal values, a regression and its fix) and
compared. ``perfherder`` gave the same alerts, t-values and percentages as a
literal transcription of ``detect_changes`` plus the 2 % filter, on those
series and on all 372 real histories (the same per-commit values); ``edivisive`` gave the same change
points and p-values as Otava 0.8.0's ``compute_change_points`` on those series
and on all 372 real histories, at our defaults and at Otava's.

Defects found (what a user did, what went wrong, what happens now):

1. Read ``edivisive``'s parameters to reproduce ``otava analyze``: the
   docstring said "Otava's CLI default is 30, its library default 50", but
   ``otava analyze --window`` defaults to 50 (30 is only ``split()``'s own
   default), and it did not say that Otava's ``-P`` (0.001) and
   ``--magnitude`` (0) differ from ours (0.01, 0.05): with our defaults a
   3 % step Otava reports was silently missing. Now the docstring gives
   Otava's defaults and the parameters that reproduce them
   (``window=50 max_pvalue=0.001 min_magnitude=0``, which find that step).
2. Compared ``edivisive``'s ``t`` with Perfherder's: nothing said that it is
   Student's t of *before against after* (negative when the level rises),
   while ``perfherder``'s ``t`` is an absolute value, nor that ``magnitude``
   is a fraction and ``rel_change_pct`` a percentage, nor that Perfherder's
   ``t`` field is not capped (``inf`` when both windows are constant, while
   ``score`` holds Perfherder's 1000). Now both docstrings say so.
3. The note on duplicate weak change points said Otava compares whole
   objects; Otava 0.8's ``split`` de-duplicates by index, as we do. Reworded.
4. Put a step at commit 1 of 40 (and one at commit 39) through ``pelt`` and
   ``binseg``: reported at 5 (and 35), and a one-commit spike came out as two
   change points 5 apart; nothing said why. It is ruptures' ``min_size``
   (5), which the exact search keeps too; ``penalised.py`` now says so.

Deviations that would change candidates, documented in
``triage/detectors/windowed.py`` and shown by strict xfails here (not fixed):

5. A Perfherder server re-runs the scan at every new result on the results
   after the series' latest alert, so a second step 6 commits after an alert
   is never raised there; ``perfherder`` (one scan over the whole history)
   raises both. On the real histories: 35 of 690 alerts not raised by the
   replayed server loop, 7 others raised by it instead.
6. Perfherder's percentage divides by the signed mean before the alert, so a
   series of negative values never alerts there; ``perfherder`` alerts.
7. ``pelt`` / ``binseg`` search a grid of every 5th commit (ruptures'
   ``jump=5``) and refine; with steps at 6 and 12 of 40 the grid gives 5, 10,
   15, the merge of 5 and 10 gives 6, and 15 is never refined again against
   its new neighbour: [6, 15] where the exact search (``jump=1``) gives
   [6, 12]. ``penalised.py`` now says the result is an approximation and how
   far it is on the real histories; the strict xfail shows this case.
8. ``hybrid_ks`` keeps only the last of neighbouring revisions with equal
   p-values, and its docstring said the study did so; the study's published
   scripts and treeherder's ``perf/methods`` keep them all (on a quantised
   step: 24, 25 and 30 there, 25 and 30 here). Docstring corrected, with the
   count on the real histories; strict xfail.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers_cli import invoke
from scipy.special import gammaln

from triage.core.noise import robust_sigma
from triage.detectors import make
from triage.detectors.bocpd import _student_logpdf
from triage.detectors.edivisive import qhat_candidate
from triage.detectors.windowed import perfherder_t

#: Ten fixed noise values (mean 0.01), repeated: series whose outcome can be checked by hand.
NOISE = np.array([0.3, -0.2, 0.1, -0.4, 0.2, 0.0, -0.1, 0.4, -0.3, 0.1])


def noisy(n: int, steps: dict[int, float], base: float = 100.0) -> np.ndarray:
    """``base`` plus the fixed noise, plus ``steps[i]`` from commit ``i`` on."""
    x = base + np.resize(NOISE, n)
    for at, size in steps.items():
        x[at:] += size
    return x


def write_long(path: Path, series: dict[str, np.ndarray]) -> Path:
    rows = ["series_id,commit,value"]
    for sid, x in series.items():
        rows += [f"{sid},c{i},{v!r}" for i, v in enumerate(x.tolist())]
    path.write_text("\n".join(rows) + "\n")
    return path


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


# -- perfherder against the published detect_changes ---------------------------------------


def test_perfherder_t_is_the_weighted_t_of_detect_changes_by_hand():
    # back 10, 12, 11 (nearest first: 11, 12, 10), fore 20, 22, 21; weights 1, 2/3, 1/3:
    # means 67/6 and 125/6, both variances 25/24 around them, t = (58/6) / sqrt(2 * 25/72) = 11.6.
    assert perfherder_t(np.array([11.0, 12.0, 10.0]), np.array([20.0, 22.0, 21.0])) == pytest.approx(11.6)
    cps = make("perfherder", min_back_window=3, max_back_window=3, fore_window=3).detect([10, 12, 11, 20, 22, 21])
    assert [c.index for c in cps] == [3]
    assert cps[0].score == pytest.approx(11.6)
    # the alert's magnitude is on the plain window means: 100 * (21 - 11) / 11
    assert cps[0].fields["mean_before"] == 11.0 and cps[0].fields["mean_after"] == 21.0
    assert cps[0].fields["rel_change_pct"] == pytest.approx(1000 / 11)


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        ("clean step", noisy(60, {30: 10.0}), [30]),
        ("regression then fix", noisy(90, {30: 10.0, 60: -10.0}), [30, 60]),
        ("two close steps", noisy(80, {30: 10.0, 36: 10.0}), [30, 36]),
        # one commit cannot move a 12-commit window's weighted mean far enough against its variance
        ("spike", noisy(60, {30: 30.0, 31: -30.0}), []),
        # the windows must be full: a step 1 commit from either end waits for more data
        ("step at the first commit", noisy(40, {1: 10.0}), []),
        ("step at the last commit", noisy(40, {39: 10.0}), []),
        ("shorter than both windows", noisy(23, {12: 10.0}), []),
        ("equal values", np.full(50, 100.0), []),
        ("slow drift", 100 + np.resize(NOISE, 100) + np.linspace(0, 20, 100), []),
    ],
)
def test_perfherder_flags_what_detect_changes_flags(name, values, expected):
    assert [c.index for c in make("perfherder").detect(values)] == expected, name


def test_perfherder_constant_windows_score_1000_and_keep_the_infinite_t(tmp_path):
    # Perfherder stores an infinite t as 1000; the `t` field keeps it uncapped (documented now).
    data = write_long(tmp_path / "h.csv", {"s1": np.r_[np.full(24, 100.0), np.full(24, 110.0)]})
    code, out = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", tmp_path / "c.csv"])
    assert code == 0, out
    (row,) = read_rows(tmp_path / "c.csv")
    assert (row["index"], float(row["score"]), float(row["t"])) == ("24", 1000.0, math.inf)
    assert (float(row["mean_before"]), float(row["mean_after"]), float(row["rel_change_pct"])) == (100.0, 110.0, 10.0)
    # one commit short of the fore window: nothing yet
    short = write_long(tmp_path / "s.csv", {"s1": np.r_[np.full(24, 100.0), np.full(11, 110.0)]})
    code, out = invoke(["candidates", "--data", short, "--detector", "perfherder", "--out", tmp_path / "s_c.csv"])
    assert code == 0, out
    assert read_rows(tmp_path / "s_c.csv") == []


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="perfherder is detect_changes over the whole history; a Perfherder server scans only the results "
    "after the latest alert, so a step 6 commits after an alert is not raised there (windowed.py docstring)",
)
def test_perfherder_raises_what_the_server_loop_raises_on_two_close_steps():
    assert [c.index for c in make("perfherder").detect(noisy(80, {30: 10.0, 36: 10.0}))] == [30]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="Perfherder's amount_pct divides by the signed prev_value, so negative series never alert there; "
    "ours divides by |before| (windowed.py docstring)",
)
def test_perfherder_never_alerts_on_a_negative_series_like_perfherder():
    assert make("perfherder").detect(noisy(60, {30: -10.0}, base=-100.0)) == []


# -- edivisive against Otava ------------------------------------------------------------------


def test_edivisive_with_otava_analyze_defaults_finds_the_small_step_otava_reports(tmp_path):
    # Otava 0.8.0 (window 50, -P 0.001, --magnitude 0) reports the 3 % step at 30 with p ~ 6.5e-48;
    # our defaults (min_magnitude 0.05) drop it.
    data = write_long(tmp_path / "h.csv", {"s1": noisy(60, {30: 3.0})})
    out_ours = tmp_path / "ours.csv"
    code, out = invoke(["candidates", "--data", data, "--detector", "edivisive", "--out", out_ours])
    assert code == 0, out
    assert read_rows(out_ours) == []
    out_otava = tmp_path / "otava.jsonl"
    code, out = invoke([
        "candidates", "--data", data, "--detector", "edivisive", "--out", out_otava, "--format", "json",
        "--param", "window=50", "--param", "max_pvalue=0.001", "--param", "min_magnitude=0",
    ])
    assert code == 0, out
    (row,) = [json.loads(line) for line in out_otava.read_text().splitlines()]
    assert row["index"] == 30
    assert row["p_value"] == pytest.approx(6.48807091105326e-48, rel=1e-9)
    # the documented conventions: t of before against after (negative on a rise), magnitude a fraction
    assert row["t"] < 0
    assert row["mean_before"] == pytest.approx(100.01) and row["mean_after"] == pytest.approx(103.01)
    assert row["magnitude"] == pytest.approx(max(103.01 / 100.01 - 1, 1 - 100.01 / 103.01))


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        # change points and p-values of Otava 0.8.0's compute_change_points(window_len=30,
        # max_pvalue=0.01, min_magnitude=0.05) on the same values
        ("clean step", noisy(60, {30: 10.0}), [(30, 5.96886726419589e-78)]),
        ("two close steps", noisy(80, {30: 10.0, 36: 10.0}), [(30, 3.4170047211361385e-42), (36, 6.71586648830506e-56)]),
        ("step at the first commit", noisy(40, {1: 10.0}), [(1, 2.839518281313254e-32)]),
        ("step at the last commit", noisy(40, {39: 10.0}), [(39, 1.2061926131697706e-32)]),
        ("shorter than the window", noisy(10, {5: 10.0}), [(5, 3.829161456908292e-12)]),
        ("regression then fix", noisy(90, {30: 10.0, 60: -10.0}), [(30, 5.96886726419589e-78), (60, 5.96886726419589e-78)]),
        ("spike", noisy(60, {30: 30.0, 31: -30.0}), []),
        ("equal values", np.full(50, 100.0), []),
    ],
)
def test_edivisive_gives_otavas_change_points(name, values, expected):
    cps = make("edivisive").detect(values)
    assert [c.index for c in cps] == [i for i, _ in expected], name
    for c, (_, p) in zip(cps, expected, strict=True):
        assert c.fields["p_value"] == pytest.approx(p, rel=1e-9, abs=0)
    # the regression's t is negative (a rise), the fix's positive (a fall)
    if name == "regression then fix":
        assert cps[0].fields["t"] < 0 < cps[1].fields["t"]


@pytest.mark.parametrize("detector", ["pelt", "binseg"])
def test_penalised_search_keeps_min_size_commits_per_segment_as_documented(detector):
    det = make(detector)
    assert [c.index for c in det.detect(noisy(40, {1: 10.0}))] == [5]
    assert [c.index for c in det.detect(noisy(40, {39: 10.0}))] == [35]
    spike = [c.index for c in det.detect(noisy(60, {30: 30.0, 31: -30.0}))]
    assert len(spike) == 2 and spike[1] - spike[0] == 5 and spike[0] <= 30 < spike[1]
    # with min_size=1 the same search puts them where they are
    one = make(detector, min_size=1, jump=1)
    assert [c.index for c in one.detect(noisy(40, {1: 10.0}))] == [1]
    assert [c.index for c in one.detect(noisy(40, {39: 10.0}))] == [39]


@pytest.mark.parametrize("detector", ["pelt", "binseg"])
def test_penalised_jump_1_is_the_exact_search(detector):
    # steps at 6 and 12 of 40: ruptures' exact search (jump=1, the same penalty) puts them there
    assert [c.index for c in make(detector, jump=1).detect(noisy(40, {6: 10.0, 12: 10.0}))] == [6, 12]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="the jump=5 grid gives 5, 10, 15; the merge makes 5 and 10 one change at 6, but 15 is not refined "
    "again against its new neighbour (one more refine_l2 pass would find 12)",
)
@pytest.mark.parametrize("detector", ["pelt", "binseg"])
def test_penalised_default_grid_finds_what_the_exact_search_finds(detector):
    assert [c.index for c in make(detector).detect(noisy(40, {6: 10.0, 12: 10.0}))] == [6, 12]


#: Two levels 10 apart, each value 0 or 1 above its level: KS p-values tie between neighbours.
QUANTISED = [
    101, 100, 101, 100, 100, 101, 101, 100, 101, 101, 101, 100, 101, 100, 100, 100, 100, 100, 100, 101,
    101, 100, 100, 100, 101, 101, 101, 101, 101, 101, 110, 111, 110, 110, 111, 110, 111, 110, 110, 110,
    110, 111, 111, 110, 111, 110, 111, 111, 110, 110, 111, 111, 110, 111, 110, 110, 111, 110, 111, 111,
]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="HybridTest keeps only the last of adjacent equal p-values; the study's scripts and treeherder's "
    "BaseDetector keep every one (24 and 25 here)",
)
def test_hybrid_ks_keeps_every_revision_of_a_run_of_equal_p_values_like_the_study():
    assert [c.index for c in make("hybrid_ks").detect(np.array(QUANTISED, dtype=float))] == [24, 25, 30]


def test_edivisive_qhat_is_matteson_and_james_statistic_by_brute_force():
    z = np.array([1.0, 1.2, 0.9, 3.0, 3.3, 2.8, 3.1])
    best = (-math.inf, 0)
    for tau in range(1, len(z)):
        for kappa in range(tau + 1, len(z) + 1):
            x, y = z[:tau], z[tau:kappa]
            n, m = len(x), len(y)
            within_x = sum(abs(a - b) for i, a in enumerate(x) for b in x[i + 1 :])
            within_y = sum(abs(a - b) for i, a in enumerate(y) for b in y[i + 1 :])
            q = 2 / (n + m) * sum(abs(a - b) for a in x for b in y)
            q -= 2 * m / ((n + m) * (n - 1)) * within_x if n > 1 else 0.0
            q -= 2 * n / ((n + m) * (m - 1)) * within_y if m > 1 else 0.0
            best = max(best, (q, -tau))  # ties to the smallest tau, as Otava's argmax
    tau, q = qhat_candidate(z)
    assert (tau, q) == (-best[1], pytest.approx(best[0]))
    assert tau == 3


def test_bocpd_start_probability_is_the_exact_posterior_by_enumeration():
    # Adams & MacKay with a constant hazard is a product-partition model: enumerate every
    # segmentation of 7 values, weigh it by the hazard terms and each segment's marginal likelihood
    # (the product of its sequential Student-t predictives), and compare P(a segment starts at s | x[:s+lag+1]).
    x = np.array([0.1, 2.0, 2.2, -1.0, 5.0, 5.3, 5.1])
    z = (x - np.median(x)) / robust_sigma(x)
    h = 1 / 3.0

    def segment_log_ml(seg: np.ndarray) -> float:
        mu, kappa, alpha, beta = np.zeros(1), np.array([0.01]), np.array([2.0]), np.array([1.0])
        total = 0.0
        for v in seg:
            total += float(_student_logpdf(v, mu, kappa, alpha, beta, gammaln)[0])
            beta = beta + kappa * (v - mu) ** 2 / (2 * (kappa + 1))
            mu = (kappa * mu + v) / (kappa + 1)
            kappa, alpha = kappa + 1, alpha + 0.5
        return total

    def last_start_posterior(t: int) -> np.ndarray:
        log_post = np.full(t + 1, -np.inf)
        for changes in itertools.product([0, 1], repeat=t):
            starts = [0] + [j + 1 for j in range(t) if changes[j]]
            bounds = [*starts, t + 1]
            lw = sum(math.log(h) if c else math.log1p(-h) for c in changes)
            lw += sum(segment_log_ml(z[a:b]) for a, b in itertools.pairwise(bounds))
            log_post[starts[-1]] = np.logaddexp(log_post[starts[-1]], lw)
        return np.exp(log_post - np.logaddexp.reduce(log_post))

    for lag in (0, 2):
        prob, _ = make("bocpd", expected_run=3.0, lag=lag).start_probabilities(x)
        for start in range(1, len(x)):
            assert prob[start] == pytest.approx(last_start_posterior(min(start + lag, len(x) - 1))[start], abs=1e-12)


def test_candidates_are_the_same_run_after_run(tmp_path):
    data = write_long(
        tmp_path / "h.csv",
        {"a": noisy(90, {30: 10.0, 60: -10.0}), "b": noisy(80, {30: 10.0, 36: 10.0}), "c": noisy(60, {30: 3.0})},
    )
    for det in ("perfherder", "edivisive", "cusum", "bocpd", "pelt", "binseg"):
        outs = []
        for run in range(2):
            out = tmp_path / f"{det}{run}.csv"
            code, text = invoke(["candidates", "--data", data, "--detector", det, "--out", out])
            assert code == 0, text
            outs.append(out.read_bytes())
        assert outs[0] == outs[1], det
