"""What code and libraries a result was made with: recorded in model manifests, ``synth``'s and ``evaluate``'s records.

The distribution's version stays 0.1.0 from commit to commit, so two models
built from different code read alike; :func:`code_revision` adds the git
commit when the package runs from a checkout.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

#: The package's version as pyproject.toml states it (``triage.__version__``), for a checkout never installed.
VERSION = "0.1.0"

#: The key :func:`distribution_versions` gives the checkout's revision under.
REVISION = "changepoint-triage-revision"


def package_version() -> str:
    """The installed distribution's version; from a checkout never installed, :data:`VERSION`.

    The one lookup: ``--version`` and the crash log's line had each their own
    (one fell back to ``__version__``, the other to "unknown").
    """
    try:
        return metadata.version("changepoint-triage")
    except metadata.PackageNotFoundError:
        return VERSION


def code_revision(root: Path | None = None) -> str | None:
    """The git commit of the checkout the package runs from, ``+dirty`` when tracked files differ from it.

    None when installed (no ``.git`` beside the package), when git is absent
    or answers nothing within 5 s. ``root`` defaults to the checkout's top
    folder (the parent of ``triage/``).
    """
    top = Path(__file__).resolve().parents[2] if root is None else Path(root)
    if not (top / ".git").exists():
        return None
    # --no-optional-locks: `git status` would otherwise refresh the index's stat cache, writing
    # .git/index of the user's checkout (and leaving index.lock if killed, e.g. under ulimit -f).
    git = ["git", "--no-optional-locks", "-C", str(top)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if changed else head or None


def file_sha256(file: Path) -> str:
    """The SHA-256 of a file's bytes, hex (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(file, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def distribution_versions(names: Iterable[str], revision: bool = True) -> dict[str, str | None]:
    """Python's version, each distribution's (None: not installed) and the checkout's revision (:data:`REVISION`).

    ``revision=False`` leaves the revision out: it runs git twice, which a check
    of what is installed does not need.
    """
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in names:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    if revision:
        out[REVISION] = code_revision()
    return out
