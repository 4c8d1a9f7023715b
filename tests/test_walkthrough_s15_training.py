"""Defects found training on one's own labelled history built from the real histories.

The walk-through: 20 real series (four of each source project), candidates
from ``triage candidates`` (perfherder and binseg), each marked true or false
as a reviewer would (the median of the 10 commits after it against the 10
before, in units of the commit-to-commit noise), then ``triage train``,
``evaluate``, ``select-features`` and ``label`` on that history.

1. The SVM's Platt scaling, fitted on the validation part (a few series),
   could come out with a negative slope and turn the margin's order round:
   the held-out model of ``triage train --model svm`` had AUC 0.32 where its
   own margin ranked the same candidates at 0.68, and ``triage models list``
   showed 0.322 for it.
2. With few false alerts (3 in one series), the stratified validation split
   rounded that class down to no row: ``triage train --model svm
   --test-size 0`` ended in an internal error (Platt scaling on one class),
   and a learned threshold (``--threshold fbeta:1``) was chosen on
   validation rows holding no false alert at all. With a single false alert
   the split itself raised (an internal error); it is now an error naming
   the data.
3. ``--model models:/NAME/VERSION`` (or ``@ALIAS``) downloads the version
   into a cache keyed by name and version alone. Version numbers start at 1
   in every store: with a second tracking store (another project, or the
   store made anew) the first store's cached model was returned, silently,
   for the other store's version. A version whose artifacts MLflow cannot
   fetch (an ``s3://`` source without boto3) was an internal error.
4. ``triage train --help`` said ordinary commits (``--ordinary-per-series``)
   and the ``fbeta:1`` default come with ``--window 0``; every fixed window
   builds an online model's rows (``--window 3``: an online model deciding
   3 commits later), as the README's ``--window 3`` example does.
5. ``triage train --register a/b`` trained the model and failed only when
   MLflow refused the name ("the tracking store cannot be used"), and
   ``--register x@y`` registered a name that ``--model models:/x@y/1`` or
   ``models:/x@y@champion`` cannot name (read as model ``x``, alias ``y``).
6. ``triage models promote NAME 1 --alias v3`` (or ``latest``, or one with a
   space) said "the tracking store cannot be used" for an alias MLflow
   reserves or refuses; the store was fine.
7. A tracking store that already holds runs in MLflow's file layout
   (``--tracking-uri file:///.../mlruns``, MLflow's default for years) is
   refused by MLflow 3 in one long line whose way out comes last; the error
   cut it at 300 characters, ending "See htt", without the opt-out.
8. ``triage train --model xgb --param max_depth=-1`` (or ``subsample=2``)
   and ``triage window-study --model xgb`` with such a value ended in an
   internal error: XGBoost checks its values only when it fits.
9. ``triage evaluate --out MODEL_DIR``, ``triage window-study --out
   MODEL_DIR`` and ``triage synth --out MODEL_DIR`` wrote their files into
   the model directory (only folders *inside* one were refused), and
   ``triage demo --out`` into one or a folder inside one: the model no
   longer loaded ("file(s) not covered by the checksums").
10. ``triage train --test-size 0.95`` on 20 series left one series to fit
    on, which scikit-learn could not split into fit and validation parts:
    an internal error instead of the split error that says what to change.
11. ``triage select-features --out -`` wrote the feature set to standard
    output between the progress line and the summary lines, so
    ``> fs.json`` held no JSON that ``train --features`` could read.
12. ``triage models list --labels FILE`` on a store whose decisions were
    made without a model (imported, or ``serve`` without ``--model``)
    printed the agreement table's headers over no row.
13. A feature-set file (a hand-edited list) naming the metadata column
    ``index`` (the candidate's position in its series) trained a model on
    it without a word; naming ``label`` was blamed on the data ("fm.parquet:
    feature columns must be numeric").
14. ``triage evaluate`` with the time split on a history whose false alerts
    were all labelled early: the later parts held true alerts only, and the
    SVM's Platt scaling failed on one class, shown as a usage error with no
    option ("Invalid value: This solver needs samples of at least 2
    classes"); the time split never checked its parts as the others do.
15. ``triage train --out MODEL_DIR`` re-training into a model directory
    that also held the user's own files (notes, an ``eval/`` folder of
    ``evaluate`` results) replaced the whole folder: they were deleted.
16. ``triage train --preset SMALL`` (and ``evaluate`` / ``window-study``)
    said "Invalid value: unknown preset 'SMALL'" without naming the option,
    as ``synth --preset`` and every other bad option do.
17. ``triage train --out`` naming a file or a folder of the user's was
    refused only after the data was read, overlaid with ``--labels`` and
    its features extracted (25 s for ``--preset default``; the README's
    realnoise run takes minutes), not with the other option checks; so was
    a ``--tracking-uri`` that is no MLflow store (a labels store: 20 s for
    ``--preset default``), which ``evaluate`` checks first.
18. ``triage train --candidate-windows`` (a scoring model, with pair_* and
    ctx_* features) registered as ``triage-<kind>-adaptive``, the name of
    the adaptive-window alerts models, and ``models list`` showed its window
    as "adaptive": promoting its version made ``models:/...@champion`` a
    model that ``triage label`` refuses.
19. ``triage train --labels ... --scheduler ADDRESS`` (and with
    ``--candidate-windows``) ignored ``--scheduler``: the extraction ran on
    this machine, and an address with no scheduler went unnoticed, where
    the same command without ``--labels`` is refused naming the option.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA
from helpers_cli import flat, invoke
from sklearn.metrics import roc_auc_score

from triage.features.extract import extract_features
from triage.features.matrix import training_data
from triage.loaders import load
from triage.training.classifier import TriageClassifier
from triage.training.evaluation import split_indices

SERIES = [
    "django-asv/query_benchmarks.query_all_conv.benchmark.QueryAllConv.time_query_all_conv/ubuntu-latest/conda-py3.12",
    "django-asv/query_benchmarks.query_distinct.benchmark.QueryDistinct.time_query_distinct/ubuntu-latest/conda-py3.10",
    "django-asv/query_benchmarks.query_utils_q_create.benchmark.QCreate.time_create_small/ubuntu-latest/conda-py3.12",
    "django-asv/req_resp_benchmarks.http_methods.benchmark.HttpMethods.time_post_method/ubuntu-latest/conda-py3.10",
    "emg3d-bench/memory.ResidualMemory.peakmem_residual('small')/meerkat/conda-py3.8",
    "emg3d-bench/memory.SolverMemory.peakmem_solver(True;'vti')/meerkat/conda-py3.8",
    "emg3d-bench/time.SolverTimeMG.time_solver(False;False)/meerkat/conda-py3.8",
    "emg3d-bench/time.SolverTimeSSL.time_solver(False)/meerkat/conda-py3.8",
    "empymod-bench/transform.Hankel.time_fht_lagged('Big')/dtr-latitude/conda-py3.6-numpy1.17",
    "empymod-bench/transform.Hankel.time_fht_splined('Small')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Hankel.time_hquad('Big')/dtr-latitude/conda-py3.6",
    "empymod-bench/transform.Hankel.time_hqwe_splined('Small')/dtr-latitude/conda-py3.6-numpy1.17",
    "otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads1({aggregationTemporality:CUMULATIVE;cardinality:1;"
    "instrumentTypeAndAggregation:UP_DOWN_COUNTER_SUM})/otel-bench-runner",
    "otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads1({aggregationTemporality:DELTA;cardinality:1;"
    "instrumentTypeAndAggregation:HISTOGRAM_BASE2_EXPONENTIAL})/otel-bench-runner",
    "otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads4({aggregationTemporality:CUMULATIVE;cardinality:100;"
    "instrumentTypeAndAggregation:UP_DOWN_COUNTER_SUM})/otel-bench-runner",
    "otel-java/io.opentelemetry.sdk.trace.SpanBenchmark.simpleSpanStartAddEventEnd_05Threads/otel-bench-runner",
    "rhai/bench_engine_register_fn/gha-ubuntu-latest",
    "rhai/bench_eval_array_small_get/gha-ubuntu-latest",
    "rhai/bench_eval_call_expression/gha-ubuntu-latest",
    "rhai/bench_parse_optimize_simple/gha-ubuntu-latest",
]


def _reviewer_labels(history: pd.DataFrame, candidates: pd.DataFrame) -> list[str]:
    """A reviewer's call per row of ``history``: true when the median moved by more than
    4 commit-to-commit noise scales between the 10 commits before and the 10 from it."""
    calls: dict[tuple[str, str], str] = {}
    for sid, rows in history.groupby("series_id", sort=False):
        v = rows["value"].to_numpy()
        noise = np.median(np.abs(np.diff(v))) / np.sqrt(2) + 1e-12
        for _, c in candidates[candidates["series_id"] == sid].iterrows():
            i = int(c["index"])
            pre, post = v[max(0, i - 10):i], v[i:i + 10]
            moved = len(pre) >= 3 and abs(np.median(post) - np.median(pre)) / noise > 4
            calls[(sid, c["commit"])] = "true_positive" if moved else "false_positive"
    return [calls.get(key, "") for key in zip(history["series_id"], history["commit"], strict=True)]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> Path:
    """The labelled history (long layout with a label column) of the 20 real series."""
    real = SHARED_DATA / "real" / "histories.csv.gz"
    if not real.is_file():
        pytest.skip(f"real histories {real} are absent (../shared beside the checkout)")
    folder = tmp_path_factory.mktemp("s15")
    history = pd.read_csv(real)
    history = history[history["series_id"].isin(SERIES)]
    extract = folder / "extract.csv"
    history.to_csv(extract, index=False)
    found = []
    for detector in ("perfherder", "binseg"):
        out = folder / f"cands_{detector}.csv"
        code, text = invoke(["candidates", "--data", extract, "--detector", detector, "--out", out])
        assert code == 0, text
        found.append(pd.read_csv(out))
    candidates = pd.concat(found).drop_duplicates(["series_id", "commit"])
    history = history.assign(label=_reviewer_labels(history, candidates))
    path = folder / "labelled.csv"
    history.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def feature_matrix(labelled: Path) -> pd.DataFrame:
    return extract_features(load(labelled), window="adaptive")


# ---------------------------------------------------------------- 1. Platt scaling keeps the margin's order


def test_svm_calibration_never_reverses_the_margins_order(feature_matrix):
    """The held-out model ``triage train --model svm`` measures (its 80 % of the series)."""
    td = training_data(feature_matrix, None)
    train_idx, val_idx, test_idx = split_indices("grouped", td.y, td.groups, td.order, seed=0, test_size=0.2)
    rows = td.rows[np.sort(np.r_[train_idx, val_idx])]
    clf = TriageClassifier(model="svm").fit(feature_matrix.iloc[rows])
    margin = clf.estimator_.decision_function(td.X[test_idx])
    p_true = clf.predict_proba(td.X[test_idx])[:, 1]
    y = td.y[test_idx]
    # Calibration maps a score to a probability; it must not re-rank the candidates.
    assert roc_auc_score(y, p_true) == pytest.approx(roc_auc_score(y, margin))
    order = np.argsort(margin)
    assert np.all(np.diff(p_true[order]) >= -1e-12)


# ---------------------------------------------------------------- 2. few false alerts: validation keeps both classes


@pytest.fixture(scope="module")
def three_false_alerts(labelled: Path) -> Path:
    """The labelled history with only three false alerts left (the others untriaged)."""
    history = pd.read_csv(labelled, keep_default_na=False)
    false = history.loc[history["label"] == "false_positive", ["series_id", "commit"]].drop_duplicates()
    dropped = set(map(tuple, false.iloc[3:].to_numpy()))
    keys = zip(history["series_id"], history["commit"], strict=True)
    history.loc[[key in dropped for key in keys], "label"] = ""
    path = labelled.parent / "three_false.csv"
    history.to_csv(path, index=False)
    return path


def test_svm_on_three_false_alerts_trains_instead_of_an_internal_error(three_false_alerts, tmp_path):
    code, text = invoke(["train", "--data", three_false_alerts, "--model", "svm", "--test-size", "0",
                         "--no-track", "--out", tmp_path / "svm"])
    assert code == 0, text
    assert "internal error" not in text


def test_a_learned_threshold_sees_false_alerts_in_validation(three_false_alerts):
    """``--threshold fbeta:1`` chose 0.93 on validation rows that held no false alert."""
    from triage.training.classifier import _validation_split

    td = training_data(extract_features(load(three_false_alerts), window="adaptive"), None)
    assert int((td.y == 0).sum()) == 3
    fit_idx, val_idx = _validation_split(td.y.astype(np.int64), td.groups, 0.1, 0)
    assert set(td.y[val_idx]) == {0, 1}
    assert set(td.y[fit_idx]) == {0, 1}


def test_one_false_alert_with_a_learned_threshold_is_a_clear_error(labelled, tmp_path):
    history = pd.read_csv(labelled, keep_default_na=False)
    false = history.loc[history["label"] == "false_positive", ["series_id", "commit"]].drop_duplicates()
    dropped = set(map(tuple, false.iloc[1:].to_numpy()))
    keys = zip(history["series_id"], history["commit"], strict=True)
    history.loc[[key in dropped for key in keys], "label"] = ""
    data = tmp_path / "one_false.csv"
    history.to_csv(data, index=False)
    code, text = invoke(["train", "--data", data, "--threshold", "fbeta:1", "--test-size", "0",
                         "--no-track", "--out", tmp_path / "m"])
    assert code == 2, text
    assert "one_false.csv" in text and "only 1 false alert" in text
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------- 3. the registry cache knows which store a version is of


@pytest.fixture(scope="module")
def tracked_rf(feature_matrix, tmp_path_factory) -> tuple[str, Path]:
    """A tracking store holding one model, ``triage-rf-adaptive`` v1 (``train --matrix`` with
    MLFLOW_TRACKING_URI set), and that model's folder; built once, only read by the tests."""
    folder = tmp_path_factory.mktemp("tracked")
    matrix = folder / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    store = f"sqlite:///{folder / 'mlruns.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", store)
        code, text = invoke(["train", "--matrix", matrix, "--out", folder / "m"])
    assert code == 0, text
    return store, folder / "m"


