"""Genetic selection of the feature subset (Bauer et al., ICPE 2022, with DEAP).

The paper chose its classifier's inputs with a genetic algorithm: each
individual is a bit string saying which features the random forest may use,
its fitness is the cross-validated quality of that forest, and a population of
200 evolves for some 70 generations. This module does the same on the feature
matrix of :mod:`features.extract` and returns the winner as a
:class:`~features.feature_sets.FeatureSet`, saved as the feature-set file that
training and the online loop read (:mod:`features.feature_sets`).

Chromosome
----------
``unit="column"`` (default): one gene per feature column (``pre_mean``,
``after_mean``, ``norm_sd_pre``, ...), so the GA may keep a characteristic on
one side of the candidate only. ``unit="characteristic"``: one gene per
characteristic name; a gene switches all its columns together (``pre_<name>``
and ``after_<name>``; ``norm_mean_pre`` and ``norm_mean_after`` form the gene
``norm_mean``). The file always lists feature *columns* in ``names``.

Fitness
-------
Out-of-fold accuracy (or ROC AUC) of a random forest, folds grouped by series
(:class:`~sklearn.model_selection.StratifiedGroupKFold`): no series lends rows
to both the training and the test side, otherwise neighbouring candidates of
one history would leak. Out-of-fold predictions of all folds are pooled before
scoring, which keeps AUC defined when a fold holds one class only. Ties on the
score go to the smaller subset (DEAP compares fitness values
lexicographically: score, then minus the number of columns). The empty subset
scores 0.

Every distinct subset is evaluated once (cache keyed by the bit string) and
each generation's new subsets are evaluated in parallel with joblib. The run is
reproducible: splits, forests and the GA's random draws all derive from
``seed``, and results do not depend on ``n_jobs``.

Rows, columns and values are those training uses (:func:`features.matrix.training_data`):
the triaged rows (target ``label == "true_positive"``, against
``false_positive``; other rows are ignored), the contract feature columns
(``pre_*``, ``after_*``, ``norm_*``), NaN kept and infinities read as NaN.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from deap import base, tools
from joblib import Parallel, delayed
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from triage.features.feature_sets import METRICS, FeatureSet
from triage.features.matrix import CLASS_NAMES, training_data

UNITS: tuple[str, ...] = ("column", "characteristic")

#: ``callback(generation, max_generations, best_score, n_evaluated)`` after
#: each generation (generation 0 = the initial population).
ProgressCallback = Callable[[int, int, float, int], None]


# --------------------------------------------------------------------------- genes


def genes_of(columns: Sequence[str], unit: str = "column") -> tuple[list[str], list[np.ndarray]]:
    """Gene names and, for each gene, the indices of the columns it switches on."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r} (use one of {', '.join(UNITS)})")
    if unit == "column":
        return list(columns), [np.array([i]) for i in range(len(columns))]
    order: dict[str, list[int]] = {}
    for i, col in enumerate(columns):
        order.setdefault(_characteristic(col), []).append(i)
    return list(order), [np.array(ix) for ix in order.values()]


def _characteristic(column: str) -> str:
    for prefix in ("pre_", "after_"):
        if column.startswith(prefix):
            return column[len(prefix) :]
    for suffix in ("_pre", "_after"):
        if column.endswith(suffix):
            return column[: -len(suffix)]
    return column


# --------------------------------------------------------------------------- fitness


def _targets01(y: np.ndarray) -> np.ndarray:
    """``y`` as 0/1 (1 = true alert): 0/1 (or booleans) as given, the two triage labels mapped.

    Labels were taken as they came and compared with 1: every row of
    ``["true_positive", ...]`` counted as a false alert, and the "accuracy" of
    every subset was the share of rows predicted false (0.51 where 0/1 targets
    scored 0.97).
    """
    if y.dtype.kind in "OUS":
        text = y.astype(str)
        unknown = sorted(set(np.unique(text)) - set(CLASS_NAMES))
        if unknown:
            raise ValueError(
                f"y must hold 0/1 targets or the labels {' / '.join(CLASS_NAMES)}, got {', '.join(map(repr, unknown[:3]))}"
            )
        return (text == CLASS_NAMES[1]).astype(np.int64)
    values = set(np.unique(y).tolist())
    if not values <= {0, 1}:
        raise ValueError(f"y must hold 0/1 targets (1 = true alert), got {sorted(values)[:5]}")
    return y.astype(np.int64)


