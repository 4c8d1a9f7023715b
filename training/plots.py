"""PNG figures for runs: ROC curve, confusion matrix, window-size curve.

Drawn on :class:`matplotlib.figure.Figure` directly (no pyplot), so no global
backend state is touched and worker processes can draw.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from triage.core.atomic import atomic_write


def _figure(size=(4.5, 4.0)):
    from matplotlib.figure import Figure

    return Figure(figsize=size, dpi=110, layout="constrained")


def roc_png(y_true: np.ndarray, proba: np.ndarray, path: str | Path, title: str = "ROC") -> Path:
    """ROC curve of P(true alert) ``proba`` (n,) against ``y_true`` (n,) in {0, 1}."""
    from sklearn.metrics import roc_auc_score, roc_curve

    fpr, tpr, _ = roc_curve(y_true, proba)
    auc = roc_auc_score(y_true, proba)
    fig = _figure()
    ax = fig.add_subplot()
    ax.plot(fpr, tpr, lw=2, label=f"AUC {auc:.3f}")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
    ax.set_xlabel("false positive rate (1 - specificity)")
    ax.set_ylabel("true positive rate (sensitivity)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    return _save(fig, path)


def confusion_png(y_true: np.ndarray, y_pred: np.ndarray, path: str | Path, title: str = "Confusion matrix") -> Path:
    """2x2 confusion matrix of 0/1 arrays, shape (n,); rows = truth, columns = prediction."""
    y_true = np.asarray(y_true).astype(int)
    y_pred = np.asarray(y_pred).astype(int)
    cm = np.array([[np.sum((y_true == t) & (y_pred == p)) for p in (0, 1)] for t in (0, 1)])
    fig = _figure((4.0, 3.6))
    ax = fig.add_subplot()
    ax.imshow(cm, cmap="Blues")
    names = ["false alert", "true alert"]
    ax.set_xticks([0, 1], names)
    ax.set_yticks([0, 1], names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("human triage")
    for t in (0, 1):
        for p in (0, 1):
            ax.text(p, t, f"{cm[t, p]:,}", ha="center", va="center",
                    color="white" if cm[t, p] > cm.max() / 2 else "black")
    ax.set_title(title)
    return _save(fig, path)


def window_png(table: pd.DataFrame, path: str | Path, metric: str = "auc", subtitle: str = "") -> Path:
    """AUC (mean and 95 % interval) against the fixed window w; adaptive as a band.

    ``table`` is :func:`training.evaluation.window_study`'s result;
    ``subtitle`` (data, model, split, repetitions) goes under the title, so
    that a plot pasted into a ticket says what made it.
    """
    return _save(window_figure(table, metric, subtitle), path)


def window_figure(table: pd.DataFrame, metric: str = "auc", subtitle: str = ""):
    """The matplotlib figure :func:`window_png` writes."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure((6.0, 4.0))
    ax = fig.add_subplot()
    fixed = table[table["window"].astype(str) != "adaptive"].copy()
    fixed["w"] = fixed["window"].astype(int)
    fixed = fixed.sort_values("w")
    if len(fixed):
        mean, lo, hi = (fixed[f"{metric}_{k}"].to_numpy() for k in ("mean", "ci_low", "ci_high"))
        ax.errorbar(fixed["w"], mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3, label="fixed window w")
        # windows are whole commits: no ticks at 0.5, 1.5, ...
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("window size w (commits)")
    else:
        # adaptive alone: no w axis to speak of (it ran from -0.04 to 0.04)
        ax.set_xticks([])
    adaptive = table[table["window"].astype(str) == "adaptive"]
    if len(adaptive):
        row = adaptive.iloc[0]
        ax.axhline(row[f"{metric}_mean"], color="C1", ls="--", label="adaptive window")
        ax.axhspan(row[f"{metric}_ci_low"], row[f"{metric}_ci_high"], color="C1", alpha=0.15)
    ax.set_ylabel(metric.upper())
    title = f"{metric.upper()} against window size"
    if subtitle:
        ax.set_title(f"{title}\n{subtitle}", fontsize=10)
    else:
        ax.set_title(title)
    ax.legend(loc="lower right")
    return fig


def _save(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG through :func:`triage.core.atomic.atomic_write`.

    A kill mid-write left a cut PNG where the last good one was, and a
    link in place of the file was replaced by a file.
    """
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))

