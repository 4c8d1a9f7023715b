"""Pictures of a history: values, true change points, triaged candidates."""

from __future__ import annotations

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
    ax.plot(x, history.values, lw=0.9, color="tab:blue", label="value")
    for i, tc in enumerate(history.true_change_points()):
        ax.axvline(tc, color="tab:green", lw=1.2, ls="--", alpha=0.8, label="true change" if i == 0 else None)
    for label, (colour, marker) in LABEL_STYLE.items():
        idx = np.flatnonzero(history.labels == label)
        if len(idx):
            ax.scatter(idx, history.values[idx], color=colour, marker=marker, s=60, zorder=3, label=label)
    if decisions is not None:
        top = float(np.max(history.values))
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
    ax.set_title(title or history.series_id, fontsize=10, parse_math=False)
    ax.set_xlabel("commit (position in history)")
    direction = {None: "", True: " (higher is better)", False: " (lower is better)"}[history.higher_is_better]
    ax.set_ylabel("value" + direction)
    ax.legend(fontsize=7, loc="upper left", ncols=3)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    # Through triage.core.atomic: a link is written through, '-' is stdout, a device is not replaced.
    written = atomic_write(out, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    return written
