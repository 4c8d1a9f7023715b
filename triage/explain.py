"""Why the model called a candidate true or false: top contributing features in plain words.

:func:`explain` returns, for each row of a feature matrix, the ``top``
features that moved the model's score most, phrased for a sheriff, e.g.
``"after mean 2.3 sd above pre (+0.21 toward true)"``.

How the contributions are computed
----------------------------------
random forest
    Tree path contributions in the manner of Saabas' *treeinterpreter*: in
    each tree, walking from the root to the row's leaf, every split moves the
    node's P(true) from the parent's value to the child's; that change is
    credited to the split's feature. The root value is the bias. Averaged
    over the trees, ``bias + sum(contributions)`` equals the forest's
    ``predict_proba[:, 1]`` exactly. A path is fixed by its leaf, so the
    summed contributions of every leaf are tabulated once per forest (a
    sparse leaves x features matrix); a batch is then one ``apply`` per tree
    and one sparse product of a rows x leaves selector with that table.
XGBoost
    XGBoost's own SHAP values (``pred_contribs=True``, Lundberg et al. 2018's
    TreeSHAP): contributions and bias in log-odds, summing to the margin.
SVM
    No path to follow, so a simple occlusion on the SVM's own score, its
    margin (``decision_function``, before calibration): the contribution of
    feature ``j`` is margin(x) minus margin(x with ``x_j`` set to its
    training mean, the scaler's ``mean_``); the bias is the margin at the
    training mean. The margin, unlike the calibrated P(true), does not
    saturate: near P(true) = 0 or 1 an occlusion still moves it, where it
    would barely move P(true) and leave every contribution near 0. The
    contributions do not sum to the prediction (interactions are not split),
    but the ranking says which features a change would matter most for.
    Costs one decision-function row per (row, feature).

When the classifier carries a calibrator (always for the SVM, optionally for
the trees), the contributions explain the uncalibrated score (the trees'
P(true) or log-odds, the SVM's margin); the calibration is monotone, so the
ranking stands. (Should the fitted calibration run the other way, a larger
margin meaning a lower P(true), the SVM's margin is negated so that a positive
contribution still points toward true.)
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from triage.features import candidate_context as context
from triage.features import catalogue
from triage.features.matrix import feature_array

#: Plain-words templates of the per-window characteristics: ``{w}`` is
#: "pre" or "after", ``{v}`` the value already formatted.
PHRASES: dict[str, str] = {
    "crossing_points": "{w} crosses its median {v} times",
    "entropy": "{w} spectral entropy {v} (1 = white noise)",
    "max_level_shift": "largest level shift inside {w} {v} sd",
    "serial_correlation": "{w} autocorrelation (Box-Pierce) {v}",
    "stability": "{w} block means vary by {v} (stability)",
    "lumpiness": "{w} block variances vary by {v} (lumpiness)",
    "hurst": "{w} Hurst exponent {v} (0.5 = no memory)",
    "flat_spots": "{w} longest flat run {v} points",
    "x_acf1": "{w} lag-1 autocorrelation {v}",
    "x_acf10": "{w} squared autocorrelations, 10 lags, {v}",
    "diff1_acf1": "{w} lag-1 autocorrelation of differences {v}",
    "diff1_acf10": "{w} squared autocorrelations of differences {v}",
    "max_var_shift": "largest variance shift inside {w} {v}",
    "max_kl_shift": "largest distribution shift (KL) inside {w} {v}",
    "nonlinearity": "{w} nonlinearity {v}",
    "arch_lm": "{w} volatility clustering (ARCH R2) {v}",
    "std1st_der": "{w} sd of first differences {v} sd",
    "unitroot_kpss": "{w} KPSS statistic {v} (high = level moves)",
    "unitroot_pp": "{w} Phillips-Perron statistic {v}",
    "series_length": "{w} window has {v} commits",
}

#: Plain words of the scoring model's columns (``pair_*``, ``ctx_*``, ``det_score_rank``;
#: definitions in :mod:`triage.features.level_shift`, :mod:`triage.features.candidate_context`
#: and :mod:`triage.scoring`): a template (``{v}`` the value, ``{pct}`` it as a percentage,
#: ``{s}`` a plural s) and the words for an undefined (NaN) value.
SCORING_PHRASES: dict[str, tuple[str, str]] = {
    "pair_robust_shift": ("after median {v} noise sd from pre median", "no robust shift (a window under 2 commits)"),
    "pair_rel_change": ("after median {pct} off pre median", "no relative change (pre median is 0)"),
    "pair_welch_d": ("mean shift effect size {v} (Welch t per sqrt commit)", "no effect size (a window under 2 commits)"),
    "pair_noise_ratio": ("after noise {v}x pre noise", "no noise ratio (a window under 2 commits)"),
    "pair_overlap": ("after values separated from pre {v} (0 = interleaved, 1 = no overlap)",
                     "no overlap measure (a window under 2 commits)"),
    "pair_rel_noise": ("pre noise {pct} of its level", "no relative noise (pre median is 0)"),
    "pair_after_consistency": ("{pct} of after values nearer the new level than the old",
                               "no after consistency (a window under 2 commits)"),
    "ctx_local_shift": (f"shift on {context.RADIUS} commits each side {{v}} noise sd",
                        f"no shift on {context.RADIUS} commits each side"),
    "ctx_dominance": (f"shift {{v}} of the strongest candidate's within {context.RADIUS} commits (1 = strongest)",
                      "no dominance measure"),
    "ctx_neighbours": (f"{{v}} other candidate{{s}} within {context.RADIUS} commits", "neighbours unknown"),
    "ctx_shift_pct": ("shift at or above that at {pct} of the series' commits", "no shift percentile"),
    "ctx_shift_vs_typical": ("shift {v}x the series' typical shift", "no typical shift to compare with"),
    "ctx_shift_diffnoise": ("shift {v} commit-to-commit noise sd", "no commit-to-commit noise to compare with"),
    "ctx_shift_vs_global": ("shift {v} sd of the whole series", "no series sd to compare with"),
    "ctx_far_shift": (f"shift on {context.FAR} commits each side {{v}} noise sd",
                      f"no shift on {context.FAR} commits each side"),
    "ctx_persist_after": (f"new level held over the next {context.RADIUS} commits {{v}} (1 = held, 0 = went back)",
                          "too few commits after it to see the new level hold"),
    "ctx_pre_drift": ("drift before it {v} of the shift (0 = flat)", "too few commits before it to see a drift"),
    "ctx_after_seen_before": ("new level {v} shifts from the nearest earlier level (0 = seen before)",
                              "no earlier stretch to compare the new level with"),
    "ctx_pre_returns": ("old level {v} shifts from the nearest later level (0 = it comes back)",
                        "no later stretch to see the old level come back"),
    "det_score_rank": ("detector score at or above {pct} of the file's", "no detector score in the file"),
}

#: Columns the level and spread phrases read from the whole row.
NORM_PHRASE_COLUMNS: tuple[str, ...] = catalogue.NORM_COLUMNS

#: The row's column holding the shift on fixed windows of ``RADIUS`` commits
#: (``|median(after) - median(before)| / s``): NaN with fewer than 2 commits
#: before the candidate, exactly 0 when the two medians are equal.
LOCAL_SHIFT_COLUMN = "ctx_local_shift"

#: The ratios to that shift (:mod:`triage.features.candidate_context`): NaN
#: when a window is short, but also when the shift is 0 or undefined, where
#: "too few commits after it" would be untrue. What each then lacks.
RATIO_SUBJECTS: dict[str, str] = {
    "ctx_persist_after": "no new level to see hold",
    "ctx_pre_drift": "no shift to measure a drift before it by",
    "ctx_after_seen_before": "no new level to compare with earlier ones",
    "ctx_pre_returns": "no shift to see the old level come back from",
}


@dataclass
class Contributions:
    """Per-feature contributions of a batch.

    bias : shape (n,), the model's score before any feature is known, in ``unit``
    values : shape (n, p), contribution of each feature column to each row, in ``unit``
    names : the p feature columns
    score : shape (n,), the model's score of each row (RF: P(true); XGB:
        log-odds margin; SVM: calibrated P(true), which is not in ``unit``:
        its contributions are measured on the margin)
    X : shape (n, p), the feature values explained (NaN where undefined)
    unit : of ``bias`` and ``values``: ``"probability"`` (RF), ``"log-odds"``
        (XGB) or ``"margin"`` (SVM: its decision function, before calibration)
    exact : True when ``bias + values.sum(1) == score`` (RF, XGB)
    """

    bias: np.ndarray
    values: np.ndarray
    names: list[str]
    score: np.ndarray
    unit: str
    exact: bool
    X: np.ndarray


# --------------------------------------------------------------------------- contributions


def _unwrap(classifier, X) -> tuple[object, str, list[str], np.ndarray]:
    """(underlying estimator, kind rf|xgb|svm, feature names, X as float (n, p))."""
    est = getattr(classifier, "estimator_", None)
    if est is not None and hasattr(classifier, "model"):
        names = list(classifier.feature_names_ or [])
        if isinstance(X, pd.DataFrame) and names:
            Xa = feature_array(X, names)
        else:
            Xa = np.array(X, dtype=np.float64)
            Xa[~np.isfinite(Xa)] = np.nan
            names = names or [f"x{j}" for j in range(Xa.shape[1])]
        return est, classifier.model, names, Xa
    # A bare scikit-learn forest / XGBoost model fitted on a DataFrame's columns.
    names = [str(c) for c in X.columns] if isinstance(X, pd.DataFrame) else [f"x{j}" for j in range(np.shape(X)[1])]
    Xa = np.array(X, dtype=np.float64)
    kind = "xgb" if type(classifier).__module__.startswith("xgboost") else "rf"
    return classifier, kind, names, Xa


def _positive_column(est) -> int:
    classes = list(getattr(est, "classes_", [0, 1]))
    return 1 if len(classes) == 2 else 0


#: Per-forest leaf tables (built once per fitted forest, dropped with it).
_FOREST_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _forest_tables(forest, p: int) -> tuple[sp.csr_matrix, np.ndarray, float]:
    """The path contributions of every leaf of every tree, computed once.

    Returns ``(leaf_table, offsets, bias)``: ``leaf_table`` is a sparse
    (total nodes, p) matrix whose row ``offsets[k] + leaf`` holds the sum,
    along the root-to-leaf path of tree ``k``, of each split's P(true) change
    credited to the split's feature (zero rows for internal nodes); ``bias``
    the mean root P(true).
    """
    cached = _FOREST_TABLES.get(forest)
    if cached is not None and cached[0] == p:
        return cached[1:]
    pos = _positive_column(forest)
    blocks, sizes, bias = [], [], 0.0
    for tree in forest.estimators_:
        t = tree.tree_
        value = t.value[:, 0, :]
        # predict_proba normalises each node's (weighted) class counts; so here.
        frac = value[:, pos] / np.maximum(value.sum(axis=1), 1e-300)
        left, right, feature = t.children_left, t.children_right, t.feature
        cum = np.zeros((t.node_count, p))
        frontier = np.array([0])
        while frontier.size:  # level by level: each node adds its split's change to its parent's sum
            internal = frontier[left[frontier] >= 0]
            for side in (left, right):
                child = side[internal]
                cum[child] = cum[internal]
                cum[child, feature[internal]] += frac[child] - frac[internal]
            frontier = np.concatenate([left[internal], right[internal]])
        cum[left >= 0] = 0.0  # only leaves are looked up
        blocks.append(sp.csr_matrix(cum))
        sizes.append(t.node_count)
        bias += frac[0]
    table = sp.vstack(blocks, format="csr")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bias /= len(forest.estimators_)
    _FOREST_TABLES[forest] = (p, table, offsets, bias)
    return table, offsets, bias


def forest_contributions(forest, Xa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Path contributions of a fitted random forest (classifier).

    Returns (bias (n,), contributions (n, p)) for the positive class, with
    ``bias + contributions.sum(1) == forest.predict_proba(Xa)[:, 1]``.
    """
    n, p = Xa.shape
    table, offsets, bias = _forest_tables(forest, p)
    # The trees want float32 (as the forest's own predict converts); calling
    # each tree's apply directly skips the forest's per-call thread pool,
    # most of the time for a single row.
    X32 = np.ascontiguousarray(Xa, dtype=np.float32)
    leaves = np.column_stack([tree.tree_.apply(X32) for tree in forest.estimators_]) + offsets
    n_trees = len(offsets)
    pick = sp.csr_matrix(
        (np.full(n * n_trees, 1.0 / n_trees), leaves.ravel(), np.arange(0, n * n_trees + 1, n_trees)),
        shape=(n, table.shape[0]),
    )
    return np.full(n, bias), np.asarray((pick @ table).todense())


