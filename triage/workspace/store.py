"""The labels store: every sheriff decision, in SQLite.

One file (``--labels FILE``) holds an append-only table of decisions::

    id, series_id, commit, label, note, who, decided_at,
    p_true, model_call, model, undone_at, undone_by

``label`` is a canonical label of :mod:`triage.core.labels`: the workspace's
*true* is ``true_positive``, *false* is ``false_positive`` and *unsure* is
``under_investigation`` (still untriaged: training ignores it). ``p_true``,
``model_call`` and ``model`` record what the model said when the sheriff
decided, so the agreement by week is measured against the model that served
the decision, not whichever model is loaded later.

Why append-only: nothing is overwritten; the *current* decision of an alert
is its latest row not undone. Undo marks that row undone (who and when)
rather than deleting it. A decision made from a page names the decision that
page showed (``seen``): when another tab or sheriff decided meanwhile, it is
refused (:class:`Conflict`) rather than silently replacing one it never
showed, and a repeated click adds no second row. Each decision or undo is
one transaction, its check included; the journal is WAL so readers never
block the writer, and ``busy_timeout`` makes a second writer wait instead of
failing. The store refuses to be used once its path no longer is the file it
opened (:class:`StoreChanged`): SQLite would go on writing to the old file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels as L
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.online.store_checks import check_sqlite_store, connect_if_sqlite

#: The workspace's three buttons and the canonical label each stores.
DECISIONS: dict[str, str] = {
    "true": L.TRUE_POSITIVE,
    "false": L.FALSE_POSITIVE,
    "unsure": L.UNDER_INVESTIGATION,
}
#: Canonical label -> button word, for display.
WORDS: dict[str, str] = {v: k for k, v in DECISIONS.items()}

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    series_id TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    label TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    who TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    p_true REAL,
    model_call TEXT,
    model TEXT,
    undone_at TEXT,
    undone_by TEXT
);
CREATE INDEX IF NOT EXISTS decisions_alert ON decisions (series_id, commit_id, id);
CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
FORMAT = "triage-labels-1"
_FORMAT_STEM = "triage-labels-"
#: The tables and columns a labels store must have once it has any (checked on open).
TABLES: dict[str, frozenset[str]] = {
    "decisions": frozenset({"id", "series_id", "commit_id", "label", "note", "who", "decided_at", "p_true",
                            "model_call", "model", "undone_at", "undone_by"}),
    "store_info": frozenset({"key", "value"}),
}
_FORMAT_QUERY = "SELECT value FROM store_info WHERE key = 'format'"
RECOVERY = (
    "move {path} aside (keep it: its decisions may be recoverable) and start again, a new labels store "
    "is created; or restore a backup"
)
#: Longest note kept (a note is a comment, not a document).
MAX_NOTE = 2000


@dataclass(frozen=True)
class Decision:
    """One row of the store."""

    id: int
    series_id: str
    commit: str
    label: str
    note: str
    who: str
    decided_at: str
    p_true: float | None
    model_call: str | None
    model: str | None
    undone_at: str | None = None
    undone_by: str | None = None

    @property
    def word(self) -> str:
        return WORDS.get(self.label, self.label)


#: The columns of a :class:`Decision`, in its field order.
_COLUMNS = "id, series_id, commit_id, label, note, who, decided_at, p_true, model_call, model, undone_at, undone_by"


class Conflict(Exception):
    """The alert's decision changed since the sheriff's page showed it; ``current`` is what it is now."""

    def __init__(self, current: Decision | None):
        super().__init__("the alert's decision changed since the page was loaded")
        self.current = current


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_path(path: str | Path, *, must_exist: bool = False) -> Path:
    """``path`` as a labels store location: a regular file, or nothing yet (InputError otherwise)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InputError(path, None, "the labels store must be a regular file (not a link, directory or device)")
    if must_exist and not path.exists():
        raise InputError(path, None, "no such labels store")
    return path


class BadRow(InputError):
    """A decision row holding a value :meth:`LabelsStore.record` never writes (edited outside the workspace)."""


