"""A static HTML triage report: what a sheriff opens in the morning.

``build_report`` writes a directory::

    index.html      one page, inline CSS, no JavaScript: a summary table of
                    every decision, most likely true alerts first, then one
                    section per series with its plot
    plots/*.png     one PNG per series: values, detector candidates, model
                    decisions with P(true), confirmed (human) labels
    .triage-report  the marker that says "a report lives here": only a
                    directory holding it and nothing but a report's files
                    (or an empty or new one) is replaced

The decisions come from ``triage label`` or ``triage score`` (any CSV with
``series_id``, ``commit`` or ``index``, ``p_true`` and ``classification``;
``explanation`` is shown when present, ``label`` taken from the data when the
file has none). A ``not_scorable`` row (an alert with no commit before it in
its window: at its series' first commit or right after a confirmed change
point, :data:`triage.inference.NOT_SCORABLE`) has an empty ``p_true``: it is
listed last, shown as "not scorable" (neither a probability nor a call) and drawn
as a grey square without a P(true). At threshold 0 (triage off) ``label`` and
``score`` call every alert true, such an alert too, still with an empty
``p_true``: a ``true_positive`` row with no commit before it in its window
(index 0, or the commit before it a confirmed change point in the data) may
have an empty ``p_true`` when every row of the file is called true (what
threshold 0 writes); it is shown as a true alert with a dash for P(true), listed last and
counted. An empty ``p_true`` anywhere else is refused. Detector candidates
(``triage candidates`` output or any file :func:`triage.scoring.read_candidates`
reads) are drawn as ticks under the series.

The directory is built beside its destination and swapped in, so a reader
never sees a half-written report. A link to a directory is written through
(the directory it names is swapped, the link stays). An existing directory
without the marker is refused unless it holds exactly what an earlier version
wrote (``index.html`` and ``plots/*.png``): an ``index.html`` beside other
files does not make a user's folder ours to delete.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from triage.batch_label import PUBLISHED_HEADER
from triage.candidate_files import is_blank, json_lines_table, read_candidates, resolve
from triage.core import labels
from triage.core.atomic import current_umask, directory_target, name_the_output, replace_dir
from triage.core.csv_lines import csv_record_lines
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.features.windows import adaptive_bounds
from triage.inference import NOT_SCORABLE, NOT_SCORABLE_WHY
from triage.plotting import fit_title, label_rows, scale_values, tight_layout, value_label
from triage.readers.source import csv_errors
from triage.steps import STEP_WINDOW, describe, step_at, with_directions

#: The file that marks a directory as a report this module wrote (and may replace).
REPORT_MARKER = ".triage-report"
MARKER_TEXT = "A report written by `triage report`; the next `triage report --out` here replaces this directory whole.\n"

#: Columns a decisions file must have (plus ``commit`` or ``index``).
REQUIRED_DECISION_COLUMNS: tuple[str, ...] = ("series_id", "p_true", "classification")
#: The calls ``label`` and ``score`` write in ``classification``.
DECISIONS: tuple[str, ...] = (labels.TRUE_POSITIVE, labels.FALSE_POSITIVE)
#: Every ``classification`` a decisions file may hold: a call, or an alert no model could judge (empty ``p_true``).
CLASSIFICATIONS: tuple[str, ...] = (*DECISIONS, NOT_SCORABLE)
#: How an absent ``p_true`` reads: empty in CSV, ``null`` in JSON lines (read as text).
NO_PROBABILITY = frozenset({"", "nan", "none", "null"})

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1250px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ddd; }
p.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.decision { white-space: nowrap; }
tr.true td.decision { color: #b00020; font-weight: 600; }
tr.false td.decision { color: #666; }
tr.unscored td.decision { color: #8a5a00; font-style: italic; }
td.why { color: #444; font-size: 12px; }
td.id, h2 { overflow-wrap: anywhere; }
span.differs { color: #8a5a00; font-weight: 400; font-size: 11px; }
.bar { display: inline-block; height: 8px; background: #b00020; vertical-align: middle; margin-right: 4px; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.counts span { display: inline-block; margin-right: 1.5em; }
"""


# --------------------------------------------------------------------------- input


