"""Crash-safe per-series state of the online loop in one embedded SQLite file.

The online loop (:mod:`triage.online.loop`) must survive a crash or ``kill -9``
without losing a commit or counting one twice, and a producer that re-sends
commits after a restart must get the same answers. So:

* every batch of decisions and the series states they lead to are written in
  **one transaction** (a decision never exists without its state update, nor
  the reverse);
* a commit already decided is looked up first and its **stored decision is
  returned**, nothing changes (idempotent re-delivery);
* the store records the **model identity** (SHA-256 of the model's
  ``manifest.json``); opening it with another model is an error unless the
  caller resets the state (``triage watch --reset-state``), because Pre
  states built under one model's decisions are meaningless under another's;
* the file is opened in **WAL** mode with ``locking_mode=EXCLUSIVE``: one
  process at a time (a second one gets a clear error instead of silently
  diverging caches, after waiting up to :data:`OPEN_WAIT` for a lock held
  only for a moment), and no shared-memory index beside the file.

Durability: ``synchronous=NORMAL`` (default) survives the death of the
process at any point, the case ``kill -9`` tests; after a power loss the last
transactions may be missing but the file is consistent and the producer's
re-delivery redoes them. ``durable=True`` (``synchronous=FULL``) also survives
power loss, at the cost of an fsync per transaction.

Tables::

    meta(key PRIMARY KEY, value)                 format, model_id, model_name, loop_settings (JSON)
    series(series_id PRIMARY KEY, state)         SeriesState.to_dict() as JSON
    decisions(rowid, series_id, commit_id, decided_commit, idx, probability,
              decision, top_features, withdrawal, value, levels)
        one row per *arrival* (commit_id = the commit that arrived),
        UNIQUE (series_id, commit_id); rowid = arrival order. With a
        confirmation delay K the arrival decides the commit K before it
        (decided_commit, idx); decision is NULL while nothing is decided yet
        (the first K commits after a series starts); withdrawal is the JSON of
        an alarm this arrival's re-check took back, else NULL; value is the
        arriving commit's value (NULL in rows written before it was kept), so
        a re-delivery with another value can be told; levels is an alarm's
        ``[before, after, noise]`` (JSON; NULL for other decisions and in rows
        written before it was kept).

Format 1 (before the confirmation delay: one row per decided commit) is not
read; ``--reset-state`` starts such a file over. Format 3 is format 2 whose
rows may hold what a format-2 reader cannot: a decision without a
probability (a commit the stream rule held back; changepoint-triage up to
2026-11-30 stopped on it with an internal error when such a commit was sent
again after a downgrade) and an alarm's ``levels``. A format-2 file is
upgraded in place (its version, and the columns it lacks), so
an older changepoint-triage then refuses it by name ("written by a newer
version") instead of failing on a row; it is marked 3 in the transaction
that writes its first new rows, so a run refused after opening (another
model) or given no input leaves it as it was.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

from triage.core.errors import InputError
from triage.online.records import AlreadyDecided, Decision, decision_from_dict
from triage.online.store_checks import check_state_file

FORMAT = "changepoint-triage-online-state"
FORMAT_VERSION = 3
#: The format whose tables format 3 keeps: marked 3 in the transaction of its first new rows.
UPGRADED_FORMAT = 2
#: Seconds a store being opened waits for another process's lock before "in use by another process".
OPEN_WAIT = 1.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS series (series_id TEXT PRIMARY KEY, state TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS decisions (
        series_id TEXT NOT NULL,
        commit_id TEXT NOT NULL,
        decided_commit TEXT,
        idx INTEGER,
        probability REAL,
        decision INTEGER,
        top_features TEXT,
        withdrawal TEXT,
        value REAL,
        levels TEXT,
        UNIQUE (series_id, commit_id)
    )""",
)
#: The columns an arrival's row is written to (``value`` and ``levels`` were added to
#: format 2 later: a file without them gets them on opening, its older rows hold NULL;
#: an older changepoint-triage names its columns when it writes, so it still writes to
#: such a file).
_ARRIVAL_COLUMNS = (
    "series_id, commit_id, decided_commit, idx, probability, decision, top_features, withdrawal, value, levels"
)
#: Columns added to format 2 after it was first written, with their types.
_ADDED_COLUMNS = (("value", "REAL"), ("levels", "TEXT"))


