"""Defects found by a walkthrough of synth / convert / select-features / evaluate / models list.

Each test builds its own small inputs (never the real data):

* ``synth --preset nope`` / ``--format json`` ended with ``error: <input>:
  unknown preset ...`` (no option named, no usage line), unlike every other
  bad option (README: "A bad option ends with the usage line and a boxed
  message naming the option");
* a file ``--out`` that is a directory read ``Invalid value for '--out':
  Value error, dd: is a directory ...`` (typer's wrapping of a ValueError);
* a ``.gz`` output's gzip header named the temporary file
  (``.r.csv.gz.<random>.tmp``): two runs wrote different bytes although the
  writer sets ``mtime`` 0 for that, and ``gunzip -N`` restored a hidden
  temporary name.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke, step_history

from triage.core.atomic import write_csv_atomic, write_jsonl_atomic

# ---------------------------------------------------------------- synth: bad options


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "nope"], "Invalid value for --preset: must be one of small, default, realnoise, got 'nope'"),
        (["--format", "json"], "Invalid value for --format: must be one of parquet, csv, got 'json'"),
    ],
)
def test_synth_bad_option_is_a_usage_error_naming_it(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "syn"
    code, text = invoke(["synth", "--out", out, *args])
    assert code == 2, text
    assert message in flat(text)
    assert "Usage: triage synth" in text
    assert "<input>" not in text
    assert not out.exists()  # checked before any work: nothing made


# ---------------------------------------------------------------- a directory as a file --out


def test_directory_as_file_out_reads_without_value_error(tmp_path: Path) -> None:
    data = step_history(tmp_path / "h.csv")
    folder = tmp_path / "dd"
    folder.mkdir()
    code, text = invoke(["convert", "--data", data, "--out", folder])
    assert code == 2, text
    line = flat(text)
    assert "is a directory; expected a file path" in line
    assert "Value error" not in line
    assert list(folder.iterdir()) == []


# ---------------------------------------------------------------- gzip output: header and reproducibility


def _gzip_header_name(path: Path) -> str:
    """The FNAME field of a gzip member's header ('' when absent)."""
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    if not raw[3] & 0x08:  # FNAME flag
        return ""
    end = raw.index(b"\x00", 10)
    return raw[10:end].decode("latin-1")


@pytest.mark.parametrize("writer", [write_csv_atomic, write_jsonl_atomic])
def test_gzip_output_names_the_target_and_is_reproducible(tmp_path: Path, writer) -> None:
    frame = pd.DataFrame({"series_id": ["s1", "s1"], "commit": ["a", "b"], "value": [1.5, 2.5]})
    target = tmp_path / "r.csv.gz"
    writer(frame, target)
    first = target.read_bytes()
    assert _gzip_header_name(target) == "r.csv"
    writer(frame, target)
    assert target.read_bytes() == first  # mtime 0 and no random name: the same bytes
    text = gzip.decompress(first).decode("utf-8")
    assert "s1" in text and "2.5" in text


def test_convert_gz_out_twice_same_bytes(tmp_path: Path) -> None:
    data = step_history(tmp_path / "h.csv")
    out = tmp_path / "long.csv.gz"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    first = out.read_bytes()
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    assert out.read_bytes() == first
    assert _gzip_header_name(out) == "long.csv"
    plain = tmp_path / "long.csv"
    code, text = invoke(["convert", "--data", data, "--out", plain])
    assert code == 0, text
    assert gzip.decompress(first) == plain.read_bytes()


# ---------------------------------------------------------------- models list: an empty file is no store


@pytest.mark.parametrize("kind", ["empty file", "empty database"])
def test_models_list_leaves_an_empty_file_alone(tmp_path: Path, kind: str) -> None:
    """README: the commands that only read (`models list`, `models promote`) never create a store."""
    import sqlite3

    db = tmp_path / "mlruns.db"
    if kind == "empty file":
        db.touch()
    else:
        con = sqlite3.connect(db)
        con.execute("PRAGMA user_version = 1")  # a SQLite header, no tables
        con.commit()
        con.close()
    before = db.read_bytes()
    for args in (["models", "list"], ["models", "promote", "triage-rf-adaptive", "1"]):
        code, text = invoke([*args, "--tracking-uri", f"sqlite:///{db}"])
        assert code == 2, text
        assert "no tracking store yet" in flat(text)
        assert db.read_bytes() == before  # MLflow's schema was not written into it


# ---------------------------------------------------------------- convert: an --out the readers take for another layout


@pytest.mark.parametrize("name", ["long.parquet.gz", "long.PARQUET.zst", "long.json", "long.json.gz", "long.js", "long.yaml"])
def test_convert_refuses_an_out_read_back_as_another_layout(tmp_path: Path, name: str) -> None:
    """It wrote a (gzipped) CSV under these names, which `triage summary` then refused to read."""
    data = step_history(tmp_path / "h.csv")
    code, text = invoke(["convert", "--data", data, "--out", tmp_path / name])
    assert code == 2, text
    assert "Invalid value for --out" in flat(text) and "convert writes a long CSV" in flat(text)
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["long.csv", "long.csv.gz", "long.csv.zst", "long.parquet", "long.tsv"])
def test_convert_out_reads_back(tmp_path: Path, name: str) -> None:
    data = step_history(tmp_path / "h.csv")
    out = tmp_path / name
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 0, text
    code, text = invoke(["summary", "--data", out, "--format", "json"])
    assert code == 0, text
    assert '"series": 1' in text.replace('"series":1', '"series": 1')


