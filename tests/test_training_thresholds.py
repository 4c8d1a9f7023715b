"""Threshold policies: parsing and the thresholds they choose."""

from __future__ import annotations

import numpy as np
import pytest

from triage.training.thresholds import Fixed, MaxFBeta, TargetRecall, choose_threshold, parse_policy


@pytest.mark.parametrize(
    "spec, policy",
    [
        ("0.5", Fixed(0.5)),
        (0.3, Fixed(0.3)),
        ("recall:0.95", TargetRecall(0.95)),
        ("recall>=0.9", TargetRecall(0.9)),
        ("fbeta:2", MaxFBeta(2.0)),
        ("F2", MaxFBeta(2.0)),
    ],
)
def test_parse(spec, policy):
    assert parse_policy(spec) == policy
    assert parse_policy(policy.spec()) == policy


@pytest.mark.parametrize("bad", ["high", "1.5", "recall:0", "recall:1.2", "fbeta:-1", None, True])
def test_parse_rejects(bad):
    with pytest.raises(ValueError):
        parse_policy(bad)


def test_target_recall_takes_the_highest_threshold_that_reaches_it():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    p = np.array([0.9, 0.8, 0.6, 0.2, 0.7, 0.3, 0.1, 0.05])
    assert choose_threshold(TargetRecall(0.75), y, p) == 0.6
    assert choose_threshold(TargetRecall(1.0), y, p) == 0.2
    assert choose_threshold(TargetRecall(0.5), y, p) == 0.8


def test_ties_are_called_together():
    y = np.array([1, 0, 1, 0])
    p = np.array([0.5, 0.5, 0.9, 0.1])
    t = choose_threshold(TargetRecall(1.0), y, p)
    assert t == 0.5


def test_fbeta_maximises_the_score():
    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.3
    p = np.clip(y * 0.3 + rng.random(500) * 0.7, 0, 1)
    for beta in (0.5, 1.0, 2.0):
        t = choose_threshold(MaxFBeta(beta), y, p)

        def f(th, beta=beta):
            pred = p >= th
            tp = np.sum(pred & y)
            prec, rec = tp / max(pred.sum(), 1), tp / y.sum()
            return (1 + beta**2) * prec * rec / (beta**2 * prec + rec) if tp else 0.0

        assert f(t) >= max(f(th) for th in np.unique(p)) - 1e-12


def test_no_positives_falls_back():
    assert choose_threshold(TargetRecall(0.9), np.zeros(5), np.linspace(0, 1, 5)) == 0.5
    assert choose_threshold(Fixed(0.2), np.zeros(5), np.linspace(0, 1, 5)) == 0.2


def test_detector_thresholds_never_lower_validation_f1_and_keep_recall():
    from triage.training.thresholds import choose_detector_thresholds

    def evaluator(curve):
        def evaluate(t):
            return curve(t)

        evaluate.candidates = np.linspace(0.05, 0.95, 19)
        return evaluate

    # helps: F1 rises until recall would fall below 95 % of the detector's (0.8 -> 0.76)
    helps = evaluator(lambda t: (0.6 + 0.3 * t, 0.8 - 0.1 * t) if t > 0 else (0.6, 0.8))
    # never helps: triage off (threshold 0, every candidate kept)
    hurts = evaluator(lambda t: (0.6 - 0.1 * t, 0.8) if t > 0 else (0.6, 0.8))
    chosen = choose_detector_thresholds({"a": helps, "b": hurts})
    assert chosen["b"] == 0.0
    f, r = helps(chosen["a"])
    assert r >= 0.95 * 0.8 - 1e-12 and f > 0.6
    assert chosen["a"] == pytest.approx(0.4)  # the highest threshold with recall >= 0.76


GRID = tuple(np.linspace(0.05, 0.95, 19))


def _curve_evaluator(curve, candidates=GRID):
    def evaluate(t):
        return curve(t)

    evaluate.candidates = np.asarray(candidates, dtype=float)
    return evaluate


def test_grouped_thresholds_need_a_gain_on_every_group():
    from triage.training.thresholds import choose_detector_thresholds_grouped

    # group A alone would pick a high threshold (F1 rises to t = 0.4);
    # group B loses F1 above 0.2, so only thresholds up to 0.2 gain on both
    a = _curve_evaluator(lambda t: (0.6 + 0.3 * t, 0.8 - 0.1 * t))
    b = _curve_evaluator(lambda t: (0.6 + 0.2 * t, 0.8) if t <= 0.2 else (0.5, 0.8))
    chosen = choose_detector_thresholds_grouped({"A": {"d": a}, "B": {"d": b}})
    assert chosen["d"] == pytest.approx(0.2)  # the largest worst-group gain
    # the single-group choice on A alone would have hurt B
    from triage.training.thresholds import choose_detector_thresholds

    alone = choose_detector_thresholds({"d": a})["d"]
    assert alone == pytest.approx(0.4)
    assert b(alone)[0] < b(0.0)[0]


