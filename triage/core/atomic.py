"""Writing files so that readers only ever see the old content or the new, whole.

Every output of the tool (datasets, candidate and decision CSVs, feature-set
files; model and report directories through :func:`replace_dir`) is written
to a temporary file in the destination's directory and renamed over it:
``os.replace`` is atomic within one file system, so a crash, a kill or a full
disk mid-write leaves the previous file intact and no half-written one behind.

What "the destination" is (:func:`destination`):

* ``-`` is standard output: the content is written whole to a temporary file
  first, then copied to stdout, so a failure mid-way prints nothing;
* a symbolic link is written *through*: its target is replaced, the link stays;
* a special file (a device such as ``/dev/stdout`` or ``/dev/null``, a FIFO, a
  socket) is never replaced by a regular file: the finished content, built in
  the temporary folder (never beside the special file), is copied into the
  path as given. What a path is gets decided by ``os.stat`` on the path itself
  (links followed by the kernel), not on its resolved name: ``/dev/stdout`` in
  a pipe resolves to ``/proc/<pid>/fd/pipe:[n]``, a name no file has;
* a directory where a file is expected, or a parent that is not a directory,
  is an :class:`~triage.core.errors.InputError` naming the path.

Whole directories (model and report directories, :func:`directory_target` and
:func:`replace_dir`) follow the same rule: a link to a directory is written
through, the directory it names is swapped, the link stays; nothing is left
beside either.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import os
import platform
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from triage.core.errors import InputError

#: The path that means standard output (and standard input for readers).
STDIO = "-"


def is_stdio(path: str | Path | None) -> bool:
    """True for ``-`` (a path given on the command line as a dash)."""
    return path is not None and str(path) == STDIO


def destination(path: str | Path) -> tuple[str, Path | None]:
    """Where a write to ``path`` goes: ``("stdout", None)``, ``("special", p)`` or ``("file", p)``.

    ``("file", p)``: a regular file (existing or not) at ``p``, symbolic links
    already followed; ``("special", p)``: an existing device, FIFO or socket,
    ``p`` the path as given (opening it follows the links). Raises
    :class:`InputError` for a directory, a parent that is not one, or a path
    that cannot be looked at (a link loop, no permission).
    """
    if is_stdio(path):
        return "stdout", None
    path = Path(path)
    try:
        # stat follows every link the way open() will; the resolved *name* may
        # not exist as a file (/dev/stdout -> /proc/self/fd/1 -> pipe:[n]).
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file", _new_file(path)
    except NotADirectoryError:
        raise InputError(path, None, "cannot write here: a parent of this path is a file, not a directory") from None
    except OSError as exc:  # ELOOP, EACCES: a clear error, not a traceback
        raise InputError(path, None, f"cannot write here: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(path, None, "is a directory; expected a file path")
    if stat.S_ISREG(mode):
        # Follow links (also in the parent chain), so a link is written through
        # and the temporary file sits beside the file it replaces.
        return "file", Path(os.path.realpath(path))
    return "special", path


def check_folder_writable(path: str | Path) -> None:
    """Refuse ``path`` now when no file can be made in its folder (or its nearest existing ancestor).

    For an output named before any work (``--out``): the output is written to a temporary file
    beside it, and a folder that refuses one (read-only, ``chattr +i``, ``/sys``) was found out
    after the whole run, in an error naming the hidden temporary file. A file is made and removed
    to tell: permissions alone do not say it for root. Standard output and devices pass.
    """
    kind, real = destination(path)
    if kind != "file" or real is None:
        return
    path, folder = Path(path), real.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return  # _new_file named a parent that is a file
    try:
        fd, name = tempfile.mkstemp(prefix=".triage-probe.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(path, None, f"cannot write here: the folder {folder}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(name)


def _new_file(path: Path) -> Path:
    """Where a file that does not exist yet will be: links (also dangling ones) followed."""
    real = Path(os.path.realpath(path))
    parent = real.parent
    if parent.exists() and not parent.is_dir():
        raise InputError(path, None, f"cannot write here: {parent} is not a directory")
    return real


def _copy_into(src: Path, target: Path | None) -> None:
    """Copy a finished temporary file to stdout (``target`` None) or into a special file."""
    with open(src, "rb") as fh:
        if target is None:
            sys.stdout.flush()
            out = sys.stdout.buffer
            shutil.copyfileobj(fh, out)
            out.flush()
        else:
            # Opened for writing only, never created or renamed over: a device stays a device.
            try:
                dev = open(target, "wb", buffering=0)
            except OSError as exc:  # a socket cannot be opened (ENXIO); say so, no traceback
                raise InputError(target, None, f"cannot write into this special file: {exc.strerror}") from None
            with dev:
                try:
                    shutil.copyfileobj(fh, dev)
                except OSError as exc:  # ENOSPC from /dev/full, EIO: the error names no file by itself
                    if exc.filename is None:
                        exc.filename = str(target)
                    raise


def atomic_write(path: str | Path, write: Callable[[Path], None], *, fsync: bool = False) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it into place.

    ``path`` may be ``-`` (stdout), a link (written through) or a device (copied
    into); see the module docstring. Returns ``path`` as the caller named it
    for stdout and devices, the file actually written otherwise.

    The new file gets the mode a plain ``open()`` would give it (``mkstemp``
    makes it private). With ``fsync`` the data reaches the disk before the
    rename, for files whose loss after a power cut would matter.
    """
    kind, real = destination(path)
    if kind != "file" or real is None:
        # stdout or a device: build the whole content aside, then copy it in.
        fd, name = tempfile.mkstemp(prefix=".triage-out.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        try:
            write(tmp)
            _copy_into(tmp, real)
        finally:
            tmp.unlink(missing_ok=True)
        return Path(path)
    path = real
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # the folder changed since destination() looked: name the user's path, not ours
        raise InputError(path, None, f"cannot write here: {exc.strerror}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        name_the_output(exc, path, tmp)
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return path


def name_the_output(exc: OSError, path: str | Path, tmp: str | Path) -> None:
    """Name ``path`` in ``exc`` when it names no file or only ``tmp`` (or a file inside it), in place.

    A full disk (ENOSPC) or EIO while pandas, gzip, pyarrow or matplotlib wrote
    the hidden temporary file or folder beside ``path``: the error named no
    file, or ours ("error: No space left on device"). An errno-less OSError
    keeps its own text (a name would replace it).
    """
    if exc.errno is not None and (exc.filename is None or str(tmp) in str(exc.filename)):
        exc.filename = str(path)


def _mode_for(path: Path) -> int:
    """The mode a plain ``open(path, "w")`` leaves: an existing file's own, else 0o666 less the umask.

    A replaced output took the umask's mode, so a ``chmod 600`` file came back 644.
    """
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask, read without setting it (os.umask(0) and back races with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)  # no /proc (macOS): the only portable way
    os.umask(umask)
    return umask


#: The first bytes of every SQLite database (https://sqlite.org/fileformat.html): how a watch
#: state, a labels store or an MLflow tracking database is told from a table, to never replace one.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Output compression by the target's suffix: the kinds every reader of the project opens.
COMPRESSION_BY_SUFFIX: dict[str, object] = {".gz": {"method": "gzip", "mtime": 0}, ".zst": {"method": "zstd"}}
#: Compressed or archive suffixes an output is refused with (written, they held plain text).
UNWRITTEN_COMPRESSED = frozenset({".bz2", ".xz", ".lzma", ".lz4", ".zip", ".7z", ".tar", ".tgz", ".tbz2", ".txz"})


def _compression(path: str | Path) -> object:
    """pandas' ``compression`` for ``path``: the content is written to a temporary
    name first, so pandas cannot infer it from the suffix itself.

    A gzip member's header names ``path`` (``r.csv`` for ``r.csv.gz``), as the
    ``gzip`` tool writes it, not the temporary file: that random name made two
    runs' files differ (``mtime`` 0 is there to make them equal) and
    ``gunzip -N`` restore a hidden ``.r.csv.gz.<random>.tmp``. pandas passes
    ``filename`` on to :class:`gzip.GzipFile`, so open the temporary file
    yourself and hand pandas the binary handle.
    """
    if str(path) == "-":
        return None
    suffix = Path(str(path)).suffix.lower()
    if suffix in UNWRITTEN_COMPRESSED:
        # It wrote plain text under the archive's name (`file o.zip`: "CSV text").
        raise InputError(path, None, f"cannot write {suffix} files: name the output .csv, .csv.gz or .csv.zst "
                                     "(.jsonl, .jsonl.gz, .jsonl.zst for JSON lines)")
    compression = COMPRESSION_BY_SUFFIX.get(suffix)
    if isinstance(compression, dict) and compression.get("method") == "gzip":
        compression = {**compression, "filename": Path(str(path)).name[: -len(".gz")]}  # the suffix in any case
    return compression


def write_csv_atomic(frame: pd.DataFrame, path: str | Path, **to_csv: object) -> Path:
    """``frame.to_csv(path, index=False, **to_csv)``, atomically; ``.gz`` / ``.zst`` compressed by suffix."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            frame.to_csv(handle, index=False, compression=_compression(path), mode="wb", **to_csv)

    return atomic_write(path, write)


def write_table_atomic(frame: pd.DataFrame, path: str | Path, **to_csv: object) -> Path:
    """``frame`` as Parquet for a ``.parquet`` name, else as :func:`write_csv_atomic` writes it, atomically.

    A table the readers take by its suffix: CSV text under a ``.parquet`` name
    was refused by every reader ("not a readable Parquet file").
    """
    if not is_stdio(path) and Path(str(path)).suffix.lower() == ".parquet":
        return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return write_csv_atomic(frame, path, **to_csv)


def _json_cell(value: object) -> object:
    """One cell as JSON: missing -> null, NumPy scalars as Python's, timestamps ISO 8601 (pandas' form)."""
    if isinstance(value, pd.Timestamp):  # NaT is no Timestamp: it is missing, below
        utc = value.tz_convert("UTC") if value.tzinfo is not None else value
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + ("Z" if value.tzinfo is not None else "")
    if value is None or (not isinstance(value, (str, bytes)) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return None
    value = value.item() if hasattr(value, "item") and not isinstance(value, (str, bytes)) else value
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no infinity: json.dumps would write -Infinity, which JSON.parse, jq and
        # strict readers refuse (edivisive's t of a noise-free step is -inf).
        return None
    return value


def jsonl_text(frame: pd.DataFrame) -> str:
    """``frame`` as JSON lines, one object per row.

    Not pandas' ``to_json``: it rounds a float (0.12345678901234568 was
    written 0.123456789) and writes ``/`` as ``\\/``. ``json.dumps`` writes
    every digit (``repr``), as the CSV does, so a probability reads back the
    same from either; missing cells are ``null``, and so are infinite
    numbers (JSON has none); timestamps ISO 8601 in UTC to the millisecond
    as pandas wrote them.
    """
    keys = [str(c) for c in frame.columns]
    return "".join(
        json.dumps(dict(zip(keys, map(_json_cell, row), strict=True)), separators=(",", ":")) + "\n"
        for row in frame.itertuples(index=False, name=None)
    )


def write_jsonl_atomic(frame: pd.DataFrame, path: str | Path) -> Path:
    """``frame`` as JSON lines (:func:`jsonl_text`), atomically; compressed by suffix."""
    from pandas.io.common import get_handle

    text = jsonl_text(frame)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as binary, get_handle(
            binary, "w", encoding="utf-8", compression=_compression(path)
        ) as handle:
            handle.handle.write(text)

    return atomic_write(path, write)


def write_frame(frame: pd.DataFrame, path: str | Path, fmt: str = "csv", **to_csv: object) -> Path:
    """Write a table as ``csv`` or ``json`` (JSON lines), atomically; ``-`` is stdout."""
    if fmt == "json":
        return write_jsonl_atomic(frame, path)
    if fmt != "csv":
        raise ValueError(f"unknown table format {fmt!r} (use csv or json)")
    return write_csv_atomic(frame, path, **to_csv)


def write_text_atomic(text: str, path: str | Path, *, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path``, atomically."""
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return atomic_write(path, write, fsync=fsync)