def read_decisions(path: str | Path, dataset: Dataset) -> pd.DataFrame:
    """Read a decisions CSV and place each row in ``dataset``.

    Returns the rows with ``index`` (0-based position, int) filled in and
    ``p_true`` as float (NaN for a ``not_scorable`` row, whose ``p_true`` must
    be empty, and for a ``true_positive`` row with no commit before it in its
    window (index 0, or right after a confirmed change point of ``dataset``)
    with an empty ``p_true`` in a file whose every row is called true: an alert
    not scorable, called true at threshold 0). Raises :class:`InputError`
    naming the row for an unknown series, a commit not in its series or a bad
    probability (an empty one on any other row included).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(path, None, "is a directory, not a decisions file")
    if not path.is_file():
        raise InputError(path, None, "no such decisions file")
    if is_blank(path):
        # JSON lines of no decision: what `score` / `label --format json` write for no candidates
        # (a CSV says so with its header alone).
        dtypes = {"p_true": np.float64, "index": np.int64}
        return pd.DataFrame({c: pd.Series(dtype=dtypes.get(c, object))
                             for c in (*REQUIRED_DECISION_COLUMNS, "commit", "index", "label")})
    with open(path, "rb") as fh:
        # `--format json` output of label / score: its first record after any blank line or
        # byte-order mark (such a file had been read as a CSV and refused)
        is_json_lines = fh.read(1 << 16).lstrip(b"\xef\xbb\xbf").lstrip()[:1] == b"{"
    json_numbers: list[int] = []
    try:
        if is_json_lines:
            frame, _, json_numbers = json_lines_table(path)
        else:
            # The CSV readers' located errors: a file not in UTF-8 had leaked "'utf-8' codec can't
            # decode byte 0x9c" where the other inputs say what it is and how to convert it.
            with csv_errors(path):
                frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(path, None, f"not a decisions CSV or JSON-lines file: {exc}") from None
    # `score` writes its own as triage_<name> beside a detector's column of that name (the detector's
    # own p_true): the report shows the model's, not the detector's beside the model's call.
    for c in ("p_false", "p_true", "classification", "explanation"):
        if f"triage_{c}" in frame.columns:
            frame[c] = frame[f"triage_{c}"]
    missing = [c for c in REQUIRED_DECISION_COLUMNS if c not in frame.columns]
    if missing and len(frame.columns) and str(frame.columns[0]).startswith(PUBLISHED_HEADER[0]):
        # `label --format published`: the replication package's layout, ;-separated, no series column.
        raise InputError(path, 1, "the header of `triage label --format published`, a layout with no series "
                         "column to place its rows: write the decisions with --format csv (or json) for triage report")
    if missing or ("commit" not in frame.columns and "index" not in frame.columns):
        need = ", ".join(REQUIRED_DECISION_COLUMNS) + " and commit or index"
        raise InputError(path, 1, f"a decisions file needs {need} (found: {', '.join(frame.columns)})")
    index = np.empty(len(frame), dtype=np.int64)
    p_true = pd.to_numeric(frame["p_true"], errors="coerce").to_numpy(dtype=np.float64, copy=True)
    # Threshold 0 (triage off) calls every alert true, one with no commit before it in its window too
    # (inference.not_scorable), which keeps its empty p_true: such a row is only consistent in a file
    # where every row is called true.
    every_call_true = bool((frame["classification"] == labels.TRUE_POSITIVE).all())
    # label / score write p_false = 1 - p_true (to 4 decimals): a row where they disagree was edited.
    p_false = (pd.to_numeric(frame["p_false"], errors="coerce").to_numpy(dtype=np.float64)
               if "p_false" in frame.columns else np.full(len(frame), np.nan))
    first: dict[tuple[str, int], tuple[int, int]] = {}  # (series, index) -> (its row in the file, its record)
    repeated: list[int] = []
    # Each record's line in the file: blank lines (which both readers skip) are counted.
    numbers = np.asarray(json_numbers) if is_json_lines else csv_record_lines(path, len(frame))
    if len(numbers) != len(frame):
        numbers = np.arange(1, len(frame) + 1) + (0 if is_json_lines else 1)
    human = frame["label"].tolist() if "label" in frame.columns else None
    for i, rec in enumerate(frame.to_dict("records")):
        row = int(numbers[i])
        sid = rec["series_id"]
        if sid not in dataset:
            raise InputError(path, row, f"unknown series {sid!r}")
        h = dataset[sid]
        # Checked even beside a commit: a garbled index is a garbled file. (It may
        # differ from the commit's position: an Otava index kept by `score`.)
        given = _whole_number(rec.get("index", ""), path, row)
        if rec.get("commit", "") != "":
            try:
                index[i] = h.index_of(rec["commit"])
            except KeyError:
                raise InputError(path, row, f"commit {rec['commit']!r} is not in series {sid!r}") from None
        else:
            if given is None:
                raise InputError(path, row, "neither commit nor index is given")
            index[i] = given
            if not 0 <= index[i] < len(h):
                raise InputError(path, row, f"index {index[i]} is outside series {sid!r}")
        if human is not None:
            # The human label shown beside the call: any spelling the loaders accept, nothing else.
            try:
                human[i] = labels.normalise_label(rec["label"])
            except KeyError:
                raise InputError(path, row, f"unknown label {rec['label']!r} (known: {labels.known_labels()})") from None
        if rec["classification"] not in CLASSIFICATIONS:
            raise InputError(path, row, f"classification {rec['classification']!r} is not "
                             f"{', '.join(CLASSIFICATIONS[:-1])} or {CLASSIFICATIONS[-1]}")
        if rec["classification"] == NOT_SCORABLE:
            # No model judged it (no commit before it in its window): no probability to show.
            if str(rec["p_true"]).strip().lower() not in NO_PROBABILITY:
                raise InputError(path, row, f"p_true {rec['p_true']!r} on a {NOT_SCORABLE} row: such a row "
                                 "has no P(true), its p_true must be empty")
            p_true[i] = np.nan
        elif not 0.0 <= p_true[i] <= 1.0:
            # The windows' own rule for an empty Pre (index 0, or right after a confirmed change point).
            (pre_start, pre_stop), _ = adaptive_bounds(int(index[i]), len(h), h.confirmed())
            empty_pre = pre_start == pre_stop
            unjudged_call = (str(rec["p_true"]).strip().lower() in NO_PROBABILITY and empty_pre
                             and rec["classification"] == labels.TRUE_POSITIVE)
            if unjudged_call and every_call_true:
                p_true[i] = np.nan  # not scorable, called true at threshold 0
            else:
                raise InputError(path, row, f"p_true {rec['p_true']!r} is not a probability" + (
                    f" (a {labels.TRUE_POSITIVE} row with no commit before it in its window may leave it empty "
                    "only in a file written at threshold 0, where every row is called true)" if unjudged_call else ""))
        if np.isfinite(p_true[i]) and np.isfinite(p_false[i]) and abs(p_false[i] + p_true[i] - 1.0) > 1e-3:
            raise InputError(path, row, f"p_false {rec['p_false']!r} and p_true {rec['p_true']!r} do not add up "
                             "to 1 (label and score write p_false = 1 - p_true): the file was edited; "
                             "write the decisions again with triage label or triage score")
        # One alert, one decision: a repeated row would be drawn and counted twice. The same
        # decision on a row of other detector fields is one alert listed twice (`score` of a
        # Perfherder export where an alert was reassigned to a second summary): kept once.
        if (key := (sid, int(index[i]))) in first:
            earlier_row, j = first[key]
            earlier = frame.iloc[j]
            listed_twice = (rec["classification"] == earlier["classification"]
                            and str(rec["p_true"]) == str(earlier["p_true"])
                            and any(str(rec[c]) != str(earlier[c]) for c in frame.columns))
            if not listed_twice:
                raise InputError(path, row, f"repeats the decision of row {earlier_row} (series {sid!r}, "
                                 f"commit {h.commits[index[i]]!r})")
            repeated.append(i)
            continue
        first[key] = (row, i)
    frame["index"] = index
    frame["p_true"] = p_true
    if human is not None:
        frame["label"] = human
    # One run calls true exactly the rows at or above its threshold (score's duplicates, called false
    # beside a stronger candidate, excepted): a true row below a false one was edited or comes from
    # another run.
    called = frame["classification"].to_numpy()
    why = frame["explanation"].astype(str).to_numpy() if "explanation" in frame.columns else np.full(len(frame), "")
    judged = np.isfinite(p_true)
    true_rows = np.flatnonzero(judged & (called == labels.TRUE_POSITIVE))
    false_rows = np.flatnonzero(judged & (called == labels.FALSE_POSITIVE)
                                & ~np.char.startswith(why.astype(str), "duplicate:"))
    if true_rows.size and false_rows.size:
        low, high = true_rows[np.argmin(p_true[true_rows])], false_rows[np.argmax(p_true[false_rows])]
        if p_true[low] < p_true[high]:
            raise InputError(path, int(numbers[low]), f"called {labels.TRUE_POSITIVE} at p_true {p_true[low]:.4f}, "
                             f"below row {int(numbers[high])} called {labels.FALSE_POSITIVE} at p_true "
                             f"{p_true[high]:.4f}: no one threshold makes both calls (the file was edited, "
                             "or joins runs of different thresholds); write the decisions again with "
                             "triage label or triage score")
    frame = frame.drop(index=frame.index[repeated]).reset_index(drop=True)
    if "label" not in frame.columns:
        # Detector scores carry no human label; the data may have one at that commit.
        frame["label"] = [dataset[s].labels[i] for s, i in zip(frame["series_id"], frame["index"], strict=True)]
    return frame


def _whole_number(text: object, path: Path, row: int) -> int | None:
    """An ``index`` cell: None when empty, else a whole number or an error naming the row."""
    text = str(text).strip()
    if text.lower() in ("", "nan", "none"):  # empty, or a JSON null read as text
        return None
    try:
        return int(text)
    except ValueError:
        raise InputError(path, row, f"index {text!r} is not a whole number") from None


def candidate_points(path: str | Path, dataset: Dataset) -> dict[str, np.ndarray]:
    """Detector candidates of a candidate file as {series id: sorted indices}."""
    series, index = resolve(dataset, read_candidates(path))
    out: dict[str, list[int]] = {}
    for s, i in zip(series, index, strict=True):
        out.setdefault(s, []).append(int(i))
    return {s: np.unique(v) for s, v in out.items()}


# --------------------------------------------------------------------------- plots


#: A series plot's size (inches) and resolution: 1100 x 350 pixels, which the page's <img> says.
PLOT_INCHES = (11.0, 3.5)
PLOT_DPI = 100


def plot_series(
    history: History,
    out: str | Path,
    *,
    decisions: pd.DataFrame | None = None,
    candidates: np.ndarray | None = None,
) -> Path:
    """A PNG of one series for the report.

    Draws the values, human labels (confirmed change points as red vertical
    lines, rejected alerts as grey crosses, untriaged as orange rings),
    detector candidates as ticks along the bottom, and the model's decisions
    (``decisions`` rows with ``index``, ``p_true``, ``classification``):
    filled red dots for "true", hollow grey dots for "false", with P(true)
    above them where there is room (:func:`_annotated`: the most likely first,
    no two labels overlapping), and grey squares without a P(true) for
    ``not_scorable``.
    """
    import matplotlib

    matplotlib.use("Agg")  # no display on servers
    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    x = np.arange(len(history))
    fig, ax = plt.subplots(figsize=PLOT_INCHES, dpi=PLOT_DPI)
    # A line needs two points: a one-commit series' value is drawn as a dot.
    ax.plot(x, history.values, lw=0.9, color="tab:blue", label="value", zorder=2,
            marker="o" if len(x) == 1 else None, ms=4)
    # A few far outliers would squash the rest into a flat line: they are drawn at the scale's edge,
    # and so are the marks on them (v: the values as drawn).
    v, scale = scale_values(ax, x, history.values)
    lo, hi = scale if scale is not None else (0.0, 0.0)
    # One value throughout (a constant series, one commit): the scale is its own size, not 1.0,
    # under which a real timing of 0.0015 s read as 0.00 on an axis from -0.1 to 0.1.
    span = hi - lo if hi > lo else (abs(hi) or 1.0)
    for k, cp in enumerate(history.confirmed()):
        ax.axvline(cp, color="tab:red", lw=1.1, alpha=0.7, label="confirmed change" if k == 0 else None, zorder=1)
    rejected = np.flatnonzero(history.labels == labels.FALSE_POSITIVE)
    if len(rejected):
        ax.scatter(rejected, v[rejected], marker="x", color="0.45", s=40, label="rejected alert", zorder=3)
    open_ = history.indices_with(labels.UNTRIAGED)
    if len(open_):
        ax.scatter(open_, v[open_], facecolors="none", edgecolors="tab:orange", s=90, lw=1.4,
                   label="untriaged", zorder=3)
    if candidates is not None and len(candidates):
        ax.scatter(candidates, np.full(len(candidates), lo - 0.06 * span), marker="|", s=120,
                   color="tab:purple", label="detector candidate", zorder=3)
    if decisions is not None and len(decisions):
        idx = decisions["index"].to_numpy(dtype=np.int64)
        p = decisions["p_true"].to_numpy(dtype=np.float64)
        call = decisions["classification"].astype(str).to_numpy()
        is_true = call == labels.TRUE_POSITIVE
        unjudged = call == NOT_SCORABLE
        is_false = ~is_true & ~unjudged
        if is_true.any():
            ax.scatter(idx[is_true], v[idx[is_true]], color="tab:red", s=28, zorder=4, label="model: true")
        if is_false.any():
            ax.scatter(idx[is_false], v[idx[is_false]], facecolors="white", edgecolors="0.3", s=28, zorder=4,
                       label="model: false")
        if unjudged.any():
            ax.scatter(idx[unjudged], v[idx[unjudged]], marker="s", facecolors="0.85", edgecolors="0.3", s=28,
                       zorder=4, label="model: not scorable")
        for k in _annotated(idx, p, len(history)):
            i, pi, t = idx[k], p[k], is_true[k]
            ax.annotate(f"{pi:.2f}", (i, v[i]), xytext=(0, 7), textcoords="offset points", ha="center",
                        fontsize=7, color="tab:red" if t else "0.3", zorder=5)
    ax.set_ylim(lo - 0.12 * span, hi + 0.12 * span)
    ax.set_xlim(-1, len(history))
    if len(history) < 10:  # whole commits, not ticks at -0.75 .. 0.75
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("commit (position in history)")
    ax.set_ylabel(value_label(history))
    ax.grid(alpha=0.25)
    # Above the axes: inside, it would hide the start of the series.
    legend = ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=7, frameon=False,
                       borderaxespad=0.2)
    # Above the legend (one row or two): a plot pasted into a ticket (or opened from plots/) said
    # nothing of its series. parse_math=False: a '$' of a JMH name is a character, not TeX.
    # Measured with the canvas's renderer, not after a draw: each full draw of a plot took a fifth
    # of its time, and the PNG's own draw is the only one needed.
    pad = legend.get_window_extent().height * 72 / fig.dpi + 6
    fit_title(fig, ax.set_title(history.series_id, fontsize=9, parse_math=False, pad=pad))
    tight_layout(fig)
    _offset_into_label(fig, ax)
    if out.suffix.lower() == ".png":
        _save_png(fig, out)
    else:
        fig.savefig(out)
    plt.close(fig)
    return out


#: Colours a report plot keeps: a plot holds a dozen colours and their anti-aliased blends.
PNG_COLOURS = 256


def _save_png(fig, out: Path) -> None:
    """``fig`` as a PNG of at most :data:`PNG_COLOURS` colours (a palette, not RGBA).

    As matplotlib writes it (RGBA), a report of 2,000 series was 95 MB of plots; with a
    palette each is about a third of that and looks the same.
    """
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    with Image.open(buffer) as image:
        # Fast octree: 12 ms a plot (median cut with optimize: 70 ms, a third more per report).
        image.convert("RGB").quantize(PNG_COLOURS, method=Image.Quantize.FASTOCTREE).save(out, format="PNG")


#: Least distance between two P(true) labels of a plot, as a share of its width ("0.57" at 7 pt).
LABEL_GAP = 0.03


def _annotated(index: np.ndarray, p_true: np.ndarray, n: int, gap: float = LABEL_GAP) -> list[int]:
    """The decisions (positions in ``index``, shape (k,)) whose P(true) a plot of ``n`` commits writes.

    One row of labels (:func:`triage.plotting.label_rows`), the most likely
    true first, each where no other is written: at most about ``1 / gap``.
    Every P(true) is in the table; not scorable decisions (NaN) have none.
    """
    shares = (np.asarray(index, dtype=float) / max(n - 1, 1)).tolist()
    likely = [int(k) for k in np.argsort(-np.nan_to_num(p_true, nan=-1.0), kind="stable") if not np.isnan(p_true[k])]
    return [k for k, row in enumerate(label_rows(shares, gap=gap, max_rows=1, order=likely)) if row is not None]


def _offset_into_label(fig, ax) -> None:
    """Move the y axis's offset / multiplier (``+1.234567e8``, ``1e8``) into its label.

    Matplotlib draws it above the top-left corner, where the legend sits: a
    nearly constant series (peak memory) would read 82..96 with the
    ``+1.234567e8`` hidden.
    """
    # A draw sets the offset text from the formatter, given the tick positions; asked directly,
    # without a draw, it says the same.
    formatter = ax.yaxis.get_major_formatter()
    formatter.set_locs(ax.yaxis.get_majorticklocs())
    offset = formatter.get_offset()
    if offset:
        ax.yaxis.get_offset_text().set_visible(False)
        shown = offset if offset.startswith(("+", "-", "\u2212")) else f"x {offset}"
        ax.set_ylabel(ax.get_ylabel().replace("value", f"value ({shown})", 1))
        tight_layout(fig)


# --------------------------------------------------------------------------- page


def _slug(series_id: str, used: set[str]) -> str:
    """A file name and anchor for ``series_id``, unique in ``used`` ignoring case.

    (``Query.Read`` and ``query.read`` would be one PNG on macOS and Windows.)
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", series_id).strip("._-")[:80] or "series"
    slug, k = base, 1
    while slug.lower() in used:
        k += 1
        slug = f"{base}-{k}"
    used.add(slug.lower())
    return slug


