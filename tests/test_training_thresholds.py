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
