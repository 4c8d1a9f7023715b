"""kill -9 during `triage train`: the model directory and the tracking store stay consistent.

Each crash runs the real command in a subprocess that SIGKILLs itself at one
step of the write (patched in from the test, never from the product):
while the model directory is being staged, after the run is logged and its
version registered but before the swap, and right after the swap. Then the
next `train` starts, as a user would retry, and everything must be settled:
no temporary directory, no RUNNING run, a registry listing only models that
were put in place.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
from helpers_training import make_matrix

from triage.training import tracking
from triage.training.model_files import load_model
from triage.training.pipeline import train

PATCHES = {
    # while the model files are written beside the target
    "staging": "model_files._write_bytes = die",
    # logged and registered, not yet swapped in
    "before-swap": "pipeline.commit_model = die",
    # swapped in, the run not yet marked committed
    "after-swap": "real = pipeline.commit_model\n"
                  "pipeline.commit_model = lambda *a, **k: (real(*a, **k), die())",
}


def _train_and_die(where: str, matrix_file, out, uri) -> subprocess.CompletedProcess:
    code = textwrap.dedent(
        """
        import os, signal, sys
        from triage.training import model_files, pipeline

        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        {patch}
        from triage.cli.app import main
        sys.argv = ["triage", "train", "--matrix", {matrix!r}, "--out", {out!r}, "--tracking-uri", {uri!r},
                    "--register", "crash", "--param", "n_estimators=5", "--test-size", "0.3"]
        main()
        """
    ).format(patch=PATCHES[where], matrix=str(matrix_file), out=str(out), uri=uri)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)


def _snapshot(model_dir):
    return {p.name: p.read_bytes() for p in model_dir.iterdir()}


@pytest.mark.slow
def test_kill_9_at_each_step_of_train_leaves_model_and_registry_consistent(tmp_path):
    from mlflow.tracking import MlflowClient

    matrix = make_matrix(60, 3, seed=8)
    matrix_file = tmp_path / "matrix.parquet"
    matrix.to_parquet(matrix_file)
    out = tmp_path / "model"
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    first = train(matrix, out, model_params={"n_estimators": 5}, tracking_uri=uri, register_as="crash")
    before = _snapshot(out)

    runs = {}
    for where in PATCHES:
        proc = _train_and_die(where, matrix_file, out, uri)
        assert proc.returncode == -signal.SIGKILL, (where, proc.stderr[-2000:])
        client = MlflowClient(tracking_uri=uri)
        exp = client.get_experiment_by_name(tracking.TRAIN_EXPERIMENT).experiment_id
        newest = client.search_runs([exp], order_by=["attributes.start_time DESC"], max_results=1)[0]
        assert newest.info.status == "RUNNING", (where, newest.info, proc.stderr[-3000:])  # what a kill leaves
        runs[where] = newest.info.run_id
        if where != "after-swap":
            assert _snapshot(out) == before, where  # the previous model, byte for byte
        else:
            assert json.loads((out / "manifest.json").read_text())["run_id"] == runs[where]
        load_model(out)  # always a complete, verified model
    assert any(p.name.startswith(".model.tmp-") for p in tmp_path.iterdir())  # left by the staging kill

    # The next start, as a user retrying would do it.
    last = train(matrix, out, model_params={"n_estimators": 5}, tracking_uri=uri, register_as="crash")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    client = MlflowClient(tracking_uri=uri)
    status = {where: client.get_run(run_id).info.status for where, run_id in runs.items()}
    assert status == {"staging": "FAILED", "before-swap": "FAILED", "after-swap": "FINISHED"}
    exp = client.get_experiment_by_name(tracking.TRAIN_EXPERIMENT).experiment_id
    assert client.search_runs([exp], filter_string="attributes.status = 'RUNNING'") == []
    versions = {r["run_id"] for r in tracking.list_models(uri) if r["name"] == "crash"}
    # Only models that were put in place are registered: never the one killed before its swap.
    assert versions == {first.run["run_id"], runs["after-swap"], last.run["run_id"]}
    assert json.loads((out / "manifest.json").read_text())["run_id"] == last.run["run_id"]