def _train_tracked(data: Path, model: str, store: str, out: Path) -> str:
    code, text = invoke(["train", "--data", data, "--model", model, "--tracking-uri", store, "--out", out])
    assert code == 0, text
    return json.loads((out / "manifest.json").read_text())["run_id"]


def test_the_same_version_of_two_stores_resolves_to_each_stores_model(labelled, tracked_rf, tmp_path, monkeypatch):
    from triage.model_lookup import resolve_model

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    store_a, model_a = tracked_rf  # triage-rf-adaptive v1
    run_a = json.loads((model_a / "manifest.json").read_text())["run_id"]
    store_b = f"sqlite:///{tmp_path / 'b.db'}"
    run_b = _train_tracked(labelled, "rf", store_b, tmp_path / "mb")  # also triage-rf-adaptive v1
    assert run_a != run_b
    for store, run in ((store_a, run_a), (store_b, run_b)):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
        for uri in ("models:/triage-rf-adaptive/1", "models:/triage-rf-adaptive/1"):  # downloaded, then cached
            manifest = json.loads((resolve_model(uri) / "manifest.json").read_text())
            assert manifest["run_id"] == run, (store, uri)


def test_a_version_whose_artifacts_cannot_be_fetched_is_a_clear_error(tmp_path, monkeypatch):
    import mlflow

    store = f"sqlite:///{tmp_path / 'other.db'}"
    client = mlflow.MlflowClient(store, store)
    client.create_registered_model("their-model")
    client.create_model_version("their-model", "s3://their-bucket/model", None)
    client.set_registered_model_alias("their-model", "champion", "1")
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    code, text = invoke(["models", "list"])
    assert code == 0 and "their-model" in text, text
    code, text = invoke(["label", "--data", SHARED_DATA / "mongodb_demo.csv", "--model", "models:/their-model@champion",
                         "--out", tmp_path / "decisions.csv"])
    assert code == 2, text
    assert "internal error" not in text
    assert "models:/their-model@champion" in text and "s3://their-bucket/model" in text


