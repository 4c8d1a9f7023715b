"""The accuracy benchmark's harness on a tiny configuration: table structure and metric consistency."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_accuracy.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_accuracy", BENCH)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is built
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


@pytest.fixture(scope="module")
def result(bench, tmp_path_factory):
    config = bench.Config(
        preset="small", n_series=30, sample=None, val_sample=None, detectors=["perfherder", "cusum"],
        online=True, speed_series=1, speed_length=200, n_jobs=1, n_estimators=20,
    )
    return bench.run(config, workdir=tmp_path_factory.mktemp("bench"), log=lambda msg: None)


def test_split_is_by_series_seeded_and_disjoint(bench):
    ids = [f"s{i}" for i in range(50)]
    fit, val, test = bench.split_series(ids, 0.2, 0.1, seed=3)
    assert (len(fit), len(val), len(test)) == (35, 5, 10)
    assert set(fit) | set(val) | set(test) == set(ids)
    assert not (set(fit) & set(test) or set(fit) & set(val) or set(val) & set(test))
    assert bench.split_series(ids, 0.2, 0.1, seed=3) == (fit, val, test)
    assert bench.split_series(ids, 0.2, 0.1, seed=4)[2] != test


def test_held_out_series_carry_no_labels(bench, small_dataset):
    h = next(h for h in small_dataset if len(h.confirmed()))
    u = bench.unlabelled(h)
    assert len(u.candidates()) == 0 and u.true_change is None and u.truth_label is None
    np.testing.assert_array_equal(u.values, h.values)


def test_table_structure(bench, result):
    rows = result["rows"]
    assert [(r["method"], r["triage"]) for r in rows] == [
        (m, t) for m in ("perfherder", "cusum") for t in ("none", "model", "tuned")
    ] + [("online", "model"), ("online", "tuned")]
    assert result["series"]["test_used"] == 6 and result["series"]["fit"] == 21
    table = bench.markdown(result)
    lines = table.splitlines()
    assert lines[0].startswith("| method | triage (threshold) |")
    assert all(line.count("|") == lines[0].count("|") for line in lines[2 : 2 + len(rows)])
    assert "| perfherder | alone |" in table and "| goal (+20 points" in table


def test_metrics_in_range_and_consistent(result):
    for r in result["rows"]:
        for key in ("f1", "precision", "recall", "f1_series_mean"):
            assert 0.0 <= r[key] <= 1.0, (r["method"], key, r[key])
        p, rec = r["precision"], r["recall"]
        assert r["f1"] == pytest.approx(2 * p * rec / (p + rec) if p + rec else 0.0)
        for key in ("alert_precision", "alert_recall"):
            assert math.isnan(r[key]) or 0.0 <= r[key] <= 1.0
        assert r["ms_per_series"] > 0
    by = {(r["method"], r["triage"]): r for r in result["rows"]}
    assert by[("online", "tuned")]["threshold"] in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
    for m in ("perfherder", "cusum"):
        # Triage only removes alerts: never more alerts, never more recall.
        for t in ("model", "tuned"):
            assert by[(m, t)]["alerts_per_series"] <= by[(m, "none")]["alerts_per_series"]
            assert by[(m, t)]["recall"] <= by[(m, "none")]["recall"] + 1e-12
    assert {g["method"] for g in result["goals"]} == {"perfherder"}


def test_metrics_by_hand(bench):
    truth = {"a": np.array([50]), "b": np.array([], dtype=np.int64)}
    pred = {"a": np.array([52, 80]), "b": np.array([10])}
    m = bench.metrics(truth, pred, margin=5)
    # a: predictions {0, 52, 80} vs truth {0, 50}: P 2/3, R 1; b: {0, 10} vs {0}: P 1/2, R 1.
    assert m["precision"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["recall"] == 1.0
    assert m["alert_precision"] == pytest.approx(1 / 3) and m["alert_recall"] == 1.0


def test_tuned_threshold_keeps_the_recall_share(bench):
    truth = {"a": np.array([50]), "b": np.array([30])}
    pred = {"a": np.array([20, 50]), "b": np.array([30, 70])}
    proba = {"a": np.array([0.9, 0.6]), "b": np.array([0.4, 0.1])}
    t = bench.tune_threshold(truth, pred, proba, margin=5, keep_recall=1.0)
    assert t == 0.4  # the highest threshold still keeping both true alerts
    assert bench.tune_threshold(truth, pred, proba, margin=5, keep_recall=0.75) == 0.6


def test_derived_ensembles_equal_the_real_ones(bench, small_dataset):
    from triage.detectors import make

    for h in list(small_dataset)[:3]:
        members = bench.base_detectors(["ensemble"])
        found = {m: make(m).fit(h.values).indices_ for m in members}
        for name in ("ensemble", "mozilla_or_ensemble", "ensemble_c2"):
            real = make("ensemble", **bench.ensemble_params(name)).fit(h.values).indices_
            np.testing.assert_array_equal(bench.derive_ensemble(name, found), np.unique(real))


def test_selection_table_layout(bench):
    rows = [
        {"window": w, "bounds": b, "method": m, "keep_recall": k, "threshold": 0.5,
         "precision_gain": 0.1, "recall_kept": 0.96}
        for w, b in bench.SELECTION_VARIANTS for m in bench.SELECTION_DETECTORS for k in bench.SELECTION_KEEPS
    ]
    lines = bench.selection_markdown(rows, 0.97).splitlines()
    assert len(lines) == 2 + len(bench.SELECTION_VARIANTS)
    assert lines[2] == "| adaptive, labels | " + " | ".join(["+10.0, 96.0 %"] * len(bench.SELECTION_DETECTORS)) + " |"
