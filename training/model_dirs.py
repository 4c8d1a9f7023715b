"""What makes a folder a model directory, cheap to ask before any heavy import.

A model directory is checksummed as a whole (:mod:`triage.training.model_files`
verifies every file in it, and refuses one its checksums do not cover), so
anything another command writes inside one -- a CSV, a report, a state store,
another model -- makes the model unloadable. Output paths are therefore
checked against :func:`enclosing_model_dir` before anything is written. This
module imports nothing heavy: the check runs while options are parsed.
"""

from __future__ import annotations

import os
from pathlib import Path

MANIFEST = "manifest.json"
CHECKSUMS = "checksums.sha256"


def is_model_dir(path: Path) -> bool:
    """A folder holding a model's manifest and checksums (complete or not)."""
    return (path / MANIFEST).is_file() and (path / CHECKSUMS).is_file()


def enclosing_model_dir(path: str | Path) -> Path | None:
    """The model directory strictly above ``path`` (links followed), or None.

    ``path`` itself is not looked at: a model directory may be replaced by a
    newer model (``train --out`` on the same folder), never written *into*.
    """
    real = Path(os.path.realpath(path))
    for parent in real.parents:
        if is_model_dir(parent):
            return parent
    return None
