"""The online triage loop: Algorithm 1 of Bauer et al. (ICPE 2022), one commit at a time, with a stream rule.

For each commit ``p`` of a series:

1. **Pre** is the run of commits since the last change point *this loop*
   found (all earlier commits when it found none). As in
   :mod:`triage.features.windows`, Pre of ``p`` is ``[p- + 1, p - 1]`` with ``p-``
   the last change point: the change-point commit itself belongs to no later
   Pre, and the commit right after a change point has an empty Pre.
2. **After** is ``p`` and the K commits after it, K the *confirmation delay*:
   ``p`` is decided when commit ``p + K`` arrives, and the decision names
   ``p`` (``Decision.decided_at`` names ``p + K``). K = 0 (After = the new
   commit alone) is the paper's loop; a model trained with ``--window K``
   carries its K in its manifest and the loop takes it from there unless
   told otherwise. The K received, undecided commits of a series are part
   of its state (``SeriesState.pending``), so they survive a restart.
3. The window-K model (a :class:`~triage.training.classifier.TriageClassifier`
   saved with ``window=K``) gives P(true alert) from the characteristics of
   (Pre, After), the level-shift measures ``pair_*`` included when the model
   uses them; ``P >= threshold`` is an alarm.
4. An alarm makes ``p`` the new last change point and empties Pre; a
   negative decision appends ``p``'s value to Pre.

The stream rule around it (a stream holds about one change in several
hundred commits, so a threshold chosen on training rows fires far too often):

* **threshold**: the model's (``triage train`` chooses it on validation
  rows), or the one given (``threshold=``; the real-data benchmark
  ``benchmarks/bench_real_online.py`` chooses it for the bundled model on its
  validation part);
* **min_pre**: no alarm while Pre holds fewer than ``min_pre`` commits
  (default 5). Without it the loop has a degenerate fixed point: a model
  trained on triaged candidates, which almost never have an empty Pre, may
  call the first commit of a series a change point on an empty Pre, which
  empties Pre again, and so on for every commit (observed: a forest trained
  on the ``small`` preset's candidates called all 200 commits of a step
  series change points). Such a commit is not asked of the model: its
  decision is false with no probability (None; ``watch`` prints null) and
  the rule as its reason. ``min_pre=0`` gives the paper's loop unchanged;
* **refractory period and re-check**: an alarm at ``p`` is re-checked when
  commit ``p + K + R`` arrives (``recheck_after`` = R); until then no other
  alarm is raised in the series (one change, one alarm). The re-check
  compares the median of the K + R + 1 commits from ``p`` on with Pre's
  median, in units of Pre's robust scale (1.4826 MAD of its last 21
  values); below ``withdraw_below`` the later commits contradict a change
  (a spike, a burst of noise) and the alarm is **withdrawn**: a
  :class:`~triage.online.records.Withdrawal` record is emitted with the
  decision of that arrival, Pre becomes what it would have been without the
  alarm, and :meth:`OnlineTriage.replay` leaves the alarm out.
  ``withdraw_below=0`` keeps every alarm;
* **hold-back** (K >= 1): a commit the model calls a change is not alarmed
  while its own value is nearer Pre's level (median of Pre's last 10) than
  the rest of its After window (their median): the step comes after it.
  It joins Pre, and the next commit is decided on its own After window
  (:func:`held_back`; its decision gives the reason :data:`HELD_BACK`).

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
and only recognises the re-delivery of a series' *latest* commit and of
its undecided ones (the K waiting for their decision). A
re-delivered commit whose value differs from the one it first came with
keeps its first decision, with a :class:`~triage.online.records.ConflictingRedelivery`
warning naming both values; the values are compared only for commits already
known, so new commits pay nothing for it.

A replay (:meth:`OnlineTriage.replay`, ``triage detect``) returns change
points only, so by default it first decides each commit from an upper bound
of the model's probability over the values of Pre's ``max_kl_shift``,
``entropy`` and ``arch_lm`` (about 35 of the 47 µs of a commit's feature
row), computes ``arch_lm`` where that bound reaches the threshold and bounds
again, and computes the other two only where that bound reaches it
(:meth:`OnlineTriage._screened`, :data:`OnlineTriage.SCREEN_STAGES`): the
same change points with the same probabilities, and the same states.

``top_features`` (plain-words reasons from :mod:`triage.explain`) costs a
decision-path walk of the whole forest: about 0.86 ms per row, against 25-70
µs for features, decision and state update together (BENCHMARKS.md, "Online
loop"). So by default it is computed for positive decisions only (the alerts a
person will look at); ``explain="all"`` explains every commit,
``explain="none"`` none.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import numbers
import queue
import signal
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from triage.core import timestamps
from triage.core.history import History, change_kind
from triage.core.noise import robust_sd
from triage.core.values import value_problem
from triage.features import catalogue, level_shift, noise_free
from triage.features.incremental import PrePool, PreState
from triage.online.records import (
    AlertsOnlyModel,
    AlreadyDecided,
    ConflictingRedelivery,
    Decision,
    LateCommit,
    MissingValue,
    ModelMismatch,
    RejectedCommit,
    Withdrawal,
    decision_from_dict,
    decision_to_dict,
)
from triage.online.series_state import Alarm, SeriesState
from triage.steps import change_pct

#: Every feature column the loop can compute, in the feature-matrix order
#: (``pre_*``, ``after_*``, ``norm_*``; see ARCHITECTURE.md).
ALL_COLUMNS: tuple[str, ...] = tuple(catalogue.feature_columns()) + level_shift.PAIR_COLUMNS

EXPLAIN_MODES: tuple[str, ...] = ("positive", "all", "none")

#: Largest confirmation delay the loop accepts (the benchmark studies 0..5).
MAX_CONFIRM = 20
#: Commits Pre must hold before an alarm, when neither the caller nor the model says.
DEFAULT_MIN_PRE = 5
#: Commits after an alarm's After window at which it is re-checked, when the model does not say.
DEFAULT_RECHECK = 5
#: Pre values the re-check's robust median and scale look at (the incremental
#: state's ring keeps at least 21).
RECHECK_PRE = 21


def _model_window(window: object) -> int | None:
    """A manifest's window as the confirmation delay K, None when it is not a fixed size."""
    if isinstance(window, bool):
        return None
    if isinstance(window, int) and window >= 0:
        return window
    if isinstance(window, str) and window.isdigit():
        return int(window)
    return None


#: The manifest's ``extra.online`` fields the loop reads, with what each must be.
ONLINE_RULE_FIELDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "threshold": ("a number in [0, 1]", lambda v: _is_number(v) and 0.0 <= float(v) <= 1.0),
    "withdraw_below": ("a finite number >= 0", lambda v: _is_number(v) and float(v) >= 0.0),
    "min_pre": ("an integer >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "recheck_after": ("an integer >= 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
}


def _is_number(v: object) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_real(v: object) -> TypeGuard[float]:
    """A number a caller may give (a numpy scalar too), not a bool; NaN is one (ranges refuse it)."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _as_int(v: Any) -> Any:
    """A count a caller gave, numpy's integers included (``for k in np.arange(6)``), as an ``int``; anything else as is.

    ``np.int64(3)`` was refused as "confirm_after must be an integer in [0, 20],
    got np.int64(3)", while the probabilities' options took numpy's floats. A
    bool stays a bool (refused by the checks).
    """
    if isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_):
        return int(v)
    return v


def _check_online_rule(manifest: dict, path: Path) -> None:
    """Refuse a manifest whose online rule the loop cannot use, naming the model and the field.

    The checksums prove the files are the ones written, not that an edited
    manifest makes sense (a NaN threshold would silence the loop).
    """
    extra = manifest.get("extra") or {}
    if not isinstance(extra, dict):
        raise ModelMismatch(path, f"the manifest's extra is {type(extra).__name__}, not an object")
    rule = extra.get("online") or {}
    if not isinstance(rule, dict):
        raise ModelMismatch(path, f"the manifest's extra.online is {type(rule).__name__}, not an object")
    for name, (what, ok) in ONLINE_RULE_FIELDS.items():
        if name in rule and not ok(rule[name]):
            raise ModelMismatch(path, f"the manifest's extra.online.{name} must be {what}, got {rule[name]!r}")


def _robust(x: np.ndarray) -> tuple[float, float]:
    """Median and robust scale (1.4826 MAD; the sd when the MAD is 0; 0 for a window of one value)."""
    if x.size == 0:
        return 0.0, 0.0
    med = float(np.median(x))
    scale = robust_sd(x)
    if scale <= 0 and x.size > 1:
        scale = float(np.std(x, ddof=1))
    return med, scale


# ---------------------------------------------------------------------- input checks


def to_ns(timestamp: object) -> int | None:
    """A timestamp as int nanoseconds since the epoch (UTC), or None when missing.

    The rule (ISO-8601 or other date/time text, naive = UTC; ``datetime``,
    ``numpy.datetime64``; numbers and numeric text = seconds since the epoch)
    is :mod:`triage.core.timestamps`', the same as the loaders'. Raises
    ``ValueError`` for anything else.
    """
    return timestamps.to_ns(timestamp)


def _model_name(path: Path) -> str:
    """How a state store names the model it was built with: a bundled model's name, else its folder."""
    from triage.model_lookup import bundled_models_dir

    try:
        if path.resolve().parent == bundled_models_dir().resolve():
            return path.name
        return str(path.resolve())
    except OSError:
        return str(path)