# ---------------------------------------------------------------- 4. train --help: online rows with any fixed window


def test_train_help_tells_that_any_fixed_window_adds_ordinary_commits(labelled, tmp_path):
    out = tmp_path / "w2"
    code, text = invoke(["train", "--data", labelled, "--window", "2", "--ordinary-per-series", "3",
                         "--no-track", "--out", out])
    assert code == 0, text
    assert "ordinary commits" in flat(text) and "(fbeta:1)" in text
    assert json.loads((out / "manifest.json").read_text())["extra"]["online"] == {"confirm_after": 2}
    code, text = invoke(["train", "--help"])
    shown = flat(text)
    assert "With --window 0:" not in shown and "(--window 0 with ordinary commits)" not in shown
    assert "With a fixed --window K" in shown and "(a fixed --window with ordinary commits)" in shown


# ---------------------------------------------------------------- 5. --register: a name models:/ URIs can address


@pytest.mark.parametrize("name", ["team/rf", "x@y", "rf:2"])
def test_register_refuses_a_name_no_models_uri_can_address_before_training(feature_matrix, tmp_path, name):
    matrix = tmp_path / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    store = tmp_path / "mlruns.db"
    code, text = invoke(["train", "--matrix", matrix, "--register", name, "--tracking-uri", f"sqlite:///{store}",
                         "--out", tmp_path / "m"])
    assert code == 2, text
    assert "--register" in text and "Invalid value" in text
    assert not (tmp_path / "m").exists() and not store.exists()  # refused before any work


