"""An output inside a model directory would break the model: refused, the model left as it was.

A model directory is checksummed as a whole (:mod:`triage.training.model_files`):
any file added beside its own makes it fail verification ("not covered by the
checksums"). So ``--out MODEL/scored.csv``, ``train --out MODEL/sub``,
``report --out MODEL/report`` and ``watch --state MODEL/state.db`` are refused
before anything is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers_cli import flat, invoke

from triage.synthetic import generate, preset_config
from triage.training import model_dirs
from triage.training.model_files import CHECKSUMS, MANIFEST, verify_model_dir

BUNDLED = Path(__file__).resolve().parents[1] / "models" / "default-adaptive"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(BUNDLED, copy)
    verify_model_dir(copy)
    return copy


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("modeldirs") / "h.csv"
    generate(preset_config("small", n_series=8), seed=2).to_frame().to_csv(path, index=False)
    return path


def test_the_layout_names_are_the_model_files_own():
    assert (model_dirs.MANIFEST, model_dirs.CHECKSUMS) == (MANIFEST, CHECKSUMS)


@pytest.mark.parametrize("command", ["candidates", "label", "train", "report", "watch"])
def test_an_output_inside_a_model_directory_is_refused_and_the_model_still_verifies(
    command, model, history, tmp_path
):
    inside = model / "nested" / "out"
    args = {
        "candidates": [
            "candidates",
            "--data",
            history,
            "--detector",
            "perfherder",
            "--out",
            f"{inside}.csv",
        ],
        "label": ["label", "--data", history, "--out", f"{inside}.csv"],
        "train": ["train", "--data", history, "--out", inside, "--no-track"],
        "report": [
            "report",
            "--data",
            history,
            "--decisions",
            tmp_path / "none.csv",
            "--out",
            inside,
        ],
        "watch": ["watch", "--state", f"{inside}.db"],
    }[command]
    code, output = invoke(args, stdin="")
    assert code == 2, output
    # rich wraps long paths mid-word at the terminal width (pytest-xdist's temporary paths are long)
    squeezed = "".join(flat(output).split())
    assert "insidethemodeldirectory" in squeezed and "".join(str(model).split()) in squeezed
    assert sorted(p.name for p in model.iterdir()) == sorted(p.name for p in BUNDLED.iterdir())
    verify_model_dir(model)


def test_the_library_refuses_a_model_inside_a_model(model):
    from triage.training.model_files import ModelFileError, check_writable

    with pytest.raises(ModelFileError, match="inside the model directory"):
        check_writable(model / "sub")
    check_writable(model)  # replacing the model itself stays allowed
