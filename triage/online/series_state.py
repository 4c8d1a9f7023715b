"""Everything the online loop knows about one series between two commits: :class:`SeriesState`.

The Pre window inside it is any :class:`triage.features.pre_state.PreWindowState`;
serialised states name their implementation (``"kind": "recomputed"`` for
:class:`~triage.features.recomputed.RecomputedPre`, none for the default
:class:`~triage.features.incremental.PreState`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triage.features.incremental import PreState
from triage.features.pre_state import PreWindowState
from triage.features.recomputed import RecomputedPre


def pre_state_from_dict(data: dict[str, Any]) -> PreWindowState:
    """The Pre state a ``to_dict`` of either implementation saved."""
    if data.get("kind") == "recomputed":
        return RecomputedPre.from_dict(data)
    return PreState.from_dict(data)


@dataclass
class SeriesState:
    """Everything the loop knows about one series between two commits.

    n : commits seen (the next commit's index)
    last_cp : index of the last change point found, -1 when none
    last_commit : id of the latest commit, None before the first
    last_ts : its timestamp in ns since the epoch (UTC), None when not given
    last_probability, last_decision : the latest verdict (for re-delivery)
    n_change_points : change points found so far
    pre : the Pre state (``PreState`` or ``RecomputedPre``)
    """

    pre: PreWindowState
    n: int = 0
    last_cp: int = -1
    last_commit: str | None = None
    last_ts: int | None = None
    last_probability: float = 0.0
    last_decision: bool = False
    n_change_points: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "last_cp": self.last_cp,
            "last_commit": self.last_commit,
            "last_ts": self.last_ts,
            "last_probability": self.last_probability,
            "last_decision": self.last_decision,
            "n_change_points": self.n_change_points,
            "pre": self.pre.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SeriesState:
        return cls(
            pre=pre_state_from_dict(data["pre"]),
            n=int(data["n"]),
            last_cp=int(data["last_cp"]),
            last_commit=data["last_commit"],
            last_ts=data["last_ts"],
            last_probability=float(data["last_probability"]),
            last_decision=bool(data["last_decision"]),
            n_change_points=int(data.get("n_change_points", 0)),
        )