class StoreChanged(InputError):
    """The labels file is no longer the file this store opened (moved, replaced, deleted, made a link)."""

    def __init__(self, path: Path):
        super().__init__(path, None, "the labels store was moved, replaced or deleted since the workspace opened it "
                         "(by another process?); put the file back, or restart `triage serve` to open what is there now")


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the regular file at ``path``; None for a link, anything else, or nothing."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _other_database(path: Path) -> str | None:
    """Why ``path`` is some other SQLite database than a labels store, or None.

    A labels store holds only its own tables; another database (the online
    loop's state store, an application's) would otherwise get them added, or,
    sharing a table name, be called a damaged labels store.
    """
    db = connect_if_sqlite(path)
    if db is None:
        return None
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} - {"sqlite_sequence"}
        found = db.execute(_FORMAT_QUERY).fetchone() if "store_info" in names else None
    except sqlite3.Error:
        return None  # damaged or locked: check_sqlite_store and the open report it
    finally:
        db.close()
    if found is not None and str(found[0]).startswith(_FORMAT_STEM) and found != (FORMAT,):
        return _other_format(str(found[0]))
    if found == (FORMAT,) or not names - set(TABLES):
        return None
    what = " (it looks like a `triage watch --state` store)" if {"meta", "series"} <= names else ""
    return (f"not a triage labels store: another SQLite database{what}, with tables {', '.join(sorted(names)[:8])}; "
            "give --labels a new file or a labels store written by `triage serve`")


def _other_format(value: str) -> str:
    """Why a labels store of another format version is refused, and what to do (nothing is changed in it)."""
    number = value.removeprefix(_FORMAT_STEM)
    if number.isdigit() and int(number) > int(FORMAT.removeprefix(_FORMAT_STEM)):
        return (f"written by a newer changepoint-triage (labels format {value!r}; this version reads {FORMAT!r}): "
                "upgrade changepoint-triage to use it; the store is left as it is")
    return f"not a triage labels store this version knows (format {value!r}, expected {FORMAT!r}); it is left as it is"


