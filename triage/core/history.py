"""The data model: a performance history per benchmark series, and a dataset of them.

A :class:`History` is one series (one test / metric on one platform): commits in
order, one aggregated value per commit, an optional timestamp, and an optional
triage label per commit (empty = no detector candidate there). Synthetic data
also carries its ground truth: which commits start a real change, and what a
human would have said about each candidate (``truth_label``), so that even its
``not_triaged`` candidates can be scored.

Arrays are positional: index ``i`` of every array is the ``i``-th commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from triage.core import labels as L

#: Columns of the long layout, in file order. The first four are required
#: except ``timestamp``; the rest are optional.
LONG_COLUMNS: tuple[str, ...] = (
    "series_id",
    "commit",
    "timestamp",
    "value",
    "label",
    "true_change",
    "truth_label",
)
REQUIRED_COLUMNS: tuple[str, ...] = ("series_id", "commit", "value")


@dataclass(eq=False)
class History:
    """One benchmark series.

    Attributes
    ----------
    series_id : str
    commits : ndarray of str, shape (n,)
        Commit ids, unique within the series, in history order.
    values : ndarray of float64, shape (n,)
        One finite value per commit (several measurements already aggregated).
    labels : ndarray of str, shape (n,)
        Canonical triage labels (see :mod:`triage.core.labels`); ``""`` = not a candidate.
    timestamps : ndarray of datetime64[ns], shape (n,), or None
    true_change : ndarray of bool, shape (n,), or None
        Ground truth (synthetic data): True where a real change starts.
    truth_label : ndarray of str, shape (n,), or None
        Ground truth (synthetic data): the label a human would give each
        candidate (``true_positive`` / ``false_positive``), ``""`` elsewhere.
    n_measurements : ndarray of int, shape (n,), or None
        How many raw measurements were aggregated into each value.
    """

    series_id: str
    commits: np.ndarray
    values: np.ndarray
    labels: np.ndarray
    timestamps: np.ndarray | None = None
    true_change: np.ndarray | None = None
    truth_label: np.ndarray | None = None
    n_measurements: np.ndarray | None = None
    _index: dict[str, int] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.commits = np.asarray(self.commits, dtype=object).astype(str).astype(object)
        self.values = np.asarray(self.values, dtype=np.float64)
        n = len(self.commits)
        if self.labels is None:
            self.labels = np.full(n, L.NONE, dtype=object)
        self.labels = np.asarray(self.labels, dtype=object)
        for name in ("values", "labels", "timestamps", "true_change", "truth_label", "n_measurements"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"series {self.series_id!r}: {name} has {len(arr)} entries, commits {n}")

    def __len__(self) -> int:
        return len(self.commits)

    def index_of(self, commit: str) -> int:
        """Position of a commit id; ``KeyError`` when the series has no such commit."""
        if self._index is None:
            self._index = {c: i for i, c in enumerate(self.commits)}
        return self._index[str(commit)]

    def candidates(self) -> np.ndarray:
        """Indices of all detector candidates (any non-empty label), shape (k,)."""
        return np.flatnonzero(self.labels != L.NONE)

    def indices_with(self, wanted: Iterable[str]) -> np.ndarray:
        """Indices whose label is in ``wanted``, ascending."""
        wanted = set(wanted)
        return np.flatnonzero([lab in wanted for lab in self.labels])

    def confirmed(self) -> np.ndarray:
        """Indices of confirmed change points (``true_positive``), ascending."""
        return np.flatnonzero(self.labels == L.TRUE_POSITIVE)

    def true_change_points(self) -> np.ndarray:
        """Ground-truth change indices (synthetic data); empty when unknown."""
        if self.true_change is None:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(self.true_change)

    def to_frame(self) -> pd.DataFrame:
        """This series in the long layout (one row per commit)."""
        data: dict[str, object] = {
            "series_id": self.series_id,
            "commit": self.commits,
            "timestamp": self.timestamps if self.timestamps is not None else pd.NaT,
            "value": self.values,
            "label": self.labels,
        }
        if self.true_change is not None:
            data["true_change"] = self.true_change.astype(np.int8)
        if self.truth_label is not None:
            data["truth_label"] = self.truth_label
        return pd.DataFrame(data)


class Dataset:
    """An ordered collection of histories, keyed by series id."""

    def __init__(self, histories: Iterable[History] = (), source: str | None = None):
        self._series: dict[str, History] = {}
        self.source = source
        for h in histories:
            if h.series_id in self._series:
                raise ValueError(f"duplicate series id {h.series_id!r}")
            self._series[h.series_id] = h

    def __iter__(self) -> Iterator[History]:
        return iter(self._series.values())

    def __len__(self) -> int:
        return len(self._series)

    def __getitem__(self, series_id: str) -> History:
        try:
            return self._series[series_id]
        except KeyError:
            where = f" in {self.source}" if self.source else ""
            raise KeyError(f"unknown series {series_id!r}{where}") from None

    def __contains__(self, series_id: object) -> bool:
        return series_id in self._series

    @property
    def series_ids(self) -> list[str]:
        return list(self._series)

    def n_commits(self) -> int:
        return sum(len(h) for h in self)

    def label_counts(self) -> dict[str, int]:
        """Number of candidates per canonical label (empty label excluded)."""
        counts = {label: 0 for label in L.CANONICAL if label}
        for h in self:
            lab, cnt = np.unique(h.labels[h.labels != L.NONE], return_counts=True)
            for k, v in zip(lab, cnt, strict=True):
                counts[str(k)] = counts.get(str(k), 0) + int(v)
        return counts

    def to_frame(self) -> pd.DataFrame:
        """The whole dataset in the long layout."""
        frames = [h.to_frame() for h in self]
        if not frames:
            return pd.DataFrame(columns=list(LONG_COLUMNS[:5]))
        return pd.concat(frames, ignore_index=True)

    def subset(self, series_ids: Iterable[str]) -> Dataset:
        return Dataset((self[s] for s in series_ids), source=self.source)
