"""Where numba keeps the compiled kernels when the installation cannot.

The feature and model kernels are compiled with ``cache=True``. numba writes
that cache beside the sources (``__pycache__``) or in the user's cache folder;
when neither is writable (an installation in a read-only image run by a user
without a home, e.g. ``nobody`` in CI), its first compilation failed with
"cannot cache function ...: no locator available", an internal error of
every command that extracts features. :func:`cache_dir` names a folder in the
temporary directory for that case; ``triage/__init__.py`` sets
``NUMBA_CACHE_DIR`` from it before numba is imported.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists and can be written, or can be created."""
    for parent in (folder, *folder.parents):
        if parent.exists():
            return parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    return False


def cache_dir(package: Path, environ: dict[str, str] | None = None) -> str | None:
    """A folder for numba's cache when numba would find none, else None (numba's own choice stands).

    ``package`` is the installed ``triage`` folder (its ``__pycache__`` is
    numba's first choice); ``environ`` defaults to ``os.environ``: a set
    ``NUMBA_CACHE_DIR`` is the user's choice and is kept.
    """
    env = os.environ if environ is None else environ
    if env.get("NUMBA_CACHE_DIR"):
        return None
    if _writable(package / "__pycache__"):
        return None
    home = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    if home and not home.startswith("~") and _writable(Path(home) / "numba"):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return str(Path(tempfile.gettempdir()) / f"changepoint-triage-numba-{uid}")