def _positive_proba(clf: RandomForestClassifier, X: np.ndarray) -> np.ndarray:
    proba = clf.predict_proba(X)
    if proba.shape[1] == 1:  # the training fold held one class only
        return np.full(len(X), float(clf.classes_[0] == 1))
    return proba[:, 1]


def cv_score(
    X: np.ndarray,
    y: np.ndarray,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    columns: np.ndarray,
    *,
    metric: str = "accuracy",
    n_estimators: int = 100,
    seed: int = 0,
) -> float:
    """Out-of-fold score of a random forest on ``X[:, columns]``, folds ``splits``.

    The score is computed on the pooled out-of-fold predictions (each row is
    predicted once, by the forest that did not see its series).
    """
    if len(columns) == 0:
        return 0.0
    Xs = X[:, columns]
    proba = np.empty(len(y))
    for train, test in splits:
        clf = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
        clf.fit(Xs[train], y[train])
        proba[test] = _positive_proba(clf, Xs[test])
    if metric == "auc":
        if len(np.unique(y)) < 2:
            return 0.0
        return float(roc_auc_score(y, proba))
    return float(np.mean((proba >= 0.5) == (y == 1)))


def grouped_splits(
    y: np.ndarray, groups: np.ndarray, n_splits: int = 5, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Folds grouped by series, stratified on ``y`` as far as the groups allow."""
    n_groups = len(np.unique(groups))
    if n_groups < 2:
        raise ValueError(f"grouped cross-validation needs at least 2 series, got {n_groups}")
    k = min(n_splits, n_groups)
    if len(np.unique(y)) < 2:
        raise ValueError("the triaged rows hold one class only (need true_positive and false_positive)")
    cv = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(cv.split(np.zeros(len(y)), y, groups))


# --------------------------------------------------------------------------- the genetic algorithm


class _Fitness(base.Fitness):
    # Lexicographic: the score first, then fewer columns.
    weights = (1.0, -1.0)


class _Individual(list):
    def __init__(self, bits):
        super().__init__(bits)
        self.fitness = _Fitness()


@contextlib.contextmanager
def _seeded_random(seed: int) -> Iterator[None]:
    # DEAP's operators draw from the global `random` module; seed it for this
    # run only and give the caller back its own state afterwards.
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


class GeneticSelector:
    """Genetic feature-subset selection with a grouped-CV random-forest fitness.

    Parameters
    ----------
    population : int, individuals per generation (paper: 200)
    generations : int, most generations evolved after the initial one (paper: ~71)
    patience : int
        Stop when the best score has not improved for this many generations.
    metric : ``"accuracy"`` or ``"auc"``
    unit : ``"column"`` or ``"characteristic"`` (see the module docstring)
    n_splits : int, grouped folds (fewer when there are fewer series)
    n_estimators : int, trees per forest
    cxpb, mutpb : float, probabilities of two-point crossover and of mutating an individual
    indpb : float or None, per-gene flip probability of a mutation (default 1 / n_genes)
    init_prob : float, probability a gene is on in the initial population
    tournsize : int, tournament size of the selection
    seed : int
    n_jobs : int, parallel fitness evaluations (joblib; -1 = all cores)

    Attributes (after :meth:`fit`)
    ------------------------------
    support_ : ndarray of bool, shape (n_features,)
    names_ : list of str, selected columns
    fitness_ : float, best score
    generations_ : int, generations evolved
    n_evaluated_ : int, distinct subsets evaluated
    history_ : list of dict, per generation: ``generation``, ``best``, ``mean``, ``n_evaluated``
    """

    def __init__(
        self,
        *,
        population: int = 200,
        generations: int = 71,
        patience: int = 10,
        metric: str = "accuracy",
        unit: str = "column",
        n_splits: int = 5,
        n_estimators: int = 100,
        cxpb: float = 0.5,
        mutpb: float = 0.2,
        indpb: float | None = None,
        init_prob: float = 0.5,
        tournsize: int = 3,
        seed: int = 0,
        n_jobs: int = 1,
    ):
        self.population = population
        self.generations = generations
        self.patience = patience
        self.metric = metric
        self.unit = unit
        self.n_splits = n_splits
        self.n_estimators = n_estimators
        self.cxpb = cxpb
        self.mutpb = mutpb
        self.indpb = indpb
        self.init_prob = init_prob
        self.tournsize = tournsize
        self.seed = seed
        self.n_jobs = n_jobs

    def check_params(self) -> None:
        """Raise ``ValueError`` for an unknown metric/unit or an impossible size."""
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r} (use one of {', '.join(METRICS)})")
        if self.unit not in UNITS:
            raise ValueError(f"unknown unit {self.unit!r} (use one of {', '.join(UNITS)})")
        if self.population < 2:
            raise ValueError("population must be at least 2")
        if self.generations < 0 or self.patience < 1:
            raise ValueError("generations must be >= 0 and patience >= 1")
        # Each was taken as given: cxpb=2 or mutpb=-1 evolved anyway, tournsize=0 failed with
        # "max() arg is an empty sequence", population=2.5 with "'float' object cannot be
        # interpreted as an integer".
        for name, low in (("population", 2), ("generations", 0), ("patience", 1), ("n_splits", 2),
                          ("n_estimators", 1), ("tournsize", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
        for name in ("cxpb", "mutpb", "init_prob", "indpb"):
            value = getattr(self, name)
            if name == "indpb" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")

    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        groups: np.ndarray,
        columns: Sequence[str] | None = None,
        callback: ProgressCallback | None = None,
    ) -> GeneticSelector:
        """Evolve subsets of the columns of ``X`` (shape (n_rows, n_features)).

        ``y`` (shape (n_rows,)) holds 0/1 targets, ``groups`` the series of each
        row; ``columns`` names the columns (default ``x0, x1, ...``).
        """
        self.check_params()
        X = np.asarray(X, dtype=np.float64)
        y = _targets01(np.asarray(y))
        groups = np.asarray(groups)
        if X.ndim != 2 or len(X) != len(y) or len(y) != len(groups):
            raise ValueError(f"X {X.shape}, y {y.shape}, groups {groups.shape} do not match")
        columns = list(columns) if columns is not None else [f"x{i}" for i in range(X.shape[1])]
        if len(columns) != X.shape[1]:
            raise ValueError(f"{len(columns)} column names for {X.shape[1]} columns")
        _, gene_cols = genes_of(columns, self.unit)
        n_genes = len(gene_cols)
        splits = grouped_splits(y, groups, self.n_splits, self.seed)
        indpb = self.indpb if self.indpb is not None else 1.0 / n_genes

        cache: dict[bytes, float] = {}

        def cols_of(bits: Sequence[int]) -> np.ndarray:
            on = [gene_cols[g] for g, b in enumerate(bits) if b]
            return np.sort(np.concatenate(on)) if on else np.empty(0, dtype=np.int64)

        def evaluate(individuals: list[_Individual], parallel: Parallel) -> None:
            todo: dict[bytes, np.ndarray] = {}
            for ind in individuals:
                key = bytes(ind)
                if key not in cache and key not in todo:
                    todo[key] = cols_of(ind)
            scores = parallel(
                delayed(cv_score)(
                    X, y, splits, cols, metric=self.metric, n_estimators=self.n_estimators, seed=self.seed
                )
                for cols in todo.values()
            )
            cache.update(zip(todo, scores, strict=True))
            for ind in individuals:
                ind.fitness.values = (cache[bytes(ind)], float(len(cols_of(ind))))

        toolbox = base.Toolbox()
        toolbox.register("mate", tools.cxTwoPoint)
        toolbox.register("mutate", tools.mutFlipBit, indpb=indpb)
        history: list[dict] = []

        with _seeded_random(self.seed), Parallel(n_jobs=self.n_jobs) as parallel:
            pop = [
                _Individual(int(random.random() < self.init_prob) for _ in range(n_genes))
                for _ in range(self.population)
            ]
            evaluate(pop, parallel)
            hof = tools.HallOfFame(1)
            hof.update(pop)
            best_score, stale, gen = hof[0].fitness.values[0], 0, 0
            history.append(self._record(0, pop, len(cache)))
            if callback:
                callback(0, self.generations, best_score, len(cache))
            for gen in range(1, self.generations + 1):
                offspring = [
                    toolbox.clone(ind) for ind in tools.selTournament(pop, len(pop), self.tournsize)
                ]
                for i in range(1, len(offspring), 2):
                    if n_genes > 1 and random.random() < self.cxpb:
                        toolbox.mate(offspring[i - 1], offspring[i])
                        del offspring[i - 1].fitness.values, offspring[i].fitness.values
                for ind in offspring:
                    if random.random() < self.mutpb:
                        toolbox.mutate(ind)
                        del ind.fitness.values
                evaluate([ind for ind in offspring if not ind.fitness.valid], parallel)
                # Elitism: the best subset so far survives, so the best score never drops.
                worst = min(range(len(offspring)), key=lambda i: offspring[i].fitness)
                offspring[worst] = toolbox.clone(hof[0])
                pop = offspring
                hof.update(pop)
                history.append(self._record(gen, pop, len(cache)))
                score = hof[0].fitness.values[0]
                if callback:
                    callback(gen, self.generations, score, len(cache))
                if score > best_score:
                    best_score, stale = score, 0
                else:
                    stale += 1
                    if stale >= self.patience:
                        break

        best_cols = cols_of(hof[0])
        support = np.zeros(len(columns), dtype=bool)
        support[best_cols] = True
        self.support_ = support
        self.names_ = [c for c, s in zip(columns, support, strict=True) if s]
        self.fitness_ = float(hof[0].fitness.values[0])
        self.generations_ = gen
        self.n_evaluated_ = len(cache)
        self.history_ = history
        self.columns_ = columns
        return self

    @staticmethod
    def _record(gen: int, pop: list[_Individual], n_evaluated: int) -> dict:
        scores = [ind.fitness.values[0] for ind in pop]
        return {
            "generation": gen,
            "best": float(max(scores)),
            "mean": float(np.mean(scores)),
            "n_evaluated": n_evaluated,
        }

    def transform(self, X: np.ndarray) -> np.ndarray:
        """``X[:, support_]``: shape (n_rows, n_selected)."""
        return np.asarray(X)[:, self.support_]


def select_features(
    frame: pd.DataFrame,
    *,
    selector: GeneticSelector | None = None,
    callback: ProgressCallback | None = None,
) -> FeatureSet:
    """Run the GA on a feature matrix (the contract of :mod:`features.extract`).

    Uses the triaged rows only; returns the :class:`FeatureSet` to save.
    Columns constant over those rows (e.g. every ``after_*`` column at
    ``window=0``, where After is one point) cannot inform the forest and are
    left out of the chromosome; ``extra["constant_columns"]`` lists them.
    """
    selector = selector or GeneticSelector()
    if "series_id" not in frame.columns:
        raise ValueError("feature matrix lacks the 'series_id' column (folds are grouped by series)")
    data = training_data(frame)
    X, y, groups, columns = data.X, data.y.astype(np.int64), data.groups, data.columns
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: constant
        spread = np.nanmax(X, axis=0) - np.nanmin(X, axis=0)
    varying = spread > 0
    if not varying.any():
        raise ValueError("every feature column is constant over the triaged rows")
    constant = [c for c, v in zip(columns, varying, strict=True) if not v]
    selector.fit(X[:, varying], y, groups, [c for c, v in zip(columns, varying, strict=True) if v], callback=callback)
    majority = float(max(y.mean(), 1.0 - y.mean()))
    if selector.metric == "accuracy" and selector.fitness_ <= majority:
        # 0.7778 on 9 alerts, 7 of them true, read as a result; it is what calling every alert true scores.
        warnings.warn(
            f"the chosen subset's accuracy {selector.fitness_:.4f} is no better than calling every alert "
            f"{'true' if y.mean() >= 0.5 else 'false'} ({majority:.4f} of the {len(y)} triaged alerts): the "
            "features were chosen on noise; give more triaged series (or --metric auc)",
            stacklevel=2,
        )
    return FeatureSet(
        names=selector.names_,
        fitness=selector.fitness_,
        metric=selector.metric,
        generations=selector.generations_,
        n_evaluated=selector.n_evaluated_,
        seed=selector.seed,
        data_hash=data.data_hash(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        extra={
            "unit": selector.unit,
            "population": selector.population,
            "max_generations": selector.generations,
            "patience": selector.patience,
            "n_splits": len(grouped_splits(y, groups, selector.n_splits, selector.seed)),
            "n_estimators": selector.n_estimators,
            "n_rows": int(len(y)),
            # triaged rows left out as not scorable (features.matrix.not_scorable), by label
            "not_scorable_left_out": dict(data.left_out),
            "n_columns": len(columns),  # the feature columns the GA chose from
            "constant_columns": constant,
            "history": selector.history_,
        },
    )