#: Model folders whose alerts-only warning this process has given (:class:`AlertsOnlyModel`).
_WARNED_ALERTS_ONLY: set[str] = set()


def _check(series_id: object, commit: object, value: object) -> tuple[str, str, float]:
    if isinstance(series_id, numbers.Integral) and not isinstance(series_id, bool | np.bool_):
        # A numeric id (a Perfherder signature's) names its series as a build number names a
        # commit; it was refused as "series '4471': series id must be a non-empty string".
        # numpy's integers too (an id taken from an array or a frame's .to_numpy()).
        series_id = str(int(series_id))
    if not isinstance(series_id, str) or not series_id:
        raise RejectedCommit(str(series_id), str(commit), _id_problem("series id", series_id))
    if isinstance(commit, numbers.Integral) and not isinstance(commit, bool | np.bool_):
        commit = int(commit)
    if isinstance(commit, bool | np.bool_) or not isinstance(commit, str | int) or commit == "":
        raise RejectedCommit(series_id, str(commit), _id_problem("commit id", commit))
    commit = str(commit)
    if (missing := missing_value(series_id, commit, value)) is not None:
        raise missing
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise RejectedCommit(series_id, commit, f"value {value!r} is not a number")
    if (problem := value_problem(value)) is not None:  # 10**400, |x| near 1e308 or 1e-308
        raise RejectedCommit(series_id, commit, problem)
    return series_id, commit, float(value)


def missing_value(series_id: object, commit: object, value: object) -> MissingValue | None:
    """The :class:`MissingValue` a failed run's value raises (None, NaN, Infinity), else None.

    One home for the rule and its words: the loop raises it, and ``triage watch`` sets such
    lines aside before a batch is decided (one in a batch had made every line of it its own
    transaction).
    """
    if value is None:  # JSON's null (a failed run's result): it read "value None is not a number"
        return MissingValue(str(series_id), str(commit),
                            "value is missing (null or an empty cell): send the commit once it is measured")
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return MissingValue(str(series_id), str(commit),
                            f"{value_problem(value)}: send the commit once it is measured")
    return None


def _id_problem(what: str, value: object) -> str:
    """Why ``value`` is no id: a float (7.0 from a frame's row of mixed columns) is said so."""
    if isinstance(value, float | np.floating):
        return f"{what} must be a non-empty string or an integer, got the number {value!r} (a float)"
    return f"{what} must be a non-empty string"


