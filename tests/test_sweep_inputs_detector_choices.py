"""A text parameter outside its choices is refused when the detector is built, naming the parameter and the choices.

``--param model=foo`` for pelt/binseg got ruptures' own "Not such model: foo";
a bad ``merge_recompute`` was found only when a series had a weak point to
merge; an ensemble's unknown member was "unknown detector 'foo'", naming no
parameter.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers_cli import flat, invoke

from triage.detectors import make, parse_params
from triage.detectors.penalised import MODELS, Pelt
from triage.detectors.registry import CHOICES, REGISTRY, defaults


@pytest.mark.parametrize(
    ("name", "key", "choices"),
    [
        ("pelt", "model", "l2, l1, normal, rbf, rank, mahalanobis, ar, clinear"),
        ("binseg", "model", "l2, l1, normal"),
        ("hybrid_ks", "test", "welch, mwu, ks, cvm, levene"),
        ("edivisive", "merge_recompute", "otava, neighbours"),
    ],
)
def test_a_value_outside_the_choices_names_parameter_and_choices(name, key, choices):
    with pytest.raises(ValueError, match=rf"^parameter {key}='foo' of detector '{name}' must be one of {choices}"):
        make(name, **parse_params(name, [f"{key}=foo"]))


def test_linear_and_cosine_are_not_models_for_one_series():
    # linear needs covariates (ruptures: "Not enough dimensions"); cosine of single numbers is their sign.
    for model in ("linear", "cosine"):
        with pytest.raises(ValueError, match=f"model='{model}' of detector 'pelt' must be one of"):
            make("pelt", model=model)


def test_every_allowed_model_runs_on_a_series_and_the_class_checks_too():
    x = np.r_[np.zeros(60), np.full(60, 5.0)] + np.random.default_rng(0).normal(0, 0.5, 120)
    for model in MODELS:
        make("binseg", model=model).detect(x)
    with pytest.raises(ValueError, match="model='foo' must be one of l2"):
        Pelt(model="foo").detect(x)


def test_every_text_parameter_has_choices_and_defaults_are_among_them():
    for name in REGISTRY:
        cls = REGISTRY[name][0]
        text = {k for k, v in defaults(name).items() if isinstance(v, str)}
        assert text == set(CHOICES.get(cls, {})), name
        for key in text:
            assert defaults(name)[key] in CHOICES[cls][key]


def test_ensemble_members_and_always_are_checked_naming_the_parameter():
    with pytest.raises(ValueError, match=r"parameter members=\('foo', 'pelt'\) of detector 'ensemble': 'foo' is not a detector \(use names from perfherder"):
        make("ensemble", **parse_params("ensemble", ["members=foo,pelt"]))
    with pytest.raises(ValueError, match=r"parameter always=\('perfherder',\) of detector 'mozilla_or_ensemble' must name members \(pelt, binseg\)"):
        make("mozilla_or_ensemble", members=("pelt", "binseg"))
    make("ensemble", members=("pelt", "binseg"), always=("pelt",), min_votes=2)


def test_cli_candidates_reports_the_parameter(tmp_path):
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{1.0 + (i >= 20)}\n" for i in range(40)))
    code, out = invoke(["candidates", "--data", data, "--detector", "pelt", "--param", "model=foo",
                        "--out", tmp_path / "c.csv"])
    assert code == 2, out
    assert "parameter model='foo' of detector 'pelt' must be one of l2, l1" in flat(out)
    assert "Not such model" not in out