# Linux renameat2(RENAME_EXCHANGE): swaps two paths in one step.
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


#: libc's renameat2, looked up on first use: ``[]`` not yet, ``[None]`` unsupported, ``[fn]``.
_RENAMEAT2: list[Callable[..., int] | None] = []


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (Linux renameat2); False if unsupported."""
    if not _RENAMEAT2:
        found = None
        if platform.system() == "Linux":
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            found = getattr(libc, "renameat2", None)
        _RENAMEAT2.append(found)
    fn = _RENAMEAT2[0]
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        err = ctypes.get_errno()
        if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: the filesystem cannot
            return False
        raise OSError(err, os.strerror(err), str(b))
    return True


def directory_target(path: str | Path) -> Path:
    """The directory a whole-directory write to ``path`` replaces: links followed.

    A link to a directory (or a dangling one) is written through: the
    directory it names is swapped, the link stays, as :func:`atomic_write`
    does for files. The temporary directory belongs beside the returned path
    (same file system, so the swap is one rename). Raises :class:`InputError`
    for a link loop or a parent that is not a directory.
    """
    path = Path(path)
    real = Path(os.path.realpath(path))
    if real.is_symlink():  # realpath stops where a loop starts
        raise InputError(path, None, "is a symbolic link that loops; cannot write through it")
    try:
        os.stat(real)
    except FileNotFoundError:
        if real.parent.exists() and not real.parent.is_dir():
            raise InputError(path, None, f"cannot write here: {real.parent} is not a directory") from None
    except NotADirectoryError:
        raise InputError(path, None, "cannot write here: a parent of this path is a file, not a directory") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot write here: {exc.strerror}") from None
    return real


def replace_dir(tmp: Path, path: Path) -> None:
    """Put the finished directory ``tmp`` at ``path``; afterwards ``tmp`` holds the old one, if any.

    One atomic exchange where the platform has it; elsewhere two renames,
    with the old directory put back if the second fails, so ``path`` never
    ends up holding a half-written directory. The caller removes ``tmp``.
    ``path`` must not be a symbolic link (resolve it with
    :func:`directory_target`): a rename would move the link, not its target.
    """
    if path.is_symlink():
        raise InputError(path, None, "is a symbolic link; refusing to replace the link itself")
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
