"""The online triage loop: Algorithm 1 of Bauer et al. (ICPE 2022), one commit at a time.

For each new commit ``p`` of a series:

1. **Pre** is the run of commits since the last change point *this loop*
   found (all earlier commits when it found none). As in
   :mod:`triage.features.windows`, Pre of ``p`` is ``[p- + 1, p - 1]`` with ``p-``
   the last change point: the change-point commit itself belongs to no later
   Pre, and the commit right after a change point has an empty Pre.
2. **After** is the new commit alone (window ``w = 0``: nothing after ``p`` is
   known yet).
3. The window-0 model (a :class:`~triage.training.classifier.TriageClassifier` saved
   with ``window=0``) gives P(true alert) from the characteristics of
   (Pre, After); ``P >= threshold`` is a positive decision.
4. A positive decision makes ``p`` the new last change point and empties Pre;
   a negative one appends ``p``'s value to Pre.

One rule is added to the paper's loop: no change point is declared while Pre
holds fewer than ``min_pre`` commits (default 5). Without it the loop has a
degenerate fixed point: a model trained on triaged candidates, which almost
never have an empty Pre, may call the first commit of a series a change point
on an empty Pre, which empties Pre again, and so on for every commit (observed:
a forest trained on the ``small`` preset's candidates called all 200 commits of
a step series change points). The probability is still reported for those
commits; only the decision is held back. ``min_pre=0`` gives the paper's loop
unchanged.

The API follows river's online-learning style: the per-series state is
explicit and serialisable (:class:`SeriesState`, ``to_dict`` / ``from_dict``),
``process_one`` handles one observation, ``process_many`` a batch whose
commits are grouped across series so that the predictor runs once per round
(the round's *k*-th commit of every series in the batch), which is what makes
replays fast. Commits of one series are always processed in delivery order,
so a batch gives the same decisions as the same commits one by one.

Pre's characteristics come from a
:class:`~triage.features.pre_state.PreWindowState` per series:
:class:`triage.features.incremental.PreState` by default (updated in O(1) /
O(log n) per commit; some characteristics on the last ``horizon`` = 64
commits of Pre, see that module), or
:class:`triage.features.recomputed.RecomputedPre`, which keeps Pre's values
and recomputes the catalogue characteristics from scratch (exact, O(len Pre)
per commit). The model is evaluated by
:class:`triage.training.compiled.CompiledPredictor` (numba, same numbers as
``predict_proba``).

The records the loop returns and raises (:class:`~triage.online.records.Decision`,
:class:`~triage.online.records.RejectedCommit`,
:class:`~triage.online.records.ModelMismatch`) live in
:mod:`triage.online.records`, the per-series state in
:mod:`triage.online.series_state`.

Persistence (crash-safe, exactly-once, idempotent re-delivery) is
:mod:`triage.online.state_store`; without a store the loop keeps its state in memory
and only recognises the re-delivery of a series' *latest* commit.

``top_features`` (plain-words reasons from :mod:`triage.explain`) costs a
decision-path walk of the whole forest: about 0.86 ms per row, against 25-70
µs for features, decision and state update together (BENCHMARKS.md, "Online
loop"). So by default it is computed for positive decisions only (the alerts a
person will look at); ``explain="all"`` explains every commit,
``explain="none"`` none.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from triage.core import timestamps
from triage.features import catalogue
from triage.features.incremental import PreState
from triage.online.records import AlreadyDecided, Decision, ModelMismatch, RejectedCommit
from triage.online.series_state import SeriesState

#: Every feature column the loop can compute, in the feature-matrix order
#: (``pre_*``, ``after_*``, ``norm_*``; see ARCHITECTURE.md).
ALL_COLUMNS: tuple[str, ...] = tuple(catalogue.feature_columns())

EXPLAIN_MODES: tuple[str, ...] = ("positive", "all", "none")


# ---------------------------------------------------------------------- input checks


def to_ns(timestamp: object) -> int | None:
    """A timestamp as int nanoseconds since the epoch (UTC), or None when missing.

    The rule (ISO-8601 or other date/time text, naive = UTC; ``datetime``,
    ``numpy.datetime64``; numbers and numeric text = seconds since the epoch)
    is :mod:`triage.core.timestamps`', the same as the loaders'. Raises
    ``ValueError`` for anything else.
    """
    return timestamps.to_ns(timestamp)


def _check(series_id: object, commit: object, value: object) -> tuple[str, str, float]:
    if not isinstance(series_id, str) or not series_id:
        raise RejectedCommit(str(series_id), str(commit), "series id must be a non-empty string")
    if isinstance(commit, bool) or not isinstance(commit, str | int) or commit == "":
        raise RejectedCommit(series_id, str(commit), "commit id must be a non-empty string")
    commit = str(commit)
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise RejectedCommit(series_id, commit, f"value {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v):
        raise RejectedCommit(series_id, commit, f"value {v!r} is not a finite number")
    return series_id, commit, v


# ---------------------------------------------------------------------- the loop


class OnlineTriage:
    """Algorithm 1 over many series, with explicit per-series state.

    Parameters
    ----------
    classifier : fitted TriageClassifier trained on window-0 features
        (``triage.training.model_files.load_model`` of a model saved with
        ``window=0``); see :meth:`from_model_dir`.
    model_id : identity of the model (the SHA-256 of its manifest), stored
        with persisted state so a store is never continued by another model.
    store : optional :class:`triage.online.state_store.StateStore`; with it, every
        decision and the state it leads to are committed together.
        Without one, a batch interrupted by an exception after its first
        round keeps the rounds already applied (their decisions are lost to
        the caller); a single commit is all-or-nothing either way.
    explain : ``"positive"`` (default), ``"all"`` or ``"none"``: which
        decisions get ``top_features``.
    compiled : use the numba predictor (True) or ``predict_proba`` (False).
    min_pre : commits Pre must hold before a change point can be declared
        (see the module docstring).
    pre_class : the Pre-state class (a
        :class:`~triage.features.pre_state.PreWindowState`), called as
        ``pre_class(names, series_id=...)`` (default:
        :class:`~triage.features.incremental.PreState`; the exact, slow twin is
        :class:`~triage.features.recomputed.RecomputedPre`).
    max_cached_series : with a store, keep at most this many series states in
        memory (least recently used are dropped; the store has them), so a
        watcher over hundreds of thousands of series stays small. None = all.
    """

    def __init__(
        self,
        classifier,
        *,
        model_id: str | None = None,
        store=None,
        explain: str = "positive",
        compiled: bool = True,
        min_pre: int = 5,
        pre_class=None,
        max_cached_series: int | None = None,
    ):
        if explain not in EXPLAIN_MODES:
            raise ValueError(f"explain must be one of {', '.join(EXPLAIN_MODES)}, got {explain!r}")
        self.classifier = classifier
        names = list(classifier.feature_names_ or [])
        if not names:
            raise ModelMismatch(
                None,
                "the model has no feature names; the online loop needs the feature-matrix columns",
            )
        unknown = [c for c in names if c not in ALL_COLUMNS]
        if unknown:
            raise ModelMismatch(
                None,
                f"the model uses feature column(s) the online loop does not compute: {', '.join(unknown[:5])}"
                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""),
            )
        self.feature_names = names
        self.threshold = float(classifier.threshold_)
        if compiled:
            from triage.training.compiled import CompiledPredictor

            self._predict = CompiledPredictor(classifier).positive_proba
        else:
            self._predict = lambda X: classifier.predict_proba(X)[:, 1]
        if isinstance(min_pre, bool) or not isinstance(min_pre, int) or min_pre < 0:
            raise ValueError(f"min_pre must be an integer >= 0, got {min_pre!r}")
        self.min_pre = min_pre
        self.model_id = model_id
        self.explain = explain
        self.pre_class = pre_class or PreState
        self.store = store
        self.max_cached_series = max_cached_series
        self.states: dict[str, SeriesState] = {}
        if store is not None:
            store.bind_model(model_id)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_model_dir(cls, path: str | Path, **kwargs) -> OnlineTriage:
        """Load a model directory (verified, see :mod:`triage.training.model_files`) and check it is window-0."""
        from triage.training.model_files import MANIFEST, load_model

        path = Path(path)
        clf = load_model(path)
        window = clf.manifest_.get("window")
        if window not in (0, "0"):
            raise ModelMismatch(
                path,
                f"the model was trained with window {window!r}; the online loop needs a window-0 model "
                "(After = the new commit alone): train one with --window 0",
            )
        model_id = hashlib.sha256((path / MANIFEST).read_bytes()).hexdigest()
        try:
            return cls(clf, model_id=model_id, **kwargs)
        except ModelMismatch as exc:
            raise ModelMismatch(path, exc.problem) from None

    # ------------------------------------------------------------------ state

    def new_state(self, series_id: str) -> SeriesState:
        return SeriesState(pre=self.pre_class(self.feature_names, series_id=series_id))

    def state(self, series_id: str) -> SeriesState | None:
        """The current state of a series (loaded from the store when needed), or None if unseen."""
        st = self.states.get(series_id)
        if st is not None and self.max_cached_series is not None:
            # Re-inserting keeps the dict in least-recently-used order.
            self.states[series_id] = self.states.pop(series_id)
        if st is None and self.store is not None:
            data = self.store.load_series(series_id)
            if data is not None:
                st = self._state_from_dict(data)
                self.states[series_id] = st
        return st

    def state_dict(self) -> dict[str, dict[str, object]]:
        """All in-memory series states, serialisable (``json.dumps``-able)."""
        return {s: self._state_to_dict(st) for s, st in self.states.items()}

    def load_state_dict(self, data: dict[str, dict[str, object]]) -> None:
        """Replace the in-memory states by ``data`` (from :meth:`state_dict`)."""
        self.states = {s: self._state_from_dict(d) for s, d in data.items()}

    # Every series of one loop computes the model's columns, so the Pre state's
    # list of column names (about 20 bytes per column, most of a serialised
    # state for the whole catalogue) is stored as a reference to the model.
    _MODEL_NAMES = "@model"

    def _state_to_dict(self, st: SeriesState) -> dict[str, object]:
        data = st.to_dict()
        pre = data["pre"]
        if isinstance(pre, dict) and pre.get("names") == self.feature_names:
            data["pre"] = {**pre, "names": self._MODEL_NAMES}
        return data

    def _state_from_dict(self, data: dict[str, object]) -> SeriesState:
        pre = data["pre"]
        if isinstance(pre, dict) and pre.get("names") == self._MODEL_NAMES:
            data = {**data, "pre": {**pre, "names": list(self.feature_names)}}
        return SeriesState.from_dict(data)

    # ------------------------------------------------------------------ processing

    def process_one(
        self, series_id: str, commit: str, value: float, timestamp: object = None
    ) -> Decision:
        """Decide one new commit of a series; returns its :class:`Decision`.

        Raises :class:`RejectedCommit` (nothing changed) for a non-finite
        value, an unreadable timestamp, or one older than the series' latest.
        """
        return self.process_many([(series_id, commit, value, timestamp)])[0]

    def process_many(
        self, records: Iterable[Sequence[object] | dict[str, object]]
    ) -> list[Decision]:
        """Decide a batch of commits, possibly of many series; decisions in input order.

        ``records`` are ``(series_id, commit, value[, timestamp])`` tuples or
        dicts with those keys. The whole batch is checked first: one bad record
        raises :class:`RejectedCommit` and nothing is decided. Commits of one
        series are decided in input order; across series, the predictor runs
        once per round (see the module docstring). With a store, the batch's
        decisions and states are committed in one transaction.
        """
        return self._process([self._normalise(r) for r in records])

    def _process(self, items: list[tuple[str, str, float, int | None]]) -> list[Decision]:
        """:meth:`process_many` on checked ``(series_id, commit, value, timestamp ns)`` items.

        With a store, re-delivered commits are rare (a restart), so the batch
        is first decided optimistically: only commits that look re-delivered
        (a series' latest commit, or a timestamp older than its latest) are
        looked up, and the decisions table's uniqueness catches the rest at
        commit time, which rolls the batch back and redoes it with every
        commit looked up. That saves a query per commit in the common case.
        """
        if self.store is None:
            return self._decide(items, None)
        try:
            return self._decide(items, None)
        except AlreadyDecided:
            known = [(sid, c) for sid, c, _, _ in items if self.state(sid) is not None]
            return self._decide(items, self.store.get_decisions(known))

    def _decide(self, items, stored: dict | None) -> list[Decision]:
        """Decide ``items``; ``stored`` = the batch's stored decisions when looked up (store only)."""
        decisions: list[Decision | None] = [None] * len(items)
        rounds: list[list[int]] = []
        depth: dict[str, int] = {}
        seen_in_batch: dict[tuple[str, str], int] = {}
        pending_ts: dict[str, int | None] = {}
        duplicates: list[tuple[int, int]] = []
        for i, (sid, commit, _value, ts) in enumerate(items):
            key = (sid, commit)
            if key in seen_in_batch:
                duplicates.append((i, seen_in_batch[key]))
                continue
            st = self.state(sid)
            last_ts = (
                pending_ts[sid] if sid in pending_ts else (st.last_ts if st is not None else None)
            )
            if self.store is None:
                old = self._latest(sid, commit, st)
            elif stored is not None:
                old = stored.get(key)
            elif st is not None and (
                st.last_commit == commit
                or (ts is not None and last_ts is not None and ts < last_ts)
            ):
                old = self.store.get_decision(sid, commit)
            else:
                old = None
            if old is not None:
                old.replayed = True
                decisions[i] = old
                continue
            if ts is not None and last_ts is not None and ts < last_ts:
                raise RejectedCommit(
                    sid,
                    commit,
                    f"out of order: timestamp {_iso(ts)} is older than the series' latest ({_iso(last_ts)})",
                )
            if ts is not None:
                pending_ts[sid] = ts
            seen_in_batch[key] = i
            k = depth.get(sid, 0)
            depth[sid] = k + 1
            if k == len(rounds):
                rounds.append([])
            rounds[k].append(i)

        touched: dict[str, SeriesState] = {}
        try:
            for members in rounds:
                self._round(items, members, decisions, touched)
            new = [decisions[i] for r in rounds for i in r]
            if self.store is not None and new:
                self.store.commit(new, {s: self._state_to_dict(st) for s, st in touched.items()})
        except BaseException:
            if self.store is not None:
                # Memory must not run ahead of what was committed: forget the
                # touched series, the store reloads them as they were.
                for sid in touched:
                    self.states.pop(sid, None)
            raise
        if self.store is not None and self.max_cached_series is not None:
            self._evict()
        for i, j in duplicates:
            d = decisions[j]
            assert d is not None  # decided above: j is the commit's first occurrence
            decisions[i] = Decision(
                d.series, d.commit, d.index, d.probability, d.decision, list(d.top_features), True
            )
        return decisions  # type: ignore[return-value]

    def _evict(self) -> None:
        """Drop least recently used states beyond ``max_cached_series`` (they are in the store)."""
        if self.max_cached_series is None:
            return
        excess = len(self.states) - self.max_cached_series
        if excess > 0:
            for sid in list(itertools.islice(self.states, excess)):
                del self.states[sid]

    def _normalise(self, record) -> tuple[str, str, float, int | None]:
        if isinstance(record, dict):
            sid, commit, value, ts = (
                record.get("series_id"),
                record.get("commit"),
                record.get("value"),
                record.get("timestamp"),
            )
        else:
            if len(record) not in (3, 4):
                raise ValueError(
                    f"a record is (series_id, commit, value[, timestamp]), got {record!r}"
                )
            sid, commit, value = record[0], record[1], record[2]
            ts = record[3] if len(record) == 4 else None
        sid, commit, v = _check(sid, commit, value)
        try:
            ns = to_ns(ts)
        except ValueError as exc:
            raise RejectedCommit(sid, commit, str(exc)) from None
        return sid, commit, v, ns

    @staticmethod
    def _latest(sid: str, commit: str, st: SeriesState | None) -> Decision | None:
        """Without a store only the latest commit of a series is remembered."""
        if st is not None and st.last_commit == commit:
            return Decision(sid, commit, st.n - 1, st.last_probability, st.last_decision, [], True)
        return None

    def _round(self, items, members: list[int], decisions, touched) -> None:
        """Features of every member (one commit per series), one predictor call, then the updates.

        Nothing is mutated until the predictor has answered, so an exception
        in the features or the model leaves every state of the round as it was.
        """
        X = np.empty((len(members), len(self.feature_names)))
        states = []
        for row, i in enumerate(members):
            sid, _, value, _ = items[i]
            st = self.states.get(sid)
            if st is None:
                st = self.new_state(sid)
                self.states[sid] = st
            states.append(st)
            X[row] = st.pre.features_array(value)
        proba = self._predict(X)
        pre_len = np.array([st.n - st.last_cp - 1 for st in states])
        positive = (proba >= self.threshold) & (pre_len >= self.min_pre)
        explained = self._explain(X, positive)
        for row, i in enumerate(members):
            sid, commit, value, ts = items[i]
            st = states[row]
            touched[sid] = st
            p = float(proba[row])
            hit = bool(positive[row])
            decisions[i] = Decision(sid, commit, st.n, p, hit, explained.get(row, []))
            if hit:
                st.pre.reset()
                st.last_cp = st.n
                st.n_change_points += 1
            else:
                st.pre.learn_one(value)
            st.n += 1
            st.last_commit = commit
            if ts is not None:
                st.last_ts = ts
            st.last_probability = p
            st.last_decision = hit

    def _explain(self, X: np.ndarray, positive: np.ndarray) -> dict[int, list[str]]:
        if self.explain == "none":
            return {}
        rows = np.arange(len(X)) if self.explain == "all" else np.flatnonzero(positive)
        if rows.size == 0:
            return {}
        try:
            from triage.explain import explain
        except ImportError:
            return {}
        import pandas as pd

        frame = pd.DataFrame(X[rows], columns=self.feature_names)
        reasons = explain(self.classifier, frame, top=3)
        return {int(r): list(t) for r, t in zip(rows, reasons, strict=True)}

    # ------------------------------------------------------------------ replay

    def replay(
        self,
        dataset,
        batch_series: int = 4096,
        commits_per_batch: int = 16,
        keep_states: bool = True,
    ) -> list[Decision]:
        """Run whole histories through the loop (the paper's Section 4 experiment).

        ``dataset`` is a :class:`~triage.core.history.Dataset`; series are replayed
        side by side, ``batch_series`` of them at a time, round by round (the
        i-th commit of each), so the predictor sees one row per series per
        call. Each :meth:`process_many` batch holds ``commits_per_batch``
        rounds: with a store that is one transaction, and each series' state
        is serialised once per batch instead of once per commit.
        ``keep_states=False`` drops a group's states from memory once its
        series are replayed (a store keeps them), so memory is bounded by
        ``batch_series`` however many series the dataset holds. Returns the
        positive decisions (the change points found), in series order then
        commit order.
        """
        if commits_per_batch < 1:
            raise ValueError(f"commits_per_batch must be >= 1, got {commits_per_batch!r}")
        found: list[Decision] = []
        histories = list(dataset)
        for start in range(0, len(histories), batch_series):
            group = histories[start : start + batch_series]
            # A History holds finite values and ordered commits already; only
            # the conversions process_many would do per record are done here,
            # once per series.
            columns = []
            for h in group:
                if not np.all(np.isfinite(h.values)):
                    bad = int(np.flatnonzero(~np.isfinite(h.values))[0])
                    raise RejectedCommit(
                        h.series_id, str(h.commits[bad]), "value is not a finite number"
                    )
                ts: list[int | None] = [None] * len(h)
                if h.timestamps is not None:
                    ns = np.asarray(h.timestamps).astype("datetime64[ns]")
                    ok = ~np.isnat(ns)
                    ts = [
                        int(t) if k else None
                        for t, k in zip(ns.astype(np.int64).tolist(), ok.tolist(), strict=True)
                    ]
                columns.append((h.series_id, [str(c) for c in h.commits], h.values.tolist(), ts))
            longest = max(len(h) for h in group)
            for first in range(0, longest, commits_per_batch):
                batch = [
                    (sid, commits[i], values[i], ts[i])
                    for i in range(first, first + commits_per_batch)
                    for sid, commits, values, ts in columns
                    if i < len(commits)
                ]
                found.extend(d for d in self._process(batch) if d.decision and not d.replayed)
            if not keep_states:
                for sid, *_ in columns:
                    self.states.pop(sid, None)
        order = {h.series_id: k for k, h in enumerate(histories)}
        found.sort(key=lambda d: (order[d.series], d.index))
        return found


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")