# ---------------------------------------------------------------- 6. promote: a bad alias is the alias's problem


@pytest.mark.parametrize(("alias", "why"), [("v3", "reserved"), ("latest", "reserved"), ("on call", "Invalid alias")])
def test_promote_names_the_alias_not_the_store(tracked_rf, monkeypatch, alias, why):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracked_rf[0])  # triage-rf-adaptive v1, trained with it set
    code, text = invoke(["models", "promote", "triage-rf-adaptive", "1", "--alias", alias])
    shown = flat(text)
    assert code == 2, text
    assert f"alias {alias!r} cannot be set" in shown and why in shown
    assert "tracking store cannot be used" not in shown


# ---------------------------------------------------------------- 7. a file store: MLflow's way out is shown


def test_a_file_store_error_keeps_mlflows_way_out(tmp_path, monkeypatch):
    import mlflow

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # how such a store was made
    store = f"file://{tmp_path / 'mlruns'}"
    mlflow.MlflowClient(store).create_experiment("their-runs")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    code, text = invoke(["models", "list", "--tracking-uri", store])
    shown = flat(text)
    assert code == 2, text
    assert "MLFLOW_ALLOW_FILE_STORE=true" in shown and "migrate" in shown


# ---------------------------------------------------------------- 8. a value XGBoost refuses is a usage error


