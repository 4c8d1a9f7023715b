"""An output path is written, never replaced: links are written through, special files written into.

Real files, links, FIFOs and pipes in ``tmp_path``, for the three writers: single
files (:mod:`triage.core.atomic`), model directories
(:mod:`triage.training.model_files`) and report directories (:mod:`triage.report`).
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers_training import make_matrix
from warm_start import warm_triage

from triage.core.atomic import directory_target, replace_dir, write_text_atomic
from triage.core.errors import InputError
from triage.report import REPORT_MARKER, build_report, read_decisions
from triage.synthetic import generate, preset_config
from triage.training.classifier import TriageClassifier
from triage.training.model_files import ModelFileError, check_writable, load_model, save_model

TRIAGE = Path(sys.executable).parent / "triage"


def hidden(directory: Path) -> list[str]:
    """Names starting with a dot: where a temporary file or directory would be left behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# --------------------------------------------------------------------------- single files


def test_dev_stdout_in_a_pipe_receives_the_content():
    # /dev/stdout -> /proc/self/fd/1 -> "pipe:[n]": resolving the name leads nowhere.
    code = "from triage.core.atomic import write_text_atomic; write_text_atomic('through\\n', '/dev/stdout')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"through\n"


@pytest.mark.skipif(not TRIAGE.exists(), reason="the triage script is not installed beside this Python")
def test_cli_out_dev_stdout_piped(tmp_path):
    history = tmp_path / "h.csv"
    ds = generate(preset_config("small", n_series=2), seed=1)
    ds.to_frame().to_csv(history, index=False)
    done = subprocess.run(
        [*warm_triage(str(TRIAGE)), "candidates", "--data", str(history), "--detector", "perfherder", "--out", "/dev/stdout"],
        capture_output=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.startswith(b"series_id,commit,index,detector")
    assert hidden(tmp_path) == []


def test_a_fifo_read_by_another_process_gets_the_content_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for target in (fifo, link):
        reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
        write_text_atomic("via a fifo\n", target)
        out, _ = reader.communicate(timeout=30)
        assert out == b"via a fifo\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "pipe"]


def test_dev_null_stays_a_device():
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null here")
    assert write_text_atomic("gone\n", "/dev/null") == Path("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_socket_or_a_link_loop_is_a_clear_error(tmp_path):
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(InputError, match="cannot write into this special file"):
            write_text_atomic("x", sock_path)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(InputError, match="cannot write here"):
        write_text_atomic("x", tmp_path / "a")
    assert hidden(tmp_path) == []


# --------------------------------------------------------------------------- directories


def test_replace_dir_refuses_a_link_and_directory_target_follows_it(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert directory_target(link) == real.resolve()
    staged = tmp_path / "staged"
    staged.mkdir()
    with pytest.raises(InputError, match="symbolic link"):
        replace_dir(staged, link)
    assert link.is_symlink() and staged.is_dir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError, match="loops"):
        directory_target(tmp_path / "loop")


@pytest.fixture(scope="module")
def two_models():
    matrix = make_matrix(60, 3, seed=2)
    return [TriageClassifier(model="rf", n_estimators=5, random_state=s).fit(matrix) for s in (0, 1)]


def test_a_link_to_a_model_directory_is_written_through(two_models, tmp_path):
    first, second = two_models
    real = save_model(first, tmp_path / "m1")
    link = tmp_path / "mlink"
    link.symlink_to("m1")
    check_writable(link)
    assert save_model(second, link) == link
    assert link.is_symlink() and os.readlink(link) == "m1"
    assert load_model(real).manifest_["random_state"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m1", "mlink"]  # no litter


def test_a_dangling_link_makes_its_target_and_a_failed_write_leaves_nothing(two_models, tmp_path, monkeypatch):
    from triage.training import model_files

    link = tmp_path / "mlink"
    link.symlink_to(tmp_path / "new")
    save_model(two_models[0], link)
    assert link.is_symlink() and (tmp_path / "new" / "manifest.json").is_file()

    def crash(target, data):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(model_files, "_write_bytes", crash)
    with pytest.raises(OSError, match="simulated"):
        save_model(two_models[1], link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlink", "new"]
    assert load_model(link).manifest_["random_state"] == 0


def test_a_link_to_a_file_or_a_foreign_directory_is_refused(two_models, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.tex").write_text("years")
    (tmp_path / "file").write_text("kept")
    for name, target in (("to_dir", "notes"), ("to_file", "file")):
        (tmp_path / name).symlink_to(target)
        with pytest.raises(ModelFileError, match="refusing to replace it"):
            save_model(two_models[0], tmp_path / name)
    assert (tmp_path / "notes" / "thesis.tex").read_text() == "years"
    assert (tmp_path / "file").read_text() == "kept"
    assert hidden(tmp_path) == [] and (tmp_path / "to_dir").is_symlink()


# --------------------------------------------------------------------------- report directories


@pytest.fixture(scope="module")
def report_input(tmp_path_factory):
    """A two-series dataset and a decisions file for it, written by hand."""
    from triage.loaders import load

    where = tmp_path_factory.mktemp("report_input")
    ds = generate(preset_config("small", n_series=2), seed=3)
    ds.to_frame().to_csv(where / "history.csv", index=False)
    dataset = load(where / "history.csv")
    sid = next(iter(dataset)).series_id
    pd.DataFrame({"series_id": [sid], "index": [5], "p_true": [0.9], "classification": ["true_positive"]}).to_csv(
        where / "decisions.csv", index=False
    )
    return where, dataset, read_decisions(where / "decisions.csv", dataset)


def test_a_user_directory_with_an_index_html_is_refused(report_input, tmp_path):
    where, dataset, frame = report_input
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html>my</html>")
    (site / "notes.txt").write_text("important")
    with pytest.raises(InputError, match=f"not a report directory \\(no {REPORT_MARKER} marker\\)"):
        build_report(dataset, frame, site, max_plots=1)
    if TRIAGE.exists():  # the real entry point: its exit code and its one-line error
        done = subprocess.run(
            [*warm_triage(str(TRIAGE)), "report", "--data", str(where / "history.csv"),
             "--decisions", str(where / "decisions.csv"), "--out", str(site)],
            capture_output=True, timeout=120, text=True,
        )
        assert done.returncode == 2, done.stderr
        assert f"{site}: exists and is not a report directory" in done.stderr
        assert "Traceback" not in done.stderr
    assert (site / "notes.txt").read_text() == "important"
    assert (site / "index.html").read_text() == "<html>my</html>"
    assert hidden(tmp_path) == []


def test_a_report_is_marked_replaced_and_written_through_a_link(report_input, tmp_path):
    _, dataset, frame = report_input
    out = tmp_path / "r"
    build_report(dataset, frame, out, max_plots=1)
    assert (out / REPORT_MARKER).is_file()
    (out / "stale.txt").write_text("a file of the user's")
    link = tmp_path / "rlink"
    link.symlink_to("r")
    # a file the report did not write is never deleted with it (thirty-first session; it had been)
    with pytest.raises(InputError, match="holds stale.txt, which `triage report` did not write"):
        build_report(dataset, frame, link, max_plots=1)
    (out / "stale.txt").unlink()
    page = build_report(dataset, frame, link, max_plots=1)
    assert page == out.resolve() / "index.html" and link.is_symlink()
    assert sorted(p.name for p in out.iterdir()) == sorted([REPORT_MARKER, "index.html", "plots"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "rlink"]
    empty = tmp_path / "empty"
    empty.mkdir()
    build_report(dataset, frame, empty, max_plots=1)
    assert (empty / REPORT_MARKER).is_file()


def test_a_report_of_an_earlier_version_is_replaced_anything_more_is_refused(report_input, tmp_path):
    """Before the marker a report was index.html and plots/*.png; such a folder is replaced (make demo repeats)."""
    _, dataset, frame = report_input
    old = tmp_path / "old"
    (old / "plots").mkdir(parents=True)
    (old / "index.html").write_text("<html>report</html>")
    (old / "plots" / "s.png").write_bytes(b"\x89PNG")
    build_report(dataset, frame, old, max_plots=1)
    assert (old / REPORT_MARKER).is_file()
    mixed = tmp_path / "mixed"
    (mixed / "plots").mkdir(parents=True)
    (mixed / "index.html").write_text("<html>report</html>")
    (mixed / "plots" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a report directory"):
        build_report(dataset, frame, mixed, max_plots=1)
    assert (mixed / "plots" / "notes.txt").read_text() == "mine"


def test_a_full_device_is_named_in_the_error():
    # Was "No space left on device" with no file: the copy into a device raised an OSError without one.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with pytest.raises(OSError) as info:
        write_text_atomic("x" * 100_000, "/dev/full")
    assert info.value.filename == "/dev/full"
