"""Checks of an existing SQLite store before it is used: damaged stores are refused, never restarted.

SQLite opens almost anything without complaint: a 0-byte file is an empty
database, a store whose ``decisions`` table was dropped gets a fresh empty
one from ``CREATE TABLE IF NOT EXISTS``. Either way every earlier commit would
be decided again as new, silently. And a malformed page or an empty state
object only surfaced later, as a ``DatabaseError`` or ``KeyError: 'pre'``
traceback in the middle of a stream (issue 14). So before a store is used,
:func:`check_state_file` checks, on its own short-lived connection:

1. the file is not empty (0 bytes), still after half a second (SQLite
   creates a new store empty and writes its first page a moment later: a
   watcher starting beside another one's new store must not call it damaged);
2. ``PRAGMA integrity_check`` says ``ok``;
3. schema: once the store has its ``meta`` format row, every table exists
   with its columns;
4. consistency: every series that has decisions has a state, every state is
   a JSON object with the keys the loop reads (``n``, ``pre``), and the meta
   rows name a format.

Anything off raises :class:`DamagedStoreError` naming the file, the problem
and the recovery: ``triage watch --state FILE --reset-state`` moves the
damaged file aside (``FILE.damaged-<UTC time>``, see :func:`backup_state_file`)
and starts a new one; the producer re-sends the commits to decide again.

:func:`check_sqlite_store` is the same check for any store given its tables,
so the labels store can use it too.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from triage.core.atomic import SQLITE_MAGIC
from triage.core.errors import InputError

#: The online state store's tables and the columns the loop reads.
STATE_TABLES: dict[str, frozenset[str]] = {
    "meta": frozenset({"key", "value"}),
    "series": frozenset({"series_id", "state"}),
    "decisions": frozenset({"series_id", "commit_id", "decided_commit", "idx", "probability", "decision",
                            "top_features", "withdrawal"}),
}
#: The format version whose schema is checked: the one :mod:`triage.online.state_store`
#: writes (its FORMAT_VERSION; a test holds the two equal). Older formats are
#: the store's to refuse or reset, with its own message.
STATE_FORMAT_VERSION = 3
#: Older formats with the same tables (format 2: upgraded by the store on opening), checked alike.
STATE_SAME_TABLES = ("2",)
#: Keys every stored series state holds (SeriesState.to_dict); without them the loop cannot resume.
STATE_KEYS = ("n", "pre")

RECOVERY = (
    "recover with `triage watch --state {path} --reset-state` (the damaged file is kept as "
    "{kept}.damaged-<time>; re-send the commits to decide them again), or restore a backup"
)


class DamagedStoreError(InputError):
    """A store file that must not be used as it is; the message says how to recover."""

    def __init__(self, path: str | Path, problem: str, recovery: str = RECOVERY):
        # A link's store is the file it leads to: that file is the one moved aside (backup_state_file).
        kept = os.path.realpath(path) if os.path.islink(path) else path
        super().__init__(path, None, f"{problem}; {recovery.format(path=path, kept=kept)}")


def check_state_file(path: str | Path) -> None:
    """Refuse a damaged online state store (see the module docstring); an absent file passes.

    Another application's SQLite database (a labels store, an MLflow
    tracking store) is refused too, with an InputError that is no
    :class:`DamagedStoreError`, so ``--reset-state`` never moves it aside.
    """
    if (why := _other_database(path)) is not None:
        raise InputError(path, None, why)
    check_writable(path)
    consistency = {
        "a series with decisions has no state (the series table lost rows)":
            "SELECT COUNT(*) FROM (SELECT DISTINCT series_id FROM decisions "
            "WHERE series_id NOT IN (SELECT series_id FROM series))",
        "a series state is not a JSON object":
            "SELECT COUNT(*) FROM series WHERE json_valid(state) = 0 OR json_type(state) != 'object'",
        **{
            f"a series state lacks '{key}'":
                f"SELECT COUNT(*) FROM series WHERE json_valid(state) = 1 AND json_type(state) = 'object' "
                f"AND json_type(state, '$.{key}') IS NULL"
            for key in STATE_KEYS
        },
        "the meta table names no format": "SELECT COUNT(*) = 0 FROM meta WHERE key = 'format'",
    }
    check_sqlite_store(path, STATE_TABLES, consistency, version_query=(
        "SELECT value FROM meta WHERE key = 'format_version'", (str(STATE_FORMAT_VERSION), *STATE_SAME_TABLES)))


def check_writable(path: str | Path) -> None:
    """Refuse a state file, or the folder it lives in, that this user may not write.

    A store is written as commits are decided, and in WAL mode SQLite keeps
    its journal (``FILE-wal``) beside the file. Without this check SQLite's
    own errors ("disk I/O error", "attempt to write a readonly database")
    made a healthy read-only store look damaged, and the advice printed with
    them (``--reset-state``) moved it aside as ``FILE.damaged-<time>``. This is
    an :class:`InputError`, no :class:`DamagedStoreError`: ``--reset-state``
    never moves such a file. Symbolic links are followed (SQLite writes the
    journal beside the file a link points to).
    """
    if str(path) == ":memory:":
        return
    real = Path(os.path.realpath(path))
    if real.is_file() and not os.access(real, os.W_OK):
        where = f" (the link leads to {real})" if os.path.islink(path) else ""
        raise InputError(path, None, f"is read-only for this user{where}: a state file is written as commits are "
                         f"decided; make it writable (chmod u+w) or give --state another file")
    folder = real.parent
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(path, None, f"the folder {folder} is not writable for this user: a state file needs its "
                         f"journal ({real.name}-wal) beside it; make the folder writable or give --state a file "
                         "in another folder")


def connect_if_sqlite(path: str | Path) -> sqlite3.Connection | None:
    """A connection to ``path`` if it is an SQLite file that opens at once; None if not SQLite or not openable.

    For telling another application's database from a store before using it
    (the state store here, the labels store in :mod:`triage.workspace.store`).
    """
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return None
        return sqlite3.connect(path, timeout=0.0, isolation_level=None)
    except (OSError, sqlite3.Error):
        return None


def _other_database(path: str | Path) -> str | None:
    """Why ``path`` is some other SQLite database than a state store, or None.

    A state store holds only its own tables. Without this, a database with
    none of them counted as a new store and got them added (a mistyped
    ``--state mlruns.db``), and one sharing a table name (a labels store's
    ``decisions``) as a damaged store, whose recovery moves the file aside.
    """
    if str(path) == ":memory:" or not os.path.isfile(path):
        return None
    db = connect_if_sqlite(path)
    if db is None:
        return None
    try:
        # As check_sqlite_store: exclusive mode before the first read leaves no -shm file beside a WAL file.
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return None  # damaged or locked: check_sqlite_store and the store's open report it
    finally:
        db.close()
    other = sorted(names - set(STATE_TABLES) - {"sqlite_sequence"})
    if not other:
        return None
    what = (" (it looks like a triage labels store)" if "store_info" in names
            else " (it looks like an MLflow tracking store)" if "experiments" in names and "runs" in names
            else "")
    return (f"not a `triage watch` state store: another SQLite database{what}, with tables "
            f"{', '.join(other[:8])}; give --state a new file or a state written by `triage watch`")


def check_sqlite_store(path: str | Path, tables: Mapping[str, frozenset[str]],
                       consistency: Mapping[str, str] | None = None, *, recovery: str = RECOVERY,
                       version_query: tuple[str, str | tuple[str, ...]] | None = None) -> None:
    """Refuse a damaged SQLite store: empty, not SQLite, corrupt, tables missing, inconsistent.

    A file that has none of ``tables`` yet is a new store and passes (the
    owner creates the schema); once any of them exists, all must. Each
    ``consistency`` query returns one count: non-zero means its problem.
    ``version_query`` = (query, version or versions): when the query names another
    version, only the integrity check applies (the owner reads or refuses
    older formats itself). An absent file, ``:memory:``, a file that is no SQLite database at all and
    a store locked by another process pass: their owner reports those.
    """
    if str(path) == ":memory:" or not os.path.exists(path):
        return
    if not os.path.isfile(path):
        # A directory or a device is no damaged store: moving it aside (what the
        # recovery advice does) would take it from its owner, so no advice is given.
        raise InputError(path, None, "is not a regular file (a directory or a device?); give the path of a store file")
    if _size_settled(path) == 0:
        raise DamagedStoreError(path, "is empty (0 bytes): truncated, or not a store written by triage", recovery)
    with open(path, "rb") as fh:
        if fh.read(16) != SQLITE_MAGIC:
            return  # not a store at all, rather than a damaged one: its owner says "not a state file"
    try:
        db = sqlite3.connect(path, timeout=0.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise DamagedStoreError(path, f"cannot be opened ({exc})", recovery) from None
    try:
        # Exclusive mode before the first read: no -shm file beside a WAL store.
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        result = [row[0] for row in db.execute("PRAGMA integrity_check(5)")]
        if result != ["ok"]:
            raise DamagedStoreError(path, f"fails SQLite's integrity check: {'; '.join(map(str, result))}", recovery)
        present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not present & set(tables):
            return  # a new store: its owner creates the schema
        if version_query is not None:
            checked = (version_query[1],) if isinstance(version_query[1], str) else version_query[1]
            try:
                row = db.execute(version_query[0]).fetchone()
            except sqlite3.OperationalError:  # no meta table: the table check below names it
                row = (checked[0],)
            if row is not None and str(row[0]) not in checked:
                return
        for table, columns in tables.items():
            if table not in present:
                raise DamagedStoreError(path, f"has no {table} table (dropped?)", recovery)
            have = {row[1] for row in db.execute(f'PRAGMA table_info("{table}")')}
            if missing := sorted(columns - have):
                raise DamagedStoreError(path, f"table {table} lacks column(s) {', '.join(missing)}", recovery)
        for problem, query in (consistency or {}).items():
            if db.execute(query).fetchone()[0]:
                raise DamagedStoreError(path, problem, recovery)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return  # in use: the store's owner says so when it opens it
        raise DamagedStoreError(path, f"cannot be read ({exc})", recovery) from None
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed" and friends
        raise DamagedStoreError(path, f"is damaged (SQLite says: {exc})", recovery) from None
    finally:
        db.close()


#: How long a 0-byte store is watched before it counts as truncated (seconds).
EMPTY_GRACE = 0.5


def _size_settled(path: str | Path) -> int:
    """The size of ``path``; a 0-byte file is looked at again for :data:`EMPTY_GRACE` seconds.

    SQLite creates a new store's file empty and writes its first page a moment
    later: a second watcher started at the same time as the first found the
    file still empty, called the first one's new store damaged, and advised
    ``--reset-state``, which moved the store in use aside. A store that is
    still empty after the grace is a truncated one.
    """
    deadline = time.monotonic() + EMPTY_GRACE
    while True:
        try:
            size = os.path.getsize(path)
        except OSError:  # removed meanwhile: nothing to refuse, the owner opens what is there
            return -1
        if size or time.monotonic() >= deadline:
            return size
        time.sleep(0.02)


def backup_state_file(path: str | Path) -> Path | None:
    """Move a store file (and its ``-wal`` / ``-journal``) aside as ``<path>.damaged-<UTC time>``.

    Returns the backup's path, or None when there was no file. This is what
    ``--reset-state`` does before starting over: the old file is kept, never
    deleted, in case it still holds something worth reading.
    """
    path = Path(path)
    if str(path) == ":memory:" or not path.exists():
        return None
    if not path.is_file():
        raise InputError(path, None, "is not a regular file (a directory or a device?); it is never moved aside")
    if path.is_symlink():
        # The store is the file the link leads to (SQLite writes it and its -wal there): that
        # file is moved aside and the new store is created there, through the link, which stays.
        # Moving the link instead left the damaged file in place and put a plain file where the link was.
        path = Path(os.path.realpath(path))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.damaged-{stamp}")
    os.rename(path, backup)
    for suffix in ("-wal", "-journal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.rename(side, Path(f"{backup}{suffix}"))
    return backup


def set_aside_if_damaged(path: str | Path | None) -> Path | None:
    """For ``--reset-state``: a damaged store is moved aside (kept) so a new one can start; returns the backup.

    A healthy store stays where it is (its owner resets it in place).
    """
    if path is None:
        return None
    try:
        check_state_file(path)
    except DamagedStoreError:
        return backup_state_file(path)
    return None
