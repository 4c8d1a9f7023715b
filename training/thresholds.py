"""Decision-threshold policies: which P(true alert) makes a candidate "true".

Mozilla's sheriffs asked above all for fewer *missed* regressions (Bauer et
al., ICPE 2022, discussion): a false alarm costs a look, a missed regression
ships. So besides the fixed 0.5 the threshold can be chosen on validation data
to reach a target recall (sensitivity) or to maximise F-beta (beta > 1 weighs
recall above precision).

Spellings accepted by :func:`parse_policy` (and so by ``threshold=``):

========================  ===============================================
``0.5`` / ``"0.5"``        fixed threshold
``"recall:0.95"``          highest threshold whose validation recall >= 0.95
``"fbeta:2"`` / ``"f2"``   threshold maximising validation F2
========================  ===============================================
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fixed:
    value: float = 0.5
    needs_validation = False

    def spec(self) -> str:
        return f"{self.value:g}"


@dataclass(frozen=True)
class TargetRecall:
    recall: float
    needs_validation = True

    def spec(self) -> str:
        return f"recall:{self.recall:g}"


@dataclass(frozen=True)
class MaxFBeta:
    beta: float = 1.0
    needs_validation = True

    def spec(self) -> str:
        return f"fbeta:{self.beta:g}"


Policy = Fixed | TargetRecall | MaxFBeta

#: A detector + triage on validation series: threshold -> (F1, recall), carrying
#: the validation probabilities as its ``candidates`` attribute.
Evaluator = Callable[[float], tuple[float, float]]


def parse_policy(spec: object) -> Policy:
    """A policy object from a number, a spelling above, or a policy object.

    Raises ``ValueError`` for anything else or an out-of-range value.
    """
    if isinstance(spec, Fixed | TargetRecall | MaxFBeta):
        policy = spec
    elif isinstance(spec, numbers.Real) and not isinstance(spec, bool | np.bool_):
        # numbers.Real: a numpy scalar (np.float32(0.3), a value taken from an array) is a
        # number too; it was "threshold np.float32(0.3) is not a number".
        policy = Fixed(float(spec))
    elif isinstance(spec, str):
        text = spec.strip().lower().replace(" ", "")
        try:
            if text.startswith("recall:") or text.startswith("recall>="):
                policy = TargetRecall(float(text.split(":", 1)[-1].split(">=", 1)[-1]))
            elif text.startswith("fbeta:"):
                policy = MaxFBeta(float(text.split(":", 1)[1]))
            elif text.startswith("f") and text[1:].replace(".", "", 1).isdigit():
                policy = MaxFBeta(float(text[1:]))
            else:
                policy = Fixed(float(text))
        except ValueError:
            raise ValueError(
                f"threshold {spec!r} is not a number, 'recall:R' or 'fbeta:B'"
            ) from None
    else:
        raise ValueError(f"threshold {spec!r} is not a number, 'recall:R' or 'fbeta:B'")
    if isinstance(policy, Fixed) and not 0.0 <= policy.value <= 1.0:
        raise ValueError(f"fixed threshold {policy.value} is outside [0, 1]")
    if isinstance(policy, TargetRecall) and not 0.0 < policy.recall <= 1.0:
        raise ValueError(f"target recall {policy.recall} is outside (0, 1]")
    if isinstance(policy, MaxFBeta) and not (policy.beta > 0 and math.isfinite(policy.beta)):
        raise ValueError(f"F-beta needs a finite beta > 0, got {policy.beta}")
    return policy


def choose_threshold(policy: Policy, y_true: np.ndarray, proba: np.ndarray) -> float:
    """The threshold ``policy`` picks on validation data.

    Parameters
    ----------
    y_true : shape (n,), 1 = true alert, 0 = false alert
    proba : shape (n,), predicted P(true alert) in [0, 1]

    Candidates with ``proba >= threshold`` are called true. For
    :class:`TargetRecall` the result is the *highest* threshold that still
    reaches the recall (so precision is as high as the target allows); for
    :class:`MaxFBeta` the threshold with the best F-beta (ties: highest). With
    no positive in ``y_true`` a learned policy falls back to 0.5.
    """
    if isinstance(policy, Fixed):
        return policy.value
    y = np.asarray(y_true).astype(bool)
    p = np.asarray(proba, dtype=np.float64)
    if y.shape != p.shape or p.ndim != 1:
        raise ValueError(f"y_true and proba must have the same shape (n,), got {y.shape} and {p.shape}")
    if np.isnan(p).any():
        # A NaN sorted first and became the threshold (recall:R returned nan).
        raise ValueError("proba holds NaN: every probability must be a number in [0, 1]")
    n_pos = int(y.sum())
    if n_pos == 0:
        return 0.5
    # Candidate thresholds are the distinct scores, descending; at each one
    # every row scoring >= it is called positive.
    order = np.argsort(-p, kind="stable")
    p_sorted, y_sorted = p[order], y[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(p_sorted) != 0), len(p_sorted) - 1]
    tp = np.cumsum(y_sorted)[last_of_tie]
    called = last_of_tie + 1
    thresholds = p_sorted[last_of_tie]
    recall = tp / n_pos
    if isinstance(policy, TargetRecall):
        # Recall grows as the threshold falls; take the first (highest) one that
        # reaches the target. Floating error must not make 0.95 miss 0.95.
        ok = np.flatnonzero(recall >= policy.recall - 1e-12)
        return float(thresholds[ok[0]])
    precision = tp / called
    b2 = policy.beta**2
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(tp > 0, (1 + b2) * precision * recall / (b2 * precision + recall), 0.0)
    best = int(np.argmax(f))  # argmax keeps the first, i.e. highest, threshold on ties
    return float(thresholds[best])


def choose_detector_thresholds(
    evaluators: Mapping[str, Evaluator], recall_kept: float = 0.95, grid: int = 60
) -> dict[str, float]:
    """Per detector, the validation threshold that never lowers the detector's F1.

    ``evaluators`` maps a detector name to a callable ``threshold -> (F1,
    recall)`` of the detector + triage on validation series (TCPDBench, with
    candidates whose P(true) >= threshold kept), carrying the validation
    probabilities as its ``candidates`` attribute. Threshold 0 keeps every
    candidate: the detector alone. The chosen threshold has the highest F1
    among those whose recall stays >= ``recall_kept`` x the detector's own;
    when none beats the detector alone it is 0 (triage then changes nothing),
    so by construction triage never lowers the detector's validation F1
    (issue 10, item 5). At most ``grid`` thresholds (quantiles of the
    probabilities) are tried per detector.
    """
    out: dict[str, float] = {}
    for name, evaluate in evaluators.items():
        base_f, base_r = evaluate(0.0)
        probs = np.asarray(getattr(evaluate, "candidates", np.empty(0)), dtype=float)
        probs = np.unique(probs[probs > 0])
        if probs.size > grid:
            probs = np.unique(np.quantile(probs, np.linspace(0.0, 1.0, grid)))
        best_f, best_t = base_f, 0.0
        for t in probs:
            f, r = evaluate(float(t))
            if r >= recall_kept * base_r - 1e-12 and f > best_f + 1e-12:
                best_f, best_t = f, float(t)
        out[name] = best_t
    return out


def choose_detector_thresholds_grouped(
    groups: Mapping[str, Mapping[str, Evaluator]], recall_kept: float = 0.95, grid: int = 60
) -> dict[str, float]:
    """Per detector, a threshold that raises F1 on *every* group, else 0.

    ``groups`` maps a group name (e.g. a source project) to evaluators as in
    :func:`choose_detector_thresholds` (detector -> ``threshold -> (F1,
    recall)`` with a ``candidates`` attribute). The groups are meant to be
    independent looks at unseen data: out-of-fold predictions on each fit
    project (the model fitted on the other ones) and the validation project.

    The thresholds tried are at most ``grid`` quantiles of the probabilities
    pooled over the groups. A threshold is admissible for a detector when, on
    each group where the detector has candidates, the F1 of detector + triage
    is strictly above the detector's own and the recall stays >= ``recall_kept``
    x the detector's. Among the admissible ones the threshold with the largest
    worst-group F1 gain wins (ties: larger mean gain, then the lower
    threshold); with none admissible the detector gets 0 (triage off). So one
    project that triage would hurt is enough to switch it off.
    """
    detectors: list[str] = []
    for evaluators in groups.values():
        detectors += [d for d in evaluators if d not in detectors]
    out: dict[str, float] = {}
    for name in detectors:
        looks = []
        pooled = []
        for evaluators in groups.values():
            evaluate = evaluators.get(name)
            if evaluate is None:
                continue
            probs = np.asarray(getattr(evaluate, "candidates", np.empty(0)), dtype=float)
            if probs.size == 0:
                continue  # nothing to keep or drop: this group says nothing
            pooled.append(probs)
            looks.append((evaluate, *evaluate(0.0)))
        if not looks:
            out[name] = 0.0
            continue
        probs = np.concatenate(pooled)
        probs = np.unique(probs[probs > 0])
        if probs.size > grid:
            probs = np.unique(np.quantile(probs, np.linspace(0.0, 1.0, grid)))
        best: tuple[float, float] | None = None
        best_t = 0.0
        for t in probs:
            gains = []
            for evaluate, base_f, base_r in looks:
                f, r = evaluate(float(t))
                if r < recall_kept * base_r - 1e-12 or f <= base_f + 1e-12:
                    break
                gains.append(f - base_f)
            else:
                key = (min(gains), float(np.mean(gains)))
                if best is None or key > best:
                    best, best_t = key, float(t)
        out[name] = best_t
    return out


def suppress_duplicates(
    series: np.ndarray, index: np.ndarray, p_true: np.ndarray, keep: np.ndarray, radius: int
) -> np.ndarray:
    """``keep`` with every kept candidate dropped that a stronger kept one is within ``radius`` of.

    One change, one alert: a detector that over-segments flags several
    commits around one change, and a classifier that sees each of them alone
    calls them all true. Within a series the kept candidates are visited by
    descending ``p_true`` (ties: lower index first); one within ``radius``
    commits of a candidate already kept is dropped. ``radius`` 0 changes
    nothing.

    Parameters
    ----------
    series, index, p_true, keep : ndarray, shape (n,)
        Series id, commit position, P(true change) and the keep decision of
        each candidate.
    radius : int
        Commits; candidates ``radius`` or fewer apart are duplicates.

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    keep = np.asarray(keep, dtype=bool).copy()
    lengths = {len(np.asarray(a)) for a in (series, index, p_true)} | {len(keep)}
    if len(lengths) > 1:  # was an IndexError deep in the loop
        raise ValueError(f"series, index, p_true and keep must be as long, got lengths {sorted(lengths)}")
    if radius <= 0 or not keep.any():
        return keep
    series = np.asarray(series).astype(str)
    index = np.asarray(index, dtype=np.int64)
    p_true = np.asarray(p_true, dtype=float)
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((index[rows], -p_true[rows], series[rows]))]
    kept_at: dict[str, list[int]] = {}
    for r in order:
        chosen = kept_at.setdefault(series[r], [])
        if any(abs(int(index[r]) - k) <= radius for k in chosen):
            keep[r] = False
        else:
            chosen.append(int(index[r]))
    return keep
