"""Walkthrough s17: a data scientist using changepoint-triage as a Python library in a notebook.

Defects found (what a user did, what went wrong, what happens now):

1. ``TriageClassifier(class_weight={"true_positive": 5, "false_positive": 1})``
   (a dict ``{class: weight}``, as the docstring says) fitted on the feature
   matrix, or ``{3: 1, 7: 5}`` on targets 3 / 7: "The classes, [0, 1], are not
   in class_weight" (the model is fitted on 0 / 1 inside). Now the dict's keys
   are the user's classes (0 / 1 still read as positions, as manifests store).
2. ``fit(X, y.reshape(-1, 1))``: the DataConversionWarning's text was not
   scikit-learn's, so ``check_estimator``'s ``check_supervised_y_2d`` failed
   (and a filter on scikit-learn's words missed it). Now scikit-learn's words.
3. ``TriageClassifier(validation_size="a").fit(...)``: "could not convert
   string to float: 'a'", naming no parameter; ``search=True`` was taken as
   one setting. Now both are refused naming the parameter.
4. ``make("hybrid_welch")`` on a series of values near 1e100 or 1e-100 (inside
   the range the loaders accept): no change point at all, where the same
   series scaled to 1 has two (the Welch degrees of freedom squared the
   variances: overflow to inf, underflow to a division by zero, read as
   p = 1). Now the degrees of freedom come from the variances' shares.
5. ``make("pelt")`` / ``binseg`` / ``cusum`` on a step of 4 over noise 1 at a
   level of 1e9 (nanoseconds): PELT and BinSeg put the change 4 commits early
   and CUSUM found none, while at level 0 all find it at the step. The L2
   cost's prefix sums ``sum(x^2) - sum(x)^2 / n`` cancelled. Now the sums are
   of ``x - mean(x)`` (``CostL2.offset``).
6. ``make("bocpd").detect([])`` (and the ensembles, which run it): a
   RuntimeWarning "Mean of empty slice" / "Degrees of freedom <= 0"; every
   other detector returns ``[]`` quietly. Now bocpd does too.
7. ``OnlineTriage.process_many([{"series": "s", "commit": "c", "value": 1.0}])``
   (``series`` is the key a Decision's ``to_dict`` writes and the older input
   name ``triage watch`` still reads): "series 'None': series id must be a
   non-empty string"; a dict without ``value``: "value None is not a number".
   Now ``series`` is read as ``series_id`` and a missing key is named.
8. Fed ``PreState`` (and so ``OnlineTriage``) a series of values near 1e-90
   (inside the usable range, 1e-100 .. 1e100): ``features_array`` raised a
   bare ``ZeroDivisionError`` once Pre held 20 commits, and ``triage``'s loop
   stopped with it; near 1e80 ``pre_lumpiness`` was NaN (the batch features
   of the same values: 1.43) and P(true) differed from the same series in
   another unit. Lumpiness squares the block variances (fourth powers of the
   values). Now the block variances are kept times a power of two (exact)
   when the first value is beyond 2**+-64, and the incremental row equals the
   batch row at every scale.
9. ``PreState().learn_one(1e300)``: taken, and every later row had NaN
   characteristics. Now refused with the usable-range message of
   ``triage.core.values`` (as ``OnlineTriage`` and the loaders refuse it).
10. ``find_culprit`` with an oracle that returned NaN (a failed
    measurement): ``bisect`` named the last commit the culprit with
    confidence 1.0, ``bayes`` some commit with confidence NaN; a NaN level or
    sigma, ``confidence=1.5`` or ``max_measurements=-2`` were taken as well,
    and ``levels_around`` returned NaN levels. Now each is a ValueError naming
    the reading or the parameter.
11. ``HistoryGP().fit(10, [0, 5, 20], ...)`` (a position beyond the
    history), ``[-1, 5]``, ``[0, 5.7]`` or ``n=0``: taken silently (the
    estimate bent by a reading outside the history; 5.7 read as 5);
    ``predict()`` before ``fit``: "AttributeError: 'HistoryGP' object has no
    attribute 'n_'". Now ValueErrors naming the position, and NotFittedError.
12. ``TriageClassifier(threshold=np.float32(0.3))`` (a value taken from an
    array, as a grid search over thresholds gives): "threshold
    np.float32(0.3) is not a number"; ``threshold="fbeta:inf"`` was taken;
    ``choose_threshold`` on probabilities holding NaN returned a NaN
    threshold. Now a numpy number is a number, beta must be finite and NaN
    probabilities are refused.
13. ``candidate_features(values.reshape(-1, 2), p)`` (a table instead of one
    series): numba's "TypingError: Failed in nopython mode pipeline ...
    isub(float64, array(float64, 1d, C))". Now a ValueError naming the shape.
14. ``TriageClassifier().fit(frame, y)`` with one cell of one of dozens of
    feature columns not a number: "feature columns must be numeric: could not
    convert string to float: 'oops'", naming neither column nor row. Now the
    column, the row and the value are named.
15. ``OnlineTriage.from_model_dir(model, threshold=1.5)`` (or NaN, -0.1,
    True): taken; 1.5 and NaN never raise an alarm, -0.1 alarms on every
    commit, without a word. ``threshold="abc"``: "could not convert string
    to float"; ``withdraw_below="x"``: "must be real number, not str";
    ``max_cached_series=-5`` taken. Now each is a ValueError naming the
    parameter and its range.
16. ``OnlineTriage.load_state_dict`` with a damaged state: a bare
    ``KeyError: 'pre'`` or "unsupported state version None", naming no
    series. Now a ValueError naming the series; the states in memory stay.
17. Built a detector from its class instead of ``make`` (the ruptures way:
    ``Pelt(jump=0).fit(x)``): ``Perfherder(min_back_window=2.5)`` "slice
    indices must be integers", ``Bocpd(lag=2.5)`` an IndexError,
    ``Pelt(jump=0)`` a ZeroDivisionError, while ``Pelt(penalty=-1)``,
    ``Cusum(threshold=-1)``, ``Bocpd(threshold=2)`` or
    ``Perfherder(t_threshold=nan)`` ran and answered nonsense. The ranges
    lived only in the registry. Now each class holds its ``ranges`` (the
    registry reads them) and ``fit`` checks them, in ``make``'s words.
18. ``make("pelt", model="l1")`` (or ``ar``, ``clinear``) on a step of 4
    noise units: one change at a scale of 1, 14 at 100, 23 at 1e6 and none
    at 1e-2 (the penalty ``penalty * log n`` is unitless, the cost is not).
    Now those costs see the series in noise units, and every model finds
    the same change points at every scale.
19. Built the steady-state detectors with other parameters (their
    constructors only store): ``KBKSSD(short_kernel=-1)`` an IndexError,
    ``KBKSSD(step_window=nan)`` "slice indices must be integers",
    ``CPSSD(n_boot=0)`` "index -1 is out of bounds", while
    ``KBKSSD(kelly_window=0)`` (never steady), ``t_crit=-1``,
    ``KernelStepSSD(alpha=nan)`` or ``CPSSD(confidence=-1)`` ran and
    answered. Now each ``fit`` checks its parameters and names the bad one.
    ``steady_mask(values, run_id)`` with a shorter ``run_id`` cut only the
    first values and kept the rest; now refused.
20. ``TriageClassifier().fit(X, y)`` with one label missing: NaN in a float
    ``y`` gave "Unknown label type: continuous", ``None`` or ``pd.NA`` "Only
    binary classification is supported: y holds 3 class(es): ['<NA>', ...]".
    Now: "y has 1 missing label(s), the first at row 5".
21. ``OnlineTriage.process_one(np.int64(7), np.int64(5), 1.0)`` (ids taken
    from an array or ``frame.to_numpy()``): "series '7': series id must be a
    non-empty string", though a Python 7 is taken; a float commit id (a
    frame's row of mixed columns gives 100.0) was told the same. Now numpy
    integers are ids like Python's, and a float is named as one.
22. ``RecomputedPre`` (the exact twin of ``PreState``, ``pre_class=`` of the
    loop) took NaN and 1e300 in ``learn_one`` and made every later row NaN,
    where ``PreState`` refuses them. Now both run the one check
    (``features.incremental.checked_value``), in the same words.
23. ``culprit_posterior(a, b, [(15, nan)], ...)`` or with ``sigma=nan``:
    a posterior of NaNs, silently. Now the reading or the parameter is named,
    as ``find_culprit`` does.
24. ``TriageClassifier(threshold="fbeta:1")``: ``decision_function`` is
    P - threshold and ``predict`` calls P >= threshold true, but a learned
    threshold is one of the validation probabilities, so rows at exactly the
    threshold scored 0, which scikit-learn reads as the negative class
    (``check_estimator``'s ``check_classifiers_classes`` failed). Now such a
    row scores the smallest positive float.
25. ``TriageClassifier(calibration="isotonic")`` (or the SVM, or a learned
    threshold) fitted on 10 rows: "The test_size = 1 should be greater or
    equal to the number of classes = 2", train_test_split's words
    (``check_fit2d_1feature`` failed). Now the validation part holds at least
    one row of each class.
26. ``TriageClassifier(model="xgb").fit(X)`` with X of no column: XGBoost's
    "[14:26:44] /workspace/src/data/proxy_dmatrix.h:159: Check failed:
    this->n_features > ..." (``check_estimators_empty_data_messages``). Now
    scikit-learn's "Found array with 0 feature(s)" for every kind.
27. ``HistoryGP.predict([0, 49, 60])`` on a history of 50 commits
    extrapolated past its end silently; ``next_positions(2.5)`` gave
    "'float' object cannot be interpreted as an integer",
    ``next_positions("2")`` "'<' not supported between instances of 'int'
    and 'str'". Now ValueErrors naming the position or ``k``.
28. ``OnlineTriage(TriageClassifier())`` (forgot to fit): "AttributeError:
    'TriageClassifier' object has no attribute 'feature_names_'". Now a
    ValueError saying the classifier is not fitted.
29. ``GeneticSelector(cxpb=2)``, ``mutpb=-1`` or ``indpb=2`` evolved
    anyway; ``tournsize=0`` failed with "max() arg is an empty sequence",
    ``population=2.5`` with "'float' object cannot be interpreted as an
    integer". Now ``check_params`` names each.
30. ``GeneticSelector().fit(X, labels, groups)`` with the triage labels as
    ``y`` (as ``TriageClassifier`` takes them): every label compared unequal
    to 1, so each subset's "accuracy" was the share of rows predicted false
    (0.51 where 0/1 targets gave 0.97), and the selected columns meant
    nothing. Now the two labels are mapped to 0/1 and other targets refused.
31. ``candidate_context.context_block(values, [300])`` on a series of 120
    commits (or ``[-1]``): a row of NaN context features, silently;
    ``[30.7]`` was read as 30. Now a ValueError naming the index.
32. ``thresholds.suppress_duplicates(series, index[:3], p_true, keep, 5)``
    (one array shorter): "IndexError: index 3 is out of bounds". Now a
    ValueError naming the lengths.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from triage.detectors import make, names
from triage.detectors.costs import CostL2


def _xy(n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


# ---------------------------------------------------------------------- 1-3: TriageClassifier


def test_class_weight_dict_keyed_by_the_users_classes():
    from triage.training.classifier import TriageClassifier

    X, y = _xy()
    labels = np.where(y == 1, "true_positive", "false_positive")
    heavy = TriageClassifier(
        n_estimators=10, class_weight={"true_positive": 50.0, "false_positive": 1.0}
    )
    heavy.fit(X, labels)
    assert list(heavy.classes_) == ["false_positive", "true_positive"]
    positional = TriageClassifier(n_estimators=10, class_weight={1: 50.0, 0: 1.0}).fit(X, labels)
    np.testing.assert_array_equal(heavy.predict_proba(X), positional.predict_proba(X))
    targets = np.where(y == 1, 7, 3)
    clf = TriageClassifier(model="xgb", n_estimators=10, class_weight={7: 5.0, 3: 1.0}).fit(
        X, targets
    )
    assert set(clf.predict(X)) <= {3, 7}
    with pytest.raises(ValueError, match="class_weight names 'maybe'"):
        TriageClassifier(n_estimators=10, class_weight={"maybe": 2.0}).fit(X, labels)


def test_column_vector_y_warns_in_scikit_learns_words():
    from sklearn.exceptions import DataConversionWarning

    from triage.training.classifier import TriageClassifier

    X, y = _xy()
    with pytest.warns(
        DataConversionWarning, match="A column-vector y was passed when a 1d array was expected"
    ):
        TriageClassifier(n_estimators=5).fit(X, y.reshape(-1, 1))


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"validation_size": "a"}, "validation_size must be in"),
        ({"validation_size": None}, "validation_size must be in"),
        ({"search": True}, "search must be None or a number"),
    ],
)
def test_bad_parameters_are_named_at_fit(params, words):
    from triage.training.classifier import TriageClassifier

    X, y = _xy()
    clf = TriageClassifier(n_estimators=5, **params)  # the constructor only stores
    with pytest.raises(ValueError, match=words):
        clf.fit(X, y)


def test_estimator_contract_round_trips():
    """clone, Pipeline, GridSearchCV, pickling: the parts of the contract that hold (no defect)."""
    import pickle

    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from triage.training.classifier import TriageClassifier

    X, y = _xy()
    clf = TriageClassifier(n_estimators=10)
    assert clone(clf).get_params() == clf.get_params()
    search = GridSearchCV(
        Pipeline([("s", StandardScaler()), ("c", clf)]), {"c__min_samples_leaf": [1, 2]}, cv=2
    )
    assert search.fit(X, y).best_params_["c__min_samples_leaf"] in (1, 2)
    fitted = clf.fit(X, y)
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(fitted)).predict_proba(X), fitted.predict_proba(X)
    )


# ---------------------------------------------------------------------- 4-6: detectors


def _step(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(10, 1, 60), rng.normal(14, 1, 60)]


# Up to the usable range (core.values: |x| <= 1e100; the step's values reach 17 x scale).
@pytest.mark.parametrize("scale", [1e-100, 1e-50, 1e50, 1e98])
def test_hybrid_welch_does_not_depend_on_the_unit(scale):
    x = _step()
    expected = make("hybrid_welch").detect(x)
    assert [c.index for c in expected] == [60, 69]
    assert [c.index for c in make("hybrid_welch").detect(x * scale)] == [c.index for c in expected]


@pytest.mark.parametrize("name", ["pelt", "binseg", "cusum", "ensemble"])
@pytest.mark.parametrize("level", [1e9, 1e12])
def test_l2_detectors_do_not_depend_on_the_level(name, level):
    x = _step()
    at_zero = [c.index for c in make(name).detect(x)]
    assert at_zero == [60]
    found = make(name).detect(x + level)
    assert [c.index for c in found] == at_zero
    if name == "cusum":
        assert found[0].fields["mean_before"] == pytest.approx(level + 10, abs=1.0)


def test_cost_l2_segments_at_a_large_level():
    x = _step() + 1e9
    cost = CostL2().fit(x)
    exact = [
        float(np.sum((x[a:b] - np.mean(x[a:b])) ** 2)) for a, b in ((0, 60), (60, 120), (0, 120))
    ]
    got = [float(cost.error(a, b)) for a, b in ((0, 60), (60, 120), (0, 120))]
    np.testing.assert_allclose(got, exact, rtol=1e-6)


@pytest.mark.parametrize("name", names())
def test_every_detector_is_quiet_on_an_empty_series(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make(name).detect(np.array([])) == []


# ---------------------------------------------------------------------- 7: online loop


@pytest.fixture(scope="module")
def online_dir():
    from triage.model_lookup import bundled_models_dir

    path = bundled_models_dir() / "online-w4"
    if not path.is_dir():
        pytest.skip("bundled model online-w4 is absent")
    return path


def test_online_record_dicts(online_dir):
    from triage.online.loop import OnlineTriage

    loop = OnlineTriage.from_model_dir(online_dir)
    values = 10 + np.random.default_rng(0).normal(size=8)
    by_key = [
        loop.process_many([{"series": "s", "commit": f"c{i}", "value": float(v)}])[0]
        for i, v in enumerate(values)
    ]
    other = OnlineTriage.from_model_dir(online_dir)
    by_tuple = [other.process_one("s", f"c{i}", float(v)) for i, v in enumerate(values)]
    assert [d and d.to_dict() for d in by_key] == [d and d.to_dict() for d in by_tuple]
    before = json.dumps(loop.state_dict(), sort_keys=True)
    with pytest.raises(ValueError, match="value missing"):
        loop.process_many([{"series_id": "s", "commit": "c9"}])
    assert json.dumps(loop.state_dict(), sort_keys=True) == before


def test_online_state_round_trip_mid_stream_on_real_histories(online_dir, real_frame):
    """state_dict -> JSON -> load_state_dict mid-stream gives the decisions of an uninterrupted run (no defect)."""
    from triage.online.loop import OnlineTriage

    ids = list(dict.fromkeys(real_frame["series_id"]))
    rows = real_frame[real_frame["series_id"].isin([ids[5], ids[250]])].head(400)
    records = list(
        rows[["series_id", "commit", "value", "timestamp"]].itertuples(index=False, name=None)
    )

    def run(cut: int | None) -> list[dict]:
        loop = OnlineTriage.from_model_dir(online_dir)
        out = []
        for k, record in enumerate(records):
            if k == cut:
                saved = json.loads(json.dumps(loop.state_dict()))
                loop = OnlineTriage.from_model_dir(online_dir)
                loop.load_state_dict(saved)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # re-runs of a commit: ConflictingRedelivery
                decision = loop.process_one(*record)
            if decision is not None:
                out.append(decision.to_dict())
        return out

    whole = run(None)
    assert len(whole) > 300
    assert run(123) == whole


# ---------------------------------------------------------------------- 8-9: incremental features


def _two_levels(seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(10, 1, 80), rng.normal(14, 1, 20)]


@pytest.mark.parametrize("scale", [1e-98, 1e-90, 1.0, 1e80, 1e98])
def test_incremental_row_equals_batch_row_at_every_scale(scale):
    from triage.features.extract import candidate_features
    from triage.features.incremental import PreState

    x = _two_levels() * scale
    state = PreState(series_id="scaled")
    learned = 0
    for p in (5, 21, 40, 64):
        while learned < p:
            state.learn_one(x[learned])
            learned += 1
        for k in (0, 3):
            online = state.features_array(x[p : p + k + 1])
            batch = candidate_features(x, p, None, k)
            np.testing.assert_allclose(online, batch, rtol=1e-9, atol=1e-12)


def test_online_decisions_do_not_depend_on_the_unit(online_dir):
    from triage.online.loop import OnlineTriage

    x = _two_levels()

    def alarms(scale: float) -> list[tuple[str, float]]:
        loop = OnlineTriage.from_model_dir(online_dir)
        out = []
        for i, v in enumerate(x):
            d = loop.process_one("s", f"c{i}", float(v * scale))
            if d is not None and d.decision:
                out.append((d.commit, round(d.probability, 9)))
        return out

    reference = alarms(1.0)
    assert reference
    assert alarms(1e-90) == reference
    assert alarms(1e90) == reference


@pytest.mark.parametrize("bad", [1e300, -1e-300])
def test_pre_state_refuses_values_outside_the_usable_range(bad):
    from triage.features.incremental import PreState

    state = PreState(series_id="s").learn_many([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match=r"series 's', index 3: value .* outside the usable range"):
        state.learn_one(bad)
    with pytest.raises(ValueError, match="outside the usable range"):
        state.features_array(np.array([1.0, bad]))
    assert state.n == 3


# ---------------------------------------------------------------------- 10-11: sampling


def _culprit_case():
    rng = np.random.default_rng(0)
    x = np.r_[np.full(100, 10.0), np.full(100, 12.0)] + rng.normal(0, 0.3, 200)
    return x


@pytest.mark.parametrize("strategy", ["bisect", "bayes"])
def test_culprit_search_refuses_a_failed_reading(strategy):
    from triage.sampling import find_culprit, levels_around

    x = _culprit_case()
    old, new, sigma = levels_around(x[90:95], x[105:110])
    found = find_culprit(90, 110, lambda i: float(x[i]), old, new, sigma, strategy=strategy)
    assert found.culprit == 100
    with pytest.raises(ValueError, match=r"reading of position \d+ is nan"):
        find_culprit(90, 110, lambda i: float("nan"), old, new, sigma, strategy=strategy)
    with pytest.raises(ValueError, match=r"known reading of position 95 is nan"):
        find_culprit(
            90, 110, lambda i: float(x[i]), old, new, sigma, strategy=strategy, known={95: np.nan}
        )


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"old": float("nan")}, "old level must be a finite number"),
        ({"sigma": float("nan")}, "sigma must be a finite number"),
        ({"confidence": 1.5}, "confidence must be in"),
        ({"max_measurements": -2}, "max_measurements must be >= 0"),
    ],
)
def test_culprit_search_refuses_bad_parameters(kwargs, words):
    from triage.sampling import find_culprit

    x = _culprit_case()
    args = {"old": 10.0, "new": 12.0, "sigma": 0.3, **kwargs}
    with pytest.raises(ValueError, match=words):
        find_culprit(
            90,
            110,
            lambda i: float(x[i]),
            args.pop("old"),
            args.pop("new"),
            args.pop("sigma"),
            strategy="bayes",
            **args,
        )


def test_levels_around_refuses_nan():
    from triage.sampling import levels_around

    with pytest.raises(ValueError, match="before the alert hold"):
        levels_around([np.nan, 1.0], [2.0])


@pytest.mark.parametrize(
    ("n", "positions", "values", "words"),
    [
        (10, [0, 5, 20], [1.0, 2.0, 3.0], "position 20 is outside the history's commits 0 .. 9"),
        (10, [-1, 5], [1.0, 2.0], "position -1 is outside"),
        (10, [0, 5.7], [1.0, 2.0], "whole commit positions"),
        (0, [0], [1.0], "n must be the number of commits"),
        (10, [0, 5], [1.0], "same length"),
        (10, [0, 5], [1.0, np.nan], "must be finite"),
    ],
)
def test_history_gp_refuses_readings_outside_the_history(n, positions, values, words):
    from triage.sampling import HistoryGP

    with pytest.raises(ValueError, match=words):
        HistoryGP().fit(n, positions, values)


def test_history_gp_before_fit():
    from sklearn.exceptions import NotFittedError

    from triage.sampling import HistoryGP

    with pytest.raises(NotFittedError, match="call fit"):
        HistoryGP().predict()
    with pytest.raises(NotFittedError, match="call fit"):
        HistoryGP().next_positions(2)
    gp = HistoryGP().fit(50, [0, 10, 25, 40, 49], [1.0, 1.1, 2.0, 2.1, 2.0])
    assert gp.predict()[0].shape == (50,)
    assert len(gp.next_positions(3)) == 3


# ---------------------------------------------------------------------- 12: thresholds


def test_threshold_policies_take_numpy_numbers_and_refuse_nan():
    from triage.training.classifier import TriageClassifier
    from triage.training.thresholds import MaxFBeta, TargetRecall, choose_threshold, parse_policy

    assert parse_policy(np.float32(0.25)).value == 0.25
    assert parse_policy(np.int64(1)).value == 1.0
    X, y = _xy()
    assert TriageClassifier(n_estimators=5, threshold=np.float32(0.25)).fit(X, y).threshold_ == 0.25
    with pytest.raises(ValueError, match="finite beta"):
        parse_policy("fbeta:inf")
    with pytest.raises(ValueError, match="proba holds NaN"):
        choose_threshold(TargetRecall(0.9), np.array([1, 0, 1]), np.array([0.9, 0.2, np.nan]))
    with pytest.raises(ValueError, match="same shape"):
        choose_threshold(MaxFBeta(1.0), np.array([1, 0, 1]), np.array([0.9, 0.2]))


# ---------------------------------------------------------------------- 13-14: feature rows and matrices


def test_candidate_features_refuses_a_table():
    from triage.features.extract import candidate_features

    x = _step()
    assert candidate_features(x, 60).shape == (44,)
    with pytest.raises(ValueError, match=r"shape \(n,\), got shape \(60, 2\)"):
        candidate_features(x.reshape(-1, 2), 20)


def test_a_cell_that_is_no_number_is_named():
    import pandas as pd

    from triage.core.errors import InputError
    from triage.training.classifier import TriageClassifier

    X, y = _xy(40)
    frame = pd.DataFrame(X, columns=["pre_hurst", "pre_entropy", "after_hurst", "after_entropy"])
    frame["after_hurst"] = frame["after_hurst"].astype(object)
    frame.loc[7, "after_hurst"] = "oops"
    with pytest.raises(
        InputError, match=r"feature column 'after_hurst' must be numeric: row 8 .* holds 'oops'"
    ):
        TriageClassifier(n_estimators=5).fit(frame, y)


# ---------------------------------------------------------------------- 15-16: online loop settings and states


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"threshold": 1.5}, "threshold must be a probability in"),
        ({"threshold": float("nan")}, "threshold must be a probability in"),
        ({"threshold": -0.1}, "threshold must be a probability in"),
        ({"threshold": True}, "threshold must be a probability in"),
        ({"threshold": "abc"}, "threshold must be a probability in"),
        ({"withdraw_below": "x"}, "withdraw_below must be a finite number"),
        ({"max_cached_series": -5}, "max_cached_series must be None or an integer"),
    ],
)
def test_online_settings_are_checked(online_dir, kwargs, words):
    from triage.online.loop import OnlineTriage

    with pytest.raises(ValueError, match=words):
        OnlineTriage.from_model_dir(online_dir, **kwargs)


def test_online_numpy_threshold_is_a_number(online_dir):
    from triage.online.loop import OnlineTriage

    assert OnlineTriage.from_model_dir(online_dir, threshold=np.float32(0.5)).threshold == 0.5


def test_load_state_dict_names_the_damaged_series(online_dir):
    from triage.online.loop import OnlineTriage

    loop = OnlineTriage.from_model_dir(online_dir)
    for i, v in enumerate(10 + np.random.default_rng(0).normal(size=12)):
        loop.process_one("a", f"c{i}", float(v))
    saved = json.loads(json.dumps(loop.state_dict()))
    for damaged in ({"version": 1}, {**saved["a"], "pre": {"bogus": 1}}):
        with pytest.raises(ValueError, match="the state of series 'a' is unreadable"):
            loop.load_state_dict({"a": damaged})
        assert json.loads(json.dumps(loop.state_dict())) == saved


# ---------------------------------------------------------------------- 17-18: detector classes


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (
            lambda d: d.Perfherder(min_back_window=2.5),
            "min_back_window=2.5 of detector 'perfherder' must be a whole",
        ),
        (lambda d: d.Perfherder(t_threshold=float("nan")), "t_threshold=nan"),
        (lambda d: d.Bocpd(lag=2.5), "lag=2.5 of detector 'bocpd' must be a whole number >= 0"),
        (
            lambda d: d.Bocpd(threshold=2),
            "threshold=2 of detector 'bocpd' must be a finite number in",
        ),
        (lambda d: d.Pelt(jump=0), "jump=0 of detector 'pelt' must be a whole number >= 1"),
        (lambda d: d.Pelt(penalty=-1), "penalty=-1 of detector 'pelt'"),
        (lambda d: d.Cusum(threshold=-1), "threshold=-1 of detector 'cusum'"),
        (lambda d: d.EDivisive(max_pvalue=2), "max_pvalue=2 of detector 'edivisive'"),
    ],
)
def test_detector_classes_check_their_parameters_at_fit(build, words):
    import triage.detectors as d

    detector = build(d)  # the constructor only stores
    with pytest.raises(ValueError, match=words):
        detector.fit(_step())


@pytest.mark.parametrize("model", ["l1", "normal", "ar", "rank"])
@pytest.mark.parametrize("scale", [1e-6, 1e-2, 100.0, 1e6])
def test_penalised_costs_do_not_depend_on_the_unit(model, scale):
    x = _step()
    at_one = [c.index for c in make("pelt", model=model).detect(x)]
    assert at_one == [60]
    assert [c.index for c in make("pelt", model=model).detect(x * scale)] == at_one


# ---------------------------------------------------------------------- 19: steady-state detectors


def _warm_run() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.r_[10 * np.exp(-np.arange(50) / 10) + 100, np.full(150, 100.0)] + rng.normal(
        0, 0.5, 200
    )


@pytest.mark.parametrize(
    ("cls", "kwargs", "words"),
    [
        (
            "KBKSSD",
            {"short_kernel": -1},
            "short_kernel=-1 of steady-state method 'kbkssd' must be a whole number",
        ),
        ("KBKSSD", {"step_window": float("nan")}, "step_window=nan"),
        ("KBKSSD", {"kelly_window": 0}, "kelly_window=0"),
        ("KBKSSD", {"t_crit": -1}, "t_crit=-1"),
        (
            "KBKSSD",
            {"outlier_lower": 50, "outlier_upper": 10},
            "outlier_lower=50 .* must be <= outlier_upper",
        ),
        ("CPSSD", {"n_boot": 0}, "n_boot=0 of steady-state method 'cpssd'"),
        ("CPSSD", {"confidence": -1}, "confidence=-1"),
        ("CPSSD", {"penalty_range": (10.0, 1.0)}, "penalty_range"),
        ("KernelStepSSD", {"alpha": float("nan")}, "alpha=nan of steady-state method 'kstep'"),
        ("KernelStepSSD", {"test_window": 1}, "test_window=1"),
    ],
)
def test_steady_state_detectors_check_their_parameters(cls, kwargs, words):
    import triage.steady_state as ss

    detector = getattr(ss, cls)(**kwargs)
    with pytest.raises(ValueError, match=words):
        detector.fit(_warm_run())


def test_steady_state_defaults_still_fit_and_mask_lengths_are_checked():
    from triage.steady_state import CPSSD, KBKSSD, KernelStepSSD, make, steady_mask

    run = _warm_run()
    for detector in (KBKSSD(), CPSSD(), KernelStepSSD()):
        start = detector.fit(run).start_
        assert start is None or 0 <= start < len(run)
    with pytest.raises(ValueError, match="as long: 200 and 10"):
        steady_mask(run, np.zeros(10, dtype=int), make("kstep"))


# ---------------------------------------------------------------------- 20: missing labels


@pytest.mark.parametrize("missing", ["nan", "none", "pd.NA"])
def test_a_missing_label_is_called_missing(missing):
    import pandas as pd

    from triage.training.classifier import TriageClassifier

    X, y = _xy(60)
    if missing == "nan":
        target = y.astype(float)
        target[5] = np.nan
    elif missing == "none":
        target = np.where(y == 1, "true_positive", "false_positive").astype(object)
        target[5] = None
    else:
        target = pd.Series(np.where(y == 1, "t", "f"), dtype="string")
        target[5] = pd.NA
    with pytest.raises(ValueError, match=r"y has 1 missing label\(s\), the first at row 5"):
        TriageClassifier(n_estimators=5).fit(X, target)


# ---------------------------------------------------------------------- 21: numpy ids


def test_numpy_integer_ids_are_ids(online_dir):
    from triage.online.loop import OnlineTriage
    from triage.online.records import RejectedCommit

    values = 10 + np.random.default_rng(0).normal(size=8)
    plain = OnlineTriage.from_model_dir(online_dir)
    numpy = OnlineTriage.from_model_dir(online_dir)
    a = [plain.process_one(7, 100 + i, float(v)) for i, v in enumerate(values)]
    b = [
        numpy.process_one(np.int64(7), np.uint16(100 + i), np.float64(v))
        for i, v in enumerate(values)
    ]
    assert [d and d.to_dict() for d in a] == [d and d.to_dict() for d in b]
    assert b[-1].series == "7" and b[-1].commit == "103"
    with pytest.raises(
        RejectedCommit,
        match=r"commit id must be a non-empty string or an integer, got the number 9.0",
    ):
        numpy.process_one("7", 9.0, 1.0)


# ---------------------------------------------------------------------- 22: the two Pre states agree on bad values


@pytest.mark.parametrize("bad", [float("nan"), 1e300, "a"])
def test_both_pre_states_refuse_the_same_values(bad):
    from triage.features.incremental import PreState
    from triage.features.recomputed import RecomputedPre

    words = []
    for cls in (PreState, RecomputedPre):
        state = cls(series_id="s")
        for v in (1.0, 2.0):
            state.learn_one(v)
        with pytest.raises(ValueError, match=r"series 's', index 2: value") as caught:
            state.learn_one(bad)
        words.append(str(caught.value))
        assert state.n == 2
        with pytest.raises(ValueError, match="series 's'"):
            state.features_array(
                np.array([1.0, bad]) if bad != "a" else np.array([1.0, float("nan")])
            )
    assert words[0] == words[1]


def test_culprit_posterior_refuses_nan():
    from triage.sampling import culprit_posterior

    cands, p = culprit_posterior(10, 20, [(15, 12.0)], 10.0, 12.0, 0.3)
    assert list(cands) == list(range(11, 21)) and p.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="measured reading of position 15 is nan"):
        culprit_posterior(10, 20, [(15, float("nan"))], 10.0, 12.0, 0.3)
    with pytest.raises(ValueError, match="sigma must be a finite number"):
        culprit_posterior(10, 20, [(15, 12.0)], 10.0, 12.0, float("nan"))


# ---------------------------------------------------------------------- 24-25: decision_function ties, tiny data


def test_decision_function_agrees_with_predict_at_the_threshold():
    from triage.training.classifier import TriageClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + 0.8 * rng.normal(size=120) > 0).astype(int)
    clf = TriageClassifier(n_estimators=10, threshold="fbeta:1").fit(X, y)
    p = clf.predict_proba(X)[:, 1]
    assert (p == clf.threshold_).any()  # the tie this is about
    decision = clf.decision_function(X)
    np.testing.assert_array_equal(decision > 0, clf.predict(X) == clf.classes_[1])
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(decision[order]) >= 0)  # still ranks as P does


@pytest.mark.parametrize(
    "params", [{"calibration": "isotonic"}, {"model": "svm"}, {"threshold": "recall:0.9"}]
)
def test_ten_rows_are_enough_to_fit(params):
    from triage.training.classifier import TriageClassifier

    X = np.linspace(0, 3, 10).reshape(-1, 1)
    y = (X[:, 0] > 1.4).astype(int)
    clf = TriageClassifier(
        **({"n_estimators": 5} if params.get("model") != "svm" else {}), **params
    ).fit(X, y)
    assert clf.n_train_["validation"] >= 2 and clf.predict(X).shape == (10,)


@pytest.mark.parametrize("model", ["rf", "xgb", "svm"])
def test_no_feature_column_is_refused_in_words(model):
    import pandas as pd

    from triage.training.classifier import TriageClassifier

    y = np.arange(20) % 2
    for X in (np.empty((20, 0)), pd.DataFrame(index=range(20))):
        with pytest.raises(ValueError, match=r"Found array with 0 feature\(s\)"):
            TriageClassifier(model=model).fit(X, y)


def test_history_gp_predict_and_next_positions_check_their_arguments():
    from triage.sampling import HistoryGP

    gp = HistoryGP().fit(50, [0, 10, 49], [1.0, 2.0, 1.5])
    assert gp.predict([3, 4])[0].shape == (2,)
    assert gp.next_positions(np.int64(2)) == gp.next_positions(2)
    with pytest.raises(ValueError, match="position 60 is outside the history's commits 0 .. 49"):
        gp.predict([0, 49, 60])
    for k in (2.5, "2", None, True, -1):
        with pytest.raises(ValueError, match="k must be a number of commits"):
            gp.next_positions(k)


def test_online_loop_with_an_unfitted_classifier():
    from triage.online.loop import OnlineTriage
    from triage.training.classifier import TriageClassifier

    with pytest.raises(ValueError, match="the classifier is not fitted"):
        OnlineTriage(TriageClassifier(n_estimators=5))


# ---------------------------------------------------------------------- 29-30: genetic selection


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"cxpb": 2}, "cxpb must be a probability"),
        ({"mutpb": -1}, "mutpb must be a probability"),
        ({"indpb": 2}, "indpb must be a probability"),
        ({"tournsize": 0}, "tournsize must be a whole number >= 1"),
        ({"population": 2.5}, "population must be a whole number >= 2"),
        ({"n_splits": 1}, "n_splits must be a whole number >= 2"),
    ],
)
def test_genetic_selector_checks_its_parameters(kwargs, words):
    from triage.features.selection import GeneticSelector

    with pytest.raises(ValueError, match=words):
        GeneticSelector(**kwargs).check_params()


def test_genetic_selector_reads_triage_labels():
    from triage.features.selection import GeneticSelector

    X, y = _xy(80)
    groups = np.arange(80) % 8
    settings = {"population": 6, "generations": 2, "n_estimators": 5, "n_splits": 3}
    numeric = GeneticSelector(**settings).fit(X, y, groups)
    labelled = GeneticSelector(**settings).fit(
        X, np.where(y == 1, "true_positive", "false_positive"), groups
    )
    assert labelled.fitness_ == numeric.fitness_ and labelled.names_ == numeric.names_
    with pytest.raises(ValueError, match="0/1 targets"):
        GeneticSelector(**settings).fit(X, y * 2, groups)


def test_context_block_refuses_indices_outside_the_series():
    from triage.features.candidate_context import CONTEXT_COLUMNS, context_block

    x = _step()
    assert context_block(x, [60]).shape == (1, len(CONTEXT_COLUMNS))
    assert context_block(x, np.array([], dtype=float)).shape == (0, len(CONTEXT_COLUMNS))
    for bad, words in (
        ([300], "candidate index 300 outside the series of 120"),
        ([-1], "index -1 outside"),
        ([30.7], "whole commit positions"),
    ):
        with pytest.raises(ValueError, match=words):
            context_block(x, bad)


def test_suppress_duplicates_checks_lengths():
    from triage.training.thresholds import suppress_duplicates

    series = np.array(["a", "a", "a", "b"])
    index = np.array([10, 12, 30, 11])
    p_true = np.array([0.6, 0.9, 0.7, 0.5])
    keep = np.ones(4, dtype=bool)
    assert suppress_duplicates(series, index, p_true, keep, 5).tolist() == [False, True, True, True]
    with pytest.raises(ValueError, match=r"as long, got lengths \[3, 4\]"):
        suppress_duplicates(series, index[:3], p_true, keep, 5)
