"""A compiled tree-ensemble predictor: ``TriageClassifier.predict_proba`` without Python overhead.

scikit-learn and XGBoost spend tens of microseconds per call on input
validation, thread pools and per-tree Python dispatch; the online loop
(Bauer et al., ICPE 2022, Algorithm 1) calls the model once per commit or per
small batch, so that overhead dominates. Here the fitted trees are flattened
into a few arrays (one row per node, trees concatenated) and walked by one
numba kernel, reproducing the library's arithmetic so the probabilities are
the same numbers. The kernel takes a block of rows through one tree before
the next (the tree's nodes stay in cache) and, for XGBoost, walks several
rows (or, for a single row, several trees) side by side without branching on
the data; each row still sums its trees in the library's order:

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

:meth:`CompiledPredictor.upper_bound_proba` bounds the probability from above
over every value of some columns left out of a row (the online replay's
screen, :mod:`triage.online.loop`): the same kernels on trees whose splits on
those columns are collapsed into leaves (see "upper bounds" below).

The calibration step (Platt or isotonic, when the model has one) and the final
clip are applied by the classifier's own code
(:func:`training.classifier._apply_calibrator`), never re-implemented, so a
calibrated model maps scores exactly as ``predict_proba`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from triage.training import ubjson
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
    # UBJSON, not JSON: its node arrays are read as numpy arrays (0.13-0.19 s -> 0.04-0.07 s per
    # load of a bundled model, BENCHMARKS.md "Test suite", twenty-ninth session).
    model = ubjson.loads(bytes(booster.save_raw(raw_format="ubj")))
    learner = model["learner"]  # type: ignore[index]
    objective = learner["objective"]["name"]
    if objective != "binary:logistic":
        raise ValueError(f"only binary:logistic XGBoost models are compiled, got {objective!r}")
    trees = learner["gradient_booster"]["model"]["trees"]
    feats, thr, lefts, rights, vals, dleft, roots = [], [], [], [], [], [], []
    offset = 0
    for tree in trees:
        left = np.asarray(tree["left_children"], dtype=np.int32)
        right = np.asarray(tree["right_children"], dtype=np.int32)
        if len(tree.get("categories_nodes", ())):
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

# Rows are predicted in blocks, every tree over a block before the next tree
# (tree-major): one tree's nodes (a few kB) stay in L1 for the whole block
# instead of all trees' nodes (about 1 MB for 400 XGBoost trees) passing
# through the cache once per row. Each row still adds its trees in tree
# order, so every sum is the one the library computes. Node positions and
# features are unsigned: numba then skips its negative-index wraparound on
# every load of the walk (about a third of the time).
_BLOCK = 64


@numba.njit(cache=True, nogil=True)
def _tree_depths(left, right, roots):
    """Depth of each tree (edges from the root to its deepest leaf), shape (n_trees,)."""
    depth = np.zeros(left.size, dtype=np.int32)
    out = np.zeros(roots.size, dtype=np.int32)
    stack = np.empty(left.size, dtype=np.int32)
    for t in range(roots.size):
        top = 0
        stack[0] = roots[t]
        depth[roots[t]] = 0
        deepest = 0
        while top >= 0:
            node = stack[top]
            top -= 1
            d = depth[node]
            if d > deepest:
                deepest = d
            if left[node] >= 0:
                depth[left[node]] = d + 1
                depth[right[node]] = d + 1
                stack[top + 1] = left[node]
                stack[top + 2] = right[node]
                top += 2
        out[t] = deepest
    return out


@numba.njit(cache=True, nogil=True)
def _as_float32(X):
    """X as the libraries see it: non-finite values missing (NaN), then cast to float32."""
    n, p = X.shape
    out = np.empty((n, p), dtype=np.float32)
    for i in range(n):
        for j in range(p):
            x = X[i, j]
            out[i, j] = np.float32(x) if np.isfinite(x) else np.float32(np.nan)
    return out


@numba.njit(cache=True, nogil=True)
def _forest_proba(X, feature, threshold, left, right, value, default_left, roots):
    """Mean of per-tree leaf values, shape (n,), as sklearn sums them (tree order, float64).

    ``left`` is -1 at a leaf (int32); ``feature`` and ``roots`` unsigned.
    """
    X32 = _as_float32(X)  # sklearn validates X to float32 before walking the trees
    n = X32.shape[0]
    out = np.zeros(n)
    n_trees = roots.size
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        for t in range(n_trees):
            root = roots[t]
            for i in range(start, stop):
                node = root
                while left[node] >= 0:
                    x = X32[i, feature[node]]
                    if (x <= threshold[node]) | (np.isnan(x) & default_left[node]):
                        node = np.uint32(left[node])
                    else:
                        node = np.uint32(right[node])
                out[i] += value[node]
    for i in range(n):
        out[i] /= n_trees
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _xgb_step(X32, i, node, nodes, threshold):
    """One level of an XGBoost tree for row i: ``x < split`` goes left, NaN the default way."""
    x = X32[i, nodes[node, 0]]
    go_left = (x < threshold[node]) | (np.isnan(x) & (nodes[node, 3] != 0))
    return nodes[node, np.uint32(2) - np.uint32(go_left)]


@numba.njit(cache=True, nogil=True)
def _xgb_proba(X, nodes, threshold, value, trees, base):
    """P(positive), float32, shape (n,): XGBoost's CPU predictor and logistic link.

    The margin is the base margin plus the leaf weights in tree order, in float32.

    ``nodes`` (n_nodes, 4) holds feature, left, right and default-left, a
    leaf pointing to itself; ``trees`` (n_trees, 2) each tree's root and
    depth. A walk of ``depth`` steps so ends on the row's leaf whatever its
    path: no branch on the data, and several walks advance side by side,
    overlapping their memory latency: eight rows at a time through one tree,
    and for the last rows (all of them for a single row) eight trees at a time
    through one row.
    """
    X32 = _as_float32(X)
    n = X32.shape[0]
    margin = np.empty(n, dtype=np.float32)
    margin[:] = base
    n_trees = trees.shape[0]
    n8 = n - n % 8
    for start in range(0, n8, _BLOCK):
        stop = min(start + _BLOCK, n8)
        for t in range(n_trees):
            root = trees[t, 0]
            for i in range(start, stop, 8):
                a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = root
                for _ in range(trees[t, 1]):
                    a0 = _xgb_step(X32, i, a0, nodes, threshold)
                    a1 = _xgb_step(X32, i + 1, a1, nodes, threshold)
                    a2 = _xgb_step(X32, i + 2, a2, nodes, threshold)
                    a3 = _xgb_step(X32, i + 3, a3, nodes, threshold)
                    a4 = _xgb_step(X32, i + 4, a4, nodes, threshold)
                    a5 = _xgb_step(X32, i + 5, a5, nodes, threshold)
                    a6 = _xgb_step(X32, i + 6, a6, nodes, threshold)
                    a7 = _xgb_step(X32, i + 7, a7, nodes, threshold)
                margin[i] = np.float32(margin[i] + value[a0])
                margin[i + 1] = np.float32(margin[i + 1] + value[a1])
                margin[i + 2] = np.float32(margin[i + 2] + value[a2])
                margin[i + 3] = np.float32(margin[i + 3] + value[a3])
                margin[i + 4] = np.float32(margin[i + 4] + value[a4])
                margin[i + 5] = np.float32(margin[i + 5] + value[a5])
                margin[i + 6] = np.float32(margin[i + 6] + value[a6])
                margin[i + 7] = np.float32(margin[i + 7] + value[a7])
    n8t = n_trees - n_trees % 8
    for i in range(n8, n):
        acc = margin[i]
        for t in range(0, n8t, 8):
            a0, a1, a2, a3 = trees[t, 0], trees[t + 1, 0], trees[t + 2, 0], trees[t + 3, 0]
            a4, a5, a6, a7 = trees[t + 4, 0], trees[t + 5, 0], trees[t + 6, 0], trees[t + 7, 0]
            steps = trees[t, 1]
            for k in range(1, 8):
                steps = max(steps, trees[t + k, 1])
            for _ in range(steps):
                a0 = _xgb_step(X32, i, a0, nodes, threshold)
                a1 = _xgb_step(X32, i, a1, nodes, threshold)
                a2 = _xgb_step(X32, i, a2, nodes, threshold)
                a3 = _xgb_step(X32, i, a3, nodes, threshold)
                a4 = _xgb_step(X32, i, a4, nodes, threshold)
                a5 = _xgb_step(X32, i, a5, nodes, threshold)
                a6 = _xgb_step(X32, i, a6, nodes, threshold)
                a7 = _xgb_step(X32, i, a7, nodes, threshold)
            acc = np.float32(acc + value[a0])
            acc = np.float32(acc + value[a1])
            acc = np.float32(acc + value[a2])
            acc = np.float32(acc + value[a3])
            acc = np.float32(acc + value[a4])
            acc = np.float32(acc + value[a5])
            acc = np.float32(acc + value[a6])
            acc = np.float32(acc + value[a7])
        for t in range(n8t, n_trees):
            a0 = trees[t, 0]
            for _ in range(trees[t, 1]):
                a0 = _xgb_step(X32, i, a0, nodes, threshold)
            acc = np.float32(acc + value[a0])
        margin[i] = acc
    return _sigmoid32(margin)


# ---------------------------------------------------------------------- upper bounds
#
# An upper bound of a row's score over every value of some *free* columns
# (the online replay leaves an expensive characteristic uncomputed and asks
# whether any value of it could make the row positive). Each split on a free
# column becomes a leaf holding the largest leaf below it, whichever way a
# value (or a NaN, which goes one of the two ways) would send the row. The
# collapsed trees are walked by the kernels above, unchanged: per tree the
# row reaches a leaf at least as large as any it could reach with the free
# columns set, the leaves are added in the same order and precision, and
# rounded addition is monotone, so the bound is >= the score bit for bit;
# with no free column it is the score. (The tightest bound, the largest leaf
# reachable below a free split given the other columns, screened 99.64 % of
# the bundled model's replay rows instead of 99.40 %, but its walk with a
# stack cost 8 µs per row against 4: BENCHMARKS.md.)


@numba.njit(cache=True, nogil=True)
def _collapse_free(feature, is_leaf, child_left, child_right, value, free):
    """Which nodes become leaves (splits on a free column) and every node's largest leaf below it.

    Children come after their parent in both libraries' node order (checked
    by the caller), so one backward pass gives every subtree's maximum.
    """
    n = value.size
    best = value.copy()
    for node in range(n - 1, -1, -1):
        if not is_leaf[node]:
            best[node] = max(best[child_left[node]], best[child_right[node]])
    collapse = np.zeros(n, dtype=np.bool_)
    for node in range(n):
        if not is_leaf[node] and free[feature[node]]:
            collapse[node] = True
    return collapse, best


def _monotone(calibrator) -> bool:
    """Whether a fitted calibrator maps a larger score to a probability at least as large.

    Isotonic regression fitted increasing, or Platt scaling (a logistic
    regression on the score) with a slope >= 0; anything else is not trusted.
    """
    if calibrator is None:
        return True
    if hasattr(calibrator, "predict_proba"):
        coef = np.asarray(getattr(calibrator, "coef_", np.array([[np.nan]])), dtype=np.float64)
        classes = list(getattr(calibrator, "classes_", []))
        return coef.size == 1 and bool(coef.ravel()[0] >= 0.0) and classes == [0, 1]
    return getattr(calibrator, "increasing_", None) is True


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
        self._args: tuple = ()
        if clf.model == "rf":
            self._flat = f = flatten_sklearn_forest(clf.estimator_)
            roots = f.roots.astype(np.uint32)
            self._args = (
                f.feature.astype(np.uint32),
                f.threshold,
                f.left,
                f.right,
                f.value,
                f.default_left,
                roots,
            )
        elif clf.model == "xgb":
            self._flat, self._base = flatten_xgboost(clf.estimator_.get_booster())
            f = self._flat
            own = np.arange(f.left.size, dtype=np.int32)
            leaf = f.left < 0
            nodes = np.column_stack(
                [
                    f.feature,
                    np.where(leaf, own, f.left),
                    np.where(leaf, own, f.right),
                    f.default_left,
                ]
            )
            trees = np.column_stack([f.roots, _tree_depths(f.left, f.right, f.roots)])
            self._args = (
                np.ascontiguousarray(nodes, dtype=np.uint32),
                f.threshold,
                f.value,
                np.ascontiguousarray(trees, dtype=np.uint32),
                self._base,
            )
        self.compiled = self._flat is not None
        #: Whether :meth:`upper_bound_proba` bounds anything (compiled trees, a monotone calibrator).
        self.bounds = self.compiled and _monotone(self.calibrator)
        self._collapsed: dict[bytes, tuple] = {}  # kernel arguments per free mask

    def _raw_score(self, X: np.ndarray) -> np.ndarray:
        if self.model == "rf":
            return _forest_proba(X, *self._args)
        return _xgb_proba(X, *self._args)

    def positive_proba(self, X: np.ndarray) -> np.ndarray:
        """P(true alert), shape (n,), for X of shape (n, n_features) in the model's column order."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        if not self.compiled:
            return self.clf.predict_proba(X)[:, 1]
        # The kernels map infinities to NaN (an undefined characteristic), as the classifier does.
        score = self._raw_score(X)
        if self.calibrator is None:
            # Already in [0, 1]: a mean of leaf fractions, or 1 / (1 + expf(.) + 1e-16).
            return score
        return np.clip(_apply_calibrator(self.calibrator, score), 0.0, 1.0)

    def upper_bound_proba(self, X: np.ndarray, free: np.ndarray) -> np.ndarray:
        """An upper bound of :meth:`positive_proba` over every value of the ``free`` columns, shape (n,).

        ``X`` (n, n_features) as for :meth:`positive_proba`; the values of its
        free columns are not read (they may be NaN). ``free`` is a bool mask of
        shape (n_features,). For every row, ``positive_proba`` of X with any
        values (NaN included) in the free columns is <= the bound, bit for
        bit: per tree the largest leaf below the first split on a free column
        the row meets (else its own leaf), summed in the score's own order and
        precision by the same kernel, then the same link and calibrator (both
        monotone non-decreasing). With no free column the bound is
        ``positive_proba`` itself. Ones (no bound) when :attr:`bounds` is False: the SVM
        fallback, or a calibrator that is not known to be non-decreasing.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        free = np.asarray(free, dtype=np.bool_)
        if free.shape != (self.n_features,):
            raise ValueError(f"free must be a bool mask of shape ({self.n_features},), got {free.shape}")
        if not self.bounds:
            return np.ones(X.shape[0])
        args = self._collapsed.get(free.tobytes())
        if args is None:
            args = self._collapsed[free.tobytes()] = self._collapsed_args(free)
        score = _forest_proba(X, *args) if self.model == "rf" else _xgb_proba(X, *args)
        if self.calibrator is None:
            return score
        return np.clip(_apply_calibrator(self.calibrator, score), 0.0, 1.0)

    def _collapsed_args(self, free: np.ndarray) -> tuple:
        """The kernel arguments with every split on a free column made a leaf holding its subtree's largest leaf."""
        if not free.any():
            return self._args
        if self.model == "rf":
            feature, threshold, left, right, value, default_left, roots = self._args
            is_leaf = left < 0
            child_left, child_right = np.where(is_leaf, 0, left), np.where(is_leaf, 0, right)
        else:
            nodes, threshold, value, trees, base = self._args
            own = np.arange(nodes.shape[0], dtype=np.uint32)
            is_leaf = nodes[:, 1] == own  # a leaf points to itself
            feature, child_left, child_right = nodes[:, 0], nodes[:, 1], nodes[:, 2]
        inner = ~is_leaf
        if not (np.all(child_left[inner] > np.flatnonzero(inner)) and np.all(child_right[inner] > np.flatnonzero(inner))):
            raise ValueError("tree nodes are not stored parents first; no bound")
        collapse, best = _collapse_free(feature, is_leaf, child_left, child_right, value, free)
        value = np.where(collapse, best, value).astype(value.dtype)
        if self.model == "rf":
            left = np.where(collapse, -1, left).astype(left.dtype)
            right = np.where(collapse, -1, right).astype(right.dtype)
            return feature, threshold, left, right, value, default_left, roots
        nodes = nodes.copy()
        nodes[collapse, 1] = own[collapse]
        nodes[collapse, 2] = own[collapse]
        return nodes, threshold, value, trees, base

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, 2), as ``TriageClassifier.predict_proba``."""
        p = self.positive_proba(X)
        return np.column_stack([1.0 - p, p])
