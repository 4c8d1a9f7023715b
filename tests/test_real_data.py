"""benchmarks/real_data.py: loading the shared real histories, the split by project, injected ground truth."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.core.metrics import f_measure

MODULE = Path(__file__).resolve().parents[1] / "benchmarks" / "real_data.py"


def _benchmark_module(name: str):
    """``benchmarks/<name>.py`` loaded as the module ``name`` (registered first: dataclasses and the
    benchmarks' own imports of each other look it up by that name)."""
    spec = importlib.util.spec_from_file_location(name, MODULE.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def R():
    return _benchmark_module("real_data")


@pytest.fixture(scope="module")
def bench(R):
    """benchmarks/bench_real.py, which imports real_data (loaded by ``R``) by name."""
    return _benchmark_module("bench_real")


@pytest.fixture(scope="module")
def real(R):
    try:
        return R.load_real()
    except R.RealDataMissing as exc:
        pytest.skip(str(exc))


def test_missing_folder_is_a_clear_error(R, tmp_path):
    with pytest.raises(R.RealDataMissing, match="histories.csv.gz is absent"):
        R.load_real(tmp_path)


def test_rerun_commits_are_one_commit_at_first_position(R, tmp_path):
    frame = pd.DataFrame(
        {
            "series_id": ["rhai/a"] * 5,
            "commit": ["c1", "c2", "c1", "c3", "c2"],
            "timestamp": [f"2024-01-0{i}T00:00:00Z" for i in range(1, 6)],
            "value": [1.0, 2.0, 3.0, 4.0, 6.0],
        }
    )
    frame.to_csv(tmp_path / "histories.csv.gz", index=False, compression="gzip")
    h = R.load_real(tmp_path)["rhai/a"]
    assert list(h.commits) == ["c1", "c2", "c3"]
    assert h.values.tolist() == [2.0, 4.0, 4.0]
    assert h.n_measurements.tolist() == [2, 2, 1]
    assert str(h.timestamps[0]).startswith("2024-01-01")


@pytest.mark.shared
def test_real_histories_and_split_by_project(R, real):
    assert len(real) == 372
    by_source: dict[str, int] = {}
    for h in real:
        by_source[R.source_of(h.series_id)] = by_source.get(R.source_of(h.series_id), 0) + 1
        assert len(set(h.commits)) == len(h)
    assert by_source == {"django-asv": 123, "empymod-bench": 106, "emg3d-bench": 35, "rhai": 49, "otel-java": 59}
    parts = R.split(real)
    assert [len(parts[p]) for p in R.PARTS] == [158, 49, 165]
    sources = {p: {R.source_of(h.series_id) for h in d} for p, d in parts.items()}
    assert not (sources["fit"] & sources["validation"]) and not (sources["fit"] & sources["test"])
    assert not (sources["validation"] & sources["test"])
    meta = R.load_meta()
    assert not meta.loc[[h.series_id for h in real if h.series_id.startswith("otel-java")], "lower_is_better"].any()


def test_injection_respects_gaps_ends_and_sizes(R):
    cfg = R.InjectionConfig()
    counts = []
    for seed in range(200):
        base = np.full(150, 10.0)
        x, at, rel = R.inject_shifts(base, np.random.default_rng(seed), cfg)
        counts.append(len(at))
        if len(at):
            assert at[0] >= 20 and at[-1] <= 150 - 1 - 20
            assert np.all(np.diff(at) >= 20)
            size = np.maximum(np.abs(rel), np.abs(1 / (1 + rel) - 1))
            assert np.all((size >= 0.02 - 1e-12) & (size <= 0.30 + 1e-12))
            # the level moves exactly at the injected commits, nowhere else
            moved = np.flatnonzero(np.abs(np.diff(x)) > 1e-9) + 1
            assert moved.tolist() == at.tolist()
    assert set(counts) == {0, 1, 2, 3}
    # a series too short for any change gets none
    _, at, _ = R.inject_shifts(np.ones(40), np.random.default_rng(0), cfg)
    assert at.size == 0
    # 80 commits (the shortest stretch) hold at most 2 changes 20 apart and 20 from both ends:
    # every draw of the count, 3 included, places them (3 once asked for a slack of -1)
    for seed in range(100):
        x, at, _ = R.inject_shifts(np.ones(80), np.random.default_rng(seed), cfg)
        assert len(at) <= 2 and (len(at) == 0 or (at[0] >= 20 and at[-1] <= 59 and np.all(np.diff(at) >= 20)))


def test_ramp_injection_spreads_each_shift_and_keeps_the_step_draws(R):
    for seed in range(50):
        base = np.full(150, 10.0)
        step, at, rel = R.inject_shifts(base, np.random.default_rng(seed), R.InjectionConfig())
        ramped, at_r, rel_r = R.inject_shifts(base, np.random.default_rng(seed), R.InjectionConfig(ramp=5))
        # the same changes are drawn; a ramp of 1 is the step itself, bit for bit
        assert at_r.tolist() == at.tolist() and rel_r.tolist() == rel.tolist()
        one, _, _ = R.inject_shifts(base, np.random.default_rng(seed), R.InjectionConfig(ramp=1))
        assert one.tolist() == step.tolist()
        for c, r in zip(at, rel, strict=True):
            # from the ramp's first commit the level moves in 5 equal steps (in log) and then holds
            before = ramped[c - 1]
            logs = np.log(ramped[c - 1 : c + 6] / before)
            assert np.allclose(np.diff(logs)[:5], np.log1p(r) / 5) and abs(logs[6] - logs[5]) < 1e-12
        # after the last ramp both series stand at the same level
        if len(at):
            assert np.isclose(ramped[-1], step[-1])


def test_fresh_copies_end_soon_after_each_change_and_keep_the_truth(R):
    from triage.core.history import Dataset, History

    n = 200
    truth = np.zeros(n, dtype=bool)
    truth[[60, 150]] = True
    h = History("p/s@0-200", np.array([f"c{i}" for i in range(n)]), np.arange(n, dtype=float),
                np.array([""] * n, dtype=object), true_change=truth)
    cut = R.truncate_fresh(Dataset([h]), seed=4)
    ends = sorted(len(c) for c in cut)
    # one copy 1-12 commits after each change (the change itself counted), one at a random commit
    assert any(61 <= e <= 72 for e in ends) and any(151 <= e <= 162 for e in ends) and 3 >= len(cut) >= 2
    for c in cut:
        stop = len(c)
        assert c.series_id == f"p/s@0-200#end{stop}" and R.source_of(c.series_id) == "p"
        assert c.values.tolist() == h.values[:stop].tolist() and c.true_change.tolist() == truth[:stop].tolist()
    # the same seed draws the same copies; another seed may not
    assert [c.series_id for c in R.truncate_fresh(Dataset([h]), seed=4)] == [c.series_id for c in cut]


def test_stable_stretches_cut_at_clear_changes_not_at_outliers(R):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(100, 1, 200), rng.normal(110, 1, 200)])
    x[[50, 300]] = [150, 40]  # lone outliers
    assert R.stable_stretches(x) == [(0, 200), (200, 400)]
    assert R.stable_stretches(x, scale="global") == [(0, 200), (200, 400)]
    with pytest.raises(ValueError, match="scale"):
        R.stable_stretches(x, scale="mad")