def step_text(history: History, index: int, window: int = STEP_WINDOW, *, confirmed: np.ndarray | None = None) -> str:
    """The report's step column: ``regression +12.3%``, ``improvement -8.0%``, ``change +5.0%`` (direction unknown).

    :func:`triage.steps.describe` of :func:`triage.steps.step_at` (medians of
    up to ``window`` commits either side, not over a confirmed change point;
    the rule for a change under 0.05 % and for a level near 0 is there).
    ``confirmed``: ``history.confirmed()`` when the caller has it.
    """
    return describe(step_at(history, index, window, confirmed=confirmed))


def _summary_rows(decisions: pd.DataFrame, anchors: dict[str, str], dataset: Dataset | None = None) -> list[str]:
    rows = []
    confirmed: dict[str, np.ndarray] = {}  # each series' confirmed change points, read once
    for rank, rec in enumerate(decisions.to_dict("records"), start=1):
        is_true = rec["classification"] == labels.TRUE_POSITIVE
        unjudged = rec["classification"] == NOT_SCORABLE
        sid = str(rec["series_id"])
        human = str(rec.get("label", "") or "")
        # A triaged alert the model calls the other way is worth a second look.
        differs = not unjudged and human in labels.TRIAGED and (human == labels.TRUE_POSITIVE) != is_true
        call = ("not scorable" if unjudged else "true alert" if is_true else "false alert") + (
            ' <span class="differs">&ne; human</span>' if differs else "")
        p = float(rec["p_true"])
        # No P(true) (not scorable): a dash, never a number.
        prob = ("&mdash;" if np.isnan(p) else
                f'<span class="bar" style="width:{40 * p:.0f}px"></span>{p:.3f}')
        cells = [
            f'<td class="num">{rank}</td>',
            # Ids break anywhere: a 300-character series id or a 64-character SHA with no
            # break point stretched the table to several screens and squeezed every other column.
            f'<td class="id"><a href="#{anchors[sid]}">{html.escape(sid)}</a></td>',
            f"<td class=\"id\">{html.escape(str(rec.get('commit', '')))}</td>",
            f'<td class="num">{int(rec["index"])}</td>',
            f"<td>{html.escape(_step(dataset, sid, int(rec['index']), confirmed)) if dataset is not None else ''}</td>",
            f"<td>{html.escape(str(rec.get('label', '') or '-'))}</td>",
            f'<td class="num">{prob}</td>',
            f'<td class="decision">{call}</td>',
            f'<td class="why">{html.escape(str(rec.get("explanation", "") or ""))}</td>',
        ]
        kind = "unscored" if unjudged else "true" if is_true else "false"
        rows.append(f'<tr class="{kind}">{"".join(cells)}</tr>')
    return rows