def _check_storable(series_id: str, commit: str) -> None:
    """Refuse an id the state store cannot hold: text with a lone surrogate (``"\\udcff"``).

    Bytes that were not UTF-8, decoded with ``errors="surrogateescape"``, become
    lone surrogates; SQLite stores UTF-8, so binding such an id raised a bare
    ``UnicodeEncodeError`` naming neither the series nor the record. Checked
    with the rest of the batch, before anything is decided: the store is left
    as it was.
    """
    for what, text in (("series id", series_id), ("commit id", commit)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = ord(text[exc.start])
            byte = f" (the undecodable byte 0x{bad - 0xDC00:02x})" if 0xDC80 <= bad <= 0xDCFF else ""
            raise RejectedCommit(
                series_id,
                commit,
                f"{what} {text!r} is not Unicode text: a lone surrogate \\u{bad:04x}{byte} at character "
                f"{exc.start + 1}, which the state store cannot hold (send ids as UTF-8 text)",
            ) from None


# ---------------------------------------------------------------------- the loop


class OnlineTriage:
    """Algorithm 1 over many series, with explicit per-series state.

    Parameters
    ----------
    classifier : fitted TriageClassifier trained on window-K features
        (``triage.training.model_files.load_model`` of a model saved with
        ``window=K``, K >= 0); see :meth:`from_model_dir`.
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
        (see the module docstring); None = the model's manifest, else 5.
    pre_class : the Pre-state class (a
        :class:`~triage.features.pre_state.PreWindowState`), called as
        ``pre_class(names, series_id=...)`` (default:
        :class:`~triage.features.incremental.PreState`; the exact, slow twin is
        :class:`~triage.features.recomputed.RecomputedPre`).
    max_cached_series : with a store, keep at most this many series states in
        memory (least recently used are dropped; the store has them), so a
        watcher over hundreds of thousands of series stays small. None = all.
    confirm_after : K, the confirmation delay: commit p is decided when the
        K-th commit after it arrives, with After = p and those K commits.
        None = the model's own window (its manifest), 0 = the paper's loop.
    threshold : P(true alert) at or above which a commit is an alarm; None =
        the stream threshold of the model's manifest (``extra.online.threshold``,
        chosen on the real-data validation part), else the model's own.
    recheck_after : R >= 1, commits after the After window of an alarm at
        which it is re-checked (see the module docstring); no second alarm is
        raised in between (the refractory period). None = the model's
        manifest, else 5.
    withdraw_below : the re-check withdraws the alarm when the median of the
        commits since it lies less than this many robust standard deviations
        of Pre from Pre's median; 0 = never withdraw. None = the model's
        manifest, else 0.
    """

    def __init__(
        self,
        classifier,
        *,
        model_id: str | None = None,
        model_name: str | None = None,
        store=None,
        explain: str = "positive",
        compiled: bool = True,
        min_pre: int | None = None,
        pre_class=None,
        max_cached_series: int | None = None,
        confirm_after: int | None = None,
        threshold: float | None = None,
        recheck_after: int | None = None,
        withdraw_below: float | None = None,
    ):
        if explain not in EXPLAIN_MODES:
            raise ValueError(f"explain must be one of {', '.join(EXPLAIN_MODES)}, got {explain!r}")
        self.classifier = classifier
        if not hasattr(classifier, "estimator_"):
            # Was "AttributeError: 'TriageClassifier' object has no attribute 'feature_names_'".
            raise ValueError(
                "the classifier is not fitted: fit it on window-K feature rows first, or load a model "
                "directory with OnlineTriage.from_model_dir"
            )
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
        manifest = getattr(classifier, "manifest_", None) or {}
        rule = (manifest.get("extra") or {}).get("online") or {}
        if confirm_after is None:
            if "window" not in manifest:
                # A classifier fitted in Python has no manifest: one fitted on window-4 rows was fed
                # After windows of one commit, without a word (a walkthrough, thirtieth session).
                warnings.warn(
                    "the classifier records no window (no manifest: fitted in Python, not saved by "
                    "`triage train`): each commit is decided on arrival (confirm_after=0); give "
                    "confirm_after=K for a model fitted on window-K rows",
                    stacklevel=2,
                )
            confirm_after = _model_window(manifest.get("window", 0))
        confirm_after = _as_int(confirm_after)
        if isinstance(confirm_after, bool) or not isinstance(confirm_after, int) or not 0 <= confirm_after <= MAX_CONFIRM:
            raise ValueError(f"confirm_after must be an integer in [0, {MAX_CONFIRM}], got {confirm_after!r}")
        self.confirm_after = confirm_after
        if threshold is None:
            threshold = rule.get("threshold", classifier.threshold_)
        if not _is_real(threshold) or not 0.0 <= float(threshold) <= 1.0:
            # 1.5 or NaN never alarmed, -0.1 alarmed on every commit, all without a word.
            raise ValueError(f"threshold must be a probability in [0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        if min_pre is None:
            min_pre = int(rule.get("min_pre", DEFAULT_MIN_PRE))
        if recheck_after is None:
            recheck_after = int(rule.get("recheck_after", DEFAULT_RECHECK))
        recheck_after = _as_int(recheck_after)
        if isinstance(recheck_after, bool) or not isinstance(recheck_after, int) or recheck_after < 1:
            raise ValueError(f"recheck_after must be an integer >= 1, got {recheck_after!r}")
        self.recheck_after = recheck_after
        if withdraw_below is None:
            withdraw_below = float(rule.get("withdraw_below", 0.0))
        if not _is_real(withdraw_below) or not math.isfinite(withdraw_below) or withdraw_below < 0:
            raise ValueError(f"withdraw_below must be a finite number >= 0, got {withdraw_below!r}")
        self.withdraw_below = float(withdraw_below)
        self._bound = None  # an upper bound of the model's probability over some free columns
        #: Whether the probabilities come from the compiled tree walk, which
        #: releases the GIL (a forest or XGBoost); else from the library's own
        #: ``predict_proba`` (an SVM), which holds it.
        self.compiled = False
        if compiled:
            from triage.training.compiled import CompiledPredictor

            predictor = CompiledPredictor(classifier)
            self._predict = predictor.positive_proba
            self.compiled = predictor.compiled
            if predictor.bounds:
                self._bound = predictor.upper_bound_proba
        else:
            self._predict = lambda X: classifier.predict_proba(X)[:, 1]
        # The replay's screen while one runs (see _screen_for): per stage the
        # Pre characteristics left out, and their model columns.
        self._screen: tuple[tuple[tuple[str, ...], np.ndarray], ...] | None = None
        # True while a replay runs whose states are dropped and never stored
        # (see _replay): a negative decision is then seen by nobody, so
        # _round builds no Decision (nor its last_output dict) for it.
        self._lean = False
        min_pre = _as_int(min_pre)
        if isinstance(min_pre, bool) or not isinstance(min_pre, int) or min_pre < 0:
            raise ValueError(f"min_pre must be an integer >= 0, got {min_pre!r}")
        self.min_pre = min_pre
        self.model_id = model_id
        self.explain = explain
        self.pre_class = pre_class or PreState
        self.store = store
        max_cached_series = _as_int(max_cached_series)
        if max_cached_series is not None and (
            isinstance(max_cached_series, bool) or not isinstance(max_cached_series, int) or max_cached_series < 1
        ):
            raise ValueError(f"max_cached_series must be None or an integer >= 1, got {max_cached_series!r}")
        self.max_cached_series = max_cached_series
        self.states: dict[str, SeriesState] = {}
        if store is not None:
            store.bind_model(model_id, name=model_name)
            store.bind_settings(self.settings())

    def settings(self) -> dict[str, object]:
        """What, beside the model, shapes a series' state and its decisions (recorded in a store)."""
        return {
            "confirm_after": self.confirm_after,
            "min_pre": self.min_pre,
            "threshold": self.threshold,
            "recheck_after": self.recheck_after,
            "withdraw_below": self.withdraw_below,
        }

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_model_dir(cls, path: str | Path, **kwargs) -> OnlineTriage:
        """Load a model directory (verified, see :mod:`triage.training.model_files`), or a bundled
        model by its name (``"online-w4"``) when no folder of that name is here.

        The model must have a fixed window K (``triage train --window K``);
        the loop's confirmation delay is that K unless ``confirm_after`` is
        given, and the re-check settings come from the manifest's ``online``
        entry unless given.
        """
        from triage.training.model_files import MANIFEST, load_model

        path = Path(path)
        if not path.exists() and len(path.parts) == 1:
            from triage.model_lookup import bundled_models_dir

            # A bundled model by its name, as `--model online-w4` takes it (a folder of that name here wins).
            if (bundled_models_dir() / path / MANIFEST).is_file():
                path = bundled_models_dir() / path
        for _ in range(3):
            clf = load_model(path)
            # The model's identity in a state store: the manifest the classifier came with. Read
            # again after the load, a model swapped in meanwhile (`train --out`) gave the store the
            # new model's identity with the old model's decisions.
            raw = (path / MANIFEST).read_bytes()
            if json.loads(raw) == clf.manifest_:
                break
        else:
            raise ModelMismatch(path, "was replaced by another model while it was read, again and again; try "
                                      "again once the training that writes it has finished")
        window = clf.manifest_.get("window")
        k = _model_window(window)
        if k is None:
            # A scoring model's manifest says "adaptive" too: "trained with window 'adaptive'" misnamed it.
            what = ("is a detector-scoring model (candidate-bounded windows, for `triage score`)"
                    if (clf.manifest_.get("extra") or {}).get("windows") == "candidates"
                    else f"was trained with window {window!r}")
            raise ModelMismatch(
                path,
                f"the model {what}; the online loop needs a fixed window K "
                "(After = the commit and the K after it): train one with --window K (0 for the paper's loop)",
            )
        if k > MAX_CONFIRM and kwargs.get("confirm_after") is None:
            raise ModelMismatch(path, f"the manifest's window {window!r} is over the loop's largest "
                                f"confirmation delay ({MAX_CONFIRM}); give --confirm-after")
        _check_online_rule(clf.manifest_, path)
        alerts_only = ((clf.manifest_.get("extra") or {}).get("source") or {}).get("ordinary_per_series") == 0
        if alerts_only and str(path) not in _WARNED_ALERTS_ONLY:
            _WARNED_ALERTS_ONLY.add(str(path))  # once: a command loads its model more than once (a check first)
            warnings.warn(AlertsOnlyModel(
                f"{path}: the model learned from alerts alone (--ordinary-per-series 0) and never saw an "
                "ordinary commit, while the online loop asks it about every commit: expect far more alarms "
                "than changes; train it with ordinary commits (the default) for watch and detect"), stacklevel=2)
        model_id = hashlib.sha256(raw).hexdigest()
        try:
            return cls(clf, model_id=model_id, model_name=_model_name(path), **kwargs)
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
                try:
                    st = self._state_from_dict(data)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    # Edited or damaged by hand: name the store and the series, with the recovery.
                    from triage.online.store_checks import DamagedStoreError

                    raise DamagedStoreError(getattr(self.store, "path", "<state store>"),
                                            f"the stored state of series {series_id!r} is unreadable "
                                            f"({type(exc).__name__}: {exc})") from None
                self.states[series_id] = st
        return st

    def state_dict(self) -> dict[str, dict[str, object]]:
        """All in-memory series states, serialisable (``json.dumps``-able)."""
        return {s: self._state_to_dict(st) for s, st in self.states.items()}

    def load_state_dict(self, data: dict[str, dict[str, object]]) -> None:
        """Replace the in-memory states by ``data`` (from :meth:`state_dict`).

        ``ValueError`` naming the series whose state is unreadable, or was
        saved by a loop with another confirmation delay (its waiting commits
        are not this loop's K; such a state decided nothing, ever); the states
        in memory are then left as they were.
        """
        if not isinstance(data, Mapping):
            # A JSON string not yet parsed, a list: "'str' object has no attribute 'items'".
            raise ValueError(f"a state is a mapping of series id to series state (what state_dict() returns), "
                             f"got {type(data).__name__}" + (": parse the JSON first" if isinstance(data, str | bytes) else ""))
        states: dict[str, SeriesState] = {}
        for sid, d in data.items():
            try:
                states[sid] = self._state_from_dict(d)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                # Was a bare KeyError 'pre' (or "unsupported state version None"), naming no series.
                raise ValueError(
                    f"the state of series {sid!r} is unreadable ({type(exc).__name__}: {exc}); "
                    "give what state_dict() returned"
                ) from None
            st = states[sid]
            if len(st.pending) != min(st.n, self.confirm_after):
                # A loop with confirmation delay K keeps min(n, K) commits waiting. A state saved
                # with a larger K decided nothing here, ever (its waiting list only grew); one
                # saved with a smaller K built the next After windows of two delays.
                saved = (f"confirm_after={len(st.pending)}" if len(st.pending) < st.n
                         else f"confirm_after >= {st.n}")
                raise ValueError(
                    f"the state of series {sid!r} holds {len(st.pending)} commit(s) waiting for their decision "
                    f"after {st.n} commit(s): it was saved by a loop with {saved}, this loop's is "
                    f"confirm_after={self.confirm_after}; load it into a loop with the confirmation delay it was "
                    "saved with"
                )
        self.states = states

    # Every series of one loop computes the model's columns, so the Pre state's
    # list of column names (about 20 bytes per column, most of a serialised
    # state for the whole catalogue) is stored as a reference to the model.
    _MODEL_NAMES = "@model"

    def _names_out(self, pre: object) -> object:
        if isinstance(pre, dict) and pre.get("names") == self.feature_names:
            return {**pre, "names": self._MODEL_NAMES}
        return pre

    def _names_in(self, pre: object) -> object:
        if isinstance(pre, dict) and pre.get("names") == self._MODEL_NAMES:
            return {**pre, "names": list(self.feature_names)}
        return pre

    def _state_to_dict(self, st: SeriesState) -> dict[str, object]:
        data = st.to_dict()
        data["pre"] = self._names_out(data["pre"])
        alarm = data.get("alarm")
        if isinstance(alarm, dict):
            data["alarm"] = {**alarm, "pre": self._names_out(alarm["pre"])}
        return data

    def _state_from_dict(self, data: dict[str, object]) -> SeriesState:
        data = {**data, "pre": self._names_in(data["pre"])}
        alarm = data.get("alarm")
        if isinstance(alarm, dict):
            data["alarm"] = {**alarm, "pre": self._names_in(alarm["pre"])}
        return SeriesState.from_dict(data)

    # ------------------------------------------------------------------ processing

    def process_one(
        self, series_id: str, commit: str, value: float, timestamp: object = None
    ) -> Decision | None:
        """Take one new commit of a series; returns the :class:`Decision` it completes.

        With a confirmation delay K > 0 the decision is about the commit K
        before this one (``Decision.commit`` names it, ``decided_at`` this
        one); None while the series has had no K commits after its oldest
        undecided one. Raises :class:`RejectedCommit` (nothing changed) for a
        non-finite value, an unreadable timestamp, or one older than the
        series' latest.
        """
        return self.process_many([(series_id, commit, value, timestamp)])[0]

    def process_many(
        self, records: Iterable[Sequence[object] | dict[str, object]]
    ) -> list[Decision | None]:
        """Take a batch of commits, possibly of many series; what each completes, in input order.

        ``records`` are ``(series_id, commit, value[, timestamp])`` tuples or
        dicts with those keys. The whole batch is checked first: one bad record
        raises :class:`RejectedCommit` and nothing is decided. Commits of one
        series are taken in input order; across series, the predictor runs
        once per round (see the module docstring). With a store, the batch's
        decisions and states are committed in one transaction.
        """
        return self._process([self._normalise(r) for r in records])

    def _process(self, items: list[tuple[str, str, float, int | None]]) -> list[Decision | None]:
        """:meth:`process_many` on checked ``(series_id, commit, value, timestamp ns)`` items.

        With a store, re-delivered commits are rare (a restart), so the batch
        is first decided optimistically: only commits that look re-delivered
        (a series' latest commit, or a timestamp older than its latest) are
        looked up, and the arrivals table's uniqueness catches the rest at
        commit time, which rolls the batch back and redoes it with every
        commit looked up. That saves a query per commit in the common case.
        """
        if self.store is None:
            return self._decide(items, None)
        try:
            return self._decide(items, None)
        except AlreadyDecided:
            known = [(sid, c) for sid, c, _, _ in items if self.state(sid) is not None]
            return self._decide(items, self.store.get_arrivals(known))

    def _decide(self, items, stored: dict | None) -> list[Decision | None]:
        """Decide ``items``; ``stored`` = the batch's stored arrivals when looked up (store only)."""
        decisions: list[Decision | None] = [None] * len(items)
        rounds: list[list[int]] = []
        depth: dict[str, int] = {}
        seen_in_batch: dict[tuple[str, str], int] = {}
        pending_ts: dict[str, int | None] = {}
        duplicates: list[tuple[int, int]] = []
        depth_at: dict[int, int] = {}  # a new commit's position among its series' new commits of the batch
        for i, (sid, commit, value, ts) in enumerate(items):
            key = (sid, commit)
            # Without a store only the series' latest arrival (with its output) and the K
            # waiting for their decision are remembered (_latest), and a batch remembers no
            # more than the same commits one by one: a re-run further back is a new commit
            # either way (in a batch it decided nothing, one by one it was decided again, so
            # the decisions depended on how the lines reached the watcher).
            if key in seen_in_batch and (
                self.store is not None or depth[sid] - depth_at[seen_in_batch[key]] < max(self.confirm_after, 1)
            ):
                j = seen_in_batch[key]
                if items[j][2] != value:
                    _conflict(sid, commit, items[j][2], value)
                # A re-run after a later commit of its series decides and prints nothing, whether
                # the two came in one batch or not (the output depended on the pipe's timing).
                if self.store is not None or depth[sid] == depth_at[j]:
                    duplicates.append((i, j))
                continue
            st = self.state(sid)
            last_ts = (
                pending_ts[sid] if sid in pending_ts else (st.last_ts if st is not None else None)
            )
            found, old, first = False, None, None
            if key in seen_in_batch:
                pass  # store None: forgotten since its arrival earlier in this batch, a new commit
            elif self.store is None:
                found, old, first = self._latest(sid, commit, st, later=depth.get(sid, 0))
            elif stored is not None:
                found = key in stored
                old, first = stored.get(key, (None, None))
            elif st is not None and (
                st.last_commit == commit
                or (ts is not None and last_ts is not None and ts < last_ts)
            ):
                got = self.store.get_arrivals([key])
                found = key in got
                old, first = got.get(key, (None, None))
            if found:
                # Only a known commit gets here: the check costs the fast path nothing.
                if first is not None and first != value:
                    _conflict(sid, commit, first, value)
                if old is not None:
                    old.replayed = True
                decisions[i] = old
                continue
            if ts is not None and last_ts is not None and ts < last_ts:
                raise LateCommit(
                    sid,
                    commit,
                    f"out of order: timestamp {_iso(ts)} is older than the series' latest ({_iso(last_ts)})",
                )
            if ts is not None:
                pending_ts[sid] = ts
            seen_in_batch[key] = i
            k = depth.get(sid, 0)
            depth[sid] = depth_at[i] = k + 1
            if k == len(rounds):
                rounds.append([])
            rounds[k].append(i)

        touched: dict[str, SeriesState] = {}
        try:
            arrivals: list[tuple[str, str, Decision | None, float]] = []
            for members in rounds:
                self._round(items, members, decisions, touched)
                arrivals.extend((items[i][0], items[i][1], decisions[i], items[i][2]) for i in members)
            if self.store is not None and arrivals:
                self.store.commit(arrivals, {s: self._state_to_dict(st) for s, st in touched.items()})
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
            decisions[i] = None if d is None else replace(d, top_features=list(d.top_features), replayed=True)
        return decisions

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
            if "series" in record and "series_id" not in record:
                # A decision's own key (and the older input name, as triage.core.json_input reads it).
                record = {**record, "series_id": record["series"]}
            missing = [key for key in ("series_id", "commit", "value") if key not in record]
            if missing:
                # Else a record without "series_id" read as "series 'None': series id must be a
                # non-empty string", and one without "value" as "value None is not a number".
                raise ValueError(
                    f"a record needs the keys series_id, commit and value (timestamp optional); "
                    f"{', '.join(missing)} missing from {sorted(map(str, record))}"
                )
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
        if self.store is not None:
            _check_storable(sid, commit)
        try:
            ns = to_ns(ts)
        except ValueError as exc:
            raise RejectedCommit(sid, commit, str(exc)) from None
        return sid, commit, v, ns

    def _latest(
        self, sid: str, commit: str, st: SeriesState | None, later: int = 0
    ) -> tuple[bool, Decision | None, float | None]:
        """Without a store: whether ``commit`` is known, what its arrival decided and its first value.

        Only the latest commit of a series and its undecided ones (the K
        waiting in ``pending``) are remembered. A re-run of a waiting commit
        (real histories re-measure commits a few arrivals later) decides
        nothing, as with a store; taken as a new commit it was decided twice
        and its second value entered Pre and After. ``later``: new commits of
        the series that came before it in the same batch, which one by one
        would have moved ``st`` on (the latest is then another commit, and the
        oldest waiting ones are decided and forgotten).
        """
        if st is None:
            return False, None, None
        if later == 0 and st.last_commit == commit:
            return True, decision_from_dict(sid, st.last_output, replayed=True), st.last_value
        for back, (waiting, value) in enumerate(reversed(st.pending)):
            if waiting == commit and back + later < self.confirm_after:
                return True, None, float(value)
        return False, None, None

    def _round(self, items, members: list[int], decisions, touched) -> None:
        """Features of every member due a decision (one commit per series), one predictor call, then the updates.

        Nothing is mutated until the predictor has answered, so an exception
        in the features or the model leaves every state of the round as it was.
        With the replay's screen (:meth:`_screen_for`) the rows are first
        built without the deferred Pre characteristics and bounded; see
        :meth:`_screened`.
        """
        K = self.confirm_after
        min_pre = self.min_pre
        screen = self._screen
        rows: list[np.ndarray] = []
        # With the screen the rows are written straight into the round's
        # matrix (one row per member at most; the unused tail is cut off).
        X = np.empty((len(members), len(self.feature_names))) if screen is not None else None
        first = screen[0][0] if screen is not None else ()  # what the first screen leaves out
        asked: list[int] = []  # rows built without the deferred characteristics (screen)
        due: list[int] = []  # positions in members with a decision this round
        allowed: list[bool] = []  # per decision due: Pre long enough and no alarm awaiting its re-check
        states: list[SeriesState] = []
        pres: list[object] = []  # the Pre each decision is made on (restored if a re-check withdraws)
        rechecks: list[tuple[bool, float] | None] = []
        for pos, i in enumerate(members):
            sid, _, value, _ = items[i]
            st = self.states.get(sid)
            if st is None:
                st = self.new_state(sid)
                self.states[sid] = st
            states.append(st)
            check = self._recheck(st, value)
            rechecks.append(check)
            pre = st.pre
            if check is not None and check[0]:
                pre = self._withdrawn_pre(st)
            pres.append(pre)
            if len(st.pending) == K:
                ok = pre.n >= min_pre and (st.alarm is None or check is not None)
                allowed.append(ok)
                if X is None:
                    rows.append(pre.features_array(value if K == 0 else np.array([v for _, v in st.pending] + [value])))
                elif not ok:
                    X[len(due)] = np.nan  # held back by the stream rule whatever the model says
                else:
                    # Every value was checked on arrival (_check, or a Dataset's
                    # finite values), so the row skips features_array's checks.
                    after = np.array([v for _, v in st.pending] + [value], dtype=np.float64)
                    pre.row_into(after, X[len(due)], first)  # type: ignore[attr-defined]
                    asked.append(len(due))
                due.append(pos)
        if X is not None:
            assert screen is not None
            X = X[: len(due)]
            proba = self._screened(X, asked, [pres[pos] for pos in due], screen)
        else:
            X = np.array(rows) if rows else np.empty((0, len(self.feature_names)))
            proba = self._predict(X) if rows else np.empty(0)
            if not all(allowed):
                # The stream rule decided these, not the model: a probability computed from an
                # empty or too short Pre (0.69 for a series' first commit) read as the model's
                # view of a commit it was never asked about. The decision carries none.
                # (in the predictor's own dtype: float32 for XGBoost is compared with the threshold
                # as the replay compares it; a float64 copy compares differently at a threshold
                # that float32 rounds down)
                proba = proba.copy()
                proba[~np.array(allowed, dtype=bool)] = np.nan
        ruled: dict[int, tuple[int, int]] = {}
        if K + 1 >= noise_free.MIN_AFTER:
            for row, at in enumerate(due):
                pre_w: typing.Any = pres[at]
                if not allowed[row] or pre_w.n < noise_free.MIN_PRE:
                    continue
                flat = pre_w.flat_value()
                if flat is None:
                    continue
                after = np.array([v for _, v in states[at].pending] + [items[members[at]][2]], dtype=np.float64)
                kind = noise_free.stream_verdict(pre_w.n, flat, after)
                if kind != noise_free.NOT_NOISE_FREE:
                    ruled[row] = (kind, pre_w.n)
            if ruled:
                proba = _ruled_proba(proba, ruled)
        positive = (proba >= self.threshold) & np.array(allowed, dtype=bool)
        held: set[int] = set()
        if K:
            for row in np.flatnonzero(positive).tolist():
                pos = due[row]
                after = np.array([v for _, v in states[pos].pending] + [items[members[pos]][2]], dtype=np.float64)
                if held_back(pres[pos].tail(HOLD_BACK_PRE), after):  # type: ignore[attr-defined]
                    positive[row] = False
                    held.add(row)
        explained = self._explain(X, positive)
        if self.explain != "none":
            # The rule's decision, not the model's (its probability is null): say why, whatever
            # --explain asks of the model's decisions (it costs no model call).
            for row in np.flatnonzero(~np.array(allowed, dtype=bool)).tolist():
                n_pre = int(pres[due[row]].n)  # type: ignore[attr-defined]
                why = (f"held back by the stream rule: {n_pre} commit{'' if n_pre == 1 else 's'} before it, "
                       f"fewer than min_pre {min_pre}" if n_pre < min_pre else
                       "held back by the stream rule: an alarm of this series awaits its re-check")
                explained[row] = [why]  # no model reasons: the model was not asked
        for row, (kind, n_pre) in ruled.items():
            if self.explain == "all" or (self.explain == "positive" and positive[row]):
                explained[row] = [noise_free.reason(kind, n_pre, K + 1)]
        row_of = {pos: r for r, pos in enumerate(due)}
        # Python floats and bools once per round, not a NumPy scalar per commit.
        probs, hits = proba.tolist(), positive.tolist()
        lean = self._lean
        for pos, i in enumerate(members):
            sid, commit, value, ts = items[i]
            st = states[pos]
            touched[sid] = st
            withdrawal = None
            check = rechecks[pos]
            if check is not None:
                alarm = st.alarm
                assert alarm is not None
                if check[0]:
                    withdrawal = Withdrawal(sid, alarm.commit, alarm.index, commit, check[1])
                    st.pre = pres[pos]  # type: ignore[assignment]
                    st.last_cp = alarm.last_cp
                    st.n_change_points -= 1
                st.alarm = None
            elif st.alarm is not None:
                st.alarm.after.append(value)
            r = row_of.get(pos)
            decision = None
            if r is not None:
                p_index = st.n - K
                p_commit, p_value = (commit, value) if K == 0 else st.pending[0]
                prob = probs[r]
                if prob != prob:  # NaN: held back by the stream rule, the model not asked
                    prob = None
                hit = hits[r]
                after_values = ([v for _, v in st.pending[:K]] + [value] if K else [value]) if hit else []
                if not lean or hit or withdrawal is not None:
                    decision = Decision(
                        sid, p_commit, p_index, prob, hit, [HELD_BACK] if r in held else explained.get(r, []),
                        decided_at=commit if K else None, withdrawal=withdrawal,
                        levels=alarm_levels(pres[pos].tail(HOLD_BACK_PRE), after_values) if hit else None,  # type: ignore[attr-defined]
                    )
                if hit:
                    self._raise_alarm(st, p_index, p_commit, prob, after_values)
                else:
                    st.pre.learn_one(p_value)
                if K:
                    st.pending.pop(0)
            if K:
                st.pending.append([commit, value])
            decisions[i] = decision
            st.n += 1
            st.last_commit = commit
            st.last_value = value
            if ts is not None:
                st.last_ts = ts
            # Lean: a dropped negative decision leaves None, which _latest
            # turns into "decided nothing", and _replay skips such a
            # re-delivered commit either way.
            st.last_output = None if decision is None else decision_to_dict(decision)

    # ------------------------------------------------------------------ the replay's screen

    #: The Pre characteristics a screened replay leaves out of the rows it
    #: bounds last: ``max_kl_shift`` (about 25 of a commit's 80 µs,
    #: BENCHMARKS.md) and ``entropy`` (about 4 µs, a direct DFT of 64 values).
    #: A bound of the bundled model's probability without both stays below
    #: the stream threshold for 98.5 % of the real histories' rows (99.4 %
    #: without ``max_kl_shift`` alone).
    SCREEN_DEFER: tuple[str, ...] = ("max_kl_shift", "entropy")
    #: The screens in order, each leaving out fewer characteristics than the
    #: one before: the first rows are built without ``arch_lm`` too (4.6 µs
    #: of the 17 µs such a row costs), and only the rows whose bound without
    #: it reaches the threshold (9 % of the ``default`` preset's, 18 % of the
    #: real histories') get it and are bounded again (BENCHMARKS.md, "The
    #: replay's screen"). ``nonlinearity`` as well would pass 73 % of the
    #: real rows to the second bound.
    SCREEN_STAGES: tuple[tuple[str, ...], ...] = (SCREEN_DEFER + ("arch_lm",), SCREEN_DEFER)

    def _screen_for(self, screen: bool) -> tuple[tuple[tuple[str, ...], np.ndarray], ...] | None:
        """The screens a replay may use: per stage (deferred characteristics, their model columns as a mask), or None.

        Only where it cannot change a decision or an output: a compiled
        predictor with a sound bound, no store (a store persists every
        decision with its probability), explanations of positive decisions
        at most (their rows are exact), a Pre state that can defer them
        (:class:`~triage.features.incremental.PreState`; not
        :class:`~triage.features.recomputed.RecomputedPre`), and a model that
        reads one of the deferred columns. A stage that frees no more model
        columns than the next is dropped.
        """
        if not screen or self._bound is None or self.store is not None or self.explain == "all":
            return None
        if not hasattr(self.pre_class, "row_into"):
            return None
        deferrable = getattr(self.pre_class, "DEFERRABLE", ())
        stages: list[tuple[tuple[str, ...], np.ndarray]] = []
        for names in reversed(self.SCREEN_STAGES):
            defer = tuple(n for n in names if n in deferrable)
            columns = {f"pre_{n}" for n in defer}
            free = np.array([c in columns for c in self.feature_names], dtype=np.bool_)
            if free.any() and not (stages and np.array_equal(free, stages[-1][1])):
                stages.append((defer, free))
        return tuple(reversed(stages)) or None

    def _screened(self, X, asked, pres, stages) -> np.ndarray:
        """The round's probabilities under the screen; ``X`` (one row per decision due) completed in place.

        The rows ``asked`` of ``X`` were built without the first stage's
        deferred characteristics (NaN); the others are NaN (held back by
        ``min_pre`` or the refractory period: never positive, the model is
        not asked). The asked rows get an upper bound of the model's
        probability over every value of the deferred columns; a row whose
        bound reaches the threshold gets the characteristics the next stage
        no longer defers (the Pre state computes only those) and is bounded
        again, and a row that reaches the threshold at the last stage is
        built in full and predicted exactly. A bound over more free columns
        is at least the bound over fewer, which is at least the probability,
        so every positive decision, and every state update (it depends only
        on positive or not), is the one the exact loop makes, and a positive
        decision's probability is exact. A negative decision's probability
        is the bound that stopped it (>= the exact one, below the
        threshold), NaN where the model was not asked; a replay outputs
        positive decisions only.
        """
        if not asked:
            return np.full(len(X), np.nan)
        rows: list[int] = list(asked)
        proba: np.ndarray | None = None
        for stage, (defer, free) in enumerate(stages):
            if stage:
                _complete(pres, X, rows, defer)
            bound = self._bound(X if len(rows) == len(X) else X[rows], free)  # type: ignore[misc]
            # In the predictor's own dtype (float32 for XGBoost), compared with the
            # threshold by the same array expression as the exact loop's: a float64
            # copy would compare differently at a threshold float32 rounds down.
            if proba is None:
                proba = np.full(len(X), np.nan, dtype=bound.dtype)
            proba[rows] = bound
            rows = [rows[k] for k in np.flatnonzero(bound >= self.threshold).tolist()]
            if not rows:
                return proba
        assert proba is not None
        _complete(pres, X, rows)  # the full row: only the characteristics still left out
        exact = self._predict(X[rows])
        if exact.dtype != proba.dtype:
            raise TypeError(f"the bound ({proba.dtype}) and the model ({exact.dtype}) differ in precision")
        proba[rows] = exact
        return proba

    # ------------------------------------------------------------------ the stream rule

    def _raise_alarm(self, st: SeriesState, index: int, commit: str, prob: float, after: list[float]) -> None:
        """``index`` is a change point: Pre restarts after it; the alarm waits for its re-check."""
        tail = np.asarray(st.pre.tail(RECHECK_PRE), dtype=np.float64)
        median, scale = _robust(tail)
        st.alarm = Alarm(
            index=index,
            commit=commit,
            probability=prob,
            last_cp=st.last_cp,
            pre=copy.deepcopy(st.pre),
            after=list(after),
            median=median,
            scale=scale,
        )
        st.pre.reset()
        st.last_cp = index
        st.n_change_points += 1

    def _recheck(self, st: SeriesState, value: float) -> tuple[bool, float] | None:
        """The re-check of the series' alarm if this arrival completes it: (withdraw?, score); else None.

        The alarm at p is re-checked when commit p + K + R arrives: the
        median of the K + R + 1 commits from p on is compared with Pre's
        median, in units of Pre's robust scale (1.4826 MAD). Below
        ``withdraw_below`` the later commits contradict a change (a spike or
        a burst of noise) and the alarm is withdrawn.
        """
        alarm = st.alarm
        if alarm is None or len(alarm.after) + 1 < self.confirm_after + self.recheck_after + 1:
            return None
        after = np.array([*alarm.after, value])
        shift = abs(float(np.median(after)) - alarm.median)
        if alarm.scale > 0:
            score = shift / alarm.scale
        else:
            # Pre held one value (a noise-free metric): any change beyond the values'
            # resolution holds, as the noise-free rule that raised the alarm reads it.
            # A scale of 1e-9 of the level withdrew a 16-unit step on 5e10.
            level = max(abs(float(np.median(after))), abs(alarm.median))
            score = 0.0 if shift <= catalogue.FLAT_RTOL * level else math.inf
        return (score < self.withdraw_below, score)

    def _withdrawn_pre(self, st: SeriesState):
        """Pre as if the alarm had not been raised: its Pre, then the commits decided since."""
        alarm = st.alarm
        assert alarm is not None
        pre = copy.deepcopy(alarm.pre)
        for v in alarm.after[: self.recheck_after]:
            pre.learn_one(v)
        return pre

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
        screen: bool = True,
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
        positive decisions (the change points found; alarms a re-check
        withdrew are left out), in series order then commit order. With a
        confirmation delay K the last K commits of each history are never
        decided (nothing comes after them).

        ``screen`` (default True): decide most commits without their
        expensive Pre characteristics, from an upper bound of the model's
        probability (:meth:`_screened`; used where :meth:`_screen_for` allows
        it). The decisions returned are those of ``screen=False``, with the
        same probabilities; only the negative decisions that a replay drops
        (and the last one of each series kept in its state) carry a bound
        instead. :meth:`process_one`, :meth:`process_many` and ``triage
        watch`` never screen.
        """
        # A negative batch_series replayed nothing (range() with a negative step) and
        # returned no change point, a wrong answer without an error.
        for name, value in (("batch_series", batch_series), ("commits_per_batch", commits_per_batch)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self._screen = self._screen_for(screen)
        # Only the positive decisions and withdrawals leave a replay; with
        # states dropped and no store nothing else sees a negative decision.
        self._lean = not keep_states and self.store is None
        try:
            return self._replay(dataset, batch_series, commits_per_batch, keep_states)
        finally:
            self._screen = None
            self._lean = False

    def _replay(self, dataset, batch_series: int, commits_per_batch: int, keep_states: bool) -> list[Decision]:
        found: list[Decision] = []
        withdrawn: set[tuple[str, int]] = set()

        def collect(decisions) -> None:  # what leaves a replay: alarms, and the alarms withdrawn
            for d in decisions:
                if d is None or d.replayed:
                    continue
                if d.withdrawal is not None:
                    withdrawn.add((d.series, d.withdrawal.index))
                if d.decision:
                    found.append(d)

        histories = list(dataset)
        for k, h in enumerate(histories):
            if not isinstance(h, History):  # replay([1, 2, 3]) failed on "'int' object has no attribute"
                raise TypeError(
                    f"replay() takes a Dataset (or other iterable) of History objects; item {k} is "
                    f"{type(h).__name__} {h!r:.60}"
                )
        for start in range(0, len(histories), batch_series):
            group = histories[start : start + batch_series]
            for h in group:
                if not np.all(np.isfinite(h.values)):
                    bad = int(np.flatnonzero(~np.isfinite(h.values))[0])
                    raise RejectedCommit(
                        h.series_id, str(h.commits[bad]), "value is not a finite number"
                    )
            if self._lean and self._fresh(group):
                collect(self._replay_fresh(group))
                continue
            # A History holds finite values and ordered commits already; only
            # the conversions process_many would do per record are done here,
            # once per series.
            columns = []
            for h in group:
                columns.append((h.series_id, [str(c) for c in h.commits], h.values.tolist(), _timestamps_ns(h)))
            longest = max(len(h) for h in group)
            for first in range(0, longest, commits_per_batch):
                batch = [
                    (sid, commits[i], values[i], ts[i])
                    for i in range(first, first + commits_per_batch)
                    for sid, commits, values, ts in columns
                    if i < len(commits)
                ]
                collect(self._process(batch))
            if not keep_states:
                for sid, *_ in columns:
                    self.states.pop(sid, None)
        found = [d for d in found if (d.series, d.index) not in withdrawn]
        order = {h.series_id: k for k, h in enumerate(histories)}
        found.sort(key=lambda d: (order[d.series], d.index))
        return found

    def _fresh(self, group) -> bool:
        """True if _decide would neither skip nor reject any commit of these histories (see _replay_fresh).

        No state of any of them yet (so no latest commit, no latest
        timestamp), each series once, no commit twice in a series, and every
        series' known timestamps in order.
        """
        if len({h.series_id for h in group}) != len(group):
            return False
        for h in group:
            if h.series_id in self.states or len(set(h.commits.tolist())) != len(h):
                return False
            if h.timestamps is not None:
                ns = np.asarray(h.timestamps).astype("datetime64[ns]")
                known = ns[~np.isnat(ns)].astype(np.int64)
                if (known[1:] < known[:-1]).any():
                    return False
        return True

    def _replay_fresh(self, group) -> list[Decision | None]:
        """The decisions of a lean replay of fresh histories (:meth:`_fresh`): what :meth:`_round` decides, round by round.

        Rounds are the i-th commits of the series. A series with no alarm
        awaiting its re-check (nearly every commit of a replay) takes the
        short path here: its After is a slice of its values, a negative
        decision only feeds Pre, and nothing else of its state is kept up to
        date per commit (the states are dropped after the group, and a lean
        replay outputs positive decisions and withdrawals only). With the
        screen and :class:`~triage.features.incremental.PreState` s, the
        group's Pre states sit side by side in a
        :class:`~triage.features.incremental.PrePool`, so a round's rows and
        a round's updates are one compiled call each. A series with an
        alarm goes through :meth:`_round` itself, its commit count, pending
        commits and Pre's index set first to what :meth:`_round` would hold.
        Each row's probability depends on that row only, so splitting a round
        in two predictor calls changes no decision.
        """
        K = self.confirm_after
        min_pre = self.min_pre
        screen = self._screen
        first = screen[0][0] if screen is not None else ()
        width = len(self.feature_names)
        sids = [h.series_id for h in group]
        lengths = np.array([len(h) for h in group], dtype=np.int64)
        starts = np.zeros(len(group), dtype=np.int64)
        starts[1:] = np.cumsum(lengths)[:-1]
        values = np.ascontiguousarray(np.concatenate([h.values for h in group]), dtype=np.float64)
        states = []
        for sid in sids:
            st = self.new_state(sid)
            self.states[sid] = st
            states.append(st)
        pool = None
        pres0 = [st.pre for st in states]
        if screen is not None and all(type(p) is PreState for p in pres0):
            pooled = typing.cast(list[PreState], pres0)
            if pooled[0]._layout.needs_pre:
                pool = PrePool(pooled)
        out: list[Decision | None] = []
        alarmed: set[int] = set()  # series with an alarm awaiting its re-check: through _round
        for i in range(K, int(lengths.max())):
            active = np.flatnonzero(lengths > i)
            slow = sorted(g for g in alarmed if lengths[g] > i)
            if slow:
                # Chosen before _round runs: a re-check there clears an alarm,
                # and that series has had its decision of this round.
                fast = active[~np.isin(active, slow)]
                items = []
                for g in slow:
                    st = states[g]
                    commits = group[g].commits
                    st.n = i
                    st.pending = [[str(commits[j]), float(values[starts[g] + j])] for j in range(i - K, i)]
                    if pool is not None:
                        pool.pres[g].index = i - K  # a pooled Pre's index is not advanced per commit
                    items.append((sids[g], str(commits[i]), float(values[starts[g] + i]), None))
                decisions: list[Decision | None] = [None] * len(items)
                self._round(items, list(range(len(items))), decisions, {})
                out.extend(decisions)
                for g in slow:
                    if pool is not None:
                        pool.attach(g, typing.cast(PreState, states[g].pre))  # a withdrawal, a reset or a grown hull replaced arrays
                    if states[g].alarm is None:
                        alarmed.discard(g)
            else:
                fast = active
            if not fast.size:
                continue
            X = np.empty((fast.size, width))
            pres: _PoolRows | list
            if pool is not None:
                ok = pool.n(fast) >= min_pre
                X[~ok] = np.nan  # held back by the stream rule whatever the model says
                asked = np.flatnonzero(ok)
                declined = pool.rows_into(fast[asked], asked, values, starts, i, K, X, first)
                pres = _PoolRows(pool, fast, first, asked[declined])
            else:
                pres = [states[g].pre for g in fast.tolist()]
                asked_rows = []
                for r, pre in enumerate(pres):
                    if pre.n < min_pre:
                        X[r] = np.nan
                        continue
                    s = int(starts[fast[r]]) + i - K
                    after = values[s : s + K + 1]
                    if screen is not None:
                        pre.row_into(after, X[r], first)
                    else:
                        X[r] = pre.features_array(after[0] if K == 0 else after)
                    asked_rows.append(r)
                asked = np.array(asked_rows, dtype=np.int64)
            if screen is not None:
                proba = self._screened(X, asked.tolist(), pres, screen)
            else:
                proba = np.full(fast.size, np.nan)
                if asked.size:
                    proba[asked] = self._predict(X[asked])
            ruled: dict[int, tuple[int, int]] = {}
            if K + 1 >= noise_free.MIN_AFTER and asked.size:
                if pool is not None:
                    flat_rows = asked[pool.flat(fast[asked]) & (pool.n(fast[asked]) >= noise_free.MIN_PRE)]
                else:
                    flat_rows = np.array([r for r in asked.tolist() if pres[r].n >= noise_free.MIN_PRE  # type: ignore[index]
                                          and pres[r].flat_value() is not None], dtype=np.int64)  # type: ignore[index]
                for r in flat_rows.tolist():
                    g = int(fast[r])
                    pre = pool.pres[g] if pool is not None else states[g].pre
                    s = int(starts[g]) + i - K
                    kind = noise_free.stream_verdict(pre.n, pre.flat_value(), values[s : s + K + 1])
                    if kind != noise_free.NOT_NOISE_FREE:
                        ruled[r] = (kind, pre.n)
                if ruled:
                    proba = _ruled_proba(proba, ruled)
            positive = proba >= self.threshold  # NaN (held back) is never positive
            if K:
                for r in np.flatnonzero(positive).tolist():
                    g = int(fast[r])
                    s = int(starts[g]) + i - K
                    pre = pool.pres[g] if pool is not None else states[g].pre
                    if held_back(pre.tail(HOLD_BACK_PRE), values[s : s + K + 1]):
                        positive[r] = False
            hits = np.flatnonzero(positive).tolist()
            explained = self._explain(X, positive) if hits else {}
            for r, (kind, n_pre) in ruled.items():
                if self.explain == "all" or (self.explain == "positive" and positive[r]):
                    explained[r] = [noise_free.reason(kind, n_pre, K + 1)]
            for r in hits:
                g = int(fast[r])
                st = states[g]
                commits = group[g].commits
                p_index = i - K
                p_commit = str(commits[p_index])
                prob = float(proba[r])
                s = int(starts[g])
                after_values = values[s + p_index : s + i + 1]
                pre = pool.pres[g] if pool is not None else st.pre
                out.append(Decision(
                    sids[g], p_commit, p_index, prob, True, explained.get(r, []),
                    decided_at=str(commits[i]) if K else None,
                    levels=alarm_levels(pre.tail(HOLD_BACK_PRE), after_values),
                ))
                if pool is not None:
                    pool.pres[g].index = p_index
                self._raise_alarm(st, p_index, p_commit, prob, after_values.tolist())
                if pool is not None:
                    pool.attach(g, typing.cast(PreState, st.pre))  # the reset gave Pre new arrays
                alarmed.add(g)
            learners = fast[~positive] if hits else fast
            if pool is not None:
                for r in pres.touched:  # type: ignore[union-attr]
                    pool.forget(int(fast[r]))
                pool.learn(learners, values, starts, i, K)
            else:
                for g in learners.tolist():
                    states[g].pre.learn_one(float(values[starts[g] + i - K]))
        for sid in sids:
            self.states.pop(sid, None)
        return out


#: How many of Pre's last values stand for the old level in :func:`held_back`.
HOLD_BACK_PRE = 10
#: The reason a held-back commit's decision gives (its probability reached the threshold).
HELD_BACK = "held back: this commit is still at the level before it; the next commit is decided on its own"


def _ruled_proba(proba: np.ndarray, ruled: dict[int, tuple[int, int]]) -> np.ndarray:
    """``proba`` with the rows of a noise-free verdict (:mod:`triage.features.noise_free`) set: 1 a step, 0 no change."""
    out = np.array(proba, dtype=np.float64)
    for r, (kind, _) in ruled.items():
        out[r] = 1.0 if kind == noise_free.STEP else 0.0
    return out


def held_back(pre_tail: np.ndarray, after: np.ndarray) -> bool:
    """Whether an alarm at ``after[0]`` waits: that commit still sits nearer Pre's level than the rest of After.

    With K >= 1 the After window of the commit just *before* a step already
    holds K commits of the new level, and the model calls that commit; the
    refractory period then kept the step's own commit from its alarm (157 of
    688 alarms on the real histories, BENCHMARKS.md "Which commit an alarm
    names"). Held back, the commit joins Pre as an ordinary one, and the next
    commit is decided on its own After window. ``pre_tail``: Pre's last values
    (:data:`HOLD_BACK_PRE`), ``after``: the commit and the K after it.
    """
    if len(after) < 2 or not len(pre_tail):
        return False
    x = float(after[0])
    return abs(x - float(np.median(pre_tail))) < abs(x - float(np.median(after[1:])))


def alarm_levels(pre_tail: np.ndarray, after: Sequence[float] | np.ndarray) -> tuple[float, float, float] | None:
    """An alarm's ``(before, after, noise)``: the medians of Pre's last values and of its After window, Pre's sd.

    The levels :func:`held_back` compares the commit with (Pre's last
    :data:`HOLD_BACK_PRE` values for the old level), over the whole After
    window (the commit and the K after it) for the new one: what the alarm's
    record reports as ``before``, ``after`` and the change in per cent, in
    the series' units; ``noise`` (the robust sd of those Pre values, 1.4826
    MAD, 0 for one) withholds the per cent of a level within its noise of 0, as ``score``
    does (:func:`triage.steps.relative_change`). None when Pre is empty (no
    alarm is raised then).
    """
    if not len(pre_tail) or not len(after):
        return None
    tail = np.asarray(pre_tail, dtype=np.float64)
    noise = robust_sd(tail)
    return float(np.median(tail)), float(np.median(np.asarray(after, dtype=np.float64))), noise


class _PoolRows:
    """The Pre states of a round's rows for :meth:`OnlineTriage._screened`, from a PrePool.

    Row r is member ``members[r]``. Rows the pool built (``pool_rows``) are
    completed by the pool in one call per stage; a row built in Python
    (declined by the compiled row) by its own state, which cached Pre's
    characteristics while building it: ``touched`` lists those rows, whose
    caches are dropped before their next update.
    """

    def __init__(self, pool: PrePool, members: np.ndarray, defer: tuple[str, ...], declined: np.ndarray):
        self.pool, self.members, self.defer = pool, members, defer
        self.python = set(declined.tolist())
        # Building a row in Python cached Pre's characteristics in its state.
        self.touched: set[int] = set(self.python)

    def complete(self, X: np.ndarray, rows: list[int], defer: tuple[str, ...] = ()) -> None:
        """Rows ``rows`` of ``X`` completed to leave out only ``defer``."""
        mine = [r for r in rows if r not in self.python] if self.python else rows
        if mine:
            at = np.array(mine, dtype=np.int64)
            self.pool.complete_into(self.members[at], at, X, self.defer, defer)
        for r in rows:
            if r in self.python:
                self.pool.pres[int(self.members[r])].complete_into(X[r], defer)
        self.defer = defer  # what the pool's rows leave out now


def _complete(pres, X: np.ndarray, rows: list[int], defer: tuple[str, ...] = ()) -> None:
    """Rows ``rows`` of ``X`` completed by their Pre states to leave out only ``defer`` (the screen's next stage)."""
    if isinstance(pres, _PoolRows):
        pres.complete(X, rows, defer)
    else:
        for r in rows:
            pres[r].complete_into(X[r], defer)


def _timestamps_ns(h) -> list[int | None]:
    """A history's timestamps as ns since the epoch (None where unknown), as process_many converts them."""
    if h.timestamps is None:
        return [None] * len(h)
    ns = np.asarray(h.timestamps).astype("datetime64[ns]")
    ok = ~np.isnat(ns)
    return [int(t) if k else None for t, k in zip(ns.astype(np.int64).tolist(), ok.tolist(), strict=True)]


def _conflict(series: str, commit: str, first: float, now: float) -> None:
    """Warn that a known commit came again with another value (:class:`ConflictingRedelivery`).

    A warning, not an error: exactly-once stays (the stored decision is
    returned), and the rest of the batch is decided; ``triage watch`` prints
    it as a line on stderr.
    """
    warnings.warn(ConflictingRedelivery(series, commit, first, now), stacklevel=4)


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------------- replay over processes

# The loop settings of the running replay (and its loaded loop): set in each
# worker process by its initializer.
_SHARED: dict[str, Any] = {}


def replay_in_processes(
    model: str | Path,
    dataset,
    *,
    jobs: int = 2,
    parts: Sequence[tuple[int, int]] | None = None,
    loop_kwargs: dict[str, object] | None = None,
    replay_kwargs: dict[str, object] | None = None,
    on_part=None,
    workers: str = "auto",
) -> list[tuple]:
    """:meth:`OnlineTriage.replay` with the series partitioned over ``jobs`` workers (threads or processes).

    Series are independent, so each worker loads the model once and
    replays whole parts of the dataset (:func:`replay_parts`: each part is
    sent to a worker): ``parts`` are half-open ranges of series positions
    (default: about 8 per job). Returns tuples of :data:`FOUND_COLUMNS`
    (series, commit, index, probability, before, after, change_pct, change_kind) of the change points found, in series order then commit
    order; ``on_part(n_series)`` is called as each part completes (a progress
    bar). ``jobs=1`` runs in this process; ``workers``: see :func:`replay_parts`.
    """
    n = len(dataset)
    if parts is None:
        step = max(1, -(-n // (8 * max(jobs, 1))))
        parts = [(a, min(a + step, n)) for a in range(0, n, step)]
    ids = dataset.series_ids
    return replay_parts(
        model,
        (dataset.subset(ids[a:b]) for a, b in parts),
        jobs=jobs,
        loop_kwargs=loop_kwargs,
        replay_kwargs=replay_kwargs,
        on_part=None if on_part is None else (lambda part: on_part(len(part))),
        workers=workers,
    )


# ---------------------------------------------------------------------- replay of a stream of parts


def _init_worker(model: Path, loop_kwargs: dict, replay_kwargs: dict) -> None:
    # Ctrl-C reaches the whole process group: the parent stops the pool; each worker printed a
    # KeyboardInterrupt traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _SHARED.clear()
    _SHARED.update(model=model, loop_kwargs=loop_kwargs, replay_kwargs=replay_kwargs)


def _replay_dataset(dataset) -> list[tuple]:
    """One part of :func:`replay_parts` in a worker: its loop is loaded once per process."""
    loop = _SHARED.get("loop")
    if loop is None:
        loop = OnlineTriage.from_model_dir(_SHARED["model"], **_SHARED["loop_kwargs"])
        _SHARED["loop"] = loop
    return _found_tuples(loop.replay(dataset, keep_states=False, **_SHARED["replay_kwargs"]), dataset)


#: How :func:`replay_parts` runs its ``jobs``: threads of this process (one
#: model in memory, the compiled kernels release the GIL), spawned processes
#: (one interpreter, its imports and its model each), or ``auto`` (the
#: default): threads when the model's probabilities are compiled (a forest,
#: XGBoost), processes when they come from the library's ``predict_proba``,
#: which holds the GIL (an SVM: 25 s wall with threads against 16.5 s with
#: processes on the real histories, BENCHMARKS.md).
WORKERS = ("auto", "threads", "processes")


def replay_parts(
    model: str | Path,
    parts: Iterable,
    *,
    jobs: int = 2,
    loop_kwargs: dict[str, object] | None = None,
    replay_kwargs: dict[str, object] | None = None,
    on_part=None,
    workers: str = "auto",
) -> list[tuple]:
    """:func:`replay_in_processes` over datasets that arrive one part at a time (a file read in chunks).

    Each part (a :class:`~triage.core.history.Dataset` of whole series) is
    replayed by one of ``jobs`` workers; at most ``jobs`` parts (threads) or
    ``2 * jobs`` parts (processes) are read ahead of the results, so memory
    holds a few parts, not the whole input (a replay of 2.16 M commits held
    2 GB loaded at once). ``workers`` (:data:`WORKERS`; ``"auto"``, the
    default, picks threads for a compiled model and processes otherwise):
    ``"threads"`` replays in threads of this process, each with its own loop
    over one shared classifier: a lean replay spends most of its time in
    compiled round kernels that release the GIL, so the threads use the
    cores while the process holds the interpreter, its libraries, the model
    and the parts once (the ``default`` preset's replay: one process of
    about 425-496 MB against three of 1.1-1.2 GB together, BENCHMARKS.md);
    ``"processes"`` spawns ``jobs`` processes, each loading the model.
    ``replay_kwargs`` go to :meth:`OnlineTriage.replay` (``screen=False``:
    every row in full). The parts iterator runs in the calling thread, so
    an error it raises (a bad row) stops the replay. Returns what
    :func:`replay_in_processes` returns, in part order; ``on_part(dataset)``
    is called as each part completes.
    """
    import multiprocessing
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    if workers not in WORKERS:
        raise ValueError(f"workers must be one of {', '.join(WORKERS)}, got {workers!r}")
    settings: tuple[Path, dict[str, Any], dict[str, Any]] = (
        Path(model), {"explain": "none", **(loop_kwargs or {})}, dict(replay_kwargs or {})
    )
    out: list[tuple] = []

    def drain(waiting: deque, keep: int) -> None:
        while len(waiting) > keep or (waiting and waiting[0][1].ready()):
            done, result = waiting.popleft()
            out.extend(result.get())
            if on_part is not None:
                on_part(done)

    try:
        if jobs <= 1:
            # In the caller's own thread: no worker set-up, so Ctrl-C still stops it (the
            # initializer ignores SIGINT for pool workers) and nothing is left in _SHARED.
            loop = OnlineTriage.from_model_dir(settings[0], **settings[1])
            for part in parts:
                out.extend(_found_tuples(loop.replay(part, keep_states=False, **settings[2]), part))
                if on_part is not None:
                    on_part(part)
            return out
        waiting: deque = deque()
        first = None if workers == "processes" else OnlineTriage.from_model_dir(settings[0], **settings[1])
        if first is not None and (workers == "threads" or first.compiled):
            # One model in memory: the threads' loops share its classifier (a
            # loop reads it only when built; each compiles its own predictor),
            # and a loop is handed to one thread at a time.
            template: OnlineTriage = first
            idle: queue.SimpleQueue = queue.SimpleQueue()
            idle.put(first)

            def replay(part) -> list[tuple]:
                try:
                    loop = idle.get_nowait()
                except queue.Empty:
                    loop = OnlineTriage(template.classifier, model_id=template.model_id, **settings[1])
                try:
                    return _found_tuples(loop.replay(part, keep_states=False, **settings[2]), part)
                finally:
                    idle.put(loop)

            pool = ThreadPoolExecutor(jobs, thread_name_prefix="triage-replay")
            try:
                for part in parts:
                    waiting.append((part, _Done(pool.submit(replay, part))))
                    # At most one part submitted per thread: this thread reads
                    # a part in a fraction of the time a worker replays one,
                    # and every part read ahead is memory held.
                    drain(waiting, jobs)
                drain(waiting, 0)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            return out
        first = None  # "auto" with a model whose predict_proba holds the GIL: processes, each loading it
        # Spawned, not forked: a process that has run XGBoost holds a GNU
        # OpenMP thread pool, and a child forked from it hangs in its first
        # OpenMP call (seen: `triage detect --jobs 2` with an XGBoost model
        # never finished). Parts travel pickled either way.
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(jobs, initializer=_init_worker, initargs=settings) as procs:
            for part in parts:
                waiting.append((part, procs.apply_async(_replay_dataset, (part,))))
                drain(waiting, 2 * jobs)
            drain(waiting, 0)
        return out
    finally:
        _SHARED.clear()


class _Done:
    """A thread's future with a multiprocessing result's ``ready`` / ``get``."""

    def __init__(self, future):
        self.future = future

    def ready(self) -> bool:
        return self.future.done()

    def get(self):
        return self.future.result()


#: The columns of a replay's change points (:func:`replay_parts`; ``triage detect``'s output):
#: ``before`` / ``after`` / ``change_pct`` are the alarm's levels (:func:`alarm_levels`),
#: ``change_kind`` regression / improvement by the series' direction (change when unknown).
FOUND_COLUMNS = ("series_id", "commit", "index", "probability", "before", "after", "change_pct", "change_kind")


def _found_tuples(found, dataset) -> list[tuple]:
    out: list[tuple] = []
    for d in found:
        if d.levels is None:
            out.append((d.series, d.commit, d.index, d.probability, None, None, None, None))
        else:
            before, after, noise = d.levels
            kind = change_kind(before, after, dataset[d.series].higher_is_better)
            out.append((d.series, d.commit, d.index, d.probability, before, after, change_pct(before, after, noise),
                        kind))
    return out
