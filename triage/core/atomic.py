"""Writing files so that readers only ever see the old content or the new, whole.

Every output of the tool (datasets, candidate and decision CSVs, feature-set
files; model and report directories through :func:`replace_dir`) is written to a temporary file in the destination's directory and
renamed over it: ``os.replace`` is atomic within one file system, so a crash,
a kill or a full disk mid-write leaves the previous file intact and no
half-written one behind.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import tempfile
import uuid
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


# Linux renameat2(RENAME_EXCHANGE): swaps two paths in one step.
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (Linux renameat2); False if unsupported."""
    if not hasattr(_exchange, "fn"):
        fn = None
        if platform.system() == "Linux":
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fn = getattr(libc, "renameat2", None)
        _exchange.fn = fn
    fn = _exchange.fn
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        err = ctypes.get_errno()
        if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: the filesystem cannot
            return False
        raise OSError(err, os.strerror(err), str(b))
    return True


def replace_dir(tmp: Path, path: Path) -> None:
    """Put the finished directory ``tmp`` at ``path``; afterwards ``tmp`` holds the old one, if any.

    One atomic exchange where the platform has it; elsewhere two renames,
    with the old directory put back if the second fails, so ``path`` never
    ends up holding a half-written directory. The caller removes ``tmp``.
    """
    if not path.exists():
        os.rename(tmp, path)
        return
    if _exchange(tmp, path):
        return
    backup = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(path, backup)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.rename(backup, path)
        raise
    os.rename(backup, tmp)