def test_grouped_thresholds_fall_back_to_zero_when_one_group_never_gains():
    from triage.training.thresholds import choose_detector_thresholds_grouped

    helps = _curve_evaluator(lambda t: (0.6 + 0.3 * t, 0.8))
    flat = _curve_evaluator(lambda t: (0.6, 0.8))  # triage changes nothing here: no gain
    loses_recall = _curve_evaluator(lambda t: (0.7 + 0.1 * t, 0.8 - 0.5 * t) if t > 0 else (0.7, 0.8))
    chosen = choose_detector_thresholds_grouped(
        {"A": {"x": helps, "y": helps}, "B": {"x": flat, "y": loses_recall}}
    )
    assert chosen["x"] == 0.0
    # y: recall on B must stay >= 0.76, i.e. t <= 0.08; only 0.05 of the grid qualifies
    assert chosen["y"] == pytest.approx(0.05)


def test_grouped_thresholds_ignore_groups_without_candidates_and_pool_the_grid():
    from triage.training.thresholds import choose_detector_thresholds_grouped

    # A's own candidates are few; B's finer grid offers 0.33 where both still gain
    a = _curve_evaluator(lambda t: (0.6 + t, 0.8) if t <= 0.35 else (0.5, 0.8), candidates=[0.1, 0.5])
    b = _curve_evaluator(lambda t: (0.6 + t, 0.8) if t <= 0.35 else (0.5, 0.8), candidates=[0.2, 0.33, 0.9])
    empty = _curve_evaluator(lambda t: (0.0, 0.0), candidates=[])
    chosen = choose_detector_thresholds_grouped({"A": {"d": a}, "B": {"d": b}, "C": {"d": empty}})
    assert chosen["d"] == pytest.approx(0.33)
    assert choose_detector_thresholds_grouped({"C": {"d": empty}}) == {"d": 0.0}


def test_grouped_thresholds_on_real_tcpd_scores():
    """Candidates on two tiny "projects", TCPDBench F1 as in the benchmark."""
    from triage.core.metrics import f_measure
    from triage.training.thresholds import choose_detector_thresholds_grouped

    def evaluator(truth, cands, proba):
        cands, proba = np.asarray(cands), np.asarray(proba, dtype=float)

        def evaluate(t):
            s = f_measure({"truth": truth}, [int(i) for i in cands[proba >= t]], 5)
            return s.f, s.recall

        evaluate.candidates = proba
        return evaluate

    # project 1: the false alarms score low, the true ones high
    p1 = evaluator([50, 120], [10, 50, 90, 120], [0.1, 0.8, 0.2, 0.7])
    # project 2: one true change scores only 0.3, a false alarm 0.25
    p2 = evaluator([60], [30, 60], [0.25, 0.3])
    chosen = choose_detector_thresholds_grouped({"one": {"d": p1}, "two": {"d": p2}})
    t = chosen["d"]
    for ev in (p1, p2):
        assert ev(t)[0] > ev(0.0)[0] and ev(t)[1] >= 0.95 * ev(0.0)[1]
    assert t == pytest.approx(0.3)  # 0.7 would drop project two's only true change


def test_suppress_duplicates_keeps_the_strongest_per_neighbourhood():
    from triage.training.thresholds import suppress_duplicates

    series = np.array(["a", "a", "a", "a", "b", "b"])
    index = np.array([50, 53, 58, 90, 52, 200])
    p = np.array([0.6, 0.9, 0.7, 0.8, 0.95, 0.4])
    keep = np.array([True, True, True, True, True, False])
    got = suppress_duplicates(series, index, p, keep, radius=5)
    # 53 (0.9) beats 50 and 58 in series a; b's 52 is another series; 200 was not kept
    assert got.tolist() == [False, True, False, True, True, False]
    assert suppress_duplicates(series, index, p, keep, radius=0).tolist() == keep.tolist()
    # 58 is 8 from 50: with radius 4, only 50 falls to 53
    assert suppress_duplicates(series, index, p, keep, radius=4).tolist() == [False, True, True, True, True, False]
    assert keep.tolist() == [True, True, True, True, True, False]  # the input is not changed
