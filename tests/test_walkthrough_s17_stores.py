"""Walkthrough s17: what changepoint-triage stores, under concurrency, interruption and damage.

The engineer runs triage in CI and on a shared server, where jobs overlap,
get killed and disks fill. Defects found (what the user did, what went
wrong, what happens now):

1. Started two ``triage train`` jobs at once on a new MLflow store (the
   default ``sqlite:///mlruns.db``, two CI jobs in one workspace): MLflow
   creates a new store's tables and runs its schema migrations on the first
   access, and both processes did so together. One or both failed ("table
   experiments already exists", "table _alembic_tmp_metrics already exists",
   "Online migration expected to match one row ...") and the file was left
   half-migrated: every later ``train`` / ``models list`` on it failed too.
   Now the first access to a SQLite store is made under an exclusive lock
   on its folder (``flock``, no file left beside the store): the second job
   waits a moment and both train.
2. A job killed (``kill -9``) while it created a new MLflow store left a
   store that every later command refused with MLflow's own line ("table
   experiment_tags already exists"), saying neither what happened nor what to
   do. Now: the store's creation was cut short, it holds no runs and no
   models, move it aside and run again.
3. Trained with a tracking store the job may not write (a read-only
   ``mlruns.db``, or a new one in a read-only folder): the features were
   extracted and the model fitted, then MLflow's own ERROR log printed a
   traceback and the one line read "the tracking store cannot be used:
   (raised as a result of Query-invoked autoflush; consider using a
   session.no_autoflush block ...)", SQLAlchemy's hint, not the cause (the
   read-only file: "disk I/O error"); a new store in a read-only folder took
   100 s of MLflow's retries and warnings before "unable to open database
   file". Now ``train`` / ``evaluate`` refuse it before any work, naming the file (or
   the folder) as not writable; ``models list`` still reads such a store, and
   a store error names its cause ("attempt to write a readonly database").
4. Gave ``train --out`` a place in a read-only folder: the data was read, the
   features extracted and the model fitted, and only then did the write fail,
   naming a temporary folder the user never heard of
   (``rof/.m.tmp-31745-3noynatk: Operation not permitted``); a full disk
   while the model was written named the temporary file in the same way, and
   a file-size limit (``ulimit -f``) printed "error: File too large", no file.
   Now the folder is checked with the other options (one line naming
   ``--out`` and the folder, before any work), and a failed write names the
   model directory.
5. Replaced ``model.ubj`` of a model directory by another model's (its
   checksums redone, as a hand repair or a bad copy does): ``score`` and
   ``watch`` loaded it and stopped at the first prediction with "internal
   error: ValueError: Feature shape mismatch, expected: 51, got 64", exit 1.
   Now loading refuses it: the estimator takes 51 features, the manifest
   lists 64, the files are not of one model (exit 2).
6. Started two ``triage watch --state s.db`` at once on a new file (two CI
   jobs): SQLite creates the file empty and writes its first page a moment
   later, and the second watcher, finding it empty, called the first one's
   new store damaged ("is empty (0 bytes): truncated ...; recover with
   `triage watch --state s.db --reset-state`"), advice that moved the store
   in use aside (12 of 24 starts in a trial of 8 triples). And both could
   fail: each opener gave up at once (SQLite timeout 0) while the other held
   a read lock, leaving no watcher at all (3 of 8 triples). Now an empty file
   is looked at again for half a second before it counts as truncated, and
   an opener waits a second for the lock: one watcher runs, the other is
   refused "in use by another process", as README says.
7. Started ``triage score`` / ``watch`` / ``serve`` while a ``train --out``
   to the same model directory swapped its new model in: the loader read
   the files by name one after another, so a swap between the checksum check
   and the estimator's load handed out the old manifest (threshold, feature
   list) with the new model's estimator, silently. Now a load that sees the
   directory at the path change meanwhile is redone on the new model.
   (Found reading the loader; shown by the test's interleaving, not caught
   in a live run.)
8. Used ``--model models:/NAME/VERSION`` after the local cache copy of that
   version was damaged (a file truncated by a full disk, a download killed
   half-way): every later command failed with "checksum mismatch" naming a
   folder under ``~/.cache/changepoint-triage``, the cache never fetched
   again. Now a cached copy that does not verify is fetched again from the
   registry (into a temporary folder, renamed into place whole); a
   damaged copy in the registry itself is named as the registered
   version's, not as a cache folder.
9. Ran ``triage labels export`` / ``labels agreement`` on a labels store this
   user may not write (an archived copy made read-only, another user's
   store, a read-only folder): SQLite's WAL mode writes beside the file even
   to read it, the open failed with "disk I/O error", and the store was
   called damaged: "cannot be read (disk I/O error); move lab.db aside ...
   and start again". Now one line says the store (or its folder) is not
   writable and how to read it (a writable copy); nothing is called damaged.
10. Two ``train --out new-folder`` finishing at the same moment: both saw no
    folder there and renamed their model into place; the second rename met
    the first's model and failed with "Directory not empty", naming its own
    temporary folder, and its model was lost. Now the second swaps its model
    with the first's, as it would have a moment later (the last one wins).
    (Found reading ``replace_dir``'s check-then-rename; four live pairs of
    trains did not hit the window, the test's interleaving does.)
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from helpers_cli import flat, invoke, make_unwritable

# ---------------------------------------------------------------------- 1, 2: MLflow store creation


def _forked(fn, n: int) -> list[int]:
    """Run ``fn()`` in ``n`` forked children released at once; their exit codes (0: it returned)."""
    read, write = os.pipe()
    children = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(write)
                os.read(read, 1)  # wait for the start
                fn()
                code = 0
            except BaseException:  # noqa: BLE001 - the exit code says it
                code = 3
            finally:
                os._exit(code)
        children.append(pid)
    os.close(read)
    os.write(write, b"x" * n)
    os.close(write)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_two_processes_creating_one_tracking_store_both_succeed(tmp_path: Path) -> None:
    """Forked after MLflow is imported, so that both reach the new store at once, as two CI jobs do."""
    import mlflow.store.model_registry.sqlalchemy_store  # noqa: F401 - imported before the fork
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401

    from triage.training.tracking import check_store

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    assert _forked(lambda: check_store(uri), 3) == [0, 0, 0]
    assert _forked(lambda: check_store(uri), 1) == [0]  # and the store stays usable


def test_a_tracking_store_whose_creation_was_cut_short_says_so(tmp_path: Path) -> None:
    from triage.training.tracking import TrackingError, check_store

    db = tmp_path / "mlruns.db"
    con = sqlite3.connect(db)  # what a kill between MLflow's first tables and its migrations leaves
    con.executescript("CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY, name TEXT);"
                      "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY);"
                      "CREATE TABLE experiment_tags (key TEXT, value TEXT, experiment_id INTEGER);"
                      "CREATE TABLE alembic_version (version_num TEXT); INSERT INTO alembic_version VALUES ('451aebb31d03');")
    con.close()
    with pytest.raises(TrackingError) as err:
        check_store(f"sqlite:///{db}")
    message = str(err.value)
    assert "creation was cut short" in message and "holds no runs" in message and "move it aside" in message
    assert db.is_file()  # never removed for the user


# ---------------------------------------------------------------------- 3: a store this user may not write


@pytest.fixture(scope="module")
def new_tracking_store(tmp_path_factory) -> Path:
    """An empty MLflow store made once (its schema migrations take seconds); tests take a copy."""
    from triage.training.tracking import check_store

    db = tmp_path_factory.mktemp("store") / "mlruns.db"
    check_store(f"sqlite:///{db}")
    return db


def _copy_of(store: Path, where: Path) -> Path:
    import shutil

    db = where / "mlruns.db"
    shutil.copyfile(store, db)
    return db


def test_read_only_tracking_store_is_refused_before_training(tmp_path: Path, request, new_tracking_store) -> None:
    db = _copy_of(new_tracking_store, tmp_path)  # a store made by an earlier job
    uri = f"sqlite:///{db}"
    make_unwritable(db, request)
    before = db.read_bytes()
    out = tmp_path / "model"
    code, text = invoke(["train", "--preset", "small", "--out", out, "--tracking-uri", uri])
    text = flat(text)
    assert code == 2, text
    assert "mlruns.db is read-only for this user" in text and "--no-track" in text, text
    assert "Traceback" not in text and "features" not in text, text  # refused before any work
    assert not out.exists() and db.read_bytes() == before
    code, text = invoke(["models", "list", "--tracking-uri", uri])  # reading it still works
    assert code == 0, flat(text)
    # promote writes an alias: refused the same way (SQLAlchemy's 80-line traceback came first;
    # thirty-second session)
    code, text = invoke(["models", "promote", "some-model", "1", "--tracking-uri", uri])
    text = flat(text)
    assert code == 2 and "mlruns.db is read-only for this user: the alias is written into it" in text, text
    assert "Traceback" not in text and db.read_bytes() == before


def test_new_tracking_store_in_a_read_only_folder_is_refused_naming_the_folder(tmp_path: Path, request) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    make_unwritable(folder, request)
    code, text = invoke(["evaluate", "--preset", "small", "--splits", "2", "--tracking-uri",
                         f"sqlite:///{folder / 'mlruns.db'}"])
    text = flat(text)
    assert code == 2, text
    assert f"the folder {folder} is not writable" in text, text


def test_a_store_error_names_its_cause_not_sqlalchemys_autoflush_hint() -> None:
    import sqlalchemy.exc

    from triage.training.tracking import TrackingError, store_errors

    err = sqlalchemy.exc.OperationalError("INSERT INTO runs ...", {}, sqlite3.OperationalError(
        "attempt to write a readonly database"))
    err.add_detail("raised as a result of Query-invoked autoflush; consider using a session.no_autoflush block "
                   "if this flush is occurring prematurely")
    with pytest.raises(TrackingError) as caught, store_errors("sqlite:///mlruns.db"):
        raise err
    assert str(caught.value).endswith("the tracking store cannot be used: (sqlite3.OperationalError) attempt to "
                                      "write a readonly database"), str(caught.value)


# ---------------------------------------------------------------------- 4: train --out in a folder that cannot take it


def test_train_out_in_a_read_only_folder_is_refused_before_any_work(tmp_path: Path, request) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    make_unwritable(folder, request)
    for out in (folder / "m", folder / "deeper" / "m"):
        code, text = invoke(["train", "--preset", "small", "--no-track", "--out", out])
        text = flat(text)
        assert code == 2, text
        assert f"{out}: the folder {folder} is not writable" in text and ".tmp-" not in text, text
        assert "trained on" not in text, text  # refused before the work
    assert list(folder.iterdir()) == []


def test_a_full_disk_while_the_model_is_written_names_the_model(tmp_path: Path, monkeypatch) -> None:
    import errno

    from helpers_training import make_matrix

    from triage.training import model_files
    from triage.training.classifier import TriageClassifier

    clf = TriageClassifier(model="rf", n_estimators=5).fit(make_matrix(30, 3, seed=1))
    out = model_files.save_model(clf, tmp_path / "m")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    for error in (lambda target: OSError(errno.ENOSPC, "No space left on device", str(target)),
                  lambda target: OSError(errno.EFBIG, "File too large")):  # write() names no file
        def full(obj, target, error=error):
            raise error(target)

        monkeypatch.setattr(model_files, "_dump_skops", full)
        with pytest.raises(OSError) as err:
            model_files.save_model(clf, out)
        assert err.value.filename == str(out) and ".tmp-" not in str(err.value), err.value
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


# ---------------------------------------------------------------------- 5: a model directory of two models' files


def _redo_checksums(model: Path) -> None:
    import hashlib

    names = sorted(p.name for p in model.iterdir() if p.name != "checksums.sha256")
    (model / "checksums.sha256").write_text(
        "".join(f"{hashlib.sha256((model / n).read_bytes()).hexdigest()}  {n}\n" for n in names))


def test_another_models_estimator_in_a_model_directory_is_refused_on_loading(tmp_path: Path) -> None:
    import shutil

    from triage.model_lookup import bundled_model

    model = tmp_path / "scoring"
    shutil.copytree(bundled_model("default-scoring"), model)
    shutil.copyfile(bundled_model("online-w4") / "model.ubj", model / "model.ubj")
    _redo_checksums(model)
    data = tmp_path / "h.csv"
    rows = "".join(f"s1,c{i},{1.0 + 0.5 * (i >= 20) + 0.01 * (i % 3)}\n" for i in range(40))
    data.write_text("series_id,commit,value\n" + rows)
    candidates = tmp_path / "c.csv"
    candidates.write_text("series_id,commit\ns1,c20\n")
    code, text = invoke(["score", "--data", data, "--candidates", candidates, "--model", model])
    text = flat(text)
    assert code == 2, text
    assert "model.ubj takes 51 features, the manifest lists 64: the files are not of one model" in text, text


# ---------------------------------------------------------------------- 6: two watchers starting at once


def test_second_watcher_is_not_told_the_first_ones_new_store_is_damaged(tmp_path: Path) -> None:
    import threading
    import time

    from triage.online.state_store import StateStore, StateStoreError

    db = tmp_path / "s.db"
    # The first watcher's SQLite has just created the file, empty; it writes the first page a moment later.
    first = sqlite3.connect(db, isolation_level=None, timeout=0.0, check_same_thread=False)
    first.execute("PRAGMA locking_mode=EXCLUSIVE")

    def first_goes_on() -> None:
        time.sleep(0.1)
        first.execute("PRAGMA journal_mode=WAL")
        first.execute("BEGIN IMMEDIATE")

    thread = threading.Thread(target=first_goes_on)
    thread.start()
    try:
        with pytest.raises(StateStoreError, match="in use by another process"):
            StateStore(db)
    finally:
        thread.join()
        first.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]  # nothing moved aside


def test_a_watcher_waits_for_a_moments_read_lock_instead_of_failing(tmp_path: Path) -> None:
    import threading

    from triage.online.state_store import StateStore

    db = tmp_path / "s.db"
    StateStore(db).close()
    reader = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a starting peer's check reading the file
    timer = threading.Timer(0.2, reader.close)  # its check done, the peer goes away
    timer.start()
    try:
        StateStore(db).close()
    finally:
        timer.join()


# ---------------------------------------------------------------------- 7: a model swapped in while it is loaded


def test_a_model_swapped_in_while_it_is_loaded_is_never_mixed_with_the_old_one(tmp_path: Path, monkeypatch) -> None:
    import numpy as np
    from helpers_training import make_matrix

    from triage.training import model_files
    from triage.training.classifier import TriageClassifier

    matrix = make_matrix(40, 3, seed=2)
    old = TriageClassifier(model="rf", n_estimators=5, threshold=0.3, random_state=1).fit(matrix)
    new = TriageClassifier(model="rf", n_estimators=9, threshold=0.7, random_state=2).fit(matrix)
    path = model_files.save_model(old, tmp_path / "m")
    real_check = model_files.check_compatible
    swapped: list[bool] = []

    def check_then_swap(manifest, where="<manifest>"):  # train --out, right after the checksums were read
        real_check(manifest, where)
        if not swapped:
            swapped.append(True)
            model_files.save_model(new, path)

    monkeypatch.setattr(model_files, "check_compatible", check_then_swap)
    loaded = model_files.load_model(path)
    assert swapped
    assert loaded.threshold_ == 0.7 and loaded.manifest_["params"]["n_estimators"] == 9
    np.testing.assert_array_equal(loaded.predict_proba(matrix), new.predict_proba(matrix))


# ---------------------------------------------------------------------- 8: a damaged cache copy of a registered model


def test_a_damaged_cache_copy_of_a_registered_model_is_fetched_again(tmp_path: Path, new_tracking_store) -> None:
    from helpers_training import make_matrix

    from triage.training import tracking
    from triage.training.model_files import load_model
    from triage.training.pipeline import train

    uri = f"sqlite:///{_copy_of(new_tracking_store, tmp_path)}"
    train(make_matrix(40, 3, seed=3), tmp_path / "model", model_params={"n_estimators": 5}, tracking_uri=uri,
          register_as="triage-s17", test_size=0.0)
    cache = tmp_path / "cache"
    model_dir = tracking.resolve_registry_uri("models:/triage-s17/1", uri, cache=cache)
    estimator = model_dir / "model.skops"
    whole = estimator.read_bytes()
    estimator.write_bytes(whole[:100])  # a full disk cut the file
    again = tracking.resolve_registry_uri("models:/triage-s17/1", uri, cache=cache)
    assert (again / "model.skops").read_bytes() == whole
    load_model(again)
    assert [p.name for p in again.parents[1].iterdir() if ".tmp-" in p.name] == []
    # The registry's own copy damaged: the error names the version, not a temporary folder of the cache.
    (logged,) = [p for p in (tmp_path / "mlartifacts").rglob("model.skops")]
    logged.write_bytes(logged.read_bytes()[:100])
    with pytest.raises(tracking.TrackingError) as err:
        tracking.resolve_registry_uri("models:/triage-s17/1", uri, cache=tmp_path / "cache2")
    assert "models:/triage-s17/1: the registered model's files" in str(err.value) and ".tmp-" not in str(err.value)


# ---------------------------------------------------------------------- 9: a labels store this user may not write


def test_a_read_only_labels_store_is_not_called_damaged(tmp_path: Path, request) -> None:
    from triage.workspace.store import LabelsStore

    db = tmp_path / "labels.sqlite"
    store = LabelsStore(db)
    store.record("rhai/bench_engine_new/gha-ubuntu-latest", "abc123", "true", who="sheriff")
    store.close()
    before = db.read_bytes()
    make_unwritable(db, request)
    for args in (["labels", "export", "--labels", db, "--out", "-"], ["labels", "agreement", "--labels", db]):
        code, text = invoke(args)
        text = flat(text)
        assert code == 2, text
        assert "labels.sqlite: is read-only for this user" in text, text
        assert "damaged" not in text and "aside" not in text and "disk I/O" not in text, text
    assert db.read_bytes() == before


# ---------------------------------------------------------------------- 10: two trains putting a new folder in place


def test_a_model_committed_to_a_folder_another_train_just_created_replaces_it(tmp_path: Path, monkeypatch) -> None:
    import numpy as np
    from helpers_training import make_matrix

    from triage.training import model_files
    from triage.training.classifier import TriageClassifier

    matrix = make_matrix(30, 3, seed=4)
    theirs = TriageClassifier(model="rf", n_estimators=3, random_state=1).fit(matrix)
    ours = TriageClassifier(model="rf", n_estimators=6, random_state=2).fit(matrix)
    path = tmp_path / "m"
    real_rename = os.rename
    raced: list[bool] = []

    def other_train_first(src, dst):  # the other job's rename lands between our check and our rename
        if not raced and Path(dst) == path:
            raced.append(True)
            monkeypatch.setattr(os, "rename", real_rename)
            model_files.save_model(theirs, path)
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", other_train_first)
    model_files.save_model(ours, path)
    assert raced
    np.testing.assert_array_equal(model_files.load_model(path).predict_proba(matrix), ours.predict_proba(matrix))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