@pytest.mark.parametrize(("param", "why"), [
    ("max_depth=-1", ""),
    ("subsample=2", ""),
    # found later (sixteenth session): a scalar for a per-column parameter failed deep inside XGBoost
    ("monotone_constraints=1", "one value per feature column"),
    ("interaction_constraints=0", "--monotone-shifts"),
])
def test_train_with_a_bad_xgboost_value_is_a_usage_error(feature_matrix, tmp_path, param, why):
    matrix = tmp_path / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    code, text = invoke(["train", "--matrix", matrix, "--model", "xgb", "--param", param, "--no-track",
                         "--out", tmp_path / "m"])
    shown = flat(text)
    assert code == 2, text
    assert "--param" in shown and param.split("=")[0] in shown and why in shown and "internal error" not in shown
    assert not (tmp_path / "m").exists()


def test_window_study_with_a_bad_xgboost_value_is_a_usage_error(labelled, tmp_path):
    code, text = invoke(["window-study", "--data", labelled, "--model", "xgb", "--param", "max_depth=-1",
                         "--windows", "0", "--splits", "1", "--no-track", "--out", tmp_path / "ws"])
    assert code == 2, text
    assert "--param" in text and "max_depth" in text and "internal error" not in text


# ---------------------------------------------------------------- 9. an --out folder that is a model directory


