"""Four defects, each with the inputs that showed it.

1. An alert at a series' first commit (index 0: Pre is empty) got a P(true)
   from the empty-window fill values in ``triage label`` and ``triage score``;
   it is now ``not_scorable``, without P(true), with a warning naming it.
2. A feature-set file chosen at one window was used with another ``--window``
   unchecked; ``train`` / ``evaluate`` now refuse it naming the file and both.
3. ``evaluate --features FILE`` naming columns the matrix lacks blamed the
   data file; the error now names the features file (and a file that is no
   feature set says so).
4. ``OnlineTriage.process_many`` with a state store and an id holding a lone
   surrogate (undecodable bytes) raised a bare ``UnicodeEncodeError``; it is
   now a :class:`RejectedCommit` naming the series and commit, and the store
   keeps what it held.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_cli import flat, invoke, run_triage
from helpers_training import make_matrix

from triage.batch_label import label_candidates
from triage.candidate_files import read_candidates
from triage.core.history import Dataset
from triage.features.feature_sets import FeatureSet, check_window, save_feature_set
from triage.inference import NOT_SCORABLE, NotScorable, load_classifier
from triage.model_lookup import resolve_model
from triage.online.loop import OnlineTriage
from triage.online.records import RejectedCommit
from triage.online.state_store import StateStore
from triage.scoring import score_candidates

MODELS = Path(__file__).resolve().parents[1] / "models"


# ---------------------------------------------------------------------- 1. first commit


def _step_frame() -> pd.DataFrame:
    """Two series of 80 commits with a 20 % step at commit 40; untriaged alerts at commits 0 and 40."""
    rng = np.random.default_rng(1)
    rows = []
    for sid in ("s1", "s2"):
        values = np.r_[rng.normal(100, 1, 40), rng.normal(120, 1, 40)]
        for i, x in enumerate(values):
            rows.append({"series_id": sid, "commit": f"{sid}c{i:02d}", "value": round(float(x), 3),
                         "label": "not_triaged" if i in (0, 40) else ""})
    return pd.DataFrame(rows)


def test_label_reports_an_alert_at_the_first_commit_as_not_scorable_with_a_warning():
    dataset = Dataset.from_frame(_step_frame())
    clf = load_classifier(resolve_model("default", "alerts"))
    with pytest.warns(NotScorable) as caught:
        out = label_candidates(dataset, clf, which="untriaged")
    first = out[out["index"] == 0]
    assert list(first["commit"]) == ["s1c00", "s2c00"]
    assert (first["classification"] == NOT_SCORABLE).all()
    assert first["p_true"].isna().all() and first["p_false"].isna().all()
    assert first["explanation"].str.contains("first commit of its series").all()
    message = " ".join(str(w.message) for w in caught)
    assert "series 's1', commit 's1c00'" in message and "series 's2', commit 's2c00'" in message
    # The step at commit 40 is still judged, and judged true.
    later = out[out["index"] == 40]
    assert (later["classification"] == "true_positive").all() and (later["p_true"] > 0.5).all()


def test_score_reports_a_candidate_at_the_first_commit_as_not_scorable(tmp_path):
    dataset = Dataset.from_frame(_step_frame())
    cands = tmp_path / "cands.csv"
    cands.write_text("series_id,commit\ns1,s1c00\ns1,s1c40\ns2,s2c40\n")
    clf = load_classifier(resolve_model("default", "scoring"))
    with pytest.warns(NotScorable, match=r"series 's1', commit 's1c00'"):
        out = score_candidates(dataset, read_candidates(cands), clf)
    assert list(out["commit"]) == ["s1c00", "s1c40", "s2c40"]  # input order kept, no row dropped
    assert out["classification"].tolist()[0] == NOT_SCORABLE and np.isnan(out["p_true"].iloc[0])
    assert out["p_true"].iloc[1:].notna().all()
    assert set(out["classification"].iloc[1:]) <= {"true_positive", "false_positive"}
    # Threshold 0 calls every alert true (triage off): the unjudged one is kept as the detector gave it.
    with pytest.warns(NotScorable, match="called true at threshold 0"):
        off = score_candidates(dataset, read_candidates(cands), clf, threshold=0.0)
    assert (off["classification"] == "true_positive").all() and np.isnan(off["p_true"].iloc[0])


def test_no_warning_when_no_alert_sits_at_a_first_commit():
    frame = _step_frame()
    frame.loc[frame["commit"].str.endswith("c00"), "label"] = ""
    clf = load_classifier(resolve_model("default", "alerts"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotScorable)
        out = label_candidates(Dataset.from_frame(frame), clf, which="untriaged")
    assert out["p_true"].notna().all() and NOT_SCORABLE not in set(out["classification"])


def test_triage_label_prints_the_warning_line_and_writes_the_row(tmp_path):
    data = tmp_path / "first.csv"
    _step_frame().to_csv(data, index=False)
    out = tmp_path / "decisions.csv"
    res = run_triage("label", "--data", data, "--out", out)
    assert res.returncode == 0, res.stderr
    assert ("warning: series 's1', commit 's1c00'; series 's2', commit 's2c00': 2 alerts with no commit before them "
            "in their window (at the first commit of their series") in flat(res.stderr)
    rows = pd.read_csv(out, keep_default_na=False)
    first = rows[rows["commit"] == "s1c00"].iloc[0]
    assert first["classification"] == NOT_SCORABLE and first["p_true"] == ""


# ---------------------------------------------------------------------- 2. feature set's window


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("s14") / "matrix.parquet"
    make_matrix(100, 3, seed=7).to_parquet(path)
    return path


def _feature_set(path: Path, window: str | None) -> Path:
    """A feature-set file as ``triage select-features --window W`` writes it."""
    fs = FeatureSet(names=["pre_mean", "after_mean"], fitness=0.8, metric="accuracy", generations=1,
                    n_evaluated=4, seed=0, data_hash="0" * 64, created="2026-11-24T00:00:00+00:00")
    if window is not None:
        fs.extra["window"] = window
    return save_feature_set(fs, path)


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_a_feature_set_chosen_at_window_0_is_refused_for_window_3(command, matrix_file, tmp_path):
    features = _feature_set(tmp_path / "fs.json", "0")
    out = tmp_path / "model"
    extra = ["--out", out] if command == "train" else ["--splits", "1"]
    code, output = invoke([command, "--matrix", matrix_file, "--features", features, "--window", "3",
                           "--no-track", *extra])
    assert code == 2, output
    assert (f"error: {features}: feature set was chosen for window 0, not for --window 3" in flat(output))
    assert not out.exists()


def test_the_window_check_accepts_the_same_window_and_a_file_without_one(tmp_path):
    check_window(_feature_set(tmp_path / "a.json", "Adaptive"), "adaptive")
    check_window(_feature_set(tmp_path / "b.json", "3"), 3)
    check_window(_feature_set(tmp_path / "c.json", None), 0)
    bare = tmp_path / "d.json"
    bare.write_text(json.dumps(["pre_entropy"]))
    check_window(bare, 5)
    from triage.core.errors import InputError

    with pytest.raises(InputError, match="chosen for window adaptive, not for --window 0"):
        check_window(_feature_set(tmp_path / "e.json", "adaptive"), 0)


def test_train_with_the_matching_window_still_trains(matrix_file, tmp_path):
    features = _feature_set(tmp_path / "fs.json", "0")
    out = tmp_path / "model"
    code, output = invoke(["train", "--matrix", matrix_file, "--features", features, "--window", "0",
                           "--out", out, "--no-track"])
    assert code == 0, output
    import json

    manifest = json.loads((out / "manifest.json").read_text())  # a model, not any file
    assert manifest["window"] in (0, "0") and manifest["features"]


# ---------------------------------------------------------------------- 3. evaluate --features


def test_evaluate_names_the_features_file_for_a_column_the_matrix_lacks(matrix_file, tmp_path):
    features = tmp_path / "fs.json"
    features.write_text(json.dumps(["pre_mean", "no_such_column"]))
    code, output = invoke(["evaluate", "--matrix", matrix_file, "--features", features, "--splits", "1",
                           "--no-track"])
    assert code == 2, output
    assert f"error: {features}: names column(s) the feature matrix lacks: no_such_column" in flat(output)
    assert f"error: {matrix_file}" not in flat(output)


def test_evaluate_says_a_json_file_is_not_a_feature_set(matrix_file, tmp_path):
    features = tmp_path / "bogus.json"
    features.write_text(json.dumps({"foo": 1}))
    code, output = invoke(["evaluate", "--matrix", matrix_file, "--features", features, "--no-track"])
    assert code == 2, output
    assert f"error: {features}: not a feature-set file" in flat(output)


def test_evaluate_names_a_missing_features_file(matrix_file, tmp_path):
    features = tmp_path / "missing.json"
    code, output = invoke(["evaluate", "--matrix", matrix_file, "--features", features, "--no-track"])
    assert code == 2, output
    # rich's usage-error box breaks a long path mid-word: compare paths without whitespace
    joined = "".join(flat(output).split())
    assert "--features" in flat(output) and str(features) in joined and "no such file" in flat(output)
    assert str(matrix_file) not in joined


# ---------------------------------------------------------------------- 4. surrogate ids in the online loop


@pytest.mark.parametrize(
    ("record", "named"),
    [
        (("bad\udcff", "c1", 1.0), "series id 'bad\\udcff' is not Unicode text"),
        (("good", "c\udcff", 100.0), "commit id 'c\\udcff' is not Unicode text"),
    ],
)
def test_a_surrogate_id_with_a_store_is_a_rejected_commit_and_the_store_is_kept(record, named, tmp_path):
    db = tmp_path / "state.db"
    loop = OnlineTriage.from_model_dir(MODELS / "online-w4", explain="none", store=StateStore(db))
    values = [100.0, 101.0] * 6
    for i, x in enumerate(values[:8]):
        loop.process_one("good", f"c{i}", x)
    before = loop.store.n_arrivals(), loop.store.n_decisions(), loop.store.series_ids()
    # The bad record after a good one in the same batch: the whole batch is refused.
    with pytest.raises(RejectedCommit) as err:
        loop.process_many([("good", "c8", values[8]), record])
    assert err.value.series == record[0] and err.value.commit == record[1]
    assert named in str(err.value) and "0xff" in str(err.value) and "state store" in str(err.value)
    assert not isinstance(err.value, UnicodeError)
    assert (loop.store.n_arrivals(), loop.store.n_decisions(), loop.store.series_ids()) == before
    # The loop goes on: c8 is taken now, as if the refused batch had never come.
    loop.process_one("good", "c8", values[8])
    loop.store.close()
    with StateStore(db) as store:  # opens: its checks pass
        assert store.n_arrivals() == before[0] + 1 and store.series_ids() == ["good"]