def _step(dataset: Dataset, sid: str, index: int, confirmed: dict[str, np.ndarray]) -> str:
    """:func:`step_text` of a table row, with the series' confirmed change points read once (``confirmed``)."""
    history = dataset[sid]
    if sid not in confirmed:
        confirmed[sid] = history.confirmed()
    return step_text(history, index, confirmed=confirmed[sid])


def render_html(
    decisions: pd.DataFrame,
    sections: list[tuple[str, str, str, int, int]],
    *,
    title: str,
    source: str,
    n_candidates: int | None,
    omitted: int,
    dataset: Dataset | None = None,
    omitted_candidates: int = 0,
    inputs: Sequence[tuple[str, str]] = (),
) -> str:
    """The page. ``sections``: (series id, anchor, png path, decisions, true alerts) in page order.

    ``inputs``: (what, file) pairs the meta line names after the data
    (``("decisions", "scored.csv")``), so that a page mailed on says what made it.

    A table row of a series without a section links back to the table.
    ``omitted``: series with decisions left unplotted (``--max-plots``);
    ``omitted_candidates``: series with detector candidates only left unplotted.
    """
    anchors = {sid: "summary" for sid in decisions["series_id"].astype(str)}
    anchors.update({sid: anchor for sid, anchor, *_ in sections})
    n_true = int((decisions["classification"] == labels.TRUE_POSITIVE).sum())
    n_unjudged = int((decisions["classification"] == NOT_SCORABLE).sum())
    # Called true without a P(true): not scorable, called true at threshold 0 (read_decisions).
    n_kept = int(((decisions["classification"] == labels.TRUE_POSITIVE)
                  & pd.to_numeric(decisions["p_true"], errors="coerce").isna()).sum())
    counts = [
        f"<span><b>{len(decisions):,}</b> decisions</span>",
        f"<span><b>{n_true:,}</b> likely true alerts</span>",
        *([f"<span><b>{n_unjudged:,}</b> not scorable ({NOT_SCORABLE_WHY})</span>"] if n_unjudged else []),
        *([f"<span><b>{n_kept:,}</b> of them without P(true): {NOT_SCORABLE_WHY}, called true at "
           "threshold 0</span>"] if n_kept else []),
        f"<span><b>{decisions['series_id'].nunique():,}</b> series</span>",
    ]
    if n_candidates is not None:
        counts.append(f"<span><b>{n_candidates:,}</b> detector candidates</span>")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">data: {html.escape(source)} &middot; '
        + "".join(f"{html.escape(what)}: {html.escape(_data_name(name))} &middot; " for what, name in inputs)
        + "generated "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        f'<p class="counts">{"".join(counts)}</p>',
        "<h2 id=\"summary\">Alerts, most likely true first</h2>",
        '<table id="decisions"><thead><tr><th>#</th><th>series</th><th>commit</th><th>index</th>'
        "<th>step</th><th>human label</th><th>P(true)</th><th>model</th><th>why</th></tr></thead><tbody>",
        *_summary_rows(decisions, anchors, dataset),
        "</tbody></table>",
    ]
    for sid, anchor, png, n_dec, n_true_s in sections:
        parts.append(f'<h2 id="{anchor}">{html.escape(sid)}</h2>')
        parts.append(f'<p class="meta">{n_dec} decisions, {n_true_s} likely true &middot; <a href="#summary">back to the table</a></p>')
        # Sized and lazy: a page of 2,000 plots (95 MB) fetched every one at once, and a link from the
        # table landed on the wrong series as the plots above it arrived and pushed it down.
        parts.append(f'<img src="{html.escape(png)}" width="{round(PLOT_INCHES[0] * PLOT_DPI)}" '
                     f'height="{round(PLOT_INCHES[1] * PLOT_DPI)}" loading="lazy" '
                     f'alt="{html.escape(sid)}: values, candidates and decisions">')
    if omitted:
        parts.append(f'<p class="meta">{omitted} more series with decisions are in the table but not plotted (--max-plots).</p>')
    if omitted_candidates:
        # Not in the table either: the line above counted them among its series "in the table".
        parts.append(f'<p class="meta">{omitted_candidates} more series with detector candidates but no decision '
                     "are not plotted (--max-plots).</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _data_name(source: object) -> str:
    """The data's name as the page shows it: a file's absolute path, anything else (``<stdin>``) as it is.

    The page is read elsewhere (mailed, opened from another folder): a path relative to
    wherever ``triage report`` ran (``data: ../small/history.parquet``) named no file there.
    """
    text = str(source or "")
    return os.path.abspath(text) if text and os.path.exists(text) else text


def check_replaceable(out: Path) -> None:
    """Raise :class:`InputError` unless ``out`` is absent, an empty directory or a report directory holding only a report.

    A report directory is one holding :data:`REPORT_MARKER`, which only
    :func:`build_report` writes; replacing a directory deletes everything in
    it, so guessing from an ``index.html`` is not enough.
    """
    if not os.path.lexists(out):
        return
    if not out.is_dir():
        raise InputError(out, None, "exists and is not a directory; refusing to replace it")
    if any(out.iterdir()) and not (out / REPORT_MARKER).is_file() and not _written_before_the_marker(out):
        raise InputError(
            out, None,
            f"exists and is not a report directory (no {REPORT_MARKER} marker); refusing to replace it "
            "and delete what it holds: give a new or empty directory",
        )
    # A report directory holding files the report did not write (notes, a copy of the decisions
    # kept beside it) would lose them with the old report; `train --out` refuses the same.
    extra = _not_report_files(out)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5:,} more" if len(extra) > 5 else "")
        raise InputError(
            out, None,
            f"holds {shown}, which `triage report` did not write; replacing the report would delete "
            f"{'it' if len(extra) == 1 else 'them'}: move {'it' if len(extra) == 1 else 'them'} out, or give "
            "another directory",
        )


