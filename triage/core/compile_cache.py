"""Where numba keeps the compiled kernels, and matplotlib its font cache.

The feature and model kernels are compiled with ``cache=True``. numba writes
that cache beside the sources (``__pycache__``) or in the user's cache folder.
:func:`cache_dir` chooses, and ``triage/__init__.py`` sets ``NUMBA_CACHE_DIR``
from it before numba is imported:

* an installed package (under ``site-packages`` / ``dist-packages``): the
  user's cache folder, ``$XDG_CACHE_HOME/changepoint-triage/numba`` (default
  ``~/.cache/...``). Beside the sources, 116 files (7.8 MB) landed in
  site-packages after the demo, outside the wheel's file record: ``pip
  uninstall`` left a ``triage/`` folder behind, importable as an empty
  namespace package.
* a checkout: numba's own choice (``__pycache__``), as before.
* neither writable (a read-only image run by a user without a home, e.g.
  ``nobody`` in CI: numba's first compilation failed with "cannot cache
  function ...: no locator available"): a private folder in the temporary
  directory, ``changepoint-triage-numba-<uid>``, created with mode 0700. As
  numba's cache files are pickles, a folder of that name that another user
  owns or may write is never used (another user could plant one): a fresh
  private folder is made instead.

matplotlib warns on every command that plots ("Matplotlib created a temporary
cache directory ... it is highly recommended to set the MPLCONFIGDIR") when
the home folder is read-only; :func:`matplotlib_dir` gives it the same kind of
private folder. A set ``NUMBA_CACHE_DIR`` / ``MPLCONFIGDIR`` is the user's
choice and is kept.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def writable(folder: Path) -> bool:
    """Whether ``folder`` exists and can be written, or can be created."""
    for parent in (folder, *folder.parents):
        if parent.exists():
            return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    return False


def user_cache_dir(env: dict[str, str] | os._Environ[str] | None = None) -> Path | None:
    """``$XDG_CACHE_HOME``, else ``~/.cache``; None when no home is known (``env`` defaults to ``os.environ``)."""
    env = os.environ if env is None else env
    home = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return None if not home or home.startswith("~") else Path(home)


def _uid() -> int | str:
    return os.getuid() if hasattr(os, "getuid") else "user"


def private_temp_dir(name: str) -> str:
    """``<tmp>/<name>-<uid>``, made with mode 0700, when it is ours alone; else a fresh private folder.

    Never raises: called at import. A name that exists as a link, a
    non-folder, or a folder another user owns or others may write is not
    used (``tempfile.mkdtemp`` makes a new one, mode 0700).
    """
    tmp = Path(tempfile.gettempdir())
    folder = tmp / f"{name}-{_uid()}"
    try:
        os.mkdir(folder, 0o700)
        return str(folder)
    except FileExistsError:
        try:
            st = os.lstat(folder)
            ours = (not hasattr(os, "getuid")) or st.st_uid == os.getuid()
            if stat.S_ISDIR(st.st_mode) and ours and not st.st_mode & 0o022:
                return str(folder)
        except OSError:
            pass
    except OSError:
        pass
    try:
        return tempfile.mkdtemp(prefix=f"{name}-")
    except OSError:
        return str(folder)  # no writable temporary directory at all: numba's own error then names it


def _installed(package: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in package.parts)


def cache_dir(package: Path, environ: dict[str, str] | None = None) -> str | None:
    """The folder for numba's cache, or None where numba's own choice stands (the module docstring).

    ``package`` is the ``triage`` folder (its ``__pycache__`` is numba's
    first choice); ``environ`` defaults to ``os.environ``.
    """
    env = os.environ if environ is None else environ
    if env.get("NUMBA_CACHE_DIR"):
        return None
    user = user_cache_dir(env)
    if _installed(package) and user is not None and writable(user / "changepoint-triage" / "numba"):
        return str(user / "changepoint-triage" / "numba")
    if writable(package / "__pycache__"):
        return None
    if user is not None and writable(user / "numba"):
        return None
    return private_temp_dir("changepoint-triage-numba")


def matplotlib_dir(environ: dict[str, str] | None = None) -> str | None:
    """A private folder for matplotlib's configuration and font cache when its own would not be writable, else None."""
    env = os.environ if environ is None else environ
    if env.get("MPLCONFIGDIR"):
        return None
    home = env.get("HOME") or os.path.expanduser("~")
    if home and not home.startswith("~"):
        # matplotlib wants both its configuration and its cache folder writable
        config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        if writable(Path(config) / "matplotlib") and writable(Path(cache) / "matplotlib"):
            return None
    return private_temp_dir("changepoint-triage-matplotlib")
