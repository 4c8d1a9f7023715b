"""Every registered detector: the shared API, a clear step is found, flat noise stays quiet."""

from __future__ import annotations

import numpy as np
import pytest

from triage.detectors import REGISTRY, ChangePoint, Detector, defaults, make, names, parse_params

# Window-test detectors whose p-values are discrete or slow get shorter series.
SLOW = {"hybrid_cvm", "hybrid_mwu", "hybrid_ks", "ensemble", "mozilla_or_ensemble"}


def step_series(n: int = 300, at: int = 150, shift: float = 8.0, seed: int = 0) -> np.ndarray:
    """Level 100, Gaussian noise sd 1 (1 %), a step of ``shift`` % at ``at``."""
    rng = np.random.default_rng(seed)
    x = 100.0 + rng.normal(0.0, 1.0, n)
    x[at:] += shift
    return x


def flat_series(n: int = 300, seed: int = 0) -> np.ndarray:
    return 100.0 + np.random.default_rng(seed).normal(0.0, 1.0, n)


def test_registry_lists_every_method():
    assert set(names()) >= {
        "perfherder",
        "hybrid_welch",
        "hybrid_mwu",
        "hybrid_ks",
        "hybrid_cvm",
        "hybrid_levene",
        "edivisive",
        "cusum",
        "bocpd",
        "pelt",
        "binseg",
        "ensemble",
        "mozilla_or_ensemble",
    }


@pytest.mark.parametrize("name", names())
def test_constructor_stores_parameters_only(name):
    det = make(name)
    assert isinstance(det, Detector)
    assert det.get_params() == defaults(name)
    assert not hasattr(det, "change_points_")  # nothing computed before fit
    assert det.name == name


@pytest.mark.parametrize("name", [n for n in names() if n != "hybrid_levene"])
def test_each_detector_finds_a_clear_step(name):
    n, at = (160, 80) if name in SLOW else (300, 150)
    x = step_series(n, at)
    det = make(name)
    assert det.fit(x) is det
    cps = det.change_points_
    assert all(isinstance(c, ChangePoint) for c in cps)
    assert any(abs(c.index - at) <= 2 for c in cps), [c.index for c in cps]
    # the step is the strongest evidence the detector reports
    best = max(cps, key=lambda c: c.score)
    assert abs(best.index - at) <= 2
    assert det.detect(x) == cps  # detect() is fit().change_points_
    assert list(det.indices_) == [c.index for c in cps]


def test_levene_finds_a_variance_change():
    rng = np.random.default_rng(1)
    x = np.r_[100 + rng.normal(0, 0.5, 150), 100 + rng.normal(0, 5.0, 150)]
    cps = make("hybrid_levene", magnitude=0.0).detect(x)
    assert any(abs(c.index - 150) <= 6 for c in cps)


@pytest.mark.parametrize("name", [n for n in names() if n not in SLOW])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_false_alarm_on_flat_noise_at_defaults(name, seed):
    assert make(name).detect(flat_series(seed=seed)) == []


@pytest.mark.parametrize("name", names())
def test_index_zero_never_reported_and_indices_sorted(name):
    n = 120 if name in SLOW else 300
    x = step_series(n, 5, 20.0)  # a step right at the start
    idx = [c.index for c in make(name).detect(x)]
    assert idx == sorted(idx)
    assert all(0 < i < n for i in idx)


def test_short_and_constant_series_do_not_crash():
    for name in names():
        if name == "hybrid_cvm":
            continue
        for x in (np.array([1.0]), np.full(50, 3.0), np.r_[np.full(30, 3.0), np.full(30, 4.0)]):
            cps = make(name).detect(x)
            assert all(0 < c.index < len(x) for c in cps)