def test_stable_stretches_see_a_moderate_change_beside_a_large_one(R):
    # A large change inflates the whole series' MAD: in its units the moderate
    # change at 300 (3 noise sd) looks small and the first version kept it
    # inside a "stable" stretch; in units of the commit-to-commit noise it is clear.
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(100, 1, 200), rng.normal(160, 1, 100), rng.normal(163, 1, 200)])
    assert R.stable_stretches(x, scale="global") == [(0, 200), (200, 500)]
    cuts = R.stable_stretches(x)
    assert cuts[0] == (0, 200) and all(not (a < 295 and b > 305) for a, b in cuts)


def test_noise_z_is_in_noise_units_and_pulls_in_lone_outliers(R):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(50, 2, 300), rng.normal(80, 2, 300)])
    x[100] = 500.0
    z = R.noise_z(x)
    assert z.shape == x.shape and abs(float(np.median(z))) < 1e-12
    # the level change stays whole (15 noise sd), the outlier is at most 4 sd from its neighbours
    assert 13 < np.median(z[300:]) - np.median(z[:300]) < 17
    assert abs(z[100] - np.median(z[90:110])) <= 4.0 + 1e-9
    assert not R.noise_z(np.full(10, 3.0)).any()


@pytest.mark.shared
def test_injected_parts_carry_ground_truth_the_metric_reads(R, real):
    small = R.Dataset([h for h in real if h.series_id.startswith("rhai/")][:8])
    for mode in R.MODES:
        data = R.inject(small, mode=mode, seed=3)
        again = R.inject(small, mode=mode, seed=3)
        assert len(data) > 0
        for h, h2 in zip(data, again, strict=True):
            assert np.array_equal(h.values, h2.values)  # seeded
            truth = h.true_change_points()
            assert f_measure({0: truth}, truth).f == 1.0
            if mode == "whole":
                assert h.series_id in small
            else:
                sid, span = h.series_id.rsplit("@", 1)
                a, b = map(int, span.split("-"))
                assert b - a == len(h) >= 80
                orig = small[sid].values[a:b]
                # outside the injected shifts the values are the real ones
                first = truth[0] if truth.size else len(h)
                assert np.array_equal(h.values[:first], orig[:first])