def xgb_contributions(model, Xa: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """XGBoost's SHAP values: (bias (n,), contributions (n, p), margin (n,)), all in log-odds."""
    import xgboost as xgb

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    # Thread start-up dominates a few rows (the online loop's case).
    dm = xgb.DMatrix(Xa, missing=np.nan, nthread=1 if len(Xa) < 256 else -1)
    contribs = booster.predict(dm, pred_contribs=True)
    margin = booster.predict(dm, output_margin=True)
    return contribs[:, -1].astype(np.float64), contribs[:, :-1].astype(np.float64), margin.astype(np.float64)


def _margin_sign(classifier) -> float:
    """+1.0, or -1.0 when the fitted calibrator maps a larger SVM margin to a lower P(true)."""
    calibrator = getattr(classifier, "calibrator_", None)
    coef = getattr(calibrator, "coef_", None)  # Platt: a logistic regression on the margin
    if coef is not None and float(np.ravel(coef)[0]) < 0:
        return -1.0
    if not bool(getattr(calibrator, "increasing_", True)):  # isotonic fitted decreasing
        return -1.0
    return 1.0


#: Occluded rows (a row with one feature set to its training mean) scored per decision-function call.
OCCLUDED_ROWS = 65_536


def svm_contributions(classifier, Xa: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Occlusion contributions on the SVM's margin, against the training mean (see module docstring).

    Returns (bias (n,), contributions (n, p), P(true) (n,)): the bias and the
    contributions in margin units (the pipeline's ``decision_function``,
    before calibration, oriented so that positive is toward true); P(true)
    is the calibrated probability the classifier reports.
    """
    pipe = classifier.estimator_
    baseline = np.asarray(pipe.named_steps["scale"].mean_, dtype=np.float64)
    n, p = Xa.shape
    # NaN is what the model's imputer would fill; occluding it changes nothing.
    filled = np.where(np.isnan(Xa), pipe.named_steps["impute"].statistics_, Xa)
    sign = _margin_sign(classifier)
    own = sign * pipe.decision_function(np.concatenate([filled, baseline[None, :]]))
    without = np.empty((n, p), dtype=np.float64)
    # Each row with each feature occluded, in blocks of at most OCCLUDED_ROWS rows: all at once was
    # an (n, p, p) array and its copy (16,500 alerts of ~50 features: 680 MB more; 100,000: 4 GB).
    step = max(1, OCCLUDED_ROWS // max(p, 1))
    for start in range(0, n, step):
        block = filled[start:start + step]
        occluded = np.repeat(block[:, None, :], p, axis=1)  # (rows, p, p)
        occluded[:, np.arange(p), np.arange(p)] = baseline
        without[start:start + step] = sign * pipe.decision_function(occluded.reshape(-1, p)).reshape(len(block), p)
    bias = np.full(n, own[-1])
    return bias, own[:n, None] - without, classifier.predict_proba(filled)[:, 1]


def contributions(classifier, X: pd.DataFrame | np.ndarray) -> Contributions:
    """Feature contributions of a :class:`~training.classifier.TriageClassifier`
    (or a bare fitted RandomForestClassifier / XGBClassifier) on rows ``X``.

    ``X`` is a feature matrix (extra columns are ignored) or an array of the
    model's columns, shape (n, p).
    """
    est, kind, names, Xa = _unwrap(classifier, X)
    if kind == "rf":
        bias, values = forest_contributions(est, Xa)
        # Exactly the forest's predict_proba (tested), without its thread pool.
        score = bias + values.sum(axis=1)
        return Contributions(bias, values, names, score, "probability", True, Xa)
    if kind == "xgb":
        bias, values, margin = xgb_contributions(est, Xa)
        return Contributions(bias, values, names, margin, "log-odds", True, Xa)
    if kind == "svm":
        bias, values, score = svm_contributions(classifier, Xa)
        return Contributions(bias, values, names, score, "margin", False, Xa)
    raise ValueError(f"no explanation method for model kind {kind!r}")


# --------------------------------------------------------------------------- phrases


def _num(v: float) -> str:
    if not np.isfinite(v):
        return "undefined"
    if float(v).is_integer() and abs(v) < 1e6:
        return f"{int(v)}"
    return f"{v:.3g}"


#: A ``norm_sd_*`` at most this (the Pre+After range is 1) is a window of equal values: the sd of
#: identical values that are not the merged minimum or maximum comes out as rounding (9e-19 for eleven
#: equal values of a real ``rhai`` series), and dividing by it gave "after mean 174769166643615232.0 sd".
NORM_SD_ROUNDING = 1e-12


def _sd_ratio(value: float) -> str:
    """A level shift in sd: one decimal (``"2.4"``), three significant digits from 1000 on."""
    return f"{value:.1f}" if value < 1000 else _num(value)


def _shift_phrase(row: Mapping[str, float] | None) -> str | None:
    """``"after mean 2.3 sd above pre"`` from the norm_* columns, when they are all there."""
    if row is None:
        return None
    try:
        mp, ma = float(row["norm_mean_pre"]), float(row["norm_mean_after"])
        sp_, sa = float(row["norm_sd_pre"]), float(row["norm_sd_after"])
    except (KeyError, TypeError, ValueError):
        return None
    if not all(np.isfinite([mp, ma, sp_, sa])):
        return None
    side = "above" if ma >= mp else "below"
    sd = sp_ if sp_ > NORM_SD_ROUNDING else sa
    if sd > NORM_SD_ROUNDING:
        return f"after mean {_sd_ratio(abs(ma - mp) / sd)} sd {side} pre"
    return f"after mean {abs(ma - mp):.0%} of the range {side} pre"


#: Window lengths: a level or spread of an empty window is a fill value, not a measurement.
LENGTH_COLUMNS: tuple[str, ...] = ("pre_series_length", "after_series_length")


def _empty_window(row: Mapping[str, float] | None) -> str | None:
    """``"pre"`` or ``"after"`` when the row says that window holds no commit."""
    if row is None:
        return None
    for col in LENGTH_COLUMNS:
        try:
            if float(row[col]) == 0:
                return col.split("_", 1)[0]
        except (KeyError, TypeError, ValueError):
            continue
    return None


#: The row's column saying how noisy Pre is against its level (``s(P) / |median(P)|``).
LEVEL_NOISE_COLUMN = "pair_rel_noise"


def _level_in_noise(row: Mapping[str, float] | None) -> bool:
    """True when the row says Pre's level lies within one noise scale of 0 (``pair_rel_noise`` >= 1)."""
    if row is None:
        return False
    try:
        return bool(float(row[LEVEL_NOISE_COLUMN]) >= 1.0)
    except (KeyError, TypeError, ValueError):
        return False


def _row_value(row: Mapping[str, float] | None, column: str) -> float | None:
    """The row's value of ``column`` as a float (NaN kept), None when the row lacks it."""
    if row is None:
        return None
    try:
        return float(row[column])
    except (KeyError, TypeError, ValueError):
        return None


def _undefined(name: str, words: str, row: Mapping[str, float] | None) -> str:
    """The words for an undefined (NaN) scoring column, naming the cause the row shows.

    ``words`` (:data:`SCORING_PHRASES`) name the usual cause; the row may show
    another: every ``pair_*`` measure is NaN when Pre holds fewer than 2
    commits (the first commits of a series online, whose Pre median is not
    0), and the :data:`RATIO_SUBJECTS` ratios when the shift they divide by
    is 0 or undefined (a candidate at the series' second commit, or with
    equal medians on ``RADIUS`` commits each side, whatever follows it).
    """
    if name.startswith("pair_"):
        pre = _row_value(row, "pre_series_length")
        if pre is not None and pre < 2:
            return f"{words.split(' (')[0]} (pre window under 2 commits)"
        return words
    if name in RATIO_SUBJECTS and (why := _no_local_shift(row)) is not None:
        return f"{RATIO_SUBJECTS[name]}: {why}"
    return words


def _no_local_shift(row: Mapping[str, float] | None) -> str | None:
    """Why the row's shift on ``RADIUS`` commits each side is undefined or 0, None when it is neither (or unknown)."""
    local = _row_value(row, LOCAL_SHIFT_COLUMN)
    if local is not None and not np.isfinite(local):
        return "fewer than 2 commits before it"
    if local == 0:
        return f"the {context.RADIUS} commits from it on have the median of the {context.RADIUS} before"
    return None


def describe(name: str, value: float, row: Mapping[str, float] | None = None) -> str:
    """Plain words for one feature column and its value.

    ``row`` (the whole feature row) lets the level features read as a shift:
    ``norm_mean_after`` becomes "after mean 2.3 sd above pre". When the row's
    window lengths say a window is empty (an alert at the first commit), the
    level and spread columns hold fill values and say so instead.
    """
    if name in NORM_PHRASE_COLUMNS and (empty := _empty_window(row)) is not None:
        what = "level" if name.startswith("norm_mean") else "spread"
        return f"{empty} window is empty: no {what} to compare"
    if name in ("norm_mean_pre", "norm_mean_after"):
        shift = _shift_phrase(row)
        if shift is not None:
            return shift
        w = name.rsplit("_", 1)[1]
        return f"{w} mean at {value:.0%} of the Pre+After range"
    if name in ("norm_sd_pre", "norm_sd_after"):
        w = name.rsplit("_", 1)[1]
        other = "after" if w == "pre" else "pre"
        try:
            o = float(row[f"norm_sd_{other}"]) if row is not None else float("nan")
        except (KeyError, TypeError, ValueError):
            o = float("nan")
        if np.isfinite(o) and o > NORM_SD_ROUNDING and np.isfinite(value):
            return f"{w} sd {(value if value > NORM_SD_ROUNDING else 0.0) / o:.2g}x {other} sd"
        return f"{w} sd {value:.0%} of the Pre+After range"
    window, _, characteristic = name.partition("_")
    if window in ("pre", "after") and characteristic in PHRASES:
        if characteristic == "series_length" and value == 1:
            return f"{window} window has 1 commit"
        return PHRASES[characteristic].format(w=window, v=_num(value))
    if name in SCORING_PHRASES:
        template, undefined = SCORING_PHRASES[name]
        if not np.isfinite(value):
            return _undefined(name, undefined, row)
        if name == "pair_rel_change" and _level_in_noise(row):
            # A delta or score whose Pre sits within its noise of 0: any % off it is large and says little.
            return template.format(v=_num(value), pct=f"{100 * value:.3g}%", s="") + " (pre level within its noise of 0)"
        if name == "ctx_dominance" and (why := _no_local_shift(row)) is not None:
            # Its own shift is undefined or 0: it is then the weakest (0) or, alone, the "strongest" (1) of nothing.
            return f"no shift on {context.RADIUS} commits each side to rank among its neighbours: {why}"
        if name == "ctx_persist_after" and value < 0:
            # Off the phrase's 0..1 scale: the next commits sit beyond the old level, away from the new one.
            return (f"new level not held: the next {context.RADIUS} commits went back past the old level "
                    f"({_num(value)}; 1 = held, 0 = went back)")
        if name == "ctx_persist_after" and value > 2:
            # Off the scale the other way: the next commits sit further past the new level than the step itself.
            return (f"new level not held: the next {context.RADIUS} commits moved on past it, further than the step "
                    f"({_num(value)}; 1 = held, 0 = went back)")
        return template.format(v=_num(value), pct=f"{100 * value:.3g}%", s="" if value == 1 else "s")
    return f"{name} = {_num(value)}"


#: Column pairs that read as one fact ("after mean 2.3 sd above pre", "after
#: sd 1.5x pre sd"): explained together, their contributions summed, under
#: the second name.
PAIRED: tuple[tuple[str, str], ...] = (("norm_mean_pre", "norm_mean_after"), ("norm_sd_pre", "norm_sd_after"))


def grouped_contributions(contrib: Contributions) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Contributions with each :data:`PAIRED` pair the model uses merged into one column.

    Returns (values (n, q), names (q,), feature values (n, q)); a merged pair
    keeps the second column's name and value.
    """
    names = list(contrib.names)
    keep = np.ones(len(names), dtype=bool)
    values = contrib.values.copy()
    for a, b in PAIRED:
        if a in names and b in names:
            ia, ib = names.index(a), names.index(b)
            values[:, ib] += values[:, ia]
            keep[ia] = False
    return values[:, keep], [n for n, k in zip(names, keep, strict=True) if k], contrib.X[:, keep]


def _direction(c: float) -> str:
    if round(abs(c), 2) == 0.0:
        return "0.00, neither way"  # was "-0.00 toward false" for a contribution of -0.001
    sign = "+" if c >= 0 else "-"
    toward = "true" if c >= 0 else "false"
    return f"{sign}{abs(c):.2f} toward {toward}"


def explain(classifier, X: pd.DataFrame, top: int = 3) -> list[list[str]]:
    """The ``top`` contributing features of each row of ``X`` in plain words.

    Parameters
    ----------
    classifier : a fitted :class:`~training.classifier.TriageClassifier`
        (rf, xgb or svm), or a bare RandomForestClassifier / XGBClassifier
    X : feature matrix rows, shape (n, >= p); the model's columns are picked
        by name, the others (e.g. the norm_* columns for a shift phrase)
        improve the wording
    top : how many features per row, by absolute contribution; the Pre/After
        pairs of :data:`PAIRED` count as one feature (contributions summed)

    Returns
    -------
    list (length n) of lists of ``top`` strings, strongest first, e.g.
    ``"after mean 2.3 sd above pre (+0.21 toward true)"``. Contributions are
    in P(true) for forests, in log-odds for XGBoost and in the SVM's margin
    (its decision function, before calibration) for SVMs.
    """
    if len(X) == 0 or top <= 0:
        return [[] for _ in range(len(X))]
    contrib = contributions(classifier, X)
    values, names, raw = grouped_contributions(contrib)
    k = min(top, values.shape[1])
    # argpartition then a sort of the k survivors: O(n p) rather than O(n p log p).
    part = np.argpartition(-np.abs(values), k - 1, axis=1)[:, :k]
    order = np.take_along_axis(part, np.argsort(-np.abs(np.take_along_axis(values, part, 1)), axis=1), 1)
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X), columns=contrib.names)
    # The level/spread columns reword each other ("after mean 2.3 sd above pre"), and Pre's relative
    # noise qualifies a relative change, and the fixed-window shift tells why a ratio to it is undefined,
    # so they travel with every row, model feature or not.
    norm = {c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64)
            for c in (*NORM_PHRASE_COLUMNS, *LENGTH_COLUMNS, LEVEL_NOISE_COLUMN, LOCAL_SHIFT_COLUMN)
            if c in frame.columns}
    out: list[list[str]] = []
    for i in range(values.shape[0]):
        row = {c: v[i] for c, v in norm.items()}
        reasons = []
        for j in order[i]:
            phrase = describe(names[j], raw[i, j], row)
            reasons.append(f"{phrase} ({_direction(values[i, j])})")
        out.append(reasons)
    return out


__all__ = [
    "Contributions",
    "contributions",
    "describe",
    "explain",
    "forest_contributions",
    "grouped_contributions",
    "xgb_contributions",
]

