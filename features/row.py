"""One feature row, assembled from per-window characteristics: the only assembler.

A feature row (the feature-matrix contract in ARCHITECTURE.md) holds
``pre_<name>`` and ``after_<name>`` columns, the characteristics of
:data:`triage.features.catalogue.CHARACTERISTICS` of the Pre and After
windows, ``norm_*`` columns, the pair characteristics of
:func:`triage.features.catalogue.normalised_moments`, and optionally the
scale-free level-shift measures ``pair_*`` of
:func:`triage.features.level_shift.pair_features`. Every producer of rows
computes those vectors its own way (in batch, incrementally, from scratch)
and hands them to :func:`feature_row`, which places them:

* :mod:`triage.features.extract` (the feature matrix, one row per candidate);
* :class:`triage.features.incremental.PreState` (online, Pre updated per commit);
* :class:`triage.features.recomputed.RecomputedPre` and
  :func:`triage.features.recomputed.batch_features` (from scratch).

:class:`RowLayout` resolves the columns once (which position of which vector
goes where), so assembling a row is at most four indexed copies (Pre,
After, the norm pair, the ``pair_*`` measures).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from triage.features import catalogue
from triage.features.level_shift import PAIR_COLUMNS


class RowLayout:
    """Where each column of a feature row comes from.

    Parameters
    ----------
    columns : sequence of str
        Feature columns (``pre_<name>``, ``after_<name>``, ``norm_*``,
        ``pair_*``), in the order of the row; any order, no metadata columns.

    Attributes
    ----------
    columns : list of str
    characteristics : tuple of str
        Per-window then pair characteristics the columns need, in catalogue order.
    width : int
        Length of a row.
    """

    def __init__(self, columns: Sequence[str]):
        self.columns = list(columns)
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"feature columns repeat: {self.columns!r}")
        pre: list[tuple[int, int]] = []
        after: list[tuple[int, int]] = []
        norm: list[tuple[int, int]] = []
        pair: list[tuple[int, int]] = []
        chars: list[str] = []
        for pos, col in enumerate(self.columns):
            if col in PAIR_COLUMNS:
                pair.append((pos, PAIR_COLUMNS.index(col)))
            elif col in catalogue.NORM_COLUMNS:
                norm.append((pos, catalogue.NORM_COLUMNS.index(col)))
                chars.append(col.rsplit("_", 1)[0])
            elif col.startswith("pre_") and col[4:] in catalogue.INDEX:
                pre.append((pos, catalogue.INDEX[col[4:]]))
                chars.append(col[4:])
            elif col.startswith("after_") and col[6:] in catalogue.INDEX:
                after.append((pos, catalogue.INDEX[col[6:]]))
                chars.append(col[6:])
            else:
                raise ValueError(f"unknown feature column {col!r}")
        window_names, pair_names = catalogue.check_names(chars) if chars else ((), ())
        self.characteristics: tuple[str, ...] = window_names + pair_names
        self.width = len(self.columns)
        self.pair_pos, self.pair_index = _split(pair)
        self.pre_pos, self.pre_index = _split(pre)
        self.after_pos, self.after_index = _split(after)
        self.norm_pos, self.norm_index = _split(norm)

    @property
    def needs_pre(self) -> bool:
        """True when the row has ``pre_*`` columns (Pre's characteristics are needed)."""
        return self.pre_pos.size > 0

    @property
    def needs_after(self) -> bool:
        """True when the row has ``after_*`` columns."""
        return self.after_pos.size > 0

    @property
    def needs_norm(self) -> bool:
        """True when the row has ``norm_*`` columns (the pair characteristics are needed)."""
        return self.norm_pos.size > 0

    @property
    def needs_pair(self) -> bool:
        """True when the row has ``pair_*`` columns (:mod:`triage.features.level_shift`)."""
        return self.pair_pos.size > 0

    def __repr__(self) -> str:
        return f"RowLayout({self.columns!r})"


def _split(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    positions = np.array([p for p, _ in pairs], dtype=np.int64)
    sources = np.array([s for _, s in pairs], dtype=np.int64)
    return positions, sources


def feature_row(
    layout: RowLayout,
    pre: np.ndarray | None,
    after: np.ndarray | None,
    norm: np.ndarray | None,
    out: np.ndarray | None = None,
    pair: np.ndarray | None = None,
) -> np.ndarray:
    """The feature row of one (Pre, After) pair, in ``layout.columns`` order.

    Parameters
    ----------
    layout : RowLayout
    pre, after : ndarray of float64, shape (len(catalogue.CHARACTERISTICS),), or None
        Characteristics of Pre and of After in catalogue order (e.g.
        :func:`triage.features.fast.window_characteristics`); None is allowed
        when the layout has no ``pre_*`` (``after_*``) column.
    norm : ndarray of float64, shape (4,), or None
        :func:`triage.features.catalogue.normalised_moments` of the pair, in
        :data:`~triage.features.catalogue.NORM_COLUMNS` order; None is allowed
        when the layout has no ``norm_*`` column.
    out : ndarray of float64, shape (layout.width,), optional
        Written in place and returned.
    pair : ndarray of float64, shape (len(level_shift.PAIR_COLUMNS),), or None
        :func:`triage.features.level_shift.pair_features` of the pair; None
        is allowed when the layout has no ``pair_*`` column.

    Returns
    -------
    ndarray of float64, shape (layout.width,)
    """
    row = np.empty(layout.width) if out is None else out
    if layout.pre_pos.size:
        assert pre is not None, "the layout has pre_* columns"
        row[layout.pre_pos] = pre[layout.pre_index]
    if layout.after_pos.size:
        assert after is not None, "the layout has after_* columns"
        row[layout.after_pos] = after[layout.after_index]
    if layout.norm_pos.size:
        assert norm is not None, "the layout has norm_* columns"
        row[layout.norm_pos] = norm[layout.norm_index]
    if layout.pair_pos.size:
        assert pair is not None, "the layout has pair_* columns"
        row[layout.pair_pos] = pair[layout.pair_index]
    return row


def resolve_names(names: Iterable[str] | None) -> tuple[tuple[str, ...], list[str]]:
    """Characteristics to compute and output columns for ``names``.

    ``names`` mixes characteristic names (``"hurst"``, ``"norm_mean"``: all
    their columns) and feature columns (``"pre_hurst"``, ``"norm_sd_after"``,
    e.g. a feature set's ``names``); ``None`` = the whole catalogue.

    Returns
    -------
    (characteristics, columns)
        Characteristics in catalogue order; columns in catalogue column order
        when only characteristic names were given, else in the given order.
    """
    if names is None:
        return catalogue.CHARACTERISTICS + catalogue.PAIR_CHARACTERISTICS, catalogue.feature_columns(None)
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("no feature names requested")
    all_columns = set(catalogue.feature_columns(None))
    chars: list[str] = []
    columns: list[str] = []
    only_characteristics = True
    for name in names:
        if name in PAIR_COLUMNS:
            only_characteristics = False
            if name not in columns:
                columns.append(name)
        elif name in catalogue.INDEX or name in catalogue.PAIR_CHARACTERISTICS:
            chars.append(name)
            columns.extend(c for c in catalogue.feature_columns([name]) if c not in columns)
        elif name in all_columns:
            only_characteristics = False
            if name.startswith("norm_"):
                chars.append(name.rsplit("_", 1)[0])
            else:
                chars.append(name.split("_", 1)[1])
            if name not in columns:
                columns.append(name)
        else:
            raise ValueError(f"unknown characteristic or feature column {name!r}")
    window_names, pair_names = catalogue.check_names(chars) if chars else ((), ())
    if only_characteristics:
        columns = catalogue.feature_columns(chars)
    return window_names + pair_names, columns


def layout_for(names: Iterable[str] | None) -> RowLayout:
    """:class:`RowLayout` of the columns :func:`resolve_names` gives for ``names``."""
    return RowLayout(resolve_names(names)[1])
