"""The three model kinds of :class:`~training.classifier.TriageClassifier`, each defined once.

Bauer et al. (ICPE 2022) compared a random forest, an SVM and XGBoost. Every
way the kinds differ lives here, one class per kind:

* default parameters and the hyper-parameter search space;
* building the estimator (class weights, seed, threads);
* fit keywords (XGBoost has no ``class_weight``: per-row weights instead);
* the raw score for the positive class: a probability, or the SVM's margin,
  which is no probability and is therefore always calibrated (Platt);
* the file the fitted estimator is saved in: skops for scikit-learn models
  (:mod:`training.model_files` owns that format and its allowlist), or the
  kind's own format (XGBoost's UBJSON, forward-readable by later versions).

The libraries behind a kind are imported when the kind is used, so that
importing the classifier stays cheap.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils.class_weight import compute_sample_weight


class ModelKind:
    """What a model kind is; subclasses fill in the hooks.

    Attributes
    ----------
    name : the kind's name in ``TriageClassifier(model=...)`` and in manifests
    defaults : model parameters used unless overridden (tuned on the synthetic
        benchmark, BENCHMARKS.md "Training and evaluation")
    search_space : candidate values per parameter for the randomized search
    search_prefix : prefix of the model's parameters inside the built estimator
    margin_score : the raw score is a margin, not a probability: always calibrate
    native_file : file name when the kind saves in its own format, else None (skops)
    native_library : distribution whose version must be able to read ``native_file``
    """

    name: str = ""
    defaults: dict[str, object] = {}
    search_space: dict[str, list[object]] = {}
    search_prefix: str = ""
    margin_score: bool = False
    native_file: str | None = None
    native_library: str | None = None

    def build(self, params: dict[str, object], *, class_weight: Any, random_state: int | None, n_jobs: int | None):
        """An unfitted estimator with ``params``."""
        raise NotImplementedError

    def fit_params(self, class_weight: Any, y: np.ndarray) -> dict[str, object]:
        """Extra keywords of ``estimator.fit`` for targets ``y`` (n,)."""
        return {}

    def estimator_params(self) -> dict[str, object]:
        """The parameters the kind's estimator takes, with their defaults (its ``get_params``)."""
        raise NotImplementedError

    def check_param_name(self, name: str) -> None:
        """``ValueError`` for a parameter name the kind's estimator does not take (as scikit-learn's
        ``set_params`` refuses one), with the nearest known name when there is one."""
        import difflib

        known = self.estimator_params()
        if name not in known:
            near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else f"; it takes {', '.join(sorted(known))}"
            raise ValueError(f"Invalid parameter {name!r} for model {self.name!r}{hint}")

    def raw_score(self, estimator, X: np.ndarray) -> np.ndarray:
        """The fitted estimator's score for the positive class, shape (n,)."""
        return estimator.predict_proba(X)[:, 1]

    def save_native(self, estimator, target: Path) -> None:
        """Write the fitted estimator to ``target`` in the kind's own format."""
        raise NotImplementedError(f"{self.name} models are saved with skops")

    def load_native(self, target: Path):
        """Read an estimator :meth:`save_native` wrote."""
        raise NotImplementedError(f"{self.name} models are saved with skops")


class RandomForest(ModelKind):
    name = "rf"
    # 100 trees: on the default synthetic preset 300 trees gained < 0.005 AUC
    # at three times the fit time, and the 100-split protocol must stay short.
    defaults = {"n_estimators": 100, "max_features": "sqrt", "min_samples_leaf": 2}
    search_space = {
        "n_estimators": [100, 200, 300, 500],
        "max_features": ["sqrt", "log2", 0.3, 0.5],
        "min_samples_leaf": [1, 2, 4, 8],
        "max_depth": [None, 12, 20],
    }

    def estimator_params(self):
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier().get_params()

    def build(self, params, *, class_weight, random_state, n_jobs):
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(class_weight=class_weight, random_state=random_state, n_jobs=n_jobs, **params)

    def raw_score(self, estimator, X):
        # With n_jobs > 1 scikit-learn adds the trees' votes in whatever order its
        # threads finish, so the last bits of a probability change from run to run;
        # that is enough to move an isotonic step or a threshold chosen among the
        # probabilities (bench_real's out-of-fold thresholds did). One thread adds
        # them in tree order. A shallow copy leaves the shared model untouched.
        sequential = copy.copy(estimator)
        sequential.n_jobs = 1
        return sequential.predict_proba(X)[:, 1]


