"""Pre's features recomputed from scratch: the reference twins of the incremental state.

:class:`RecomputedPre` is the second implementation of
:class:`triage.features.pre_state.PreWindowState`: it keeps Pre's values and
computes the catalogue characteristics (:mod:`triage.features.fast`) from
scratch on demand, exact on all of Pre (no horizon), memory and time O(len
Pre) per commit. It is the slow, obviously correct twin of
:class:`triage.features.incremental.PreState` in the online loop's tests.

:func:`batch_features` is what ``PreState.features_one`` must return, stated in
batch: the reference of the equivalence tests (exact characteristics on all of
Pre, bounded ones on its last ``horizon`` values).

Both assemble their row with :func:`triage.features.row.feature_row`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from triage.features import catalogue
from triage.features.fast import window_characteristics
from triage.features.incremental import (
    BOUNDED,
    DEFAULT_HORIZON,
    checked_value,
    online_pair_features,
)
from triage.features.row import feature_row, layout_for

#: True at the positions of the characteristics PreState bounds to its horizon.
_IS_BOUNDED = np.array([name in BOUNDED for name in catalogue.CHARACTERISTICS])


class RecomputedPre:
    """Pre's values, with the characteristics recomputed from scratch on demand.

    Implements :class:`triage.features.pre_state.PreWindowState`.

    Parameters
    ----------
    names : feature columns (or characteristics, see
        :func:`triage.features.row.resolve_names`) to return, in order
        (default: every column)
    series_id : str
    values : Pre's values to start from
    """

    def __init__(
        self,
        names: Sequence[str] | None = None,
        *,
        series_id: str = "",
        values: Iterable[float] = (),
    ):
        self._layout = layout_for(names)
        self.names = list(self._layout.columns)
        self.series_id = series_id
        self.values: list[float] = [float(v) for v in values]
        self._pre: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.values)

    def learn_one(self, x: float) -> RecomputedPre:
        """Append one value (float) to Pre."""
        # NaN and 1e300 were taken (PreState refuses them) and made every later row NaN.
        self.values.append(checked_value(x, self.series_id, len(self.values)))
        self._pre = None
        return self

    def tail(self, k: int) -> np.ndarray:
        """Pre's last ``min(n, k)`` values, oldest first."""
        return np.asarray(self.values[max(0, len(self.values) - int(k)) :], dtype=np.float64)

    def flat_value(self) -> float | None:
        """Pre's one value when Pre is not empty and every value in it is equal, else None."""
        if not self.values:
            return None
        first = self.values[0]
        return first if all(v == first for v in self.values) else None

    def reset(self) -> RecomputedPre:
        """Empty Pre (a change point was found)."""
        self.values.clear()
        self._pre = None
        return self

    def features_array(self, x_new: float | np.ndarray) -> np.ndarray:
        """Features of (Pre, After), shape (len(names),), in ``names`` order.

        ``x_new``: After, one value (window 0) or an array (a confirmation delay).
        """
        layout = self._layout
        pre = np.asarray(self.values, dtype=np.float64)
        after = np.asarray(x_new, dtype=np.float64).reshape(-1)
        for value in after:
            checked_value(value, self.series_id, len(self.values))
        if layout.needs_pre and self._pre is None:
            self._pre = window_characteristics(pre)
        return feature_row(
            layout,
            self._pre,
            window_characteristics(after) if layout.needs_after else None,
            catalogue.normalised_moments(pre, after) if layout.needs_norm else None,
            pair=online_pair_features(pre, after) if layout.needs_pair else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "recomputed",
            "names": self.names,
            "series_id": self.series_id,
            "values": list(self.values),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecomputedPre:
        return cls(data["names"], series_id=data.get("series_id", ""), values=data["values"])

    def __repr__(self) -> str:
        return f"RecomputedPre(series_id={self.series_id!r}, n={self.n}, columns={len(self.names)})"


def batch_features(
    pre: Sequence[float] | np.ndarray,
    x_new: float,
    names: Iterable[str] | None = None,
    horizon: int = DEFAULT_HORIZON,
) -> dict[str, float]:
    """What ``PreState.features_one`` must return, from :mod:`triage.features.fast` in batch.

    The reference of the equivalence tests and a readable statement of the
    contract: exact characteristics on all of ``pre``, bounded ones on its last
    ``horizon`` values, After = ``[x_new]``.
    """
    pre = np.asarray(pre, dtype=np.float64)
    after = np.array([float(x_new)])
    layout = layout_for(names)
    full = window_characteristics(pre)
    bounded = window_characteristics(pre[-horizon:]) if len(pre) > horizon else full
    row = feature_row(
        layout,
        np.where(_IS_BOUNDED, bounded, full),
        window_characteristics(after),
        catalogue.normalised_moments(pre, after),
        pair=online_pair_features(pre, after) if layout.needs_pair else None,
    )
    return dict(zip(layout.columns, row.tolist(), strict=True))