def check_inputs_outside(out: str | Path, inputs: dict[str, str | Path | None]) -> None:
    """Refuse an input (``{option: path}``) that lies inside the report directory ``out``.

    The report replaces ``out`` whole, so a decisions file, dataset or
    candidate file kept there would be read and then deleted with the old
    report. Links are followed on both sides; ``-`` (stdin) is never inside.
    """
    target = Path(os.path.realpath(out))
    for option, given in inputs.items():
        if given is None or str(given) == "-":
            continue
        source = Path(os.path.realpath(given))
        if source == target:
            raise InputError(given, None, f"({option}) is also --out; the report would replace it: give a new "
                             "directory for --out")
        if target in source.parents:
            raise InputError(given, None, f"({option}) is inside the report directory {out}, which --out "
                             "replaces whole; it would be deleted with the old report: move it out first")


def _not_report_files(out: Path) -> list[str]:
    """What ``out`` holds beyond a report's own files (index.html, plots/*.png, the marker), as relative paths."""
    extra: list[str] = []
    for p in sorted(out.iterdir()):
        if p.name in ("index.html", REPORT_MARKER) and p.is_file() and not p.is_symlink():
            continue
        if p.name == "plots" and p.is_dir() and not p.is_symlink():
            extra += [f"plots/{q.name}" for q in sorted(p.iterdir())
                      if not (q.suffix == ".png" and q.is_file() and not q.is_symlink())]
            continue
        extra.append(p.name)
    return extra


