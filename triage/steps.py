"""The step at an alert: the levels either side of a commit, its signed size, regression or improvement.

A performance engineer's first question about an alert. One rule for every
output that sizes a change: the report's step column, the ``change_pct`` /
``change_kind`` columns of ``triage score`` and ``triage label``, and the
percentage of the workspace's reason (:mod:`triage.workspace.alerts`, which
takes wider windows, but this module's near-zero rule).

The levels are medians (a one-commit spike in a window must not size the
step; the model's reasons are worded with medians too) of up to ``window``
commits before the commit and from it on, neither side reaching over a
confirmed change point (``true_positive``) of the history: that step is
another alert's. Missing values (a failed run) are left out. The size is in
per cent of ``|before|``, signed as the values move, and not given (None)
when the level before is within its noise of 0 (a delta, a score around 0:
"+19196.9%" means nothing, the change itself does); the noise is robust
(1.4826 MAD of the commits before), as the levels are medians: one spike
among them had made a step from 1.2e-7 s to 1.8e-5 s "near 0". Whether a move is a
regression comes from the history (:meth:`History.change_kind`): "change"
when the data does not say which way is better.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from triage.core.history import FALSE_TEXT, TRUE_TEXT, Dataset, History
from triage.core.noise import robust_sd

#: Commits on each side of a candidate whose medians give the size of its step.
STEP_WINDOW = 10


def relative_change(before: float, after: float, noise: float) -> float | None:
    """``after`` against ``before`` in per cent of ``|before|``; None when ``before`` is within ``noise`` of 0."""
    if not before or abs(before) <= noise:
        return None
    return 100.0 * (after - before) / abs(before)


@dataclass(frozen=True)
class Step:
    """The change at one commit: medians ``before`` / ``after`` (series units), ``noise`` (robust sd of before), ``kind``."""

    before: float
    after: float
    noise: float
    kind: str  # "regression", "improvement", "change" (which way is better unknown) or "none" (medians equal)

    @property
    def pct(self) -> float | None:
        """Signed change in per cent of ``|before|`` (:func:`relative_change`)."""
        return relative_change(self.before, self.after, self.noise)


def step_at(history: History, index: int, window: int = STEP_WINDOW, *,
            confirmed: np.ndarray | None = None) -> Step | None:
    """The :class:`Step` at ``index`` of ``history``; None when one side has no value.

    ``confirmed``: ``history.confirmed()`` when the caller has it (read once
    per series, not once per alert: a scan of every label of the series each
    time made a report of 20,000 rows on a 100,000-commit series take 36 s).
    """
    if confirmed is None:
        confirmed = history.confirmed()
    earlier, later = confirmed[confirmed < index], confirmed[confirmed > index]
    start = max(0, index - window, int(earlier[-1]) if len(earlier) else 0)
    stop = min(index + window, int(later[0]) if len(later) else len(history.values))
    before = history.values[start:index]
    after = history.values[index:stop]
    before, after = before[np.isfinite(before)], after[np.isfinite(after)]
    if not len(before) or not len(after):
        return None
    b, a = float(np.median(before)), float(np.median(after))
    noise = robust_sd(before)
    kind = history.change_kind(b, a) if a != b else "none"
    return Step(b, a, noise, kind)


def describe(step: Step | None) -> str:
    """``regression +12.3%``, ``improvement -8.0%`` or ``change +5.0%``; ``""`` for no step.

    A change under 0.05 % gives its size and share (``regression +16
    (+3.2e-06%)``: 16 bytes on 5e8 read "+0.0%"); around a level within its
    noise of 0, the change alone (``change +5.2 (level near 0)``).
    """
    if step is None:
        return ""
    if step.kind == "none":
        return "no change"  # the medians are equal, as the tables say it
    b, a = step.before, step.after
    kind = step.kind
    pct = step.pct
    if pct is None:
        return f"{kind} {a - b:+.4g} (level near 0)" if a != b else kind
    if a != b and abs(pct) < 0.05:
        return f"{kind} {a - b:+.4g} ({pct:+.2g}%)"
    return f"{kind} {pct:+.1f}%"


def change_pct(before: float, after: float, noise: float = 0.0) -> float | None:
    """The ``change_pct`` every output writes: :func:`relative_change` to 4 significant digits.

    Four significant digits, not two decimals: a column to read, which keeps
    a change of 3.2e-06 % (16 bytes on 5e8). None within ``noise`` of 0.
    Signed as the values move: the online loop, which writes it too, is not
    told whether lower is better.
    """
    pct = relative_change(before, after, noise)
    return None if pct is None else float(f"{pct:.4g}")


def step_columns(dataset: Dataset, series, index) -> tuple[list[float | None], list[str]]:
    """``change_pct`` (4 significant digits, None where not given) and ``change_kind`` of each (series, index) row.

    ``change_kind`` is ``""`` where a side has no value (an alert at a
    series' first commit). The series' confirmed change points are read once.
    """
    confirmed: dict[str, np.ndarray] = {}
    pcts: list[float | None] = []
    kinds: list[str] = []
    for sid, i in zip(series, index, strict=True):
        sid = str(sid)
        history = dataset[sid]
        if sid not in confirmed:
            confirmed[sid] = history.confirmed()
        step = step_at(history, int(i), confirmed=confirmed[sid])
        pcts.append(None if step is None else change_pct(step.before, step.after, step.noise))
        kinds.append("" if step is None else step.kind)
    return pcts, kinds


#: The columns :func:`step_columns` gives ``triage score`` and ``triage label``.
STEP_COLUMNS: tuple[str, ...] = ("change_pct", "change_kind")


def cell_text(pct: object, kind: object) -> str:
    """A table cell from the two columns' cells, worded as :func:`describe` words a step.

    ``regression +12.3%``; ``regression +3.2e-06%`` (under 0.05 %);
    ``regression (level near 0)`` (no per cent: None, NaN or no number);
    ``no change`` (medians equal); ``""`` (no step: an empty or missing kind).
    """
    if not isinstance(kind, str) or not kind:
        return ""
    try:
        pct = float(pct)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pct = None
    if kind == "none":
        return "no change"
    if pct is None or pct != pct:
        return f"{kind} (level near 0)"
    if pct and abs(pct) < 0.05:
        return f"{kind} {pct:+.2g}%"
    return f"{kind} {pct:+.1f}%"


#: Columns of a candidates (or decisions) file that say a series' direction: Perfherder's
#: alert export flattened (``series_signature.lower_is_better``), or a plain column.
DIRECTION_FIELDS: tuple[str, ...] = ("signature_lower_is_better", "lower_is_better")


def _truth(cell: object) -> bool | None:
    """A yes / no cell as the long layout reads one (:data:`triage.core.history.TRUE_TEXT`); None otherwise."""
    text = str(cell).strip().lower()
    return True if text in TRUE_TEXT else False if text in FALSE_TEXT else None


def _lower_from_kind(kind: object, pct: object) -> bool | None:
    """Whether lower is better, read from a decided step: a regression up or an improvement down says yes."""
    try:
        p = float(pct)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if p != p or p == 0 or kind not in ("regression", "improvement"):
        return None
    return (p > 0) == (kind == "regression")


def with_directions(dataset: Dataset, fields, series) -> Dataset:
    """``dataset`` with the direction a candidates file gives to series whose data does not say it.

    ``fields``: the file's columns, one row per candidate (a DataFrame);
    ``series``: each row's series id. A Perfherder alert export names
    ``lower_is_better`` on each alert's signature: a walkthrough's report
    called such an alert a plain "change -20.6%" because only the data's
    direction was read (``convert --alerts`` gave it, ``--candidates`` did
    not). The data's own direction stands where it has one. Returns
    ``dataset`` itself when the file says nothing new.
    """
    columns = getattr(fields, "columns", ())
    column = next((c for c in DIRECTION_FIELDS if c in columns), None)
    if column is not None:
        lowers = [_truth(cell) for cell in fields[column]]
    elif "change_kind" in columns and "change_pct" in columns:
        # A decisions file of `score` / `label` on data that said the direction: its kinds say it
        # (a report of such a file on the same data without the direction read "change +8.0%").
        lowers = [_lower_from_kind(k, p) for k, p in zip(fields["change_kind"], fields["change_pct"], strict=True)]
    else:
        return dataset
    said: dict[str, bool] = {}
    disagree: dict[str, None] = {}  # in file order, each series once
    for sid, lower in zip(series, lowers, strict=True):
        known = dataset[str(sid)].higher_is_better
        if lower is None:
            continue
        if known is None:
            said.setdefault(str(sid), not lower)
        elif known == lower:
            disagree[str(sid)] = None
    if disagree:
        import warnings

        shown = ", ".join(repr(s) for s in list(disagree)[:3]) + (
            f" and {len(disagree) - 3} more" if len(disagree) > 3 else "")
        warnings.warn(f"{len(disagree)} series ({shown}): the file's direction ({column or 'change_kind'}) "
                      "contradicts the data's; the data's stands", stacklevel=2)
    if not said:
        return dataset
    return Dataset((replace(h, higher_is_better=said[h.series_id]) if h.series_id in said else h for h in dataset),
                   source=dataset.source)
