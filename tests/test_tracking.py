"""MLflow tracking against a temporary SQLite store: runs, artifacts, registry, CLI."""

from __future__ import annotations

import pytest
from helpers_training import make_matrix
from typer.testing import CliRunner

from triage.cli.app import app
from triage.core.errors import InputError
from triage.training import tracking
from triage.training.evaluation import evaluate
from triage.training.pipeline import train


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    return root, f"sqlite:///{root / 'mlruns.db'}"


@pytest.fixture(scope="module")
def matrix():
    return make_matrix(100, 3, seed=21)


@pytest.fixture(scope="module")
def trained(store, matrix):
    root, uri = store
    first = train(matrix, root / "model-a", model_params={"n_estimators": 20}, window=3,
                  threshold="recall:0.9", tracking_uri=uri, register_as="triage-test")
    second = train(matrix, root / "model-b", model="xgb", model_params={"n_estimators": 20}, window=3,
                   tracking_uri=uri, register_as="triage-test")
    return first, second


def test_resolve_tracking_uri(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking.resolve_tracking_uri() == "sqlite:///mlruns.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////elsewhere.db")
    assert tracking.resolve_tracking_uri() == "sqlite:////elsewhere.db"
    assert tracking.resolve_tracking_uri("sqlite:////given.db") == "sqlite:////given.db"


def test_training_run_logs_params_metrics_and_artifacts(store, trained):
    from mlflow.tracking import MlflowClient

    root, uri = store
    result = trained[0]
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(result.run["run_id"])
    p = run.data.params
    assert p["model"] == "rf"
    assert p["threshold_policy"] == "recall:0.9"
    assert p["window"] == "3"
    assert p["model_params.n_estimators"] == "20"
    assert run.data.tags["data_hash"] == result.classifier.data_hash_
    m = run.data.metrics
    for name in ("auc", "auc_ci_low", "auc_ci_high", "accuracy", "sensitivity", "specificity"):
        assert name in m
    assert m["auc_ci_low"] <= m["auc"] <= m["auc_ci_high"]
    assert m["auc"] > 0.7
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"roc.png", "confusion.png", "feature_set.json"} <= artifacts
    # artifacts live beside the database, not in the working directory
    assert (root / "mlartifacts").is_dir()
    # The model directory is stored under a stable name: it was the hidden temporary folder training
    # writes before the swap (.model-a.tmp-6648-c5amblnd), in the store, the cache and messages.
    logged = [p.relative_to(root) for p in (root / "mlartifacts").rglob("manifest.json")]
    assert len(logged) == 2 and all(p.parent.name == tracking.MODEL_ARTIFACT for p in logged), logged
    assert not any(".tmp" in part for p in logged for part in p.parts), logged


def test_logged_model_has_a_signature_and_predicts(store, trained, matrix):
    import mlflow

    result = trained[0]
    mlflow.set_tracking_uri(store[1])
    model = mlflow.pyfunc.load_model(result.run["model_uri"])
    names = [c.name for c in model.metadata.signature.inputs.inputs]
    assert names == result.classifier.feature_names_
    rows = matrix[result.classifier.feature_names_].iloc[:10]
    out = model.predict(rows)
    assert list(out.columns) == ["p_true", "label"]
    assert out["p_true"].tolist() == pytest.approx(result.classifier.predict_proba(rows)[:, 1].tolist())


