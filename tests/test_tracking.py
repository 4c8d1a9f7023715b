"""MLflow tracking against a temporary SQLite store: runs, artifacts, registry, CLI."""

from __future__ import annotations

import pytest
from helpers_training import make_matrix
from typer.testing import CliRunner

from triage.cli.app import app
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


def test_evaluation_run_logs_metrics_with_intervals(store, matrix):
    from mlflow.tracking import MlflowClient

    _, uri = store
    result = evaluate(matrix, models=["rf"], splits=["random", "grouped"], n_splits=2, progress=False,
                      model_params={"rf": {"n_estimators": 15}})
    run_id = tracking.log_evaluation_run(result, tracking_uri=uri)
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    for stat in ("mean", "ci_low", "ci_high"):
        assert f"random.rf.auc_{stat}" in run.data.metrics
    assert "grouped_minus_random.rf.auc" in run.data.metrics
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