def test_bench_real_labels_candidates_by_one_to_one_matching(bench):
    # 49 and 52 both lie within 5 of the change at 51: only the closer one is a true candidate
    assert bench.matched(np.array([51, 200]), np.array([10, 49, 52, 203])).tolist() == [False, False, True, True]
    assert bench.matched(np.array([], dtype=int), np.array([3])).tolist() == [False]
    assert "hybrid_cvm" in bench.SELECTED and "perfherder" in bench.SELECTED


def test_bench_real_window_cap_reaches_the_features(bench):
    """``--max-len`` (a development choice) changes the rows; the default is the product's cap."""
    from triage.core.history import Dataset, History
    from triage.features.windows import CANDIDATE_MAX_LEN

    n = 300
    values = 100 + np.random.default_rng(0).normal(0, 1, n)
    values[150:] += 5
    values[:40] += 3  # an older level that only a Pre longer than 110 commits reaches
    truth = np.zeros(n, dtype=bool)
    truth[150] = True
    data = Dataset([History("s", np.array([f"c{i}" for i in range(n)]), values, np.array([""] * n, dtype=object),
                            true_change=truth)])
    found = {"s": (np.array([150]), np.array([1.0]))}
    default = bench.candidate_rows(data, found, "perfherder")
    cols = bench.feature_names(default)
    same = bench.candidate_rows(data, found, "perfherder", max_len=CANDIDATE_MAX_LEN)
    longer = bench.candidate_rows(data, found, "perfherder", max_len=120)
    assert default["y"].tolist() == [1]
    assert np.array_equal(default[cols].to_numpy(), same[cols].to_numpy(), equal_nan=True)
    changed = [c for c in cols if not np.isclose(default[c].iloc[0], longer[c].iloc[0], equal_nan=True)]
    assert any(c.startswith("pre_") for c in changed)


def test_bench_real_table_renders_every_block(bench):
    """The published table: threshold choices, alarm rates and the development block together."""
    score = {"f1": 0.9, "precision": 1.0, "recall": 0.8}
    result = {
        "config": {"mode": "stable", "seed": 0, "model_seed": 1, "max_len": 60, "every": 1, "thresholds": "pooled",
                   "radius": 5, "train_seeds": [1], "kind": "rf"},
        "dev": {"radius_scores": {0: 0.7, 5: 0.75}, "mean": 0.75, "looks": {"rhai": {"perfherder": (0.6, 0.65, 1.0)}}},
        "compare": [{"detector": "perfherder", "alone": score, "pooled": {**score, "threshold": 0.3},
                     "validation": {**score, "threshold": 0.4}}],
        "parts": {"test": (2, 300, 3)},
        "test": [{"method": "perfherder", **score, "threshold": float("nan")}],
        "loso": [],
        "alarms": [{"detector": "perfherder", "alone": 0.28, "triage": 0.25}],
        "untouched": (372, 247392),
        "seconds": 60.0,
    }
    text = bench.markdown(result)
    assert "| perfherder | 0.900 | 0.300 | 0.900 | 100 % | 0.400 | 0.900 | 100 % |" in text
    assert "| perfherder | 0.28 | 0.25 |" in text
    assert "model seed 1" in text and "| perfherder | 0.600 -> 0.650 (100 %) |" in text


