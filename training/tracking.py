"""Experiment tracking with MLflow: runs, artifacts and the model registry.

Every training and evaluation run is an MLflow run: parameters, feature set,
training-data hash, metrics (with 95 % intervals), ROC and confusion-matrix
PNGs, and for training the model itself (a pyfunc wrapping the safe model
directory, with an input signature), registered under a name with versions.

Store: a local SQLite file, ``sqlite:///mlruns.db`` in the working directory,
no server. ``--tracking-uri`` or the environment variable
``MLFLOW_TRACKING_URI`` override it. For a SQLite store, artifacts of new
experiments go to ``mlartifacts/`` beside the database file rather than
wherever the process happens to run.

MLflow is imported lazily (inside functions): it takes seconds to import and
``triage --help`` must stay fast.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.errors import InputError

DEFAULT_TRACKING_URI = "sqlite:///mlruns.db"
TRAIN_EXPERIMENT = "triage-train"
EVALUATE_EXPERIMENT = "triage-evaluate"
#: What the logged pyfunc model needs to run, pinned loosely; listing them
#: stops MLflow from inferring requirements by loading the model in a subprocess.
PIP_REQUIREMENTS = ["changepoint-triage", "scikit-learn", "xgboost-cpu", "skops", "pandas", "numpy"]


class TrackingError(InputError):
    """A registry or store problem users can fix (unknown model, version, store)."""

    def __init__(self, problem: str, uri: str | None = None):
        super().__init__(uri or "tracking store", None, problem)


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else :data:`DEFAULT_TRACKING_URI`."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def _client(uri: str | None):
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = resolve_tracking_uri(uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return mlflow, MlflowClient(tracking_uri=uri, registry_uri=uri), uri


def _experiment_id(client, name: str, uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if uri.startswith("sqlite:///"):
        db = Path(uri.removeprefix("sqlite:///"))
        location = (db.resolve().parent / "mlartifacts" / name).as_uri()
    return client.create_experiment(name, artifact_location=location)


def _flat_params(params: Mapping[str, object], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat_params(v, prefix=f"{key}."))
        else:
            text = json.dumps(v) if isinstance(v, list | tuple) else str(v)
            out[key] = text if len(text) <= 500 else text[:480] + f"... ({len(text)} chars)"
    return out


def log_training_run(
    clf,
    model_dir: str | Path,
    *,
    metrics: Mapping[str, float],
    params: Mapping[str, object] | None = None,
    test: tuple[np.ndarray, np.ndarray] | None = None,
    input_example: pd.DataFrame | None = None,
    register_as: str | None = None,
    tracking_uri: str | None = None,
    experiment: str = TRAIN_EXPERIMENT,
    run_name: str | None = None,
) -> dict[str, object]:
    """Log a trained model and its held-out results; optionally register it.

    ``model_dir`` is the saved model (:func:`training.model_files.save_model`),
    logged as the pyfunc model's artifact. ``test=(y_true, proba)`` (0/1 and
    P(true alert), shape (n,)) draws the ROC and confusion matrix at the
    model's threshold. ``input_example`` (a few feature rows) gives the input
    signature. Returns ``run_id``, ``model_uri``, ``registered`` (name) and
    ``version``.
    """
    from mlflow.models import infer_signature

    from triage.training.plots import confusion_png, roc_png

    mlflow, client, uri = _client(tracking_uri)
    exp_id = _experiment_id(client, experiment, uri)
    model_dir = Path(model_dir)
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    with mlflow.start_run(experiment_id=exp_id, run_name=run_name) as run:
        all_params = {
            "model": clf.model,
            "threshold_policy": clf.threshold_policy_,
            "threshold": clf.threshold_,
            "class_weight": clf.class_weight,
            "random_state": clf.random_state,
            "window": manifest.get("window"),
            "n_features": clf.n_features_in_,
            "feature_set_file": manifest.get("feature_set_file"),
            "model_params": clf.params_,
            "n_train": clf.n_train_,
            **(params or {}),
        }
        mlflow.log_params(_flat_params(all_params))
        mlflow.set_tags({"data_hash": clf.data_hash_, "kind": "train"})
        mlflow.log_metrics({k: float(v) for k, v in metrics.items() if v is not None and np.isfinite(v)})
        mlflow.log_dict({"names": list(clf.feature_names_ or [])}, "feature_set.json")
        with tempfile.TemporaryDirectory() as tmp:
            if test is not None:
                y_true, proba = test
                roc_png(y_true, proba, Path(tmp) / "roc.png", title=f"{clf.model}: held-out ROC")
                confusion_png(y_true, proba >= clf.threshold_, Path(tmp) / "confusion.png",
                              title=f"{clf.model}: threshold {clf.threshold_:.3f}")
                mlflow.log_artifact(str(Path(tmp) / "roc.png"))
                mlflow.log_artifact(str(Path(tmp) / "confusion.png"))
        signature = None
        if input_example is not None:
            example = input_example[clf.feature_names_] if clf.feature_names_ else input_example
            out = pd.DataFrame({"p_true": clf.predict_proba(example)[:, 1],
                                "label": clf.predict(example).astype(str)})
            signature = infer_signature(example, out)
        with warnings.catch_warnings():
            # An input example would make MLflow load and run the model once
            # more just to validate it; the signature already says the columns.
            warnings.filterwarnings("ignore", message=".*input example was not provided.*")
            info = mlflow.pyfunc.log_model(
                name="model",
                python_model=str(Path(__file__).with_name("mlflow_model.py")),
                artifacts={"model_dir": str(model_dir)},
                signature=signature,
                pip_requirements=PIP_REQUIREMENTS,
                registered_model_name=register_as,
            )
    version = getattr(info, "registered_model_version", None)
    return {"run_id": run.info.run_id, "model_uri": info.model_uri, "registered": register_as,
            "version": str(version) if version is not None else None, "tracking_uri": uri}


def log_evaluation_run(
    result,
    *,
    params: Mapping[str, object] | None = None,
    extra_files: Mapping[str, str | Path] | None = None,
    tracking_uri: str | None = None,
    experiment: str = EVALUATE_EXPERIMENT,
    run_name: str | None = None,
) -> str:
    """Log an :class:`~training.evaluation.EvaluationResult`; returns the run id.

    Metrics are named ``<split>.<model>.<metric>_{mean,ci_low,ci_high}``; the
    per-split records, summary and differences are CSV/Markdown artifacts.
    ``extra_files`` (name -> path) adds more artifacts, e.g. the window plot.
    """
    from triage.training.evaluation import METRICS

    mlflow, client, uri = _client(tracking_uri)
    exp_id = _experiment_id(client, experiment, uri)
    settings = dict(result.settings)
    features = settings.pop("features", [])
    data_hash = settings.pop("data_hash", "")
    with mlflow.start_run(experiment_id=exp_id, run_name=run_name) as run:
        mlflow.log_params(_flat_params({**settings, "n_features": len(features), **(params or {})}))
        mlflow.set_tags({"data_hash": data_hash, "kind": "evaluate"})
        metrics = {}
        for _, row in result.summary().iterrows():
            for m in (*METRICS, "fit_seconds"):
                for stat in ("mean", "ci_low", "ci_high"):
                    metrics[f"{row['split']}.{row['model']}.{m}_{stat}"] = float(row[f"{m}_{stat}"])
        for _, row in result.differences().iterrows():
            kind = row["split"].split(" ")[0]
            for m in METRICS:
                metrics[f"{kind}_minus_random.{row['model']}.{m}"] = float(row[m])
        mlflow.log_metrics({k: v for k, v in metrics.items() if np.isfinite(v)})
        mlflow.log_dict({"names": list(features)}, "feature_set.json")
        with tempfile.TemporaryDirectory() as tmp:
            for path in result.save(tmp).values():
                mlflow.log_artifact(str(path))
        for name, path in (extra_files or {}).items():
            mlflow.log_artifact(str(path), artifact_path=name if name else None)
    return run.info.run_id


# ---------------------------------------------------------------------- registry


def list_models(tracking_uri: str | None = None) -> list[dict[str, object]]:
    """Every registered model version: name, version, aliases, run id, created (ms epoch)."""
    _, client, _ = _client(tracking_uri)
    rows = []
    for rm in client.search_registered_models():
        aliases_by_version: dict[str, list[str]] = {}
        for alias, version in (rm.aliases or {}).items():
            aliases_by_version.setdefault(str(version), []).append(alias)
        for mv in client.search_model_versions(f"name='{rm.name}'"):
            rows.append(
                {
                    "name": rm.name,
                    "version": str(mv.version),
                    "aliases": sorted(aliases_by_version.get(str(mv.version), [])),
                    "run_id": mv.run_id,
                    "created": mv.creation_timestamp,
                }
            )
    return sorted(rows, key=lambda r: (r["name"], int(r["version"])))


def promote(name: str, version: str | int, alias: str = "champion", tracking_uri: str | None = None) -> None:
    """Point ``alias`` of registered model ``name`` at ``version`` (moving it if set elsewhere)."""
    from mlflow.exceptions import MlflowException

    _, client, uri = _client(tracking_uri)
    try:
        client.get_model_version(name, str(version))
    except MlflowException:
        known = [r["version"] for r in list_models(tracking_uri) if r["name"] == name]
        what = f"versions {', '.join(known)}" if known else "no such registered model"
        raise TrackingError(f"model {name!r} has no version {version} ({what})", uri) from None
    client.set_registered_model_alias(name, alias, str(version))
