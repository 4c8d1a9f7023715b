"""`triage train` and `triage evaluate` end to end on a feature-matrix file."""

from __future__ import annotations

import subprocess

import pytest
from helpers_training import make_matrix
from typer.testing import CliRunner
from warm_start import warm_triage

from triage.cli.app import app
from triage.training.model_files import load_model


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "matrix.parquet"
    make_matrix(100, 3, seed=31).to_parquet(path)
    return path


def test_train_writes_a_loadable_model(matrix_file, tmp_path):
    out = tmp_path / "model"
    res = CliRunner().invoke(app, ["train", "--matrix", str(matrix_file), "--out", str(out), "--window", "4",
                                   "--target-recall", "0.9", "--param", "n_estimators=20", "--no-track"])
    assert res.exit_code == 0, res.output
    assert "auc" in res.output
    clf = load_model(out)
    assert clf.manifest_["window"] == 4
    assert clf.threshold_policy_ == "recall:0.9"
    assert clf.estimator_.n_estimators == 20
    assert "(recall:0.9)" in res.output


def test_train_calls_a_fixed_threshold_fixed(matrix_file, tmp_path):
    res = CliRunner().invoke(app, ["train", "--matrix", str(matrix_file), "--out", str(tmp_path / "m"), "--window", "4",
                                   "--threshold", "0.5", "--param", "n_estimators=20", "--no-track"])
    assert res.exit_code == 0, res.output
    assert "0.500 (fixed)" in res.output and "(0.5)" not in res.output


@pytest.mark.parametrize("kind", ["xgb", "svm"])
def test_every_model_kind_trains_with_params(kind, matrix_file, tmp_path):
    # XGBoost inherits scikit-learn's parameter check without declaring constraints.
    param = {"xgb": "n_estimators=10", "svm": "C=2.0"}[kind]
    out = tmp_path / kind
    res = CliRunner().invoke(app, ["train", "--matrix", str(matrix_file), "--out", str(out), "--window", "4",
                                   "--model", kind, "--param", param, "--no-track"])
    assert res.exit_code == 0, res.output
    assert load_model(out).manifest_["model"] == kind


def test_evaluate_prints_and_writes_the_table(matrix_file, tmp_path):
    res = CliRunner().invoke(app, ["evaluate", "--matrix", str(matrix_file), "--splits", "2", "--models", "rf",
                                   "--param", "rf.n_estimators=15", "--out", str(tmp_path / "ev"), "--no-track"])
    assert res.exit_code == 0, res.output
    assert "grouped - random" in res.output
    assert (tmp_path / "ev" / "summary.md").read_text().startswith("| split | model | auc |")


