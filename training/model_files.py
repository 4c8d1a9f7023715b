"""Model directories: safe formats, a manifest, checksums, atomic writes.

A saved model is a directory::

    model.skops | model.ubj   the fitted model: skops for scikit-learn models,
                              the kind's own format where it has one
                              (XGBoost's UBJSON; :mod:`training.model_kinds`),
                              never pickle
    calibrator.skops          the score -> probability map (only when calibrated)
    manifest.json             what the model is: model kind, feature columns,
                              window mode, threshold policy and value, classes,
                              parameters, library versions, training-data hash,
                              metrics
    checksums.sha256          SHA-256 of every other file (``sha256sum`` format)

Loading verifies every checksum (and that no file was added), then the
manifest's format and library versions, then loads skops files with an explicit
allowlist of the types this project writes. Anything off raises
:class:`ModelFileError` (an :class:`~triage.core.errors.InputError`) and loads
nothing. The checksums detect corruption and accidental edits; they are not a
signature, so a model directory is exactly as trustworthy as where it came
from.

Writes are atomic: the files are written and fsynced in a temporary directory
beside the target, then swapped in with one ``renameat2(RENAME_EXCHANGE)``
(Linux) or, elsewhere, two renames with a restore on failure
(:func:`triage.core.atomic.replace_dir`, which the HTML report uses too). A crash leaves
either the old model or the new one, never a mix, and the temporary directory
is removed on any error. An existing target is replaced only if it is a model
directory or empty. A symbolic link given as the target is written through
(:func:`triage.core.atomic.directory_target`): the directory it names is
swapped, beside it, and the link stays a link.

What loading refuses beyond checksums (issue 14): a manifest naming a file
outside the directory (``../x``, an absolute path) or not covered by the
checksums; any entry that is not a regular file (a symlink to ``/dev/zero``, a
FIFO, a subdirectory), which could otherwise hang the reader forever; a file
larger than :data:`MAX_FILE_BYTES`; a manifest whose model kind does not match
its files or the estimator inside them, or an estimator taking another number
of features than the manifest lists; a threshold that is not a finite number
in [0, 1] (NaN would make every decision false); a ``class_weight``,
``random_state``, ``data_hash`` or ``n_train`` of the wrong kind, or a
manifest without ``data_hash`` and ``n_train`` (every writer has recorded
them since the first model; a hand-made manifest must too). A missing
``features`` loads as None. A temporary directory left
by a killed writer (``.<name>.tmp-<pid>-*`` whose process is gone) is removed
by the next :func:`save_model` or :func:`clean_stale_temporaries`. A model
swapped in while it is being loaded (the directory at the path changed
between the start and the end of the load) is loaded again, whole.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
import tempfile
import zipfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import numpy as np

from triage.core.atomic import current_umask, directory_target, replace_dir
from triage.core.errors import InputError
from triage.core.versions import distribution_versions, file_sha256
from triage.training.classifier import TriageClassifier

# MANIFEST and CHECKSUMS live with the cheap check of what a model directory is.
from triage.training.model_dirs import CHECKSUMS, MANIFEST, enclosing_model_dir
from triage.training.model_kinds import KINDS, MODELS

FORMAT = "changepoint-triage-model"
FORMAT_VERSION = 1

#: Types skops may instantiate beyond its built-in trusted set (scikit-learn
#: estimators, numpy arrays). Nothing else is ever loaded.
TRUSTED_TYPES: frozenset[str] = frozenset({"numpy.dtype", "sklearn.tree._tree.Tree"})

#: Largest file a model directory may hold. A random forest of 500 deep trees
#: on a million rows stays well below it; anything larger is not ours, and
#: reading it whole would only exhaust memory.
MAX_FILE_BYTES = 1 << 30
#: Largest manifest / checksum file: both are a few kilobytes when written here.
MAX_TEXT_BYTES = 1 << 20
#: The estimator types each kind's file must hold (class names after loading).
ESTIMATOR_TYPES: dict[str, tuple[str, ...]] = {
    "rf": ("RandomForestClassifier",),
    "svm": ("Pipeline",),
    "xgb": ("XGBClassifier",),
}


class ManifestThreshold(TypedDict):
    policy: str
    value: float


class ManifestFiles(TypedDict):
    estimator: str
    calibrator: NotRequired[str | None]


class Manifest(TypedDict):
    """A manifest as :func:`verify_model_dir` returns it, its values checked.

    The keys :func:`check_compatible` requires are always there; the others
    are read with ``.get``. ``params`` are the underlying model's own
    parameters, any values its estimator takes.
    """

    format: str
    format_version: int
    model: str
    files: ManifestFiles
    classes: list[object]
    n_features: int
    threshold: ManifestThreshold
    params: dict[str, Any]
    libraries: dict[str, str | None]
    features: NotRequired[list[str] | None]
    window: NotRequired[str | int | None]
    class_weight: NotRequired[str | dict[str, float] | None]
    random_state: NotRequired[int | None]
    created: NotRequired[str]
    calibration: NotRequired[str | None]
    feature_set_file: NotRequired[str | None]
    data_hash: str
    n_train: dict[str, int]
    metrics: NotRequired[dict[str, object]]
    extra: NotRequired[dict[str, object]]
    run_id: NotRequired[str]


class ModelFileError(InputError):
    """A model directory that cannot be written or must not be loaded."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(path, None, problem)


