"""A compiled tree-ensemble predictor: ``TriageClassifier.predict_proba`` without Python overhead.

scikit-learn and XGBoost spend tens of microseconds per call on input
validation, thread pools and per-tree Python dispatch; the online loop
(Bauer et al., ICPE 2022, Algorithm 1) calls the model once per commit or per
small batch, so that overhead dominates. Here the fitted trees are flattened
into a few arrays (one row per node, trees concatenated) and walked by one
numba kernel, reproducing the library's arithmetic so the probabilities are
the same numbers:

* **random forest** (scikit-learn): features cast to float32 as sklearn does,
  ``x <= threshold`` goes left, NaN follows ``missing_go_to_left``; each leaf
  holds its positive-class fraction ``v1 / (v0 + v1)`` (sklearn's per-tree
  normalisation); trees are summed in order from 0.0 and divided by their
  number, as ``ForestClassifier.predict_proba`` accumulates them.
* **XGBoost** (``binary:logistic``): features cast to float32, ``x < split``
  goes left, NaN follows the default direction; the margin starts at the
  model's base margin and adds leaf values tree by tree in float32, then the
  logistic link in float32.
* **SVM**: not compiled; :class:`CompiledPredictor` calls the classifier's own
  ``predict_proba``.

The calibration step (Platt or isotonic, when the model has one) and the final
clip are applied by the classifier's own code
(:func:`training.classifier._apply_calibrator`), never re-implemented, so a
calibrated model maps scores exactly as ``predict_proba`` does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numba
import numpy as np

from triage.training.classifier import TriageClassifier, _apply_calibrator


@dataclass(frozen=True)
class FlatForest:
    """Trees flattened into node arrays, shape (n_nodes,) each, trees concatenated.

    ``left`` / ``right`` are absolute node positions (-1 at a leaf); ``roots``
    (n_trees,) the position of each tree's root; ``value`` the leaf output
    (sklearn: positive-class fraction; XGBoost: leaf weight), ``default_left``
    where a NaN goes.
    """

    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64 (sklearn) or float32 (XGBoost)
    left: np.ndarray  # int32
    right: np.ndarray  # int32
    value: np.ndarray  # float64 (sklearn) or float32 (XGBoost)
    default_left: np.ndarray  # bool
    roots: np.ndarray  # int32

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)


# ---------------------------------------------------------------------- flattening


def flatten_sklearn_forest(forest) -> FlatForest:
    """Node arrays of a fitted ``RandomForestClassifier`` with two classes."""
    feats, thr, lefts, rights, vals, dleft, roots = [], [], [], [], [], [], []
    offset = 0
    for est in forest.estimators_:
        t = est.tree_
        left = t.children_left.astype(np.int32)
        right = t.children_right.astype(np.int32)
        leaf = left < 0
        v = t.value[:, 0, :2].astype(np.float64)
        norm = v.sum(axis=1)
        norm[norm == 0.0] = 1.0  # as sklearn's DecisionTreeClassifier.predict_proba
        roots.append(offset)
        feats.append(np.where(leaf, 0, t.feature).astype(np.int32))
        thr.append(t.threshold.astype(np.float64))
        lefts.append(np.where(leaf, -1, left + offset).astype(np.int32))
        rights.append(np.where(leaf, -1, right + offset).astype(np.int32))
        vals.append(v[:, 1] / norm)
        dleft.append(np.asarray(t.missing_go_to_left, dtype=bool))
        offset += t.node_count
    return FlatForest(
        np.concatenate(feats),
        np.concatenate(thr),
        np.concatenate(lefts),
        np.concatenate(rights),
        np.concatenate(vals),
        np.concatenate(dleft),
        np.asarray(roots, dtype=np.int32),
    )


def flatten_xgboost(booster) -> tuple[FlatForest, np.float32]:
    """Node arrays and the float32 base margin of a ``binary:logistic`` booster."""
    model = json.loads(booster.save_raw(raw_format="json"))
    learner = model["learner"]
    objective = learner["objective"]["name"]
    if objective != "binary:logistic":
        raise ValueError(f"only binary:logistic XGBoost models are compiled, got {objective!r}")
    trees = learner["gradient_booster"]["model"]["trees"]
    feats, thr, lefts, rights, vals, dleft, roots = [], [], [], [], [], [], []
    offset = 0
    for tree in trees:
        left = np.asarray(tree["left_children"], dtype=np.int32)
        right = np.asarray(tree["right_children"], dtype=np.int32)
        if tree.get("categories_nodes"):
            raise ValueError("categorical XGBoost splits are not supported")
        leaf = left < 0
        cond = np.asarray(tree["split_conditions"], dtype=np.float32)
        roots.append(offset)
        feats.append(
            np.where(leaf, 0, np.asarray(tree["split_indices"], dtype=np.int32)).astype(np.int32)
        )
        thr.append(cond)
        lefts.append(np.where(leaf, -1, left + offset).astype(np.int32))
        rights.append(np.where(leaf, -1, right + offset).astype(np.int32))
        vals.append(cond)  # XGBoost stores a leaf's weight in split_conditions
        dleft.append(np.asarray(tree["default_left"], dtype=bool))
        offset += left.size
    flat = FlatForest(
        np.concatenate(feats),
        np.concatenate(thr).astype(np.float32),
        np.concatenate(lefts),
        np.concatenate(rights),
        np.concatenate(vals).astype(np.float32),
        np.concatenate(dleft),
        np.asarray(roots, dtype=np.int32),
    )
    return flat, _base_margin(learner["learner_model_param"]["base_score"])


def _base_margin(base_score: object) -> np.float32:
    """XGBoost's stored ``base_score`` (a probability for logistic models) as a float32 margin."""
    text = str(base_score).strip().strip("[]").split(",")[0]
    return _prob_to_margin(np.float32(float(text)))


