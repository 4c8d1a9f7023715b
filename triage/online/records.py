"""What the online loop hands out and refuses: decisions and the loop's errors.

:class:`Decision` is the loop's verdict on one commit; the state store
(:mod:`triage.online.state_store`) persists it and the loop
(:mod:`triage.online.loop`) returns it. Both import it from here, so neither
imports the other. :class:`AlreadyDecided` is the store's signal to the loop
that a commit of a batch had been decided before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from triage.core.errors import InputError
from triage.steps import change_pct


class RejectedCommit(ValueError):
    """A commit the loop refuses: non-finite value, timestamp going backwards, bad ids.

    Nothing changed when this is raised. ``series`` and ``commit`` name it.
    """

    def __init__(self, series: str, commit: str, problem: str):
        self.series = series
        self.commit = commit
        self.problem = problem
        super().__init__(f"series {series!r}, commit {commit!r}: {problem}")


class LateCommit(RejectedCommit):
    """A new commit whose timestamp is older than its series' latest: its place in the series is passed.

    Not a garbled stream but one late result (builds finishing out of order),
    so ``triage watch`` skips it with a warning rather than stopping every series.
    """


class MissingValue(RejectedCommit):
    """A commit whose value is missing (JSON null, an empty cell) or not finite (NaN, Infinity).

    A failed benchmark run reports so: one result missing, not a garbled
    stream, so ``triage watch`` skips the commit with a warning (send it again
    once it is measured) rather than stopping every series, and a restart on
    the same feed stopping at this line again.
    """


class ModelMismatch(InputError):
    """The model cannot drive the online loop, or is not the one a state store was built with."""

    def __init__(self, source: str | Path | None, problem: str):
        super().__init__(source, None, problem)


class AlertsOnlyModel(UserWarning):
    """A fixed-window model trained on alerts alone (``--ordinary-per-series 0``) run online.

    It never saw an ordinary commit, and the loop asks it about every one: on
    a walkthrough's history 7,164 change points against 197 for the same
    model trained with ordinary commits.
    """


class ConflictingRedelivery(UserWarning):
    """A commit re-sent with another value than the one it first came with; the first value stands.

    The loop decides each commit once (re-delivery after a restart must give
    the same answers), so the new value is not used: a producer that
    corrected a measurement this way would otherwise never learn it was
    ignored. ``series``, ``commit``, ``first`` (the value it first came with) and
    ``now`` (the value re-sent) name it.
    """

    def __init__(self, series: str, commit: str, first: float, now: float):
        self.series, self.commit, self.first, self.now = series, commit, first, now
        super().__init__(
            f"series {series!r}, commit {commit!r} re-sent with value {now!r}, but it first came with "
            f"{first!r}: the first value stands (a commit is decided once, on the value it came with); "
            "send a corrected measurement as a new commit"
        )


class AlreadyDecided(Exception):
    """``StateStore.commit`` found a decision for a commit already stored; nothing was written."""


@dataclass
class Withdrawal:
    """A re-check taking back an earlier alarm: the commits after it contradict a change.

    ``commit`` / ``index`` name the alarm's commit; ``decided_at`` is the
    commit whose arrival completed the re-check; ``score`` is the re-check's
    measure (robust shift of the commits since the alarm against Pre, in
    units of Pre's robust scale; see :mod:`triage.online.loop`).
    """

    series: str
    commit: str
    index: int
    decided_at: str
    score: float

    def to_dict(self) -> dict[str, object]:
        """The JSON-line form: its own record, ``"withdrawn": true``."""
        return {
            "series": self.series,
            "commit": self.commit,
            "withdrawn": True,
            "decided_at": self.decided_at,
            "score": self.score,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Withdrawal:
        return cls(
            str(data["series"]),
            str(data["commit"]),
            int(data["index"]),  # type: ignore[call-overload]
            str(data["decided_at"]),
            float(data["score"]),  # type: ignore[arg-type]
        )


@dataclass
class Decision:
    """The loop's verdict on one commit.

    ``index`` is the commit's 0-based position in its series as the loop saw
    it; ``probability`` is P(true alert) in [0, 1], None for a commit the
    stream rule held back without asking the model (fewer than ``min_pre``
    commits before it, or an alarm of its series awaiting its re-check: JSON
    ``null``); ``decision`` is True for a
    change point; ``top_features`` holds up to three plain-words reasons
    (empty when not explained, see :mod:`triage.online.loop`); ``replayed`` is
    True when the commit had been decided before and this is the stored
    verdict. With a confirmation delay of K commits the verdict on a commit is
    made when the K-th commit after it arrives: ``decided_at`` names that
    commit (None when K = 0, the commit itself). ``withdrawal`` is set when the
    same arrival also completed the re-check of an earlier alarm and took it
    back (:class:`Withdrawal`, its own output record). ``levels`` is set on
    an alarm: ``(before, after, noise)``, the level before the change (median
    of Pre's last :data:`~triage.online.loop.HOLD_BACK_PRE` values), after it
    (median of the commit and the K after it) and the robust sd (1.4826
    MAD) of those Pre values, in the series' own units; its output record gives the two
    levels and the signed change in per cent of ``before`` (:func:`change_pct`).
    """

    series: str
    commit: str
    index: int
    probability: float | None
    decision: bool
    top_features: list[str] = field(default_factory=list)
    replayed: bool = False
    decided_at: str | None = None
    withdrawal: Withdrawal | None = None
    levels: tuple[float, float, float] | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON-line form: series, commit, probability, decision, top_features (+ before, after, change_pct, decided_at, replayed)."""
        out: dict[str, object] = {
            "series": self.series,
            "commit": self.commit,
            "probability": self.probability,
            "decision": self.decision,
            "top_features": list(self.top_features),
        }
        if self.levels is not None:
            before, after, noise = self.levels
            out.update(before=before, after=after, change_pct=change_pct(before, after, noise))
        if self.decided_at is not None:
            out["decided_at"] = self.decided_at
        if self.replayed:
            out["replayed"] = True
        return out

    def records(self) -> list[dict[str, object]]:
        """Every output record of this arrival: the decision, then a withdrawal if any."""
        out = [self.to_dict()]
        if self.withdrawal is not None:
            w = self.withdrawal.to_dict()
            if self.replayed:
                w["replayed"] = True
            out.append(w)
        return out


def decision_to_dict(d: Decision) -> dict[str, object]:
    """Every field of a decision as plain JSON (the series' ``last_output``, the store's rows)."""
    out: dict[str, object] = {
        "commit": d.commit,
        "index": d.index,
        "probability": d.probability,
        "decision": d.decision,
        "top_features": list(d.top_features),
        "decided_at": d.decided_at,
        "withdrawal": None
        if d.withdrawal is None
        else {
            "commit": d.withdrawal.commit,
            "index": d.withdrawal.index,
            "decided_at": d.withdrawal.decided_at,
            "score": d.withdrawal.score,
        },
    }
    if d.levels is not None:  # an alarm's; absent from the rest, as from states saved before levels were kept
        out["levels"] = list(d.levels)
    return out


def decision_from_dict(series: str, data: dict[str, object] | None, *, replayed: bool = False) -> Decision | None:
    """The decision :func:`decision_to_dict` saved (None stays None: the arrival decided nothing)."""
    if data is None:
        return None
    w = data.get("withdrawal")
    levels = data.get("levels")
    return Decision(
        series,
        str(data["commit"]),
        int(data["index"]),  # type: ignore[call-overload]
        None if data["probability"] is None else float(data["probability"]),  # type: ignore[arg-type]
        bool(data["decision"]),
        [str(t) for t in data.get("top_features") or []],  # type: ignore[attr-defined]
        replayed,
        None if data.get("decided_at") is None else str(data["decided_at"]),
        None if not isinstance(w, dict) else Withdrawal.from_dict({**w, "series": series}),
        # Decisions stored before levels were kept have none.
        None if not isinstance(levels, list) else (float(levels[0]), float(levels[1]), float(levels[2])),
    )
