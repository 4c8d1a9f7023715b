"""The series page's picture: values against dates, confirmed changes, candidates, model calls.

Drawn with matplotlib's object API (a ``Figure`` per call, no pyplot state),
because the server draws from several threads at once.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from triage.core.history import History
from triage.plotting import fit_title, label_rows, scale_values, tight_layout, value_label

# Status word -> (colour, marker): sheriff-true reads red, false grey, open orange.
STATUS_STYLE: dict[str, tuple[str, str]] = {
    "true": ("tab:red", "^"),
    "false": ("tab:gray", "x"),
    "unsure": ("tab:purple", "s"),
    "untriaged": ("tab:orange", "o"),
}


#: Width of a P(true) label ("0.57" at 7 pt) as a share of the axes' width: closer labels share no row
#: (:func:`triage.plotting.label_rows`).
LABEL_GAP = 0.035
#: Height of a row of labels, in points.
LABEL_ROW = 8
#: Rows of labels at most: beyond, a label is left out (the table below the plot has every P(true)).
MAX_LABEL_ROWS = 3


def _shares(x: np.ndarray, indices: Sequence[int]) -> list[float]:
    """Where ``x[i]`` sits along the x-axis for each index, from 0 (first value) to 1 (last)."""
    v = x.astype("datetime64[ns]").astype(np.int64).astype(float) if np.issubdtype(x.dtype, np.datetime64) else x.astype(float)
    ok = np.isfinite(v) & (v != float(np.iinfo(np.int64).min))  # NaT reads as the smallest int64
    if not ok.any():
        return [0.5] * len(indices)
    lo, hi = float(v[ok].min()), float(v[ok].max())
    return [0.5 if hi == lo or not ok[i] else (float(v[i]) - lo) / (hi - lo) for i in indices]


def series_png(history: History, points: Sequence[tuple[int, str, float | None, str | None]], *,
               title: str, confirmed: Sequence[int] = ()) -> bytes:
    """A PNG of ``history`` (the figure of :func:`series_figure`)."""
    fig = series_figure(history, points, title=title, confirmed=confirmed)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def series_figure(history: History, points: Sequence[tuple[int, str, float | None, str | None]], *,
                  title: str, confirmed: Sequence[int] = ()):
    """The matplotlib ``Figure`` of ``history``.

    ``points``: per alert ``(index, status word, P(true) or None, model call or None)``.
    The x-axis is the commit date when the series has timestamps, else the
    position. Confirmed changes (status ``true``) get a vertical line; every
    candidate a marker by status; the model's call is written above it
    (P(true), bold when called true). ``confirmed``: further confirmed
    changes (the data's ``true_positive`` labels that are not alerts here).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(history)
    stamps = history.timestamps
    has_dates = stamps is not None and not np.all(np.isnat(stamps))
    x: np.ndarray = stamps if stamps is not None and has_dates else np.arange(n)
    fig = Figure(figsize=(10, 3.4), dpi=96)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    # A line needs two points: the value of a one-commit series is drawn as a dot, or the plot is empty.
    ax.plot(x, history.values, lw=0.9, color="tab:blue", label="value", marker="o" if n == 1 else None, ms=4)
    # Only measured values set the scale (a missing one, NaN, would make the limits NaN), and
    # not a few far outliers either: they are drawn at its edge.
    shown, scale = scale_values(ax, x, history.values)
    top = scale[1] if scale is not None else 0.0
    # One call per kind of mark, not one per candidate: a detector that fires every few
    # commits gives thousands of candidates, and per-candidate artists took seconds.
    lines = [int(i) for i in confirmed] + [index for index, status, _, _ in points if status == "true"]
    if lines:
        ax.vlines(x[lines], 0, 1, transform=ax.get_xaxis_transform(), color="tab:red", lw=1.0, ls="--", alpha=0.6,
                  label="confirmed change")
    for status, (colour, marker) in STATUS_STYLE.items():
        mine = [index for index, s, _, _ in points if STATUS_STYLE.get(s, STATUS_STYLE["untriaged"]) == (colour, marker)]
        if mine:
            ax.scatter(x[mine], shown[mine], color=colour, marker=marker, s=55, zorder=3, clip_on=False,
                       label=f"candidate: {status}")
    labelled = [(index, p_true, call) for index, _, p_true, call in points if p_true is not None]
    rows = label_rows(_shares(x, [index for index, _, _ in labelled]), gap=LABEL_GAP, max_rows=MAX_LABEL_ROWS)
    for (index, p_true, call), row in zip(labelled, rows, strict=True):
        if row is None:
            continue
        ax.annotate(f"{p_true:.2f}", (x[index], top), fontsize=7, ha="center", va="bottom",
                    xytext=(0, 6 + LABEL_ROW * row), textcoords="offset points",
                    color="tab:red" if call == "true_positive" else "tab:gray",
                    fontweight="bold" if call == "true_positive" else "normal")
    if scale is not None:  # head-room for the P(true) labels written above the line
        low = scale[0]
        used = max((r for r in rows if r is not None), default=0) + 1
        room = top - low if top > low else abs(top) or 1.0
        ax.set_ylim(low - 0.05 * room, top + (0.08 + 0.07 * used) * room)
    else:
        ax.text(0.5, 0.5, "no measured values", transform=ax.transAxes, ha="center", va="center")
    # A series name is text: '$' (JMH's Outer$Inner) must not start TeX, which can fail to parse.
    # Broken into lines when wider than the figure: a long id (5,000 characters) lost both ends.
    fit_title(fig, ax.set_title(title, fontsize=9, parse_math=False))
    ax.set_xlabel("commit date" if has_dates else "commit (position in history)")
    ax.set_ylabel(value_label(history))
    if n == 1:
        # matplotlib widens a single x to +-2 years of dates (or +-0.05 commits): a week
        # each side (whole dates on the ticks), or one position.
        width = np.timedelta64(7, "D") if has_dates else 1
        ax.set_xlim(x[0] - width, x[0] + width)
        if not has_dates:
            ax.set_xticks([0])
    if has_dates:
        fig.autofmt_xdate()
    # Beside the axes, not in them: inside, it covered the P(true) labels written along the top
    # (both of a series whose alerts sit in its first third).
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0)
    ax.grid(alpha=0.3)
    tight_layout(fig)
    return fig