def test_constant_step_is_found_by_perfherder_and_edivisive():
    x = np.r_[np.full(40, 10.0), np.full(40, 12.0)]
    assert [c.index for c in make("perfherder").detect(x)] == [40]
    assert make("perfherder").detect(x)[0].score == 1000.0  # infinite t stored as Perfherder does
    assert [c.index for c in make("edivisive").detect(x)] == [40]


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="NaN"):
        make("perfherder").fit([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="1-d"):
        make("perfherder").fit(np.ones((3, 2)))


def test_parse_params_types_values_from_defaults():
    assert parse_params("perfherder", ["t_threshold=5", "fore_window=10"]) == {
        "t_threshold": 5.0,
        "fore_window": 10,
    }
    assert parse_params("ensemble", ["members=perfherder, pelt", "min_votes=2"]) == {
        "members": ("perfherder", "pelt"),
        "min_votes": 2,
    }
    with pytest.raises(ValueError, match="unknown parameter 'nope'"):
        parse_params("cusum", ["nope=1"])
    with pytest.raises(ValueError, match="key=value"):
        parse_params("cusum", ["threshold"])
    with pytest.raises(ValueError, match="fore_window"):
        parse_params("perfherder", ["fore_window=abc"])
    with pytest.raises(ValueError, match="unknown detector"):
        make("nope")
    with pytest.raises(ValueError, match="unknown parameter"):
        make("pelt", alpha=1)


def test_registry_defaults_override_class_defaults():
    assert defaults("hybrid_ks")["test"] == "ks"
    assert tuple(defaults("mozilla_or_ensemble")["always"]) == ("perfherder",)
    assert all(isinstance(v, tuple) for v in REGISTRY.values())


def test_detectors_on_synthetic_histories_match_ground_truth(small_dataset):
    """On the synthetic preset, Perfherder and the penalised methods recover the true
    change points: TCPDBench F1 (margin 5) averaged over series."""
    from triage.core.metrics import f_measure

    for name, floor in (("perfherder", 0.75), ("binseg", 0.65), ("cusum", 0.65)):
        scores = [
            f_measure({0: list(h.true_change_points())}, list(make(name).fit(h.values).indices_)).f
            for h in small_dataset
        ]
        assert np.mean(scores) > floor, (name, np.mean(scores))


@pytest.mark.shared
def test_mongodb_demo_true_positives_are_found(shared_data):
    """The real MongoDB demo series: its two confirmed regressions (267, 410) are
    among Perfherder's, CUSUM's and BOCPD's detections."""
    from triage.loaders import load

    history = next(iter(load(shared_data / "mongodb_demo.csv")))
    confirmed = set(history.confirmed().tolist())
    assert confirmed == {267, 410}
    for name in ("perfherder", "cusum", "bocpd"):
        found = {c.index for c in make(name).detect(history.values)}
        assert confirmed <= found, (name, sorted(found))
    assert {c.index for c in make("bocpd").detect(history.values)} == confirmed


def test_one_param_grammar_typed_by_defaults_or_inferred():
    from triage.core.params import parse_params as parse_text

    # key and value are stripped in both forms; a later key wins
    assert parse_text([" n = 5 ", "n=6", "name= ks "]) == {"n": 6, "name": "ks"}
    assert parse_text(["a=1.5", "b=TRUE", "c=none", "d=yes"]) == {"a": 1.5, "b": True, "c": None, "d": "yes"}
    typed = parse_text(["flag=on", "k=3", "x=3", "names=a, b,"], {"flag": False, "k": 1, "x": 1.0, "names": ()})
    assert typed == {"flag": True, "k": 3, "x": 3.0, "names": ("a", "b")}
    assert isinstance(typed["x"], float)
    assert parse_params("hybrid_ks", ["test= mwu "]) == {"test": "mwu"}
    with pytest.raises(ValueError, match="key=value"):
        parse_text(["=1"])
    with pytest.raises(ValueError, match="flag.*not a boolean"):
        parse_text(["flag=maybe"], {"flag": True})
    # a whole number written as a float is one (it was "invalid literal for int() with base 10")
    assert parse_text(["k=1e3", "m=5.0"], {"k": 1, "m": 1}) == {"k": 1000, "m": 5}
    with pytest.raises(ValueError, match="k: '5.5' is not a whole number"):
        parse_text(["k=5.5"], {"k": 1})
    with pytest.raises(ValueError, match="x: 'abc' is not a number"):
        parse_text(["x=abc"], {"x": 1.0})


def test_an_ensemble_built_directly_resolves_names_with_the_registry_or_its_own_factory():
    from triage.detectors import Ensemble

    direct = Ensemble(members=("pelt", "binseg"), min_votes=2)
    assert direct.detect(step_series()) == make("ensemble", members=("pelt", "binseg"), min_votes=2).detect(step_series())
    built: list[str] = []  # a factory of one's own still builds the members

    def factory(name: str):
        built.append(name)
        return make(name, penalty=1e9) if name == "pelt" else make(name)

    own = Ensemble(members=("pelt", "binseg"), min_votes=2)
    own.factory = factory
    assert own.detect(step_series()) == [] and built == ["pelt", "binseg"]
    unresolved = Ensemble(members=("pelt", "binseg"), min_votes=2)
    unresolved.factory = None
    with pytest.raises(ValueError, match="names, not detectors"):
        unresolved.fit(flat_series())


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("edivisive", "max_pvalue", 2.0), ("edivisive", "max_pvalue", float("nan")), ("edivisive", "max_pvalue", 0.0),
        ("edivisive", "window", 1), ("cusum", "drift", -1.0), ("cusum", "threshold", float("inf")),
        ("cusum", "min_window", 40), ("hybrid_ks", "alpha", 1.0), ("hybrid_ks", "fore_window", 0),
        ("perfherder", "min_back_window", 30), ("perfherder", "t_threshold", -0.5), ("bocpd", "threshold", 1.5),
        ("bocpd", "expected_run", 1.0), ("bocpd", "lag", -1), ("bocpd", "kappa0", 0.0), ("pelt", "penalty", -3.0),
        ("binseg", "min_size", 0), ("pelt", "jump", 2.5), ("ensemble", "min_votes", 0), ("ensemble", "margin", -1),
    ],
)
def test_out_of_range_parameters_are_refused_at_construction_naming_the_parameter(name, key, value):
    with pytest.raises(ValueError, match=rf"parameter {key}=.* of detector '{name}' must be"):
        make(name, **{key: value})


def test_every_numeric_parameter_of_every_detector_has_a_range_and_defaults_are_inside():
    from triage.detectors.registry import RANGES, check_params

    for name in names():
        full = defaults(name)
        check_params(name, full)  # the defaults are valid
        cls = REGISTRY[name][0]
        numeric = {k for k, v in full.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        assert numeric <= set(RANGES[cls]), (name, numeric - set(RANGES[cls]))