def _make_folder(path: Path) -> None:
    """The folder of a new labels store; a file in the way is named (mkdir's own error says 'File exists')."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            raise InputError(path, None, f"cannot create the labels store: {parent} is a file, not a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(path, None, f"cannot create the folder {path.parent}: {exc.strerror or exc}") from None


def _check_writable(path: Path) -> None:
    """Refuse a labels store, or its folder, that this user may not write (InputError, never "damaged").

    A store is opened in SQLite's WAL mode, which writes beside the file
    (``-wal``, ``-shm``) even to read it: a read-only store (an archived copy,
    another user's) failed with "disk I/O error", was called damaged, and the
    advice was to move it aside and start again.
    """
    if path.exists() and not os.access(path, os.W_OK):
        problem = "is read-only for this user"
    elif path.parent.is_dir() and not os.access(path.parent, os.W_OK | os.X_OK):
        problem = f"the folder {path.parent} is not writable for this user"
    else:
        return
    raise InputError(path, None, f"{problem}: SQLite writes beside a labels store (its -wal and -shm files), even to "
                     "read it; make it writable, or copy the store (with its -wal file) to a writable folder and give "
                     "the copy")


class LabelsStore:
    """The decisions of one labels file. Safe to share between threads.

    Each thread gets its own connection (sqlite3 connections are not shared
    across threads); every write is one ``BEGIN IMMEDIATE`` transaction.
    """

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = check_path(path, must_exist=not create)
        if create:
            _make_folder(self.path)
        _check_writable(self.path)
        self._local = threading.local()
        self._opened: tuple[int, int] | None = None
        if self.path.exists() and (why := _other_database(self.path)):
            raise InputError(self.path, None, why)
        check_sqlite_store(self.path, TABLES, recovery=RECOVERY, version_query=(_FORMAT_QUERY, FORMAT))  # damaged: refused
        try:
            con = self._con()
            con.executescript(SCHEMA)
            row = con.execute("SELECT value FROM store_info WHERE key = 'format'").fetchone()
            if row is None:
                con.execute("INSERT OR IGNORE INTO store_info VALUES ('format', ?)", (FORMAT,))
            elif row[0] != FORMAT:
                raise InputError(self.path, None, _other_format(str(row[0])))
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise InputError(self.path, None, f"not a triage labels store (SQLite says: {exc})") from None
        # From here on every access checks the path is still this file (see _con).
        self._opened = _identity(self.path)

    # ------------------------------------------------------------------ connections

    def _con(self) -> sqlite3.Connection:
        # SQLite keeps using the file it opened after the path is moved, deleted or
        # replaced: decisions would go where nobody reads them, or into another store.
        if self._opened is not None and _identity(self.path) != self._opened:
            raise StoreChanged(self.path)
        con = getattr(self._local, "con", None)
        if con is None:
            try:
                con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=True)
                # WAL: readers (page views) never block a decision being written.
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA busy_timeout=30000")
                con.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.DatabaseError as exc:
                raise InputError(self.path, None, f"cannot open the labels store: {exc}") from None
            self._local.con = con
        return con

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")
            # Into the main file at once (decisions come one click at a time): a store copied with
            # `cp` while `serve` ran had lost its latest decisions, which sat in the -wal file only.
            con.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        """Close this thread's connection: the last one closed, SQLite removes its ``-wal`` / ``-shm`` files."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    def __enter__(self) -> LabelsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        # A command ends with os._exit (triage.cli.app.finish): a store left open left its -wal
        # and -shm files beside it, which read as an unfinished write to whoever backs it up.
        self.close()

    # ------------------------------------------------------------------ writing

    def record(
        self,
        series_id: str,
        commit: str,
        decision: str,
        *,
        who: str,
        note: str = "",
        p_true: float | None = None,
        model_call: str | None = None,
        model: str | None = None,
        seen: int | None = None,
    ) -> Decision:
        """Store one decision (``true`` / ``false`` / ``unsure`` or its canonical label).

        ``seen``: the id of the alert's current decision on the page the
        sheriff decided from (0: none), or None to decide regardless. When the
        alert's current decision is another one by now, the same decision by
        the same sheriff is a repeated click (returns the stored row, no new
        one); anything else raises :class:`Conflict`, so a stale page never
        silently replaces a decision it did not show. Raises ``ValueError``
        for an unknown decision or an empty ``who``.
        """
        label = DECISIONS.get(decision, decision)
        if label not in DECISIONS.values():
            raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
        who = str(who).strip()
        if not who:
            raise ValueError("a decision needs the sheriff's name (who)")
        note = str(note or "").strip()[:MAX_NOTE]
        at = _now()
        p = None if p_true is None or not np.isfinite(p_true) else float(p_true)
        with self._write() as con:
            if seen is not None:
                now = self._current_row(con, series_id, commit)
                if (now.id if now else 0) != seen:
                    if now is not None and (now.label, now.note, now.who) == (label, note, who[:200]):
                        return now
                    raise Conflict(now)
            cur = con.execute(
                "INSERT INTO decisions (series_id, commit_id, label, note, who, decided_at, p_true, model_call, model) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (str(series_id), str(commit), label, note, who[:200], at, p, model_call, model),
            )
            rid = int(cur.lastrowid or 0)
        return Decision(rid, str(series_id), str(commit), label, note, who[:200], at, p, model_call, model)

    def undo(self, series_id: str, commit: str, *, who: str, decision_id: int | None = None) -> Decision | None:
        """Undo the current decision of an alert; returns it, or None when there was none.

        ``decision_id``: the decision the sheriff's page showed. Already undone
        (a repeated click): returned as it is, nothing more is undone. No
        longer the current one (decided again meanwhile): :class:`Conflict`.
        Not a decision of this alert: ``ValueError``.
        """
        with self._write() as con:
            now = self._current_row(con, series_id, commit)
            if decision_id is not None and (now is None or now.id != decision_id):
                shown = self._row(con, decision_id)
                if shown is None or (shown.series_id, shown.commit) != (str(series_id), str(commit)):
                    raise ValueError(f"decision {decision_id} is not a decision of this alert")
                if shown.undone_at is not None:
                    return shown
                raise Conflict(now)
            if now is None:
                return None
            con.execute("UPDATE decisions SET undone_at = ?, undone_by = ? WHERE id = ?", (_now(), str(who)[:200], now.id))
        return self.get(now.id)

    @staticmethod
    def _current_row(con: sqlite3.Connection, series_id: str, commit: str) -> Decision | None:
        row = con.execute(
            f"SELECT {_COLUMNS} FROM decisions WHERE series_id = ? AND commit_id = ? AND undone_at IS NULL "
            "ORDER BY id DESC LIMIT 1",
            (str(series_id), str(commit)),
        ).fetchone()
        return Decision(*row) if row else None

    @staticmethod
    def _row(con: sqlite3.Connection, rid: int) -> Decision | None:
        row = con.execute(f"SELECT {_COLUMNS} FROM decisions WHERE id = ?", (rid,)).fetchone()
        return Decision(*row) if row else None

    # ------------------------------------------------------------------ reading

    def _rows(self, where: str = "", args: tuple = ()) -> list[Decision]:
        cur = self._con().execute(
            f"SELECT {_COLUMNS} FROM decisions {where} ORDER BY id",
            args,
        )
        return [self._checked(Decision(*row)) for row in cur.fetchall()]

    def _checked(self, d: Decision) -> Decision:
        """``d`` when its values are ones :meth:`record` writes, else an InputError naming the row.

        The open checks the tables and columns only: a row edited outside the
        workspace (a label ``bogus``) was exported and trained on without a word.
        """
        problem = None
        if d.label not in WORDS:
            problem = f"label {d.label!r} is none of {', '.join(sorted(WORDS))}"
        elif not isinstance(d.series_id, str) or not isinstance(d.commit, str):
            problem = "series_id and commit_id must be text"
        elif d.p_true is not None and not (isinstance(d.p_true, (int, float)) and 0.0 <= float(d.p_true) <= 1.0):
            problem = f"p_true {d.p_true!r} is not a probability"
        if problem is not None:
            raise BadRow(self.path, d.id, f"{problem}: the row was not written by `triage serve`; correct or "
                             "delete it (decisions.id in the SQLite file), or restore a backup")
        return d

    def get(self, rid: int) -> Decision | None:
        rows = self._rows("WHERE id = ?", (rid,))
        return rows[0] if rows else None

    def history(self) -> list[Decision]:
        """Every decision ever recorded (undone ones included), oldest first."""
        return self._rows()

    def current(self, series_id: str | None = None) -> dict[tuple[str, str], Decision]:
        """The current decision of every decided alert: (series_id, commit) -> latest row not undone.

        ``series_id``: only that series' alerts (a series page read every
        decision of the store, 0.4 s at 50,000).
        """
        out: dict[tuple[str, str], Decision] = {}
        where, args = ("WHERE undone_at IS NULL", ()) if series_id is None else (
            "WHERE undone_at IS NULL AND series_id = ?", (series_id,))
        for d in self._rows(where, args):
            out[(d.series_id, d.commit)] = d  # ordered by id: the latest wins
        return out

    def __len__(self) -> int:
        return int(self._con().execute("SELECT COUNT(*) FROM decisions").fetchone()[0])


# ---------------------------------------------------------------------- export and overlay


def decisions_frame(store: LabelsStore) -> pd.DataFrame:
    """The current decisions as a table: series_id, commit, label, note, who, decided_at, p_true, model_call, model."""
    rows = list(store.current().values())
    cols = ["series_id", "commit", "label", "note", "who", "decided_at", "p_true", "model_call", "model"]
    return pd.DataFrame([[getattr(d, c) for c in cols] for d in rows], columns=cols)


def overlay(dataset: Dataset, store: LabelsStore) -> tuple[Dataset, int]:
    """A copy of ``dataset`` whose labels are the sheriffs' current decisions where there is one.

    Returns (dataset, number of labels set). A decision on a series or commit
    the dataset does not have is an :class:`InputError` naming the labels
    file and the decision's row id: the store belongs to other data.
    """
    by_series: dict[str, list[Decision]] = {}
    for d in store.current().values():
        by_series.setdefault(d.series_id, []).append(d)
    histories: list[History] = []
    n = 0
    for h in dataset:
        decided = by_series.pop(h.series_id, [])
        if not decided:
            histories.append(h)
            continue
        new_labels = h.labels.copy()
        for d in decided:
            try:
                i = h.index_of(d.commit)
            except KeyError:
                raise InputError(store.path, d.id, f"decision on commit {d.commit!r} of series {d.series_id!r}, "
                                 "which the data does not have") from None
            new_labels[i] = d.label
            n += 1
        # Every field kept but the labels: a History rebuilt field by field had lost
        # higher_is_better, so an exported series' changes read "change", not "regression".
        histories.append(replace(h, labels=new_labels, _index=None))
    if by_series:
        sid, ds = next(iter(by_series.items()))
        raise InputError(store.path, ds[0].id, f"decision on series {sid!r}, which the data does not have "
                         f"({sum(map(len, by_series.values()))} decisions on {len(by_series)} unknown series)")
    return Dataset(histories, source=dataset.source), n


def export_long(store: LabelsStore, dataset: Dataset | None = None) -> pd.DataFrame:
    """The decisions in the long layout.

    With ``dataset``: the whole dataset (``series_id, commit, timestamp,
    value, label``...) with the decisions overlaid, a file every loader and
    ``triage train --data`` read. Without: one row per decided alert
    (``series_id, commit, label, note, who, decided_at, ...``).
    """
    if dataset is None:
        return decisions_frame(store)
    merged, _ = overlay(dataset, store)
    return merged.to_frame()


# ---------------------------------------------------------------------- agreement


def agreement_by_week(store: LabelsStore) -> pd.DataFrame:
    """The model's precision and recall against the sheriffs, per ISO week of the decision.

    Counts the current true/false decisions that recorded the model's call
    (``unsure`` and decisions made without a model are left out). Columns:
    ``week`` (e.g. ``2026-W47``), ``model``, ``decisions``, ``tp``, ``fp``,
    ``fn``, ``tn``, ``precision`` (NaN when the model called nothing true),
    ``recall`` (NaN when the sheriffs confirmed nothing), ``agreement``.
    """
    cols = ["week", "model", "decisions", "tp", "fp", "fn", "tn", "precision", "recall", "agreement"]
    rows: dict[tuple[str, str], list[int]] = {}
    for d in store.current().values():
        if d.label not in L.TRIAGED or d.model_call not in L.TRIAGED:
            continue
        year, week, _ = datetime.fromisoformat(d.decided_at.replace("Z", "+00:00")).isocalendar()
        key = (f"{year}-W{week:02d}", d.model or "")
        c = rows.setdefault(key, [0, 0, 0, 0])
        said_true, called_true = d.label == L.TRUE_POSITIVE, d.model_call == L.TRUE_POSITIVE
        c[0 if said_true and called_true else 1 if called_true else 2 if said_true else 3] += 1
    out = []
    for (week_name, model), (tp, fp, fn, tn) in sorted(rows.items()):
        n = tp + fp + fn + tn
        out.append([week_name, model, n, tp, fp, fn, tn,
                    tp / (tp + fp) if tp + fp else float("nan"),
                    tp / (tp + fn) if tp + fn else float("nan"),
                    (tp + tn) / n])
    return pd.DataFrame(out, columns=cols)


def agreement_by_model(store: LabelsStore) -> pd.DataFrame:
    """:func:`agreement_by_week` summed over the weeks: one row per model that served decisions.

    Columns: ``model`` (as ``triage serve --model`` named it), ``decisions``,
    ``tp``, ``fp``, ``fn``, ``tn``, ``precision``, ``recall``, ``agreement``,
    ``first_week``, ``last_week``.
    """
    weekly = agreement_by_week(store)
    cols = ["model", "decisions", "tp", "fp", "fn", "tn", "precision", "recall", "agreement",
            "first_week", "last_week"]
    if weekly.empty:
        return pd.DataFrame(columns=cols)
    total = weekly.groupby("model", sort=True).agg(
        decisions=("decisions", "sum"), tp=("tp", "sum"), fp=("fp", "sum"), fn=("fn", "sum"),
        tn=("tn", "sum"), first_week=("week", "min"), last_week=("week", "max")).reset_index()
    called, confirmed = total.tp + total.fp, total.tp + total.fn
    total["precision"] = (total.tp / called).where(called > 0)
    total["recall"] = (total.tp / confirmed).where(confirmed > 0)
    total["agreement"] = (total.tp + total.tn) / total.decisions
    return total[cols]
