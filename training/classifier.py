"""``TriageClassifier``: true vs false alert from the Pre/After characteristics.

Bauer et al. (ICPE 2022) compared a random forest, an SVM and XGBoost on the
window characteristics of each candidate; the forest won (AUC 98.5 %, accuracy
94.3 %). This estimator wraps the three behind one scikit-learn interface and
adds what a deployment needs: the feature-matrix input, class weights for the
imbalance of true and false alerts, calibrated probabilities, and a decision
threshold chosen by policy (:mod:`training.thresholds`).

Input is either the feature matrix (a DataFrame following the contract in
ARCHITECTURE.md; with ``y=None`` the target comes from its ``label`` column and
untriaged rows are left out) or a plain array ``X`` of shape
(n_samples, n_features) with ``y``.

Classes: with the feature matrix or the two triage labels, ``classes_`` is
``["false_positive", "true_positive"]``; with any other binary ``y`` it is the
two sorted values and the second counts as "true alert".
``predict_proba(X)[:, 1]`` is always P(classes_[1]). Binary only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from triage.core import labels
from triage.core.errors import InputError
from triage.features import matrix
from triage.features.catalogue import METADATA_COLUMNS
from triage.training.model_kinds import KINDS, MODELS, ModelKind, kind_of
from triage.training.thresholds import Fixed, choose_threshold, parse_policy

CALIBRATIONS: tuple[str, ...] = ("auto", "sigmoid", "isotonic", "none")

#: Each kind's default parameters, by kind name (a view of
#: :mod:`training.model_kinds`, where each kind is defined); any of them can be
#: overridden by a keyword to the constructor.
DEFAULT_PARAMS: dict[str, dict[str, object]] = {name: kind.defaults for name, kind in KINDS.items()}

__all__ = ["CALIBRATIONS", "DEFAULT_PARAMS", "MODELS", "TriageClassifier"]


class TriageClassifier(ClassifierMixin, BaseEstimator):
    """Classify change-point candidates as true or false alerts.

    Parameters
    ----------
    model : ``"rf"`` (random forest, default), ``"svm"`` (RBF SVM on
        standardised features) or ``"xgb"`` (gradient-boosted trees, XGBoost).
    features : list of feature columns, path of a feature-set JSON file
        (:mod:`features.feature_sets`), or None for every contract feature column.
    threshold : policy for the decision threshold on P(true alert): a number
        (fixed, default ``"0.5"``), ``"recall:R"`` (highest threshold reaching
        recall R on validation data) or ``"fbeta:B"`` (maximise F-beta on
        validation data); see :mod:`training.thresholds`.
    class_weight : ``"balanced"`` (weights inversely proportional to class
        frequency), a dict ``{class: weight}``, or None. For the SVM the weights
        shape its margin (which candidates rank above which), but its P(true)
        is Platt-scaled on the validation rows as they are, so at a fixed
        threshold the weights move its calls little (on 2,000 rows with 6 %
        true, the SVM's recall at 0.5 was 0.03 without weights and 0.02 with
        balanced ones; the forest's rose from 0.15 to 0.44): set the SVM's
        trade-off with a learned threshold policy (``recall:R``, ``fbeta:B``).
    calibration : ``"auto"`` (Platt scaling for the SVM, whose margins are not
        probabilities; none for the tree models, whose class-weighted
        probabilities rank well and need no remapping), ``"sigmoid"``,
        ``"isotonic"`` or ``"none"`` (the SVM is always at least Platt-scaled).
        Calibration is fitted on the validation part.
    validation_size : fraction of the training rows held out (grouped by series
        when groups are known) when a learned threshold or calibration needs
        validation data and ``fit`` got none; the paper's 10 %.
    search : None, or the number of random hyper-parameter settings to try
        (grouped 3-fold cross-validation on ROC AUC) before the final fit.
    random_state : int seed for the model, the validation split and the search.
    n_jobs : threads/processes of the model (None = 1).
    **model_params : passed to the underlying model, overriding
        :data:`DEFAULT_PARAMS` (e.g. ``n_estimators=100``, ``C=10``).

    Attributes
    ----------
    (set by ``fit``)

    estimator_ : the fitted scikit-learn / XGBoost model
    calibrator_ : fitted score -> probability map, or None
    classes_ : ndarray, shape (2,)
    feature_names_ : list of str or None (array input)
    n_features_in_ : int
    threshold_ : float, the decision threshold in [0, 1]
    threshold_policy_ : str, the policy as text (``"0.5"``, ``"recall:0.95"``)
    params_ : dict, the model parameters actually used
    best_params_ : dict, the search's best setting (only with ``search``)
    data_hash_ : str, SHA-256 of the training rows (see :func:`features.matrix.data_hash`)
    n_train_ : dict, rows used for fitting / validation and positives
    fit_seconds_ : float, wall-clock seconds of ``fit``
    """

    def __init__(
        self,
        model: str = "rf",
        features: str | Path | Sequence[str] | None = None,
        threshold: object = "0.5",
        class_weight: str | dict[Any, float] | None = "balanced",
        calibration: str = "auto",
        validation_size: float = 0.1,
        search: int | None = None,
        random_state: int | None = 0,
        n_jobs: int | None = None,
        **model_params: object,
    ):
        self.model = model
        self.features = features
        self.threshold = threshold
        self.class_weight = class_weight
        self.calibration = calibration
        self.validation_size = validation_size
        self.search = search
        self.random_state = random_state
        self.n_jobs = n_jobs
        for key, value in model_params.items():
            setattr(self, key, value)

    # ------------------------------------------------------------------ parameters

    def _model_param_names(self) -> list[str]:
        # Keyword extras are stored as public attributes without the trailing
        # underscore of fitted state; that is how they are told apart.
        own = set(self._get_param_names())
        return [k for k in vars(self) if k not in own and not k.startswith("_") and not k.endswith("_")]

    def get_params(self, deep: bool = True) -> dict[str, object]:
        params = super().get_params(deep=deep)
        params.update({k: getattr(self, k) for k in self._model_param_names()})
        return params

    def set_params(self, **params: object) -> TriageClassifier:
        """Set parameters; a name that is neither the classifier's nor its model kind's is refused.

        As scikit-learn's ``set_params``: a misspelt name (``n_estimatorz``) had been
        stored and listed by :meth:`get_params` until ``fit`` failed on it, and a
        fitted attribute (``threshold_``) was overwritten. The model kind is the one
        ``params`` sets, else the current one (an unknown kind is refused at fit).
        """
        own = set(self._get_param_names())
        kind = KINDS.get(str(params.get("model", self.model)))
        for key in params:
            if key in own or key in self._model_param_names():
                continue
            if key.startswith("_") or key.endswith("_") or "__" in key:
                raise ValueError(
                    f"Invalid parameter {key!r} for estimator TriageClassifier: fitted state and nested "
                    "parameters are not settable"
                )
            if kind is not None:
                kind.check_param_name(key)
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.classifier_tags.multi_class = False
        return tags

    # ------------------------------------------------------------------ fitting

    def fit(
        self,
        X: pd.DataFrame | np.ndarray,
        y: Sequence | np.ndarray | None = None,
        *,
        groups: Sequence | np.ndarray | None = None,
        validation: tuple[object, object] | None = None,
    ) -> TriageClassifier:
        """Fit on a feature matrix (``y=None``) or on ``X`` (n_samples, n_features) and ``y``.

        From a feature matrix the triaged rows are learned from, except those
        :func:`~triage.features.matrix.not_scorable` (no commit before the alert
        in its window: never judged by ``triage label`` / ``score``), as
        :func:`~triage.features.matrix.training_data` takes them. Given ``y``,
        every row given is learned from: the caller chose them.

        ``groups`` (series ids, shape (n_samples,)) keeps a series on one side
        of the validation split and the search folds; taken from ``series_id``
        when ``X`` is a feature matrix. ``validation=(X_val, y_val)`` supplies
        validation data explicitly (used for the threshold policy and
        calibration); otherwise ``validation_size`` of the rows is held out
        when needed.
        """
        started = time.perf_counter()
        self._check_params()
        policy = parse_policy(self.threshold)
        Xa, y01, groups, classes, names = self._training_arrays(X, y, groups)
        if Xa.shape[1] == 0:  # a frame without columns (an array is refused by _as_2d_float)
            raise ValueError(f"Found array with 0 feature(s) (shape={Xa.shape}) while a minimum of 1 is required.")
        self.classes_ = classes
        self.feature_names_ = names
        self.n_features_in_ = Xa.shape[1]
        if names is not None and isinstance(X, pd.DataFrame) and all(isinstance(n, str) for n in names):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.data_hash_ = matrix.data_hash(Xa, y01, groups if groups is not None else np.array([], dtype=str), names or [])

        calibration = self._calibration_method()
        if validation is not None:
            X_fit, y_fit, g_fit = Xa, y01, groups
            X_val, y_val = self._validation_arrays(*validation)
        elif policy.needs_validation or calibration != "none":
            fit_idx, val_idx = _validation_split(y01, groups, self.validation_size, self.random_state)
            X_fit, y_fit = Xa[fit_idx], y01[fit_idx]
            g_fit = groups[fit_idx] if groups is not None else None
            X_val, y_val = Xa[val_idx], y01[val_idx]
        else:
            X_fit, y_fit, g_fit, X_val, y_val = Xa, y01, groups, None, None

        params = self._resolved_params()
        if self.search:
            params = self._search(params, X_fit, y_fit, g_fit, int(self.search))
        self.params_ = params
        self.estimator_ = self._build(params)
        self.estimator_.fit(X_fit, y_fit, **self._kind.fit_params(self._class_weight(), y_fit))

        self.calibrator_ = None
        if calibration != "none":
            # Validation data is held out above whenever calibration is on.
            assert X_val is not None and y_val is not None
            self.calibrator_ = _fit_calibrator(calibration, self._raw_score(X_val), y_val)
            if not _keeps_order(self.calibrator_):
                # The validation part is a few series; on real histories their margins
                # can rank the other way round, and a negative Platt slope would then
                # reverse every P(true) (held-out AUC 0.32 for a margin ranking at 0.68).
                # The fit rows' scores, pooled with them, say which way the score points.
                self.calibrator_ = _fit_calibrator(
                    calibration,
                    np.r_[self._raw_score(X_fit), self._raw_score(X_val)],
                    np.r_[y_fit, y_val],
                )
        if isinstance(policy, Fixed):
            self.threshold_ = policy.value
        else:
            # A learned policy needs validation data (``needs_validation``), held out above.
            assert X_val is not None and y_val is not None
            self.threshold_ = choose_threshold(policy, y_val, self._positive_proba(X_val))
        self.threshold_policy_ = policy.spec()
        self.n_train_ = {
            "fit": int(len(y_fit)),
            "validation": int(len(y_val)) if y_val is not None else 0,
            "validation_positives": int(np.sum(y_val)) if y_val is not None else 0,
            "positives": int(y01.sum()),
            "negatives": int(len(y01) - y01.sum()),
        }
        self.fit_seconds_ = time.perf_counter() - started
        return self

    @property
    def _kind(self) -> ModelKind:
        return kind_of(self.model)

    def _check_params(self) -> None:
        kind_of(self.model)
        if not (self.class_weight in ("balanced", None) or isinstance(self.class_weight, dict)):
            raise ValueError(f"class_weight must be 'balanced', a dict or None, got {self.class_weight!r}")
        if (self.calibration or "none") not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {self.calibration!r}")
        try:
            validation_size = float(self.validation_size)
        except (TypeError, ValueError):
            validation_size = float("nan")
        if not 0.0 < validation_size < 0.5:
            raise ValueError(f"validation_size must be in (0, 0.5), got {self.validation_size!r}")
        if self.search is not None and (
            isinstance(self.search, bool) or not isinstance(self.search, int) or self.search < 0
        ):
            raise ValueError(f"search must be None or a number of settings, got {self.search!r}")
        parse_policy(self.threshold)

    def _calibration_method(self) -> str:
        method = self.calibration or "none"
        if self._kind.margin_score and method in ("auto", "none"):
            # A margin (the SVM's) is no probability; it is always mapped (Platt).
            return "sigmoid"
        return "none" if method == "auto" else method

    def _training_arrays(
        self, X, y, groups
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, list[str] | None]:
        """(X float64 (n, p), y in {0,1} (n,), groups or None, classes_, feature names or None)."""
        if isinstance(X, pd.DataFrame) and y is None:
            td = matrix.training_data(X, self.features)
            return td.X, td.y.astype(np.int64), td.groups, np.array(matrix.CLASS_NAMES, dtype=object), td.columns
        if y is None:
            raise ValueError(
                "requires y to be passed, but the target y is None "
                "(only a feature matrix with a 'label' column carries its own target)"
            )
        if isinstance(X, pd.DataFrame):
            names = matrix.resolve_features(self.features, X) or list(X.columns)
            if self.features is None and len(names) < X.shape[1]:
                # Contract feature columns select themselves; any other column but the matrix's
                # metadata would be dropped without a word (an informative "signal" column was).
                other = [str(c) for c in X.columns if c not in names and c not in METADATA_COLUMNS]
                if other:
                    raise ValueError(
                        f"X has contract feature columns ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}) "
                        f"and {len(other)} other column(s) ({', '.join(other[:5])}{', ...' if len(other) > 5 else ''}), "
                        "which would be left out: pass features=[...] naming the columns to learn from"
                    )
            Xa = matrix.feature_array(X, names)
        else:
            if self.features is not None:
                raise ValueError("features= selects DataFrame columns; X is an array")
            Xa, names = _as_2d_float(X), None
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            import warnings

            from sklearn.exceptions import DataConversionWarning

            # scikit-learn's own wording, which its estimator checks (and filters) look for.
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. Please change the shape "
                "of y to (n_samples,), for example using ravel().",
                DataConversionWarning,
                stacklevel=3,
            )
            y_arr = y_arr.ravel()
        if y_arr.ndim != 1:
            raise ValueError(f"y must be 1-D (n_samples,), got shape {y_arr.shape}")
        if len(y_arr) != len(Xa):
            raise ValueError(f"X has {len(Xa)} rows, y has {len(y_arr)}")
        missing = np.asarray(pd.isna(y_arr), dtype=bool)
        if missing.any():
            # NaN read as "continuous" targets, None or pd.NA as a third class: a missing label, said so.
            raise ValueError(
                f"y has {int(missing.sum())} missing label(s), the first at row {int(np.flatnonzero(missing)[0])} "
                "(0-based): leave those rows out (untriaged candidates carry no target)"
            )
        classes = _classes_of(y_arr)
        y01 = self._encode_target(y_arr, classes)
        if groups is not None:
            groups = np.asarray(groups).astype(str)
            if len(groups) != len(Xa):
                raise ValueError(f"X has {len(Xa)} rows, groups has {len(groups)}")
        return Xa, y01, groups, classes, names

    def _validation_arrays(self, X_val, y_val) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(X_val, pd.DataFrame) and y_val is None:
            td = matrix.training_data(X_val, self.feature_names_)
            return td.X, td.y.astype(np.int64)
        return self._predict_array(X_val), self._encode_target(y_val, self.classes_)

    @staticmethod
    def _encode_target(y, classes) -> np.ndarray:
        y_arr = np.asarray(y)
        if y_arr.dtype.kind in "OUS":
            y_arr = y_arr.astype(str)
            classes = np.asarray(classes).astype(str)
        unknown = ~np.isin(y_arr, classes)
        if unknown.any():
            raise ValueError(f"y holds {y_arr[unknown][0]!r}, not one of the classes {list(classes)}")
        return (y_arr == classes[1]).astype(np.int64)

    def _resolved_params(self) -> dict[str, object]:
        params = dict(self._kind.defaults)
        params.update({k: getattr(self, k) for k in self._model_param_names()})
        return params

    def _class_weight(self) -> str | dict[int, float] | None:
        """``class_weight`` for the model, which is fitted on y in {0, 1}: a dict's
        keys (the user's classes, ``{"true_positive": 5, ...}``) turned into 0 / 1.

        Keys 0 / 1 (or "0" / "1", as a manifest stores them) that are not classes
        are read as the positions of ``classes_``, as before."""
        if not isinstance(self.class_weight, dict):
            return self.class_weight
        classes = [str(c) for c in self.classes_]
        encoded: dict[int, float] = {}
        for key, weight in self.class_weight.items():
            if str(key) in classes:
                encoded[classes.index(str(key))] = float(weight)
            elif str(key) in ("0", "1"):
                encoded[int(str(key))] = float(weight)
            else:
                raise ValueError(f"class_weight names {key!r}, not one of the classes {list(self.classes_)}")
        for position in (0, 1):
            encoded.setdefault(position, 1.0)
        return encoded

    def _build(self, params: dict[str, object]):
        return self._kind.build(
            params, class_weight=self._class_weight(), random_state=self.random_state, n_jobs=self.n_jobs
        )

    def _search(self, params, X, y, groups, n_iter: int) -> dict[str, object]:
        from sklearn.model_selection import (
            RandomizedSearchCV,
            StratifiedGroupKFold,
            StratifiedKFold,
        )

        kind = self._kind
        prefix = kind.search_prefix
        est = self._build(dict(params))
        cv = (
            StratifiedGroupKFold(3, shuffle=True, random_state=self.random_state)
            if groups is not None
            else StratifiedKFold(3, shuffle=True, random_state=self.random_state)
        )
        search = RandomizedSearchCV(
            est,
            {prefix + k: v for k, v in kind.search_space.items()},
            n_iter=n_iter,
            scoring="roc_auc",
            cv=cv,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
            refit=False,
        )
        search.fit(X, y, groups=groups, **kind.fit_params(self._class_weight(), y))
        best = {k.removeprefix(prefix): v for k, v in search.best_params_.items()}
        self.best_params_ = best
        self.search_score_ = float(search.best_score_)
        return {**params, **best}

    # ------------------------------------------------------------------ prediction

    def _predict_array(self, X) -> np.ndarray:
        names: list[str] | None = getattr(self, "feature_names_", None)
        if isinstance(X, pd.DataFrame) and names is not None:
            return matrix.feature_array(X, names)
        Xa = _as_2d_float(X.to_numpy() if isinstance(X, pd.DataFrame) else X)
        if Xa.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Xa.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return Xa

    def _raw_score(self, Xa: np.ndarray) -> np.ndarray:
        """The model's own score for the positive class, shape (n,): the SVM's
        margin when it is calibrated here, else the model's probability."""
        return self._kind.raw_score(self.estimator_, Xa)

    def _positive_proba(self, Xa: np.ndarray) -> np.ndarray:
        score = self._raw_score(Xa)
        if self.calibrator_ is None:
            return score
        return _apply_calibrator(self.calibrator_, score)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n_samples, 2); column 1 is P(true alert)."""
        check_is_fitted(self, "estimator_")
        p = np.clip(self._positive_proba(self._predict_array(X)), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def decision_function(self, X) -> np.ndarray:
        """P(true alert) minus the threshold, shape (n_samples,): > 0 means true alert.

        scikit-learn reads a score > 0 as ``classes_[1]``; :meth:`predict` calls
        P >= threshold a true alert, and a learned threshold is one of the
        validation probabilities, so P can equal it (a forest's probabilities
        are multiples of 1 / trees). Such a row gets the smallest positive float
        instead of 0, so that both say the same (it was 0: called false here,
        true by ``predict``); the order of the scores is unchanged.
        """
        p = self.predict_proba(X)[:, 1]
        score = p - self.threshold_
        return np.where((p >= self.threshold_) & (score <= 0), np.nextafter(0.0, 1.0), score)

    def predict(self, X) -> np.ndarray:
        """``classes_[1]`` where P(true alert) >= ``threshold_``, else ``classes_[0]``; shape (n_samples,)."""
        positive = self.predict_proba(X)[:, 1] >= self.threshold_
        return self.classes_[positive.astype(np.int64)]

    def score(self, X, y=None, sample_weight=None) -> float:
        """Accuracy at ``threshold_``; on a feature matrix with ``y=None``, over its triaged rows that are scorable.

        A row :func:`~triage.features.matrix.not_scorable` is left out, as
        :meth:`fit` leaves it out of a feature matrix and ``triage label``
        leaves it out of its agreement figures.
        """
        if isinstance(X, pd.DataFrame) and y is None:
            mask = matrix.triaged_mask(X) & ~matrix.not_scorable(X)
            if not mask.any():
                raise InputError(None, None, "no scorable triaged candidates to score")
            X = X.loc[mask]
            y = X["label"].astype(str).to_numpy()
            if self.classes_.dtype.kind not in "OUS":
                y = np.where(y == matrix.CLASS_NAMES[1], self.classes_[1], self.classes_[0])
        return super().score(X, y, sample_weight=sample_weight)


# ---------------------------------------------------------------------- helpers


def _as_2d_float(X) -> np.ndarray:
    import scipy.sparse

    if scipy.sparse.issparse(X):
        raise TypeError("sparse input is not supported: pass a dense array or the feature matrix")
    Xa = np.asarray(X)
    if np.iscomplexobj(Xa):
        raise ValueError("Complex data not supported")
    Xa = np.array(Xa, dtype=np.float64)
    if Xa.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features), got shape {Xa.shape}. Reshape your data, "
            "e.g. array.reshape(-1, 1) for one feature or array.reshape(1, -1) for one sample"
        )
    if Xa.shape[1] == 0:
        # scikit-learn's words; XGBoost's own were "Check failed: this->n_features > ...".
        raise ValueError(f"Found array with 0 feature(s) (shape={Xa.shape}) while a minimum of 1 is required.")
    Xa[~np.isfinite(Xa)] = np.nan
    return Xa


def _classes_of(y: np.ndarray) -> np.ndarray:
    """``classes_`` for a target: the two triage labels, or any two values sorted."""

    if y.dtype.kind in "OUS":
        values = set(np.unique(y.astype(str)))
        # Other canonical labels (not_triaged, ...) mean untriaged rows slipped in:
        # they carry no target, so refuse rather than learn them as a class.
        untriaged = sorted(values & (set(labels.CANONICAL) - set(matrix.CLASS_NAMES)))
        if untriaged:
            raise ValueError(
                f"y holds {', '.join(repr(v) for v in untriaged)}; only true_positive / false_positive "
                "can be learned (pass the feature matrix without y to drop untriaged rows)"
            )
        if values <= set(matrix.CLASS_NAMES) and len(values) == 2:
            return np.array(matrix.CLASS_NAMES, dtype=object)
        classes = np.array(sorted(values), dtype=object)
    else:
        if y.dtype.kind == "f" and np.any(np.asarray(y) != np.round(y)):
            raise ValueError("Unknown label type: continuous. y must hold two classes")
        classes = np.unique(y)
    if len(classes) != 2:
        problem = "Only binary classification is supported" if len(classes) > 2 else "need both classes"
        raise ValueError(f"{problem}: y holds {len(classes)} class(es): {list(classes[:5])}")
    return classes


def _validation_split(y: np.ndarray, groups, size: float, seed) -> tuple[np.ndarray, np.ndarray]:
    """(fit indices, validation indices): stratified, and grouped when ``groups`` is given."""
    from sklearn.model_selection import StratifiedGroupKFold, train_test_split

    idx = np.arange(len(y))
    n_folds = max(2, int(round(1.0 / size)))
    if groups is not None and len(np.unique(groups)) >= n_folds:
        folds = StratifiedGroupKFold(n_folds, shuffle=True, random_state=seed)
        fit_idx, val_idx = next(folds.split(idx, y, groups))
        if len(np.unique(y[val_idx])) == 2 and len(np.unique(y[fit_idx])) == 2:
            return fit_idx, val_idx
    for cls in (0, 1):
        if np.sum(y == cls) < 2:
            raise InputError(None, None, f"only {int(np.sum(y == cls))} {'true' if cls else 'false'} alert: "
                                         "too few to hold out validation rows of each class (for calibration "
                                         "or a learned threshold); label more candidates")
    # scikit-learn's own rounding (ceil), but at least one row per class: on 10 rows
    # 10 % is one row, and train_test_split refused it in its words ("The test_size
    # = 1 should be greater or equal to the number of classes = 2").
    n_val = max(2, int(np.ceil(size * len(y))))
    fit_idx, val_idx = train_test_split(idx, test_size=n_val, stratify=y, random_state=seed)
    # Stratifying rounds a class of a few rows (3 false alerts in 300) down to none
    # in validation: Platt scaling then fails on one class and a learned threshold
    # is chosen without a single false alert. One row of such a class moves over.
    rng = np.random.default_rng(seed)
    parts = [fit_idx, val_idx]
    for cls in (0, 1):
        for src, dst in ((0, 1), (1, 0)):
            if not np.any(y[parts[dst]] == cls):
                moved = rng.choice(parts[src][y[parts[src]] == cls])
                parts[src] = parts[src][parts[src] != moved]
                parts[dst] = np.r_[parts[dst], moved]
    return parts[0], parts[1]


def _fit_calibrator(method: str, score: np.ndarray, y: np.ndarray):
    """Platt (logistic on the score) or isotonic map, fitted on validation scores, shape (n,)."""
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(score, y)
    from sklearn.linear_model import LogisticRegression

    # A large C: Platt scaling is a plain two-parameter fit, not a regularised one.
    return LogisticRegression(C=1e6).fit(score.reshape(-1, 1), y)


def _keeps_order(calibrator) -> bool:
    """Whether a fitted calibrator maps a higher score to a higher P(true) (isotonic always does)."""
    coef = getattr(calibrator, "coef_", None)
    return coef is None or float(np.ravel(coef)[0]) > 0.0


def _apply_calibrator(calibrator, score: np.ndarray) -> np.ndarray:
    if hasattr(calibrator, "predict_proba"):
        return calibrator.predict_proba(score.reshape(-1, 1))[:, 1]
    return calibrator.predict(score)
