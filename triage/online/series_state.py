"""Everything the online loop knows about one series between two commits: :class:`SeriesState`.

The Pre window inside it is any :class:`triage.features.pre_state.PreWindowState`;
serialised states name their implementation (``"kind": "recomputed"`` for
:class:`~triage.features.recomputed.RecomputedPre`, none for the default
:class:`~triage.features.incremental.PreState`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
class Alarm:
    """An alarm awaiting its re-check (:mod:`triage.online.loop`).

    index, commit : the alarm's commit
    probability : the model's P(true alert) for it
    last_cp : the last change point before it (restored when withdrawn)
    pre : the Pre state just before it (restored when withdrawn, the
        commits since then learned into it)
    after : values from the alarm's commit on, as they arrive
    median, scale : Pre's median and robust scale (1.4826 MAD) when it was raised
    """

    index: int
    commit: str
    probability: float
    last_cp: int
    pre: PreWindowState
    after: list[float]
    median: float
    scale: float

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "commit": self.commit,
            "probability": self.probability,
            "last_cp": self.last_cp,
            "pre": self.pre.to_dict(),
            "after": list(self.after),
            "median": self.median,
            "scale": self.scale,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Alarm:
        return cls(
            index=int(data["index"]),
            commit=str(data["commit"]),
            probability=float(data["probability"]),
            last_cp=int(data["last_cp"]),
            pre=pre_state_from_dict(data["pre"]),
            after=[float(v) for v in data["after"]],
            median=float(data["median"]),
            scale=float(data["scale"]),
        )


@dataclass
class SeriesState:
    """Everything the loop knows about one series between two commits.

    n : commits received (the next commit's index)
    last_cp : index of the last change point found, -1 when none
    last_commit : id of the latest commit, None before the first
    last_ts : its timestamp in ns since the epoch (UTC), None when not given
    last_value : its value, None in states saved before it was kept (to tell a
        re-delivery with another value)
    last_output : what the latest arrival produced (``Decision`` fields as a
        dict, None when it only joined the pending commits), for re-delivery
    n_change_points : change points found so far (withdrawn ones not counted)
    pre : the Pre state (``PreState`` or ``RecomputedPre``) of the next
        commit to decide
    pending : ``[commit, value]`` of the commits received but not decided yet
        (at most the confirmation delay K; the oldest is decided when the
        K-th after it arrives)
    alarm : the latest alarm while it awaits its re-check, else None
    """

    pre: PreWindowState
    n: int = 0
    last_cp: int = -1
    last_commit: str | None = None
    last_ts: int | None = None
    last_value: float | None = None
    last_output: dict[str, Any] | None = None
    n_change_points: int = 0
    pending: list[list[Any]] = field(default_factory=list)
    alarm: Alarm | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "last_cp": self.last_cp,
            "last_commit": self.last_commit,
            "last_ts": self.last_ts,
            "last_value": self.last_value,
            "last_output": self.last_output,
            "n_change_points": self.n_change_points,
            "pre": self.pre.to_dict(),
            "pending": [list(p) for p in self.pending],
            "alarm": None if self.alarm is None else self.alarm.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SeriesState:
        alarm = data.get("alarm")
        return cls(
            pre=pre_state_from_dict(data["pre"]),
            n=int(data["n"]),
            last_cp=int(data["last_cp"]),
            last_commit=data["last_commit"],
            last_ts=data["last_ts"],
            last_value=data.get("last_value"),
            last_output=data.get("last_output"),
            n_change_points=int(data.get("n_change_points", 0)),
            pending=[[str(c), float(v)] for c, v in data.get("pending", [])],
            alarm=None if alarm is None else Alarm.from_dict(alarm),
        )
