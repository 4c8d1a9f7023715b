"""Defects found in the second sweep of `triage label` (each test failed before its fix)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from triage.batch_label import label_candidates
from triage.cli.app import app
from triage.core.errors import InputError
from triage.inference import load_classifier
from triage.loaders import load
from triage.model_lookup import resolve_model

runner = CliRunner()


def _history(path):
    rng = np.random.default_rng(5)
    n = 60
    pd.DataFrame({
        "series_id": "web.latency",
        "commit": [f"c{i:03d}" for i in range(n)],
        "timestamp": [f"2024-01-01T00:00:{i:02d}Z" for i in range(n)],
        "value": 10 + 3 * (np.arange(n) >= 30) + rng.normal(0, 0.2, n),
        "label": [""] * 30 + ["not_triaged"] + [""] * 29,
    }).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("model", "kind"), [("online-w4", "an online model (window 4)"),
                                             ("default-scoring", "a detector-scoring model")])
def test_a_model_whose_features_label_cannot_build_is_refused_by_name(tmp_path, model, kind):
    data = _history(tmp_path / "h.csv")
    clf = load_classifier(resolve_model(model, "alerts"))
    with pytest.raises(InputError, match=rf"needs features .*pair_.*\({re.escape(kind)}\).* use `triage (score|detect)`"):
        label_candidates(load(data), clf)
    result = runner.invoke(app, ["label", "--data", str(data), "--model", model])
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError), result.exception  # not a KeyError (internal error)


def test_score_refuses_an_online_model_by_name(tmp_path):
    data = _history(tmp_path / "h.csv")
    cands = tmp_path / "c.csv"
    made = runner.invoke(app, ["candidates", "--data", str(data), "--detector", "binseg", "--out", str(cands)])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["score", "--data", str(data), "--candidates", str(cands), "--model", "online-w4"])
    assert result.exit_code != 0
    message = result.output + str(result.exception)
    assert not isinstance(result.exception, KeyError), message  # was an internal error
    assert "online-w4" in message and "pair_robust_shift" in message and "`triage detect` / `triage watch`" in message
