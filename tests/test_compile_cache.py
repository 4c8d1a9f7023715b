"""Where numba's compile cache goes when the installation and the home folder are read-only.

Found in the sixteenth session's walkthrough: run by a user without a
writable home on a read-only installation, every command that extracts
features failed with "cannot cache function 'pairwise_leaf': no locator
available", an internal error.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from triage.core.compile_cache import cache_dir


def _unwritable(tmp_path: Path) -> Path:
    """A folder that can neither exist nor be created: its parent is a regular file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return blocker / "folder"


def test_a_writable_installation_keeps_numbas_own_choice(tmp_path: Path) -> None:
    assert cache_dir(tmp_path, {"HOME": str(_unwritable(tmp_path))}) is None


def test_a_writable_home_keeps_numbas_own_choice(tmp_path: Path) -> None:
    assert cache_dir(_unwritable(tmp_path), {"HOME": str(tmp_path)}) is None
    assert cache_dir(_unwritable(tmp_path), {"XDG_CACHE_HOME": str(tmp_path / "cache")}) is None


def test_neither_writable_gives_a_folder_in_the_temporary_directory(tmp_path: Path) -> None:
    folder = cache_dir(_unwritable(tmp_path), {"HOME": str(_unwritable(tmp_path))})
    assert folder is not None
    assert Path(folder).parent == Path(tempfile.gettempdir())
    assert "changepoint-triage-numba" in Path(folder).name


def test_a_users_own_numba_cache_dir_is_kept(tmp_path: Path) -> None:
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "mine"), "HOME": str(_unwritable(tmp_path))}
    assert cache_dir(_unwritable(tmp_path), env) is None
