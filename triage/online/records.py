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


class RejectedCommit(ValueError):
    """A commit the loop refuses: non-finite value, timestamp going backwards, bad ids.

    Nothing changed when this is raised. ``series`` and ``commit`` name it.
    """

    def __init__(self, series: str, commit: str, problem: str):
        self.series = series
        self.commit = commit
        self.problem = problem
        super().__init__(f"series {series!r}, commit {commit!r}: {problem}")


class ModelMismatch(InputError):
    """The model cannot drive the online loop, or is not the one a state store was built with."""

    def __init__(self, source: str | Path | None, problem: str):
        super().__init__(source, None, problem)


class AlreadyDecided(Exception):
    """``StateStore.commit`` found a decision for a commit already stored; nothing was written."""


@dataclass
class Decision:
    """The loop's verdict on one commit.

    ``index`` is the commit's 0-based position in its series as the loop saw
    it; ``probability`` is P(true alert) in [0, 1]; ``decision`` is True for a
    change point; ``top_features`` holds up to three plain-words reasons
    (empty when not explained, see :mod:`triage.online.loop`); ``replayed`` is
    True when the commit had been decided before and this is the stored
    verdict.
    """

    series: str
    commit: str
    index: int
    probability: float
    decision: bool
    top_features: list[str] = field(default_factory=list)
    replayed: bool = False

    def to_dict(self) -> dict[str, object]:
        """The JSON-line form: series, commit, probability, decision, top_features (+ replayed)."""
        out: dict[str, object] = {
            "series": self.series,
            "commit": self.commit,
            "probability": self.probability,
            "decision": self.decision,
            "top_features": list(self.top_features),
        }
        if self.replayed:
            out["replayed"] = True
        return out