@pytest.fixture(scope="module")
def trained_model_dir(feature_matrix, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("model")
    matrix = folder / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    out = folder / "my-model"
    code, text = invoke(["train", "--matrix", matrix, "--no-track", "--out", out])
    assert code == 0, text
    return out


@pytest.fixture
def model_dir(trained_model_dir, tmp_path) -> Path:
    """Each test's own copy of the model trained once (some tests change it), fm.parquet beside it."""
    shutil.copy2(trained_model_dir.parent / "fm.parquet", tmp_path / "fm.parquet")
    out = tmp_path / "my-model"
    shutil.copytree(trained_model_dir, out)
    return out


@pytest.mark.parametrize("command", [
    ["evaluate", "--matrix", "{matrix}", "--models", "rf", "--splits", "1", "--no-track"],
    ["window-study", "--data", "{data}", "--windows", "0", "--splits", "1", "--no-track"],
    ["synth"],
    ["demo"],
])
def test_an_out_folder_that_is_a_model_directory_is_refused(model_dir, labelled, command):
    from triage.training.model_files import load_model

    before = sorted(p.name for p in model_dir.iterdir())
    args = [str(a).format(matrix=model_dir.parent / "fm.parquet", data=labelled) for a in command]
    code, text = invoke([*args, "--out", model_dir])
    assert code == 2, text
    assert "is a model directory" in flat(text)
    assert sorted(p.name for p in model_dir.iterdir()) == before
    load_model(model_dir)


def test_demo_refuses_a_folder_inside_a_model_directory(model_dir):
    code, text = invoke(["demo", "--out", model_dir / "demo"])
    assert code == 2, text
    assert "inside the model directory" in flat(text)
    assert not (model_dir / "demo").exists()


# ---------------------------------------------------------------- 10. a hold-out that leaves too little to split


@pytest.mark.parametrize("test_size", ["0.95", "0.999"])
def test_a_test_size_leaving_too_little_to_fit_is_a_split_error(feature_matrix, tmp_path, test_size):
    matrix = tmp_path / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    code, text = invoke(["train", "--matrix", matrix, "--test-size", test_size, "--no-track", "--out", tmp_path / "m"])
    shown = flat(text)
    assert code == 2, text
    assert "fm.parquet" in shown and "grouped split" in shown and "lower --test-size" in shown
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------- 11. select-features --out -: only the JSON on stdout


def test_select_features_to_stdout_writes_only_the_feature_set_there(labelled, tmp_path):
    from helpers_cli import run_triage

    res = run_triage("select-features", "--data", labelled, "--out", "-", "--population", "2", "--generations", "1",
                     "--trees", "2", "--folds", "2")
    assert res.returncode == 0, res.stderr
    feature_set = json.loads(res.stdout)
    assert feature_set["window"] == "adaptive" and feature_set["names"]
    assert "columns" in res.stderr  # the summary line, for the human
    path = tmp_path / "fs.json"
    path.write_text(res.stdout)
    code, text = invoke(["train", "--data", labelled, "--features", path, "--no-track", "--out", tmp_path / "m"])
    assert code == 0, text


# ---------------------------------------------------------------- 12. models list --labels without a model's call


def test_models_list_says_why_there_is_no_agreement(labelled, tracked_rf, tmp_path, monkeypatch):
    from triage.workspace.store import LabelsStore

    history = pd.read_csv(labelled, keep_default_na=False)
    decided = history.loc[history["label"] != "", ["series_id", "commit", "label"]].drop_duplicates(
        ["series_id", "commit"]).head(20)
    store = LabelsStore(tmp_path / "labels.sqlite")
    for sid, commit, label in decided.itertuples(index=False):
        store.record(sid, commit, label, who="ann")  # decided without a model on the page
    store.close()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracked_rf[0])  # triage-rf-adaptive v1, trained with it set
    code, text = invoke(["models", "list", "--labels", tmp_path / "labels.sqlite"])
    assert code == 0, text
    assert "triage-rf-adaptive" in text
    assert "records a model's call" in flat(text) and "precision" not in text