def test_bench_real_fresh_rows_are_the_newest_candidates_labelled(bench, tmp_path, monkeypatch):
    """``fresh_rows``: detectors on copies cut short; only candidates < HOLD_HORIZON from the end, labelled by the truth."""
    from triage.core.history import Dataset, History
    from triage.features.candidate_context import HOLD_HORIZON

    monkeypatch.setattr(bench, "OUT", tmp_path)
    monkeypatch.setattr(bench, "SELECTED", ["pelt", "cusum"])
    rng = np.random.default_rng(1)
    n = 180
    values = 100 + rng.normal(0, 1, n)
    values[120:] += 12
    truth = np.zeros(n, dtype=bool)
    truth[120] = True
    data = Dataset([History("p/s@0-180", np.array([f"c{i}" for i in range(n)]), values,
                            np.array([""] * n, dtype=object), true_change=truth)])
    rows = bench.fresh_rows(data, "t", n_jobs=1, log=lambda *_: None)
    assert len(rows) and set(rows["detector"]) <= {"pelt", "cusum"}
    ends = rows["series_id"].str.extract(r"#end(\d+)$")[0].astype(int).to_numpy()
    assert ((ends - rows["index"].to_numpy()) < HOLD_HORIZON).all()
    # the candidate at the change is true wherever its copy holds it, and its persistence is not measured yet
    at = rows[(rows["index"] - 120).abs() <= 2]
    assert len(at) and at["y"].all() and at["ctx_persist_after"].isna().all()
    assert (tmp_path / "real_detections_t_fresh0.pkl").is_file()


def test_bench_real_development_table_shows_the_fresh_look(bench):
    result = {"config": {"mode": "stable", "seed": 0, "every": 1, "train_seeds": [], "kind": "rf",
                         "fresh_seeds": [0, 1]},
              "dev": {"radius_scores": {0: 0.7}, "mean": 0.7, "looks": {"rhai": {"pelt": (0.6, 0.65, 1.0)}}},
              "fresh": {"detectors": {"pelt": (0.4, 0.55, 0.8, 30, 12)}, "auc": 0.81, "mean": 0.55},
              "seconds": 60.0}
    text = bench.development_markdown(result)
    assert "| pelt | 30 (12) | 0.400 -> 0.550 (0.800) |" in text
    assert "pooled AUC 0.810" in text and "seeds [0, 1]" in text