def test_registry_versions_and_promotion(store, trained):
    _, uri = store
    rows = [r for r in tracking.list_models(uri) if r["name"] == "triage-test"]
    assert [r["version"] for r in rows] == ["1", "2"]
    assert trained[1].run["version"] == "2"
    tracking.promote("triage-test", 1, "champion", uri)
    tracking.promote("triage-test", 2, "champion", uri)  # the alias moves
    aliases = {r["version"]: r["aliases"] for r in tracking.list_models(uri) if r["name"] == "triage-test"}
    assert aliases == {"1": [], "2": ["champion"]}
    with pytest.raises(tracking.TrackingError, match="no version 7"):
        tracking.promote("triage-test", 7, "champion", uri)
    # in an 80-column terminal the aliases column was squeezed to nothing: @champion gone
    from typer.testing import CliRunner

    from triage.cli.app import app

    res = CliRunner().invoke(app, ["models", "list", "--tracking-uri", uri], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert max(len(line) for line in res.output.splitlines()) <= 80
    assert "@champion" in res.output and "triage-test" in res.output


def test_evaluation_run_logs_metrics_with_intervals(store, matrix):
    from mlflow.tracking import MlflowClient

    _, uri = store
    result = evaluate(matrix, models=["rf"], splits=["random", "grouped"], n_splits=2, progress=False,
                      model_params={"rf": {"n_estimators": 15}})
    run_id = tracking.log_evaluation_run(result, tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.data.metrics == {}  # no flattened <split>.<model>.<metric> names: child runs hold them
    children = client.search_runs([run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'")
    by_name = {c.info.run_name: c for c in children}
    assert sorted(by_name) == ["grouped/rf", "random/rf"]
    for stat in ("mean", "ci_low", "ci_high"):
        assert f"auc_{stat}" in by_name["random/rf"].data.metrics
    assert by_name["grouped/rf"].data.params["split"] == "grouped"
    assert "auc_minus_random" in by_name["grouped/rf"].data.metrics
    assert "auc_minus_random" not in by_name["random/rf"].data.metrics
    assert run.data.params["n_splits"] == "2"
    assert {"records.csv", "summary.md", "feature_set.json"} <= {a.path for a in client.list_artifacts(run_id)}


def test_cli_models_list_and_promote(store, trained):
    _, uri = store
    runner = CliRunner()
    res = runner.invoke(app, ["models", "promote", "triage-test", "1", "--alias", "staging", "--tracking-uri", uri])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["models", "list", "--tracking-uri", uri])
    assert res.exit_code == 0, res.output
    assert "triage-test" in res.output and "staging" in res.output
    auc = next(r["auc"] for r in tracking.list_models(uri) if r["name"] == "triage-test")
    for column in ("window", "AUC", "data", f"{auc:.3f}"):
        assert column in res.output


def test_cli_models_list_shows_agreement_with_the_sheriffs(store, trained, tmp_path):
    from triage.core import labels
    from triage.workspace.store import LabelsStore

    _, uri = store
    runner = CliRunner()
    assert runner.invoke(app, ["models", "promote", "triage-test", "1", "--alias", "champion",
                               "--tracking-uri", uri]).exit_code == 0
    path = tmp_path / "labels.sqlite"
    decisions = LabelsStore(path)
    served = "models:/triage-test@champion"
    # the model called 3 alerts true: the sheriffs confirmed 2 of them and one it called false
    for k, (said, call) in enumerate([("true", labels.TRUE_POSITIVE)] * 2 + [("false", labels.TRUE_POSITIVE),
                                       ("true", labels.FALSE_POSITIVE), ("false", labels.FALSE_POSITIVE)]):
        decisions.record("s", f"c{k}", said, who="ann", p_true=0.5, model_call=call, model=served)
    decisions.record("s", "other", "true", who="ann", p_true=0.9, model_call=labels.TRUE_POSITIVE, model="default")
    decisions.close()
    res = runner.invoke(app, ["models", "list", "--tracking-uri", uri, "--labels", str(path)])
    assert res.exit_code == 0, res.output
    assert "Against the sheriffs' decisions" in res.output
    # the same table, rendered wide enough that no cell folds
    from rich.console import Console

    from triage.cli.training import _sheriff_agreement_table

    wide = Console(width=200, record=True)
    wide.print(_sheriff_agreement_table(path, tracking.list_models(uri)))
    lines = wide.export_text().splitlines()
    row = next(line for line in lines if served in line)
    assert "triage-test v1" in row
    assert "0.667" in row  # precision 2/3, recall 2/3
    assert "0.600" in row  # agreement 3/5
    assert any("default" in line and "1.000" in line for line in lines)
    missing = runner.invoke(app, ["models", "list", "--tracking-uri", uri, "--labels", str(tmp_path / "none")])
    assert isinstance(missing.exception, InputError) and "no such labels store" in str(missing.exception)
    # Refused before the registry's table is printed: a script reading stdout got a whole table.
    assert "Registered models" not in missing.output and "triage-test" not in missing.output


# ---------------------------------------------------------------------- registry items of issue 12


def test_registered_names_carry_kind_and_window():
    assert tracking.registered_name("rf", "adaptive") == "triage-rf-adaptive"
    assert tracking.registered_name("xgb", 0) == "triage-xgb-w0"
    assert tracking.registered_name("rf", 4) != tracking.registered_name("rf", 0)


def test_list_models_shows_window_auc_and_data_hash(store, trained):
    _, uri = store
    rows = {r["version"]: r for r in tracking.list_models(uri) if r["name"] == "triage-test"}
    first = trained[0]
    assert rows["1"]["window"] == "3"
    assert rows["1"]["auc"] == pytest.approx(first.metrics["auc"])
    assert rows["1"]["data_hash"] == first.classifier.data_hash_
    assert rows["1"]["status"] == "FINISHED"


def test_resolve_registry_uri_gives_the_verified_model_directory(store, trained, matrix, tmp_path):
    from triage.training.model_files import load_model

    _, uri = store
    tracking.promote("triage-test", 1, "prod", uri)
    model_dir = tracking.resolve_registry_uri("models:/triage-test@prod", uri, cache=tmp_path)
    clf = load_model(model_dir)
    assert clf.manifest_["run_id"] == trained[0].run["run_id"]
    rows = matrix[clf.feature_names_].iloc[:5]
    assert clf.predict_proba(rows).tolist() == trained[0].classifier.predict_proba(rows).tolist()
    assert tracking.resolve_registry_uri("models:/triage-test/2", uri, cache=tmp_path).is_dir()
    with pytest.raises(tracking.TrackingError, match="not found.*versions: 1"):
        tracking.resolve_registry_uri("models:/triage-test@nobody", uri, cache=tmp_path)
    with pytest.raises(tracking.TrackingError, match="expected models:/NAME@ALIAS"):
        tracking.resolve_registry_uri("models:/triage-test", uri, cache=tmp_path)


def test_small_training_data_gives_a_warning(tmp_path):
    small = make_matrix(40, 3, seed=3)
    result = train(small, tmp_path / "m", model_params={"n_estimators": 10}, track=False)
    assert any("too uncertain" in w for w in result.warnings)
    large = train(make_matrix(400, 3, seed=3), tmp_path / "m2", model_params={"n_estimators": 10}, track=False)
    assert large.warnings == []


@pytest.mark.parametrize("content", [b"this is not a database at all" * 10, b"\x00\xff" * 600])
def test_a_garbage_tracking_database_is_a_clear_error_before_training(content, tmp_path, matrix):
    db = tmp_path / "garbage.db"
    db.write_bytes(content)
    with pytest.raises(tracking.TrackingError, match="not a SQLite database"):
        train(matrix, tmp_path / "m", tracking_uri=f"sqlite:///{db}")
    assert not (tmp_path / "m").exists()
    with pytest.raises(tracking.TrackingError, match="not a tracking URI"):
        tracking.check_store("mlruns.db")


def test_interrupted_runs_are_settled_on_the_next_start(tmp_path, matrix):
    """A run whose process died: FAILED with its versions deleted, or FINISHED when its model is in place."""
    import json
    import subprocess

    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    done = train(matrix, tmp_path / "m", model_params={"n_estimators": 5}, tracking_uri=uri, register_as="t")
    client = MlflowClient(tracking_uri=uri)
    proc = subprocess.Popen(["true"])  # a pid that has certainly exited
    proc.wait()
    exp = client.get_experiment_by_name(tracking.TRAIN_EXPERIMENT).experiment_id
    host = __import__("socket").gethostname()

    def dead_run(target):
        return client.create_run(exp, tags={tracking.PID_TAG: str(proc.pid), tracking.HOST_TAG: host,
                                            tracking.TARGET_TAG: str(target), tracking.STATE_TAG: "writing"})

    lost = dead_run(tmp_path / "m").info.run_id  # killed before the swap: m holds the earlier model
    client.create_model_version("t", "file:///nowhere", run_id=lost)
    swapped = dead_run(tmp_path / "other").info.run_id  # killed after the swap, before the bookkeeping
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text(json.dumps({"run_id": swapped}))
    live = client.create_run(exp, tags={tracking.PID_TAG: str(__import__("os").getpid()), tracking.HOST_TAG: host,
                                        tracking.TARGET_TAG: "x", tracking.STATE_TAG: "writing"}).info.run_id
    settled = dict(tracking.recover_interrupted_runs(uri))
    assert settled == {lost: "FAILED", swapped: "FINISHED"}
    assert client.get_run(lost).info.status == "FAILED"
    assert client.get_run(swapped).info.status == "FINISHED"
    assert client.get_run(live).info.status == "RUNNING"  # a live process is never touched
    assert [r["version"] for r in tracking.list_models(uri) if r["name"] == "t"] == [done.run["version"]]
