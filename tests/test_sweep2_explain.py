"""Defects found in the second sweep of the decision explanations (each test failed before its fix)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from triage.batch_label import label_candidates
from triage.explain import describe
from triage.inference import load_classifier
from triage.loaders import load
from triage.model_lookup import resolve_model


def test_an_alert_at_the_first_commit_is_not_explained_as_a_shift_from_an_empty_pre_window(tmp_path):
    rng = np.random.default_rng(2)
    n = 40
    frame = pd.DataFrame({
        "series_id": "first",
        "commit": [f"c{i:03d}" for i in range(n)],
        "timestamp": [f"2024-01-01T00:00:{i:02d}Z" for i in range(n)],
        "value": 10 + rng.normal(0, 0.2, n),
        "label": ["not_triaged"] + [""] * (n - 1),
    })
    frame.to_csv(tmp_path / "h.csv", index=False)
    clf = load_classifier(resolve_model("default", "alerts"))
    decisions = label_candidates(load(tmp_path / "h.csv"), clf, explain_top=5)
    why = decisions["explanation"].iloc[0]
    # There is no Pre window, so no "after mean ... above pre".
    assert "above pre" not in why and "below pre" not in why, why


def test_the_level_phrases_name_an_empty_window():
    row = {"norm_mean_pre": 0.0, "norm_mean_after": 0.55, "norm_sd_pre": 0.0, "norm_sd_after": 0.19,
           "pre_series_length": 0.0, "after_series_length": 40.0}
    assert describe("norm_mean_after", 0.55, row) == "pre window is empty: no level to compare"
    assert describe("norm_sd_after", 0.19, row) == "pre window is empty: no spread to compare"
    row = {**row, "pre_series_length": 39.0, "after_series_length": 0.0}
    assert describe("norm_mean_pre", 0.0, row) == "after window is empty: no level to compare"