def test_bench_real_trains_on_every_development_project(bench):
    """``--train-on dev``: out-of-project looks for all three projects, one calibration map, a model of all rows."""
    from triage.core.history import Dataset, History

    rng = np.random.default_rng(3)
    n = 160
    parts: dict[str, list] = {"fit": [], "validation": []}
    found: dict[str, dict] = {"fit": {}, "validation": {}}
    for project, part in (("django-asv", "fit"), ("emg3d-bench", "fit"), ("rhai", "validation")):
        for k in range(6):
            sid = f"{project}/bench{k}@0-{n}"
            values = 100 + rng.normal(0, 1, n)
            truth = np.zeros(n, dtype=bool)
            if k % 2 == 0:
                values[80:] += 6
                truth[80] = True
            parts[part].append(History(sid, np.array([f"c{i}" for i in range(n)]), values,
                                       np.array([""] * n, dtype=object), true_change=truth))
            # a true candidate where there is a change, false ones in the noise
            idx = np.array(sorted({40, 80, 120})) if k % 2 == 0 else np.array([40, 120])
            found[part][sid] = (idx, np.linspace(1.0, 2.0, len(idx)))
    data = {p: Dataset(h) for p, h in parts.items()}
    cands = {p: {d: found[p] for d in bench.SELECTED} for p in found}
    clf, thresholds, by_choice, val_rows, fit_rows, dev = bench.scoring_model(
        data, cands, seed=0, n_jobs=1, log=lambda *_: None, kind="xgb-mono", train_on="dev")
    assert set(dev["looks"]) == {"django-asv", "emg3d-bench", "rhai"}
    # the shipped model learned from the validation project too, and carries the out-of-project map
    assert clf.n_train_["fit"] == len(fit_rows) + len(val_rows)
    assert clf.calibrator_ is not None and clf.suppress_radius_ in bench.RADII
    assert set(thresholds) == set(bench.SELECTED) and set(by_choice) == {"pooled", "validation"}
    p = bench.proba_of(clf, val_rows)
    assert p[val_rows["y"].to_numpy() == 1].min() > p[val_rows["y"].to_numpy() == 0].max()
    with pytest.raises(ValueError, match="train_on"):
        bench.scoring_model(data, cands, seed=0, n_jobs=1, log=lambda *_: None, train_on="all")


@pytest.fixture(scope="module")
def label_bench(bench):
    """benchmarks/bench_real_label.py, which imports bench_real and real_data (loaded above) by name."""
    return _benchmark_module("bench_real_label")


def _two_series():
    from triage.core.history import Dataset, History

    rng = np.random.default_rng(1)
    histories = []
    for name in ("a", "b"):
        n = 240
        values = 100 + rng.normal(0, 1, n)
        truth = np.zeros(n, dtype=bool)
        for c in (60, 150):
            values[c:] += 6
            truth[c] = True
        histories.append(History(name, np.array([f"c{i}" for i in range(n)]), values,
                                 np.array([""] * n, dtype=object), true_change=truth))
    # per detector, series -> (alert indices, scores): two true alerts and three false ones each
    alerts = np.array([30, 61, 100, 149, 200])
    found = {det: {name: (alerts, np.ones(len(alerts))) for name in ("a", "b")} for det in ("perfherder", "binseg")}
    return Dataset(histories), found


def test_half_triaged_history_labels_by_the_truth_and_hides_the_rest(label_bench):
    from triage.core import labels

    data, found = _two_series()
    labelled = label_bench.half_triaged(data, found["perfherder"], 0.5, seed=3)
    for h in labelled:
        at = np.array([30, 61, 100, 149, 200])
        truth = h.truth_label[at].tolist()
        assert truth == [labels.FALSE_POSITIVE, labels.TRUE_POSITIVE, labels.FALSE_POSITIVE,
                         labels.TRUE_POSITIVE, labels.FALSE_POSITIVE]
        # a triaged alert carries its truth; the others wait as not_triaged; no other commit is an alert
        assert all(lab in (t, labels.NOT_TRIAGED) for lab, t in zip(h.labels[at], truth, strict=True))
        assert (h.labels != labels.NONE).sum() == len(at)
    hidden = sum((h.labels == labels.NOT_TRIAGED).sum() for h in labelled)
    assert 0 < hidden < 10
    again = label_bench.half_triaged(data, found["perfherder"], 0.5, seed=3)
    assert all((x.labels == y.labels).all() for x, y in zip(labelled, again, strict=True))


def test_labelling_rows_hold_every_alert_once_with_label_time_windows(label_bench):
    from triage.core import labels

    data, found = _two_series()
    rows = label_bench.labelling_rows(data, found, seed=0)
    # 2 detectors x 2 series x 5 alerts, each untriaged in exactly one of the two draws
    assert len(rows) == 20
    assert sorted(rows.groupby(["detector", "series_id", "index"]).size().unique()) == [1]
    assert (rows["truth_label"] == labels.TRUE_POSITIVE).sum() == 8
    assert {"pre_series_length", "after_series_length"} <= set(rows.columns)
