"""Metrics: change-point detection (TCPDBench) and triage classification.

Change-point detection
----------------------
The F-measure of the Turing Change Point Detection Benchmark (van den Burg &
Williams 2020), as used by the Mozilla change-point study:

* a prediction is a true positive when it lies within ``margin`` commits of a
  change point, each change point matching at most one prediction (the
  closest one);
* **precision** = matched predictions / predictions, against the union of all
  annotators' change points;
* **recall** = mean over annotators of the fraction of *their* change points
  matched;
* index 0 is added to every annotation and to the predictions (the start of
  the series is trivially a change point), so empty sets are well defined.

Re-implemented from the paper's definition; the doctests below are the
published examples of TCPDBench's ``metrics.py``. One precision: matching is
greedy over change points *in ascending order* (TCPDBench iterates a Python
set, whose order is an implementation detail), so results are deterministic.

Classification
--------------
AUC, accuracy, sensitivity and specificity of triage decisions
(true positive = a real change, the "positive" class). This is the one
definition: training's hold-out and evaluation protocol
(:func:`classification_report`) and batch labelling's agreement with human or
ground-truth labels (:func:`confusion`, :meth:`Confusion.rates`) use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------- change points


def true_positives(truth: Iterable[int], predictions: Iterable[int], margin: int = 5) -> set[int]:
    """Change points of ``truth`` matched by a prediction within ``margin``, one-to-one.

    Each change point (ascending) takes the closest unused prediction within
    the margin (ties to the smaller index).

    >>> sorted(true_positives({1, 10, 20, 23}, {3, 8, 20}))
    [1, 10, 20]
    >>> sorted(true_positives({1, 10, 20, 23}, {1, 3, 8, 20}))
    [1, 10, 20]
    >>> sorted(true_positives({1, 10, 20, 23}, {1, 3, 5, 8, 20}))
    [1, 10, 20]
    >>> true_positives(set(), {1, 2, 3})
    set()
    >>> true_positives({1, 2, 3}, set())
    set()
    """
    free = sorted(set(predictions))
    matched: set[int] = set()
    for tau in sorted(set(truth)):
        close = [(abs(tau - x), x) for x in free if abs(tau - x) <= margin]
        if not close:
            continue
        _, best = min(close)
        matched.add(tau)
        free.remove(best)
    return matched


@dataclass(frozen=True)
class FScore:
    """F-measure with its precision and recall (all in [0, 1])."""

    f: float
    precision: float
    recall: float


def f_measure(
    annotations: Mapping[object, Iterable[int]],
    predictions: Iterable[int],
    margin: int = 5,
    beta: float = 1.0,
) -> FScore:
    """TCPDBench F-measure of ``predictions`` against several annotators.

    Parameters
    ----------
    annotations : annotator id -> change-point indices (0-based)
    predictions : predicted change-point indices (0-based)
    margin : tolerance in commits (TCPDBench uses 5; ``margin=1`` is strict)
    beta : 1 for F1, 2 for F2 (recall weighs more)

    >>> f_measure({1: [10, 20], 2: [11, 20], 3: [10], 4: [0, 5]}, [10, 20]).f
    1.0
    >>> f_measure({1: [], 2: [10], 3: [50]}, [10]).f
    0.9090909090909091
    >>> f_measure({1: [], 2: [10], 3: [50]}, []).f
    0.8
    >>> s = f_measure({1: [], 2: [10], 3: [50]}, [10])
    >>> round(s.precision, 4), round(s.recall, 4)
    (1.0, 0.8333)
    >>> round(f_measure({1: [], 2: [10], 3: [50]}, [10], beta=2).f, 4)
    0.8621
    >>> f_measure({1: [100]}, [103], margin=1).f   # outside a margin of 1
    0.5
    >>> f_measure({1: [100]}, [103], margin=5).f
    1.0
    """
    if beta <= 0:
        raise ValueError("beta must be positive")
    if not annotations:
        raise ValueError("need at least one annotator")
    per_annotator = [set(cps) | {0} for cps in annotations.values()]
    predicted = set(predictions) | {0}
    union = set().union(*per_annotator)
    precision = len(true_positives(union, predicted, margin)) / len(predicted)
    recall = float(np.mean([len(true_positives(t, predicted, margin)) / len(t) for t in per_annotator]))
    if precision == 0 and recall == 0:
        return FScore(0.0, 0.0, 0.0)
    b2 = beta * beta
    f = (1 + b2) * precision * recall / (b2 * precision + recall)
    return FScore(f, precision, recall)


def f1(annotations: Mapping[object, Iterable[int]], predictions: Iterable[int], margin: int = 5) -> float:
    """F1 with margin (TCPDBench's default measure)."""
    return f_measure(annotations, predictions, margin, beta=1.0).f


def f2(annotations: Mapping[object, Iterable[int]], predictions: Iterable[int], margin: int = 5) -> float:
    """F2 with margin: recall counts four times as much as precision."""
    return f_measure(annotations, predictions, margin, beta=2.0).f


# --------------------------------------------------------------------------- classification


def _binary(y: Iterable) -> np.ndarray:
    arr = np.asarray(list(y) if not isinstance(y, np.ndarray) else y)
    if arr.dtype == bool:
        return arr
    uniq = set(np.unique(arr).tolist())
    if not uniq <= {0, 1}:
        raise ValueError(f"labels must be 0/1 or boolean, got values {sorted(uniq)[:5]}")
    return arr.astype(bool)


def roc_auc(y_true: Iterable, scores: Iterable[float]) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties count 1/2.

    Computed from mid-ranks (the Mann-Whitney U identity), O(n log n).
    NaN when only one class is present.

    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 1], [0.5, 0.5])
    0.5
    """
    y = _binary(y_true)
    s = np.asarray(list(scores) if not isinstance(scores, np.ndarray) else scores, dtype=np.float64)
    if len(s) != len(y):
        raise ValueError("y_true and scores differ in length")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    # mid-ranks for ties: the run [a, b) of equal scores shares rank (a + b + 1) / 2
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


@dataclass(frozen=True)
class Confusion:
    """Counts of a binary decision against the truth."""

    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def accuracy(self) -> float:
        n = self.tp + self.fp + self.tn + self.fn
        return (self.tp + self.tn) / n if n else float("nan")

    @property
    def sensitivity(self) -> float:
        """True-positive rate (recall of real changes)."""
        p = self.tp + self.fn
        return self.tp / p if p else float("nan")

    @property
    def specificity(self) -> float:
        """True-negative rate (false alarms correctly dismissed)."""
        q = self.tn + self.fp
        return self.tn / q if q else float("nan")

    def rates(self) -> dict[str, float]:
        """``accuracy``, ``sensitivity`` and ``specificity``; NaN where a denominator is 0."""
        return {"accuracy": self.accuracy, "sensitivity": self.sensitivity, "specificity": self.specificity}


def confusion(y_true: Iterable, y_pred: Iterable) -> Confusion:
    """Confusion counts of 0/1 (or boolean) predictions.

    >>> c = confusion([1, 1, 0, 0, 0], [1, 0, 0, 0, 1])
    >>> c, c.accuracy, c.sensitivity, c.specificity
    (Confusion(tp=1, fp=1, tn=2, fn=1), 0.6, 0.5, 0.6666666666666666)
    """
    y, p = _binary(y_true), _binary(y_pred)
    if len(y) != len(p):
        raise ValueError("y_true and y_pred differ in length")
    return Confusion(int(np.sum(y & p)), int(np.sum(~y & p)), int(np.sum(~y & ~p)), int(np.sum(y & ~p)))


def classification_report(y_true: Iterable, scores: Iterable[float], threshold: float = 0.5) -> dict[str, float]:
    """AUC of ``scores`` and accuracy / sensitivity / specificity of ``scores >= threshold``.

    ``y_true`` 0/1 or boolean, shape (n,); ``scores`` P(positive), shape (n,).
    AUC is NaN when only one class is present.

    >>> classification_report([0, 0, 1, 1], [0.1, 0.6, 0.7, 0.4])
    {'auc': 0.75, 'accuracy': 0.5, 'sensitivity': 0.5, 'specificity': 0.5}
    """
    s = np.asarray(list(scores) if not isinstance(scores, np.ndarray) else scores, dtype=np.float64)
    y = _binary(y_true)
    return {"auc": roc_auc(y, s), **confusion(y, s >= threshold).rates()}