class SupportVectorMachine(ModelKind):
    """RBF SVM on median-imputed, standardised features."""

    name = "svm"
    defaults = {"C": 3.0, "gamma": "scale", "kernel": "rbf", "cache_size": 500}
    search_space = {"C": [0.3, 1.0, 3.0, 10.0, 30.0], "gamma": ["scale", 0.003, 0.01, 0.03, 0.1]}
    search_prefix = "svc__"
    margin_score = True

    def estimator_params(self):
        from sklearn.svm import SVC

        return SVC().get_params()

    def build(self, params, *, class_weight, random_state, n_jobs):
        from sklearn.impute import SimpleImputer
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        return Pipeline(
            [
                ("impute", SimpleImputer(strategy="median", keep_empty_features=True)),
                ("scale", StandardScaler()),
                ("svc", SVC(class_weight=class_weight, random_state=random_state, **params)),
            ]
        )

    def raw_score(self, estimator, X):
        return estimator.decision_function(X)


def _refuse_near_misses(params: dict[str, object], known: dict[str, object]) -> None:
    """``TypeError`` for a parameter name that is not the estimator's but nearly is one (a typo).

    XGBoost takes any keyword (its booster has more parameters than its estimator lists) and
    only printed "Parameters: { "n_estimator" } are not used." while it trained 100 trees, the
    default, in place of the 10 asked for. A name near none of the listed ones is passed on.
    """
    import difflib

    for name in params:
        if name not in known and (near := difflib.get_close_matches(name, list(known), n=1, cutoff=0.85)):
            raise TypeError(f"unknown parameter {name!r} for XGBoost (did you mean {near[0]!r}?)")


class XGBoost(ModelKind):
    name = "xgb"
    defaults = {
        "n_estimators": 400,
        "learning_rate": 0.05,
        "max_depth": 6,
        "subsample": 0.8,
        "colsample_bytree": 0.8,
        "min_child_weight": 1.0,
        "tree_method": "hist",
    }
    search_space = {
        "n_estimators": [200, 400, 800],
        "learning_rate": [0.02, 0.05, 0.1],
        "max_depth": [3, 4, 6, 8],
        "subsample": [0.7, 0.8, 1.0],
        "colsample_bytree": [0.5, 0.8, 1.0],
        "min_child_weight": [1.0, 3.0, 10.0],
    }
    native_file = "model.ubj"
    native_library = "xgboost"

    def estimator_params(self):
        from xgboost import XGBClassifier

        return XGBClassifier().get_params()

    def check_param_name(self, name: str) -> None:
        # XGBoost takes any keyword (its booster has more parameters than its estimator lists):
        # only a near miss of a listed one is refused, as at build.
        try:
            _refuse_near_misses({name: None}, self.estimator_params())
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    def build(self, params, *, class_weight, random_state, n_jobs):
        _refuse_near_misses(params, self.estimator_params())
        from xgboost import XGBClassifier

        return XGBClassifier(
            objective="binary:logistic",
            eval_metric="logloss",
            random_state=random_state if random_state is not None else 0,
            n_jobs=n_jobs or 1,
            **params,
        )

    def fit_params(self, class_weight, y):
        # XGBoost has no class_weight; per-row weights of the class are the same thing.
        if class_weight is None:
            return {}
        return {"sample_weight": compute_sample_weight(class_weight, y)}

    def save_native(self, estimator, target):
        estimator.save_model(target)

    def load_native(self, target):
        from xgboost import XGBClassifier

        estimator = XGBClassifier()
        estimator.load_model(target)
        return estimator


#: Every kind by name, in the order the paper lists them.
KINDS: dict[str, ModelKind] = {kind.name: kind for kind in (RandomForest(), SupportVectorMachine(), XGBoost())}
MODELS: tuple[str, ...] = tuple(KINDS)


def monotone_increasing(columns: list[str] | tuple[str, ...]) -> tuple[int, ...]:
    """XGBoost's ``monotone_constraints`` for ``columns`` (n,): 1 for a shift-size column, else 0.

    The shift-size columns (``SHIFT_SIZE_COLUMNS`` of
    :mod:`triage.features.level_shift` and :mod:`triage.features.candidate_context`)
    are those where, other columns fixed, a larger value should never make a
    change less likely. Holding a model to that keeps it from learning the
    opposite from the few projects it is trained on (the bundled
    ``default-scoring``, BENCHMARKS.md "Real data").
    """
    from triage.features.candidate_context import SHIFT_SIZE_COLUMNS as CONTEXT_UP
    from triage.features.level_shift import SHIFT_SIZE_COLUMNS as PAIR_UP

    up = set(PAIR_UP) | set(CONTEXT_UP)
    return tuple(int(c in up) for c in columns)


def kind_of(name: str) -> ModelKind:
    """The :class:`ModelKind` called ``name``; ``ValueError`` for an unknown one."""
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {name!r}") from None