def test_gzip_header_name_drops_an_upper_case_suffix(tmp_path: Path) -> None:
    target = tmp_path / "R.CSV.GZ"
    write_csv_atomic(pd.DataFrame({"value": [1.0]}), target)
    assert _gzip_header_name(target) == "R.CSV"


# ---------------------------------------------------------------- models list at 80 columns


def test_models_list_keeps_the_window_whole_at_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`triage-svm-adaptive` with an alias folded the window as 'adaptiv' / 'e' in an 80-column terminal."""
    from typer.testing import CliRunner

    from triage.cli.app import app
    from triage.training import tracking

    rows = [
        {"name": f"triage-{kind}-adaptive", "version": "1", "aliases": ["champion"], "window": "adaptive",
         "auc": 0.629, "n_train": 62, "data_hash": "a34d18f6", "run_id": "034bcdb2653d"}
        for kind in ("rf", "svm", "xgb")
    ]
    monkeypatch.setattr(tracking, "list_models", lambda uri=None: rows)
    res = CliRunner().invoke(app, ["models", "list", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum("triage-svm-adaptive" in line and " adaptive " in line for line in lines) == 1, res.output
    assert "adaptiv " not in res.output.replace("adaptive", "")


# ---------------------------------------------------------------- select-features / evaluate / train: bad options named


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["select-features", "--metric", "f1"], "Invalid value for --metric: must be one of accuracy, auc, got 'f1'"),
        (["select-features", "--unit", "x"], "Invalid value for --unit: must be one of column, characteristic"),
        (["select-features", "--window", "-3"], "Invalid value for --window: window must be >= 0, got -3"),
        (["evaluate", "--window", "x"], "Invalid value for --window: window must be 'adaptive' or an integer"),
        (["train", "--window", "-1"], "Invalid value for --window: window must be >= 0, got -1"),
    ],
)
def test_model_building_bad_option_is_named(tmp_path: Path, args: list[str], message: str) -> None:
    data = step_history(tmp_path / "h.csv")
    out = tmp_path / ("fs.json" if args[0] == "select-features" else "out")
    code, text = invoke([*args, "--data", data, "--out", out, *(["--no-track"] if args[0] != "select-features" else [])])
    assert code == 2, text
    assert message in flat(text), text
    assert not out.exists()


# ---------------------------------------------------------------- synth: a folder of the user's own data


def test_synth_refuses_a_folder_with_data_it_did_not_write(tmp_path: Path) -> None:
    """synth --format parquet deleted the folder's history.csv (and replaced its dataset.json) without a word."""
    folder = tmp_path / "mine"
    folder.mkdir()
    history = step_history(folder / "history.csv")
    mine = history.read_bytes()
    (folder / "dataset.json").write_text('{"source": "my CI"}\n')
    code, text = invoke(["synth", "--out", folder])
    assert code == 2, text
    assert "not written by `triage synth`" in flat(text) and "--out" in flat(text)
    assert history.read_bytes() == mine
    assert (folder / "dataset.json").read_text() == '{"source": "my CI"}\n'
    assert sorted(p.name for p in folder.iterdir()) == ["dataset.json", "history.csv"]


def test_synth_rewrites_its_own_folder(tmp_path: Path) -> None:
    folder = tmp_path / "syn"
    code, text = invoke(["synth", "--out", folder, "--format", "csv"])
    assert code == 0, text
    code, text = invoke(["synth", "--out", folder, "--seed", "1"])  # its own output: replaced
    assert code == 0, text
    assert sorted(p.name for p in folder.iterdir()) == ["dataset.json", "history.parquet"]


# ---------------------------------------------------------------- one split, one generation: singular


@pytest.fixture(scope="module")
def small_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from triage.synthetic import write_synthetic

    return write_synthetic(tmp_path_factory.mktemp("syn"), "small", 0)


def test_one_split_and_one_generation_read_singular(tmp_path: Path, small_synth: Path) -> None:
    code, text = invoke(["evaluate", "--data", small_synth, "--splits", "1", "--models", "rf",
                         "--split-kinds", "random", "--param", "rf.n_estimators=5", "--no-track"])
    assert code == 0, text
    assert "1 split, " in flat(text) and "1 splits" not in text
    code, text = invoke(["select-features", "--data", small_synth, "--out", tmp_path / "fs.json",
                         "--population", "2", "--generations", "1", "--trees", "5", "--folds", "2"])
    assert code == 0, text
    assert "after 1 generation (" in flat(text) and "1 generations" not in text
