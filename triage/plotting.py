"""Pictures of a history: values, true change points, triaged candidates."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from triage.core import labels
from triage.core.atomic import atomic_write
from triage.core.history import History

# Colour per label, chosen so true/false alerts read apart at a glance.
LABEL_STYLE: dict[str, tuple[str, str]] = {
    labels.TRUE_POSITIVE: ("tab:red", "^"),
    labels.FALSE_POSITIVE: ("tab:gray", "x"),
    labels.NOT_TRIAGED: ("tab:orange", "o"),
    labels.UNDER_INVESTIGATION: ("tab:purple", "s"),
}


#: Quantiles of the values that a plot's scale covers at least.
SCALE_QUANTILES = (0.005, 0.995)
#: A value more than this many spans of those quantiles beyond them is drawn at the plot's edge.
#: (At 3, the real histories' fresh steps at their last commit, 11 spans in empymod, went too.)
OFF_SCALE = 10.0
#: The latest commits are always on the scale: a new level there is what a sheriff looks at.
LATEST_ON_SCALE = 10


def value_scale(values: np.ndarray) -> tuple[float, float] | None:
    """The (low, high) values a plot's y axis shows, None when the series has no finite value.

    The whole range, unless a few values lie more than :data:`OFF_SCALE` spans of the
    0.5-99.5 % quantiles beyond them: then the scale stops there and those values are
    drawn at its edge (:func:`clip_to_scale`); the last :data:`LATEST_ON_SCALE` values
    stay on it. Real histories have such values: rhai's first three runs at 57,000 ns
    against about 100 afterwards left every change of the following 1,650 commits a
    flat line along the bottom.
    """
    finite = values[np.isfinite(values)]
    if not len(finite):
        return None
    lo, hi = float(finite.min()), float(finite.max())
    q_lo, q_hi = (float(q) for q in np.quantile(finite, SCALE_QUANTILES))
    # Interpolated, the 99.5 % of 150 commits lay a quarter of the way to a lone spike (one CI
    # hiccup at 1e6 against ~100), which then counted as on the scale and flattened every other
    # commit into the bottom line: a quantile reaches at most one span of the values inside it
    # beyond the last of them.
    inner_lo = float(np.quantile(finite, SCALE_QUANTILES[0], method="higher"))
    inner_hi = float(np.quantile(finite, SCALE_QUANTILES[1], method="lower"))
    reach = max(inner_hi - inner_lo, 0.0)
    q_lo, q_hi = max(q_lo, inner_lo - reach), min(q_hi, inner_hi + reach)
    span = q_hi - q_lo
    if span <= 0:
        return lo, hi
    margin = 0.05 * span  # the quantiles' own values stay inside, not on the frame
    low = lo if q_lo - lo <= OFF_SCALE * span else q_lo - margin
    high = hi if hi - q_hi <= OFF_SCALE * span else q_hi + margin
    latest = values[-LATEST_ON_SCALE:]
    latest = latest[np.isfinite(latest)]
    if len(latest):
        low, high = min(low, float(latest.min())), max(high, float(latest.max()))
    return low, high


def clip_to_scale(values: np.ndarray, scale: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """``values`` held inside ``scale`` (off-scale ones at its edge) and which of them were off it."""
    if scale is None:
        return values, np.zeros(len(values), dtype=bool)
    with np.errstate(invalid="ignore"):
        off = np.isfinite(values) & ((values < scale[0]) | (values > scale[1]))
    return np.clip(values, *scale), off


def scale_values(ax, x: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, tuple[float, float] | None]:
    """The plot's scale for ``values`` (:func:`value_scale`) and the values held inside it.

    Values beyond it are drawn at its edge, with a legend entry naming how far
    they go; the caller draws its marks at the returned values and sets its
    limits from the scale.
    """
    scale = value_scale(values)
    shown, off = clip_to_scale(values, scale)
    if not off.any():
        return shown, scale
    assert scale is not None  # values off a scale need one
    beyond = values[off]
    reach = ", ".join([*([f"up to {float(beyond.max()):.4g}"] if (beyond > scale[1]).any() else []),
                       *([f"down to {float(beyond.min()):.4g}"] if (beyond < scale[0]).any() else [])])
    n = int(off.sum())
    ax.scatter(x[off], shown[off], marker="D", s=14, color="tab:blue", zorder=3, clip_on=False,
               label=f"{n} value{'' if n == 1 else 's'} off the scale, {reach}")
    return shown, scale


#: Most lines a plot's title is broken into; a longer title loses its middle (``…``).
TITLE_LINES = 3
#: Where a long title prefers to break: after a separator of series ids (``/``, ``.``, ``;``...).
TITLE_BREAKS = "/.;,:)}]_- "


def title_lines(text: str, width: int, max_lines: int = TITLE_LINES) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after a separator where one is near.

    Real series ids run to 189 characters (otel-java's parametrised JMH benchmarks) and
    differ at both ends, so none is cut at the end; one that needs more than ``max_lines``
    lines keeps its head and tail and loses its middle.
    """
    width = max(width, 8)
    if len(text) > width * max_lines:
        keep = width * max_lines - 1
        text = text[: keep // 2] + "\u2026" + text[len(text) - (keep - keep // 2):]
    lines = []
    while len(text) > width:
        cut = max((text.rfind(c, width // 2, width) for c in TITLE_BREAKS), default=-1)
        cut = cut + 1 if cut > 0 else width
        lines.append(text[:cut])
        text = text[cut:]
    return [*lines, text]


def drawable(text: str, prop=None) -> str:
    """``text`` with each character no font of ``prop`` (matplotlib's default) can draw as ``?``.

    Such a character was an empty box anyway, and matplotlib warned once per plot
    ("Glyph 23450 missing from font(s) DejaVu Sans"): two stderr lines a plot for a
    series named in CJK or with an emoji, a tab or a carriage return (a control
    character is a space).
    """
    import unicodedata

    from matplotlib import font_manager

    props = prop if prop is not None else font_manager.FontProperties()
    try:
        paths = font_manager.fontManager._find_fonts_by_props(props)  # the fallback chain matplotlib draws with
    except AttributeError:  # older matplotlib: one font
        paths = [font_manager.findfont(props)]
    fonts = [font_manager.get_font([path]) for path in paths]
    shown = []
    for c in text:
        if unicodedata.category(c) == "Cc":
            shown.append(" ")
        elif c.isascii() or any(font.get_char_index(ord(c)) for font in fonts):
            shown.append(c)
        else:
            shown.append("?")
    return "".join(shown)


def fit_title(fig, title) -> None:
    """Break a title wider than the figure into lines (:func:`title_lines`) instead of cutting both ends off.

    Characters no font can draw are ``?`` first (:func:`drawable`).
    """
    title.set_text(drawable(title.get_text(), title.get_fontproperties()))
    text = title.get_text()
    renderer = fig.canvas.get_renderer()
    room = 0.85 * fig.bbox.width  # centred over the axes, which the y label pushes right of the figure's middle
    width = len(text)
    for _ in range(8):  # characters differ in width: measured again until the widest line fits
        wide = title.get_window_extent(renderer=renderer).width
        if wide <= room or width <= 8:
            return
        longest = max(len(line) for line in title.get_text().split("\n"))
        width = min(width - 1, int(longest * room / wide))
        title.set_text("\n".join(title_lines(text, width)))


def tight_layout(fig) -> None:
    """``fig.tight_layout()``, leaving no layout engine behind.

    matplotlib's ``tight_layout`` leaves a placeholder engine, for which
    ``savefig`` draws the whole figure once more before the draw it writes:
    a report plot took twice as long. Call it once the layout is final.
    """
    fig.tight_layout()
    fig.set_layout_engine(None)


def label_rows(
    positions: Sequence[float], *, gap: float, max_rows: int, order: Iterable[int] | None = None
) -> list[int | None]:
    """The row (0 = lowest) of each text label at ``positions`` (shares of the axes' width, 0 to 1).

    No two labels in one row are closer than ``gap``: candidates a few
    commits apart would otherwise print their P(true) on top of each other
    ("0.57" over "1.00"). Labels are placed in ``order`` (indices into
    ``positions``; default left to right), each in the lowest row where it
    fits; a label that fits in none of ``max_rows`` rows, or that ``order``
    leaves out, gets None (not drawn): a crowd of candidates would otherwise
    stack hundreds of rows and squash the plot, and each label is a text
    artist that costs drawing time (2,500 on one series: 6 s a plot).
    The report writes one row, the most likely true first; the workspace
    three, left to right.
    """
    rows: list[int | None] = [None] * len(positions)
    placed: list[list[float]] = []
    room = int(1 / gap) + 1  # the most labels one row can hold
    for k in sorted(range(len(positions)), key=positions.__getitem__) if order is None else order:
        pos = positions[k]
        row = next((r for r, mine in enumerate(placed) if all(abs(pos - q) >= gap for q in mine)), len(placed))
        if row == len(placed):
            if row == max_rows:
                continue
            placed.append([])
        placed[row].append(pos)
        rows[k] = row
        if len(placed) == max_rows and all(len(mine) >= room for mine in placed):
            break  # no room is left anywhere
    return rows


def value_label(history: History) -> str:
    """The y axis's label: ``value``, with which way is better where the series says so.

    Without it a rising line reads as a regression to a reader used to timings,
    whatever the unit (ops/s, a throughput, is better higher).
    """
    direction = {None: "", True: " (higher is better)", False: " (lower is better)"}[history.higher_is_better]
    return "value" + direction


def plot_history(history: History, out: str | Path, *, title: str | None = None, decisions=None) -> Path:
    """Render ``history`` as a PNG.

    Parameters
    ----------
    history : the series to draw
    out : PNG path (parent directories are created)
    decisions : optional sequence of ``(index, probability, decision)`` to mark
        model decisions above the series
    """
    import matplotlib

    matplotlib.use("Agg")  # no screen on servers and in CI
    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    x = np.arange(len(history))
    fig, ax = plt.subplots(figsize=(11, 3.6), dpi=110)
    # A line needs two points: the value of a one-commit series is drawn as a dot, or nothing shows.
    ax.plot(x, history.values, lw=0.9, color="tab:blue", label="value", marker="o" if len(x) == 1 else None, ms=4)
    if len(x) == 1:
        ax.set_xlim(-1, 1)
        ax.set_xticks([0])  # its one position, not ticks from -0.04 to 0.04
    # A few far outliers would squash the rest into a flat line: drawn at the scale's edge.
    shown, scale = scale_values(ax, x, history.values)
    if scale is not None and scale[1] > scale[0]:
        pad = 0.05 * (scale[1] - scale[0])
        ax.set_ylim(scale[0] - pad, scale[1] + pad)
    for i, tc in enumerate(history.true_change_points()):
        ax.axvline(tc, color="tab:green", lw=1.2, ls="--", alpha=0.8, label="true change" if i == 0 else None)
    for label, (colour, marker) in LABEL_STYLE.items():
        idx = np.flatnonzero(history.labels == label)
        if len(idx):
            ax.scatter(idx, shown[idx], color=colour, marker=marker, s=60, zorder=3, label=label, clip_on=False)
    if decisions is not None:
        top = scale[1] if scale is not None else 0.0
        for index, prob, decision in decisions:
            ax.annotate(
                f"{prob:.2f}",
                (index, top),
                color="tab:red" if decision else "tab:gray",
                fontsize=7,
                ha="center",
                va="bottom",
            )
    # parse_math=False: a "$" in a series id (or --title) is a character, not TeX (which may not even parse).
    fit_title(fig, ax.set_title(title or history.series_id, fontsize=10, parse_math=False))
    ax.set_xlabel("commit (position in history)")
    ax.set_ylabel(value_label(history))
    ax.legend(fontsize=7, loc="upper left", ncols=3)
    ax.grid(alpha=0.3)
    tight_layout(fig)
    # Through triage.core.atomic: a link is written through, '-' is stdout, a device is not replaced.
    written = atomic_write(out, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return written