def _written_before_the_marker(out: Path) -> bool:
    """Exactly what :func:`build_report` wrote before it left a marker: index.html and plots/*.png.

    (So ``make demo`` stays repeatable over a report of an earlier version; a
    folder holding anything else is still refused.)
    """
    names = {p.name for p in out.iterdir()}
    if "index.html" not in names or not names <= {"index.html", "plots"}:
        return False
    plots = out / "plots"
    if not plots.exists():
        return True
    return plots.is_dir() and not plots.is_symlink() and all(
        p.suffix == ".png" and p.is_file() and not p.is_symlink() for p in plots.iterdir())


def build_report(
    dataset: Dataset,
    decisions: pd.DataFrame,
    out: str | Path,
    *,
    candidates: dict[str, np.ndarray] | None = None,
    title: str = "Change-point triage report",
    max_plots: int = 100,
    progress: Callable[[int], None] | None = None,
    inputs: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write the report directory ``out``; returns the path of ``index.html``.

    ``decisions`` as returned by :func:`read_decisions` (with ``index``);
    ``candidates`` as returned by :func:`candidate_points`. Series are plotted
    in the order of their most likely true alert, at most ``max_plots``;
    ``progress(1)`` is called after each plot.
    """
    # A link to a report directory is followed: the directory it names is replaced, the link stays.
    out = directory_target(out)
    check_replaceable(out)  # before minutes of plotting, not after
    # `score` keeps a Perfherder export's fields: its lower_is_better names the regressions.
    dataset = with_directions(dataset, decisions, decisions["series_id"])
    ordered = decisions.sort_values(["p_true", "series_id"], ascending=[False, True], kind="stable").reset_index(drop=True)
    series_order = list(dict.fromkeys(ordered["series_id"].astype(str)))
    n_decided = len(series_order)
    # Series with candidates but no decision still get a plot, after the others.
    if candidates:
        decided = set(series_order)  # once: a set per candidate series was quadratic in the series
        series_order += [s for s in candidates if s not in decided]
    plotted, omitted = series_order[:max_plots], max(0, len(series_order) - max_plots)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    # mkdtemp makes the directory private (0700); a report is meant to be served and shared.
    os.chmod(tmp, 0o777 & ~current_umask())
    try:
        used: set[str] = {"summary", "decisions"}  # ids the page itself uses
        sections = []
        anchors = {sid: _slug(sid, used) for sid in plotted}
        for sid in plotted:
            rows = ordered[ordered["series_id"] == sid]
            png = f"plots/{anchors[sid]}.png"
            plot_series(dataset[sid], tmp / png, decisions=rows,
                        candidates=candidates.get(sid) if candidates else None)
            sections.append((sid, anchors[sid], png, len(rows),
                             int((rows["classification"] == labels.TRUE_POSITIVE).sum())))
            if progress is not None:
                progress(1)
        n_cand = int(sum(len(v) for v in candidates.values())) if candidates is not None else None
        page = render_html(ordered, sections, title=title, source=_data_name(dataset.source),
                           n_candidates=n_cand, omitted=max(0, n_decided - max_plots), dataset=dataset,
                           omitted_candidates=omitted - max(0, n_decided - max_plots), inputs=inputs)
        (tmp / "index.html").write_text(page, encoding="utf-8")
        (tmp / REPORT_MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        check_replaceable(out)  # again: the plots took a while, someone may have filled it since
        replace_dir(tmp, out)  # the old report, now in tmp, goes with it below
    except OSError as exc:  # a full disk while matplotlib or the page wrote the hidden folder
        name_the_output(exc, out, tmp)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "index.html"
