"""Candidates in noise-free stretches (deterministic metrics: sizes, counts).

Found by trying a binary-size-like series: ``triage score`` gave a flat
1000 -> 1100 step P(true) 0.54 and a 16-byte step in 52,000 bytes 0.19 (called
false at `perfherder`'s threshold 0.27); the level-shift measures read every
such step as "1 noise sd". Now a candidate with >= 20 equal values before and
>= 2 equal values from it on is decided by :mod:`triage.features.noise_free`:
P(true) 1 for a step, 0 for no change. The online loop (``watch``, ``detect``)
missed both steps; it asks the same rule with Pre's running minimum and
maximum and the K + 1 After values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers_cli import invoke

from triage.features import noise_free
from triage.features.incremental import PreState
from triage.features.recomputed import RecomputedPre


def _history(path, series: dict[str, list[float]], label: dict[tuple[str, int], str] | None = None):
    rows = []
    for sid, values in series.items():
        for i, v in enumerate(values):
            rows.append({"series_id": sid, "commit": f"c{i}", "value": v,
                         **({"label": (label or {}).get((sid, i), "")} if label is not None else {})})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _score(tmp_path, history, candidates: list[tuple[str, int]]) -> pd.DataFrame:
    cand = tmp_path / "cand.csv"
    pd.DataFrame({"series_id": [s for s, _ in candidates], "commit": [f"c{i}" for _, i in candidates]}).to_csv(
        cand, index=False)
    out = tmp_path / "scores.csv"
    code, text = invoke(["score", "--data", history, "--candidates", cand, "--out", out])
    assert code == 0, text
    return pd.read_csv(out)


def test_score_calls_a_flat_step_true_and_a_flat_non_change_false(tmp_path):
    history = _history(tmp_path / "h.csv", {
        "size": [1000.0] * 60 + [1100.0] * 60,
        "bytes": [52000.0] * 60 + [52016.0] * 60,
    })
    scores = _score(tmp_path, history, [("size", 60), ("bytes", 60), ("size", 30)])
    step = scores[scores["commit"] == "c60"]
    assert (step["p_true"] == 1.0).all()
    assert (step["classification"] == "true_positive").all()
    assert step["explanation"].str.startswith("noise-free step").all()
    quiet = scores[(scores["series_id"] == "size") & (scores["commit"] == "c30")].iloc[0]
    # The windows of c30 stop at the next candidate, c60: all 1000 on both sides.
    assert quiet["p_true"] == 0.0 and quiet["classification"] == "false_positive"
    assert quiet["explanation"].startswith("noise-free, no change")


def test_quantised_noise_with_runs_of_equal_values_stays_with_the_model(tmp_path):
    """Integer ns/iter repeat values (real ``rhai`` series hold runs of up to 15): not noise-free."""
    rng = np.random.default_rng(3)
    values = list(np.round(rng.normal(31, 1.2, 40))) + [31.0] * 15 + [34.0] * 3 + list(np.round(rng.normal(31, 1.2, 40)))
    history = _history(tmp_path / "q.csv", {"q": values})
    scores = _score(tmp_path, history, [("q", 40), ("q", 55)])
    assert not scores["explanation"].str.startswith("noise-free").any()
    assert scores["p_true"].between(0.0, 1.0).all()


def test_a_short_flat_pre_is_not_enough(tmp_path):
    """19 equal values before: the model decides (a run that long occurs in quantised noise)."""
    rng = np.random.default_rng(4)
    values = list(rng.normal(1000, 30, 30)) + [1000.0] * 19 + [1100.0] * 30
    history = _history(tmp_path / "s.csv", {"s": values})
    scores = _score(tmp_path, history, [("s", 30), ("s", 49)])
    assert not scores["explanation"].str.startswith("noise-free").any()


def test_label_decides_a_flat_step(tmp_path):
    history = _history(tmp_path / "l.csv", {"mem": [4096.0] * 50 + [8192.0] * 50},
                       label={("mem", 50): "not_triaged"})
    out = tmp_path / "labels.csv"
    code, text = invoke(["label", "--data", history, "--out", out])
    assert code == 0, text
    got = pd.read_csv(out)
    assert len(got) == 1 and got.loc[0, "p_true"] == 1.0
    assert got.loc[0, "classification"] == "true_positive"
    assert got.loc[0, "explanation"].startswith("noise-free step")


def test_verdict_needs_its_columns_and_lengths():
    assert (noise_free.verdict(pd.DataFrame({"x": [1.0]})) == noise_free.NOT_NOISE_FREE).all()
    frame = pd.DataFrame({
        "pre_series_length": [20, 19, 20, 20, 20],
        "after_series_length": [2, 2, 1, 2, 2],
        "norm_mean_pre": [0.0, 0.0, 0.0, 0.0, 0.0],
        "norm_mean_after": [1.0, 1.0, 1.0, 0.0, 1.0],
        "norm_sd_pre": [0.0, 0.0, 0.0, 0.0, 0.0],
        "norm_sd_after": [0.0, 0.0, 0.0, 0.0, 0.1],
    })
    assert noise_free.verdict(frame).tolist() == [
        noise_free.STEP, noise_free.NOT_NOISE_FREE, noise_free.NOT_NOISE_FREE, noise_free.NO_CHANGE,
        noise_free.NOT_NOISE_FREE,
    ]


@pytest.mark.parametrize("kind", [PreState, RecomputedPre])
def test_flat_value_of_both_pre_states(kind):
    pre = kind()
    assert pre.flat_value() is None
    pre.learn_many([2.5] * 25) if hasattr(pre, "learn_many") else [pre.learn_one(2.5) for _ in range(25)]
    assert pre.flat_value() == 2.5
    again = kind.from_dict(pre.to_dict())
    assert again.flat_value() == 2.5
    pre.learn_one(2.5 + 1e-12)
    assert pre.flat_value() is None
    pre.reset()
    assert pre.flat_value() is None


def test_stream_verdict():
    flat = np.array([7.0, 7.0, 7.0])
    assert noise_free.stream_verdict(20, 5.0, flat) == noise_free.STEP
    assert noise_free.stream_verdict(20, 7.0, flat) == noise_free.NO_CHANGE
    assert noise_free.stream_verdict(19, 5.0, flat) == noise_free.NOT_NOISE_FREE
    assert noise_free.stream_verdict(20, None, flat) == noise_free.NOT_NOISE_FREE
    assert noise_free.stream_verdict(20, 5.0, np.array([7.0])) == noise_free.NOT_NOISE_FREE
    assert noise_free.stream_verdict(20, 5.0, np.array([7.0, 7.5])) == noise_free.NOT_NOISE_FREE


def test_detect_finds_flat_steps_at_their_commit(tmp_path):
    history = _history(tmp_path / "h.csv", {
        "size": [1000.0] * 60 + [1100.0] * 60,
        "bytes": [52000.0] * 60 + [52016.0] * 60,
        "flat": [7.0] * 120,
    })
    out = tmp_path / "cp.csv"
    code, text = invoke(["detect", "--data", history, "--out", out])
    assert code == 0, text
    found = pd.read_csv(out)
    assert sorted(zip(found["series_id"], found["commit"], found["probability"], strict=True)) == [
        ("bytes", "c60", 1.0), ("size", "c60", 1.0)]


def test_watch_alarms_once_per_flat_step_and_says_why(tmp_path):
    import json

    values = [1000.0] * 40 + [1100.0] * 30 + [1050.0] * 30
    lines = "".join(json.dumps({"series_id": "size", "commit": f"c{i}", "value": v}) + "\n"
                    for i, v in enumerate(values))
    code, text = invoke(["watch", "--state", tmp_path / "s.db"], stdin=lines)
    assert code == 0, text
    decisions = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    alarms = [d for d in decisions if d.get("decision") is True]
    assert [a["commit"] for a in alarms] == ["c40", "c70"]
    assert all(a["probability"] == 1.0 and a["top_features"][0].startswith("noise-free step") for a in alarms)


def test_the_window_0_model_is_left_to_itself(tmp_path):
    """K = 0: After is one value, one odd reading; the rule needs two."""
    history = _history(tmp_path / "h.csv", {"size": [1000.0] * 60 + [1100.0] * 60})
    out = tmp_path / "cp.csv"
    code, text = invoke(["detect", "--data", history, "--model", "default-w0", "--out", out])
    assert code == 0, text
    assert (pd.read_csv(out)["probability"] < 1.0).all()
