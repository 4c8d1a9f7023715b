"""The one interface of the online Pre state: :class:`PreWindowState`.

The online loop (:mod:`triage.online.loop`, Algorithm 1 of Bauer et al., ICPE
2022) keeps one Pre state per series: the commits since the last change point
it found, summarised well enough to give the window-0 features of (Pre, new
commit). Every commit goes through exactly one of ``learn_one`` (the commit
joins Pre) or ``reset`` (it is a change point: Pre restarts empty after it).

Implementations:

* :class:`triage.features.incremental.PreState` -- running summaries, O(1)
  (O(log n) for ``hurst``) per commit, some characteristics bounded to the
  last ``horizon`` commits; the loop's default;
* :class:`triage.features.recomputed.RecomputedPre` -- keeps Pre's values
  and recomputes every characteristic from scratch, exact, O(len Pre) per
  commit; the slow, obviously correct twin.

Both are built as ``cls(names, series_id=...)`` with ``names`` the feature
columns to return (``None`` = every column), and both assemble their row with
:func:`triage.features.row.feature_row`.
"""

from __future__ import annotations

from typing import Any, Protocol, Self, runtime_checkable

import numpy as np


@runtime_checkable
class PreWindowState(Protocol):
    """What the online loop needs of one series' Pre window."""

    @property
    def n(self) -> int:
        """Commits in Pre."""
        ...

    def learn_one(self, x: float) -> Self:
        """Append one commit's value to Pre."""
        ...

    def reset(self) -> Self:
        """Empty Pre: the commit just described is a change point."""
        ...

    def features_array(self, x_new: float | np.ndarray) -> np.ndarray:
        """Features of (Pre, After), shape (len(columns),), in the state's column order.

        After is ``[x_new]`` for one value (window 0) or the given values (a
        confirmation delay of K commits: the candidate and the K after it).
        Pre is not changed.
        """
        ...

    def tail(self, k: int) -> np.ndarray:
        """Pre's last values (at most ``k``; the incremental state keeps a bounded ring), oldest first."""
        ...

    def flat_value(self) -> float | None:
        """Pre's one value when Pre is not empty and every value in it is equal, else None (:mod:`triage.features.noise_free`)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable state; :meth:`from_dict` restores it exactly."""
        ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The state :meth:`to_dict` saved."""
        ...