# ---------------------------------------------------------------- 13. a feature set names features only


@pytest.mark.parametrize("names", [["index", "pre_entropy"], ["label", "pre_entropy"], ["truth_label"]])
@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_a_feature_set_naming_a_metadata_column_is_refused_naming_the_file(feature_matrix, tmp_path, names, command):
    matrix = tmp_path / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    fs = tmp_path / "fs.json"
    fs.write_text(json.dumps(names))
    extra = ["--out", tmp_path / "m"] if command == "train" else ["--splits", "1", "--models", "rf"]
    code, text = invoke([command, "--matrix", matrix, "--features", fs, "--no-track", *extra])
    shown = flat(text)
    assert code == 2, text
    assert "fs.json" in shown and "no features" in shown and names[0] in shown
    assert "fm.parquet" not in shown
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------- 14. the time split checks its parts


def test_time_split_with_false_alerts_only_early_is_a_split_error(labelled, tmp_path):
    history = pd.read_csv(labelled, keep_default_na=False)
    false = history[history["label"] == "false_positive"].drop_duplicates(["series_id", "commit"])
    false = false.assign(ts=pd.to_datetime(false["timestamp"])).sort_values("ts")
    dropped = set(map(tuple, false[["series_id", "commit"]].iloc[20:].to_numpy()))
    keys = zip(history["series_id"], history["commit"], strict=True)
    history.loc[[key in dropped for key in keys], "label"] = ""
    data = tmp_path / "early_false.csv"
    history.to_csv(data, index=False)
    code, text = invoke(["evaluate", "--data", data, "--splits", "1", "--split-kinds", "time", "--no-track"])
    shown = flat(text)
    assert code == 2, text
    assert "early_false.csv" in shown and "time split" in shown and "only true alerts" in shown
    assert "solver" not in shown


# ---------------------------------------------------------------- 15. re-training keeps what is not the model's


def test_retraining_refuses_to_delete_files_kept_beside_the_model(model_dir):
    (model_dir / "NOTES.md").write_text("trained on the 20-series extract; promote after review\n")
    (model_dir / "eval").mkdir()
    (model_dir / "eval" / "records.csv").write_text("model,auc\nrf,0.77\n")
    manifest_before = (model_dir / "manifest.json").read_bytes()
    code, text = invoke(["train", "--matrix", model_dir.parent / "fm.parquet", "--model", "xgb", "--no-track",
                         "--out", model_dir])
    shown = flat(text)
    assert code == 2, text
    assert "NOTES.md" in shown and "eval" in shown and "delete" in shown
    assert (model_dir / "NOTES.md").is_file() and (model_dir / "eval" / "records.csv").is_file()
    assert (model_dir / "manifest.json").read_bytes() == manifest_before


def test_retraining_a_plain_model_directory_still_replaces_it(model_dir):
    code, text = invoke(["train", "--matrix", model_dir.parent / "fm.parquet", "--model", "xgb", "--no-track",
                         "--out", model_dir])
    assert code == 0, text
    assert json.loads((model_dir / "manifest.json").read_text())["model"] == "xgb"


# ---------------------------------------------------------------- 16. --preset named in its error


@pytest.mark.parametrize("command", [["train", "--out", "{tmp}/m", "--no-track"],
                                     ["evaluate", "--splits", "1", "--no-track"],
                                     ["window-study", "--out", "{tmp}/ws", "--no-track"]])
def test_an_unknown_preset_names_the_option(tmp_path, command):
    args = [a.format(tmp=tmp_path) for a in command]
    code, text = invoke([*args, "--preset", "SMALL"])
    assert code == 2, text
    assert "Invalid value for --preset" in flat(text) and "unknown preset 'SMALL'" in flat(text)


