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

Registered names carry the model kind and window (:func:`registered_name`:
``triage-rf-adaptive``, ``triage-rf-w0``): an adaptive-window model and an
online (window 0) model expect different features and must never be versions
of one name. :func:`resolve_registry_uri` turns ``models:/name@alias`` (or
``models:/name/3``) into the verified model directory behind it.

All-or-nothing training (issue 14): :func:`training_run` opens the run before
the model directory is written and tags it with this process and the target
directory; the directory is swapped into place only after the run's model is
logged and registered, and the run then ends FINISHED. A process killed in
between leaves a RUNNING run whose process is gone: :func:`recover_interrupted_runs`
(called by every training start and by ``models list``) marks it FINISHED when
the target directory holds that run's model (only the last step was missed),
and otherwise FAILED, deleting the model versions it registered, so that the
registry never lists a model that is not in place.

Store problems (a garbage database, an unknown URI scheme) become
:class:`TrackingError` naming the store, never a traceback. A SQLite store is
opened the first time in a process under a lock on its folder, because MLflow
creates and migrates a new store on that first access and two processes doing
it at once left it half-made; one whose creation was cut short anyway (a kill)
is named as such. Commands that log runs refuse a SQLite store (or folder)
they may not write before any work (:func:`check_store`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import pandas as pd

from triage.core.atomic import SQLITE_MAGIC
from triage.core.compile_cache import private_temp_dir, user_cache_dir, writable
from triage.core.errors import InputError
from triage.training.model_files import process_alive

DEFAULT_TRACKING_URI = "sqlite:///mlruns.db"
TRAIN_EXPERIMENT = "triage-train"
EVALUATE_EXPERIMENT = "triage-evaluate"
#: What the logged pyfunc model needs to run, pinned loosely; listing them
#: stops MLflow from inferring requirements by loading the model in a subprocess.
#: The artifact key of the model directory inside the logged pyfunc model.
MODEL_ARTIFACT = "model_dir"
PIP_REQUIREMENTS = ["changepoint-triage", "scikit-learn", "xgboost-cpu", "skops", "pandas", "numpy"]


class TrackingError(InputError):
    """A registry or store problem users can fix (unknown model, version, store)."""

    def __init__(self, problem: str, uri: str | None = None):
        super().__init__(uri or "tracking store", None, problem)


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``$MLFLOW_TRACKING_URI``, else :data:`DEFAULT_TRACKING_URI`."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


#: Tags a training run carries so that a later start can tell whether it was interrupted.
PID_TAG, HOST_TAG, TARGET_TAG, STATE_TAG = "triage.pid", "triage.host", "triage.model_dir", "triage.state"


def registered_name(model: str, window: str | int | None) -> str:
    """The default registered name of a ``model`` kind trained with ``window``: ``triage-rf-w0``.

    ``window`` ``"candidates"``: a scoring model (``train --candidate-windows``), whose
    pair_* and ctx_* features an adaptive-window model lacks: ``triage-xgb-scoring``
    (short enough for ``models list`` in 80 columns).
    """
    if window is None or window == "adaptive":
        return f"triage-{model}-adaptive"
    if window == "candidates":
        return f"triage-{model}-scoring"
    return f"triage-{model}-w{window}"


@contextlib.contextmanager
def store_errors(uri: str) -> Iterator[None]:
    """Turn what MLflow, SQLAlchemy or SQLite raise about a store into one :class:`TrackingError`."""
    try:
        yield
    except TrackingError:
        raise
    except Exception as exc:
        module = type(exc).__module__.split(".")[0]
        if module not in ("mlflow", "sqlalchemy", "sqlite3", "alembic") and not isinstance(exc, OSError):
            raise
        # SQLAlchemy's hint about an autoflush comes first when a query flushed the failing write.
        lines = [t for t in str(exc).strip().splitlines() if t.strip() and not t.startswith("(raised as a result of")]
        line = (lines or [type(exc).__name__])[0]
        # Only the first line (SQLAlchemy puts the SQL below it), but all of it: MLflow 3
        # refuses a ./mlruns file store in one 560-character line whose way out
        # (MLFLOW_ALLOW_FILE_STORE=true, or migrating) comes last; cut at 300, it ended "See htt".
        if (newer := _newer_schema(line)) is not None:
            # MLflow calls any schema it does not expect "out-of-date" and says to run `mlflow db upgrade`,
            # which cannot upgrade a store a newer MLflow wrote (it knows no way from that schema).
            raise TrackingError(f"the tracking store was written by a newer MLflow (its schema {newer} is unknown "
                                f"to MLflow {_mlflow_version()} installed here): upgrade mlflow to use it, or give "
                                "--tracking-uri another store", uri) from None
        raise TrackingError(f"the tracking store cannot be used: {line[:2000]}", uri) from None


def _newer_schema(message: str) -> str | None:
    """The store's schema revision when MLflow refused it as out of date but knows no such revision, else None."""
    import re

    found = re.search(r"out-of-date database schema \(found version (\w+)", message)
    if found is None:
        return None
    try:
        from alembic.script import ScriptDirectory
        from mlflow.store.db.utils import _get_alembic_config

        script = ScriptDirectory.from_config(_get_alembic_config(""))
        known = script.get_revision(found.group(1)) is not None
    except Exception:  # alembic's "No such revision" (a ResolutionError) and whatever else: not one of ours
        known = False
    return None if known else found.group(1)


def _mlflow_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("mlflow")
    except metadata.PackageNotFoundError:
        return "?"


def _check_uri(uri: str, existing: bool = False) -> None:
    """A SQLite store must be an MLflow store, or absent (to be created unless ``existing``).

    Opening a SQLite file as a store creates MLflow's tables in it: a
    database of something else (a labels store, a typo's fresh file for a
    command that only reads) must be refused before MLflow touches it.
    Other schemes MLflow checks.
    """
    if "://" not in uri and not uri.startswith("file:"):
        raise TrackingError("not a tracking URI: expected e.g. sqlite:///mlruns.db or http://host:5000", uri)
    if not uri.startswith("sqlite:///"):
        return
    db = Path(uri.removeprefix("sqlite:///"))
    if not db.exists():
        if not db.parent.is_dir():
            raise TrackingError(f"folder {db.parent} does not exist", uri)
        if existing:
            raise TrackingError(f"no such tracking store {db} (`triage train` creates one)", uri)
        return
    if not db.is_file():
        raise TrackingError(f"{db} is not a file", uri)
    with open(db, "rb") as fh:
        head = fh.read(16)
    if head and head != SQLITE_MAGIC:
        raise TrackingError(f"{db} is not a SQLite database", uri)
    tables = _sqlite_tables(db) if head else set()
    if existing and tables is not None and not tables:
        # an empty file or database: MLflow would write its whole schema into it, for a command that only reads
        raise TrackingError(f"{db} holds no tracking store yet (no tables; `triage train` creates one)", uri)
    if tables and not MLFLOW_TABLES <= tables:
        raise TrackingError(f"{db} is a SQLite database but not an MLflow tracking store (its tables: "
                            f"{', '.join(sorted(tables)[:5])}); give another file", uri)


#: Tables every MLflow SQLite store has (its schema's oldest ones).
MLFLOW_TABLES = frozenset({"experiments", "runs"})


def _sqlite_tables(db: Path) -> set[str] | None:
    """The names of ``db``'s tables; None when it cannot be read."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        try:
            return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return None  # unreadable: MLflow's own error says why


def _client(uri: str | None, existing: bool = False):
    """MLflow and a client on ``uri``; ``existing``: the store must be there already (commands that only read).

    A SQLite store is opened once per process under :func:`_creation_lock`:
    MLflow creates a new store's tables and runs its schema migrations on the
    first access, and two processes doing that at once (two CI jobs training
    on a new ``mlruns.db``) both failed and left the file half-migrated, so
    that every later command refused it.
    """
    import logging

    import mlflow
    from mlflow.tracking import MlflowClient

    # MLflow's INFO lines ("Creating initial MLflow database tables...", "Updating database
    # tables") came between the command's own; its warnings and errors still show.
    # (MLFLOW_LOGGING_LEVEL, MLflow's own setting, is left to decide when given.)
    if "MLFLOW_LOGGING_LEVEL" not in os.environ:
        logging.getLogger("mlflow").setLevel(logging.WARNING)
    uri = resolve_tracking_uri(uri)
    first = uri.startswith("sqlite:///") and uri not in _OPENED
    with _creation_lock(uri):
        _check_uri(uri, existing)
        try:
            with store_errors(uri):
                mlflow.set_tracking_uri(uri)
                mlflow.set_registry_uri(uri)
                client = MlflowClient(tracking_uri=uri, registry_uri=uri)  # creates or migrates a SQLite store
                if first:  # and the registry's side: all of it here, under the lock
                    client.search_experiments(max_results=1)
                    client.search_registered_models(max_results=1)
        except TrackingError:
            if first:
                db = Path(uri.removeprefix("sqlite:///"))
                if _half_created(db):
                    raise TrackingError(
                        f"{db} is a tracking store whose creation was cut short (a process killed while "
                        "creating it, or two creating it at once with an older version): it holds no runs "
                        "and no models; move it aside (or delete it) and run again, a new store is created", uri
                    ) from None
            raise
        if first:
            _OPENED.add(uri)
        return mlflow, client, uri


#: Tables of a complete store (the registry's and the schema version's too).
_COMPLETE_TABLES = frozenset({"alembic_version", "experiments", "runs", "latest_metrics", "registered_models",
                              "model_versions"})


def _half_created(db: Path) -> bool:
    """A SQLite file MLflow began to make a store of and did not finish (tables missing, a migration's
    temporary table left, no schema version), holding no run and no model."""
    import sqlite3

    if not db.is_file() or not os.access(db, os.W_OK):
        return False
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables & {"alembic_version", "experiments", "runs"}:
                return False
            unfinished = (any(name.startswith("_alembic_tmp_") for name in tables)
                          or not _COMPLETE_TABLES <= tables
                          or not con.execute("SELECT 1 FROM alembic_version LIMIT 1").fetchone())
            return unfinished and all(name not in tables or not con.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone()
                       for name in ("runs", "registered_models", "model_versions"))
        finally:
            con.close()
    except sqlite3.Error:
        return False


#: SQLite stores this process has opened (created or migrated by then): no lock needed any more.
_OPENED: set[str] = set()


@contextlib.contextmanager
def _creation_lock(uri: str) -> Iterator[None]:
    """An exclusive lock, between processes, on the folder of a SQLite store this process has not opened yet.

    ``flock`` on the folder itself: no lock file is left beside the store,
    SQLite's own (``fcntl``) locks on the file are untouched, and the lock
    goes with the process if it is killed. Where no folder lock can be
    taken (no ``fcntl``, an unreadable folder) the store is opened without one.
    """
    if not uri.startswith("sqlite:///") or uri in _OPENED:
        yield
        return
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        yield
        return
    folder = Path(uri.removeprefix("sqlite:///")).parent
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a missing folder _check_uri names; an unreadable one SQLite refuses
        yield
        return
    try:
        with contextlib.suppress(OSError):  # a file system without flock: as before
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check_store(tracking_uri: str | None = None, *, write: bool = True) -> str:
    """Open the store and query it once; :class:`TrackingError` if it is unusable. Returns the URI.

    Training calls it first, so that a garbage database fails in a second,
    not after minutes of fitting. ``write``: the command will log runs, so a
    SQLite store (or its folder, where SQLite keeps its journal) that this
    user may not write is refused now too; MLflow found out only when the
    run was created, after the fit, with a traceback on stderr.
    """
    uri = resolve_tracking_uri(tracking_uri)
    if write and uri.startswith("sqlite:///"):
        _check_writable(Path(uri.removeprefix("sqlite:///")), uri)
    _, client, uri = _client(tracking_uri)
    # A server that does not answer must fail in seconds, not after MLflow's
    # default retries with back-off (minutes): one quick try, unless the user set these.
    quick = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
    saved = {k: os.environ.get(k) for k in quick}
    os.environ.update({k: v for k, v in quick.items() if saved[k] is None})
    try:
        with store_errors(uri):
            client.search_experiments(max_results=1)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
    return uri


def _check_writable(db: Path, uri: str, *, writes: str = "runs are logged into it",
                    advice: str = "give another --tracking-uri, or --no-track") -> None:
    """Refuse a SQLite store, or the folder it is in or will be made in, that this user may not write."""
    real = Path(os.path.realpath(db))
    if real.is_file() and not os.access(real, os.W_OK):
        raise TrackingError(f"{db} is read-only for this user: {writes}; make it writable, "
                            f"{advice}", uri)
    folder = real.parent
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise TrackingError(f"the folder {folder} is not writable for this user: SQLite writes its journal "
                            f"beside {real.name}{'' if real.exists() else ' (and creates it there)'}; {advice}", uri)


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


class TrainingRun(TypedDict):
    """What :func:`log_training_run` logged: the run, the pyfunc model and its registered version."""

    run_id: str
    model_uri: str
    registered: str | None
    version: str | None
    tracking_uri: str


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
    run_id: str | None = None,
) -> TrainingRun:
    """Log a trained model and its held-out results; optionally register it.

    ``model_dir`` is the saved model (:func:`training.model_files.save_model`),
    logged as the pyfunc model's artifact. ``test=(y_true, proba)`` (0/1 and
    P(true alert), shape (n,)) draws the ROC and confusion matrix at the
    model's threshold. ``input_example`` (a few feature rows) gives the input
    signature. Returns ``run_id``, ``model_uri``, ``registered`` (name) and
    ``version``. ``run_id`` logs into that (open) run, as :func:`training_run`
    starts it; without it a run is started and ended here.
    """
    from mlflow.models import infer_signature

    from triage.training.plots import confusion_png, roc_png

    mlflow, client, uri = _client(tracking_uri)
    exp_id = _experiment_id(client, experiment, uri)
    model_dir = Path(model_dir)
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    with store_errors(uri), _logging_run(mlflow, run_id, exp_id, run_name) as run:
        all_params = {
            "model": clf.model,
            "threshold_policy": clf.threshold_policy_,
            "threshold": clf.threshold_,
            "class_weight": clf.class_weight,
            "random_state": clf.random_state,
            # A scoring model's manifest says "adaptive" (no fixed K); its windows are the candidates'.
            "window": "candidates" if (manifest.get("extra") or {}).get("windows") == "candidates"
            else manifest.get("window"),
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
            with _stable_name(model_dir) as logged:
                info = mlflow.pyfunc.log_model(
                    name="model",
                    python_model=str(Path(__file__).with_name("mlflow_model.py")),
                    artifacts={MODEL_ARTIFACT: str(logged)},
                    signature=signature,
                    pip_requirements=PIP_REQUIREMENTS,
                    registered_model_name=register_as,
                )
    version = getattr(info, "registered_model_version", None)
    return {"run_id": run.info.run_id, "model_uri": info.model_uri, "registered": register_as,
            "version": str(version) if version is not None else None, "tracking_uri": uri}


@contextlib.contextmanager
def _stable_name(model_dir: Path) -> Iterator[Path]:
    """``model_dir``'s files under the name :data:`MODEL_ARTIFACT`, for MLflow to log by that name.

    MLflow names the artifact after the folder it copies, and training logs the model before
    swapping it into place (all-or-nothing): every registered version was stored, cached and named
    in messages as a hidden ``.med-rf.tmp-6648-c5amblnd``. Staged in the temporary folder (a
    process killed meanwhile leaves nothing beside the user's model): hard links where it is on
    the model's file system, copies elsewhere.
    """
    if model_dir.name == MODEL_ARTIFACT:
        yield model_dir
        return
    with tempfile.TemporaryDirectory(prefix="triage-log-") as tmp:
        staged = Path(tmp) / MODEL_ARTIFACT

        def link(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

        shutil.copytree(model_dir, staged, copy_function=link)
        yield staged


@contextlib.contextmanager
def _logging_run(mlflow, run_id: str | None, exp_id: str, run_name: str | None):
    """A new run ended on exit, or the open run ``run_id`` resumed and left RUNNING for its owner to end."""
    if run_id is None:
        with mlflow.start_run(experiment_id=exp_id, run_name=run_name) as run:
            yield run
        return
    run = mlflow.start_run(run_id=run_id)
    try:
        yield run
    finally:
        # Detach from the fluent API without finishing: training_run ends it after the swap.
        mlflow.end_run(status="RUNNING")


def log_evaluation_run(
    result,
    *,
    params: Mapping[str, object] | None = None,
    extra_files: Mapping[str, str | Path] | None = None,
    tracking_uri: str | None = None,
    experiment: str = EVALUATE_EXPERIMENT,
    run_name: str | None = None,
) -> str:
    """Log an :class:`~training.evaluation.EvaluationResult`; returns the parent run's id.

    One parent run holds the settings, the feature set and the records,
    summary and differences (CSV/Markdown artifacts); one child run per
    (split kind, model) holds that pair's metrics as
    ``<metric>_{mean,ci_low,ci_high}`` and, for grouped and time splits,
    ``<metric>_minus_random`` — comparable across runs in MLflow's UI, unlike
    one run with every pair flattened into its metric names.
    ``extra_files`` (name -> path) adds more artifacts, e.g. the window plot.
    """
    from triage.training.evaluation import METRICS

    mlflow, client, uri = _client(tracking_uri)
    with store_errors(uri):
        exp_id = _experiment_id(client, experiment, uri)
    settings = dict(result.settings)
    features = settings.pop("features", [])
    data_hash = settings.pop("data_hash", "")
    differences = {(row["split"].split(" ")[0], row["model"]): row for _, row in result.differences().iterrows()}
    with store_errors(uri), mlflow.start_run(experiment_id=exp_id, run_name=run_name) as run:
        flat = _flat_params({**settings, "n_features": len(features), **(params or {})})
        mlflow.log_params(flat)
        mlflow.set_tags({"data_hash": data_hash, "kind": "evaluate"})
        for _, row in result.summary().iterrows():
            metrics = {f"{m}_{stat}": float(row[f"{m}_{stat}"])
                       for m in (*METRICS, "fit_seconds") for stat in ("mean", "ci_low", "ci_high")}
            if (diff := differences.get((row["split"], row["model"]))) is not None:
                metrics.update({f"{m}_minus_random": float(diff[m]) for m in METRICS})
            with mlflow.start_run(experiment_id=exp_id, run_name=f"{row['split']}/{row['model']}", nested=True):
                mlflow.log_params({**flat, "split": row["split"], "model": row["model"]})
                mlflow.set_tags({"data_hash": data_hash, "kind": "evaluate-split"})
                mlflow.log_metrics({k: v for k, v in metrics.items() if np.isfinite(v)})
        mlflow.log_dict({"names": list(features)}, "feature_set.json")
        with tempfile.TemporaryDirectory() as tmp:
            for path in result.save(tmp).values():
                mlflow.log_artifact(str(path))
        for name, path in (extra_files or {}).items():
            mlflow.log_artifact(str(path), artifact_path=name if name else None)
    return run.info.run_id


# ---------------------------------------------------------------------- all-or-nothing training


@contextlib.contextmanager
def training_run(model_dir: str | Path, tracking_uri: str | None = None, *, experiment: str = TRAIN_EXPERIMENT,
                 run_name: str | None = None) -> Iterator[str]:
    """A training run for the model that will be put at ``model_dir``; yields its id.

    The run is tagged ``triage.state=writing`` with this process and the
    target directory until the caller's block ends; then it is ``committed``.
    If the block raises, the run is FAILED and the versions it registered are
    deleted before the exception goes on (see the module docstring).
    """
    _, client, uri = _client(tracking_uri)
    with store_errors(uri):
        exp_id = _experiment_id(client, experiment, uri)
        tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(),
                TARGET_TAG: str(Path(model_dir).resolve()), STATE_TAG: "writing"}
        if run_name:
            tags["mlflow.runName"] = run_name
        run_id = client.create_run(exp_id, tags=tags).info.run_id
    try:
        yield run_id
    except BaseException:
        with contextlib.suppress(Exception):  # the original error matters more than a cleanup failure
            _abandon(client, run_id)
        raise
    with store_errors(uri):
        client.set_tag(run_id, STATE_TAG, "committed")
        if client.get_run(run_id).info.status == "RUNNING":
            client.set_terminated(run_id, "FINISHED")


def _abandon(client, run_id: str) -> None:
    """Mark ``run_id`` FAILED and delete the model versions it registered."""
    for mv in client.search_model_versions(f"run_id='{run_id}'"):
        client.delete_model_version(mv.name, mv.version)
    client.set_tag(run_id, STATE_TAG, "abandoned")
    client.set_terminated(run_id, "FAILED")


def recover_interrupted_runs(tracking_uri: str | None = None) -> list[tuple[str, str]]:
    """Settle training runs whose process was killed; returns (run id, new status) of each.

    Only runs started on this host by a process that no longer runs are
    touched. FINISHED when the target directory's manifest names the run (the
    model was in place, only the last bookkeeping was missed), else FAILED with
    its registered versions deleted.
    """
    _, client, uri = _client(tracking_uri)
    settled: list[tuple[str, str]] = []
    with store_errors(uri):
        exp = client.get_experiment_by_name(TRAIN_EXPERIMENT)
        if exp is None:
            return settled
        runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`{STATE_TAG}` = 'writing'")
        for run in runs:
            tags = run.data.tags
            if tags.get(HOST_TAG) != socket.gethostname() or _pid_alive(tags.get(PID_TAG, "")):
                continue
            target = Path(tags.get(TARGET_TAG, ""))
            if _manifest_run_id(target) == run.info.run_id:
                client.set_tag(run.info.run_id, STATE_TAG, "committed")
                client.set_terminated(run.info.run_id, "FINISHED")
                settled.append((run.info.run_id, "FINISHED"))
            else:
                _abandon(client, run.info.run_id)
                settled.append((run.info.run_id, "FAILED"))
    return settled


def _pid_alive(pid_text: str) -> bool:
    return pid_text.isdigit() and process_alive(int(pid_text))


def _manifest_run_id(model_dir: Path) -> str | None:
    try:
        return json.loads((model_dir / "manifest.json").read_text(encoding="utf-8")).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None


# ---------------------------------------------------------------------- registry


def list_models(tracking_uri: str | None = None) -> list[dict[str, object]]:
    """Every registered model version.

    Keys: name, version, aliases, run_id, created (ms epoch), and from the
    training run: window, auc (held-out), data_hash, n_train (triaged rows
    the final model was fitted on), status (the run's).
    """
    _client(tracking_uri, existing=True)  # listing never creates a store (a typo's new file)
    check_store(tracking_uri, write=False)  # an unreachable server fails in seconds
    recover_interrupted_runs(tracking_uri)
    _, client, uri = _client(tracking_uri)
    rows = []
    with store_errors(uri):
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
                        **_run_facts(client, mv.run_id),
                    }
                )
    return sorted(rows, key=lambda r: (r["name"], int(r["version"])))


def _run_facts(client, run_id: str | None) -> dict[str, object]:
    from mlflow.exceptions import MlflowException

    facts: dict[str, object] = {"window": None, "auc": None, "data_hash": None, "n_train": None, "status": None}
    if not run_id:
        return facts
    try:
        run = client.get_run(run_id)
    except MlflowException:  # the run was deleted: the version stays listed without its facts
        return facts
    params, metrics = run.data.params, run.data.metrics
    n_train = [params.get(f"n_train.{k}") for k in ("positives", "negatives")]
    return {
        "window": params.get("window"),
        "auc": metrics.get("auc"),
        "data_hash": run.data.tags.get("data_hash"),
        "n_train": sum(int(v) for v in n_train) if all(v and v.isdigit() for v in n_train) else None,
        "status": run.info.status,
    }


def resolve_registry_uri(uri: str, tracking_uri: str | None = None, cache: str | Path | None = None) -> Path:
    """The verified model directory behind ``models:/name@alias`` or ``models:/name/version``.

    The registered pyfunc model is downloaded once into ``cache`` (default
    ``$TRIAGE_CACHE`` or the user's cache folder: :func:`_cache_root`) under
    ``models/<name>/<version>``; the model directory inside it is verified
    (:func:`training.model_files.verify_model_dir`) before it is returned.
    Raises :class:`TrackingError` for an unknown name, alias or version.
    """
    from mlflow.exceptions import MlflowException

    from triage.training.model_files import ModelFileError, verify_model_dir

    if not uri.startswith("models:/"):
        raise TrackingError(f"{uri!r} is not a registry URI (models:/NAME@ALIAS or models:/NAME/VERSION)", uri)
    ref = uri.removeprefix("models:/")
    name, at, alias = ref.partition("@")
    version = None
    if not at:
        name, slash, version = ref.rpartition("/")
        if not slash or not version.isdigit() or not name:
            raise TrackingError(f"{uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION", uri)
    if not name or (at and not alias):
        raise TrackingError(f"{uri!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION", uri)
    mlflow, client, store = _client(tracking_uri, existing=True)
    with store_errors(store):
        try:
            mv = client.get_model_version_by_alias(name, alias) if at else client.get_model_version(name, version)
        except MlflowException:
            known = [f"{r['version']}" + (f" (@{', @'.join(cast(list[str], r['aliases']))})" if r["aliases"] else "")
                     for r in list_models(tracking_uri) if r["name"] == name]
            what = f"its versions: {', '.join(known)}" if known else "no such registered model"
            raise TrackingError(f"{uri}: not found ({what})", store) from None
        root = _cache_root(cache)
        # Version numbers start at 1 in every store (and again in a store made anew):
        # keyed by name and version alone, the cache handed one store's model out for
        # another's version. The store, the run and the source name the version.
        key = hashlib.sha256(f"{store}\n{mv.run_id}\n{mv.source}".encode()).hexdigest()[:16]
        dst = root / "models" / name / str(mv.version) / key
        if _cached(dst) is None:
            # A copy that no longer verifies (a cache file edited or truncated, a download
            # killed half-way) is ours to replace: it was refused for good, the advice naming
            # a cache folder. A fresh copy is fetched beside it and renamed into place whole.
            try:
                dst.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=dst.parent))
            except OSError as exc:  # the cache's problem, not the store's
                raise InputError(dst.parent, None, f"cannot keep {uri}'s copy here ({exc.strerror}): set TRIAGE_CACHE "
                                                   "to a writable folder") from None
            try:
                try:
                    mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{name}/{mv.version}", dst_path=str(tmp))
                except ImportError as exc:  # a remote source (s3://, gs://) whose client library is absent
                    raise TrackingError(f"{uri}: cannot fetch its artifacts from {mv.source} ({exc})", store) from None
                try:
                    verify_model_dir(_pyfunc_model_dir(tmp))
                except ModelFileError as exc:  # the registry's own copy is damaged: name it, not our temporary folder
                    raise TrackingError(f"{uri}: the registered model's files at {mv.source} do not load: "
                                        f"{exc.problem}", store) from None
                if dst.exists() and _cached(dst) is None:  # not replaced meanwhile by another process's copy
                    shutil.rmtree(dst)
                with contextlib.suppress(OSError):  # another process put its whole copy there first
                    os.rename(tmp, dst)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    model_dir = _pyfunc_model_dir(dst)
    verify_model_dir(model_dir)
    return model_dir


def _cache_root(cache: str | Path | None) -> Path:
    """Where registry models are cached: ``cache``, ``$TRIAGE_CACHE``, the user's cache folder, else a private temporary one.

    The user's cache folder is ``$XDG_CACHE_HOME/changepoint-triage`` (default
    ``~/.cache/...``); with no usable home (``HOME=/dev/null``, a read-only
    one, or none at all) a private folder in the temporary directory
    (:func:`triage.core.compile_cache.private_temp_dir`): the model was refused
    as "the tracking store cannot be used" or with a RuntimeError.
    """
    given = cache or os.environ.get("TRIAGE_CACHE")
    if given:
        return Path(given)
    user = user_cache_dir()  # None without a HOME or a passwd entry (Path.home() raised RuntimeError)
    if user is not None and writable(user / "changepoint-triage"):
        return user / "changepoint-triage"
    return Path(private_temp_dir("changepoint-triage-cache"))


def _cached(pyfunc_dir: Path) -> Path | None:
    """The verified model directory of a cached pyfunc copy, or None (absent, incomplete or damaged)."""
    from triage.training.model_files import ModelFileError, verify_model_dir

    if not (pyfunc_dir / "MLmodel").is_file():
        return None
    try:
        model_dir = _pyfunc_model_dir(pyfunc_dir)
        verify_model_dir(model_dir)
    except (TrackingError, ModelFileError):
        return None
    return model_dir


def _pyfunc_model_dir(pyfunc_dir: Path) -> Path:
    """The model directory a logged pyfunc model carries (its ``model_dir`` artifact)."""
    import yaml

    try:
        spec = yaml.safe_load((pyfunc_dir / "MLmodel").read_text(encoding="utf-8"))
        relative = spec["flavors"]["python_function"]["artifacts"][MODEL_ARTIFACT]["path"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise TrackingError(f"{pyfunc_dir}: not a logged triage model ({exc})") from None
    model_dir = (pyfunc_dir / relative).resolve()
    if pyfunc_dir.resolve() not in model_dir.parents:
        raise TrackingError(f"{pyfunc_dir}: its model directory lies outside it")
    return model_dir


def promote(name: str, version: str | int, alias: str = "champion", tracking_uri: str | None = None) -> None:
    """Point ``alias`` of registered model ``name`` at ``version`` (moving it if set elsewhere)."""
    from mlflow.exceptions import MlflowException

    given = resolve_tracking_uri(tracking_uri)
    if given.startswith("sqlite:///"):
        # Checked as train checks it: on a read-only store SQLAlchemy's traceback (80 lines) came first.
        _check_writable(Path(given.removeprefix("sqlite:///")), given, writes="the alias is written into it",
                        advice="or give another --tracking-uri")
    _, client, uri = _client(tracking_uri, existing=True)
    try:
        with store_errors(uri):
            client.get_model_version(name, str(version))
    except (MlflowException, TrackingError):
        known = [str(r["version"]) for r in list_models(tracking_uri) if r["name"] == name]
        what = f"version{'s' if len(known) > 1 else ''} {', '.join(known)}" if known else "no such registered model"
        raise TrackingError(f"model {name!r} has no version {version} ({what})", uri) from None
    with store_errors(uri):
        try:
            client.set_registered_model_alias(name, alias, str(version))
        except MlflowException as exc:
            # A reserved or malformed alias is the alias's problem, not the store's.
            if exc.error_code != "INVALID_PARAMETER_VALUE":
                raise
            raise TrackingError(f"alias {alias!r} cannot be set: {exc.message}", uri) from None