# ---------------------------------------------------------------------- saving


def save_model(
    clf: TriageClassifier,
    path: str | Path,
    *,
    window: str | int | None = None,
    metrics: dict[str, object] | None = None,
    feature_set_file: str | Path | None = None,
    extra: dict[str, object] | None = None,
) -> Path:
    """Write fitted ``clf`` to the directory ``path`` atomically; returns ``path``.

    ``window`` is the feature window the matrix was built with (``"adaptive"``
    or an int w), needed to extract the same features at prediction time.
    ``metrics`` (e.g. held-out AUC) and ``extra`` go into the manifest as given
    (they must be JSON-serialisable). A link at ``path`` is written through;
    the path is returned as given.
    """
    path = Path(path)
    tmp = stage_model(clf, path, window=window, metrics=metrics, feature_set_file=feature_set_file, extra=extra)
    try:
        commit_model(tmp, path)
    finally:
        # After a successful swap ``tmp`` holds the old model (or is gone).
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def stage_model(
    clf: TriageClassifier,
    path: str | Path,
    *,
    window: str | int | None = None,
    metrics: dict[str, object] | None = None,
    feature_set_file: str | Path | None = None,
    extra: dict[str, object] | None = None,
    run_id: str | None = None,
) -> Path:
    """Write the complete model directory beside ``path`` (not yet in place); returns it.

    :func:`commit_model` puts it in place. The training pipeline logs the
    staged directory to MLflow in between, so that the registry never
    advertises a model that is not complete. ``run_id`` (the MLflow run that
    produced the model) goes into the manifest: it is how an interrupted run is
    later told apart from a finished one. The caller removes the staged
    directory if it is not committed.
    """
    if not hasattr(clf, "estimator_"):
        raise ValueError("the classifier is not fitted")
    # Staged beside the directory a link names, so that the swap replaces that
    # directory and not the link (which a rename would move aside as litter).
    path = _target(path)
    parent = path.parent
    if path.exists():
        _check_replaceable(path)
    _check_folder(path)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(path)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_temporary_prefix(path)}{os.getpid()}-", dir=parent))
    except OSError as exc:  # it named the temporary folder, which the user never heard of
        raise ModelFileError(path, f"cannot write the model beside it in {parent}: {exc.strerror or exc}") from None
    try:
        # mkdtemp makes the directory private (0700); a model directory should
        # get the usual permissions, as ``mkdir`` would give it.
        os.chmod(tmp, 0o777 & ~current_umask())
        files = _write_model(clf, tmp)
        manifest = _manifest(clf, files, window, metrics, feature_set_file, extra)
        if run_id is not None:
            manifest["run_id"] = run_id
        _write_bytes(tmp / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
        sums = "".join(f"{_sha256(tmp / name)}  {name}\n" for name in sorted([*files.values(), MANIFEST]))
        _write_bytes(tmp / CHECKSUMS, sums.encode())
        _fsync_dir(tmp)
    except OSError as exc:  # a full disk, a quota: name the model, not the temporary file (removed now)
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno is not None:  # a write() error names no file at all ("File too large"), open() the temporary one
            exc.filename, exc.filename2 = str(path), None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def commit_model(staged: Path, path: str | Path) -> None:
    """Swap the directory :func:`stage_model` wrote into ``path`` (atomic; the old model ends in ``staged``)."""
    path = _target(path)
    if (home := enclosing_model_dir(path)) is not None:
        raise ModelFileError(path, f"is inside the model directory {home}, whose checksums would no longer "
                                   "cover its files; write the model elsewhere")
    if path.exists():
        _check_replaceable(path)
    try:
        replace_dir(staged, path)
    except OSError as exc:
        # Another `train --out` to a new folder put its model there between the check and the rename
        # ("Directory not empty", naming our temporary folder, and this model was lost): swap with it.
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not path.is_dir():
            raise
        _check_replaceable(path)
        replace_dir(staged, path)
    _fsync_dir(path.parent)


def _target(path: str | Path) -> Path:
    """The directory a write to ``path`` replaces (links followed), as a :class:`ModelFileError`."""
    try:
        return directory_target(path)
    except InputError as exc:
        raise ModelFileError(path, exc.problem) from None


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


def clean_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove temporary directories of ``path`` left by writers that were killed; returns them.

    A writer's temporary directory is ``.<name>.tmp-<pid>-<random>`` beside
    ``path``: it is stale when no process ``<pid>`` runs any more (or the name
    carries no pid, as older versions wrote). Live writers' directories stay,
    and so does any directory holding anything but a model's files (a folder
    of the user's that merely shares the name).
    For a link, the temporaries are those beside the directory it names.
    """
    try:
        path = _target(path)
    except ModelFileError:
        return []  # nothing can have been written there; saving will say why
    parent = path.parent
    prefix = _temporary_prefix(path)
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.is_symlink() or not entry.is_dir():
            continue
        pid_text = entry.name[len(prefix):].split("-", 1)[0]
        if pid_text.isdigit() and process_alive(int(pid_text)):
            continue
        if not _holds_only_model_files(entry):
            # A folder of the user's that merely shares the name (".m.tmp-backup" holding notes) was
            # deleted, whole, by the next `train --out m`. A writer's holds a model's files, nothing else.
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


#: What a writer's temporary directory can hold: a model's files (staged, or the old model swapped out).
_MODEL_FILE_NAMES: frozenset[str] = frozenset(
    {MANIFEST, CHECKSUMS, "model.skops", "calibrator.skops"} | {k.native_file for k in KINDS.values() if k.native_file}
)


def _holds_only_model_files(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but regular files a model writer writes (or nothing)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    return all(e.name in _MODEL_FILE_NAMES and e.is_file(follow_symlinks=False) for e in entries)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` may still be running here (ours, or one we cannot judge: yes)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # exists (another user's), or not a pid we can judge: leave it
    return True


def check_writable(path: str | Path) -> None:
    """Raise :class:`ModelFileError` now if :func:`save_model` would refuse ``path`` later."""
    path = _target(path)
    if (home := enclosing_model_dir(path)) is not None:
        raise ModelFileError(path, f"is inside the model directory {home}, whose checksums would no longer "
                                   "cover its files; write the model elsewhere")
    if path.exists():
        _check_replaceable(path)
    _check_folder(path)


def _check_folder(path: Path) -> None:
    """The folder that will hold ``path`` (or its nearest existing ancestor) is writable for this user.

    The model is written beside ``path`` and swapped in: without this check
    a read-only folder was found out only after the training, with an
    error naming the temporary folder.
    """
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise ModelFileError(path, f"the folder {folder} is not writable for this user: a model is written "
                                   "beside its place and swapped in; make the folder writable or write the model "
                                   "elsewhere")


def _check_replaceable(path: Path) -> None:
    if not path.is_dir():
        raise ModelFileError(path, "exists and is not a directory; refusing to replace it")
    if any(path.iterdir()) and not (path / MANIFEST).is_file():
        raise ModelFileError(path, "exists and is not a model directory (no manifest.json); refusing to replace it")
    # Replacing a model replaces the whole folder: notes or results kept beside the
    # model (NOTES.md, an eval/ folder) were deleted without a word.
    try:
        sums = (path / CHECKSUMS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # an incomplete or damaged model: nothing tells its own files from others
    own = {line.partition("  ")[2] for line in sums.splitlines()} | {CHECKSUMS}
    if others := sorted(p.name for p in path.iterdir() if p.name not in own):
        raise ModelFileError(path, f"holds {', '.join(others[:5])}{' and more' if len(others) > 5 else ''}, "
                                   "which the model's checksums do not cover; replacing the model would delete "
                                   "them: move them out first, or write the model elsewhere")


def _write_model(clf: TriageClassifier, where: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    kind = KINDS[clf.model]
    if kind.native_file is not None:
        # The kind's own format (XGBoost's is forward-readable by later versions).
        target = where / kind.native_file
        kind.save_native(clf.estimator_, target)
        _fsync_file(target)
        files["estimator"] = target.name
    else:
        _dump_skops(clf.estimator_, where / "model.skops")
        files["estimator"] = "model.skops"
    if clf.calibrator_ is not None:
        _dump_skops(clf.calibrator_, where / "calibrator.skops")
        files["calibrator"] = "calibrator.skops"
    return files


def _dump_skops(obj: object, target: Path) -> None:
    import skops.io as sio

    sio.dump(obj, target, compression=zipfile.ZIP_DEFLATED, compresslevel=9)
    _fsync_file(target)


def _manifest(clf, files, window, metrics, feature_set_file, extra) -> dict[str, object]:
    params = {k: _json_value(v) for k, v in clf.params_.items()}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": clf.model,
        "files": files,
        "calibration": type(clf.calibrator_).__name__ if clf.calibrator_ is not None else None,
        "classes": [_json_value(c) for c in clf.classes_],
        "features": list(clf.feature_names_) if clf.feature_names_ is not None else None,
        "n_features": int(clf.n_features_in_),
        "feature_set_file": str(feature_set_file) if feature_set_file is not None else None,
        "window": window,
        "threshold": {"policy": clf.threshold_policy_, "value": float(clf.threshold_)},
        "class_weight": clf.class_weight,
        "random_state": clf.random_state,
        "params": params,
        "libraries": library_versions(),
        "data_hash": clf.data_hash_,
        "n_train": clf.n_train_,
        "metrics": metrics or {},
        "extra": extra or {},
    }


def library_versions(revision: bool = True) -> dict[str, str | None]:
    """Versions of the libraries a saved model depends on, and the code's revision (:mod:`triage.core.versions`).

    ``revision=False``: without the revision (two git commands), as a load's compatibility check needs.
    """
    out = distribution_versions(("scikit-learn", "xgboost", "skops", "numpy", "changepoint-triage"), revision)
    if out.get("xgboost") is None:
        try:
            out["xgboost"] = metadata.version("xgboost-cpu")
        except metadata.PackageNotFoundError:
            pass
    return out


def _json_value(v: object) -> object:
    if isinstance(v, np.generic):
        return v.item()
    return v


# ---------------------------------------------------------------------- loading


def load_model(path: str | Path) -> TriageClassifier:
    """A fitted :class:`TriageClassifier` from a model directory.

    Verifies checksums, format and library compatibility first; raises
    :class:`ModelFileError` naming the problem otherwise. The manifest is
    available as ``clf.manifest_``.
    """
    path = Path(path)
    # The files are read by name, one after another: a `train --out` swapping a new model in
    # meanwhile handed out one model's manifest (threshold, features) with the other's estimator.
    # The directory at ``path`` is the same before and after a whole load, or the load is redone.
    # A load that met the swap half-way may also fail (a checksum of the other model's file).
    for _ in range(3):
        before = _directory_identity(path)
        try:
            clf = _load_once(path)
        except ModelFileError:
            if _directory_identity(path) != before:
                continue
            raise
        if _directory_identity(path) == before:
            return clf
    raise ModelFileError(path, "was replaced by another model while it was read, again and again; try again "
                               "once the training that writes it has finished")


def _directory_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the directory ``path`` names (links followed): a model swapped in changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _load_once(path: Path) -> TriageClassifier:
    manifest = verify_model_dir(path)
    files = manifest["files"]
    kind = KINDS[manifest["model"]]
    if kind.native_file is not None:
        try:
            estimator = kind.load_native(path / files["estimator"])
        except Exception as exc:  # XGBoostError and friends: report, never half-load
            raise ModelFileError(path, f"cannot read {files['estimator']}: {exc}") from None
    else:
        estimator = _load_skops(path, files["estimator"])
    if type(estimator).__name__ not in ESTIMATOR_TYPES[kind.name]:
        raise ModelFileError(
            path, f"{files['estimator']} holds a {type(estimator).__name__}, not a {kind.name} model: the manifest does not match"
        )
    n_in = getattr(estimator, "n_features_in_", None)
    if n_in is not None and int(n_in) != manifest["n_features"]:
        # Another model's file with its checksums redone: it failed at the first prediction, an internal error.
        raise ModelFileError(
            path, f"{files['estimator']} takes {int(n_in)} features, the manifest lists {manifest['n_features']}: "
                  "the files are not of one model"
        )
    calibrator = _load_skops(path, name) if (name := files.get("calibrator")) else None

    threshold = manifest["threshold"]
    try:
        clf = TriageClassifier(
            model=manifest["model"],
            features=manifest.get("features"),
            threshold=threshold["policy"],
            class_weight=manifest.get("class_weight"),
            random_state=manifest.get("random_state"),
            **manifest["params"],
        )
    except (TypeError, ValueError) as exc:  # a parameter name TriageClassifier does not take
        raise ModelFileError(path, f"manifest parameters are not usable: {exc}") from None
    clf.estimator_ = estimator
    clf.calibrator_ = calibrator
    clf.classes_ = np.array(manifest["classes"], dtype=object if isinstance(manifest["classes"][0], str) else None)
    clf.feature_names_ = manifest.get("features")
    if clf.feature_names_ is not None:
        clf.feature_names_in_ = np.asarray(clf.feature_names_, dtype=object)
    clf.n_features_in_ = int(manifest["n_features"])
    clf.threshold_ = float(threshold["value"])
    clf.threshold_policy_ = str(threshold["policy"])
    clf.params_ = dict(manifest["params"])
    clf.data_hash_ = manifest["data_hash"]
    clf.n_train_ = manifest["n_train"]
    clf.manifest_ = manifest
    return clf


def verify_model_dir(path: str | Path) -> Manifest:
    """Check checksums and compatibility of a model directory; return its manifest."""
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(path, "no such model directory")
    _verify_checksums(path)
    try:
        manifest = json.loads(_read_small(path, MANIFEST).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ModelFileError(path, f"unreadable manifest.json: {exc}") from None
    check_compatible(manifest, path)
    _check_manifest_files(manifest, path)
    return cast(Manifest, manifest)  # its keys and values checked just above


def _check_entry(path: Path, name: str) -> os.stat_result:
    """``name`` inside ``path`` is a plain name of a regular file under the size limit."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ModelFileError(path, f"file name {name!r} is not a plain name inside the model directory")
    try:
        st = os.lstat(path / name)
    except OSError as exc:
        raise ModelFileError(path, f"cannot read {name}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ModelFileError(path, f"{name} is a symbolic link; a model directory holds regular files only")
    if not stat.S_ISREG(st.st_mode):
        raise ModelFileError(path, f"{name} is not a regular file (a FIFO, device or directory)")
    if st.st_size > MAX_FILE_BYTES:
        raise ModelFileError(path, f"{name} is {st.st_size:,} bytes, over the limit of {MAX_FILE_BYTES:,}")
    return st


def _read_small(path: Path, name: str) -> bytes:
    st = _check_entry(path, name)
    if st.st_size > MAX_TEXT_BYTES:
        raise ModelFileError(path, f"{name} is {st.st_size:,} bytes, over the limit of {MAX_TEXT_BYTES:,}")
    try:
        # O_NOFOLLOW | O_NONBLOCK: if the entry was swapped for a link or FIFO since
        # lstat, opening fails or returns at once instead of following or blocking.
        fd = os.open(path / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ModelFileError(path, f"cannot read {name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(MAX_TEXT_BYTES + 1)


def _check_manifest_files(manifest: dict, path: Path) -> None:
    """The manifest's files are the kind's, inside the directory; its threshold is usable."""
    files = manifest["files"]
    kind = KINDS[manifest["model"]]
    if not isinstance(files, dict) or not isinstance(files.get("estimator"), str):
        raise ModelFileError(path, "manifest 'files' must name the estimator file")
    if unknown := sorted(set(files) - {"estimator", "calibrator"}):
        raise ModelFileError(path, f"manifest names unknown file role(s): {', '.join(unknown)}")
    for role, name in files.items():
        if name is None and role == "calibrator":
            continue
        _check_entry(path, name)  # inside, regular, bounded (the checksums cover only the inside)
    expected = kind.native_file or "model.skops"
    if files["estimator"] != expected:
        raise ModelFileError(
            path, f"a {kind.name} model is stored in {expected}, but the manifest names {files['estimator']!r}"
        )
    if files.get("calibrator") not in (None, "calibrator.skops"):
        raise ModelFileError(path, f"the calibrator is stored in calibrator.skops, not {files['calibrator']!r}")
    if kind.margin_score and not files.get("calibrator"):
        raise ModelFileError(path, f"a {kind.name} model needs its calibrator (its score is a margin)")
    threshold = manifest["threshold"]
    value = threshold.get("value") if isinstance(threshold, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ModelFileError(path, f"manifest threshold {value!r} is not a finite number in [0, 1]")
    if not isinstance(threshold.get("policy"), str):
        raise ModelFileError(path, "manifest threshold policy must be text")
    if not isinstance(manifest["params"], dict) or not all(isinstance(k, str) for k in manifest["params"]):
        raise ModelFileError(path, "manifest params must be an object of named values")
    n_features = manifest["n_features"]
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise ModelFileError(path, f"manifest n_features {n_features!r} is not a positive integer")
    features = manifest.get("features")
    if features is not None and (not isinstance(features, list) or not all(isinstance(f, str) for f in features)):
        raise ModelFileError(path, "manifest features must be a list of column names")
    window = manifest.get("window")
    if window is not None and window != "adaptive" and (isinstance(window, bool) or not isinstance(window, int) or window < 0):
        raise ModelFileError(path, f"manifest window {window!r} is not 'adaptive' or an integer >= 0")
    # What load_model hands the classifier's constructor or sets as its fitted state.
    class_weight = manifest.get("class_weight")
    if not (class_weight in ("balanced", None) or (
        isinstance(class_weight, dict) and all(_is_number(w) for w in class_weight.values())
    )):
        raise ModelFileError(path, f"manifest class_weight {class_weight!r} is not 'balanced', an object or null")
    random_state = manifest.get("random_state")
    if random_state is not None and (isinstance(random_state, bool) or not isinstance(random_state, int)):
        raise ModelFileError(path, f"manifest random_state {random_state!r} is not an integer or null")
    if not isinstance(manifest["data_hash"], str):
        raise ModelFileError(path, "manifest data_hash must be text")
    n_train = manifest["n_train"]
    if not isinstance(n_train, dict) or not all(isinstance(v, int) and not isinstance(v, bool) for v in n_train.values()):
        raise ModelFileError(path, "manifest n_train must be an object of counts")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _verify_checksums(path: Path) -> None:
    if not os.path.lexists(path / CHECKSUMS):
        raise ModelFileError(path, f"no {CHECKSUMS}: not a model directory, or an incomplete one")
    try:
        sums_text = _read_small(path, CHECKSUMS).decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFileError(path, f"{CHECKSUMS} is not text: not a model directory, or a damaged one") from None
    expected: dict[str, str] = {}
    for n, line in enumerate(sums_text.splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or "/" in name or name in ("", ".", ".."):
            raise ModelFileError(path, f"{CHECKSUMS} line {n} is malformed")
        expected[name] = digest
    present = {p.name for p in path.iterdir() if p.name != CHECKSUMS}
    if MANIFEST not in expected:
        raise ModelFileError(path, f"{CHECKSUMS} does not cover {MANIFEST}")
    if missing := sorted(set(expected) - present):
        raise ModelFileError(path, f"missing file(s): {', '.join(missing)}")
    if unknown := sorted(present - set(expected)):
        raise ModelFileError(path, f"file(s) not covered by the checksums: {', '.join(unknown)}")
    for name in expected:
        _check_entry(path, name)  # before reading: a FIFO or /dev/zero link would never end
    for name, digest in expected.items():
        if _sha256(path / name) != digest:
            raise ModelFileError(path, f"checksum mismatch for {name}: the file was modified or corrupted")


def check_compatible(manifest: object, path: str | Path = "<manifest>") -> None:
    """Raise :class:`ModelFileError` unless this installation can load ``manifest``'s model."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelFileError(path, "not a changepoint-triage model (manifest format)")
    version = manifest.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        # It said only "model format version 2; this version reads up to 1": not what to do.
        raise ModelFileError(path, f"model format version {version}, written by a newer changepoint-triage; "
                                   f"this version reads up to {FORMAT_VERSION}: upgrade changepoint-triage to "
                                   "load it, or retrain the model with this version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        # true read as 1, and 0 or -3 (no version ever written) loaded as this format.
        raise ModelFileError(path, f"manifest format_version {json.dumps(version)} is not a model format "
                                   f"version (1 to {FORMAT_VERSION} are): the manifest was not written by "
                                   "changepoint-triage; retrain the model")
    for key in ("model", "files", "classes", "n_features", "threshold", "params", "libraries", "data_hash", "n_train"):
        if key not in manifest:
            raise ModelFileError(path, f"manifest lacks {key!r}")
    if manifest["model"] not in MODELS:
        raise ModelFileError(path, f"unknown model kind {manifest['model']!r}")
    features = manifest.get("features")
    if features is not None and (not isinstance(features, list) or len(features) != manifest["n_features"]):
        raise ModelFileError(path, "manifest lists a different number of features than n_features")
    if not isinstance(manifest["classes"], list) or len(manifest["classes"]) != 2:
        raise ModelFileError(path, "manifest classes must be two")
    saved = manifest["libraries"]
    if not isinstance(saved, dict) or not isinstance(manifest["files"], dict):
        raise ModelFileError(path, "manifest 'libraries' and 'files' must be objects")
    here = library_versions(revision=False)
    kind = KINDS[manifest["model"]]
    if kind.native_file is None or manifest["files"].get("calibrator"):
        # skops files hold scikit-learn internals, whose layout may change with
        # any minor release (tree node arrays did): require the same major.minor.
        if _major_minor(saved.get("scikit-learn"))[0] is None:
            # It read "saved with scikit-learn None": a version nobody can install.
            raise ModelFileError(path, _unrecorded("scikit-learn", saved.get("scikit-learn"), here["scikit-learn"]))
        if _major_minor(saved.get("scikit-learn")) != _major_minor(here["scikit-learn"]):
            raise ModelFileError(
                path,
                f"saved with scikit-learn {saved.get('scikit-learn')}, this is {here['scikit-learn']}: "
                "retrain, or install the saved version",
            )
    if (lib := kind.native_library) is not None:
        saved_major = _major_minor(saved.get(lib))[0]
        here_major = _major_minor(here.get(lib))[0]
        # A native format reads models of older versions, not of newer ones.
        if saved_major is None:
            raise ModelFileError(path, _unrecorded(lib, saved.get(lib), here.get(lib)))
        if here_major is None:
            raise ModelFileError(path, f"saved with {lib} {saved.get(lib)}, which is not installed here: "
                                       f"install {lib} {saved.get(lib)} or later")
        if saved_major > here_major:
            # It ended in "cannot read it", without a way out.
            raise ModelFileError(
                path, f"saved with {lib} {saved.get(lib)}, this is {here.get(lib)}: {lib} reads models of its own "
                      f"and older versions only; install {lib} {saved_major}.x, or retrain the model here"
            )


def _unrecorded(lib: str, saved: object, here: object) -> str:
    """The refusal of a manifest that does not say which ``lib`` version wrote the model."""
    what = "does not record" if saved is None else f"records {saved!r} as"
    return (f"the manifest {what} the {lib} version the model was saved with, so it cannot be told whether "
            f"this {lib} ({here}) reads it: retrain the model with this installation")


def _major_minor(version: object) -> tuple[int | None, int | None]:
    try:
        parts = str(version).split(".")
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None, None


def _load_skops(path: Path, name: str) -> object:
    import skops.io as sio
    from skops.io.exceptions import UntrustedTypesFoundException

    file = path / name
    try:
        # skops audits every type against the allowlist before it constructs
        # anything; asking for the untrusted types first read and audited the
        # file twice (a third of a forest's load time).
        return sio.load(file, trusted=sorted(TRUSTED_TYPES))
    except UntrustedTypesFoundException:
        pass  # refused below, naming the types
    except Exception as exc:  # a zip that is no skops file, etc.
        raise ModelFileError(path, f"cannot read {name}: {exc}") from None
    refused = sorted(set(sio.get_untrusted_types(file=file)) - TRUSTED_TYPES)
    raise ModelFileError(path, f"{name} holds types outside the allowlist: {', '.join(refused)}")


# ---------------------------------------------------------------------- low-level IO


_sha256 = file_sha256  # the one digest of a file (triage.core.versions)


def _write_bytes(target: Path, data: bytes) -> None:
    with open(target, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_file(target: Path) -> None:
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not every platform opens directories
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