_DECISION_COLUMNS = "d.decided_commit, d.idx, d.probability, d.decision, d.top_features, d.withdrawal, d.levels"


def _row(series_id: str, commit: str, d: Decision | None, value: float | None) -> tuple:
    if d is None:
        return (series_id, commit, None, None, None, None, None, None, value, None)
    w = d.withdrawal
    return (
        series_id,
        commit,
        d.commit,
        d.index,
        d.probability,
        int(d.decision),
        json.dumps(d.top_features),
        None
        if w is None
        else json.dumps({"commit": w.commit, "index": w.index, "decided_at": w.decided_at, "score": w.score}),
        value,
        None if d.levels is None else json.dumps(list(d.levels)),
    )


def _decision(series_id: str, arrival: str, cols: tuple) -> Decision | None:
    decided, idx, prob, decision, top, withdrawal, levels = cols
    try:  # an alarm's levels say how far the values moved; a damaged cell loses them, not the decision
        levels = json.loads(levels) if levels is not None else None
        if not (isinstance(levels, list) and len(levels) == 3 and all(_is_float(v) for v in levels)):
            levels = None
    except ValueError:
        levels = None
    if decision is None:
        return None
    return decision_from_dict(
        series_id,
        {
            "commit": decided,
            "index": idx,
            "probability": prob,
            "decision": bool(decision),
            "top_features": json.loads(top),
            "decided_at": None if decided == arrival else arrival,
            "withdrawal": None if withdrawal is None else json.loads(withdrawal),
            "levels": levels,
        },
    )


