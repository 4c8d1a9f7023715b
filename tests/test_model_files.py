"""Model directories: round trip, checksums, compatibility, atomic writes, allowlist."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_training import make_matrix, rewrite_manifest

from triage.core import atomic
from triage.core.errors import InputError
from triage.training import model_files
from triage.training.classifier import TriageClassifier
from triage.training.model_files import CHECKSUMS, ModelFileError, load_model, save_model

PARAMS = {"rf": {"n_estimators": 15}, "svm": {}, "xgb": {"n_estimators": 20}}


@pytest.fixture(scope="module")
def matrix() -> pd.DataFrame:
    return make_matrix(80, 3, seed=5)


@pytest.fixture(scope="module")
def fitted(matrix) -> dict[str, TriageClassifier]:
    return {
        m: TriageClassifier(model=m, threshold="recall:0.9", **PARAMS[m]).fit(matrix) for m in ("rf", "svm", "xgb")
    }




@pytest.mark.parametrize("model", ["rf", "svm", "xgb"])
def test_round_trip_gives_identical_probabilities(model, fitted, matrix, tmp_path):
    clf = fitted[model]
    path = save_model(clf, tmp_path / "m", window="adaptive", metrics={"auc": 0.9})
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(matrix), clf.predict_proba(matrix))
    np.testing.assert_array_equal(loaded.predict(matrix), clf.predict(matrix))
    assert loaded.threshold_ == clf.threshold_
    m = loaded.manifest_
    assert m["window"] == "adaptive"
    assert m["threshold"] == {"policy": "recall:0.9", "value": clf.threshold_}
    assert m["features"] == clf.feature_names_
    assert m["data_hash"] == clf.data_hash_ and len(m["data_hash"]) == 64
    assert m["metrics"]["auc"] == 0.9
    assert m["libraries"]["scikit-learn"]
    names = {p.name for p in path.iterdir()}
    assert "model.ubj" in names if model == "xgb" else "model.skops" in names
    assert not any(n.endswith(".pkl") or n.endswith(".pickle") for n in names)


def test_loading_runs_no_git(fitted, tmp_path, monkeypatch):
    # The compatibility check needs the installed libraries' versions only; it ran `git rev-parse`
    # and `git status` on every load (the code revision goes into the manifests written).
    import subprocess

    path = save_model(fitted["xgb"], tmp_path / "m")
    assert "changepoint-triage-revision" in load_model(path).manifest_["libraries"]

    def no_git(*args, **kwargs):
        raise AssertionError(f"a load started {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert load_model(path).manifest_["n_features"] == fitted["xgb"].n_features_in_


def test_tampered_file_is_refused(fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    with open(path / "model.skops", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ModelFileError, match="checksum mismatch for model.skops"):
        load_model(path)


def test_tampered_threshold_in_manifest_is_refused(fitted, tmp_path):
    path = save_model(fitted["xgb"], tmp_path / "m")
    text = (path / "manifest.json").read_text().replace('"value": 0.', '"value": 0.0')
    (path / "manifest.json").write_text(text)
    with pytest.raises(ModelFileError, match="checksum mismatch for manifest.json"):
        load_model(path)


def test_added_or_missing_files_are_refused(fitted, tmp_path):
    path = save_model(fitted["svm"], tmp_path / "m")
    (path / "extra.pkl").write_bytes(b"x")
    with pytest.raises(ModelFileError, match="not covered by the checksums: extra.pkl"):
        load_model(path)
    (path / "extra.pkl").unlink()
    (path / "calibrator.skops").unlink()
    with pytest.raises(ModelFileError, match="missing file"):
        load_model(path)
    (path / CHECKSUMS).unlink()
    with pytest.raises(ModelFileError, match="no checksums"):
        load_model(path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["libraries"].update({"scikit-learn": "0.24.2"}), "scikit-learn 0.24.2"),
        (lambda m: m.update({"format_version": 99}), "format version 99"),
        (lambda m: m.update({"format": "something-else"}), "not a changepoint-triage model"),
        (lambda m: m.update({"model": "lstm"}), "unknown model kind"),
        (lambda m: m.update({"n_features": 3}), "number of features"),
    ],
)
def test_incompatible_manifest_is_refused(change, message, fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    rewrite_manifest(path, change)
    with pytest.raises(ModelFileError, match=message):
        load_model(path)


def test_newer_xgboost_model_is_refused(fitted, tmp_path):
    path = save_model(fitted["xgb"], tmp_path / "m")
    rewrite_manifest(path, lambda m: m["libraries"].update({"xgboost": "99.0.0"}))
    with pytest.raises(ModelFileError, match="xgboost 99.0.0"):
        load_model(path)


def test_types_outside_the_allowlist_are_never_loaded(fitted, tmp_path):
    import os

    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    path = save_model(fitted["rf"], tmp_path / "m")
    # A transformer whose function is os.system: loading it would hand over the machine.
    sio.dump(FunctionTransformer(func=os.system), path / "model.skops")
    rewrite_manifest(path, lambda m: None)
    lines = [
        f"{model_files._sha256(path / n)}  {n}" if n == "model.skops" else line
        for line in (path / CHECKSUMS).read_text().splitlines()
        for n in [line.partition("  ")[2]]
    ]
    (path / CHECKSUMS).write_text("\n".join(lines) + "\n")
    with pytest.raises(ModelFileError, match="outside the allowlist.*system"):
        load_model(path)


def test_crash_mid_write_keeps_the_old_model(fitted, matrix, tmp_path, monkeypatch):
    path = save_model(fitted["rf"], tmp_path / "m")
    before = {p.name: p.read_bytes() for p in path.iterdir()}

    def crash(target, data):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(model_files, "_write_bytes", crash)
    with pytest.raises(OSError, match="simulated"):
        save_model(fitted["xgb"], tmp_path / "m")
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temp or half-written directory
    np.testing.assert_array_equal(load_model(path).predict_proba(matrix), fitted["rf"].predict_proba(matrix))


def test_crash_during_the_swap_keeps_the_old_model(fitted, tmp_path, monkeypatch):
    path = save_model(fitted["rf"], tmp_path / "m")
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)  # take the two-rename path
    real_rename = model_files.os.rename
    calls = []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the old model is moved aside, the new one fails to move in
            raise OSError("crash (simulated)")
        return real_rename(src, dst)

    monkeypatch.setattr(model_files.os, "rename", rename)
    with pytest.raises(OSError, match="simulated"):
        save_model(fitted["xgb"], tmp_path / "m")
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_replacing_a_model_is_complete(fitted, tmp_path):
    path = save_model(fitted["svm"], tmp_path / "m")
    save_model(fitted["xgb"], path)
    assert sorted(p.name for p in path.iterdir()) == ["checksums.sha256", "manifest.json", "model.ubj"]
    assert load_model(path).model == "xgb"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_refuses_to_overwrite_a_directory_that_is_not_a_model(fitted, tmp_path):
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(ModelFileError, match="not a model directory"):
        save_model(fitted["rf"], precious)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_errors_are_input_errors_and_unfitted_is_refused(tmp_path):
    with pytest.raises(InputError, match="no such model directory"):
        load_model(tmp_path / "nothing")
    with pytest.raises(ValueError, match="not fitted"):
        save_model(TriageClassifier(), tmp_path / "m")


def test_a_model_skops_that_is_not_a_zip_is_refused(fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    (path / "model.skops").write_bytes(b"\x80\x04pickle bytes")
    rewrite_manifest(path, lambda m: None)
    lines = [
        f"{model_files._sha256(path / n)}  {n}" if n == "model.skops" else line
        for line in (path / CHECKSUMS).read_text().splitlines()
        for n in [line.partition("  ")[2]]
    ]
    (path / CHECKSUMS).write_text("\n".join(lines) + "\n")
    with pytest.raises(ModelFileError, match="cannot read model.skops"):
        load_model(path)
    assert not zipfile.is_zipfile(path / "model.skops")


# ---------------------------------------------------------------------- hostile model directories (issue 14)


def _recover_checksums(path: Path) -> None:
    """Recompute every checksum, as someone who edits a model directory on purpose would."""
    names = sorted(p.name for p in path.iterdir() if p.name != CHECKSUMS)
    (path / CHECKSUMS).write_text("".join(f"{model_files._sha256(path / n)}  {n}\n" for n in names))


@pytest.mark.parametrize("target", ["../outside.skops", "/tmp/elsewhere.skops"])
def test_a_manifest_pointing_outside_the_directory_is_refused(target, fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    (tmp_path / "outside.skops").write_bytes((path / "model.skops").read_bytes())
    rewrite_manifest(path, lambda m: m["files"].update({"estimator": target}))
    with pytest.raises(ModelFileError, match="not a plain name inside"):
        load_model(path)


def test_a_symlink_to_dev_zero_or_a_fifo_is_refused_without_hanging(fitted, tmp_path):
    import os

    path = save_model(fitted["rf"], tmp_path / "m")
    (path / "model.skops").unlink()
    (path / "model.skops").symlink_to("/dev/zero")
    with pytest.raises(ModelFileError, match="symbolic link"):
        load_model(path)
    (path / "model.skops").unlink()
    os.mkfifo(path / "model.skops")  # reading it would block forever
    with pytest.raises(ModelFileError, match="not a regular file"):
        load_model(path)
    (path / "model.skops").unlink()
    (path / CHECKSUMS).unlink()
    os.mkfifo(path / CHECKSUMS)
    with pytest.raises(ModelFileError, match="not a regular file"):
        load_model(path)


def test_an_oversized_file_is_refused(fitted, tmp_path, monkeypatch):
    path = save_model(fitted["rf"], tmp_path / "m")
    monkeypatch.setattr(model_files, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ModelFileError, match="over the limit"):
        load_model(path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m["threshold"].update({"value": float("nan")}), "not a finite number in \\[0, 1\\]"),
        (lambda m: m["threshold"].update({"value": 1.5}), "not a finite number in \\[0, 1\\]"),
        (lambda m: m["threshold"].update({"value": "0.5"}), "not a finite number in \\[0, 1\\]"),
        (lambda m: m.update({"model": "xgb"}), "stored in model.ubj"),
        (lambda m: m.update({"model": "svm"}), "holds a RandomForestClassifier|needs its calibrator"),
        (lambda m: m.update({"window": -3}), "window -3"),
        (lambda m: m.update({"classes": "ab"}), "classes must be two"),
    ],
)
def test_tampered_manifest_fields_are_refused(change, message, fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    rewrite_manifest(path, change)
    with pytest.raises(ModelFileError, match=message):
        load_model(path)


def test_a_swapped_kind_with_a_matching_file_name_is_refused(fitted, tmp_path):
    """The svm's files under an rf manifest: file names match, the estimator inside does not."""
    path = save_model(fitted["svm"], tmp_path / "m")
    rewrite_manifest(path, lambda m: m.update({"model": "rf", "files": {"estimator": "model.skops"}}))
    (path / "calibrator.skops").unlink()
    _recover_checksums(path)
    with pytest.raises(ModelFileError, match="holds a Pipeline, not a rf model"):
        load_model(path)


def test_a_binary_checksum_file_is_a_clear_error(fitted, tmp_path):
    path = save_model(fitted["rf"], tmp_path / "m")
    (path / CHECKSUMS).write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(ModelFileError, match="not text"):
        load_model(path)


def test_stale_temporaries_of_dead_writers_are_removed_live_ones_kept(fitted, tmp_path):
    import os
    import subprocess

    proc = subprocess.Popen(["true"])  # a pid that has certainly exited
    proc.wait()
    stale = tmp_path / f".m.tmp-{proc.pid}-abc"
    old_style = tmp_path / ".m.tmp-xyz"
    live = tmp_path / f".m.tmp-{os.getppid()}-def"
    for d in (stale, old_style, live):
        d.mkdir()
        (d / "model.skops").write_bytes(b"half")
    save_model(fitted["rf"], tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m", live.name])
