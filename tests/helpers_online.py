"""Helpers of the online-loop tests (no tests here): a small window-0 model, reference rows, step series.

The tests train their own window-0 random forest on
``triage.synthetic.generate("small")`` through the training API
(:func:`triage.training.pipeline.train`), on the rows an online model learns
from: the synthetic ground-truth change points as positives, the false alerts
and ten ordinary commits per series as negatives (:func:`window0_matrix`; see
:mod:`triage.training.online_matrix` for why ordinary commits are in).

:func:`reference_features` is the non-incremental computation the loop's
features are checked against: the catalogue characteristics of Pre and After
from scratch (:mod:`triage.features.fast`), placed by the one row assembler
(:func:`triage.features.row.feature_row`).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from triage.core import labels
from triage.features import catalogue
from triage.features.fast import window_characteristics
from triage.features.row import RowLayout, feature_row
from triage.features.windows import window_bounds

COLUMNS = catalogue.feature_columns()
_LAYOUT = RowLayout(COLUMNS)


def reference_features(pre: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Every feature column of (Pre, After) computed from scratch, shape (len(COLUMNS),)."""
    pre = np.asarray(pre, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    return feature_row(
        _LAYOUT,
        window_characteristics(pre),
        window_characteristics(after),
        catalogue.normalised_moments(pre, after),
    )


def window0_matrix(dataset, ordinary_per_series: int = 10, seed: int = 0) -> pd.DataFrame:
    """Window-0 feature rows for the per-commit question.

    Positives: every ground-truth change point; negatives: every
    ``false_positive`` candidate and ``ordinary_per_series`` random other
    commits per series, in that order. Pre is bounded by the ground-truth
    change points.

    Still a copy of :func:`triage.training.online_matrix.online_matrix`
    (``use_truth=True``): that function keeps one sorted row per commit, this
    one keeps the picking order (and a commit both a change point and a false
    alert twice), and the models the tests train, so the decisions they pin,
    depend on the row order. To go when the tests' expectations are rebased
    on the real function.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for h in dataset:
        truth = h.true_change_points()
        false_alerts = np.flatnonzero(h.labels == labels.FALSE_POSITIVE)
        others = np.setdiff1d(np.arange(1, len(h)), np.concatenate([truth, h.candidates()]))
        ordinary = rng.choice(others, min(ordinary_per_series, others.size), replace=False)
        picks = [(int(p), labels.TRUE_POSITIVE) for p in truth]
        picks += [(int(p), labels.FALSE_POSITIVE) for p in np.concatenate([false_alerts, ordinary])]
        for p, label in picks:
            (a, b), (c, d) = window_bounds(p, len(h), truth, 0)
            feats = reference_features(h.values[a:b], h.values[c:d])
            rows.append(
                {
                    "series_id": h.series_id,
                    "commit": h.commits[p],
                    "index": p,
                    "timestamp": h.timestamps[p] if h.timestamps is not None else pd.NaT,
                    "label": label,
                    "truth_label": label,
                    **dict(zip(COLUMNS, feats, strict=True)),
                }
            )
    return pd.DataFrame(rows)


@functools.cache
def small_matrix() -> pd.DataFrame:
    """Window-0 training rows of the small synthetic preset."""
    from triage.synthetic import generate

    return window0_matrix(generate("small", seed=0))


@functools.cache
def model_dir(kind: str = "rf", features: tuple[str, ...] | None = None) -> Path:
    """A window-0 model trained on the small synthetic preset, saved once per session."""
    from triage.training.pipeline import train

    root = Path(tempfile.mkdtemp(prefix=f"online-{kind}-"))
    atexit.register(shutil.rmtree, root, True)
    out = root / "model"
    params = {"n_estimators": 100} if kind in ("rf", "xgb") else {}
    train(
        small_matrix(),
        out,
        model=kind,
        features=list(features) if features else None,
        window=0,
        test_size=0,
        track=False,
        model_params=params,
    )
    return out


def step_series(
    n: int = 120, at: tuple[int, ...] = (60,), jump: float = 0.3, seed: int = 0
) -> np.ndarray:
    """A noisy flat series (level 100, 1 % noise) with clear level steps of ``jump`` (relative) at ``at``."""
    rng = np.random.default_rng(seed)
    level = np.full(n, 100.0)
    for k, a in enumerate(at):
        level[a:] *= 1 + jump * (1 if k % 2 == 0 else -1)
    return level * (1 + 0.01 * rng.standard_normal(n))