@numba.njit(cache=True)
def _prob_to_margin(p):
    # XGBoost's ProbToMargin for the logistic link, in float32 with the C
    # library's logf (see _sigmoid32 for why not numpy).
    return np.float32(-math.log(np.float32(np.float32(1.0) / p - np.float32(1.0))))


# ---------------------------------------------------------------------- kernels


@numba.njit(cache=True, nogil=True)
def _forest_proba(X, feature, threshold, left, right, value, default_left, roots):
    """Mean of per-tree leaf values, shape (n,), as sklearn sums them (tree order, float64)."""
    n = X.shape[0]
    out = np.empty(n)
    n_trees = roots.size
    for i in range(n):
        acc = 0.0
        for t in range(n_trees):
            node = roots[t]
            while left[node] >= 0:
                x = X[i, feature[node]]
                if np.isnan(x):
                    node = left[node] if default_left[node] else right[node]
                elif x <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            acc += value[node]
        out[i] = acc / n_trees
    return out


@numba.njit(cache=True, nogil=True)
def _xgb_margin(X, feature, threshold, left, right, value, default_left, roots, base):
    """float32 margins, shape (n,): base + leaf weights in tree order, as XGBoost's CPU predictor."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.float32)
    n_trees = roots.size
    for i in range(n):
        acc = base
        for t in range(n_trees):
            node = roots[t]
            while left[node] >= 0:
                x = X[i, feature[node]]
                if np.isnan(x):
                    node = left[node] if default_left[node] else right[node]
                elif x < threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            acc = np.float32(acc + value[node])
        out[i] = acc
    return out


@numba.njit(cache=True, nogil=True)
def _sigmoid32(margin):
    """XGBoost's float32 logistic link (``common::Sigmoid``), shape (n,).

    ``1 / (expf(min(-x, 88.7)) + 1 + 1e-16)`` in float32. ``math.exp`` on a
    float32 compiles to the C library's ``expf``, the function XGBoost calls;
    numpy's own vectorised float32 ``exp`` differs from it in the last bit for
    about one input in ten, which is why this is not a numpy expression.
    """
    out = np.empty(margin.size, dtype=np.float32)
    one = np.float32(1.0)
    eps = np.float32(1e-16)
    cap = np.float32(88.7)
    for i in range(margin.size):
        x = min(np.float32(-margin[i]), cap)
        d = np.float32(np.float32(math.exp(x)) + one)
        d = np.float32(d + eps)
        out[i] = np.float32(one / d)
    return out


# ---------------------------------------------------------------------- predictor


class CompiledPredictor:
    """``predict_proba`` of a fitted :class:`TriageClassifier`, compiled for trees.

    Parameters
    ----------
    clf : fitted TriageClassifier (``rf``, ``xgb`` or ``svm``; the SVM falls
        back to ``clf.predict_proba``).

    Attributes
    ----------
    compiled : bool, False for the SVM fallback
    n_features : int, columns of the input
    threshold : float, the classifier's decision threshold
    """

    def __init__(self, clf: TriageClassifier):
        if not hasattr(clf, "estimator_"):
            raise ValueError("the classifier is not fitted")
        self.clf = clf
        self.model = clf.model
        self.n_features = int(clf.n_features_in_)
        self.threshold = float(clf.threshold_)
        self.calibrator = clf.calibrator_
        self._flat: FlatForest | None = None
        self._base = np.float32(0.0)
        if clf.model == "rf":
            self._flat = flatten_sklearn_forest(clf.estimator_)
        elif clf.model == "xgb":
            self._flat, self._base = flatten_xgboost(clf.estimator_.get_booster())
        self.compiled = self._flat is not None

    def _raw_score(self, X: np.ndarray) -> np.ndarray:
        f = self._flat
        if self.model == "rf":
            # sklearn validates X to float32 before walking the trees.
            X32 = np.ascontiguousarray(X, dtype=np.float32)
            return _forest_proba(
                X32, f.feature, f.threshold, f.left, f.right, f.value, f.default_left, f.roots
            )
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        margin = _xgb_margin(
            X32,
            f.feature,
            f.threshold,
            f.left,
            f.right,
            f.value,
            f.default_left,
            f.roots,
            self._base,
        )
        return _sigmoid32(margin)

    def positive_proba(self, X: np.ndarray) -> np.ndarray:
        """P(true alert), shape (n,), for X of shape (n, n_features) in the model's column order."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        if not self.compiled:
            return self.clf.predict_proba(X)[:, 1]
        if not np.all(np.isfinite(X)):
            # The classifier maps infinities to NaN (an undefined characteristic).
            X = np.where(np.isfinite(X), X, np.nan)
        score = self._raw_score(X)
        if self.calibrator is not None:
            score = _apply_calibrator(self.calibrator, score)
        return np.clip(score, 0.0, 1.0)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, 2), as ``TriageClassifier.predict_proba``."""
        p = self.positive_proba(X)
        return np.column_stack([1.0 - p, p])