# ---------------------------------------------------------------- 17. --out checked before any work


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_an_out_that_cannot_be_replaced_is_refused_before_reading_the_data(labelled, tmp_path, kind):
    from triage.workspace.store import LabelsStore

    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record(SERIES[0], pd.read_csv(labelled, nrows=30)["commit"].iloc[20], "true", who="ann")
    store.close()
    out = tmp_path / "mine"
    if kind == "file":
        out.write_text("not a model\n")
    else:
        out.mkdir()
        (out / "results.csv").write_text("a,b\n")
    code, text = invoke(["train", "--data", labelled, "--labels", tmp_path / "labels.sqlite", "--no-track",
                         "--out", out])
    assert code == 2, text
    assert "refusing to replace it" in flat(text)
    assert "overlaid" not in text  # nothing was read


def test_a_tracking_uri_that_is_no_store_is_refused_before_reading_the_data(labelled, tmp_path):
    from triage.workspace.store import LabelsStore

    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record(SERIES[0], pd.read_csv(labelled, nrows=30)["commit"].iloc[20], "true", who="ann")
    store.close()
    code, text = invoke(["train", "--data", labelled, "--labels", tmp_path / "labels.sqlite",
                         "--tracking-uri", f"sqlite:///{tmp_path / 'labels.sqlite'}", "--out", tmp_path / "m"])
    assert code == 2, text
    assert "not an MLflow tracking store" in flat(text)
    assert "overlaid" not in text  # nothing was read


# ---------------------------------------------------------------- 18. a scoring model is registered under its own name


def test_a_scoring_model_is_not_a_version_of_the_adaptive_alerts_model(labelled, feature_matrix, tmp_path, monkeypatch):
    matrix = tmp_path / "fm.parquet"
    feature_matrix.to_parquet(matrix)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns.db'}")
    code, text = invoke(["train", "--matrix", matrix, "--model", "xgb", "--out", tmp_path / "alerts"])
    assert code == 0, text
    assert "registered triage-xgb-adaptive v1" in flat(text)
    code, text = invoke(["train", "--data", labelled, "--candidate-windows", "--model", "xgb", "--monotone-shifts",
                         "--out", tmp_path / "scoring"])
    assert code == 0, text
    assert "registered triage-xgb-scoring v1" in flat(text)
    code, text = invoke(["models", "list"])
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│triage-xgb")]
    assert [(r[1].strip(), r[3].strip()) for r in rows] == [("triage-xgb-adaptive", "adaptive"),
                                                            ("triage-xgb-scoring", "candidates")]


# ---------------------------------------------------------------- 19. --scheduler is used with --labels too


@pytest.mark.parametrize("extra", [["--labels", "{labels}"], ["--candidate-windows"]])
def test_scheduler_is_not_ignored_with_labels_or_candidate_windows(labelled, tmp_path, extra, monkeypatch):
    import socket

    from triage import distributed
    from triage.workspace.store import LabelsStore

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 1.0)  # nobody listens: no need to wait the 10 s

    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record(SERIES[0], pd.read_csv(labelled, nrows=30)["commit"].iloc[20], "true", who="ann")
    store.close()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [a.format(labels=tmp_path / "labels.sqlite") for a in extra]
    code, text = invoke(["train", "--data", labelled, *args, "--scheduler", f"tcp://127.0.0.1:{port}", "--no-track",
                         "--out", tmp_path / "m"])
    assert code == 2, text
    assert "cannot reach a dask scheduler" in flat(text)
    assert not (tmp_path / "m").exists()


# ---------------------------------------------------------------- (thirtieth session) a scoring model from the sheriffs


def test_a_scoring_model_trains_on_the_sheriffs_decisions(labelled, tmp_path):
    """``--candidate-windows --labels`` was refused: the model `score` and `serve` use could not be
    retrained from the workspace's decisions without exporting them first."""
    import json

    from triage.workspace.store import LabelsStore

    commit = pd.read_csv(labelled, nrows=30)["commit"].iloc[20]
    store = LabelsStore(tmp_path / "labels.sqlite")
    store.record(SERIES[0], commit, "true", who="ann")
    store.close()
    code, text = invoke(["train", "--data", labelled, "--labels", tmp_path / "labels.sqlite", "--candidate-windows",
                         "--no-track", "--out", tmp_path / "m"])
    assert code == 0, text
    assert "1 sheriff decision from" in flat(text) and "overlaid on the data's labels" in flat(text)
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["extra"]["windows"] == "candidates"