def test_evaluate_table_fits_80_columns_with_its_intervals(matrix_file, tmp_path):
    """At 80 columns each mean stood over a 3-line folded interval and the headers were cut ("sensiti…")."""
    res = CliRunner().invoke(app, ["evaluate", "--matrix", str(matrix_file), "--splits", "2", "--models", "rf,xgb",
                                   "--param", "rf.n_estimators=15", "--no-track"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    header = next(line for line in lines if line.startswith("split"))
    assert header.split() == ["split", "model", "auc", "accuracy", "sensitivity", "specificity", "fit", "s", "cpu", "s"]
    rows = [line.split() for line in lines if line.split()[:1] in (["random"], ["grouped"], ["time"])]
    assert len(rows) == 6 and {r[1] for r in rows} == {"rf", "xgb"}
    # the interval of each mean on the line below it, the mean inside it
    i = lines.index(next(line for line in lines if line.startswith("random")))
    mean = float(lines[i].split()[2])
    low, high = (float(v) for v in lines[i + 1].split()[0].split("–"))
    assert low <= mean <= high


def test_bad_input_exits_2_with_one_line(matrix_file, tmp_path):
    import pandas as pd

    bad = tmp_path / "untriaged.parquet"
    pd.read_parquet(matrix_file).assign(label="not_triaged").to_parquet(bad)
    proc = subprocess.run(
        [*warm_triage(), "train", "--matrix", str(bad),
         "--out", str(tmp_path / "m"), "--no-track"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "no triaged candidates" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "m").exists()


def test_window_option_is_validated(matrix_file, tmp_path):
    res = CliRunner().invoke(app, ["train", "--matrix", str(matrix_file), "--out", str(tmp_path / "m"),
                                   "--window", "wide", "--no-track"])
    assert res.exit_code != 0
    assert not (tmp_path / "m").exists()


def test_train_end_to_end_from_a_synthetic_preset(tmp_path):
    """triage.synthetic -> features.extract -> train -> model directory, through the CLI."""
    out = tmp_path / "model"
    res = CliRunner().invoke(app, ["train", "--preset", "small", "--out", str(out), "--window", "0",
                                   "--param", "n_estimators=20", "--no-track"])
    assert res.exit_code == 0, res.output
    clf = load_model(out)
    assert clf.manifest_["window"] == 0
    assert clf.manifest_["extra"]["source"] == {"preset": "small", "seed": 0, "ordinary_per_series": 10}
    assert all(c.startswith(("pre_", "after_", "norm_", "pair_")) for c in clf.feature_names_)


def test_train_registers_kind_and_window_and_warns_on_small_data(tmp_path):
    """40 series: the hold-out is too small to mean much, and the CLI says so; the name says rf, window 4."""
    from triage.training.tracking import list_models

    small = tmp_path / "small.parquet"
    make_matrix(40, 3, seed=3).to_parquet(small)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    res = CliRunner().invoke(app, ["train", "--matrix", str(small), "--out", str(tmp_path / "m"), "--window", "4",
                                   "--param", "n_estimators=5", "--tracking-uri", uri])
    assert res.exit_code == 0, res.output
    assert "warning: the hold-out has only" in " ".join(res.output.split())
    rows = list_models(uri)
    assert [(r["name"], r["version"], r["window"]) for r in rows] == [("triage-rf-w4", "1", "4")]
    assert load_model(tmp_path / "m").manifest_["run_id"] == rows[0]["run_id"]


def test_train_monotone_shifts_holds_p_true_up_as_the_shift_grows(tmp_path):
    """--monotone-shifts: XGBoost constrained in the shift-size columns; refused for another kind or without them."""
    runner = CliRunner()
    import numpy as np
    import pandas as pd

    from triage.training.model_kinds import monotone_increasing

    out = tmp_path / "mono"
    res = runner.invoke(app, ["train", "--preset", "small", "--window", "4", "--model", "xgb", "--monotone-shifts",
                              "--out", str(out), "--no-track"])
    assert res.exit_code == 0, res.output
    model = load_model(out)
    cols = list(model.feature_names_)
    assert model.manifest_["params"]["monotone_constraints"] == list(monotone_increasing(cols))
    base = pd.DataFrame(np.random.default_rng(1).normal(size=(8, len(cols))), columns=cols)
    grid = np.linspace(0.0, 30.0, 31)
    rows = base.loc[base.index.repeat(len(grid))].reset_index(drop=True)
    rows["pair_robust_shift"] = np.tile(grid, len(base))
    p = model.predict_proba(rows)[:, 1].reshape(len(base), len(grid))
    assert (np.diff(p, axis=1) >= -1e-12).all()
    bad = runner.invoke(app, ["train", "--preset", "small", "--monotone-shifts", "--out", str(tmp_path / "rf")])
    assert bad.exit_code == 2 and "--monotone-shifts needs --model xgb" in " ".join(bad.output.split())
    none = runner.invoke(app, ["train", "--preset", "small", "--model", "xgb", "--monotone-shifts",
                               "--out", str(tmp_path / "adaptive"), "--no-track"])
    assert none.exit_code != 0 and not (tmp_path / "adaptive").exists()
    assert "no shift-size column" in " ".join(str(none.exception or none.output).split())
