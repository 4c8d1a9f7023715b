"""How errors and warnings name an input file.

The readers often work on a temporary copy (a decompressed ``.gz``, standard
input saved to disk); messages must still name the file the user gave.
:func:`triage.readers.source.plain_file` registers each copy here while it
exists, and any layer that words a message about a path asks
:func:`display_name`.
"""

from __future__ import annotations

from pathlib import Path

from triage.core.atomic import is_stdio

#: The temporary copies in use, each with the name its user gave.
_COPIES: dict[str, str] = {}


def display_name(path: str | Path) -> str:
    """How errors and warnings name an input: ``<stdin>`` for ``-``, the name the user gave for
    a registered temporary copy of it, else the path as given.

    A reader's warning about ``results.json.gz`` named ``/tmp/triage-input-x1y2/results.json``,
    a copy the user never gave and that is gone when the warning is read.
    """
    if is_stdio(path):
        return "<stdin>"
    return _COPIES.get(str(path), str(path))


def register_copy(copy: str | Path, shown: str) -> None:
    """From now on :func:`display_name` calls ``copy`` ``shown``."""
    _COPIES[str(copy)] = shown


def forget_copy(copy: str | Path) -> None:
    """``copy`` is gone: its name is its own again."""
    _COPIES.pop(str(copy), None)
