"""Walkthrough s18: reproducing a figure and a model, and upgrading with artefacts of an older version.

Defects found (what a user did, what went wrong, what happens now):

1. Ran ``triage evaluate --seed 4294967295`` (the largest seed the CLI
   takes): repetition 1 got the seed 4294967296, which scikit-learn refuses.
   The random split read every refusal as a failed draw and ended in "could
   not put both classes in train, validation and test in 20 tries ... label
   more candidates"; the time split stopped with scikit-learn's "The
   'random_state' parameter of RandomForestClassifier must be ... Got
   4294967296". A grouped split's retries (seed + 100,003 per try) overflowed
   the same way for any seed above about 4.29e9 - 100,003. Now the seed of a
   repetition or retry is wrapped into [0, 2**32) (``derived_seed``); below
   the end of the range it is the plain sum, so every other seed's results
   are unchanged.
2. Ran ``triage evaluate --out results/ --no-track`` to reproduce Table 1:
   the folder held records, summary and differences but nothing saying which
   data, seed, models, splits, threshold, features or library versions made
   them (they went to MLflow only, and with ``--no-track`` nowhere). Now
   ``settings.json`` beside them records the settings, the rows'
   ``data_hash`` and the library versions.
3. Generated ``triage synth --preset realnoise`` to rebuild the bundled
   models' training data: ``dataset.json`` recorded preset, seed and config,
   but not what else the rows depend on: the fitted noise profiles
   (``noise_profiles.json``, rewritten when refitted: same preset and seed,
   other rows), numpy's version (its generators' draws may change between
   versions) or a digest to check a copy of the history file against. Now it
   records ``noise_profiles_sha256`` (realnoise), ``libraries`` and
   ``history_sha256``.
4. Loaded a model directory written by a newer changepoint-triage (manifest
   ``format_version`` 2): "model format version 2; this version reads up to
   1", without saying what to do. Now it says the model comes from a newer
   changepoint-triage: upgrade it, or retrain.
5. Loaded a manifest with ``"format_version": true`` or ``0`` (no version
   ever written): read as format 1 and loaded. Now refused as not a model
   format version.
6. Loaded a model whose manifest does not record the scikit-learn (or, for
   XGBoost, the xgboost) version: "saved with scikit-learn None, this is
   1.9.1: retrain, or install the saved version" (a version nobody can
   install); for XGBoost "saved with xgboost None ...: cannot read it". And
   an XGBoost model saved with a newer major version ended in "cannot read
   it", without a way out. Now: the manifest does not record the version,
   retrain; and "install xgboost N.x, or retrain the model here".
7. Trained with ``triage train --test-size 0.125`` (or 0.004): the manifest's
   ``metrics.heldout`` read "grouped, 12% of series" ("0% of series" while a
   hold-out was measured); the fraction itself was nowhere in it. Now
   "grouped, 12.5% of series" and ``metrics.test_size`` 0.125.
8. Trained with ``--features fs.json`` and used the model from another
   folder: the manifest's ``feature_set_file`` was "fs.json", relative to a
   working directory nobody recorded. Now the absolute path.
9. Kept a folder ``.m.tmp-backup`` (notes, an old model) beside the model
   directory ``m``, then ran ``triage train --out m``: the folder was deleted,
   whole and without a word, as a killed writer's temporary directory (the
   name carries no pid, as older versions' did). Now only a directory holding
   nothing but a model's files is removed.
10. Ran ``triage models list`` (or ``train``) on an ``mlruns.db`` a newer
    MLflow had written: "Detected out-of-date database schema (found version
    ..., but expected ...) ... run 'mlflow db upgrade'", which cannot upgrade
    a schema this MLflow does not know. Now: the store was written by a newer
    MLflow, upgrade mlflow or give another --tracking-uri; the file is left as
    it was. (An older store keeps MLflow's advice to run ``mlflow db
    upgrade``.)

Checked and reproducible (guarded below where cheap): ``triage synth`` twice,
under other PYTHONHASHSEED values and from another working directory gives
byte-identical files; ``triage train`` with one seed gives the same manifest
apart from ``created`` and ``metrics.fit_seconds`` and the same decisions
under ``--n-jobs`` 1 or 2 and any PYTHONHASHSEED (rf, svm, xgb; adaptive,
``--window 4``, ``--candidate-windows``, ``--shift-measures``); so do
``select-features --seed`` and ``evaluate`` (records apart from the times).
Not byte-identical, by the format: ``model.skops`` (and so
``checksums.sha256``) differs from run to run, because skops names the arrays
inside the zip by their memory address (``id()``) and stamps each entry with
the time; the XGBoost file ``model.ubj`` is byte-identical.

Checked by hand, not in a test (it needs another installation or the real
data): an XGBoost model fitted and saved by xgboost-cpu 2.1.4 (the oldest
pyproject allows), put into a model directory recording that version, loads
here (xgboost 3.2.0) without a warning and gives exactly 2.1.4's
probabilities, and the compiled predictor (``training.compiled``) gives the
same. ``benchmarks/fit_noise.py`` refitted to a scratch file twice (other
PYTHONHASHSEED) gives byte-identical profiles, which differ from the
committed ``noise_profiles.json`` only in the last bits of some
``wander_share`` / ``wander_phi`` quantiles (relative 1e-15): a refit would
rewrite the file and move ``realnoise`` values in their last bits, which the
``noise_profiles_sha256`` of ``dataset.json`` now makes visible. A
``--window 4`` model samples its ordinary commits with seed 0 whatever
``--seed`` says (``online_matrix`` is called without it): reproducible, but
``--seed`` does not vary that sample.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_training import make_matrix, rewrite_manifest

from triage.training import evaluation
from triage.training.classifier import TriageClassifier
from triage.training.evaluation import SplitError, evaluate, split_indices
from triage.training.model_files import ModelFileError, load_model, save_model


@pytest.fixture(scope="module")
def matrix() -> pd.DataFrame:
    return make_matrix(40, 3, seed=18)


@pytest.fixture(scope="module")
def rf_model(matrix) -> TriageClassifier:
    return TriageClassifier(model="rf", n_estimators=5).fit(matrix)


@pytest.fixture(scope="module")
def xgb_model(matrix) -> TriageClassifier:
    return TriageClassifier(model="xgb", n_estimators=5).fit(matrix)




# ---------------------------------------------------------------------- 1: seeds at the end of the range


def test_evaluate_takes_the_largest_seed(matrix):
    result = evaluate(
        matrix,
        models=["rf"],
        splits=["random", "time"],
        n_splits=2,
        random_state=2**32 - 1,
        progress=False,
        model_params={"rf": {"n_estimators": 5}},
    )
    assert sorted(result.records["seed"].unique()) == [0, 2**32 - 1]
    assert result.records["auc"].notna().all()


def test_split_retries_stay_in_the_seed_range():
    # Four series holding both classes, six one class only: this seed's first two draws leave a part
    # with one class, its third does not (found by trying the seeds below 2**32).
    y = np.array([1, 0] * 4 + [1, 1] * 3 + [0, 0] * 3)
    groups = np.repeat([f"s{i}" for i in range(10)], 2)
    seed = 2**32 - 2
    try:
        parts = split_indices("grouped", y, groups, np.arange(len(y), dtype=float), seed=seed)
    except (
        SplitError
    ) as exc:  # a true failure must say so, never hide scikit-learn's refusal of the seed
        pytest.fail(f"the retries were refused: {exc}")
    assert sum(len(p) for p in parts) == len(y)
    assert evaluation.derived_seed(5, 7) == 12 and evaluation.derived_seed(2**32 - 1, 1) == 0


# ---------------------------------------------------------------------- 2: what a results folder came from


def test_evaluation_folder_records_its_settings(matrix, tmp_path):
    result = evaluate(
        matrix,
        models=["rf"],
        splits=["grouped"],
        n_splits=1,
        random_state=7,
        progress=False,
        model_params={"rf": {"n_estimators": np.int64(5)}},
    )
    paths = result.save(tmp_path / "eval")
    settings = json.loads(paths["settings"].read_text())
    assert settings["random_state"] == 7
    assert (
        settings["data_hash"] == result.settings["data_hash"] and len(settings["data_hash"]) == 64
    )
    assert settings["models"] == ["rf"] and settings["splits"] == ["grouped"]
    assert settings["model_params"] == {"rf": {"n_estimators": 5}}
    assert settings["libraries"]["scikit-learn"]


# ---------------------------------------------------------------------- 3: synthetic data says what it depends on


def test_synthetic_dataset_records_versions_profiles_and_digest(tmp_path):
    from triage import noise_profiles
    from triage.synthetic import SyntheticConfig, write_synthetic

    config = SyntheticConfig(n_series=2, length_min=100, length_max=120, noise_profile="real")
    first = write_synthetic(tmp_path / "a", config, seed=3, fmt="csv")
    second = write_synthetic(tmp_path / "b", config, seed=3, fmt="csv")
    assert first.read_bytes() == second.read_bytes()
    meta = json.loads((tmp_path / "a" / "dataset.json").read_text())
    assert meta["history_sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()
    profile_bytes = (
        Path(noise_profiles.__file__).parent / noise_profiles.PROFILE_FILE
    ).read_bytes()
    assert meta["noise_profiles_sha256"] == hashlib.sha256(profile_bytes).hexdigest()
    assert meta["libraries"]["numpy"] == np.__version__
    assert (tmp_path / "a" / "dataset.json").read_bytes() == (
        tmp_path / "b" / "dataset.json"
    ).read_bytes()
    plain = write_synthetic(tmp_path / "c", SyntheticConfig(n_series=2), seed=3, fmt="csv")
    assert json.loads((plain.parent / "dataset.json").read_text())["noise_profiles_sha256"] is None


# ---------------------------------------------------------------------- 4-6: model directories of other versions


def test_model_of_a_newer_format_says_what_to_do(rf_model, tmp_path):
    path = save_model(rf_model, tmp_path / "m")
    rewrite_manifest(path, lambda m: m.update({"format_version": 2}))
    with pytest.raises(
        ModelFileError, match="newer changepoint-triage.*upgrade changepoint-triage"
    ):
        load_model(path)


@pytest.mark.parametrize("version", [True, 0, -1, "1", None])
def test_manifest_without_a_format_version_is_refused(version, rf_model, tmp_path):
    path = save_model(rf_model, tmp_path / "m")
    rewrite_manifest(path, lambda m: m.update({"format_version": version}))
    with pytest.raises(ModelFileError, match="is not a model format version"):
        load_model(path)


def test_manifest_without_the_library_version_says_so(rf_model, xgb_model, tmp_path):
    path = save_model(rf_model, tmp_path / "rf")
    rewrite_manifest(path, lambda m: m["libraries"].pop("scikit-learn"))
    with pytest.raises(ModelFileError, match="does not record the scikit-learn version") as caught:
        load_model(path)
    assert "None" not in caught.value.problem
    path = save_model(xgb_model, tmp_path / "xgb")
    rewrite_manifest(path, lambda m: m["libraries"].update({"xgboost": None}))
    with pytest.raises(ModelFileError, match="does not record the xgboost version"):
        load_model(path)


def test_newer_xgboost_says_what_to_do_and_older_loads(xgb_model, matrix, tmp_path):
    path = save_model(xgb_model, tmp_path / "new")
    rewrite_manifest(path, lambda m: m["libraries"].update({"xgboost": "99.1.0"}))
    with pytest.raises(ModelFileError, match="install xgboost 99.x, or retrain"):
        load_model(path)
    old = save_model(xgb_model, tmp_path / "old")
    rewrite_manifest(old, lambda m: m["libraries"].update({"xgboost": "2.1.4"}))
    np.testing.assert_array_equal(
        load_model(old).predict_proba(matrix), xgb_model.predict_proba(matrix)
    )


def test_model_of_an_older_manifest_without_later_keys_loads(rf_model, matrix, tmp_path):
    # run_id (tracking), extra and metrics came with later writers or are optional: a manifest without them loads.
    path = save_model(rf_model, tmp_path / "m", window="adaptive")
    rewrite_manifest(
        path, lambda m: [m.pop(k, None) for k in ("run_id", "extra", "metrics", "created")]
    )
    np.testing.assert_array_equal(
        load_model(path).predict_proba(matrix), rf_model.predict_proba(matrix)
    )


# ---------------------------------------------------------------------- reproducible fits (guards)


@pytest.mark.parametrize("model", ["rf", "xgb"])
def test_same_seed_same_model_whatever_the_threads(model, matrix, tmp_path):
    one = TriageClassifier(
        model=model, n_estimators=10, threshold="fbeta:1", random_state=4, n_jobs=1
    ).fit(matrix)
    two = TriageClassifier(
        model=model, n_estimators=10, threshold="fbeta:1", random_state=4, n_jobs=2
    ).fit(matrix)
    np.testing.assert_array_equal(one.predict_proba(matrix), two.predict_proba(matrix))
    assert one.threshold_ == two.threshold_ and one.data_hash_ == two.data_hash_
    a = json.loads((save_model(one, tmp_path / "a") / "manifest.json").read_text())
    b = json.loads((save_model(two, tmp_path / "b") / "manifest.json").read_text())
    for m in (a, b):
        m.pop("created")
    assert a == b


# ---------------------------------------------------------------------- 7-8: what the manifest says of the hold-out and the feature set


def test_manifest_records_the_holdout_fraction_and_where_the_feature_set_was(
    matrix, tmp_path, monkeypatch
):
    from triage.training.pipeline import train

    monkeypatch.chdir(tmp_path)
    Path("fs.json").write_text(json.dumps(["pre_mean", "after_mean", "pre_sd", "after_sd"]))
    result = train(
        matrix,
        "m",
        features="fs.json",
        test_size=0.125,
        track=False,
        model_params={"n_estimators": 5},
    )
    manifest = json.loads((result.model_dir / "manifest.json").read_text())
    assert manifest["metrics"]["heldout"] == "grouped, 12.5% of series"
    assert manifest["metrics"]["test_size"] == 0.125
    assert manifest["feature_set_file"] == str(tmp_path / "fs.json")


# ---------------------------------------------------------------------- 9: folders that share a writer's name


def test_a_users_folder_named_like_a_temporary_survives_training(rf_model, tmp_path):
    import subprocess

    proc = subprocess.Popen(["true"])  # a pid that has exited
    proc.wait()
    backup = tmp_path / ".m.tmp-backup"
    kept = tmp_path / f".m.tmp-{proc.pid}-notes"
    stale = tmp_path / f".m.tmp-{proc.pid}-abcdefgh"
    for folder in (backup, kept, stale):
        folder.mkdir()
    (backup / "notes.txt").write_text("precious")
    (kept / "model.skops").write_bytes(b"half")
    (kept / "eval").mkdir()
    (stale / "model.skops").write_bytes(b"half")
    save_model(rf_model, tmp_path / "m")
    assert (backup / "notes.txt").read_text() == "precious"
    assert (kept / "eval").is_dir()
    assert not stale.exists()  # a dead writer's, holding a model's files only: removed as before


# ---------------------------------------------------------------------- 10: a tracking store of a newer MLflow


def test_tracking_store_of_a_newer_mlflow_says_so(tmp_path):
    # MLflow's own schema check on a store at a revision it never heard of (as a newer MLflow leaves
    # it), through the mapping every tracking call goes through. Creating a real store first takes
    # MLflow's migrations (seconds); `triage models list` on such a store was checked by hand.
    import sqlite3

    import sqlalchemy
    from mlflow.store.db import utils

    from triage.training.tracking import TrackingError, store_errors

    def refusal(revision: str) -> str:
        db = tmp_path / f"{revision}.db"
        con = sqlite3.connect(db)
        con.executescript(
            f"CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);"
            f"INSERT INTO alembic_version VALUES ('{revision}');"
        )
        con.close()
        engine = sqlalchemy.create_engine(f"sqlite:///{db}")
        try:
            with pytest.raises(TrackingError) as caught, store_errors(f"sqlite:///{db}"):
                utils._verify_schema(engine)
        finally:
            engine.dispose()
        return str(caught.value)

    newer = refusal("ffffffffffff")
    assert "written by a newer MLflow" in newer and "upgrade mlflow" in newer
    assert "mlflow db upgrade" not in newer
    older = refusal("0584bdc529eb")  # MLflow 1.x's: `mlflow db upgrade` is the way, as MLflow says
    assert "mlflow db upgrade" in older and "newer MLflow" not in older