def _is_float(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _file_size_limit() -> str:
    """``; files are limited to N bytes (ulimit -f)`` when this process has such a limit, else ``""``.

    SQLite reports a write refused by the limit (EFBIG) as a bare "disk I/O
    error", which sent the operator looking for a broken disk.
    """
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return ""
    return f"; this process may write files of at most {limit:,} bytes (ulimit -f)"


def _named(name: str | None, model_id: str) -> str:
    """A model as a refusal names it: ``online-w4 (70bfe6037211)``, or the identity alone when no name was kept."""
    return model_id[:12] if name is None else f"{name} ({model_id[:12]})"


class StateStoreError(InputError):
    """A state file that cannot be used: another model's, another format, in use, unreadable."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(path, None, problem)


class StateStore:
    """One SQLite file holding the loop's series states and every decision.

    Parameters
    ----------
    path : file to open or create (``":memory:"`` for a throwaway store)
    durable : fsync every transaction (``synchronous=FULL``), see the module docstring
    """

    def __init__(self, path: str | Path, *, durable: bool = False):
        self.path = str(path)
        self.old_format = False
        self._upgrade = False  # a format-2 file: marked 3 in the transaction of the first rows written
        if self.path != ":memory:" and not Path(self.path).parent.is_dir():
            raise StateStoreError(self.path, f"no such folder {Path(self.path).parent} (create it first)")
        if self.path != ":memory:" and Path(self.path).is_symlink() and not Path(self.path).exists():
            # A dangling link: SQLite creates the file it leads to, and failed with "unable to open database file".
            real = Path(os.path.realpath(self.path))
            if not real.parent.is_dir():
                raise StateStoreError(self.path, f"is a link to {real}, whose folder {real.parent} does not exist "
                                      "(create it first, or fix the link)")
        check_state_file(self.path)  # a damaged store is refused, never silently restarted
        # A new file that cannot be set up (a full disk, a file-size limit) is removed again: left
        # empty, the next start called it damaged ("is empty (0 bytes): truncated") and advised --reset-state.
        created = self.path != ":memory:" and not os.path.exists(self.path)
        try:
            # A short wait for the lock: two watchers started together on a new file both
            # failed with timeout 0 (each held a read lock the other's first write waited on).
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=OPEN_WAIT)
            # Exclusive locking before the first WAL access keeps the WAL index
            # in process memory (no -shm file, no shared-memory locking).
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if self.path != ":memory:" and str(mode).lower() != "wal":
                raise StateStoreError(
                    self.path, f"cannot switch the state file to WAL mode (got {mode!r})"
                )
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            # Taking the write lock now makes a second process fail here, clearly,
            # rather than at its first commit with a diverged in-memory state.
            self._db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                self._db.execute(statement)
            fmt = self._meta("format")
            if fmt is None:
                self._db.execute(
                    "INSERT INTO meta VALUES ('format', ?), ('format_version', ?)",
                    (FORMAT, str(FORMAT_VERSION)),
                )
            elif fmt != FORMAT:
                raise StateStoreError(self.path, "not an online-triage state file")
            else:
                version = str(self._meta("format_version") or "")
                if not version.isdigit():
                    # int('x') escaped as "invalid literal for int()", naming no file.
                    raise StateStoreError(self.path, f"state file of an unknown format version {version!r} "
                                                     f"(this changepoint-triage writes {FORMAT_VERSION}); it is left "
                                                     "as it is")
                if int(version) > FORMAT_VERSION:
                    raise StateStoreError(
                        self.path, f"state file written by a newer version of changepoint-triage (format "
                        f"{version}, this one reads up to {FORMAT_VERSION}): upgrade changepoint-triage to "
                        "go on with it; --reset-state would lose its stored decisions"
                    )
                if int(version) == UPGRADED_FORMAT:
                    # Marked 3 with the first rows written (commit): a run refused after opening
                    # (another model) or given no input had made the file unreadable to the release
                    # that wrote it, for nothing.
                    self._upgrade = True
                elif int(version) < FORMAT_VERSION:
                    self.old_format = True
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(decisions)")}
            for name, kind in _ADDED_COLUMNS if not self.old_format else ():
                if name not in columns:
                    # A file from before this column was kept: its older rows hold NULL.
                    self._db.execute(f"ALTER TABLE decisions ADD COLUMN {name} {kind}")
            self._db.execute("COMMIT")
            self._db.execute("PRAGMA busy_timeout=0")  # the lock is ours from here on: no write ever waits
        except sqlite3.OperationalError as exc:
            self._close_quietly()
            if "locked" in str(exc) or "busy" in str(exc):
                raise StateStoreError(
                    self.path, "the state file is in use by another process"
                ) from None
            self._remove_if_new(created)
            raise StateStoreError(self.path, f"cannot open the state file: {exc}{_file_size_limit()}") from None
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            self._remove_if_new(created)
            raise StateStoreError(self.path, f"not a state file (SQLite says: {exc})") from None
        except BaseException:
            self._close_quietly()
            self._remove_if_new(created)
            raise

    def _remove_if_new(self, created: bool) -> None:
        """Remove the empty file (and journal) this open created before it failed; never a file that was there."""
        if not created:
            return
        real = os.path.realpath(self.path)  # through a link: the file it leads to (the link stays)
        for name in (real, f"{real}-wal", f"{real}-journal"):
            try:
                if os.path.isfile(name) and os.path.getsize(name) == 0:
                    os.unlink(name)
            except OSError:  # nothing more to do: the error being raised says what failed
                pass

    def _close_quietly(self) -> None:
        try:
            self._db.close()
        except Exception:  # closing after a failed open: nothing left to protect
            pass

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------------ model identity

    @property
    def model_id(self) -> str | None:
        return self._meta("model_id")

    def bind_model(self, model_id: str | None, *, reset: bool = False, name: str | None = None) -> None:
        """Record ``model_id`` on a fresh store; refuse another model's store unless ``reset``.

        Raises :class:`StateStoreError` when the store holds state of a
        different model (``reset=False``) or ``model_id`` is None. ``name``
        (a bundled model's name or the model's folder) is recorded with it, so
        that the refusal can say which model the state was built with: the
        identities alone (hashes of the manifests) told an operator nothing.
        """
        if model_id is None:
            raise StateStoreError(
                self.path,
                "a persisted loop needs the model's identity: load it with OnlineTriage.from_model_dir",
            )
        if self.old_format and not reset:
            raise StateStoreError(
                self.path,
                "the state file is in format 1 (before the confirmation delay); start over with --reset-state",
            )
        stored = self.model_id
        if stored is not None and stored != model_id and not reset:
            was = self._meta("model_name")
            if was is not None and was == name and "/" not in was and "\\" not in was:
                # A bundled model's name: the upgrade of changepoint-triage brought another model.
                raise StateStoreError(
                    self.path,
                    f"the state was built with the bundled model {was} ({stored[:12]}) of another "
                    f"changepoint-triage release; this one's is {model_id[:12]}: go on with the earlier model "
                    "(a copy of its folder as --model) or start over with --reset-state",
                )
            if was is not None and was == name:
                # One folder named twice, told apart by hashes alone, read as a typo: the folder's model changed.
                raise StateStoreError(
                    self.path,
                    f"the state was built with the model then in {was} ({stored[:12]}); that folder now holds "
                    f"another ({model_id[:12]}: trained again or replaced): go on with the model the state was "
                    "built with (its registered version, models:/NAME/VERSION, or a copy of it), or start over "
                    "with --reset-state",
                )
            raise StateStoreError(
                self.path,
                f"the state was built with model {_named(was, stored)}, this run's is {_named(name, model_id)}: "
                "use the same model, or start over with --reset-state",
            )
        if reset:
            self.reset()
        if self.model_id != model_id:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('model_id', ?)", (model_id,))
        if name is not None and self._meta("model_name") != name:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('model_name', ?)", (name,))

    def bind_settings(self, settings: dict[str, object]) -> None:
        """Record the loop's settings on a fresh store; refuse a store built with others.

        A state holds what its settings made of it: with confirmation delay 4
        the last four commits of a series wait for their decision, which a
        loop with delay 0 never makes (nor one for the commits that follow);
        Pre's length and the alarm in progress follow ``min_pre``, the
        threshold and the re-check. So, like another model's, another
        setting's store is refused; ``--reset-state`` starts over. A store
        written before settings were recorded takes the first ones given.
        """
        wanted = json.dumps(settings, sort_keys=True)
        stored = self._meta("loop_settings")
        if stored is not None and stored != wanted:
            was, now = json.loads(stored), json.loads(wanted)
            differ = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
            shown = ", ".join(f"{k}={was.get(k)}" for k in differ)
            asked = ", ".join(f"{k}={now.get(k)}" for k in differ)
            raise StateStoreError(
                self.path,
                f"the state was built with {shown}, this run asks for {asked}: use the same settings, "
                "or start over with --reset-state",
            )
        if stored is None:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('loop_settings', ?)", (wanted,))

    def reset(self) -> None:
        """Forget every series state, decision, the model identity and the loop's settings (one transaction)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if self.old_format:
                self._db.execute("DROP TABLE decisions")
                self._db.execute(_SCHEMA[2])
                self._db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION),)
                )
            else:
                self._db.execute("DELETE FROM decisions")
            self._db.execute("DELETE FROM series")
            self._db.execute("DELETE FROM meta WHERE key IN ('model_id', 'model_name', 'loop_settings')")
            self._db.execute("COMMIT")
            self.old_format = False
        except sqlite3.OperationalError as exc:
            self._rollback()
            raise self._write_failed(exc) from exc
        except BaseException:
            self._rollback()
            raise

    # ------------------------------------------------------------------ reading

    def load_series(self, series_id: str) -> dict | None:
        """The stored ``SeriesState.to_dict()`` of a series, or None."""
        row = self._db.execute(
            "SELECT state FROM series WHERE series_id = ?", (series_id,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def get_decision(self, series_id: str, commit: str) -> Decision | None:
        """The stored :class:`~triage.online.records.Decision` the arrival of a commit made, or None.

        None also for an arrival that decided nothing (see :meth:`get_decisions`
        to tell the two apart).
        """
        return self.get_decisions([(series_id, commit)]).get((series_id, commit))

    def get_decisions(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], Decision | None]:
        """Stored arrivals of many ``(series_id, commit)`` pairs: ``{pair: Decision or None}`` for those found.

        A pair is a key of the answer when that commit had arrived; its value
        is the decision its arrival made, None when it made none.
        """
        return {key: decision for key, (decision, _) in self.get_arrivals(keys).items()}

    def get_arrivals(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[Decision | None, float | None]]:
        """Stored arrivals of many ``(series_id, commit)`` pairs: ``{pair: (Decision or None, value or None)}``.

        As :meth:`get_decisions`, with the value the commit arrived with (None
        for rows written before values were kept). The pairs go into a
        temporary table joined on the unique index: one statement for the
        batch instead of one query per commit.
        """
        keys = list(keys)
        if not keys:
            return {}
        db = self._db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS probe (series_id TEXT, commit_id TEXT)")
        db.execute("DELETE FROM probe")
        db.executemany("INSERT INTO probe VALUES (?, ?)", keys)
        rows = db.execute(
            f"SELECT d.series_id, d.commit_id, d.value, {_DECISION_COLUMNS} "
            "FROM probe p JOIN decisions d ON d.series_id = p.series_id AND d.commit_id = p.commit_id"
        ).fetchall()
        return {(r[0], r[1]): (_decision(r[0], r[1], r[3:]), r[2]) for r in rows}

    def decisions(self, series_id: str | None = None) -> list[Decision]:
        """Every stored decision (of one series), in the order they were made (arrivals that decided nothing left out)."""
        query = f"SELECT d.series_id, d.commit_id, {_DECISION_COLUMNS} FROM decisions d WHERE d.decision IS NOT NULL"
        args: tuple = ()
        if series_id is not None:
            query += " AND d.series_id = ?"
            args = (series_id,)
        rows = self._db.execute(query + " ORDER BY d.rowid", args).fetchall()
        out = [_decision(r[0], r[1], r[2:]) for r in rows]
        return [d for d in out if d is not None]

    def n_decisions(self) -> int:
        """Decisions stored (arrivals that decided a commit)."""
        return int(self._db.execute("SELECT count(*) FROM decisions WHERE decision IS NOT NULL").fetchone()[0])

    def n_arrivals(self) -> int:
        """Commits received and stored, decided or still pending."""
        return int(self._db.execute("SELECT count(*) FROM decisions").fetchone()[0])

    def series_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT series_id FROM series ORDER BY series_id")]

    # ------------------------------------------------------------------ writing

    def commit(
        self,
        arrivals: Iterable[tuple[str, str, Decision | None] | tuple[str, str, Decision | None, float]],
        states: Mapping[str, dict],
    ) -> None:
        """Write arrivals, their decisions and the resulting series states in one transaction.

        ``arrivals`` are ``(series_id, commit, Decision or None[, value])`` of new
        commits (None: the arrival decided nothing; value: the commit's, kept to
        tell a re-delivery with another value); ``states`` maps series id
        to ``SeriesState.to_dict()``. A commit already stored rolls the whole
        transaction back and raises
        :class:`~triage.online.records.AlreadyDecided` (the loop then looks its
        batch up and retries).
        """
        rows = [_row(a[0], a[1], a[2], a[3] if len(a) > 3 else None) for a in arrivals]
        state_rows = [(sid, json.dumps(st, separators=(",", ":"))) for sid, st in states.items()]
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(f"INSERT INTO decisions ({_ARRIVAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.executemany("INSERT OR REPLACE INTO series VALUES (?, ?)", state_rows)
            if self._upgrade and rows:
                db.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION),))
            db.execute("COMMIT")
            if rows:
                self._upgrade = False
        except sqlite3.IntegrityError:
            self._rollback()
            raise AlreadyDecided() from None
        except sqlite3.OperationalError as exc:  # "database or disk is full", an I/O error: nothing was stored
            self._rollback()
            raise self._write_failed(exc) from exc
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        """Roll the open transaction back; SQLite has already done so after some errors (a full disk).

        Without this check ``ROLLBACK`` would fail with "cannot rollback - no
        transaction is active" and hide the real cause (issue 14).
        """
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _write_failed(self, exc: sqlite3.Error) -> StateStoreError:
        """The error for a transaction SQLite could not write: its cause, and that nothing of it was kept."""
        limit = _file_size_limit()
        return StateStoreError(
            self.path,
            f"cannot write the state file ({exc}{limit}); nothing of this batch was stored (the store is as it was "
            f"after the last stored commit): free space{', raise the limit' if limit else ''} or fix the file "
            "system, then run watch again and re-send from there",
        )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
