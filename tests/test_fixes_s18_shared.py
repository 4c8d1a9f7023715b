"""Defects the eighteenth session's helpers reported in shared modules, fixed there.

1. ``python -m triage --version``: "No module named triage.__main__", exit 1.
   Now it runs the ``triage`` command (``triage/__main__.py``).
2. Installed from the wheel, numba cached its kernels beside the sources in
   site-packages (116 files, 7.8 MB after the demo, outside the wheel's
   record): ``pip uninstall`` left an importable ``triage/`` folder behind.
   An installed package now caches in ``$XDG_CACHE_HOME/changepoint-triage/numba``.
3. With no writable home, numba's fallback folder in the temporary directory
   had a predictable name and was used whoever owned it (numba's cache files
   are pickles: another user could plant one). It is made with mode 0700, and
   one that is a link, or that others may write, or another user owns, is
   not used (a fresh private folder is).
4. With a read-only home, every command that plots printed matplotlib's two
   lines "Matplotlib created a temporary cache directory ... highly
   recommended to set the MPLCONFIGDIR". A private folder is set instead.
5. The internal-error log had one name for every user
   (``/tmp/triage-errors.log``): the second user's tracebacks could not be
   written. It is ``triage-errors-<uid>.log`` now, and a link planted at that
   name is not followed.
6. ``train --window K`` sampled its ordinary commits with seed 0 whatever
   ``--seed`` said; the manifest recorded ``--data`` as typed (``s1``), which
   names nothing once the folder is forgotten; ``evaluate --out`` recorded
   neither the window nor the data, ``window-study`` wrote no settings at all.
7. ``--model models:/name/1`` with ``HOME=/dev/null`` (or a read-only home)
   was refused as "the tracking store cannot be used: Not a directory:
   '/dev/null/.cache/...'", blaming the store; with no home at all it was an
   internal error (RuntimeError). The registry cache now follows
   ``XDG_CACHE_HOME`` and falls back to a private temporary folder, and a cache
   that cannot be written is named as such.
8. Every commit reports version 0.1.0, so two model manifests (or ``synth``
   records) built from different code read alike. They record the
   checkout's git commit now (``changepoint-triage-revision``, ``+dirty`` with
   uncommitted changes; absent when installed).
9. A labels store written by a newer version (format ``triage-labels-2``)
   was "not a triage labels store", or, holding a table of its own,
   "another SQLite database ... give --labels a new file": advice that
   loses the decisions. It is named as written by a newer changepoint-triage:
   upgrade; the file is left as it is.
10. (formats walkthrough) ``triage sample`` on ``commit,value`` rows with a
    trailing separator: "row 3: commit is missing" (pandas read the commits
    as the index); a decimal comma there is named. A ``--commit-order`` file
    saved with a BOM: "commit 'c00' is not in the given commit order". A
    Parquet or JSON-lines column of booleans was read as 1.0 / 0.0 (CSV's
    "True" is refused); a Parquet null value said "value 'nan' is not a
    number". Naive local times across the autumn clock change got only the
    advice to sort (which would reorder the commits). Commit ids differing
    only in case were two commits without a word. ``--out o.zip`` (or .bz2,
    .xz) wrote plain CSV under the archive's name. A candidate score ``2,5``
    and a candidate commit differing from the data's only in case got no
    hint.
11. (reproducibility and limits walkthroughs) A state store of a newer
    format version said only "written by a newer version"; a format version
    ``x`` escaped as "invalid literal for int()", naming no file. A JSON line
    cut mid-string ended its message "Unterminated string starting at".
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from helpers_cli import flat, invoke

from triage.cli import validation
from triage.core.compile_cache import cache_dir, matplotlib_dir, private_temp_dir


def test_python_dash_m_triage_runs_the_command():
    res = subprocess.run([sys.executable, "-m", "triage", "--version"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "changepoint-triage" in res.stdout


def test_an_installed_package_caches_its_kernels_in_the_users_cache_folder(tmp_path):
    package = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "triage"
    package.mkdir(parents=True)
    got = cache_dir(package, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert got == str(tmp_path / "cache" / "changepoint-triage" / "numba")
    # A checkout keeps numba's own choice, beside the sources.
    checkout = tmp_path / "src" / "triage"
    checkout.mkdir(parents=True)
    assert cache_dir(checkout, {"XDG_CACHE_HOME": str(tmp_path / "cache")}) is None


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_the_private_folder_is_made_0700(own_tmp):
    folder = Path(private_temp_dir("x"))
    assert folder.parent == own_tmp and folder.name == f"x-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert private_temp_dir("x") == str(folder)  # ours: used again


def test_a_folder_others_may_write_or_a_link_is_not_used(own_tmp):
    loose = own_tmp / f"x-{os.getuid()}"
    loose.mkdir()
    loose.chmod(0o777)
    got = Path(private_temp_dir("x"))
    assert got != loose and got.parent == own_tmp and stat.S_IMODE(got.stat().st_mode) == 0o700
    target = own_tmp / "elsewhere"
    target.mkdir(mode=0o700)
    (own_tmp / f"y-{os.getuid()}").symlink_to(target)
    got = Path(private_temp_dir("y"))
    assert got.parent == own_tmp and not got.is_symlink() and got != target


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to give a folder to another user")
def test_a_folder_another_user_owns_is_not_used(own_tmp):
    theirs = own_tmp / f"x-{os.getuid()}"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    assert Path(private_temp_dir("x")) != theirs


def test_matplotlib_gets_a_private_folder_only_without_a_writable_home(tmp_path, own_tmp):
    assert matplotlib_dir({"HOME": str(tmp_path)}) is None
    assert matplotlib_dir({"MPLCONFIGDIR": str(tmp_path / "m"), "HOME": "/dev/null"}) is None
    got = matplotlib_dir({"HOME": "/dev/null"})
    assert got is not None and "changepoint-triage-matplotlib" in got


def test_a_plot_with_a_read_only_home_prints_no_matplotlib_warning(tmp_path):
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + "".join(f"s,c{i},{1 + (i >= 10)}\n" for i in range(20)))
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(HOME="/dev/null", MPLBACKEND="Agg", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    res = subprocess.run(
        [sys.executable, "-c", "from triage.cli.app import main; main()", "plot", "--data", str(data),
         "--series", "s", "--out", str(tmp_path / "p.png")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "MPLCONFIGDIR" not in res.stdout + res.stderr
    assert (tmp_path / "p.png").stat().st_size > 0


def test_the_error_log_is_per_user_and_follows_no_planted_link(own_tmp, monkeypatch):
    monkeypatch.delenv("TRIAGE_ERROR_LOG", raising=False)
    log = validation.error_log_path()
    assert log == own_tmp / f"triage-errors-{os.getuid()}.log"
    victim = own_tmp / "victim.txt"
    victim.write_text("keep\n")
    log.symlink_to(victim)
    lines: list[str] = []
    assert validation.exit_code_for(RuntimeError("boom"), lines.append) == 1
    assert victim.read_text() == "keep\n"
    assert "could not be written" in lines[0]
    log.unlink()
    assert validation.exit_code_for(RuntimeError("boom"), lines.append) == 1
    assert "RuntimeError: boom" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600



@pytest.fixture(scope="module")
def small_history(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("synth")
    code, text = invoke(["synth", "--preset", "small", "--out", folder / "syn"])
    assert code == 0, text
    return folder / "syn" / "history.parquet"


def test_train_window_k_samples_ordinary_commits_with_its_seed_and_records_absolute_paths(
        small_history, tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(small_history.parent)
    hashes = []
    for seed in (0, 1):
        out = tmp_path / f"m{seed}"
        code, text = invoke(["train", "--data", small_history.name, "--window", "2", "--seed", seed, "--no-track",
                             "--test-size", "0", "--out", out])
        assert code == 0, text
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["extra"]["source"]["data"] == str(small_history)
        assert manifest["extra"]["source"]["seed"] == seed
        hashes.append(manifest["data_hash"])
    assert hashes[0] != hashes[1]


def test_evaluate_and_window_study_record_what_made_them(small_history, tmp_path):
    import json

    out = tmp_path / "ev"
    code, text = invoke(["evaluate", "--data", small_history, "--window", "2", "--models", "rf", "--splits", "2",
                         "--no-track", "--out", out])
    assert code == 0, text
    settings = json.loads((out / "settings.json").read_text())
    assert settings["window"] == 2 and settings["source"]["data"] == str(small_history)
    out = tmp_path / "ws"
    code, text = invoke(["window-study", "--data", small_history, "--windows", "0,1", "--splits", "2",
                         "--no-track", "--out", out])
    assert code == 0, text
    settings = json.loads((out / "settings.json").read_text())
    assert settings["windows"] == "0,1" and settings["source"]["data"] == str(small_history)
    assert "numpy" in settings["libraries"]


def test_the_registry_cache_needs_no_usable_home(tmp_path, own_tmp, monkeypatch):
    from triage.training.tracking import _cache_root

    monkeypatch.delenv("TRIAGE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/dev/null")
    root = _cache_root(None)
    assert root.parent == own_tmp and "changepoint-triage-cache" in root.name
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache_root(None) == tmp_path / "xdg" / "changepoint-triage"
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "mine"))
    assert _cache_root(None) == tmp_path / "mine"


def test_the_code_revision_names_the_commit_and_uncommitted_changes(tmp_path):
    import shutil

    from triage.core.versions import REVISION, code_revision
    from triage.training.model_files import library_versions

    if shutil.which("git") is None:
        pytest.skip("git is absent")
    assert code_revision(tmp_path) is None
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    (tmp_path / "f.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "f.txt"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, env=env, capture_output=True)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert code_revision(tmp_path) == head
    (tmp_path / "f.txt").write_text("b\n")
    assert code_revision(tmp_path) == head + "+dirty"
    assert REVISION in library_versions()


@pytest.mark.parametrize("extra_table", [False, True])
def test_a_labels_store_of_a_newer_version_says_to_upgrade(tmp_path, extra_table):
    import hashlib
    import sqlite3

    from triage.workspace.store import LabelsStore

    path = tmp_path / "labels.sqlite"
    LabelsStore(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE store_info SET value = 'triage-labels-2' WHERE key = 'format'")
        if extra_table:
            db.execute("CREATE TABLE added_later (x)")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    code, text = invoke(["labels", "export", "--labels", path, "--out", tmp_path / "x.csv"])
    assert code == 2
    assert "written by a newer changepoint-triage" in text and "upgrade" in text
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_sample_reads_trailing_separators_and_names_a_decimal_comma(tmp_path):
    data = _write(tmp_path / "p.csv", "commit,value\nc1,100.5,\nc2,,\nc3,101.5,\n")
    code, text = invoke(["sample", "--data", data, "--budget", "1", "--out", tmp_path / "e.csv"])
    assert code == 0, text
    comma = _write(tmp_path / "q.csv", "commit,value\nc1,100,5\nc2,,\n")
    code, text = invoke(["sample", "--data", comma, "--budget", "1", "--out", tmp_path / "e2.csv"])
    assert code == 2 and "q.csv" in text and "decimal comma" in text


def test_a_commit_order_file_with_a_bom(tmp_path):
    data = _write(tmp_path / "h.csv", "series_id,commit,value\n" + "".join(f"s,c{i:02d},{i}\n" for i in range(5)))
    order = tmp_path / "order.txt"
    order.write_bytes(b"\xef\xbb\xbf" + "".join(f"c{i:02d}\n" for i in range(5)).encode())
    code, text = invoke(["summary", "--data", data, "--commit-order", order])
    assert code == 0, text


def test_boolean_and_null_values_in_parquet_and_json_lines(tmp_path):
    pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [True, False]}).to_parquet(tmp_path / "b.parquet")
    code, text = invoke(["summary", "--data", tmp_path / "b.parquet"])
    assert code == 2 and "boolean, not a measurement" in text
    jl = _write(tmp_path / "b.jsonl", '{"series_id":"s","commit":"a","value":true}\n'
                                      '{"series_id":"s","commit":"b","value":false}\n')
    code, text = invoke(["summary", "--data", jl])
    assert code == 2 and "boolean, not a measurement" in text
    pd.DataFrame({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1.0, None]}).to_parquet(tmp_path / "n.parquet")
    code, text = invoke(["summary", "--data", tmp_path / "n.parquet"])
    assert code == 2 and "row 2: value is missing" in flat(text)


def test_an_hour_back_names_the_clock_change(tmp_path):
    data = _write(tmp_path / "d.csv", "series_id,commit,timestamp,value\ns,c1,2024-10-27 02:50:00,1\n"
                                      "s,c2,2024-10-27 02:10:00,2\n")
    code, text = invoke(["summary", "--data", data])
    assert code == 2 and "daylight-saving" in flat(text) and "UTC offset" in flat(text)


def test_commits_differing_only_in_case_are_warned_about(tmp_path):
    data = _write(tmp_path / "c.csv", "series_id,commit,value\ns,ABC123,1\ns,abc123,2\ns,c3,3\nt,Q,1\nt,q2,1\n")
    with pytest.warns(UserWarning, match="'ABC123' and 'abc123', which differ only in case"):
        from triage.loaders import load

        load(data)


@pytest.mark.parametrize("suffix", [".zip", ".bz2", ".xz"])
def test_an_archive_suffix_is_refused_not_written_as_plain_text(tmp_path, suffix):
    data = _write(tmp_path / "h.csv", "series_id,commit,value\ns,c1,1\ns,c2,2\n")
    out = tmp_path / f"o.csv{suffix}"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 2 and f"cannot write {suffix} files" in text
    assert not out.exists()


def test_candidate_scores_with_a_decimal_comma_and_commits_in_another_case(tmp_path):
    data = _write(tmp_path / "h.csv", "series_id,commit,value\n" + "".join(f"s,c{i},1\n" for i in range(30))
                  + "s,ABC123,2\n")
    cands = _write(tmp_path / "c.csv", 'series_id,commit,score\ns,c5,"2,5"\n')
    code, text = invoke(["score", "--data", data, "--candidates", cands])
    assert code == 2 and "score '2,5' is written with a decimal comma" in flat(text)
    cands = _write(tmp_path / "c2.csv", "series_id,commit\ns,abc123\n")
    code, text = invoke(["score", "--data", data, "--candidates", cands])
    assert code == 2 and "it has 'ABC123', which differs only in case" in flat(text)


def _store_with_version(path: Path, version: str) -> Path:
    import sqlite3

    code, text = invoke(["watch", "--state", path], stdin='{"series_id":"s1","commit":"c7","value":1}\n')
    assert code == 0, text
    # closed here, not when the garbage collector gets to it: an open reader keeps `watch` out
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (version,))
    return path


def _rows(store: Path) -> list[tuple]:
    import sqlite3

    with contextlib.closing(sqlite3.connect(store)) as db:
        return [row for table in ("meta", "decisions", "series")
                for row in db.execute(f"SELECT * FROM {table} ORDER BY 1")]  # noqa: S608 (our table names)


def test_state_stores_of_a_newer_or_unknown_version(tmp_path):
    for version, said in (("4", "upgrade changepoint-triage"), ("x", "unknown format version 'x'")):
        store = _store_with_version(tmp_path / f"s{version}.db", version)
        before = _rows(store)
        code, text = invoke(["watch", "--state", store], stdin='{"series_id":"s1","commit":"c8","value":1}\n')
        assert code == 2 and said in flat(text) and store.name in text
        assert _rows(store) == before


def test_a_json_line_cut_mid_string_says_where():
    from triage.core.json_input import json_record

    with pytest.raises(ValueError, match=r"Unterminated string starting at \(column 21\)"):
        json_record('{"series_id": "s1", "commit')


def test_the_code_revision_writes_nothing_in_the_checkouts_git_folder(tmp_path):
    # Was: `git status` refreshed the index's stat cache, so every command that records the code's
    # revision wrote .git/index (through .git/index.lock) in the user's checkout; killed under a
    # file-size limit, it left the lock behind and the user's next `git commit` failed.
    import shutil

    from triage.core.versions import code_revision

    if shutil.which("git") is None:
        pytest.skip("git is absent")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    (tmp_path / "f.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "f.txt"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, env=env, capture_output=True)
    index = tmp_path / ".git" / "index"
    before = index.read_bytes()
    stamp = (tmp_path / "f.txt").stat().st_mtime_ns + 5_000_000_000
    os.utime(tmp_path / "f.txt", ns=(stamp, stamp))  # same content, new stat: git status would refresh
    assert code_revision(tmp_path) is not None
    assert not code_revision(tmp_path).endswith("+dirty")
    assert index.read_bytes() == before
    assert not (tmp_path / ".git" / "index.lock").exists()
