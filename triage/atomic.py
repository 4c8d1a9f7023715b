"""Writing files so that readers only ever see the old content or the new, whole.

Every output of the tool (datasets, candidate and decision CSVs, feature-set
files) is written to a temporary file in the destination's directory and
renamed over it: ``os.replace`` is atomic within one file system, so a crash,
a kill or a full disk mid-write leaves the previous file intact and no
half-written one behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def atomic_write(path: str | Path, write: Callable[[Path], None], *, fsync: bool = False) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it into place.

    The new file gets the mode a plain ``open()`` would give it (``mkstemp``
    makes it private). With ``fsync`` the data reaches the disk before the
    rename, for files whose loss after a power cut would matter.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_csv_atomic(frame: pd.DataFrame, path: str | Path, **to_csv: object) -> Path:
    """``frame.to_csv(path, index=False, **to_csv)``, atomically."""
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, **to_csv))


def write_text_atomic(text: str, path: str | Path, *, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path``, atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), fsync=fsync)
