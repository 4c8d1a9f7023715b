"""Ensemble voting over several detectors (the Mozilla change-point study).

Each member detector runs on the series. Detections of different members
within ``margin`` commits of each other count as one *event*: events are
formed left to right, each starting at the earliest unassigned detection and
taking every detection at most ``margin`` commits after it (anchoring on the
first detection keeps an event from chaining along a slope). An event's
votes are the number of distinct members in it; it is flagged when at least
``min_votes`` members agree, and placed at the commit the most members
flagged (among ties, the one nearest the mean of the members' indices, a
member with several detections in one event contributing their mean): a
commit some member flagged, never one between them.

"Mozilla or Ensemble": members named in ``always`` vote yes on their own --
an event holding one of their detections is flagged whatever the votes, at
each of their detections in it (two of Mozilla's alerts a few commits apart
are both kept), so the result is the union of Mozilla's alerts and the
ensemble's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import ClassVar

import numpy as np

from triage.detectors.base import COUNT, NONNEG_INT, ChangePoint, Detector, Range


class Ensemble(Detector):
    """Vote of several detectors.

    Parameters
    ----------
    members : the voters: :class:`Detector` instances (their ``name`` labels
        their votes), or registry names when the ensemble has a
        :attr:`factory` (ensembles built by :func:`triage.detectors.make` do)
    margin : detections at most this many commits apart are one event (5)
    min_votes : members that must agree to flag an event (3)
    always : names of members whose detection alone flags an event (none)

    ``score`` is the number of votes; fields ``votes`` and ``methods``
    (the agreeing members' names joined by ``+``). After :meth:`fit`,
    ``member_change_points_`` maps each member name to its own detections.
    """

    name = "ensemble"
    ranges: ClassVar[dict[str, Range]] = {"margin": NONNEG_INT, "min_votes": COUNT}

    def __init__(
        self,
        members: Sequence[str | Detector] = ("perfherder", "hybrid_welch", "hybrid_ks", "edivisive", "cusum", "bocpd", "pelt", "binseg"),
        margin: int = 5,
        min_votes: int = 3,
        always: Sequence[str] = (),
    ):
        self.members = members
        self.margin = margin
        self.min_votes = min_votes
        self.always = always

    #: Builds a member from its registry name: :func:`triage.detectors.registry.make`,
    #: which the registry sets here once it is defined (importing :mod:`triage.detectors`
    #: imports the registry), so that ``Ensemble()`` and a clone from :meth:`get_params`
    #: resolve names as ``make("ensemble")`` does.
    factory: Callable[[str], Detector] | None = None

    def _member_names(self) -> list[str]:
        names = [m.name if isinstance(m, Detector) else str(m) for m in self.members]
        if len(set(names)) != len(names):
            raise ValueError(f"ensemble members must have distinct names, got {names}")
        unknown = set(self.always) - set(names)
        if unknown:
            raise ValueError(f"'always' names {sorted(unknown)} are not members ({', '.join(names)})")
        return names

    def _member_detectors(self) -> list[tuple[str, Detector]]:
        names = self._member_names()
        named = [str(m) for m in self.members if not isinstance(m, Detector)]
        if named and self.factory is None:
            raise ValueError(
                f"ensemble members {', '.join(map(repr, named))} are names, not detectors: build the ensemble "
                "with triage.detectors.make('ensemble', members=...), which resolves registry names"
            )
        return [
            (n, m if isinstance(m, Detector) else self.factory(str(m)))  # type: ignore[misc]
            for n, m in zip(names, self.members, strict=True)
        ]

    def check_params(self) -> None:
        """The ranges, and enough members to give ``min_votes`` (else no event could ever be flagged)."""
        super().check_params()  # margin >= 0, min_votes >= 1
        if not self.members:
            raise ValueError("an ensemble needs at least one member")
        if self.min_votes > len(self.members) and not self.always:
            # no event could ever gather the votes: 0 candidates that look like a quiet series
            raise ValueError(
                f"parameter min_votes={self.min_votes} of detector {self.name!r} is more than the "
                f"{len(self.members)} members can give"
            )

    def _find(self, x: np.ndarray) -> list[ChangePoint]:
        members = self._member_detectors()
        self.member_change_points_ = {name: det.detect(x) for name, det in members}
        detections = sorted(
            (cp.index, name) for name, cps in self.member_change_points_.items() for cp in cps
        )
        return vote(detections, self.margin, self.min_votes, set(self.always))


def vote(
    detections: Sequence[tuple[int, str]], margin: int, min_votes: int, always: AbstractSet[str] = frozenset()
) -> list[ChangePoint]:
    """Group ``(index, member)`` detections (sorted by index) into events and keep the agreed ones."""
    out: list[ChangePoint] = []
    k = 0
    while k < len(detections):
        anchor = detections[k][0]
        j = k
        while j < len(detections) and detections[j][0] - anchor <= margin:
            j += 1
        event = detections[k:j]
        k = j
        by_member: dict[str, list[int]] = {}
        for idx, name in event:
            by_member.setdefault(name, []).append(idx)
        votes = len(by_member)
        forced = [name for name in by_member if name in always]
        if votes < min_votes and not forced:
            continue
        fields = {"votes": votes, "methods": "+".join(sorted(by_member))}
        if forced:
            # Every alert of an `always` member stays (the union): two of Mozilla's alerts a few
            # commits apart fall into one event, and keeping only the first lost the other.
            for index in sorted({i for name in forced for i in by_member[name]}):
                out.append(ChangePoint(index, float(votes), dict(fields)))
            continue
        out.append(ChangePoint(_placed(by_member), float(votes), fields))
    return out


def _placed(by_member: dict[str, list[int]]) -> int:
    """The commit of an event: the one the most members flagged; among ties, the one nearest the mean
    of the members' positions (each member's mean), then the earlier.

    The mean alone named commits no member flagged: on the clearest step of the real histories
    (``rhai``'s ``bench_engine_new``, x3 at index 359) all eight members flagged 359, two also
    361 and 363, and the ensemble said 360 (a walkthrough, thirtieth session; 51 -> 52, 521 -> 522
    elsewhere). A sheriff bisecting from it starts one commit late.
    """
    flagged: dict[int, int] = {}
    for indices in by_member.values():
        for i in set(indices):
            flagged[i] = flagged.get(i, 0) + 1
    centre = float(np.mean([np.mean(v) for v in by_member.values()]))
    return min(flagged, key=lambda i: (-flagged[i], abs(i - centre), i))
